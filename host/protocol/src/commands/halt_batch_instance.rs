//! `HaltBatchInstance`: halt an instance.

use super::Request;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for HaltBatchInstance {
    const NAME: &'static str = "HaltBatchInstance";
    const RIGHT: Right = Right::Operate;
    type Answer = HaltRequested;
}

/// `HaltBatchInstance {batchInstanceId}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HaltBatchInstance {
    /// The instance.
    pub batch_instance_id: i64,
}

/// `HaltBatchInstance`'s answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HaltRequested {
    /// The instance.
    pub batch_instance_id: i64,
    /// Always true: running actions stop at their next check, the others do not start.
    pub halt_requested: bool,
}
