//! Validation of a read document: ids, folders, the graph of each sheet, modules, object
//! and connection types. Every problem of the document is collected, in one pass.
//!
//! What the repository already holds is asked through [`Facts`], so this module knows no SQL.
//! With `validate` off (deploy option `validate=false`) only what keeps the repository
//! consistent is checked: ids unique and not taken by another sheet, folders and paths; the
//! graph, module, object type, connection and SQL checks are skipped.

pub mod modules;

use crate::dsr::model::*;
use crate::dsr::{Path, Problems};
use std::collections::{HashMap, HashSet};

/// What validation needs to know of the repository.
pub trait Facts {
    /// The path of folder `id`, if it exists.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn folder_path(&self, id: i64) -> crate::repo::Result<Option<String>>;
    /// The id of the folder at `path`, if one exists.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn folder_at(&self, path: &str) -> crate::repo::Result<Option<i64>>;
    /// The sheet that node `id` belongs to, if any.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn node_sheet(&self, id: i64) -> crate::repo::Result<Option<i64>>;
    /// The sheet that edge `id` belongs to, if any.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn edge_sheet(&self, id: i64) -> crate::repo::Result<Option<i64>>;
    /// Whether folder `id`, whose path is `path`, holds sheets or folders.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn folder_has_contents(&self, id: i64, path: &str) -> crate::repo::Result<bool>;
    /// Whether connection number `id` exists.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn connection_exists(&self, id: i64) -> crate::repo::Result<bool>;
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

/// Validates `doc`, adding every problem to `problems`.
///
/// # Errors
///
/// A repository error while asking `facts`.
pub fn document(
    doc: &Document,
    facts: &dyn Facts,
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
        if c.name.v.trim().is_empty() {
            problems.error(
                "connection.name",
                "a connection's `name` must not be empty",
                c.name.span,
                &path.key("name"),
            );
        }
        if opts.full && !modules::CONNECTION_TYPES.contains(&c.kind.v.as_str()) {
            problems.error(
                "connection.type",
                format!(
                    "connection type `{}` is not known; known types: {}",
                    c.kind.v,
                    modules::CONNECTION_TYPES.join(", ")
                ),
                c.kind.span,
                &path.key("type"),
            );
        }
    }
    let doc_connections: HashSet<i64> = doc.connections.iter().map(|c| c.id.v).collect();
    for (i, s) in doc.sheets.iter().enumerate() {
        let path = td.key("sheets").index(i);
        sheet_folder(s, &path, &doc_folders, facts, problems)?;
        if opts.check_ids {
            ids_not_taken(s, &path, facts, problems)?;
        }
        sheet_attributes(s, &path, problems);
        if opts.full {
            graph(s, &path, problems);
            nodes(s, &path, &doc_connections, facts, problems)?;
        } else {
            // Types are checked even without validation: the attributes of a known module.
            for (j, n) in s.nodes.iter().enumerate() {
                if let NodeAttributes::Action(a) = &n.attributes {
                    action(
                        a,
                        &path.key("nodes").index(j).key("attributes"),
                        false,
                        problems,
                    );
                }
            }
        }
    }
    Ok(())
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

fn folder(
    f: &Folder,
    path: &Path,
    doc: &Document,
    facts: &dyn Facts,
    problems: &mut Problems,
) -> crate::repo::Result<()> {
    let p = f.path.v.as_str();
    let well_formed = p.starts_with('/')
        && (p == "/" || (!p.ends_with('/') && !p[1..].split('/').any(str::is_empty)));
    if !well_formed {
        problems.error(
            "folder.path",
            format!("folder path `{p}` is not an absolute path such as `/sales/daily` (it starts with `/`, has no empty parts and no `/` at the end)"),
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
    if a.name.v.trim().is_empty() {
        problems.error(
            "sheet.name",
            format!("sheet {}: `name` must not be empty", s.id.v),
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
    if let Some(cycle) = find_cycle(&s.nodes, &next) {
        let shown: Vec<String> = cycle.iter().map(i64::to_string).collect();
        problems.error(
            "sheet.cycle",
            format!("sheet {} has a cycle: {}", s.id.v, shown.join(" -> ")),
            s.span,
            &path.key("edges"),
        );
    }
}

/// A cycle of the directed graph, as the node ids along it (first repeated at the end).
fn find_cycle(nodes: &[Node], next: &HashMap<i64, Vec<i64>>) -> Option<Vec<i64>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut mark: HashMap<i64, Mark> = nodes.iter().map(|n| (n.id.v, Mark::New)).collect();
    for n in nodes {
        if mark.get(&n.id.v) != Some(&Mark::New) {
            continue;
        }
        // Iterative depth-first search; `stack` holds (node, index of the next successor).
        let mut stack: Vec<(i64, usize)> = vec![(n.id.v, 0)];
        mark.insert(n.id.v, Mark::Open);
        while let Some(&mut (node, ref mut i)) = stack.last_mut() {
            let succ = next.get(&node).map_or(&[][..], Vec::as_slice);
            if let Some(&to) = succ.get(*i) {
                *i += 1;
                match mark.get(&to).copied() {
                    Some(Mark::New) => {
                        mark.insert(to, Mark::Open);
                        stack.push((to, 0));
                    }
                    Some(Mark::Open) => {
                        let from = stack.iter().position(|(id, _)| *id == to).unwrap_or(0);
                        let mut cycle: Vec<i64> = stack[from..].iter().map(|(id, _)| *id).collect();
                        cycle.push(to);
                        return Some(cycle);
                    }
                    _ => {}
                }
            } else {
                mark.insert(node, Mark::Done);
                stack.pop();
            }
        }
    }
    None
}

fn nodes(
    s: &Sheet,
    path: &Path,
    doc_connections: &HashSet<i64>,
    facts: &dyn Facts,
    problems: &mut Problems,
) -> crate::repo::Result<()> {
    for (j, n) in s.nodes.iter().enumerate() {
        let apath = path.key("nodes").index(j).key("attributes");
        match &n.attributes {
            NodeAttributes::Action(a) => action(a, &apath, true, problems),
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
                if !modules::OBJECT_TYPES
                    .iter()
                    .any(|(id, _)| *id == o.object_type_id.v)
                {
                    let known: Vec<String> = modules::OBJECT_TYPES
                        .iter()
                        .map(|(id, name)| format!("{id} ({name})"))
                        .collect();
                    problems.error(
                        "node.object_type",
                        format!(
                            "node {}: object type {} is not known; known types: {}",
                            n.id.v,
                            o.object_type_id.v,
                            known.join(", ")
                        ),
                        o.object_type_id.span,
                        &apath.key("objectTypeId"),
                    );
                }
                let c = o.connection_id.v;
                if !doc_connections.contains(&c) && !facts.connection_exists(c)? {
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
    Ok(())
}

/// Checks an action's module and the attributes it takes; an unknown module is an error only
/// when `module_required` (full validation).
fn action(a: &ActionAttributes, apath: &Path, module_required: bool, problems: &mut Problems) {
    let Some(m) = modules::module(&a.module.v) else {
        if !module_required {
            return;
        }
        problems.error(
            "node.unknown_module",
            format!(
                "module `{}` is not provided by any plugin; known modules: {}",
                a.module.v,
                modules::module_names()
            ),
            a.module.span,
            &apath.key("module"),
        );
        return;
    };
    for (key, value) in &a.extra {
        let known = m
            .attributes
            .iter()
            .chain(modules::COMMON_ATTRIBUTES)
            .find(|(k, _)| *k == key.v);
        let Some((_, ty)) = known else {
            let mut names: Vec<&str> = m
                .attributes
                .iter()
                .chain(modules::COMMON_ATTRIBUTES)
                .map(|(k, _)| *k)
                .collect();
            names.sort_unstable();
            problems.error(
                "node.module_attribute",
                format!(
                    "unknown attribute `{}` for module {}; it takes module, documentation, name, action and {}",
                    key.v,
                    m.name,
                    names.join(", ")
                ),
                key.span,
                &apath.key(&key.v),
            );
            continue;
        };
        let fits = matches!(
            (ty, &value.value),
            (
                modules::AttributeType::Bool,
                crate::dsr::value::Value::Bool(_)
            ) | (
                modules::AttributeType::String,
                crate::dsr::value::Value::String(_)
            )
        );
        if !fits {
            let expected = match ty {
                modules::AttributeType::Bool => "true or false",
                modules::AttributeType::String => "a string",
            };
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
