//! The one error shape of the endpoint and the status code of every rejection.

use crate::deploy;
use crate::dsr::Detail;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// A rejected request: status, stable code, message and the problems in detail.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status: 4xx for the client's mistakes, 5xx for the server's faults.
    pub status: StatusCode,
    /// Stable code such as `request.json` or `deploy.invalid`.
    pub code: &'static str,
    /// What is wrong.
    pub message: String,
    /// Each problem with its place.
    pub details: Vec<Detail>,
    /// For 5xx: what really happened, for the log only.
    pub internal: Option<String>,
    /// Seconds after which trying again makes sense (`Retry-After`), for 429 and 503.
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// A client error.
    pub fn client(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            details: Vec::new(),
            internal: None,
            retry_after: None,
        }
    }

    /// Adds `Retry-After`.
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// A repository failure: 507 `repository.full` when its disk is full, 503
    /// `repository.io` when its file cannot be read or written, 503 `repository.busy` when
    /// it stayed locked, else a 500. The details go to the log.
    pub fn from_repo(e: &crate::repo::Error) -> Self {
        use crate::repo::Fault;
        let (status, code, message) = match e.fault() {
            Fault::Full => (
                StatusCode::INSUFFICIENT_STORAGE,
                "repository.full",
                "the repository's disk is full; the request changed nothing. Free space and try again",
            ),
            Fault::Io => (
                StatusCode::SERVICE_UNAVAILABLE,
                "repository.io",
                "the repository file cannot be read or written (an I/O error); the request changed nothing. The server log has the details",
            ),
            Fault::Busy => (
                StatusCode::SERVICE_UNAVAILABLE,
                "repository.busy",
                "the repository stayed locked by another writer; try again",
            ),
            Fault::Other => return Self::internal(e.to_string()),
        };
        ApiError {
            status,
            code,
            message: message.to_owned(),
            details: Vec::new(),
            internal: Some(e.to_string()),
            retry_after: (status == StatusCode::SERVICE_UNAVAILABLE).then_some(5),
        }
    }

    /// Adds details.
    pub fn with_details(mut self, details: Vec<Detail>) -> Self {
        self.details = details;
        self
    }

    /// A fault of the server; the client sees a generic message.
    pub fn internal(what: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: "internal",
            message: "internal error; the server log has the details".to_owned(),
            details: Vec::new(),
            internal: Some(what.into()),
            retry_after: None,
        }
    }

    pub(super) fn not_found() -> Self {
        Self::client(
            StatusCode::NOT_FOUND,
            "request.path",
            format!(
                "no such endpoint; commands are sent as POST to {}",
                super::SERVICE_PATH
            ),
        )
    }

    pub(super) fn method_not_allowed() -> Self {
        Self::client(
            StatusCode::METHOD_NOT_ALLOWED,
            "request.method",
            format!("only POST is served at {}", super::SERVICE_PATH),
        )
    }

    pub(super) fn unauthorized() -> Self {
        Self::client(
            StatusCode::UNAUTHORIZED,
            "request.unauthorized",
            "this server listens beyond loopback and needs `Authorization: Bearer TOKEN`, TOKEN being option `token` of key file entry weft_server",
        )
    }

    pub(super) fn unknown_command(command: &str) -> Self {
        Self::client(
            StatusCode::BAD_REQUEST,
            "request.unknown_command",
            format!(
                "unknown command `{command}`; known commands: {}",
                super::COMMANDS.join(", ")
            ),
        )
    }

    pub(super) fn from_deploy(e: deploy::Error) -> Self {
        match e {
            deploy::Error::Invalid(details) => {
                let errors: usize = details
                    .iter()
                    .filter(|d| d.severity == crate::dsr::Severity::Error)
                    .map(|d| d.more.unwrap_or(1))
                    .sum();
                let first = details
                    .iter()
                    .find(|d| d.severity == crate::dsr::Severity::Error)
                    .map(|d| match (d.line, d.column) {
                        (Some(l), Some(c)) => format!("; first at {l}:{c}: {}", d.message),
                        _ => format!("; first: {}", d.message),
                    })
                    .unwrap_or_default();
                Self::client(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "deploy.invalid",
                    format!(
                        "the content is invalid and was not deployed: {errors} error(s){first}"
                    ),
                )
                .with_details(details)
            }
            e @ deploy::Error::IntoFolderRefused(_) => Self::client(
                StatusCode::FORBIDDEN,
                "deploy.into_folder_refused",
                e.to_string(),
            ),
            deploy::Error::Repo(e) => Self::from_repo(&e),
        }
    }

    /// The response, carrying `request_id`.
    pub fn into_response_with(self, request_id: u64) -> Response {
        let body = serde_json::json!({
            "requestId": request_id,
            "error": {
                "code": self.code,
                "message": self.message,
                "details": self.details,
            }
        });
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(s) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, s.into());
        }
        response
    }
}
