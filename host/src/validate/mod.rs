//! Validation of a read document: ids, folders, the graph of each sheet, modules, object
//! and connection types. Every problem of the document is collected, in one pass.
//!
//! What the repository already holds is asked through [`Facts`], so this module knows no SQL.
//! With `validate` off (deploy option `validate=false`) only what keeps the repository
//! consistent is checked: ids unique and not taken by another sheet, folders and paths; the
//! graph, module, object type, connection and SQL checks are skipped.

use crate::dsr::Span;
use crate::dsr::model::*;
use crate::dsr::{Path, Problems};
use std::collections::{HashMap, HashSet};

pub use crate::repo::Facts;

mod catalog;
pub use catalog::{CHECK_BUDGET, PluginCatalog};

/// What validation needs to know of the loaded plugins and the connections' dialects.
pub trait Catalog {
    /// What module `name` declares, if a loaded plugin provides it.
    fn module(&self, name: &str) -> Option<weft_sdk::ModuleInfo>;
    /// Every module name, sorted.
    fn module_names(&self) -> Vec<String>;
    /// Asks module `name` to validate an action.
    ///
    /// # Errors
    ///
    /// When the module failed (a panic caught at the boundary, say).
    fn validate_action(
        &self,
        name: &str,
        input: &weft_sdk::ValidateInput,
    ) -> Result<weft_sdk::ValidateOutput, String>;
    /// Whether object type `id` is provided.
    fn object_type(&self, id: i64) -> bool;
    /// Every object type as `id (name)`.
    fn object_type_names(&self) -> Vec<String>;
    /// Every connection type, the native `sqlite` included.
    fn connection_types(&self) -> Vec<String>;
    /// The SQL dialect of connection number `id`, whose type is `kind`.
    fn dialect(&self, id: i64, kind: Option<&str>) -> weft_sdk::Dialect;
    /// Checks objects against their connections: `(node id, warning)` for each that is off.
    /// Validation judges the document: what the data holds is only ever a warning.
    fn check_objects(&self, objects: &[weft_sdk::ObjectRef]) -> Vec<(i64, String)>;
}

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
) -> crate::repo::Result<()> {
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
    batches(doc, &td, &doc_folders, facts, problems)
}

/// The schedule of a batch, read with its policies; problems placed in the `.dsr` text.
pub fn batch_schedule(
    b: &Batch,
    path: &Path,
    problems: &mut Problems,
) -> Option<crate::scheduling::schedule::Schedule> {
    use crate::scheduling::schedule::{GapPolicy, OverlapPolicy, parse};
    let repeat = match parse(&b.schedule.v) {
        Ok(r) => Some(r),
        Err(e) => {
            // Inside the string when it is written plainly or in one pair of quotes.
            let (start, end) = (b.schedule.span.start as usize, b.schedule.span.end as usize);
            let len = b.schedule.v.len();
            let inner = if end - start == len + 2 {
                start + 1
            } else if end - start == len {
                start
            } else {
                usize::MAX
            };
            let span = if inner == usize::MAX {
                b.schedule.span
            } else {
                Span::new(inner + e.offset, inner + e.offset)
            };
            problems.error(
                "batch.schedule",
                format!("batch {}: {}", b.id.v, e.message),
                span,
                &path.key("schedule"),
            );
            None
        }
    };
    let mut policy = |field: &Option<At<String>>, key: &str, allowed: &str, ok: bool| {
        if let Some(f) = field
            && !ok
        {
            problems.error(
                "batch.policy",
                format!("batch {}: `{key}` is `{}`; use {allowed}", b.id.v, f.v),
                f.span,
                &path.key(key),
            );
        }
    };
    let gap = b.spring_gap.as_ref().map(|g| GapPolicy::parse(&g.v));
    let overlap = b
        .autumn_overlap
        .as_ref()
        .map(|o| OverlapPolicy::parse(&o.v));
    let running = b
        .if_running
        .as_ref()
        .map(|r| matches!(r.v.as_str(), "skip" | "wait"));
    policy(
        &b.spring_gap,
        "springGap",
        "`next` or `skip`",
        !matches!(gap, Some(None)),
    );
    policy(
        &b.autumn_overlap,
        "autumnOverlap",
        "`first`, `second` or `both`",
        !matches!(overlap, Some(None)),
    );
    policy(
        &b.if_running,
        "ifRunning",
        "`skip` or `wait`",
        running != Some(false),
    );
    Some(crate::scheduling::schedule::Schedule {
        repeat: repeat?,
        gap: gap.unwrap_or(Some(GapPolicy::Next))?,
        overlap: overlap.unwrap_or(Some(OverlapPolicy::First))?,
    })
}

