//! `GetBatchInstance`: an instance with its actions.

use super::Request;
use crate::instances::Instance;
use crate::rights::Right;
use serde::Serialize;

impl Request for GetBatchInstance {
    const NAME: &'static str = "GetBatchInstance";
    const RIGHT: Right = Right::Read;
    type Answer = Instance;
}

/// `GetBatchInstance {batchInstanceId}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetBatchInstance {
    /// The instance.
    pub batch_instance_id: i64,
}
