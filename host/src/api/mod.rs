//! The service endpoint: `POST /weft/service` with the command envelope
//! `{command, payload, variableList?}` of SPEC 4.1.
//!
//! The body is read raw (so that a malformed body still gets our error shape) and parsed by
//! the project's strict JSON reader, which accepts raw control characters inside strings as
//! SPEC 4.2's content encoding requires. Every rejection has one shape:
//! `{requestId, error: {code, message, details: [{code, message, line, column, path}]}}`,
//! with a 4xx status for a client mistake and a 5xx status only for a fault of the server,
//! whose details go to the log, not to the client. This module never touches SQL: commands
//! call the services (`deploy`, `exec`, the repository's stores) on blocking threads.
//!
//! The way of a request: [`guard`] checks its headers, [`envelope`] reads its body into a
//! typed [`protocol::Command`] (every problem at once, with line and column), `commands`
//! answers it with a typed answer, and [`Reply`] writes the one response shape of success
//! and refusal ([`ApiError`]).

mod audit;
pub mod auth;
mod commands;
pub mod envelope;
mod error;
pub mod guard;
mod page;
pub mod protocol;
mod session;
mod state;
mod throttle;
mod verified;
mod waits;

pub use auth::Peer;
pub use error::{ApiError, Reply};
pub use protocol::{COMMANDS, SERVICE_PATH};
pub use state::AppState;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use std::sync::Arc;

/// The path of the metrics, in Prometheus's text format.
pub const METRICS_PATH: &str = "/metrics";

/// The router: the POST route of the commands, `GET /metrics`, and the web page (`GET /`,
/// `GET /ui/FILE`); everything else gets a 404 or 405 in the error shape.
pub fn app(state: Arc<AppState>) -> Router {
    let page_only =
        |State(state): State<Arc<AppState>>| async move { state.refuse(ApiError::Method) };
    Router::new()
        .route("/", axum::routing::get(page::index).fallback(page_only))
        .route(
            "/ui/{*file}",
            axum::routing::get(page::asset).fallback(page_only),
        )
        .route(
            METRICS_PATH,
            axum::routing::get(metrics).fallback(|State(state): State<Arc<AppState>>| async move {
                state.refuse(ApiError::Method)
            }),
        )
        .route(
            session::SESSION_PATH,
            post(session::sign_in).delete(session::sign_out).fallback(
                |State(state): State<Arc<AppState>>| async move { state.refuse(ApiError::Method) },
            ),
        )
        .route(
            SERVICE_PATH,
            post(service).fallback(|State(state): State<Arc<AppState>>| async move {
                state.refuse(ApiError::Method)
            }),
        )
        .fallback(
            |State(state): State<Arc<AppState>>| async move { state.refuse(ApiError::NoSuchPath) },
        )
        // The body limit is applied while reading (read_body), so that a too large body
        // is drained and answered 413 instead of cutting the connection.
        .layer(axum::extract::DefaultBodyLimit::disable())
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(panicked))
        .with_state(state)
}

/// A handler that panicked answers 500 in the error shape (with `requestId` 0: the id is
/// lost with the handler); the server goes on.
fn panicked(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let what = weft_sdk::panic_message(panic.as_ref());
    tracing::error!(message = "Request handler panicked.", error = %what);
    Reply {
        request_id: 0,
        result: Err(ApiError::internal(format!(
            "a request handler panicked: {what}"
        ))),
    }
    .into_response()
}

async fn service(
    State(state): State<Arc<AppState>>,
    peer: Option<axum::Extension<Peer>>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let id = state.request_id();
    let peer = peer.map(|axum::Extension(p)| p);
    let result = handle(&state, &headers, peer, body, id).await;
    // A token refused is audited (a request without any, such as a page not signed in yet,
    // is no attempt; a throttled client is not audited again and again).
    if let Err(e @ (ApiError::Unauthorized | ApiError::TokenRefused(_))) = &result
        && auth::token_given(&headers)
    {
        let client = peer.map_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), |p| p.0);
        audit::refused_unknown(&state, client, e.message()).await;
    }
    if let Err(e) = &result {
        if let Some(cause) = e.internal_cause() {
            tracing::error!(message = "Request failed.", request_id = id, code = e.code(), error = %cause);
        } else {
            tracing::info!(message = "Request rejected.", request_id = id, code = e.code(), error = %e.message());
        }
    }
    Reply {
        request_id: id,
        result,
    }
    .into_response()
}

