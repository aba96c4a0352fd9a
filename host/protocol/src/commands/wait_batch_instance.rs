//! `WaitBatchInstance`: an instance once it has ended, once it changed from a version, or when the time is up.

use super::Request;
use crate::instances;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for WaitBatchInstance {
    const NAME: &'static str = "WaitBatchInstance";
    const RIGHT: Right = Right::Read;
    type Answer = Waited;
}

/// `WaitBatchInstance {batchInstanceId, timeoutSeconds?, changedFrom?}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitBatchInstance {
    /// The instance.
    pub batch_instance_id: i64,
    /// How long to wait at most (default [`WaitBatchInstance::DEFAULT_SECONDS`], at most
    /// [`WaitBatchInstance::MAX_SECONDS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<f64>,
    /// Answer as soon as the instance is no longer the one of this [`Waited::version`]
    /// (a page following a run), not only at its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_from: Option<String>,
}

impl WaitBatchInstance {
    /// The wait when none is given.
    pub const DEFAULT_SECONDS: f64 = 30.0;
    /// The longest wait one request holds.
    pub const MAX_SECONDS: f64 = 3600.0;
    /// The longest wait one request with `changedFrom` holds: a page asks again.
    pub const MAX_CHANGE_SECONDS: f64 = 60.0;
}

/// `WaitBatchInstance`'s answer: the instance, and whether the time ran out first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Waited {
    /// The instance as `GetBatchInstance` answers it.
    #[serde(flatten)]
    pub instance: instances::Instance,
    /// Whether it was still running when the wait ended.
    pub timed_out: bool,
    /// What the instance is as answered, as a short text that changes whenever anything of
    /// it does (a state, a count, a log line): the `changedFrom` of the next wait.
    #[serde(default)]
    pub version: String,
}
