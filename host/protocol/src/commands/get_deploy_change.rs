//! `GetDeployChange`: one change of a deploy, with the definition it replaced.

use super::Request;
use crate::browse::HistoryDetail;
use crate::rights::Right;
use serde::Serialize;

impl Request for GetDeployChange {
    const NAME: &'static str = "GetDeployChange";
    const RIGHT: Right = Right::Read;
    type Answer = HistoryDetail;
}

/// `GetDeployChange {historyId}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetDeployChange {
    /// The change's line in the deploy history.
    pub history_id: i64,
}
