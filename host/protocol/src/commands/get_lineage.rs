//! `GetLineage`: which actions of the whole repository write a table and which read it, by
//! the data graph each deploy records (declared objects and those taken from the SQL alike).

use super::Request;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for GetLineage {
    const NAME: &'static str = "GetLineage";
    const RIGHT: Right = Right::Read;
    type Answer = Lineage;
}

/// `GetLineage {table, connectionId?, schema?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetLineage {
    /// The table's name (any case).
    pub table: String,
    /// Only on this connection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_id: Option<i64>,
    /// Only in this schema (any case).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
}

/// `GetLineage`'s answer: the writers and the readers, each by folder, sheet and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lineage {
    /// The actions that write it (who feeds it).
    pub writers: Vec<LineageAction>,
    /// The actions that read it (what it feeds).
    pub readers: Vec<LineageAction>,
    /// Whether there were more than the answer holds (at most 1,000 of each).
    pub truncated: bool,
}

/// An action that reads or writes the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LineageAction {
    /// The action's id.
    pub action_id: i64,
    /// Its name.
    pub action_name: String,
    /// Its sheet.
    pub sheet_id: i64,
    /// The sheet's name.
    pub sheet_name: String,
    /// The sheet's folder's path.
    pub folder: String,
    /// The table's connection.
    pub connection_id: i64,
    /// The table's schema as its object type names it (empty: the connection's default).
    pub schema: String,
    /// The table as its object type names it.
    pub table: String,
    /// Every table the action reads (a writer's inputs: who feeds it, one step up).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<LineageTable>,
    /// Every table the action writes (a reader's outputs: what it feeds, one step down).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<LineageTable>,
}

/// A table an action reads or writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LineageTable {
    /// Its connection.
    pub connection_id: i64,
    /// Its schema as its object type names it (empty: the connection's default).
    pub schema: String,
    /// Its name.
    pub table: String,
}
