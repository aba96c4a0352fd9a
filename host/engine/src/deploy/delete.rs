//! Deleting objects (`DeleteObjects`, and a project deploy's `prune`): what the caller names
//! is found, a folder taken with what it holds when asked (`recursive`), and refused while
//! anything that stays refers to it: a connection an object node of another sheet uses, a
//! sheet, action or folder a batch's elements name. Every refusal is listed at once, each
//! naming the object, the reference and the place in the request. What may go is removed in
//! the deploy's transaction, with a line in the deploy history each; runs in flight keep the
//! plans they were pinned to.

use std::collections::{BTreeMap, HashMap, HashSet};
use weft_dsr::{Path, Problem, Severity};
use weft_protocol::commands::ObjectName;
use weft_repo::model::{Lookup, Named};
use weft_repo::{self as repo, Change, DeployWriter, ObjectKind};

/// An object to delete, with the place in the request that named it.
pub struct Doomed {
    /// What it is.
    pub kind: ObjectKind,
    /// Its id and path or name.
    pub named: Named,
    /// Where it was asked for (a folder's contents: where the folder was).
    pub at: Path,
}

/// What a delete removes, in order: each object's kind, id and path or name.
pub type Removal = Vec<(ObjectKind, Named)>;

/// Finds what `names` of `kind` name; each name not found (or, by name, found more than
/// once) is a problem at `at[i]`.
///
/// # Errors
///
/// A repository error.
pub fn find(
    w: &dyn DeployWriter,
    kind: ObjectKind,
    names: &[ObjectName],
    at: &Path,
    problems: &mut Vec<Problem>,
) -> repo::Result<Vec<Doomed>> {
    let mut found = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let key = match name {
            ObjectName::Id(id) => Lookup::Id(*id),
            ObjectName::Name(n) => Lookup::Name(n.clone()),
        };
        let at = at.index(i);
        let mut hits = w.find(kind, &key)?;
        match hits.len() {
            1 => found.push(Doomed {
                kind,
                named: hits.remove(0),
                at,
            }),
            0 => problems.push(refusal(
                "delete.not_found",
                format!("no {kind} {name} in the repository{}", how_named(kind)),
                &at,
            )),
            _ => problems.push(refusal(
                "delete.ambiguous",
                format!(
                    "{} {kind}s are named {name} (ids {}); name the one to delete by its id",
                    hits.len(),
                    hits.iter()
                        .map(|h| h.id.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                &at,
            )),
        }
    }
    Ok(found)
}

fn how_named(kind: ObjectKind) -> &'static str {
    match kind {
        ObjectKind::Folder => " (a folder is named by its id or its path, such as `/sales/daily`)",
        ObjectKind::Sheet => {
            " (a sheet is named by its id or its folder's path and its name, such as `/sales/daily/Orders`)"
        }
        _ => "",
    }
}

fn refusal(code: &'static str, message: String, at: &Path) -> Problem {
    Problem {
        severity: Severity::Error,
        code: code.into(),
        message,
        span: None,
        path: at.to_string(),
    }
}

