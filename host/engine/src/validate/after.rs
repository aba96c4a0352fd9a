//! An action's `after`: each entry found as an action's id, in the document or the
//! repository. An id must be an action's, not the action's own; a name is an action of the
//! same sheet; a path `/folder/sheet/action` is an action of a sheet in the document (which
//! replaces the stored one) or else in the repository. A name found twice is refused: its id
//! says which.

use std::collections::{HashMap, HashSet};
use weft_dsr::model::{Document, NameOrId, NodeAttributes};
use weft_dsr::{Path, Problems};
use weft_repo::Facts;

/// Finds the action of each `after` entry of `doc` (setting `resolved`), each problem at
/// its entry.
///
/// # Errors
///
/// A repository error while asking `facts`.
pub fn resolve(
    doc: &mut Document,
    facts: &dyn Facts,
    problems: &mut Problems,
) -> weft_repo::Result<()> {
    if !doc.sheets.iter().any(|s| {
        s.nodes
            .iter()
            .any(|n| matches!(&n.attributes, NodeAttributes::Action(a) if !a.after.is_empty()))
    }) {
        return Ok(());
    }
    // The document's actions: by id, and by (folder path, sheet name, action name).
    let mut ids: HashSet<i64> = HashSet::new();
    let mut by_path: HashMap<(String, String, String), Vec<i64>> = HashMap::new();
    let mut sheets_here: HashSet<(String, String)> = HashSet::new();
    for s in &doc.sheets {
        let folder = s.attributes.folder.v.clone();
        sheets_here.insert((folder.clone(), s.attributes.name.v.clone()));
        for n in &s.nodes {
            if let NodeAttributes::Action(a) = &n.attributes {
                ids.insert(n.id.v);
                by_path
                    .entry((
                        folder.clone(),
                        s.attributes.name.v.clone(),
                        a.name.v.clone(),
                    ))
                    .or_default()
                    .push(n.id.v);
            }
        }
    }
    // What the repository answered, asked once per id or path however many entries name it
    // (inside the deploy's lock).
    let mut exists: HashMap<i64, bool> = HashMap::new();
    let mut at: HashMap<(String, String, String), Vec<i64>> = HashMap::new();
    for (i, s) in doc.sheets.iter_mut().enumerate() {
        let folder = s.attributes.folder.v.clone();
        let sheet = s.attributes.name.v.clone();
        for (j, n) in s.nodes.iter_mut().enumerate() {
            let own = n.id.v;
            let NodeAttributes::Action(a) = &mut n.attributes else {
                continue;
            };
            for (k, entry) in a.after.iter_mut().enumerate() {
                let path = after_path(i, j).index(k);
                let span = entry.written.span;
                let found: Result<i64, String> = match &entry.written.v {
                    NameOrId::Id(id) if *id == own => {
                        Err(format!("action {own} cannot run after itself"))
                    }
                    NameOrId::Id(id) => {
                        let stored = match exists.get(id) {
                            Some(known) => *known,
                            None => {
                                let known = !ids.contains(id) && facts.action_exists(*id)?;
                                exists.insert(*id, known);
                                known
                            }
                        };
                        if ids.contains(id) || stored {
                            Ok(*id)
                        } else {
                            Err(format!(
                                "no action has id {id}, neither in this document nor in the repository"
                            ))
                        }
                    }
                    NameOrId::Name(name) if !name.starts_with('/') => {
                        let key = (folder.clone(), sheet.clone(), name.clone());
                        one_named(
                            by_path.get(&key).cloned().unwrap_or_default(),
                            || format!("this sheet has no action named `{name}`"),
                            name,
                            "actions",
                        )
                        .and_then(|id| {
                            if id == own {
                                Err(format!("action {own} cannot run after itself"))
                            } else {
                                Ok(id)
                            }
                        })
                    }
                    NameOrId::Name(written) => {
                        let Some((f, s, act)) = split_path(written) else {
                            problems.error(
                                "action.after",
                                format!("`{written}` is not an action's path: write /folder/sheet/action"),
                                span,
                                &path,
                            );
                            continue;
                        };
                        let candidates = if sheets_here.contains(&(f.clone(), s.clone())) {
                            by_path
                                .get(&(f.clone(), s.clone(), act.clone()))
                                .cloned()
                                .unwrap_or_default()
                        } else {
                            let key = (f.clone(), s.clone(), act.clone());
                            match at.get(&key) {
                                Some(found) => found.clone(),
                                None => {
                                    let found = facts.actions_at(&f, &s, &act)?;
                                    at.insert(key, found.clone());
                                    found
                                }
                            }
                        };
                        one_named(
                            candidates,
                            || {
                                format!(
                                    "no action `{act}` in a sheet `{s}` of folder `{f}`, neither in this document nor in the repository"
                                )
                            },
                            written,
                            "actions",
                        )
                    }
                };
                match found {
                    Ok(id) => entry.resolved = Some(id),
                    Err(message) => problems.error("action.after", message, span, &path),
                }
            }
        }
    }
    cycles(doc, problems);
    Ok(())
}

