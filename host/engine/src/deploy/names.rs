//! Names instead of ids: each object of a document written without an id gets the id of
//! the stored object of its name (a folder by its path, a connection or a batch by its name,
//! a sheet by its folder and name, an action by its sheet and name), or, when the
//! repository holds none, the id made from its name (`weft_core::names`): the same at every
//! deploy. `renamedFrom` names the object a renamed sheet, action or batch was, so that it
//! keeps its id (a rename is explicit: without it, the new name is a new object). A sheet
//! may name its folder by `folder` alone, an edge its ends by name (an action's name, an
//! object's table), a batch element its object by path. Runs first in a deploy, before any
//! check reads an id; what finds nothing, or two, is refused at its place.

use std::collections::HashMap;
use weft_core::names::id_of;
use weft_dsr::model::{Document, NodeAttributes, UNNAMED};
use weft_dsr::{Path, Problems};
use weft_repo::Facts;

/// The one id of `found`, or the problem when there are several.
fn one(found: &[i64], what: &str, name: &str) -> Result<Option<i64>, String> {
    match found {
        [] => Ok(None),
        [id] => Ok(Some(*id)),
        many => Err(format!(
            "{} {what}s are named `{name}` in the repository ({}): write the id of the one meant",
            many.len(),
            many.iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Why the id made from `name` cannot be had: `holder` holds it.
fn taken(name: &str, id: i64, holder: &str) -> String {
    format!(
        "the id weft makes from `{name}` ({id}) belongs to {holder} in the repository: give this one an `id`, or another name"
    )
}

/// Gives every object of `doc` written without an id its id.
///
/// # Errors
///
/// A repository error while asking `facts`.
pub fn assign(
    doc: &mut Document,
    facts: &dyn Facts,
    problems: &mut Problems,
) -> weft_repo::Result<()> {
    let td = Path::root().key("transformationData");
    for (i, f) in doc.folders.iter_mut().enumerate() {
        if f.id.v == UNNAMED {
            f.id.v = match facts.folder_at(&f.path.v)? {
                Some(id) => id,
                None => {
                    let made = id_of("folder", &f.path.v);
                    if let Some(other) = facts.folder_path(made)? {
                        problems.error(
                            "folder.path",
                            taken(&f.path.v, made, &format!("folder {other}")),
                            f.path.span,
                            &td.key("folders").index(i).key("path"),
                        );
                    }
                    made
                }
            };
        }
    }
    for (i, c) in doc.connections.iter_mut().enumerate() {
        if c.id.v != UNNAMED {
            continue;
        }
        c.id.v = match one(
            &facts.connections_named(&c.name.v)?,
            "connection",
            &c.name.v,
        ) {
            Ok(Some(id)) => id,
            Ok(None) => {
                let made = id_of("connection", &c.name.v);
                if let Some((_, _)) = facts.connection_facts(made)? {
                    problems.error(
                        "connection.name",
                        taken(&c.name.v, made, "another connection"),
                        c.name.span,
                        &td.key("connections").index(i).key("name"),
                    );
                }
                made
            }
            Err(m) => {
                problems.error(
                    "connection.name",
                    m,
                    c.name.span,
                    &td.key("connections").index(i).key("name"),
                );
                0
            }
        };
    }
    let folders: HashMap<String, i64> = doc
        .folders
        .iter()
        .map(|f| (f.path.v.clone(), f.id.v))
        .collect();
    for (i, s) in doc.sheets.iter_mut().enumerate() {
        let spath = td.key("sheets").index(i);
        let a = &mut s.attributes;
        let folder = a.folder.v.clone();
        if a.folder_id.v == UNNAMED {
            a.folder_id.v = match folders.get(&folder) {
                Some(id) => *id,
                None => match facts.folder_at(&folder)? {
                    Some(id) => id,
                    None => {
                        problems.error(
                            "sheet.folder_missing",
                            format!("the sheet's folder `{folder}` is neither in this document nor in the repository"),
                            a.folder.span,
                            &spath.key("attributes").key("folder"),
                        );
                        0
                    }
                },
            };
        }
        // The name the repository knows it by: the one it had before a rename.
        let stored = a
            .renamed_from
            .as_ref()
            .map_or_else(|| a.name.v.clone(), |r| r.v.clone());
        let full = format!("{}/{}", folder.trim_end_matches('/'), a.name.v);
        if s.id.v == UNNAMED {
            s.id.v = match one(&facts.sheets_at(&folder, &stored)?, "sheet", &stored) {
                Ok(Some(id)) => id,
                Ok(None) => {
                    let made = id_of("sheet", &full);
                    if facts.sheet_exists(made)? {
                        problems.error(
                            "sheet.name",
                            taken(&full, made, "another sheet (one renamed from this name?)"),
                            a.name.span,
                            &spath.key("attributes").key("name"),
                        );
                    }
                    made
                }
                Err(m) => {
                    problems.error(
                        "sheet.name",
                        m,
                        a.name.span,
                        &spath.key("attributes").key("name"),
                    );
                    0
                }
            };
        }
        // Nodes: actions by name (two of one name without ids cannot both be found), objects
        // by their table and connection.
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut objects: HashMap<String, usize> = HashMap::new();
        for (j, n) in s.nodes.iter_mut().enumerate() {
            let npath = spath.key("nodes").index(j);
            match &n.attributes {
                NodeAttributes::Action(act) => {
                    let name = act.name.v.clone();
                    if n.id.v != UNNAMED {
                        continue;
                    }
                    if let Some(k) = seen.insert(name.clone(), j) {
                        problems.error(
                            "node.name",
                            format!("nodes {k} and {j} of this sheet are both actions named `{name}` without an id: give them other names, or ids"),
                            act.name.span,
                            &npath.key("attributes").key("name"),
                        );
                        continue;
                    }
                    let was = act
                        .renamed_from
                        .as_ref()
                        .map_or(name.as_str(), |r| r.v.as_str());
                    n.id.v = match one(&facts.actions_at(&folder, &stored, was)?, "action", was) {
                        Ok(Some(id)) => id,
                        Ok(None) => {
                            let made = id_of("node", &format!("{full}/{name}"));
                            if facts.action_exists(made)? {
                                problems.error(
                                    "node.name",
                                    taken(
                                        &format!("{full}/{name}"),
                                        made,
                                        "another action (one renamed from this name?)",
                                    ),
                                    act.name.span,
                                    &npath.key("attributes").key("name"),
                                );
                            }
                            made
                        }
                        Err(m) => {
                            problems.error(
                                "node.name",
                                m,
                                act.name.span,
                                &npath.key("attributes").key("name"),
                            );
                            0
                        }
                    };
                }
                NodeAttributes::Object(o) if n.id.v == UNNAMED => {
                    let key = format!(
                        "{full}/#{}.{}@{}",
                        o.field2.as_deref().unwrap_or_default(),
                        o.field1.v,
                        o.connection_id.v
                    );
                    // A table drawn twice in one sheet: each drawing its own id, by its
                    // order among the drawings of that table.
                    let k = objects.entry(key.clone()).or_insert(0);
                    *k += 1;
                    n.id.v = if *k == 1 {
                        id_of("node", &key)
                    } else {
                        id_of("node", &format!("{key}~{k}"))
                    };
                }
                _ => {}
            }
        }
        // Edges: their ends by name, their ids from their ends.
        let by_name = |name: &str| -> Vec<i64> {
            let mut ids: Vec<i64> = s
                .nodes
                .iter()
                .filter(|n| match &n.attributes {
                    NodeAttributes::Action(a) => a.name.v == name,
                    NodeAttributes::Object(o) => {
                        o.field1.v.eq_ignore_ascii_case(name)
                            || o.field2.as_ref().is_some_and(|s| {
                                format!("{s}.{}", o.field1.v).eq_ignore_ascii_case(name)
                            })
                    }
                    NodeAttributes::Invalid => false,
                })
                .map(|n| n.id.v)
                .collect();
            ids.dedup();
            ids
        };
        let mut ends: Vec<(usize, &'static str, i64)> = Vec::new();
        for (j, e) in s.edges.iter().enumerate() {
            for (key, name) in [("from", &e.from_name), ("to", &e.to_name)] {
                let Some(name) = name else { continue };
                match by_name(&name.v).as_slice() {
                    [id] => ends.push((j, key, *id)),
                    found => problems.error(
                        "edge.unknown_node",
                        if found.is_empty() {
                            format!("`{key}: {}` names no node of this sheet (an action's name or an object's table)", name.v)
                        } else {
                            format!("`{key}: {}` names {} nodes of this sheet: write the node's id", name.v, found.len())
                        },
                        name.span,
                        &spath.key("edges").index(j).key(key),
                    ),
                }
            }
        }
        for (j, key, id) in ends {
            let e = &mut s.edges[j];
            if key == "from" {
                e.from.v = id;
            } else {
                e.to.v = id;
            }
        }
        for e in &mut s.edges {
            if e.id.v == UNNAMED {
                e.id.v = id_of("edge", &format!("{full}/{}->{}", e.from.v, e.to.v));
            }
        }
    }
    // Batches, then their elements by path.
    for (i, b) in doc.batches.iter_mut().enumerate() {
        if b.id.v != UNNAMED {
            continue;
        }
        let was = b
            .renamed_from
            .as_ref()
            .map_or(b.name.v.as_str(), |r| r.v.as_str());
        b.id.v = match one(&facts.batches_named(was)?, "batch", was) {
            Ok(Some(id)) => id,
            Ok(None) => {
                let made = id_of("batch", &b.name.v);
                if facts.batch_exists(made)? {
                    problems.error(
                        "batch.name",
                        taken(
                            &b.name.v,
                            made,
                            "another batch (one renamed from this name?)",
                        ),
                        b.name.span,
                        &td.key("batches").index(i).key("name"),
                    );
                }
                made
            }
            Err(m) => {
                problems.error(
                    "batch.name",
                    m,
                    b.name.span,
                    &td.key("batches").index(i).key("name"),
                );
                0
            }
        };
    }
    let found = elements(doc, facts)?;
    for (i, b) in doc.batches.iter_mut().enumerate() {
        for (k, e) in b.elements.iter_mut().enumerate() {
            let Some(p) = &e.path else { continue };
            match found.get(&(e.kind.v.clone(), p.v.clone())) {
                Some(Ok(id)) => e.id.v = *id,
                Some(Err(m)) => problems.error(
                    "batch.element",
                    m.clone(),
                    p.span,
                    &td.key("batches")
                        .index(i)
                        .key("elements")
                        .index(k)
                        .key("elementId"),
                ),
                None => {}
            }
        }
    }
    Ok(())
}

/// The object each batch element's path names, by its kind and path: in the document (its
/// ids assigned), else in the repository.
fn elements(
    doc: &Document,
    facts: &dyn Facts,
) -> weft_repo::Result<HashMap<(String, String), Result<i64, String>>> {
    let mut out = HashMap::new();
    for b in &doc.batches {
        for e in &b.elements {
            let Some(p) = &e.path else { continue };
            let key = (e.kind.v.clone(), p.v.clone());
            if out.contains_key(&key) {
                continue;
            }
            let path = p.v.trim_end_matches('/');
            let (parent, last) = path.rsplit_once('/').unwrap_or(("", path));
            let parent = if parent.is_empty() { "/" } else { parent };
            let found: Vec<i64> = match e.kind.v.as_str() {
                "F" => match doc.folders.iter().find(|f| f.path.v == path) {
                    Some(f) => vec![f.id.v],
                    None => facts.folder_at(path)?.into_iter().collect(),
                },
                "S" => {
                    let here: Vec<i64> = doc
                        .sheets
                        .iter()
                        .filter(|s| s.attributes.folder.v == parent && s.attributes.name.v == last)
                        .map(|s| s.id.v)
                        .collect();
                    if here.is_empty() {
                        facts.sheets_at(parent, last)?
                    } else {
                        here
                    }
                }
                "A" => {
                    let (folder, sheet) = parent.rsplit_once('/').unwrap_or(("", parent));
                    let folder = if folder.is_empty() { "/" } else { folder };
                    let here: Vec<i64> = doc
                        .sheets
                        .iter()
                        .filter(|s| s.attributes.folder.v == folder && s.attributes.name.v == sheet)
                        .flat_map(|s| s.nodes.iter())
                        .filter(|n| matches!(&n.attributes, NodeAttributes::Action(a) if a.name.v == last))
                        .map(|n| n.id.v)
                        .collect();
                    if here.is_empty() {
                        facts.actions_at(folder, sheet, last)?
                    } else {
                        here
                    }
                }
                _ => continue,
            };
            let what = match e.kind.v.as_str() {
                "F" => "folder",
                "S" => "sheet",
                _ => "action",
            };
            out.insert(
                key,
                match found.as_slice() {
                    [id] => Ok(*id),
                    [] => Err(format!(
                        "`{}` names no {what}, neither in this document nor in the repository",
                        p.v
                    )),
                    many => Err(format!(
                        "`{}` names {} {what}s: write the id of the one meant",
                        p.v,
                        many.len()
                    )),
                },
            );
        }
    }
    Ok(out)
}