fn batches(
    doc: &Document,
    td: &Path,
    doc_folders: &HashMap<i64, &str>,
    facts: &dyn Facts,
    problems: &mut Problems,
) -> crate::repo::Result<()> {
    let mut seen: HashMap<i64, usize> = HashMap::new();
    let doc_sheets: HashSet<i64> = doc.sheets.iter().map(|s| s.id.v).collect();
    let doc_actions: HashSet<i64> = doc
        .sheets
        .iter()
        .flat_map(|s| s.nodes.iter())
        .filter(|n| matches!(n.attributes, NodeAttributes::Action(_)))
        .map(|n| n.id.v)
        .collect();
    for (i, b) in doc.batches.iter().enumerate() {
        let path = td.key("batches").index(i);
        if let Some(first) = seen.insert(b.id.v, i) {
            problems.error(
                "id.duplicate",
                format!(
                    "batch id {} is used twice in this document (first at batches[{first}])",
                    b.id.v
                ),
                b.id.span,
                &path.key("id"),
            );
        }
        if b.name.v.trim().is_empty() || has_control(&b.name.v) {
            problems.error(
                "batch.name",
                format!(
                    "batch {}: `name` must not be empty nor hold control characters",
                    b.id.v
                ),
                b.name.span,
                &path.key("name"),
            );
        }
        batch_schedule(b, &path, problems);
        if b.elements.is_empty() {
            problems.error(
                "batch.elements",
                format!("batch {}: `elements` is empty; a batch runs at least one sheet, action or folder", b.id.v),
                b.span,
                &path.key("elements"),
            );
        }
        for (j, e) in b.elements.iter().enumerate() {
            let epath = path.key("elements").index(j);
            let (what, exists) = match e.kind.v.as_str() {
                "S" => (
                    "sheet",
                    doc_sheets.contains(&e.id.v) || facts.sheet_exists(e.id.v)?,
                ),
                "A" => (
                    "action",
                    doc_actions.contains(&e.id.v) || facts.action_exists(e.id.v)?,
                ),
                "F" => (
                    "folder",
                    doc_folders.contains_key(&e.id.v) || facts.folder_path(e.id.v)?.is_some(),
                ),
                other => {
                    problems.error(
                        "batch.element_type",
                        format!(
                            "batch {}: element type `{other}` is not one of S (sheet), A (action), F (folder)",
                            b.id.v
                        ),
                        e.kind.span,
                        &epath.key("elementType"),
                    );
                    continue;
                }
            };
            if !exists {
                problems.error(
                    "batch.element_missing",
                    format!(
                        "batch {}: {what} {} does not exist, neither in the repository nor in this document",
                        b.id.v, e.id.v
                    ),
                    e.id.span,
                    &epath.key("elementId"),
                );
            }
        }
    }
    Ok(())
}

/// The type of every connection the document's objects use: from the document, else from
/// the repository (`None` when neither has it).
///
/// # Errors
///
/// A repository error while asking `facts`.
pub fn connection_kinds(
    doc: &Document,
    facts: &dyn Facts,
) -> crate::repo::Result<HashMap<i64, Option<String>>> {
    let doc_connections: HashMap<i64, &str> = doc
        .connections
        .iter()
        .map(|c| (c.id.v, c.kind.v.as_str()))
        .collect();
    let mut kinds: HashMap<i64, Option<String>> = HashMap::new();
    for s in &doc.sheets {
        for n in &s.nodes {
            if let Some(o) = n.object() {
                let id = o.connection_id.v;
                if let std::collections::hash_map::Entry::Vacant(e) = kinds.entry(id) {
                    let kind = match doc_connections.get(&id) {
                        Some(k) => Some((*k).to_owned()),
                        None => facts.connection_type(id)?,
                    };
                    e.insert(kind);
                }
            }
        }
    }
    Ok(kinds)
}

