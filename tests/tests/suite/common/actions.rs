//! Building one-action plans and reading SQLite rows, for the tests that run action modules
//! through the host's runner (`modules.rs`, `jdbc.rs`).

use rusqlite::Connection;
use std::path::Path;
use weft_engine::exec::{ActionPlan, actions_of};
use weft_sdk::Dialect;

/// Every row of `sql` on the SQLite file `path`, values joined by `|` (`NULL`, integers,
/// reals in Rust's `{:?}`, text, blobs as `x` and hex).
pub fn rows(path: &Path, sql: &str) -> Vec<String> {
    let c = Connection::open(path).expect("open");
    let mut st = c.prepare(sql).expect("prepare");
    let n = st.column_count();
    st.query_map([], |r| {
        Ok((0..n)
            .map(|i| match r.get_ref(i).expect("value") {
                rusqlite::types::ValueRef::Null => "NULL".to_owned(),
                rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                rusqlite::types::ValueRef::Real(v) => format!("{v:?}"),
                rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                rusqlite::types::ValueRef::Blob(b) => format!(
                    "x{}",
                    b.iter().map(|c| format!("{c:02x}")).collect::<String>()
                ),
            })
            .collect::<Vec<_>>()
            .join("|"))
    })
    .expect("query")
    .collect::<Result<_, _>>()
    .expect("rows")
}

/// A one-action sheet: `sources` -> action -> `target`, as `(connection, table)`, all
/// connections SQLite.
pub fn plan(
    module: &str,
    action: &str,
    attributes: serde_json::Value,
    sources: &[(i64, &str)],
    target: Option<(i64, &str)>,
) -> ActionPlan {
    plan_in(module, action, attributes, sources, target, &|_| {
        Dialect::Sqlite
    })
}

/// [`plan`] with the dialect of each connection.
pub fn plan_in(
    module: &str,
    action: &str,
    attributes: serde_json::Value,
    sources: &[(i64, &str)],
    target: Option<(i64, &str)>,
    dialect: &dyn Fn(i64) -> Dialect,
) -> ActionPlan {
    let mut nodes = vec![
        serde_json::json!({"id": 1, "type": 0, "attributes": {"module": module, "name": "the action", "action": action}}),
    ];
    if let serde_json::Value::Object(extra) = attributes {
        for (k, v) in extra {
            nodes[0]["attributes"][k] = v;
        }
    }
    let mut edges = Vec::new();
    for (i, (conn, table)) in sources.iter().enumerate() {
        let id = 10 + i as i64;
        nodes.push(serde_json::json!({"id": id, "type": 1, "attributes": {"field1": table, "objectTypeId": 1, "connectionId": conn}}));
        edges.push(serde_json::json!({"id": 100 + id, "from": id, "to": 1}));
    }
    if let Some((conn, table)) = target {
        nodes.push(serde_json::json!({"id": 99, "type": 1, "attributes": {"field1": table, "objectTypeId": 1, "connectionId": conn}}));
        edges.push(serde_json::json!({"id": 199, "from": 1, "to": 99}));
    }
    let doc = serde_json::json!({"version": 1, "transformationData": {"sheets": [{
        "id": 1, "attributes": {"name": "s", "folder_id": 1, "folder": "/"}, "nodes": nodes, "edges": edges}]}});
    let (doc, problems) = weft_dsr::parse(&doc.to_string());
    assert!(!problems.has_errors(), "{:?}", problems.as_slice());
    let doc = doc.expect("document");
    actions_of(&doc.sheets[0], dialect).remove(0)
}