/// What deleting `doomed` takes with it and whether it may: the objects to remove in their
/// order (batches, sheets, connections, folders deepest first), or every reason it may not.
/// With `recursive`, a folder takes every folder and sheet below it; without, a folder that
/// holds anything not deleted with it is refused.
///
/// # Errors
///
/// A repository error.
pub fn plan(
    w: &dyn DeployWriter,
    doomed: Vec<Doomed>,
    recursive: bool,
) -> repo::Result<Result<Removal, Vec<Problem>>> {
    let mut problems = Vec::new();
    // Each object once, with the place that first named it.
    let mut all: BTreeMap<(u8, i64), Doomed> = BTreeMap::new();
    let rank = |k: ObjectKind| match k {
        ObjectKind::Batch => 0,
        ObjectKind::Sheet => 1,
        ObjectKind::Connection => 2,
        ObjectKind::Module => 4,
        _ => 3,
    };
    let folders: Vec<(Named, Path)> = doomed
        .iter()
        .filter(|d| d.kind == ObjectKind::Folder)
        .map(|d| (d.named.clone(), d.at.clone()))
        .collect();
    for d in doomed {
        all.entry((rank(d.kind), d.named.id)).or_insert(d);
    }
    let named_sheets: HashSet<i64> = all
        .values()
        .filter(|d| d.kind == ObjectKind::Sheet)
        .map(|d| d.named.id)
        .collect();
    let named_folders: HashSet<i64> = folders.iter().map(|(f, _)| f.id).collect();
    for (folder, at) in &folders {
        let below = w.folders_below(&folder.name)?;
        let mut sheets = w.sheets_in(folder.id)?;
        for f in &below {
            sheets.extend(w.sheets_in(f.id)?);
        }
        if !recursive {
            let kept_folders = below
                .iter()
                .filter(|f| !named_folders.contains(&f.id))
                .count();
            let kept_sheets: Vec<&Named> = sheets
                .iter()
                .filter(|s| !named_sheets.contains(&s.id))
                .collect();
            if kept_folders + kept_sheets.len() > 0 {
                problems.push(refusal(
                    "delete.folder_not_empty",
                    format!(
                        "folder {} ({}) holds {} sheet(s){} and {kept_folders} folder(s) not deleted with it; delete them too, or ask for a recursive delete",
                        folder.id,
                        folder.name,
                        kept_sheets.len(),
                        first_few(&kept_sheets),
                    ),
                    at,
                ));
                continue;
            }
        }
        for f in below {
            all.entry((3, f.id)).or_insert(Doomed {
                kind: ObjectKind::Folder,
                named: f,
                at: at.clone(),
            });
        }
        for s in sheets {
            all.entry((1, s.id)).or_insert(Doomed {
                kind: ObjectKind::Sheet,
                named: s,
                at: at.clone(),
            });
        }
    }
    let ids = |kind: ObjectKind| -> HashSet<i64> {
        all.values()
            .filter(|d| d.kind == kind)
            .map(|d| d.named.id)
            .collect()
    };
    let (sheets, folders, batches) = (
        ids(ObjectKind::Sheet),
        ids(ObjectKind::Folder),
        ids(ObjectKind::Batch),
    );
    // A connection still used by an object node of a sheet that stays.
    for d in all.values().filter(|d| d.kind == ObjectKind::Connection) {
        for (sheet, node) in w
            .connection_users(d.named.id)?
            .into_iter()
            .filter(|(s, _)| !sheets.contains(&s.id))
        {
            problems.push(refusal(
                "delete.referenced",
                format!(
                    "connection {} ({}) is used by node {node} of sheet {} ({}), which is not deleted",
                    d.named.id, d.named.name, sheet.id, sheet.name
                ),
                &d.at,
            ));
        }
    }
    // A sheet, an action of one, or a folder that a batch that stays names.
    let mut action_sheets: HashMap<i64, Option<i64>> = HashMap::new();
    for b in w
        .batch_scopes()?
        .into_iter()
        .filter(|b| !batches.contains(&b.id))
    {
        for (i, e) in b.elements.iter().enumerate() {
            let hit = match e.kind {
                'S' => sheets.contains(&e.id).then_some((ObjectKind::Sheet, e.id)),
                'F' => folders
                    .contains(&e.id)
                    .then_some((ObjectKind::Folder, e.id)),
                'A' => {
                    let sheet = match action_sheets.get(&e.id) {
                        Some(s) => *s,
                        None => {
                            let s = w.node_sheet(e.id)?;
                            action_sheets.insert(e.id, s);
                            s
                        }
                    };
                    sheet
                        .filter(|s| sheets.contains(s))
                        .map(|s| (ObjectKind::Sheet, s))
                }
                _ => None,
            };
            let Some(key) = hit else { continue };
            if let Some(d) = all.get(&(rank(key.0), key.1)) {
                let what = if e.kind == 'A' {
                    format!("action {} of sheet {} ({})", e.id, d.named.id, d.named.name)
                } else {
                    format!("{} {} ({})", d.kind, d.named.id, d.named.name)
                };
                problems.push(refusal(
                    "delete.referenced",
                    format!(
                        "{what} is named by batch {} ({}) in its elements[{i}]; change or delete the batch first",
                        b.id, b.name
                    ),
                    &d.at,
                ));
            }
        }
    }
    if !problems.is_empty() {
        return Ok(Err(problems));
    }
    let mut order: Vec<Doomed> = all.into_values().collect();
    // Folders deepest first, so that none goes before what it holds.
    order.sort_by(|a, b| {
        rank(a.kind).cmp(&rank(b.kind)).then_with(|| {
            if a.kind == ObjectKind::Folder {
                b.named.name.len().cmp(&a.named.name.len())
            } else {
                a.named.id.cmp(&b.named.id)
            }
        })
    });
    Ok(Ok(order.into_iter().map(|d| (d.kind, d.named)).collect()))
}

