//! Who deploys ([`Deployer`]), and the check that a deploy or a delete by a user whose
//! deploy right is limited to folders touches nothing outside them (issue 28): each folder
//! and sheet it creates, changes or deletes lies in one of them, before and after (a sheet
//! moved out of a folder, or into one, touches both); what lies in no folder (a connection,
//! a batch, the notification setup, a template module) only a user without limits may
//! change. The check runs inside the deploy's transaction, after its writes and before its
//! commit, so that what "changed" means is the deploy's own judgement.

use weft_dsr::model::Document;
use weft_protocol::rights::within_folder;
use weft_repo::{Change, ChangeKind, DeployWriter, ObjectKind};

/// Who deploys: the name the deploy history records, and the folders its deploy right is
/// limited to (none: everywhere).
#[derive(Debug, Clone, Copy)]
pub struct Deployer<'a> {
    /// A user's name, `keyfile`, `loopback`, or what a tool calls itself.
    pub name: &'a str,
    /// The folders (paths) it may deploy in; empty: everywhere.
    pub folders: &'a [String],
}

impl<'a> Deployer<'a> {
    /// A deployer without folder limits.
    pub fn anyone(name: &'a str) -> Self {
        Deployer { name, folders: &[] }
    }

    /// Whether `path` (a folder's) lies in the deployer's folders.
    fn holds(&self, path: Option<&str>) -> bool {
        self.folders.is_empty()
            || path.is_some_and(|p| self.folders.iter().any(|f| within_folder(p, f)))
    }

    /// The refusal of `what`, outside the deployer's folders.
    pub fn refusal(&self, what: &str) -> String {
        format!(
            "`{}` may deploy only in the folders {} (and below them); {what} is outside them",
            self.name,
            self.folders.join(", ")
        )
    }
}

/// Where the folders and sheets of `doc` stood before a deploy wrote them (by id; those
/// not stored yet have none), for [`outside`] to check what moved.
///
/// # Errors
///
/// A repository error.
pub fn before(
    w: &dyn DeployWriter,
    doc: &Document,
    by: &Deployer<'_>,
) -> weft_repo::Result<Vec<(ObjectKind, i64, String)>> {
    let mut stood = Vec::new();
    if by.folders.is_empty() {
        return Ok(stood);
    }
    for f in &doc.folders {
        if let Some(path) = w.folder_path(f.id.v)? {
            stood.push((ObjectKind::Folder, f.id.v, path));
        }
    }
    for s in &doc.sheets {
        if let Some(path) = w.sheet_folder(s.id.v)? {
            stood.push((ObjectKind::Sheet, s.id.v, path));
        }
    }
    Ok(stood)
}

/// The first thing `changes` (a deploy's, after its writes) touched outside `by`'s folders,
/// with `stood` ([`before`]) and the folders a prune emptied (`pruned`); `None` when all
/// lie inside.
///
/// # Errors
///
/// A repository error.
pub fn outside(
    w: &dyn DeployWriter,
    changes: &[Change],
    stood: &[(ObjectKind, i64, String)],
    pruned: &[String],
    by: &Deployer<'_>,
) -> weft_repo::Result<Option<String>> {
    if by.folders.is_empty() {
        return Ok(None);
    }
    for p in pruned {
        if !by.holds(Some(p)) {
            return Ok(Some(format!("the pruned folder {p}")));
        }
    }
    for c in changes.iter().filter(|c| c.change != ChangeKind::Unchanged) {
        let was = stood
            .iter()
            .find(|(k, id, _)| *k == c.kind && *id == c.id)
            .map(|(_, _, p)| p.as_str());
        let (what, now) = match c.kind {
            // What a prune deleted lies below a pruned folder, checked above.
            _ if c.change == ChangeKind::Deleted
                && matches!(c.kind, ObjectKind::Folder | ObjectKind::Sheet) =>
            {
                continue;
            }
            ObjectKind::Folder => ("folder", w.folder_path(c.id)?),
            ObjectKind::Sheet => ("sheet", w.sheet_folder(c.id)?),
            // A sheet's nodes and edges change with it.
            ObjectKind::Node | ObjectKind::Edge => continue,
            other => {
                return Ok(Some(format!(
                    "the {} {} (in no folder)",
                    other.word(),
                    c.id
                )));
            }
        };
        for path in [was, now.as_deref()].into_iter().flatten() {
            if !by.holds(Some(path)) {
                return Ok(Some(format!("{what} {} in {path}", c.id)));
            }
        }
        if now.is_none() && !by.holds(None) {
            return Ok(Some(format!("{what} {}", c.id)));
        }
    }
    Ok(None)
}

/// The first of `objects` (a delete's) outside `by`'s folders: a folder by its path, a
/// sheet by its folder's; anything else lies in no folder.
///
/// # Errors
///
/// A repository error.
pub fn outside_delete(
    w: &dyn DeployWriter,
    objects: &[(ObjectKind, weft_repo::model::Named)],
    by: &Deployer<'_>,
) -> weft_repo::Result<Option<String>> {
    if by.folders.is_empty() {
        return Ok(None);
    }
    for (kind, n) in objects {
        let path = match kind {
            ObjectKind::Folder => w.folder_path(n.id)?,
            ObjectKind::Sheet => w.sheet_folder(n.id)?,
            ObjectKind::Node | ObjectKind::Edge => continue,
            _ => None,
        };
        if !by.holds(path.as_deref()) {
            let at = path.map_or_else(|| " (in no folder)".to_owned(), |p| format!(" in {p}"));
            return Ok(Some(format!("the {} {}{at}", kind.word(), n.name)));
        }
    }
    Ok(None)
}
