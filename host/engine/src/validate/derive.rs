//! Objects from the SQL: an action without object nodes or edges that names its connection
//! (`connection`, an id or a name, else its sheet's) gets its source and target objects
//! from what its module finds in its text: the tables it writes become targets, the tables
//! it reads (CTEs and table functions are none) sources. They are added to the document as
//! nodes and edges before the checks, so that the graph, the order, the page and the
//! repository see them as any other; their ids are negative (a document's are positive),
//! derived from the action's (`-(action * 1000 + k)`, `k` up to 399, edges from `k = 500`;
//! `400` to `499` and `900` up are the action's attached tests', `attached`), so that they
//! are the same at every deploy of the same text, and an export leaves them out.

use super::catalog::Catalog;
use std::collections::{HashMap, HashSet};
use weft_dsr::model::{
    At, Document, Edge, Extra, Layout, NameOrId, Node, NodeAttributes, ObjectAttributes,
};
use weft_dsr::{Path, Problems};
use weft_repo::Facts;

/// The most objects one action's text may give.
pub const MAX_DERIVED: usize = 399;

/// The connection each action without objects runs on, by action id (found in the document
/// or the repository), and each such connection's type.
#[derive(Debug, Default)]
pub struct ActionConnections {
    /// Action id: connection id.
    pub of: HashMap<i64, i64>,
    /// Connection id: its type, when known.
    pub kinds: HashMap<i64, Option<String>>,
    /// The actions whose connection was not found (said at its place): the checks that
    /// follow leave them alone rather than say again what that one problem means.
    pub unfound: HashSet<i64>,
}

/// Whether a node id is one this module made.
pub fn is_derived(id: i64) -> bool {
    id < 0
}

