//! The service endpoint: `POST /weft/service` with the command envelope
//! `{command, payload, variableList?}` of SPEC 4.1.
//!
//! The body is read raw (so that a malformed body still gets our error shape) and parsed by
//! the project's strict JSON reader, which accepts raw control characters inside strings as
//! SPEC 4.2's content encoding requires. Every rejection has one shape:
//! `{requestId, error: {code, message, details: [{code, message, line, column, path}]}}`,
//! with a 4xx status for a client mistake and a 5xx status only for a fault of the server,
//! whose details go to the log, not to the client. This module never touches SQL: commands
//! call the services (`deploy`) on blocking threads.

mod commands;
pub mod envelope;
mod error;
pub mod guard;

pub use error::ApiError;

use crate::deploy;
use crate::keys::KeyStore;
use crate::repo::Repository;
use crate::settings::Settings;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The one service path.
pub const SERVICE_PATH: &str = "/weft/service";

/// The commands this server answers.
pub const COMMANDS: &[&str] = &[
    "DeployRepository",
    "RunElements",
    "GetBatchInstance",
    "WaitBatchInstance",
    "ListBatchInstances",
    "HaltBatchInstance",
    "RestartBatchInstance",
    "NextRuns",
    "AdvanceClock",
];

/// What every request handler shares.
#[derive(Debug)]
pub struct AppState {
    /// The repository.
    pub repo: Arc<Repository>,
    /// Settings in force.
    pub settings: Settings,
    /// The key file; consulted for the token when one is required.
    pub keys: Option<Arc<KeyStore>>,
    /// Whether requests need `Authorization: Bearer TOKEN` (non-loopback listening).
    pub require_token: bool,
    /// The loaded plugins.
    pub registry: Arc<crate::plugins::Registry>,
    /// Runs batch instances.
    pub executor: Arc<crate::exec::batch::Executor>,
    /// Which `Host` and `Origin` name this server.
    pub hosts: guard::HostRules,
    next_request: AtomicU64,
}

impl AppState {
    /// State for a server. Request ids start from the clock, so they keep growing across
    /// restarts without being stored.
    pub fn new(
        repo: Arc<Repository>,
        settings: Settings,
        keys: Option<Arc<KeyStore>>,
        require_token: bool,
        registry: Arc<crate::plugins::Registry>,
        executor: Arc<crate::exec::batch::Executor>,
    ) -> Self {
        let start = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_millis() as u64);
        let hosts = guard::HostRules::new(None, &settings.allowed_hosts, require_token);
        AppState {
            repo,
            settings,
            keys,
            require_token,
            registry,
            executor,
            hosts,
            next_request: AtomicU64::new(start),
        }
    }

    /// The same state for a server listening on `addr` (which `Host` values name it).
    #[must_use]
    pub fn listening_on(mut self, addr: std::net::SocketAddr) -> Self {
        self.hosts =
            guard::HostRules::new(Some(addr), &self.settings.allowed_hosts, self.require_token);
        self
    }

    fn request_id(&self) -> u64 {
        self.next_request.fetch_add(1, Ordering::Relaxed)
    }
}

/// The router: one POST route; everything else gets a 404 or 405 in the error shape.
pub fn app(state: Arc<AppState>) -> Router {
    Router::new()
        .route(
            SERVICE_PATH,
            post(service).fallback(|State(state): State<Arc<AppState>>| async move {
                ApiError::method_not_allowed().into_response_with(state.request_id())
            }),
        )
        .fallback(|State(state): State<Arc<AppState>>| async move {
            ApiError::not_found().into_response_with(state.request_id())
        })
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
    ApiError::internal(format!("a request handler panicked: {what}")).into_response_with(0)
}

async fn service(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let id = state.request_id();
    match handle(&state, &headers, body, id).await {
        Ok(payload) => {
            let body = serde_json::json!({ "requestId": id, "payload": payload });
            (StatusCode::OK, axum::Json(body)).into_response()
        }
        Err(e) => {
            if e.status.is_server_error() {
                tracing::error!(message = "Request failed.", request_id = id, error = %e.internal.as_deref().unwrap_or(&e.message));
            } else {
                tracing::info!(message = "Request rejected.", request_id = id, code = e.code, error = %e.message);
            }
            e.into_response_with(id)
        }
    }
}

