//! Names instead of ids end to end: a project written without a single id (folders by
//! path, a connection by name whose key file entry is keyed by that name, sheets, actions
//! and batches by name, a batch's elements by path) deploys, runs, keeps its ids at every
//! redeploy, renames explicitly with `renamedFrom`, and refuses what its names cannot find.

use crate::common;

use common::actions::rows;
use common::*;
use serde_json::{Value, json};

const DOC: &str = r#"{
  version: 1
  transformationData: {
    folders: [ { path: "/shop" } ]
    connections: [ { name: "dw", type: "sqlite" } ]
    sheets: [
      {
        attributes: { name: "load", folder: "/shop", connection: "dw" }
        nodes: [
          { attributes: { module: "Sql", name: "orders", action: "DROP TABLE IF EXISTS orders; CREATE TABLE orders AS SELECT 1 AS id" } }
          { attributes: { module: "Sql", name: "totals", action: "DROP TABLE IF EXISTS totals; CREATE TABLE totals AS SELECT count(*) AS n FROM orders" } }
        ]
      }
    ]
    batches: [
      {
        name: "nightly"
        schedule: "daily 02:00"
        elements: [ { elementType: "S", elementId: "/shop/load" } ]
      }
    ]
  }
}"#;

fn deploy(w: &Weft, text: &str) -> Value {
    let (st, v) = post(&w.url, deploy_body(text));
    assert_eq!(st, 200, "{v}");
    v["payload"].clone()
}

/// `(kind, id)` of a report's list.
fn listed(report: &Value, list: &str) -> Vec<(String, i64)> {
    let mut out: Vec<(String, i64)> = report[list]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|t| {
                    (
                        t["kind"].as_str().unwrap_or("").to_owned(),
                        t["id"].as_i64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

#[test]
fn a_project_without_ids_deploys_runs_and_keeps_its_ids() {
    let w = Weft::start();
    let data = w.home.path().join("dw.db");
    // The key file entry is keyed by the connection's name.
    w.add_keys(&format!("dw|sqlite|{}|||\n", data.display()));
    let first = deploy(&w, DOC);
    let created = listed(&first, "created");
    let kinds: Vec<&str> = created.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["batch", "connection", "folder", "sheet"], "{first}");
    assert!(created.iter().all(|(_, id)| *id >= 1 << 40), "{first}");
    // The same document again: nothing changes, every id is the same.
    let again = deploy(&w, DOC);
    assert_eq!(listed(&again, "unchanged"), created, "{again}");
    // It runs, by the batch's element path and the connection's named key.
    let inst = run_sheet_to_end(&w, "/shop/load");
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(rows(&data, "SELECT n FROM totals"), ["1"]);
    // The batch's element is stored as the sheet's id (the export writes it so).
    let sheet_id = created
        .iter()
        .find(|(k, _)| k == "sheet")
        .map(|(_, id)| *id);
    let (st, v) = command(&w, "ExportRepository", json!({}));
    assert_eq!(st, 200, "{v}");
    let batches = v["payload"]["files"]
        .as_array()
        .and_then(|f| f.iter().find(|x| x["name"] == "_batches.dsr"))
        .map(|x| x["content"].to_string())
        .unwrap_or_default();
    assert!(
        batches.contains(&format!("elementId: {}", sheet_id.unwrap_or(0))),
        "{batches}"
    );
    // A rename without renamedFrom is a new sheet; with it, the same one.
    let renamed = DOC
        .replace(
            r#"name: "load", folder"#,
            r#"name: "loads", renamedFrom: "load", folder"#,
        )
        .replace("/shop/load", "/shop/loads");
    let r = deploy(&w, &renamed);
    let updated = listed(&r, "updated");
    assert!(
        updated.contains(&("sheet".to_owned(), sheet_id.unwrap_or(0))),
        "{r}"
    );
    assert!(
        listed(&r, "created").iter().all(|(k, _)| k != "sheet"),
        "{r}"
    );
    // The actions kept their ids too.
    let (st, v) = command(&w, "GetSheet", json!({"sheetId": sheet_id}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["name"], "loads", "{v}");
}

#[test]
fn names_that_find_nothing_or_two_are_refused_at_their_place() {
    let w = Weft::start();
    let bad = DOC
        .replace(
            r#"folder: "/shop", connection"#,
            r#"folder: "/nowhere", connection"#,
        )
        .replace(r#"elementId: "/shop/load""#, r#"elementId: "/shop/none""#)
        .replace(r#"name: "totals""#, r#"name: "orders""#);
    let (st, v) = post(&w.url, deploy_body(&bad));
    assert_eq!(st, 422, "{v}");
    let got: Vec<String> = v["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .map(|d| {
            format!(
                "{}:{} {}",
                d["line"],
                d["code"].as_str().unwrap_or(""),
                d["message"].as_str().unwrap_or("")
            )
        })
        .collect();
    let line = |needle: &str| {
        bad.lines()
            .position(|l| l.contains(needle))
            .map_or(0, |i| i + 1)
    };
    for (at, code, message) in [
        (
            line("/nowhere"),
            "sheet.folder_missing",
            "the sheet's folder `/nowhere` is neither in this document nor in the repository",
        ),
        (
            line(r#"name: "orders", action: "DROP TABLE IF EXISTS totals"#),
            "node.name",
            "both actions named `orders` without an id",
        ),
        (
            line("/shop/none"),
            "batch.element",
            "`/shop/none` names no sheet",
        ),
    ] {
        assert!(
            got.iter()
                .any(|g| g.starts_with(&format!("{at}:{code} ")) && g.contains(message)),
            "{at} {code} {message}: {got:#?}"
        );
    }
}
