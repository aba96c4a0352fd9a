//! Folders: paths well formed and unique, a moved or renamed folder's contents, and each
//! sheet's folder, in the document or in the repository.

use super::ids::has_control;
use std::collections::HashMap;
use weft_dsr::model::*;
use weft_dsr::{Path, Problems};
use weft_repo::Facts;

pub(super) fn folder(
    f: &Folder,
    path: &Path,
    doc: &Document,
    facts: &dyn Facts,
    problems: &mut Problems,
) -> weft_repo::Result<()> {
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

pub(super) fn sheet_folder(
    s: &Sheet,
    path: &Path,
    doc_folders: &HashMap<i64, &str>,
    facts: &dyn Facts,
    problems: &mut Problems,
) -> weft_repo::Result<()> {
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
