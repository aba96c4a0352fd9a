//! `NextRuns`: a scheduled batch's next planned starts, with clock changes marked.

use super::Request;
use crate::rights::Right;
use crate::schedules;
use serde::Serialize;

impl Request for NextRuns {
    const NAME: &'static str = "NextRuns";
    const RIGHT: Right = Right::Read;
    type Answer = schedules::NextRuns;
}

/// `NextRuns {batchId, count?}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NextRuns {
    /// The scheduled batch.
    pub batch_id: i64,
    /// How many starts (1 to 1,000; default 10).
    pub count: usize,
}
