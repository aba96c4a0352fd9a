//! A sheet's graph: its attributes, edges between its own nodes, actions between sources
//! and targets, no cycle, and each node's object type and connection.

use super::actions::action;
use super::catalog::Catalog;
use super::ids::has_control;
use std::collections::{HashMap, HashSet};
use weft_dsr::model::*;
use weft_dsr::{Path, Problems};

pub(super) fn sheet_attributes(s: &Sheet, path: &Path, problems: &mut Problems) {
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
/// cycle; a sheet of more than one node with an object has edges (a sheet of lone actions,
/// such as Shell actions needing no objects, has none to have).
pub(super) fn graph(s: &Sheet, path: &Path, problems: &mut Problems) {
    let kinds: HashMap<i64, i64> = s.nodes.iter().map(|n| (n.id.v, n.kind.v)).collect();
    let has_object = s.nodes.iter().any(|n| n.kind.v != 0);
    if s.nodes.len() > 1 && has_object && s.edges.is_empty() {
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
    if let Some(cycle) = weft_core::plan::find_cycle(s.nodes.iter().map(|n| n.id.v), |n| {
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

pub(super) fn nodes(
    s: &Sheet,
    path: &Path,
    kinds: &HashMap<i64, Option<String>>,
    catalog: &dyn Catalog,
    problems: &mut Problems,
) {
    // Connections whose database is not known here, warned of once per sheet.
    let mut unknown_warned = std::collections::HashSet::new();
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
                match kinds.get(&c) {
                    Some(Some(kind)) => {
                        if catalog.dialect(c, Some(kind)) == weft_sdk::Dialect::Unknown
                            && unknown_warned.insert(c)
                        {
                            problems.warning(
                                "node.connection_unknown",
                                format!("node {}: connection {c} (type `{kind}`) has no entry in this server's key file, so its database is not known here: SQL on it is checked leniently (a parse error is a warning) and its objects are not looked at; a run needs the entry", n.id.v),
                                o.connection_id.span,
                                &apath.key("connectionId"),
                            );
                        }
                    }
                    _ => problems.error(
                        "node.connection_missing",
                        format!("node {}: connection {c} is not defined, neither in the repository nor in this document", n.id.v),
                        o.connection_id.span,
                        &apath.key("connectionId"),
                    ),
                }
            }
            NodeAttributes::Invalid => {}
        }
    }
}