/// The connection of each action of `doc` that has no edges and names one (or whose sheet
/// does), each name found in the document or else the repository; a name or id that finds
/// none, or two, is a problem at its place.
///
/// # Errors
///
/// A repository error while asking `facts`.
pub fn action_connections(
    doc: &Document,
    facts: &dyn Facts,
    problems: &mut Problems,
) -> weft_repo::Result<ActionConnections> {
    let mut out = ActionConnections::default();
    let td = Path::root().key("transformationData");
    let in_doc: Vec<(i64, &str, &str)> = doc
        .connections
        .iter()
        .map(|c| (c.id.v, c.name.v.as_str(), c.kind.v.as_str()))
        .collect();
    // What the repository answered, asked once per name however many actions name it.
    let mut named: HashMap<String, Vec<i64>> = HashMap::new();
    let mut told: HashSet<(u32, u32)> = HashSet::new();
    for (i, s) in doc.sheets.iter().enumerate() {
        let spath = td.key("sheets").index(i);
        // The nodes with an edge, once per sheet.
        let linked: std::collections::HashSet<i64> =
            s.edges.iter().flat_map(|e| [e.from.v, e.to.v]).collect();
        for (j, n) in s.nodes.iter().enumerate() {
            let NodeAttributes::Action(a) = &n.attributes else {
                continue;
            };
            if linked.contains(&n.id.v)
                || (a.connection.is_none() && s.attributes.connection.is_none())
            {
                continue;
            }
            let (written, path) = match (&a.connection, &s.attributes.connection) {
                (Some(c), _) => (
                    c,
                    spath
                        .key("nodes")
                        .index(j)
                        .key("attributes")
                        .key("connection"),
                ),
                (None, Some(c)) => (c, spath.key("attributes").key("connection")),
                (None, None) => continue,
            };
            let found: Result<i64, String> = match &written.v {
                // Found before (its type is noted): not asked again.
                NameOrId::Id(id) if out.kinds.contains_key(id) => Ok(*id),
                NameOrId::Id(id) => match in_doc.iter().find(|(c, _, _)| c == id) {
                    Some(_) => Ok(*id),
                    None => match facts.connection_facts(*id)? {
                        Some(_) => Ok(*id),
                        None => Err(format!(
                            "no connection has id {id}, neither in this document nor in the repository"
                        )),
                    },
                },
                NameOrId::Name(name) => {
                    let here: Vec<i64> = in_doc
                        .iter()
                        .filter(|(_, n, _)| n == name)
                        .map(|(id, _, _)| *id)
                        .collect();
                    let ids = if !here.is_empty() {
                        here
                    } else if let Some(found) = named.get(name) {
                        found.clone()
                    } else {
                        let found = facts.connections_named(name)?;
                        named.insert(name.clone(), found.clone());
                        found
                    };
                    super::after::one_named(
                        ids,
                        || {
                            format!(
                                "no connection is named `{name}`, neither in this document nor in the repository"
                            )
                        },
                        name,
                        "connections",
                    )
                }
            };
            match found {
                Ok(id) => {
                    out.of.insert(n.id.v, id);
                    if let std::collections::hash_map::Entry::Vacant(e) = out.kinds.entry(id) {
                        let kind = match in_doc.iter().find(|(c, _, _)| *c == id) {
                            Some((_, _, k)) => Some((*k).to_owned()),
                            None => facts.connection_facts(id)?.map(|(k, _)| k),
                        };
                        e.insert(kind);
                    }
                }
                Err(message) => {
                    out.unfound.insert(n.id.v);
                    // A sheet's connection is said once, not once per action.
                    if told.insert((written.span.start, written.span.end)) {
                        problems.error("action.connection", message, written.span, &path);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Adds to each action of `conns` the objects its module finds in its text, with their
/// edges. An action whose module finds nothing is left as it is: the checks that follow say
/// what it lacks. One whose text the module refuses is reported here, at its places (in
/// `text`, the deploy's), in the connection's dialect: the ids of those are answered, for
/// the checks that follow to leave alone.
pub fn derive(
    doc: &mut Document,
    catalog: &dyn Catalog,
    conns: &ActionConnections,
    text: &str,
    problems: &mut Problems,
) -> HashSet<i64> {
    let mut refused = conns.unfound.clone();
    if conns.of.is_empty() {
        return refused;
    }
    let td = Path::root().key("transformationData");
    for (i, s) in doc.sheets.iter_mut().enumerate() {
        if !s.nodes.iter().any(|n| conns.of.contains_key(&n.id.v)) {
            continue;
        }
        let dialect =
            |id: i64| catalog.dialect(id, conns.kinds.get(&id).and_then(|k| k.as_deref()));
        let plans = weft_core::plan::actions_of(s, &dialect);
        let mut nodes = Vec::new();
        let mut edges = Vec::new();
        for plan in plans {
            let Some(&connection) = conns.of.get(&plan.id) else {
                continue;
            };
            if conns.unfound.contains(&plan.id) {
                continue;
            }
            let Some(info) = catalog.module(&plan.module) else {
                continue;
            };
            let node = &s.nodes[plan.index];
            // The module is asked as it will be, with one target on the connection (no name:
            // a module takes its dialect from its objects).
            let placeholder =
                weft_sdk::ObjectRef::new(0, 1, connection, "", None, dialect(connection));
            let input = weft_sdk::ValidateInput::new(
                plan.id,
                plan.text.as_deref(),
                plan.sdk_attributes(Some(&info)),
                Vec::new(),
                vec![placeholder],
            );
            let Ok(out) = catalog.validate_action(&plan.module, &input) else {
                continue;
            };
            if out.has_errors() {
                if let NodeAttributes::Action(a) = &node.attributes {
                    let apath = Path::node_attributes(i, plan.index);
                    super::actions::report(&out, plan.id, a, &apath, text, problems);
                }
                refused.insert(plan.id);
                continue;
            }
            let writes = catalog.writes_of(&plan.module, &input);
            let key = |schema: Option<&str>, name: &str| {
                (
                    schema.map(str::to_lowercase).unwrap_or_default(),
                    name.to_lowercase(),
                )
            };
            let mut seen: Vec<(String, String)> = Vec::new();
            let mut objects: Vec<(Option<String>, String, bool)> = Vec::new();
            for w in &writes {
                let t = w.table();
                let k = key(t.schema(), t.name());
                if !seen.contains(&k) {
                    seen.push(k);
                    objects.push((t.schema().map(str::to_owned), t.name().to_owned(), true));
                }
            }
            for t in out.reads() {
                let k = key(t.schema(), t.name());
                if !seen.contains(&k) {
                    seen.push(k);
                    objects.push((t.schema().map(str::to_owned), t.name().to_owned(), false));
                }
            }
            if objects.len() > MAX_DERIVED {
                problems.error(
                    "action.objects",
                    format!(
                        "action {}: its text names {} tables; at most {MAX_DERIVED} are taken from an action's SQL: give it object nodes",
                        plan.id,
                        objects.len()
                    ),
                    node.span,
                    &td.key("sheets").index(i).key("nodes").index(plan.index),
                );
                continue;
            }
            let Some(base) = plan.id.checked_mul(1000) else {
                problems.error(
                    "action.objects",
                    format!(
                        "action {}: its id is too large to take its objects from its SQL: give it object nodes",
                        plan.id
                    ),
                    node.span,
                    &td.key("sheets").index(i).key("nodes").index(plan.index),
                );
                continue;
            };
            let (x, y) = (node.layout.x, node.layout.y);
            let span = node.span;
            let (mut sources, mut targets) = (0, 0);
            for (k, (schema, name, written)) in objects.into_iter().enumerate() {
                let k = k as i64 + 1;
                let id = -(base + k);
                let row = if written { &mut targets } else { &mut sources };
                let layout = Layout {
                    x: if written { x + 240 } else { x - 240 },
                    y: y + *row * 80,
                    width: 160,
                    height: 60,
                    extra: Extra::default(),
                };
                *row += 1;
                nodes.push(Node {
                    id: At::new(id, span),
                    kind: At::new(weft_dsr::model::NODE_OBJECT, span),
                    layout,
                    attributes: NodeAttributes::Object(ObjectAttributes {
                        field1: At::new(name, span),
                        field2: schema,
                        field3: None,
                        object_type_id: At::new(1, span),
                        connection_id: At::new(connection, span),
                        dependency: At::new("Y".to_owned(), span),
                        extra: Extra::default(),
                    }),
                    span,
                    extra: Extra::default(),
                });
                let (from, to) = if written {
                    (plan.id, id)
                } else {
                    (id, plan.id)
                };
                edges.push(Edge {
                    id: At::new(-(base + 500 + k), span),
                    from: At::new(from, span),
                    to: At::new(to, span),
                    from_name: None,
                    to_name: None,
                    span,
                    extra: Extra::default(),
                });
            }
        }
        s.nodes.extend(nodes);
        s.edges.extend(edges);
    }
    refused
}
