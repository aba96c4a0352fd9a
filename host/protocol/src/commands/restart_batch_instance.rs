//! `RestartBatchInstance`: rerun what failed, was skipped, halted or interrupted in an
//! instance, with the definitions deployed now (or, `asStarted`, those it ran).

use super::Request;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for RestartBatchInstance {
    const NAME: &'static str = "RestartBatchInstance";
    const RIGHT: Right = Right::Operate;
    type Answer = Restarting;
}

/// `RestartBatchInstance {batchInstanceId, asStarted?, actions?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RestartBatchInstance {
    /// The instance.
    pub batch_instance_id: i64,
    /// Run the definitions the instance ran (as it started, unless an earlier restart took
    /// newer ones) instead of those deployed now.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub as_started: bool,
    /// Only these actions run again (with what was skipped or halted because of them); none:
    /// everything that failed, was skipped, halted or interrupted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<i64>,
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
