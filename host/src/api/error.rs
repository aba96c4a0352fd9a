//! Every way a request is refused, as one enum: its status, stable code, message and
//! details, and the one response shape of a refusal ([`Reply`]).
//!
//! The services' errors convert with `?` (`From` for the deploy, the executor, the
//! repository and a blocking task that died); what the client sees of a fault of the server
//! is a generic message, the fault itself goes to the log ([`ApiError::internal`]).

use super::protocol::{Answer, ErrorBody, SERVICE_PATH};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use weft_dsr::Detail;
use weft_engine::deploy;
use weft_engine::exec::batch::StartError;
use weft_protocol::Severity;

/// A refused request.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The body is not a command this server reads (400): not UTF-8 (`request.encoding`),
    /// not JSON (`request.json`), an envelope or payload with problems
    /// (`request.envelope`), an unknown command (`request.unknown_command`), or past a
    /// reader's limit (its own code).
    #[error("{message}")]
    Request {
        /// The stable code.
        code: &'static str,
        /// What is wrong, the first problem named.
        message: String,
        /// Every problem with its place.
        details: Vec<Detail>,
    },
    /// The body could not be read from the connection (400).
    #[error("the request body could not be read: {0}")]
    Body(String),
    /// The body did not arrive in time (408).
    #[error("the request body did not arrive within {0} seconds (setting body_timeout_seconds)")]
    BodyTimeout(u64),
    /// The body is larger than the limit (413).
    #[error("the request body is larger than the limit of {0} bytes (setting max_body_bytes)")]
    TooLarge(usize),
    /// The body is not declared JSON (415).
    #[error("{0}")]
    ContentType(String),
    /// A page of another site, or a `Host` that does not name this server (403).
    #[error("{message}")]
    Forbidden {
        /// `request.cross_site` or `request.host`.
        code: &'static str,
        /// Which header said what.
        message: String,
    },
    /// No valid bearer token on a server that needs one (401).
    #[error(
        "this server needs `Authorization: Bearer TOKEN` (it listens beyond loopback, or require_token_on_loopback is set), TOKEN being a user's token (`weft users`) or option `token` of key file entry weft_server"
    )]
    Unauthorized,
    /// A user's right token that no longer counts (401): revoked, expired, or its user
    /// disabled.
    #[error("{0}")]
    TokenRefused(String),
    /// The caller's role lacks the command's right (403).
    #[error(
        "`{command}` needs the right `{}` (role {} or above); `{user}` is {}",
        right.word(),
        right.role(),
        role_phrase(*role)
    )]
    NoRight {
        /// The command.
        command: String,
        /// The right it needs.
        right: weft_protocol::Right,
        /// Who asked.
        user: String,
        /// Their role.
        role: weft_protocol::Role,
    },
    /// The caller's right is limited to folders, and this is outside them (403).
    #[error(
        "`{user}` may {} only in the folders {} (and below them); {what} is outside them",
        right.word(),
        folders.join(", ")
    )]
    OutsideFolders {
        /// Who asked.
        user: String,
        /// The right.
        right: weft_protocol::Right,
        /// What lies outside.
        what: String,
        /// The folders it is limited to.
        folders: Vec<String>,
    },
    /// As many slow token checks run as may: answered at once, to try again shortly (503).
    #[error("too many sign-ins with new tokens are being checked at once; try again shortly")]
    SignInsBusy,
    /// No user has this name (404).
    #[error("there is no user `{0}`")]
    NoUser(String),
    /// A user of this name exists (409).
    #[error("a user `{0}` exists already")]
    UserExists(String),
    /// No token has this id (404).
    #[error("there is no token {0}")]
    NoToken(String),
    /// Too many failed sign-ins from this client lately (429): refused for the seconds.
    #[error(
        "too many requests without the right token came from this client; it is refused for {0} s"
    )]
    Throttled(u64),
    /// A path other than the service path (404).
    #[error("no such endpoint; commands are sent as POST to {SERVICE_PATH}")]
    NoSuchPath,
    /// A method other than POST (405).
    #[error("only POST is served at {SERVICE_PATH}")]
    Method,
    /// The deploy refused the content or failed.
    #[error(transparent)]
    Deploy(#[from] deploy::Error),
    /// The executor refused to start, halt or restart.
    #[error(transparent)]
    Run(#[from] StartError),
    /// The repository failed.
    #[error(transparent)]
    Repo(#[from] weft_repo::Error),
    /// No batch instance has this id (404).
    #[error("batch instance {0} does not exist")]
    NoInstance(i64),
    /// No batch has this id (404).
    #[error("batch {0} does not exist")]
    NoBatch(i64),
    /// No sheet has this id (404).
    #[error("sheet {0} does not exist")]
    NoSheet(i64),
    /// No line of the deploy history has this id (404).
    #[error("the deploy history has no change {0}")]
    NoDeployChange(i64),
    /// `AdvanceClock` on a server whose clock is not stepped (409).
    #[error(
        "AdvanceClock moves the service clock only of a development server started with --stepped-clock"
    )]
    ClockNotStepped,
    /// `AdvanceClock` to an earlier time (409).
    #[error("{0}")]
    ClockBackwards(String),
    /// `AdvanceClock` to a time that does not read (400).
    #[error("to: {0}")]
    ClockTime(String),
    /// As many `WaitBatchInstance` requests wait as may (429).
    #[error(
        "{0} requests already wait for batch instances (a quarter of max_connections); try again shortly, or use GetBatchInstance"
    )]
    TooManyWaits(usize),
    /// A fault of the server (500): what happened, for the log only.
    #[error("{0}")]
    Internal(String),
}