/// `: /a, /b, /c and 4 more` for a list of sheets.
fn first_few(sheets: &[&Named]) -> String {
    if sheets.is_empty() {
        return String::new();
    }
    let shown: Vec<&str> = sheets.iter().take(3).map(|s| s.name.as_str()).collect();
    let more = sheets.len().saturating_sub(shown.len());
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!(" ({}{more})", shown.join(", "))
}

/// A project deploy's prune, after its writes: below each folder of `roots` (by path), the
/// sheets `doc` does not hold, and the folders it does not hold that keep nothing else,
/// are removed, as a delete of them would be (refused while anything that stays refers to
/// them). The folders themselves stay. Each refusal is at `prune[i]`.
///
/// # Errors
///
/// A repository error.
pub fn prune(
    w: &dyn DeployWriter,
    doc: &weft_dsr::Document,
    roots: &[String],
) -> repo::Result<Result<Vec<Change>, Vec<Problem>>> {
    let at = Path::root().key("prune");
    let in_doc_sheets: HashSet<i64> = doc.sheets.iter().map(|s| s.id.v).collect();
    let in_doc_folders: HashSet<i64> = doc.folders.iter().map(|f| f.id.v).collect();
    let mut problems = Vec::new();
    let mut doomed = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        let at = at.index(i);
        let Some(root_id) = w.folder_at(root)? else {
            problems.push(refusal(
                "prune.not_found",
                format!(
                    "prune names folder `{root}`, which neither the repository nor the project has"
                ),
                &at,
            ));
            continue;
        };
        // Deepest first: a folder is kept when the project holds it, holds a sheet in it,
        // or keeps a folder below it.
        let below = w.folders_below(root)?;
        let mut kept: Vec<String> = Vec::new();
        let root_named = Named {
            id: root_id,
            name: root.clone(),
        };
        for folder in below.into_iter().chain(std::iter::once(root_named)) {
            let sheets = w.sheets_in(folder.id)?;
            let mut holds_kept = false;
            for s in sheets {
                if in_doc_sheets.contains(&s.id) {
                    holds_kept = true;
                } else {
                    doomed.push(Doomed {
                        kind: ObjectKind::Sheet,
                        named: s,
                        at: at.clone(),
                    });
                }
            }
            let prefix = format!("{}/", folder.name.trim_end_matches('/'));
            let keeps_below = kept.iter().any(|k| k.starts_with(&prefix));
            if folder.id == root_id
                || in_doc_folders.contains(&folder.id)
                || holds_kept
                || keeps_below
            {
                kept.push(folder.name);
            } else {
                doomed.push(Doomed {
                    kind: ObjectKind::Folder,
                    named: folder,
                    at: at.clone(),
                });
            }
        }
    }
    if !problems.is_empty() {
        return Ok(Err(problems));
    }
    // Prunes may overlap (a root below another): each object once.
    let mut seen = HashSet::new();
    doomed.retain(|d| seen.insert((d.kind == ObjectKind::Sheet, d.named.id)));
    let objects = match plan(w, doomed, false)? {
        Ok(objects) => objects,
        Err(problems) => return Ok(Err(problems)),
    };
    w.delete(&objects).map(Ok)
}
