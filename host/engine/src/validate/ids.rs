//! Ids: unique per kind in a document, and not taken by another sheet in the repository;
//! names without control characters.

use std::collections::HashMap;
use weft_dsr::model::*;
use weft_dsr::{Path, Problems};
use weft_repo::Facts;

/// Ids are unique per kind in the document: sheets, nodes (of all sheets), edges, folders,
/// connections. Folder paths are unique too.
pub(super) fn unique_ids(doc: &Document, td: &Path, problems: &mut Problems) {
    fn check(
        kind: &str,
        seen: &mut HashMap<i64, String>,
        id: &At<i64>,
        path: Path,
        problems: &mut Problems,
    ) {
        if let Some(first) = seen.get(&id.v) {
            problems.error(
                "id.duplicate",
                format!(
                    "{kind} id {} is used twice in this document (first at {first})",
                    id.v
                ),
                id.span,
                &path.key("id"),
            );
        } else {
            seen.insert(id.v, path.as_str().to_owned());
        }
    }
    let mut seen = HashMap::new();
    for (i, f) in doc.folders.iter().enumerate() {
        check(
            "folder",
            &mut seen,
            &f.id,
            td.key("folders").index(i),
            problems,
        );
    }
    let mut paths: HashMap<&str, usize> = HashMap::new();
    for (i, f) in doc.folders.iter().enumerate() {
        if let Some(first) = paths.insert(f.path.v.as_str(), i) {
            problems.error(
                "folder.path_taken",
                format!(
                    "folder path `{}` is used twice in this document (first by folder {})",
                    f.path.v, doc.folders[first].id.v
                ),
                f.path.span,
                &td.key("folders").index(i).key("path"),
            );
        }
    }
    seen.clear();
    for (i, c) in doc.connections.iter().enumerate() {
        check(
            "connection",
            &mut seen,
            &c.id,
            td.key("connections").index(i),
            problems,
        );
    }
    seen.clear();
    for (i, s) in doc.sheets.iter().enumerate() {
        check(
            "sheet",
            &mut seen,
            &s.id,
            td.key("sheets").index(i),
            problems,
        );
    }
    seen.clear();
    for (i, s) in doc.sheets.iter().enumerate() {
        for (j, n) in s.nodes.iter().enumerate() {
            check(
                "node",
                &mut seen,
                &n.id,
                td.key("sheets").index(i).key("nodes").index(j),
                problems,
            );
        }
    }
    seen.clear();
    for (i, s) in doc.sheets.iter().enumerate() {
        for (j, e) in s.edges.iter().enumerate() {
            check(
                "edge",
                &mut seen,
                &e.id,
                td.key("sheets").index(i).key("edges").index(j),
                problems,
            );
        }
    }
}

/// Whether `s` holds a control character (NUL, a line break, ...): names and paths are
/// shown in logs, messages and file-like paths, where these break lines or cut strings.
pub(super) fn has_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}

pub(super) fn ids_not_taken(
    s: &Sheet,
    path: &Path,
    facts: &dyn Facts,
    problems: &mut Problems,
) -> weft_repo::Result<()> {
    let nodes: Vec<i64> = s.nodes.iter().map(|n| n.id.v).collect();
    let edges: Vec<i64> = s.edges.iter().map(|e| e.id.v).collect();
    let owners = facts.owners(&nodes, &edges)?;
    for ((j, n), owner) in s.nodes.iter().enumerate().zip(owners.nodes) {
        if let Some(owner) = owner
            && owner != s.id.v
        {
            problems.error(
                    "id.taken",
                    format!("node id {} belongs to sheet {owner} in the repository; a node cannot move to another sheet", n.id.v),
                    n.id.span,
                    &path.key("nodes").index(j).key("id"),
                );
        }
    }
    for ((j, e), owner) in s.edges.iter().enumerate().zip(owners.edges) {
        if let Some(owner) = owner
            && owner != s.id.v
        {
            problems.error(
                "id.taken",
                format!(
                    "edge id {} belongs to sheet {owner} in the repository",
                    e.id.v
                ),
                e.id.span,
                &path.key("edges").index(j).key("id"),
            );
        }
    }
    Ok(())
}
