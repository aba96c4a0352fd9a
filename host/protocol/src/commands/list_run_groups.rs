//! `ListRunGroups`: the runs grouped by batch name, for the web page's runs list.

use super::Request;
use crate::instances::Listed;
use crate::rights::Right;
use crate::states::InstanceState;
use serde::{Deserialize, Serialize};

impl Request for ListRunGroups {
    const NAME: &'static str = "ListRunGroups";
    const RIGHT: Right = Right::Read;
    type Answer = RunGroups;
}

/// `ListRunGroups {limit?, state?, name?}`: one group per batch name among the runs the
/// filters leave (as `ListBatchInstances`' `state` and `name`), the group of the newest run
/// first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListRunGroups {
    /// At most this many groups (1 to 500, default 100).
    pub limit: i64,
    /// Only runs in this state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<InstanceState>,
    /// Only batch names holding this text (any case).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Default for ListRunGroups {
    fn default() -> Self {
        ListRunGroups {
            limit: 100,
            state: None,
            name: None,
        }
    }
}

/// `ListRunGroups`' answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunGroups {
    /// The groups, the one with the newest run first.
    pub groups: Vec<RunGroup>,
}

/// The runs of one batch name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunGroup {
    /// The batch name.
    pub batch_name: String,
    /// How many runs.
    pub runs: i64,
    /// How many of them failed.
    pub failed: i64,
    /// How many wait or run now.
    pub ongoing: i64,
    /// The newest of them.
    pub last: Listed,
}
