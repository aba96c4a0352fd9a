//! `GetLineageGraph`: the repository's data graph, whole or around a table, for the web
//! page's lineage graph.

use super::Request;
use super::get_lineage::LineageTable;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for GetLineageGraph {
    const NAME: &'static str = "GetLineageGraph";
    const RIGHT: Right = Right::Read;
    type Answer = LineageGraph;
}

/// `GetLineageGraph {table?, schema?, depth?}`: the tables of every sheet and the actions
/// that read and write them; with `table`, only what lies upstream and downstream of it, at
/// most `depth` actions away each way (1 to 10, default 2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetLineageGraph {
    /// The table at the centre (any case).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// Its schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// How many actions away each way.
    pub depth: i64,
}

impl GetLineageGraph {
    /// The most edges one answer holds.
    pub const MAX_EDGES: usize = 4000;
}

/// `GetLineageGraph`'s answer: tables and actions, and which action reads or writes which
/// table (by its place in `tables`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LineageGraph {
    /// The tables.
    pub tables: Vec<LineageTable>,
    /// The actions, each with its sheet and folder.
    pub actions: Vec<GraphAction>,
    /// Who reads and writes what.
    pub edges: Vec<LineageEdge>,
    /// Whether the graph is larger than [`GetLineageGraph::MAX_EDGES`] edges (the rest left
    /// out).
    pub truncated: bool,
}

/// An action of [`LineageGraph`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphAction {
    /// The action.
    pub action_id: i64,
    /// Its name.
    pub action_name: String,
    /// Its sheet.
    pub sheet_id: i64,
    /// The sheet's name.
    pub sheet_name: String,
    /// The sheet's folder.
    pub folder: String,
}

/// An edge of [`LineageGraph`]: `actionId` reads or writes table number `table`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LineageEdge {
    /// The action.
    pub action_id: i64,
    /// The table's place in [`LineageGraph::tables`].
    pub table: usize,
    /// Whether the action writes it (else it reads it).
    pub writes: bool,
}
