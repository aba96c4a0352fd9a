//! A problem as answered: its severity, stable code, message and place (line, column and
//! path in the submitted text). The host's own problem type, with spans, is made into these.

use serde::{Deserialize, Serialize};

/// How bad a problem is, answered as `error` or `warning`: an error refuses what was sent,
/// a warning is only reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// `error`.
    Error,
    /// `warning`.
    Warning,
}

/// A problem placed in its text: what the API answers and the deploy script prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Detail {
    /// Error or warning.
    pub severity: Severity,
    /// Stable code.
    pub code: String,
    /// What is wrong.
    pub message: String,
    /// The file of a project deploy the problem is in (`DeployProject`: the document's
    /// name); none for a single document and for what no one file holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Line, from 1, in the submitted content (a project's: in `file`).
    pub line: Option<u32>,
    /// Column, from 1, in characters.
    pub column: Option<u32>,
    /// Path in the document.
    pub path: String,
    /// On the entry that stands for problems not listed one by one: how many of its code
    /// there are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more: Option<usize>,
}

/// The most problems one answer lists one by one.
pub const MAX_DETAILS: usize = 100;
