//! `DeployProject`: deploy several `.dsr` documents (a project's tree of files) as one, with
//! the files their actions read, in
//! one transaction, optionally pruning what the project no longer holds; answered with the
//! deploy report, each object naming its file.

use super::Request;
use crate::deploys;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for DeployProject {
    const NAME: &'static str = "DeployProject";
    const RIGHT: Right = Right::Deploy;
    type Answer = deploys::Report;
}

/// `DeployProject {documents, deployOptions?, prune?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeployProject {
    /// The documents, each with its name (its path in the project), in the order given.
    pub documents: Vec<ProjectDocument>,
    /// The files the documents' actions read (`file`: SQL, a seed's CSV), each with its
    /// name in the project and its text.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ProjectDocument>,
    /// The deploy options, as `DeployRepository`'s.
    #[serde(with = "super::deploy_repository::options_wire")]
    pub deploy_options: deploys::Options,
    /// Folders (by path) below which the sheets and folders the documents do not hold are
    /// deleted in the same transaction.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prune: Vec<String>,
}

/// One document of a project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectDocument {
    /// Its name, as problems and the report name it (a path such as `models/orders.dsr`).
    pub name: String,
    /// The `.dsr` text.
    pub content: String,
}
