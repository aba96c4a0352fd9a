//! `DeleteObjects`: removes folders, sheets, connections, batches and template modules from
//! the repository,
//! by id or by path or name, refusing what is still referenced with every reference named.

use super::Request;
use crate::deploys::ObjectKind;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for DeleteObjects {
    const NAME: &'static str = "DeleteObjects";
    const RIGHT: Right = Right::Deploy;
    type Answer = Deleted;
}

/// `DeleteObjects {folders?, sheets?, connections?, batches?, modules?, recursive?, dryRun?}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteObjects {
    /// Folders, by id or path (`/sales/daily`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub folders: Vec<ObjectName>,
    /// Sheets, by id or path (their folder's path and their name: `/sales/daily/Orders`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sheets: Vec<ObjectName>,
    /// Connections, by id or name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub connections: Vec<ObjectName>,
    /// Batches, by id or name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub batches: Vec<ObjectName>,
    /// Template modules, by name (or the id made from it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<ObjectName>,
    /// A folder goes with every folder and sheet below it (else a folder that holds
    /// anything not deleted with it is refused).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub recursive: bool,
    /// Check and report only; delete nothing.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
}

/// An object named by its id or by its path or name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ObjectName {
    /// Its id.
    Id(i64),
    /// Its path (folders, sheets) or name (connections, batches).
    Name(String),
}

impl std::fmt::Display for ObjectName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ObjectName::Id(id) => write!(f, "{id}"),
            ObjectName::Name(name) => write!(f, "`{name}`"),
        }
    }
}

/// `DeleteObjects`' answer: what was deleted (in a dry run: would be).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Deleted {
    /// Whether this was a dry run (nothing was deleted).
    pub dry_run: bool,
    /// Every object deleted, in the order it went: batches, sheets, connections, then
    /// folders, deepest first.
    pub deleted: Vec<DeletedObject>,
    /// The number of the deploy in the deploy history that records the deletions; none for
    /// a dry run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_id: Option<i64>,
}

/// One deleted object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletedObject {
    /// What it was.
    pub kind: ObjectKind,
    /// Its id.
    pub id: i64,
    /// Its path (folders, sheets) or name.
    pub name: String,
}
