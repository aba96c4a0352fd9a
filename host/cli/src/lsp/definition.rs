//! Go to definition: from a table's name (in an action's SQL, a `.sql` file of the project, an
//! object node or a test's `to`) to the actions that write it. The writers come from the data
//! graph of the project as the check deployed it (the lineage `weft lineage` answers), so
//! tables taken from the SQL, a `Model`'s or a `Seed`'s count as drawn ones do; each is found
//! in its document by its sheet's name and its own.

use super::text::{name_at, qualifier};
use weft_dsr::value::{Member, Span, Spanned, Value};

/// An action that writes the table: where it lives in the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writer {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Its sheet's name.
    pub sheet: String,
    /// The sheet's folder's path.
    pub folder: String,
}

/// The most writers one answer lists.
const MAX_WRITERS: i64 = 100;

/// The actions of `repo` that write the table named at byte `offset` of `text` (with its
/// schema when a dot qualifies it), if any.
pub fn writers(repo: &weft_repo::Repository, text: &str, offset: usize) -> Vec<Writer> {
    let Some((start, end)) = name_at(text, offset) else {
        return Vec::new();
    };
    let table = &text[start..end];
    let schema = qualifier(text, start);
    let mut rows = repo
        .lineage(table, None, schema, MAX_WRITERS)
        .unwrap_or_default();
    if rows.iter().all(|r| !r.writes) && schema.is_some() {
        // `a.b` may be a column of table `a` rather than table `b` of schema `a`.
        rows = repo
            .lineage(table, None, None, MAX_WRITERS)
            .unwrap_or_default();
    }
    let mut out: Vec<Writer> = rows
        .into_iter()
        .filter(|r| r.writes)
        .map(|r| Writer {
            id: r.action_id,
            name: r.action_name,
            sheet: r.sheet_name,
            folder: r.folder,
        })
        .collect();
    out.dedup_by(|a, b| a.id == b.id);
    out
}

/// Where `writer` stands in `documents` (each its name and text): the document's name and
/// the span of the action's name (else of its node).
pub fn locate(documents: &[(String, String)], writer: &Writer) -> Option<(String, Span)> {
    let mut loose = None;
    for (name, text) in documents {
        let Ok(root) = weft_dsr::hjson::parse(text) else {
            continue;
        };
        for sheet in items(
            member(&root.value, "transformationData").map(|t| &t.value.value),
            "sheets",
        ) {
            let attributes = member(&sheet.value, "attributes").map(|a| &a.value.value);
            if attributes.and_then(|a| text_of(a, "name")) != Some(writer.sheet.as_str()) {
                continue;
            }
            let folder_matches = attributes
                .and_then(|a| text_of(a, "folder"))
                .is_none_or(|f| f == writer.folder);
            for node in items(Some(&sheet.value), "nodes") {
                let attrs = member(&node.value, "attributes");
                let named = attrs
                    .and_then(|a| member(&a.value.value, "name"))
                    .filter(|n| matches!(&n.value.value, Value::String(s) if *s == writer.name));
                let id_matches = member(&node.value, "id")
                    .is_some_and(|m| m.value.value == Value::Int(writer.id));
                if named.is_none() && !id_matches {
                    continue;
                }
                let span = named.map_or(node.span, |n| n.value.span);
                if folder_matches {
                    return Some((name.clone(), span));
                }
                loose.get_or_insert((name.clone(), span));
            }
        }
    }
    loose
}

/// Member `key` of an object.
fn member<'a>(v: &'a Value, key: &str) -> Option<&'a Member> {
    match v {
        Value::Object(members) => members.iter().find(|m| m.key == key),
        _ => None,
    }
}

/// The items of array member `key` of `v`.
fn items<'a>(v: Option<&'a Value>, key: &str) -> impl Iterator<Item = &'a Spanned> {
    let list = match v.and_then(|v| member(v, key)).map(|m| &m.value.value) {
        Some(Value::Array(items)) => items.as_slice(),
        _ => &[],
    };
    list.iter()
}

/// The text of member `key` of `v`, if it is text.
fn text_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    match member(v, key).map(|m| &m.value.value) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_action_is_found_by_its_sheet_and_name_and_the_folder_decides_between_two() {
        let a = r#"{ version: 1, transformationData: { sheets: [
  { attributes: { name: "marts", folder: "/old" }, nodes: [{ attributes: { module: "Model", name: "orders" } }] }
  { attributes: { name: "marts", folder: "/jaffle" }, nodes: [
    { attributes: { module: "Model", name: "customers" } }
    { attributes: { module: "Model", name: "orders" } }
  ] }
] } }"#;
        let docs = vec![
            ("broken.dsr".to_owned(), "{".to_owned()),
            ("marts.dsr".to_owned(), a.to_owned()),
        ];
        let writer = Writer {
            id: 7,
            name: "orders".into(),
            sheet: "marts".into(),
            folder: "/jaffle".into(),
        };
        let (file, span) = locate(&docs, &writer).expect("found");
        assert_eq!(file, "marts.dsr");
        let at = &a[span.start as usize..span.end as usize];
        assert_eq!(at, "\"orders\"");
        assert!(
            span.start as usize > a.find("/jaffle").expect("x"),
            "the second sheet's"
        );
        let elsewhere = Writer {
            folder: "/other".into(),
            ..writer.clone()
        };
        assert!(
            locate(&docs, &elsewhere).is_some(),
            "a sheet without a matching folder still"
        );
        let none = Writer {
            name: "nope".into(),
            ..writer
        };
        assert_eq!(locate(&docs, &none), None);
    }
}