async fn handle(
    state: &Arc<AppState>,
    headers: &HeaderMap,
    body: axum::body::Body,
    id: u64,
) -> Result<serde_json::Value, ApiError> {
    guard::check_origin(&state.hosts, headers)?;
    if state.require_token {
        check_token(state, headers)?;
    }
    guard::check_content_type(headers)?;
    let body = tokio::time::timeout(
        std::time::Duration::from_secs(state.settings.body_timeout_seconds),
        read_body(body, state.settings.max_body_bytes),
    )
    .await
    .map_err(|_| {
        ApiError::client(
            StatusCode::REQUEST_TIMEOUT,
            "request.timeout",
            format!(
                "the request body did not arrive within {} seconds (setting body_timeout_seconds)",
                state.settings.body_timeout_seconds
            ),
        )
    })??;
    // Reading a large body takes a while: not on the async workers.
    let request = tokio::task::spawn_blocking(move || envelope::read(&body))
        .await
        .map_err(|e| ApiError::internal(format!("the request reader failed: {e}")))??;
    match request.command.as_str() {
        "DeployRepository" => {
            let deploy_request = envelope::deploy_request(&request)?;
            let state = Arc::clone(state);
            let result = tokio::task::spawn_blocking(move || {
                let catalog = crate::validate::PluginCatalog {
                    registry: &state.registry,
                    keys: state.keys.as_ref().and_then(|k| k.current().ok()),
                };
                deploy::deploy(
                    &state.repo,
                    &catalog,
                    &deploy_request.content,
                    deploy_request.options,
                    state.settings.environment,
                )
            })
            .await
            .map_err(|e| ApiError::internal(format!("the deploy task failed: {e}")))?;
            match result {
                Ok(report) => {
                    tracing::info!(
                        message = "Deployed.",
                        request_id = id,
                        created = report.created.len(),
                        updated = report.updated.len(),
                        unchanged = report.unchanged.len(),
                        dry_run = report.dry_run
                    );
                    serde_json::to_value(report).map_err(|e| ApiError::internal(e.to_string()))
                }
                Err(e) => Err(ApiError::from_deploy(e)),
            }
        }
        "RunElements" => {
            commands::run_elements(
                state,
                request.payload.value.to_json(),
                request.variable_list.map(|v| v.value.to_json()),
            )
            .await
        }
        "GetBatchInstance" => commands::get_instance(state, request.payload.value.to_json()).await,
        "WaitBatchInstance" => {
            commands::wait_instance(state, request.payload.value.to_json()).await
        }
        "ListBatchInstances" => {
            commands::list_instances(state, request.payload.value.to_json()).await
        }
        "HaltBatchInstance" => {
            commands::halt_instance(state, request.payload.value.to_json()).await
        }
        "RestartBatchInstance" => {
            commands::restart_instance(state, request.payload.value.to_json()).await
        }
        "NextRuns" => commands::next_runs(state, request.payload.value.to_json()).await,
        "AdvanceClock" => commands::advance_clock(state, request.payload.value.to_json()).await,
        _ => Err(ApiError::unknown_command(&request.command)),
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
        let frame = frame.map_err(|e| {
            ApiError::client(
                StatusCode::BAD_REQUEST,
                "request.body",
                format!("the request body could not be read: {e}"),
            )
        })?;
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
        return Err(ApiError::client(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request.too_large",
            format!(
                "the request body is larger than the limit of {limit} bytes (setting max_body_bytes)"
            ),
        ));
    }
    Ok(Bytes::from(buf))
}

fn check_token(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let keyfile = match state.keys.as_ref().map(|k| k.current()) {
        Some(Ok(kf)) => Some(kf),
        Some(Err(e)) => {
            return Err(ApiError::internal(format!(
                "the key file cannot be read: {e}"
            )));
        }
        None => None,
    };
    let expected = keyfile.and_then(|kf| {
        kf.get(crate::keys::SERVER_KEY)
            .and_then(|e| e.option("token").map(str::to_owned))
    });
    let Some(expected) = expected.filter(|t| !t.is_empty()) else {
        return Err(ApiError::internal(
            "no token is configured for this server (key file entry weft_server, option token)",
        ));
    };
    let given = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if constant_time_eq(given.as_bytes(), expected.as_bytes()) {
        Ok(())
    } else {
        Err(ApiError::unauthorized())
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests;
