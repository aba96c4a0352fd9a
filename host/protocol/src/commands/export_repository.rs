//! `ExportRepository`: the repository (or one folder's tree) as deployable `.dsr` files in
//! a canonical form.

use super::Request;
use super::deploy_project::ProjectDocument;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for ExportRepository {
    const NAME: &'static str = "ExportRepository";
    const RIGHT: Right = Right::Deploy;
    type Answer = Exports;
}

/// `ExportRepository {folder?}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportRepository {
    /// Only this folder (by path), what is below it and the connections its sheets use; no
    /// batches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
}

/// `ExportRepository`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exports {
    /// The files, each its name (a path with `/`) and text, by name.
    pub files: Vec<ProjectDocument>,
}
