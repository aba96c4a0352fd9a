//! A deploy's options and its report (`DeployRepository`): what it created, updated,
//! found unchanged and deleted, and its warnings.

use crate::problems::Detail;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The deploy options of SPEC 4.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Check the graph, modules and types (default true).
    pub validate: bool,
    /// Validate only; change nothing (default false).
    pub dry_run: bool,
    /// Copy the sheets into this folder with fresh ids.
    pub into_folder: Option<i64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            validate: true,
            dry_run: false,
            into_folder: None,
        }
    }
}

/// Old-to-new ids of an `intoFolder` copy.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct IdMap {
    /// Sheet ids.
    pub sheets: BTreeMap<String, i64>,
    /// Node ids.
    pub nodes: BTreeMap<String, i64>,
    /// Edge ids.
    pub edges: BTreeMap<String, i64>,
}

/// What a successful deploy did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Whether this was a dry run (nothing was written).
    pub dry_run: bool,
    /// Whether the graph, module and type checks ran.
    pub validated: bool,
    /// Objects created.
    pub created: Vec<Touched>,
    /// Objects updated.
    pub updated: Vec<Touched>,
    /// Objects found identical.
    pub unchanged: Vec<Touched>,
    /// Nodes and edges a redeployed sheet no longer holds.
    pub deleted: Vec<Touched>,
    /// Warnings (the deploy went on).
    pub warnings: Vec<Detail>,
    /// For `intoFolder`: old-to-new ids.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_map: Option<IdMap>,
    /// The number of the deploy in the deploy history (`ListDeploys`); none for a dry run
    /// and for a deploy that changed nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_id: Option<i64>,
}

/// One object a deploy touched, as the answer lists it under what happened to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Touched {
    /// What it is.
    pub kind: ObjectKind,
    /// Its id.
    pub id: i64,
    /// For nodes and edges: the sheet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sheet_id: Option<i64>,
    /// In a project deploy: the file that holds it (none for what `prune` deleted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// The kinds of object a deploy writes, answered as their lowercase names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObjectKind {
    /// A folder.
    Folder,
    /// A connection.
    Connection,
    /// A sheet.
    Sheet,
    /// A node of a sheet.
    Node,
    /// An edge of a sheet.
    Edge,
    /// A batch.
    Batch,
    /// The notification setup (channels and the rules for every batch; one object).
    Notifications,
    /// A template module (by name; its id is made from the name).
    Module,
}

impl ObjectKind {
    /// Its name, as answered.
    pub fn word(self) -> &'static str {
        match self {
            ObjectKind::Folder => "folder",
            ObjectKind::Connection => "connection",
            ObjectKind::Sheet => "sheet",
            ObjectKind::Node => "node",
            ObjectKind::Edge => "edge",
            ObjectKind::Batch => "batch",
            ObjectKind::Notifications => "notifications",
            ObjectKind::Module => "module",
        }
    }
}

impl std::fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}