/// The checks of each sheet that need nothing of the repository but the connection types
/// (`kinds`): attributes, the graph, nodes, and each module's own validation. They run
/// before the repository is locked, as they may take a while.
pub fn sheets(
    doc: &Document,
    text: &str,
    catalog: &dyn Catalog,
    kinds: &HashMap<i64, Option<String>>,
    opts: Options,
    problems: &mut Problems,
) {
    let td = Path::root().key("transformationData");
    let dialect = |id: i64| catalog.dialect(id, kinds.get(&id).and_then(|k| k.as_deref()));
    for (i, s) in doc.sheets.iter().enumerate() {
        let path = td.key("sheets").index(i);
        sheet_attributes(s, &path, problems);
        if opts.full {
            graph(s, &path, problems);
            nodes(s, &path, kinds, catalog, problems);
            plugin_checks(s, &path, &dialect, catalog, text, problems);
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
}

/// Ids are unique per kind in the document: sheets, nodes (of all sheets), edges, folders,
/// connections. Folder paths are unique too.
fn unique_ids(doc: &Document, td: &Path, problems: &mut Problems) {
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
fn has_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}

fn folder(
    f: &Folder,
    path: &Path,
    doc: &Document,
    facts: &dyn Facts,
    problems: &mut Problems,
) -> crate::repo::Result<()> {
    let p = f.path.v.as_str();
    let well_formed = p.starts_with('/')
        && !p.contains('\\')
        && !has_control(p)
        && (p == "/"
            || (!p.ends_with('/')
                && !p[1..]
                    .split('/')
                    .any(|part| part.is_empty() || part == "." || part == "..")));
    if !well_formed {
        problems.error(
            "folder.path",
            format!("folder path `{}` is not an absolute path such as `/sales/daily` (it starts with `/`, has no empty, `.` or `..` parts, no `/` at the end, no backslash and no control characters)", p.escape_debug()),
            f.path.span,
            &path.key("path"),
        );
        return Ok(());
    }
    if let Some(other) = facts.folder_at(p)?
        && other != f.id.v
    {
        problems.error(
            "folder.path_taken",
            format!("folder path `{p}` belongs to folder {other} in the repository"),
            f.path.span,
            &path.key("path"),
        );
    }
    if let Some(old) = facts.folder_path(f.id.v)?
        && old != p
        && facts.folder_has_contents(f.id.v, &old)?
    {
        problems.error(
            "folder.rename_nonempty",
            format!("folder {} holds sheets or folders, so its path cannot change from `{old}` to `{p}`; move or delete what it holds first", f.id.v),
            f.path.span,
            &path.key("path"),
        );
    }
    if let Some(cut) = p.rfind('/').filter(|&c| c > 0) {
        let parent = &p[..cut];
        let in_doc = doc.folders.iter().any(|g| g.path.v == parent);
        if !in_doc && facts.folder_at(parent)?.is_none() {
            problems.error(
                "folder.parent_missing",
                format!("folder `{p}` lies in `{parent}`, which is neither in the repository nor in this document; deploy `{parent}` first or with it"),
                f.path.span,
                &path.key("path"),
            );
        }
    }
    Ok(())
}

fn sheet_folder(
    s: &Sheet,
    path: &Path,
    doc_folders: &HashMap<i64, &str>,
    facts: &dyn Facts,
    problems: &mut Problems,
) -> crate::repo::Result<()> {
    let a = &s.attributes;
    let apath = path.key("attributes");
    let actual = match doc_folders.get(&a.folder_id.v) {
        Some(p) => Some((*p).to_owned()),
        None => facts.folder_path(a.folder_id.v)?,
    };
    match actual {
        None => problems.error(
            "sheet.folder_missing",
            format!(
                "sheet {}: folder {} does not exist, neither in the repository nor in this document",
                s.id.v, a.folder_id.v
            ),
            a.folder_id.span,
            &apath.key("folder_id"),
        ),
        Some(p) if p != a.folder.v => problems.error(
            "sheet.folder_path",
            format!(
                "sheet {}: `folder` is `{}` but folder {} has the path `{p}`",
                s.id.v, a.folder.v, a.folder_id.v
            ),
            a.folder.span,
            &apath.key("folder"),
        ),
        Some(_) => {}
    }
    Ok(())
}

fn ids_not_taken(
    s: &Sheet,
    path: &Path,
    facts: &dyn Facts,
    problems: &mut Problems,
) -> crate::repo::Result<()> {
    for (j, n) in s.nodes.iter().enumerate() {
        if let Some(owner) = facts.node_sheet(n.id.v)?
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
    for (j, e) in s.edges.iter().enumerate() {
        if let Some(owner) = facts.edge_sheet(e.id.v)?
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

fn sheet_attributes(s: &Sheet, path: &Path, problems: &mut Problems) {
    let a = &s.attributes;
    if a.name.v.trim().is_empty() || has_control(&a.name.v) {
        problems.error(
            "sheet.name",
            format!(
                "sheet {}: `name` must not be empty nor hold control characters",
                s.id.v
            ),
            a.name.span,
            &path.key("attributes").key("name"),
        );
    }
    if let Some(order) = &a.order {
        let derived = a.name.v.to_uppercase();
        if order.v != derived {
            problems.warning(
                "sheet.order",
                format!("sheet {}: `order` is `{}`, not the upper-case name `{derived}`; it is kept as given", s.id.v, order.v),
                order.span,
                &path.key("attributes").key("order"),
            );
        }
    }
}

/// Edges join nodes of the sheet, run object to action or action to object, and form no
/// cycle; a sheet of more than one node has edges.
fn graph(s: &Sheet, path: &Path, problems: &mut Problems) {
    let kinds: HashMap<i64, i64> = s.nodes.iter().map(|n| (n.id.v, n.kind.v)).collect();
    if s.nodes.len() > 1 && s.edges.is_empty() {
        problems.error(
            "sheet.no_edges",
            format!("sheet {} has {} nodes but no edges; connect sources to actions and actions to targets", s.id.v, s.nodes.len()),
            s.span,
            &path.key("edges"),
        );
    }
    let mut next: HashMap<i64, Vec<i64>> = HashMap::new();
    let mut touched: HashSet<i64> = HashSet::new();
    for (j, e) in s.edges.iter().enumerate() {
        let epath = path.key("edges").index(j);
        let mut ok = true;
        for (end, at) in [("from", &e.from), ("to", &e.to)] {
            if !kinds.contains_key(&at.v) {
                problems.error(
                    "edge.unknown_node",
                    format!(
                        "edge {}: `{end}` names node {}, which is not a node of sheet {}",
                        e.id.v, at.v, s.id.v
                    ),
                    at.span,
                    &epath.key(end),
                );
                ok = false;
            }
        }
        if !ok {
            continue;
        }
        touched.insert(e.from.v);
        touched.insert(e.to.v);
        match (kinds[&e.from.v], kinds[&e.to.v]) {
            (NODE_OBJECT, NODE_OBJECT) => problems.error(
                "edge.object_to_object",
                format!("edge {} runs from object {} to object {}; an edge joins an object and an action", e.id.v, e.from.v, e.to.v),
                e.span,
                &epath,
            ),
            (NODE_ACTION, NODE_ACTION) => problems.error(
                "edge.action_to_action",
                format!("edge {} runs from action {} to action {}; an edge joins an action and an object", e.id.v, e.from.v, e.to.v),
                e.span,
                &epath,
            ),
            _ => next.entry(e.from.v).or_default().push(e.to.v),
        }
    }
    if s.nodes.len() > 1 && !s.edges.is_empty() {
        for (j, n) in s.nodes.iter().enumerate() {
            if !touched.contains(&n.id.v) {
                problems.warning(
                    "node.unconnected",
                    format!("node {} of sheet {} has no edge", n.id.v, s.id.v),
                    n.span,
                    &path.key("nodes").index(j),
                );
            }
        }
    }
    if let Some(cycle) = crate::plan::find_cycle(s.nodes.iter().map(|n| n.id.v), |n| {
        next.get(&n).map_or(&[][..], Vec::as_slice)
    }) {
        let shown: Vec<String> = cycle.iter().map(i64::to_string).collect();
        problems.error(
            "sheet.cycle",
            format!("sheet {} has a cycle: {}", s.id.v, shown.join(" -> ")),
            s.span,
            &path.key("edges"),
        );
    }
}

fn nodes(
    s: &Sheet,
    path: &Path,
    kinds: &HashMap<i64, Option<String>>,
    catalog: &dyn Catalog,
    problems: &mut Problems,
) {
    for (j, n) in s.nodes.iter().enumerate() {
        let apath = path.key("nodes").index(j).key("attributes");
        match &n.attributes {
            NodeAttributes::Action(a) => action(a, &apath, true, catalog, problems),
            NodeAttributes::Object(o) => {
                if o.dependency.v.chars().count() != 1
                    || !o.dependency.v.chars().all(char::is_alphabetic)
                {
                    problems.error(
                        "node.dependency",
                        format!("node {}: `dependency` must be one letter (`Y` for sources and targets), found `{}`", n.id.v, o.dependency.v),
                        o.dependency.span,
                        &apath.key("dependency"),
                    );
                }
                if !catalog.object_type(o.object_type_id.v) {
                    problems.error(
                        "node.object_type",
                        format!(
                            "node {}: object type {} is not provided by any loaded plugin; known types: {}",
                            n.id.v,
                            o.object_type_id.v,
                            catalog.object_type_names().join(", ")
                        ),
                        o.object_type_id.span,
                        &apath.key("objectTypeId"),
                    );
                }
                let c = o.connection_id.v;
                if kinds.get(&c).is_none_or(Option::is_none) {
                    problems.error(
                        "node.connection_missing",
                        format!("node {}: connection {c} is not defined, neither in the repository nor in this document", n.id.v),
                        o.connection_id.span,
                        &apath.key("connectionId"),
                    );
                }
            }
            NodeAttributes::Invalid => {}
        }
    }
}

/// Checks an action's module and the attributes it takes; an unknown module is an error only
/// when `module_required` (full validation).
fn action(
    a: &ActionAttributes,
    apath: &Path,
    module_required: bool,
    catalog: &dyn Catalog,
    problems: &mut Problems,
) {
    use crate::dsr::value::Value;
    use weft_sdk::AttributeKind;
    let Some(m) = catalog.module(&a.module.v) else {
        if module_required {
            problems.error(
                "node.unknown_module",
                format!(
                    "module `{}` is not provided by any loaded plugin; known modules: {}",
                    a.module.v,
                    catalog.module_names().join(", ")
                ),
                a.module.span,
                &apath.key("module"),
            );
        }
        return;
    };
    for (key, value) in &a.extra {
        let Some(spec) = m.attributes.iter().find(|s| s.name == key.v.as_str()) else {
            let mut names: Vec<&str> = m.attributes.iter().map(|s| s.name.as_str()).collect();
            names.sort_unstable();
            let takes = if names.is_empty() {
                String::new()
            } else {
                format!(" and {}", names.join(", "))
            };
            problems.error(
                "node.module_attribute",
                format!("unknown attribute `{}` for module {}; it takes module, documentation, name, action{takes}", key.v, m.name),
                key.span,
                &apath.key(&key.v),
            );
            continue;
        };
        let (fits, expected) = match spec.kind {
            AttributeKind::Bool => (matches!(value.value, Value::Bool(_)), "true or false"),
            AttributeKind::String => (matches!(value.value, Value::String(_)), "a string"),
            AttributeKind::Integer => (matches!(value.value, Value::Int(_)), "a whole number"),
        };
        if !fits {
            problems.error(
                "dsr.wrong_type",
                format!(
                    "`{}` of module {} must be {expected}, found {}",
                    key.v,
                    m.name,
                    value.value.kind()
                ),
                value.span,
                &apath.key(&key.v),
            );
        }
    }
}

/// Asks each action's module to validate it, places the module's problems in the document,
/// and checks that every table the action text reads is one of the action's objects.
fn plugin_checks(
    s: &Sheet,
    path: &Path,
    dialect: &dyn Fn(i64) -> weft_sdk::Dialect,
    catalog: &dyn Catalog,
    text: &str,
    problems: &mut Problems,
) {
    use weft_sdk::abi_stable::std_types::{RString, Tuple2};
    for plan in crate::plan::actions_of(s, dialect) {
        let node = &s.nodes[plan.index];
        let NodeAttributes::Action(a) = &node.attributes else {
            continue;
        };
        let apath = path.key("nodes").index(plan.index).key("attributes");
        if catalog.module(&plan.module).is_none() {
            continue;
        }
        let input = weft_sdk::ValidateInput {
            action_id: plan.id,
            action: plan.text.as_deref().map(RString::from).into(),
            attributes: plan
                .attributes
                .iter()
                .map(|(k, v)| Tuple2(RString::from(k.as_str()), v.clone()))
                .collect(),
            sources: plan.sources.iter().map(|(o, _)| o.clone()).collect(),
            targets: plan.targets.iter().map(|(o, _)| o.clone()).collect(),
        };
        let out = match catalog.validate_action(&plan.module, &input) {
            Ok(out) => out,
            Err(e) => {
                problems.error(
                    "module.failed",
                    format!(
                        "action {}: module {} failed while validating it: {e}",
                        plan.id, plan.module
                    ),
                    a.module.span,
                    &apath.key("module"),
                );
                continue;
            }
        };
        // Offsets in the action text become places in the document.
        let map = a
            .action
            .as_ref()
            .map(|t| crate::dsr::hjson::string_source_map(text, t.span.start as usize));
        let place = |offset: Option<u32>| -> (Span, Path) {
            match (offset, &map) {
                (Some(o), Some(map)) => {
                    // The end of the text is just after its last character (the literal's
                    // closing quotes may stand on a later line).
                    let o = o as usize;
                    let at = if o + 1 >= map.len() && map.len() >= 2 {
                        let last = map[map.len() - 2];
                        last + text[last..].chars().next().map_or(1, char::len_utf8)
                    } else {
                        map.get(o).copied().unwrap_or(0)
                    };
                    (Span::new(at, at), apath.key("action"))
                }
                _ => (a.module.span, apath.key("module")),
            }
        };
        for p in out.problems.iter() {
            let (span, ppath) = place(p.offset.into_option());
            let message = format!("action {}: {}", plan.id, p.message);
            let code = match p.code.as_str() {
                "sql.syntax" => "sql.syntax",
                "sql.missing" => "sql.missing",
                "sql.not_a_query" => "sql.not_a_query",
                "module.sources" => "module.sources",
                "module.targets" => "module.targets",
                "module.attribute" => "module.attribute",
                _ => "module.problem",
            };
            match p.severity {
                weft_sdk::Severity::Error => problems.error(code, message, span, &ppath),
                weft_sdk::Severity::Warning => problems.warning(code, message, span, &ppath),
            }
        }
        // The host enforces what the module declares.
        let info = catalog.module(&plan.module);
        if let Some(info) = &info {
            let range = |min: u32, max: u32| match (min, max) {
                (a, b) if a == b => format!("exactly {a}"),
                (a, u32::MAX) => format!("at least {a}"),
                (a, b) => format!("{a} to {b}"),
            };
            let (ns, nt) = (plan.sources.len() as u32, plan.targets.len() as u32);
            if ns < info.min_sources || ns > info.max_sources {
                problems.error(
                    "module.sources",
                    format!(
                        "action {}: {} takes {} source object(s); this action has {ns}",
                        plan.id,
                        plan.module,
                        range(info.min_sources, info.max_sources)
                    ),
                    a.module.span,
                    &apath.key("module"),
                );
            }
            if nt < info.min_targets || nt > info.max_targets {
                problems.error(
                    "module.targets",
                    format!(
                        "action {}: {} takes {} target object(s); this action has {nt}",
                        plan.id,
                        plan.module,
                        range(info.min_targets, info.max_targets)
                    ),
                    a.module.span,
                    &apath.key("module"),
                );
            }
        }
        // A read matches a source, or a target on a connection the sources are on (an action
        // may read what it writes), or any object when the action has no sources.
        let source_connections: Vec<i64> =
            plan.sources.iter().map(|(o, _)| o.connection_id).collect();
        let readable = plan
            .sources
            .iter()
            .chain(plan.targets.iter().filter(|(o, _)| {
                source_connections.is_empty() || source_connections.contains(&o.connection_id)
            }));
        let readable: Vec<&(weft_sdk::ObjectRef, String)> = readable.collect();
        for read in out.reads.iter() {
            let schema = read.schema.as_ref().into_option().map(|s| s.as_str());
            let known = readable.iter().any(|(o, _)| {
                o.name.eq_ignore_ascii_case(&read.name)
                    && match (schema, o.schema.as_ref().into_option()) {
                        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
                        _ => true,
                    }
            });
            if !known {
                let shown = match schema {
                    Some(sc) => format!("{sc}.{}", read.name),
                    None => read.name.to_string(),
                };
                let (span, ppath) = place(read.offset.into_option());
                problems.error(
                    "sql.unknown_table",
                    format!(
                        "action {} reads `{shown}`, which is not one of its source objects; add a source node for it (the execution order depends on it)",
                        plan.id
                    ),
                    span,
                    &ppath,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests;
