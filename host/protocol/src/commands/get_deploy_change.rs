//! `GetDeployChange`: one change of a deploy, with the definition it replaced.

use super::Request;
use crate::browse::HistoryDetail;
use serde::Serialize;

impl Request for GetDeployChange {
    const NAME: &'static str = "GetDeployChange";
    type Answer = HistoryDetail;
}

/// `GetDeployChange {historyId}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetDeployChange {
    /// The change's line in the deploy history.
    pub history_id: i64,
}
