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

/// Serves `app` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let open = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let refusing = Arc::new(Semaphore::new(MAX_REFUSING));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let service = TowerToHyperService::new(app);
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
        let stream = match accepted {
            Ok((stream, _peer)) => {
                pause = Duration::from_millis(10);
                stream
            }
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                // Out of descriptors: idle pooled SQLite connections give theirs back.
                if matches!(e.raw_os_error(), Some(23 | 24)) {
                    crate::connect::sqlite::close_idle();
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
                let conn = builder.serve_connection(TokioIo::new(stream), service.clone());
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(message = "A connection ended with an error.", error = %e);
                    }
                    drop(permit);
                });
            }
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
