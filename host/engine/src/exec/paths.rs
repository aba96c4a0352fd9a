//! Elements named by their paths (`/folder`, `/folder/sheet`, `/folder/sheet/action`),
//! found in the repository before a run starts: each path names one folder, sheet or
//! action, or the run is refused naming the path.

use super::batch::StartError;
use weft_core::plan::Element;
use weft_protocol::{ElementKey, ElementRef};
use weft_repo::Repository;

/// `refs` as elements by id, each path found in `repo`.
///
/// # Errors
///
/// [`StartError::NotFound`] for a path that names nothing of its kind, or two of them; a
/// repository error.
pub fn resolve(repo: &Repository, refs: &[ElementRef]) -> Result<Vec<Element>, StartError> {
    if refs.iter().all(|r| matches!(r.id, ElementKey::Id(_))) {
        return Ok(refs
            .iter()
            .filter_map(|r| match r.id {
                ElementKey::Id(id) => Some(Element { kind: r.kind, id }),
                ElementKey::Path(_) => None,
            })
            .collect());
    }
    let found = repo.read(|w| {
        let mut out = Vec::with_capacity(refs.len());
        for r in refs {
            let path = match &r.id {
                ElementKey::Id(id) => {
                    out.push(Ok(Element {
                        kind: r.kind,
                        id: *id,
                    }));
                    continue;
                }
                ElementKey::Path(p) => p.trim_end_matches('/'),
            };
            let (parent, last) = path.rsplit_once('/').unwrap_or(("", path));
            let parent = if parent.is_empty() { "/" } else { parent };
            let ids = match r.kind {
                'F' => w
                    .folder_at(if path.is_empty() { "/" } else { path })?
                    .into_iter()
                    .collect(),
                'S' => w.sheets_at(parent, last)?,
                _ => match parent.rsplit_once('/') {
                    Some((folder, sheet)) if !sheet.is_empty() => {
                        w.actions_at(if folder.is_empty() { "/" } else { folder }, sheet, last)?
                    }
                    _ => Vec::new(),
                },
            };
            let what = match r.kind {
                'F' => "folder",
                'S' => "sheet",
                _ => "action",
            };
            out.push(match ids.as_slice() {
                [id] => Ok(Element {
                    kind: r.kind,
                    id: *id,
                }),
                [] => Err(format!(
                    "element {} `{path}`: no {what} has this path",
                    r.kind
                )),
                many => Err(format!(
                    "element {} `{path}`: {} {what}s have this path ({}); name it by id",
                    r.kind,
                    many.len(),
                    many.iter()
                        .map(i64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            });
        }
        Ok(out)
    })?;
    found
        .into_iter()
        .collect::<Result<Vec<_>, String>>()
        .map_err(StartError::NotFound)
}
