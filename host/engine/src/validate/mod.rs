//! Validation of a read document: ids, folders, the graph of each sheet, modules, object
//! and connection types. Every problem of the document is collected, in one pass.
//!
//! What the repository already holds is asked through [`Facts`], so this module knows no SQL.
//! With `validate` off (deploy option `validate=false`) only what keeps the repository
//! consistent is checked: ids unique and not taken by another sheet, folders and paths; the
//! graph, module, object type, connection and SQL checks are skipped.

use std::collections::HashMap;
use weft_dsr::model::*;
use weft_dsr::{Path, Problems};

pub use weft_repo::Facts;

mod actions;
mod after;
mod attached;
mod batches;
pub mod budget;
mod catalog;
mod derive;
mod folders;
mod graph;
mod ids;
mod notifications;
mod template_modules;
mod templates;

pub use actions::{Defines, Noted, Read};
use actions::{action, plugin_checks};
pub use after::resolve as resolve_after;
pub use attached::{MAX_TESTS, attach as attach_tests};
pub use batches::batch_schedule;
use batches::batches;
pub use catalog::{CHECK_BUDGET, Catalog, PluginCatalog};
pub use derive::{ActionConnections, action_connections, derive as derive_objects, is_derived};
use folders::{folder, sheet_folder};
use graph::{graph, nodes, sheet_attributes};
use ids::{has_control, ids_not_taken, unique_ids};
pub use template_modules::{
    DEFAULT_RUNS, expand as expand_template_modules, read_stored as read_template_module,
    wanted as wanted_template_modules,
};
pub use templates::{MAX_RENDERED, MAX_RENDERED_TOTAL, RenderBudget, render as render_templates};

/// How to validate.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// The deploy option `validate`: graph, module and type checks.
    pub full: bool,
    /// Whether ids must not belong to another sheet (off for an `intoFolder` copy, whose ids
    /// are fresh).
    pub check_ids: bool,
}

/// Validates what of `doc` depends on the repository (ids, folders, connections), adding
/// every problem to `problems`; [`sheets`] does the rest.
///
/// # Errors
///
/// A repository error while asking `facts`.
pub fn document(
    doc: &Document,
    facts: &dyn Facts,
    catalog: &dyn Catalog,
    opts: Options,
    problems: &mut Problems,
) -> weft_repo::Result<()> {
    let td = Path::root().key("transformationData");
    unique_ids(doc, &td, problems);
    let doc_folders: HashMap<i64, &str> = doc
        .folders
        .iter()
        .map(|f| (f.id.v, f.path.v.as_str()))
        .collect();
    for (i, f) in doc.folders.iter().enumerate() {
        folder(f, &td.key("folders").index(i), doc, facts, problems)?;
    }
    for (i, c) in doc.connections.iter().enumerate() {
        let path = td.key("connections").index(i);
        if c.name.v.trim().is_empty() || has_control(&c.name.v) {
            problems.error(
                "connection.name",
                "a connection's `name` must not be empty nor hold control characters",
                c.name.span,
                &path.key("name"),
            );
        }
        let types = catalog.connection_types();
        if opts.full && !types.contains(&c.kind.v) {
            problems.error(
                "connection.type",
                format!(
                    "connection type `{}` is not served by weft or any loaded plugin; known types: {}",
                    c.kind.v,
                    types.join(", ")
                ),
                c.kind.span,
                &path.key("type"),
            );
        }
    }
    for (i, s) in doc.sheets.iter().enumerate() {
        let path = td.key("sheets").index(i);
        sheet_folder(s, &path, &doc_folders, facts, problems)?;
        if opts.check_ids {
            ids_not_taken(s, &path, facts, problems)?;
        }
    }
    notifications::notifications(doc, &td, facts, problems)?;
    batches(doc, &td, &doc_folders, facts, problems)
}

/// The connections the document's objects use, as the deploy would leave them.
#[derive(Debug, Default)]
pub struct UsedConnections {
    /// The type of each: from the document, else from the repository (`None` when neither
    /// has it).
    pub kinds: HashMap<i64, Option<String>>,
    /// The default schema of each that names one: from the document, else as deployed.
    pub schemas: std::collections::BTreeMap<i64, String>,
}

/// The type and default schema of every connection the document's objects use (one read of
/// the repository for each that the document does not hold).
///
/// # Errors
///
/// A repository error while asking `facts`.
pub fn used_connections(doc: &Document, facts: &dyn Facts) -> weft_repo::Result<UsedConnections> {
    let in_doc: HashMap<i64, (&str, Option<&str>)> = doc
        .connections
        .iter()
        .map(|c| {
            let schema = c
                .schema
                .as_ref()
                .map(|s| s.v.as_str())
                .filter(|s| !s.is_empty());
            (c.id.v, (c.kind.v.as_str(), schema))
        })
        .collect();
    let mut used = UsedConnections::default();
    for s in &doc.sheets {
        for n in &s.nodes {
            if let Some(o) = n.object() {
                let id = o.connection_id.v;
                if used.kinds.contains_key(&id) {
                    continue;
                }
                let (kind, schema) = match in_doc.get(&id) {
                    Some((k, s)) => (Some((*k).to_owned()), s.map(str::to_owned)),
                    None => match facts.connection_facts(id)? {
                        Some((k, s)) => (Some(k), s),
                        None => (None, None),
                    },
                };
                used.kinds.insert(id, kind);
                if let Some(schema) = schema {
                    used.schemas.insert(id, schema);
                }
            }
        }
    }
    Ok(used)
}

/// Notes in each action of `doc` the tables its text defines and those it checks ([`sheets`]
/// found them), so that the plans stored with its sheet order that DDL first and the checks
/// of a table before its readers.
pub fn note_defines(doc: &mut Document, defines: &Defines) {
    for s in &mut doc.sheets {
        for n in &mut s.nodes {
            if let (NodeAttributes::Action(a), Some(d)) = (&mut n.attributes, defines.get(&n.id.v))
            {
                a.defines = d.defines.clone();
                a.checks = d.checks.clone();
            }
        }
    }
}

/// The checks of each sheet that need nothing of the repository but the connection types
/// (`kinds`): attributes, the graph, nodes, and each module's own validation. They run
/// before the repository is locked, as they may take a while. Answers the tables each
/// action's text defines.
pub fn sheets(
    doc: &Document,
    text: &str,
    catalog: &dyn Catalog,
    kinds: &HashMap<i64, Option<String>>,
    opts: Options,
    refused: &std::collections::HashSet<i64>,
    problems: &mut Problems,
) -> Defines {
    let mut defines = Defines::new();
    let td = Path::root().key("transformationData");
    let dialect = |id: i64| catalog.dialect(id, kinds.get(&id).and_then(|k| k.as_deref()));
    for (i, s) in doc.sheets.iter().enumerate() {
        let path = td.key("sheets").index(i);
        sheet_attributes(s, &path, problems);
        if opts.full {
            graph(s, &path, problems);
            nodes(s, &path, kinds, catalog, problems);
            plugin_checks(
                s,
                &path,
                &dialect,
                catalog,
                Read { text, refused },
                problems,
                &mut defines,
            );
        } else {
            // Types are checked even without validation: the attributes of a known module.
            for (j, n) in s.nodes.iter().enumerate() {
                if let NodeAttributes::Action(a) = &n.attributes {
                    action(
                        a,
                        &path.key("nodes").index(j).key("attributes"),
                        false,
                        catalog,
                        problems,
                    );
                }
            }
        }
    }
    defines
}

#[cfg(test)]
mod tests;