impl From<tokio::task::JoinError> for ApiError {
    fn from(e: tokio::task::JoinError) -> Self {
        ApiError::Internal(format!("a request's blocking task failed: {e}"))
    }
}

impl ApiError {
    /// A fault of the server; the client sees a generic message.
    pub fn internal(what: impl Into<String>) -> Self {
        ApiError::Internal(what.into())
    }

    /// The HTTP status: 4xx for the client's mistakes, 5xx for the server's faults.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Request { .. } | ApiError::Body(_) | ApiError::ClockTime(_) => {
                StatusCode::BAD_REQUEST
            }
            ApiError::BodyTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::ContentType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Forbidden { .. }
            | ApiError::NoRight { .. }
            | ApiError::OutsideFolders { .. } => StatusCode::FORBIDDEN,
            ApiError::Unauthorized | ApiError::TokenRefused(_) => StatusCode::UNAUTHORIZED,
            ApiError::NoUser(_) | ApiError::NoToken(_) => StatusCode::NOT_FOUND,
            ApiError::UserExists(_) => StatusCode::CONFLICT,
            ApiError::SignInsBusy => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Throttled(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::NoSuchPath
            | ApiError::NoInstance(_)
            | ApiError::NoBatch(_)
            | ApiError::NoSheet(_)
            | ApiError::NoDeployChange(_) => StatusCode::NOT_FOUND,
            ApiError::Method => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::ClockNotStepped | ApiError::ClockBackwards(_) => StatusCode::CONFLICT,
            ApiError::Deploy(deploy::Error::Invalid(_)) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Deploy(
                deploy::Error::IntoFolderRefused(_) | deploy::Error::OutsideFolders(_),
            ) => StatusCode::FORBIDDEN,
            ApiError::Deploy(deploy::Error::NotFound(_) | deploy::Error::NoFolder(_)) => {
                StatusCode::NOT_FOUND
            }
            ApiError::Deploy(deploy::Error::Referenced(_)) => StatusCode::CONFLICT,
            ApiError::Deploy(deploy::Error::Repo(e)) | ApiError::Run(StartError::Repo(e)) => {
                repo_fault(e).0
            }
            ApiError::Repo(e) => repo_fault(e).0,
            ApiError::Run(e) => match e {
                StartError::NotFound(_) => StatusCode::NOT_FOUND,
                StartError::Cycle(_) => StatusCode::UNPROCESSABLE_ENTITY,
                StartError::Conflict(_) | StartError::Excluded(_) => StatusCode::CONFLICT,
                StartError::Busy(_) => StatusCode::TOO_MANY_REQUESTS,
                StartError::Invalid(_) | StartError::Repo(_) => StatusCode::INTERNAL_SERVER_ERROR,
            },
            ApiError::TooManyWaits(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable code, such as `request.json` or `deploy.invalid`.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Request { code, .. } | ApiError::Forbidden { code, .. } => code,
            ApiError::Body(_) => "request.body",
            ApiError::BodyTimeout(_) => "request.timeout",
            ApiError::TooLarge(_) => "request.too_large",
            ApiError::ContentType(_) => "request.content_type",
            ApiError::Unauthorized => "request.unauthorized",
            ApiError::TokenRefused(_) => "request.token_refused",
            ApiError::NoRight { .. } => "request.no_right",
            ApiError::OutsideFolders { .. } => "request.outside_folders",
            ApiError::NoUser(_) => "user.not_found",
            ApiError::UserExists(_) => "user.exists",
            ApiError::SignInsBusy => "request.busy",
            ApiError::NoToken(_) => "token.not_found",
            ApiError::Throttled(_) => "request.throttled",
            ApiError::NoSuchPath => "request.path",
            ApiError::Method => "request.method",
            ApiError::Deploy(deploy::Error::Invalid(_)) => "deploy.invalid",
            ApiError::Deploy(deploy::Error::IntoFolderRefused(_)) => "deploy.into_folder_refused",
            ApiError::Deploy(deploy::Error::OutsideFolders(_)) => "request.outside_folders",
            ApiError::Deploy(deploy::Error::NotFound(_)) => "delete.not_found",
            ApiError::Deploy(deploy::Error::NoFolder(_)) => "export.not_found",
            ApiError::Deploy(deploy::Error::Referenced(_)) => "delete.referenced",
            ApiError::Deploy(deploy::Error::Repo(e))
            | ApiError::Run(StartError::Repo(e))
            | ApiError::Repo(e) => repo_fault(e).1,
            ApiError::Run(e) => match e {
                StartError::NotFound(_) => "run.not_found",
                StartError::Cycle(_) => "run.cycle",
                StartError::Conflict(_) => "run.conflict",
                StartError::Excluded(_) => "run.excluded",
                StartError::Busy(_) => "run.queue_full",
                StartError::Invalid(_) | StartError::Repo(_) => "internal",
            },
            ApiError::NoInstance(_) => "run.not_found",
            ApiError::NoBatch(_) => "batch.not_found",
            ApiError::NoSheet(_) => "sheet.not_found",
            ApiError::NoDeployChange(_) => "deploy.change_not_found",
            ApiError::ClockNotStepped => "clock.not_stepped",
            ApiError::ClockBackwards(_) => "clock.backwards",
            ApiError::ClockTime(_) => "request.envelope",
            ApiError::TooManyWaits(_) => "run.too_many_waits",
            ApiError::Internal(_) => "internal",
        }
    }

    /// What the client is told: for a fault of the server a generic message (the fault is
    /// in [`ApiError::internal_cause`]).
    pub fn message(&self) -> String {
        match self {
            ApiError::Deploy(deploy::Error::Invalid(details)) => invalid_message(details),
            ApiError::Deploy(deploy::Error::Repo(e))
            | ApiError::Run(StartError::Repo(e))
            | ApiError::Repo(e) => repo_fault(e).2.to_owned(),
            ApiError::Request { message, .. } => message.clone(),
            ApiError::NoSuchPath | ApiError::Method | ApiError::Unauthorized => self.to_string(),
            _ if self.status() == StatusCode::INTERNAL_SERVER_ERROR => {
                "internal error; the server log has the details".to_owned()
            }
            ApiError::Run(e) => e.to_string(),
            _ => self.to_string(),
        }
    }

    /// Each problem with its place.
    pub fn details(&self) -> &[Detail] {
        match self {
            ApiError::Request { details, .. }
            | ApiError::Deploy(
                deploy::Error::Invalid(details)
                | deploy::Error::NotFound(details)
                | deploy::Error::Referenced(details),
            ) => details,
            _ => &[],
        }
    }

    /// For a fault of the server (5xx): what really happened, for the log only.
    pub fn internal_cause(&self) -> Option<String> {
        self.status().is_server_error().then(|| self.to_string())
    }

    /// Seconds after which trying again makes sense (`Retry-After`): 429 and 503.
    pub fn retry_after(&self) -> Option<u64> {
        if let ApiError::Throttled(seconds) = self {
            return Some(*seconds);
        }
        matches!(
            self.status(),
            StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
        )
        .then_some(5)
    }

    /// The body of the answer.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            code: self.code().to_owned(),
            message: self.message(),
            details: self.details().to_vec(),
        }
    }
}

