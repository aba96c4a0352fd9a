//! The answer envelope: `{requestId, payload}` or `{requestId, error}`.

use crate::problems::Detail;
use serde::{Deserialize, Serialize};

/// The answer envelope: `{requestId, payload}` or `{requestId, error}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer<P> {
    /// The server's id of the request, as its log names it.
    pub request_id: u64,
    /// The command's answer, when it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<P>,
    /// Why it did not, otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

/// A refusal: a stable code, a message and each problem with its place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// Stable code such as `request.envelope` or `deploy.invalid`.
    pub code: String,
    /// What is wrong.
    pub message: String,
    /// Each problem, with line, column and path where it has them.
    #[serde(default)]
    pub details: Vec<Detail>,
}
