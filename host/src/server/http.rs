//! Serving HTTP for `weft serve`: the accept loop, with every resource a client can hold
//! bounded.
//!
//! - At most `max_connections` connections are open at once. One past the cap gets a short
//!   `503` in weft's error shape (`server.busy`, `Retry-After`) and is closed; while even the
//!   refusals are many, further sockets are closed at once.
//! - A request's head must arrive within `header_timeout_seconds`, and a keep-alive
//!   connection that sends no next request is closed after the same time (hyper's header
//!   read timeout runs from the moment it waits for a head). The body has its own limit
//!   (`body_timeout_seconds`, in `api`).
//! - When accepting fails for a reason other than the client (descriptors used up,
//!   `EMFILE`), the failure is logged and accepting pauses, doubling from 10 ms up to one
//!   second, so the server neither spins nor hangs silently; idle pooled SQLite connections
//!   are closed to give their descriptors back, and it goes on as soon as descriptors are
//!   free again.
//! - On shutdown, open connections get `shutdown_grace` to finish their requests.
//! - The answers hyper itself gives to what it cannot read as HTTP (400, 431 for headers
//!   too large, 414) come with weft's error shape instead of an empty body
//!   ([`ErrorBodies`]).
//! - With TLS (`server::tls`), the handshake runs in the connection's own task, within the
//!   header time, so that a slow or silent client holds one connection's place and nothing
//!   else; a connection past the cap is closed without an answer (a plain-text 503 means
//!   nothing to a TLS client).

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// The bounds of the accept loop.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// Time for a request's head, and for an idle keep-alive connection.
    pub header_timeout: Duration,
    /// Time open connections get to finish when the server stops.
    pub shutdown_grace: Duration,
}

/// Refusals (answers to connections past the cap) written at once; past that a socket is
/// closed without an answer.
const MAX_REFUSING: usize = 64;

/// Serves `app` on `listener` (through `tls` when given) until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let open = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let refusing = Arc::new(Semaphore::new(MAX_REFUSING));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    use tower::ServiceExt as _;
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let mut pause = Duration::from_millis(10);
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok((stream, peer)) => {
                pause = Duration::from_millis(10);
                (stream, peer)
            }
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                // Out of descriptors: idle pooled SQLite connections give theirs back.
                if matches!(e.raw_os_error(), Some(23 | 24)) {
                    tokio::task::spawn_blocking(weft_core::connect::sqlite::close_idle);
                }
                tracing::error!(
                    message = "Accepting a connection failed; pausing before the next accept.",
                    error = %e,
                    pause_ms = pause.as_millis() as u64,
                    open_connections = limits.max_connections.saturating_sub(open.available_permits())
                );
                tokio::select! {
                    () = &mut shutdown => break,
                    () = tokio::time::sleep(pause) => {}
                }
                pause = (pause * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        match Arc::clone(&open).try_acquire_owned() {
            Ok(permit) => {
                // Each request of the connection carries its client's address (the throttle
                // of failed sign-ins counts by it).
                let ip = peer.ip();
                let service = TowerToHyperService::new(app.clone().map_request(
                    move |mut request: hyper::Request<hyper::body::Incoming>| {
                        request.extensions_mut().insert(crate::api::Peer(ip));
                        request
                    },
                ));
                let (watcher, builder, tls) = (graceful.watcher(), builder.clone(), tls.clone());
                let handshake_time = limits.header_timeout;
                tokio::spawn(async move {
                    let served = match tls {
                        None => {
                            let io = TokioIo::new(ErrorBodies::new(stream));
                            watcher.watch(builder.serve_connection(io, service)).await
                        }
                        Some(acceptor) => {
                            match tokio::time::timeout(handshake_time, acceptor.accept(stream))
                                .await
                            {
                                Ok(Ok(stream)) => {
                                    let io = TokioIo::new(ErrorBodies::new(stream));
                                    watcher.watch(builder.serve_connection(io, service)).await
                                }
                                Ok(Err(e)) => {
                                    tracing::debug!(message = "A TLS handshake failed.", error = %e);
                                    Ok(())
                                }
                                Err(_) => {
                                    tracing::debug!(
                                        message = "A TLS handshake did not finish in time."
                                    );
                                    Ok(())
                                }
                            }
                        }
                    };
                    if let Err(e) = served {
                        tracing::debug!(message = "A connection ended with an error.", error = %e);
                    }
                    drop(permit);
                });
            }
            Err(_) if tls.is_some() => {}
            Err(_) => {
                if let Ok(permit) = Arc::clone(&refusing).try_acquire_owned() {
                    tracing::warn!(
                        message = "Too many open connections; a new one is refused with 503.",
                        max_connections = limits.max_connections
                    );
                    tokio::spawn(async move {
                        refuse(stream).await;
                        drop(permit);
                    });
                }
                // Else the stream is dropped here: closed without an answer.
            }
        }
    }
    drop(listener);
    if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            message = "Connections still open at shutdown were closed.",
            grace_seconds = limits.shutdown_grace.as_secs()
        );
    }
}

