//! `ListBatchInstances`: the most recent instances, newest first, with filters.

use super::Request;
use crate::instances;
use crate::rights::Right;
use crate::states::InstanceState;
use serde::{Deserialize, Serialize};

impl Request for ListBatchInstances {
    const NAME: &'static str = "ListBatchInstances";
    const RIGHT: Right = Right::Read;
    type Answer = InstanceList;
}

/// `ListBatchInstances {limit?, state?, name?, before?, batchId?, backfillId?, startedBefore?,
/// offset?, total?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListBatchInstances {
    /// How many, newest first (1 to 1,000; default 20).
    pub limit: i64,
    /// Only instances in this state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<InstanceState>,
    /// Only instances whose batch name holds this text, in any case.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Only instances older than this id: the page after one whose last id it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<i64>,
    /// Only instances the scheduler started for this batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_id: Option<i64>,
    /// Only the instances of this backfill.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backfill_id: Option<i64>,
    /// Only instances started before this time (UTC, `YYYY-MM-DD HH:MM:SS` or a day): a
    /// page of the list by date.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_before: Option<String>,
    /// Leaves out this many of the newest that match: a page of the list by number.
    #[serde(skip_serializing_if = "is_zero")]
    pub offset: i64,
    /// Whether to count every instance that matches (the answer's `total`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub total: bool,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

impl Default for ListBatchInstances {
    fn default() -> Self {
        ListBatchInstances {
            limit: 20,
            state: None,
            name: None,
            before: None,
            batch_id: None,
            backfill_id: None,
            started_before: None,
            offset: 0,
            total: false,
        }
    }
}

/// `ListBatchInstances`' answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceList {
    /// The instances, newest first, without their actions.
    pub instances: Vec<instances::Listed>,
    /// How many match the filters in all, when asked (`total`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<i64>,
}
