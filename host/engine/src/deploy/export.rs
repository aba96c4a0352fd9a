//! The repository as `.dsr` files (`ExportRepository`, `weft export`), in one canonical
//! form, so that export, deploy into an empty repository and export again give identical
//! files, and a project kept in git diffs by the lines that changed:
//!
//! - `_connections.dsr` and `_batches.dsr` at the top hold every connection and batch,
//!   `_notifications.dsr` the notification setup and `_modules.dsr` the template modules (in
//!   a whole export);
//! - each folder is a directory by its path, holding `_folder.dsr` (the folder itself) and a
//!   file per sheet, named for the sheet (`Orders.dsr`).
//!
//! Names are made safe for any file system (`/ \ : * ? " < > |` and control characters
//! become `_`; a leading `.` or `_` of a sheet's or folder's name gets a prefix, as the names
//! with `_` are this layout's own and hidden files are skipped by a project deploy); names
//! that still meet (two sheets of one name in a folder) get `-ID`. Each file is one
//! document written by `dsr::write` (HJSON, SQL as `'''` blocks), a sheet without the objects
//! its actions' SQL gave (made again at each deploy); members without a value
//! (`null`) are left out, as reading treats both alike.

use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use weft_repo::model::Exported;

/// `exported` as files: each its name (a path with `/`) and text, by name.
pub fn files(exported: &Exported) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let doc = |list: &str, defs: Vec<Value>| {
        weft_dsr::write::hjson(&json!({"version": 1, "transformationData": {list: defs}}))
    };
    if !exported.connections.is_empty() {
        let defs = exported
            .connections
            .iter()
            .map(|c| canonical(&c.definition))
            .collect();
        out.push(("_connections.dsr".to_owned(), doc("connections", defs)));
    }
    if !exported.batches.is_empty() {
        let defs = exported
            .batches
            .iter()
            .map(|b| batch(canonical(&b.definition)))
            .collect();
        out.push(("_batches.dsr".to_owned(), doc("batches", defs)));
    }
    if let Some(n) = &exported.notifications {
        let text = weft_dsr::write::hjson(
            &json!({"version": 1, "transformationData": {"notifications": canonical(n)}}),
        );
        out.push(("_notifications.dsr".to_owned(), text));
    }
    if !exported.modules.is_empty() {
        let defs = exported.modules.iter().map(|m| canonical(m)).collect();
        out.push(("_modules.dsr".to_owned(), doc("modules", defs)));
    }
    // Each folder's directory, by path; one taken already gets the folder's id.
    let mut dirs: HashMap<String, String> = HashMap::new();
    let mut taken: HashSet<String> = HashSet::new();
    for f in &exported.folders {
        let mut dir = f
            .name
            .split('/')
            .filter(|p| !p.is_empty())
            .map(|p| safe(p, '_'))
            .collect::<Vec<_>>()
            .join("/");
        if !taken.insert(dir.to_lowercase()) {
            dir = format!("{dir}-{}", f.id);
            taken.insert(dir.to_lowercase());
        }
        dirs.insert(f.name.clone(), dir.clone());
        out.push((
            within(&dir, "_folder.dsr"),
            doc("folders", vec![canonical(&f.definition)]),
        ));
    }
    // Sheets by folder; names that meet (ignoring case) get their id.
    let mut by_folder: BTreeMap<&str, Vec<&weft_repo::model::ExportedObject>> = BTreeMap::new();
    for (folder, s) in &exported.sheets {
        by_folder.entry(folder.as_str()).or_default().push(s);
    }
    for (folder, sheets) in by_folder {
        let dir = dirs
            .get(folder)
            .cloned()
            .unwrap_or_else(|| safe(folder, '_'));
        let mut count: HashMap<String, usize> = HashMap::new();
        for s in &sheets {
            *count.entry(safe(&s.name, 's').to_lowercase()).or_default() += 1;
        }
        for s in sheets {
            let base = safe(&s.name, 's');
            let name = if count.get(&base.to_lowercase()).copied().unwrap_or(0) > 1 {
                format!("{base}-{}.dsr", s.id)
            } else {
                format!("{base}.dsr")
            };
            out.push((
                within(&dir, &name),
                doc("sheets", vec![without_derived(canonical(&s.definition))]),
            ));
        }
    }
    out.sort();
    out
}

fn within(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// A name made safe as a file or directory name; a leading `.` (hidden) gets `prefix`
/// before it, and so does a sheet's leading `_` (`_x` files are this layout's own): `_`
/// for folders, `s` for sheets.
fn safe(name: &str, prefix: char) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_control() || "/\\:*?\"<>|".contains(c) {
                '_'
            } else {
                c
            }
        })
        .collect();
    let trimmed = s.trim_end_matches(['.', ' ']).len();
    s.truncate(trimmed);
    if s.is_empty() {
        s.push(prefix);
    }
    if s.starts_with('.') || (prefix == 's' && s.starts_with('_')) {
        s.insert(0, prefix);
    }
    // At most 200 bytes, on a character boundary.
    if s.len() > 200 {
        let mut cut = 200;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

/// A stored definition without its `null` members; one that does not read as JSON is kept
/// as a string (the export shows it rather than failing).
fn canonical(definition: &str) -> Value {
    let mut v: Value =
        serde_json::from_str(definition).unwrap_or_else(|_| Value::String(definition.to_owned()));
    drop_nulls(&mut v);
    v
}

/// A sheet without the objects its actions' SQL gave (negative ids, made again at each
/// deploy: `validate::derive_objects`), as its document was written; an action whose text
/// was read from a file (`file`) holds that text, and no longer names the file, which the
/// export does not write.
fn without_derived(mut v: Value) -> Value {
    for list in ["nodes", "edges"] {
        if let Some(Value::Array(items)) = v.get_mut(list) {
            items.retain(|i| i.get("id").and_then(Value::as_i64).is_none_or(|id| id >= 0));
        }
    }
    if let Some(Value::Array(nodes)) = v.get_mut("nodes") {
        for n in nodes {
            if let Some(Value::Object(a)) = n.get_mut("attributes") {
                a.remove("file");
            }
        }
    }
    v
}

fn drop_nulls(v: &mut Value) {
    match v {
        Value::Object(members) => {
            members.retain(|_, m| !m.is_null());
            members.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// A batch's variables as a document writes them (`{variableName, variableValue}`; stored
/// as pairs).
fn batch(mut v: Value) -> Value {
    if let Some(Value::Array(vars)) = v.get_mut("variables") {
        for var in vars.iter_mut() {
            if let Value::Array(pair) = var
                && let [name, value] = pair.as_slice()
            {
                let mut m = Map::new();
                m.insert("variableName".to_owned(), name.clone());
                m.insert("variableValue".to_owned(), value.clone());
                *var = Value::Object(m);
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_safe_and_this_layouts_own_are_never_taken() {
        assert_eq!(safe("Orders", 's'), "Orders");
        assert_eq!(safe("a/b:c", 's'), "a_b_c");
        assert_eq!(safe("_folder", 's'), "s_folder");
        assert_eq!(safe(".hidden", 's'), "s.hidden");
        assert_eq!(safe(".git", '_'), "_.git");
        assert_eq!(safe("_staging", '_'), "_staging");
        assert_eq!(safe("end. ", 's'), "end");
        assert_eq!(safe("", 's'), "s");
    }
}