/// The path of the `after` of node `j` of sheet `i`.
fn after_path(i: usize, j: usize) -> Path {
    Path::node_attributes(i, j).key("after")
}

/// An `after` cycle among the document's actions (each waits for the next): no run can hold
/// them all, so it is refused at the first entry on it.
fn cycles(doc: &Document, problems: &mut Problems) {
    let mut next: HashMap<i64, Vec<i64>> = HashMap::new();
    let mut place: HashMap<i64, (weft_dsr::Span, Path)> = HashMap::new();
    for (i, s) in doc.sheets.iter().enumerate() {
        for (j, n) in s.nodes.iter().enumerate() {
            if let NodeAttributes::Action(a) = &n.attributes
                && !a.after.is_empty()
            {
                next.insert(n.id.v, a.after.iter().filter_map(|x| x.resolved).collect());
                let path = after_path(i, j);
                place.insert(n.id.v, (a.after[0].written.span, path));
            }
        }
    }
    let mut order: Vec<i64> = next.keys().copied().collect();
    order.sort_unstable();
    if let Some(cycle) =
        weft_core::plan::find_cycle(order, |a| next.get(&a).map_or(&[][..], Vec::as_slice))
        && let Some((span, path)) = cycle.first().and_then(|a| place.get(a))
    {
        let shown: Vec<String> = cycle.iter().map(i64::to_string).collect();
        problems.error(
            "action.after",
            format!(
                "`after` makes a cycle, {}: no run can hold these actions together",
                shown.join(" after ")
            ),
            *span,
            path,
        );
    }
}

/// The one id of `candidates` (actions, or `what` else) that `written` names; else why not.
pub(super) fn one_named(
    candidates: Vec<i64>,
    none: impl Fn() -> String,
    written: &str,
    what: &str,
) -> Result<i64, String> {
    match candidates.as_slice() {
        [id] => Ok(*id),
        [] => Err(none()),
        many => Err(format!(
            "`{written}` names {} {what} ({}); write the id of the one meant",
            many.len(),
            many.iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// `/folder/path/sheet/action` as (folder path, sheet, action); a sheet in the root folder
/// is `/sheet/action`.
fn split_path(written: &str) -> Option<(String, String, String)> {
    let (rest, action) = written.rsplit_once('/')?;
    let (folder, sheet) = rest.rsplit_once('/')?;
    if action.is_empty() || sheet.is_empty() {
        return None;
    }
    let folder = if folder.is_empty() { "/" } else { folder };
    Some((folder.to_owned(), sheet.to_owned(), action.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::split_path;

    #[test]
    fn a_path_is_folder_sheet_and_action() {
        let p = |s: &str| split_path(s).map(|(f, s, a)| format!("{f}|{s}|{a}"));
        assert_eq!(
            p("/jaffle/models/customers/load").as_deref(),
            Some("/jaffle/models|customers|load")
        );
        assert_eq!(p("/setup/create").as_deref(), Some("/|setup|create"));
        assert_eq!(p("/only"), None);
        assert_eq!(p("/a/b/"), None);
    }
}