/// "a viewer", "an operator", ...
fn role_phrase(role: weft_protocol::Role) -> String {
    match role {
        weft_protocol::Role::Operator | weft_protocol::Role::Admin => format!("an {role}"),
        _ => format!("a {role}"),
    }
}

/// A repository failure: 507 `repository.full` when its disk is full, 503 `repository.io`
/// when its file cannot be read or written, 503 `repository.busy` when it stayed locked,
/// else a 500.
fn repo_fault(e: &weft_repo::Error) -> (StatusCode, &'static str, &'static str) {
    use weft_repo::Fault;
    match e.fault() {
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
        Fault::Other => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; the server log has the details",
        ),
    }
}

/// `deploy.invalid`'s message: how many errors, and the first with its place.
fn invalid_message(details: &[Detail]) -> String {
    let errors: usize = details
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.more.unwrap_or(1))
        .sum();
    let first = details
        .iter()
        .find(|d| d.severity == Severity::Error)
        .map(|d| match (d.line, d.column) {
            (Some(l), Some(c)) => format!("; first at {l}:{c}: {}", d.message),
            _ => format!("; first: {}", d.message),
        })
        .unwrap_or_default();
    format!("the content is invalid and was not deployed: {errors} error(s){first}")
}

/// The answer to one request, success or refusal, with the request's id: the one place a
/// response body is made.
pub struct Reply {
    /// The request's id.
    pub request_id: u64,
    /// The command's answer, or why there is none.
    pub result: Result<serde_json::Value, ApiError>,
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        match self.result {
            Ok(payload) => {
                let answer = Answer {
                    request_id: self.request_id,
                    payload: Some(payload),
                    error: None,
                };
                (StatusCode::OK, axum::Json(answer)).into_response()
            }
            Err(e) => {
                let answer: Answer<()> = Answer {
                    request_id: self.request_id,
                    payload: None,
                    error: Some(e.body()),
                };
                let mut response = (e.status(), axum::Json(answer)).into_response();
                if let Some(s) = e.retry_after() {
                    response
                        .headers_mut()
                        .insert(axum::http::header::RETRY_AFTER, s.into());
                }
                response
            }
        }
    }
}
