//! `RestartBatchInstance`: rerun what failed, was skipped or halted in an instance.

use super::Request;
use serde::{Deserialize, Serialize};

impl Request for RestartBatchInstance {
    const NAME: &'static str = "RestartBatchInstance";
    type Answer = Restarting;
}

/// `RestartBatchInstance {batchInstanceId}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RestartBatchInstance {
    /// The instance.
    pub batch_instance_id: i64,
}

/// `RestartBatchInstance`'s answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Restarting {
    /// The instance.
    pub batch_instance_id: i64,
    /// How many actions run again.
    pub actions_to_run: usize,
}