async fn handle(
    state: &Arc<AppState>,
    headers: &HeaderMap,
    peer: Option<Peer>,
    body: axum::body::Body,
    id: u64,
) -> Result<serde_json::Value, ApiError> {
    guard::check_origin(&state.hosts, headers)?;
    let caller = auth::authorize(state, headers, peer).await?;
    guard::check_content_type(headers)?;
    let seconds = state.settings.body_timeout_seconds;
    let body = tokio::time::timeout(
        std::time::Duration::from_secs(seconds),
        read_body(body, state.settings.max_body_bytes),
    )
    .await
    .map_err(|_| ApiError::BodyTimeout(seconds))??;
    // Reading a large body takes a while: not on the async workers.
    // The right is checked by the command's name, before its payload is read.
    let gate = caller.clone();
    let read = tokio::task::spawn_blocking(move || {
        // The command the gate refused, for the audit.
        let refused = std::cell::RefCell::new(String::new());
        let read = envelope::read(&body, &|name, right| {
            gate.may(name, right)
                .inspect_err(|_| *refused.borrow_mut() = name.to_owned())
        });
        (read, refused.into_inner())
    })
    .await?;
    let command = match read {
        (Err(e @ (ApiError::NoRight { .. } | ApiError::OutsideFolders { .. })), command) => {
            audit::record(state, &caller, &command, "refused", e.message()).await;
            return Err(e);
        }
        (other, _) => other?,
    };
    let call = commands::Call {
        request_id: id,
        caller,
    };
    commands::answer(command, state, &call).await
}

/// `GET /metrics`: what this process counted and what the repository holds now, in
/// Prometheus's text format. The same guard as the commands (a token beyond loopback, no
/// cross-site page), no body.
/// Each batch with its repository time (UTC text) as seconds since 1970.
fn epoch_seconds(times: &[(String, String)]) -> Vec<(String, f64)> {
    times
        .iter()
        .filter_map(|(batch, at)| {
            weft_repo::parse_stored_time(at)
                .map(|t| (batch.clone(), t.timestamp_millis() as f64 / 1e3))
        })
        .collect()
}

async fn metrics(
    State(state): State<Arc<AppState>>,
    peer: Option<axum::Extension<Peer>>,
    headers: HeaderMap,
) -> Response {
    let peer = peer.map(|axum::Extension(p)| p);
    let answer = async {
        guard::check_origin(&state.hosts, &headers)?;
        auth::authorize(&state, &headers, peer).await?;
        let (repo, exec) = (Arc::clone(&state.repo), Arc::clone(&state.executor));
        let lease_ms = i64::try_from(state.settings.host_lease_seconds)
            .unwrap_or(i64::MAX)
            .saturating_mul(1000);
        let snapshot = tokio::task::spawn_blocking(move || {
            use weft_repo::InstanceStore as _;
            let counts = repo.state_counts()?;
            let hosts = exec.repo().hosts()?;
            Ok::<_, weft_repo::Error>(weft_core::metrics::Snapshot {
                instances: counts.instances,
                actions: counts.actions,
                hosts: hosts.iter().filter(|h| h.silent_ms <= lease_ms).count() as i64,
                running_here: exec.running(),
                last_success: epoch_seconds(&counts.last_success),
                running_since: epoch_seconds(&counts.running_since),
            })
        })
        .await??;
        Ok::<_, ApiError>(weft_core::metrics::render(&snapshot))
    };
    match answer.await {
        Ok(text) => (
            [(
                axum::http::header::CONTENT_TYPE,
                weft_core::metrics::CONTENT_TYPE,
            )],
            text,
        )
            .into_response(),
        Err(e) => {
            tracing::info!(message = "Metrics request refused.", code = e.code(), error = %e.message());
            state.refuse(e)
        }
    }
}

/// Reads the body up to `limit` bytes. A larger one is read on (and dropped) up to four
/// times the limit, so that the client, still sending, gets the 413 answer rather than a
/// broken connection.
async fn read_body(mut body: axum::body::Body, limit: usize) -> Result<Bytes, ApiError> {
    use http_body_util::BodyExt as _;
    let mut buf = Vec::new();
    let mut total = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ApiError::Body(e.to_string()))?;
        if let Some(data) = frame.data_ref() {
            total += data.len();
            if total <= limit {
                buf.extend_from_slice(data);
            } else if total > limit.saturating_mul(4) {
                break;
            }
        }
    }
    if total > limit {
        return Err(ApiError::TooLarge(limit));
    }
    Ok(Bytes::from(buf))
}

#[cfg(test)]
mod tests;
