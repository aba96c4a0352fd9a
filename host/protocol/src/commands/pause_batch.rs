//! `PauseBatch`: an operator pauses a scheduled batch, or resumes it.

use super::Request;
use super::delete_objects::ObjectName;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for PauseBatch {
    const NAME: &'static str = "PauseBatch";
    const RIGHT: Right = Right::Operate;
    type Answer = BatchPause;
}

/// `PauseBatch {batch, paused?}`: pauses batch `batch` (its id or name; `paused: false`
/// resumes it). A paused batch's planned starts pass without a run, each kept as missed
/// (`paused`), until it is resumed; a deploy of the batch leaves the pause as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PauseBatch {
    /// The batch.
    pub batch: ObjectName,
    /// Whether to pause it (default) or resume it.
    pub paused: bool,
}

/// `PauseBatch`'s answer: the batch as it is now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchPause {
    /// The batch.
    pub batch_id: i64,
    /// Its name.
    pub name: String,
    /// Whether it is paused.
    pub paused: bool,
    /// Who paused it, while paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_by: Option<String>,
    /// When (UTC, ISO 8601), while paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_at: Option<String>,
}