/// Answers a connection past the cap with `503` (weft's error shape) and closes it. What
/// the client already sent is read first (up to a second), so that closing does not reset
/// the connection before the client has read the answer.
async fn refuse(mut stream: tokio::net::TcpStream) {
    let mut buf = [0u8; 16 * 1024];
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.read(&mut buf)).await;
    let body = serde_json::json!({
        "requestId": 0,
        "error": {
            "code": "server.busy",
            "message": "the server has too many open connections (setting max_connections); try again shortly",
            "details": [],
        }
    })
    .to_string();
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(answer.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// Errors of one client's connection (not of the server): accept goes on at once.
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// A connection's stream that gives hyper's own error answers (a status 4xx or 5xx with
/// `content-length: 0`, written when a request cannot be read as HTTP) a body in weft's
/// error shape. weft's own answers always carry a JSON body, so they are never touched.
/// hyper is told the stream takes no vectored writes, so a response head arrives whole in
/// one write.
pub struct ErrorBodies<S> {
    inner: S,
    /// A rewritten answer being written: its bytes, how far, and the length hyper asked to
    /// write (what it is told was written).
    pending: Option<(Vec<u8>, usize, usize)>,
}

impl<S> ErrorBodies<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        ErrorBodies {
            inner,
            pending: None,
        }
    }
}

/// The answer with weft's error body for hyper's bodiless error answer `head`, if it is one.
fn with_error_body(head: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(head).ok()?;
    let rest = text.strip_prefix("HTTP/1.1 ")?;
    let status: u16 = rest.get(..3)?.parse().ok()?;
    let end = text.find("\r\n\r\n")?;
    if !(400..600).contains(&status)
        || end + 4 != text.len()
        || !text[..end]
            .to_ascii_lowercase()
            .contains("\r\ncontent-length: 0")
    {
        return None;
    }
    let (code, message) = match status {
        431 => (
            "request.headers_too_large",
            "the request's headers are too large",
        ),
        414 => ("request.uri_too_long", "the request's URI is too long"),
        _ => (
            "request.malformed",
            "the request could not be read as HTTP/1.1",
        ),
    };
    let body = serde_json::json!({
        "requestId": 0,
        "error": {"code": code, "message": message, "details": []}
    })
    .to_string();
    let mut out = String::with_capacity(end + body.len() + 64);
    for line in text[..end].split("\r\n") {
        if line.to_ascii_lowercase().starts_with("content-length:") {
            out.push_str(&format!("content-length: {}", body.len()));
        } else {
            out.push_str(line);
        }
        out.push_str("\r\n");
    }
    out.push_str("content-type: application/json\r\n\r\n");
    out.push_str(&body);
    Some(out.into_bytes())
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for ErrorBodies<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for ErrorBodies<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        use std::task::Poll;
        if self.pending.is_none() {
            match with_error_body(buf) {
                Some(answer) => self.pending = Some((answer, 0, buf.len())),
                None => return std::pin::Pin::new(&mut self.inner).poll_write(cx, buf),
            }
        }
        let this = &mut *self;
        let Some((bytes, at, asked)) = this.pending.as_mut() else {
            return Poll::Ready(Ok(0));
        };
        while *at < bytes.len() {
            match std::pin::Pin::new(&mut this.inner).poll_write(cx, &bytes[*at..]) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
                }
                Poll::Ready(Ok(n)) => *at += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        let asked = *asked;
        this.pending = None;
        Poll::Ready(Ok(asked))
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodiless_error_answers_get_the_error_shape() {
        let head = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: Mon, 23 Nov 2026 07:00:00 GMT\r\n\r\n";
        let out = String::from_utf8(with_error_body(head).expect("rewritten")).expect("utf8");
        let (head, body) = out.split_once("\r\n\r\n").expect("head and body");
        assert!(head.starts_with("HTTP/1.1 431 "), "{head}");
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{head}"
        );
        assert!(head.contains("content-type: application/json"), "{head}");
        let v: serde_json::Value = serde_json::from_str(body).expect("JSON");
        assert_eq!(v["error"]["code"], "request.headers_too_large");
        // weft's own answers, successes and heads with a body are left alone.
        for other in [
            &b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 12\r\n\r\n{\"error\":{}}",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n",
            b"{\"partial\": 1}",
        ] {
            assert!(with_error_body(other).is_none());
        }
    }
}
