//! `ListDeploys`: a page of the deploy history, newest first.

use super::Request;
use crate::browse::DeployItem;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for ListDeploys {
    const NAME: &'static str = "ListDeploys";
    const RIGHT: Right = Right::Read;
    type Answer = DeployList;
}

/// `ListDeploys {limit?, before?, changes?}`: a page of the deploy history, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListDeploys {
    /// How many deploys (1 to 200; default 20).
    pub limit: i64,
    /// Only deploys older than this one: the page after one whose last deploy it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<i64>,
    /// How many changes of each deploy are listed (0 to 200; default 20).
    pub changes: i64,
}

impl Default for ListDeploys {
    fn default() -> Self {
        ListDeploys {
            limit: 20,
            before: None,
            changes: 20,
        }
    }
}

/// `ListDeploys`' answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeployList {
    /// The deploys, newest first.
    pub deploys: Vec<DeployItem>,
}
