//! End to end: the lifecycle of what is deployed. Deleting folders, sheets, connections and
//! batches by id or path (refused, with every reference named and nothing changed, while
//! anything that stays refers to them; recorded in the deploy history), runs in flight
//! keeping the plans of sheets deleted under them, and `weft delete`.

use crate::common;
use crate::runs::{action, chain, command, deploy, held_chain, setup, wait};

use common::*;
use serde_json::{Value, json};

/// The details of a refusal: `(code, path, message)`.
fn details(v: &Value) -> Vec<(String, String, String)> {
    v["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap_or_default().to_owned(),
                d["path"].as_str().unwrap_or_default().to_owned(),
                d["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The chain of [`chain`] (sheets 100 and 200 in `/etl`, 300 in `/etl/marts`) and batch 7
/// `nightly` naming sheet 300 and action 2000.
fn chain_and_batch(w: &Weft) {
    chain(w);
    deploy(
        w,
        &json!({"version": 1, "transformationData": {"batches": [{"id": 7, "name": "nightly",
            "schedule": "daily 02:00",
            "elements": [{"elementType": "S", "elementId": 300}, {"elementType": "A", "elementId": 2000}]}]}}),
    );
}

#[test]
fn a_delete_refused_names_every_reference_and_changes_nothing() {
    let (w, _data) = setup();
    chain_and_batch(&w);
    let before = w.dump();
    // The connection: every sheet that uses it is named.
    let (st, v) = command(&w, "DeleteObjects", json!({"connections": ["data"]}), None);
    assert_eq!(st, 409, "{v}");
    assert_eq!(v["error"]["code"], "delete.referenced");
    let d = details(&v);
    assert_eq!(d.len(), 3, "one per sheet using it: {d:?}");
    for (sheet, path) in [
        (100, "/etl/sheet 100"),
        (200, "/etl/sheet 200"),
        (300, "/etl/marts/sheet 300"),
    ] {
        assert!(
            d.iter().any(|(code, at, m)| code == "delete.referenced"
                && at == "payload.connections[0]"
                && m.contains(&format!("sheet {sheet} ({path})"))
                && m.contains("connection 1 (data)")),
            "{d:?}"
        );
    }
    // A folder that holds sheets, without `recursive`.
    let (st, v) = command(
        &w,
        "DeleteObjects",
        json!({"folders": ["/etl/marts"]}),
        None,
    );
    assert_eq!(st, 409, "{v}");
    assert_eq!(details(&v)[0].0, "delete.folder_not_empty", "{v}");
    assert!(details(&v)[0].2.contains("/etl/marts/sheet 300"), "{v}");
    // Recursive: the batch still names a sheet below and an action of another.
    let (st, v) = command(
        &w,
        "DeleteObjects",
        json!({"folders": [10], "recursive": true}),
        None,
    );
    assert_eq!(st, 409, "{v}");
    let d = details(&v);
    assert_eq!(d.len(), 2, "{d:?}");
    assert!(
        d.iter().any(|(_, at, m)| at == "payload.folders[0]"
            && m.contains(
                "sheet 300 (/etl/marts/sheet 300) is named by batch 7 (nightly) in its elements[0]"
            )),
        "{d:?}"
    );
    assert!(
        d.iter()
            .any(|(_, _, m)| m.contains("action 2000 of sheet 200")),
        "{d:?}"
    );
    // Names that do not exist, every one listed, and an id as a string of digits.
    let (st, v) = command(
        &w,
        "DeleteObjects",
        json!({"sheets": ["/etl/nope", "100", 4242], "batches": ["weekly"]}),
        None,
    );
    assert_eq!(st, 404, "{v}");
    assert_eq!(v["error"]["code"], "delete.not_found");
    let paths: Vec<String> = details(&v).into_iter().map(|d| d.1).collect();
    assert_eq!(
        paths,
        [
            "payload.sheets[0]",
            "payload.sheets[2]",
            "payload.batches[0]"
        ],
        "{v}"
    );
    // A payload that names nothing, or names with the wrong type.
    let (st, v) = command(&w, "DeleteObjects", json!({"dryRun": true}), None);
    assert_eq!(st, 400, "{v}");
    let (st, v) = command(&w, "DeleteObjects", json!({"sheets": [true, ""]}), None);
    assert_eq!(st, 400, "{v}");
    assert_eq!(details(&v).len(), 2, "{v}");
    // A dry run of what may go says what would, and changes nothing either.
    let (st, v) = command(
        &w,
        "DeleteObjects",
        json!({"batches": ["nightly"], "folders": ["/etl"], "recursive": true, "dryRun": true}),
        None,
    );
    assert_eq!(st, 200, "{v}");
    let gone: Vec<(String, i64)> = v["payload"]["deleted"]
        .as_array()
        .expect("deleted")
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().expect("kind").to_owned(),
                d["id"].as_i64().expect("id"),
            )
        })
        .collect();
    assert_eq!(
        gone,
        [
            ("batch".to_owned(), 7),
            ("sheet".to_owned(), 100),
            ("sheet".to_owned(), 200),
            ("sheet".to_owned(), 300),
            ("folder".to_owned(), 11),
            ("folder".to_owned(), 10),
        ],
        "batches, sheets, then folders deepest first: {v}"
    );
    assert_eq!(v["payload"]["dryRun"], true);
    assert!(v["payload"].get("deployId").is_none(), "{v}");
    assert_eq!(w.dump(), before, "refusals and the dry run changed nothing");
}

#[test]
fn a_delete_removes_the_objects_and_the_deploy_history_shows_it() {
    let (w, _data) = setup();
    chain_and_batch(&w);
    let (st, v) = command(
        &w,
        "DeleteObjects",
        json!({"batches": [7], "folders": ["/etl"], "connections": [1], "recursive": true}),
        None,
    );
    assert_eq!(st, 200, "{v}");
    let deploy_id = v["payload"]["deployId"].as_i64().expect("deployId");
    assert_eq!(v["payload"]["deleted"].as_array().map(Vec::len), Some(7));
    // Nothing is left of them: the tree, the batches, the nodes and the data graph.
    let (_, tree) = command(&w, "ListSheets", json!({}), None);
    assert_eq!(tree["payload"]["sheets"], json!([]), "{tree}");
    assert_eq!(tree["payload"]["folders"], json!([]), "{tree}");
    let (_, batches) = command(&w, "ListBatches", json!({}), None);
    assert_eq!(batches["payload"]["batches"], json!([]), "{batches}");
    for table in [
        "nodes",
        "edges",
        "data_flow",
        "sheet_plans",
        "plans_versions",
        "service_batch_next_run",
        "connections",
    ] {
        assert_eq!(
            w.repo_value(&format!("SELECT COUNT(*) FROM {table}")),
            "0",
            "{table}"
        );
    }
    // The deploy history: one deploy with a deleted line for each, and the definition before.
    let (_, d) = command(&w, "ListDeploys", json!({"limit": 1}), None);
    let newest = &d["payload"]["deploys"][0];
    assert_eq!(newest["deployId"], deploy_id, "{d}");
    assert_eq!(newest["deleted"], 7, "{d}");
    assert_eq!(newest["created"], 0, "{d}");
    let line = newest["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .find(|c| c["kind"] == "sheet" && c["objectId"] == 300)
        .expect("the line of sheet 300")
        .clone();
    assert_eq!(line["change"], "deleted", "{line}");
    assert_eq!(line["name"], "/etl/marts/sheet 300", "{line}");
    let (st, c) = command(
        &w,
        "GetDeployChange",
        json!({"historyId": line["historyId"]}),
        None,
    );
    assert_eq!(st, 200, "{c}");
    assert!(c["payload"]["definition"].is_null(), "{c}");
    assert!(
        c["payload"]["previous"]["definition"]
            .as_str()
            .is_some_and(|p| p.contains("SELECT id, v FROM stage")),
        "the version deleted is the one before the line: {c}"
    );
    // Deleted ids may be deployed again, as new objects.
    setup_again(&w);
    chain(&w);
}

/// Folder 10 and 11 and connection 1 again, as [`setup`] deploys them.
fn setup_again(w: &Weft) {
    deploy(
        w,
        &json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/etl"}, {"id": 11, "path": "/etl/marts"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}]}}),
    );
}

#[test]
fn a_run_in_flight_keeps_the_plans_of_sheets_deleted_under_it() {
    let (w, data) = setup();
    // Action 5000 of sheet 500 runs and waits for the data file's lock; action 6000 of
    // sheet 600 waits for it.
    let (gate, id) = held_chain(&w, &data);
    let (st, v) = command(
        &w,
        "DeleteObjects",
        json!({"sheets": ["/etl/sheet 500", "/etl/sheet 600"]}),
        None,
    );
    assert_eq!(st, 200, "{v}");
    // A new run of them is refused; the one in flight goes on with its plans.
    let (st, v) = command(
        &w,
        "RunElements",
        json!({"batchExecution": {"batchName": "t", "user": "u", "elementList": [{"elementType": "S", "elementId": 600}]}}),
        None,
    );
    assert_eq!(st, 404, "{v}");
    gate.execute_batch("COMMIT").expect("let the lock go");
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(action(&inst, 6000)["state"], "F", "{inst}");
    let n: i64 = rusqlite::Connection::open(&data)
        .expect("data")
        .query_row("SELECT n FROM after_big", [], |r| r.get(0))
        .expect("after_big");
    assert_eq!(
        n, 1,
        "the deleted sheet's action ran the plan it was pinned to"
    );
    // Its plans stay while the instance names them (a restart asStarted may need them).
    assert_eq!(
        w.repo_value("SELECT COUNT(*) FROM sheet_plans WHERE sheet_id IN (500, 600)"),
        "2"
    );
}

#[test]
fn weft_delete_prints_what_went_or_every_reason_not_with_its_exit_code() {
    let (w, _data) = setup();
    chain_and_batch(&w);
    let cli = |args: &[&str]| {
        let o = std::process::Command::new(weft_bin())
            .arg("delete")
            .args(args)
            .env("WEFT_HOME", w.home.path())
            .output()
            .expect("weft delete");
        let (out, err) = text(&o);
        (o.status.code(), out, err)
    };
    let (code, out, err) = cli(&["--connection", "data"]);
    assert_eq!(code, Some(4), "{out}{err}");
    assert!(
        err.contains("payload.connections[0]: connection 1 (data) is used by node")
            && err.contains("/etl/marts/sheet 300"),
        "every reference on standard error: {err}"
    );
    let (code, out, err) = cli(&["--folder", "/etl", "-r", "--batch", "nightly", "--dry-run"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("would delete sheet 300 /etl/marts/sheet 300")
            && out.contains("dry run: 6 object(s) would be deleted"),
        "{out}"
    );
    let (code, out, err) = cli(&["--batch", "7", "--json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(v["deleted"][0]["name"], "nightly", "{v}");
    let (code, _, err) = cli(&[]);
    assert_eq!(code, Some(2), "nothing named is a usage error: {err}");
    let (code, _, err) = cli(&["--sheet", "/etl/none"]);
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("no sheet `/etl/none`"), "{err}");
}

/// A project in a directory: `base.dsr` (folder 20 `/p` and, only in `z_conn.dsr`, the
/// connection its sheets use) and one file per sheet `sheets/s{id}.dsr` (sheet `id` in
/// `/p`, writing `other`), ids from `ids`.
fn project(dir: &std::path::Path, ids: &[i64]) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("sheets")).expect("dir");
    std::fs::write(
        dir.join("base.dsr"),
        "{\n  version: 1\n  transformationData: {\n    folders: [{id: 20, path: \"/p\"}]\n  }\n}\n",
    )
    .expect("base");
    // The connection comes last in file order; the sheets before it use it.
    std::fs::write(
        dir.join("z_conn.dsr"),
        "{\n  version: 1\n  transformationData: {\n    connections: [{id: 2, name: \"data2\", type: \"sqlite\"}]\n  }\n}\n",
    )
    .expect("conn");
    for id in ids {
        std::fs::write(
            dir.join(format!("sheets/s{id}.dsr")),
            sheet_text(*id, "INSERT INTO other SELECT 1"),
        )
        .expect("sheet");
    }
}

/// Sheet `id` in folder 20 `/p`: one Sql action writing `other` through connection 2.
fn sheet_text(id: i64, sql: &str) -> String {
    format!(
        "{{\n  version: 1\n  transformationData: {{\n    sheets: [{{\n      id: {id}\n      attributes: {{name: \"s{id}\", folder_id: 20, folder: \"/p\"}}\n      nodes: [\n        {{id: {a}, type: 0, attributes: {{module: \"Sql\", name: \"a{id}\", action: \"{sql}\"}}}}\n        {{id: {t}, type: 1, attributes: {{field1: \"other\", objectTypeId: 1, connectionId: 2}}}}\n      ]\n      edges: [{{id: {a}, from: {a}, to: {t}}}]\n    }}]\n  }}\n}}\n",
        a = id * 10,
        t = id * 10 + 1,
    )
}

/// The project in `dir` as `DeployProject`'s documents, by path from `dir`, sorted.
fn documents(dir: &std::path::Path) -> Value {
    fn walk(dir: &std::path::Path, at: &str, out: &mut Vec<(String, String)>) {
        for e in std::fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry"))
        {
            let name = format!("{at}{}", e.file_name().to_string_lossy());
            if e.path().is_dir() {
                walk(&e.path(), &format!("{name}/"), out);
            } else {
                out.push((name, std::fs::read_to_string(e.path()).expect("read")));
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, "", &mut files);
    files.sort();
    Value::Array(
        files
            .into_iter()
            .map(|(name, content)| json!({"name": name, "content": content}))
            .collect(),
    )
}

/// A server as [`setup`]'s, with connection 2 on the same data file, and the project of
/// [`project`] with sheets `ids` written to its home (not deployed): the server, the data
/// file and the project's directory.
fn project_server(ids: &[i64]) -> (Weft, std::path::PathBuf, std::path::PathBuf) {
    let (w, data) = setup();
    w.add_keys(&format!("2|sqlite|{}|||\n", data.display()));
    let dir = w.home.path().join("project");
    project(&dir, ids);
    (w, data, dir)
}

/// `DeployProject` of the project in `dir`, pruning `prune`.
fn deploy_project(w: &Weft, dir: &std::path::Path, prune: &[&str]) -> (u16, Value) {
    command(
        w,
        "DeployProject",
        json!({"documents": documents(dir), "prune": prune}),
        None,
    )
}

/// `(kind, id, file)` of a report's list.
fn listed(report: &Value, list: &str) -> Vec<(String, i64, String)> {
    let mut out: Vec<(String, i64, String)> = report[list]
        .as_array()
        .expect("list")
        .iter()
        .map(|t| {
            (
                t["kind"].as_str().expect("kind").to_owned(),
                t["id"].as_i64().expect("id"),
                t["file"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_project_deploys_in_one_transaction_whatever_its_file_order_and_again_writes_nothing() {
    let (w, _data, dir) = project_server(&[30, 31]);
    let (st, v) = deploy_project(&w, &dir, &[]);
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        listed(&v["payload"], "created"),
        [
            ("connection".to_owned(), 2, "z_conn.dsr".to_owned()),
            ("folder".to_owned(), 20, "base.dsr".to_owned()),
            ("sheet".to_owned(), 30, "sheets/s30.dsr".to_owned()),
            ("sheet".to_owned(), 31, "sheets/s31.dsr".to_owned()),
        ],
        "{v}"
    );
    // The same project again: everything unchanged, nothing written.
    let before = w.dump();
    let (st, v) = deploy_project(&w, &dir, &[]);
    assert_eq!(st, 200, "{v}");
    assert_eq!(listed(&v["payload"], "unchanged").len(), 4, "{v}");
    assert!(v["payload"].get("deployId").is_none(), "{v}");
    assert_eq!(w.dump(), before, "an unchanged project writes nothing");
    // It runs.
    let id = crate::runs::run(&w, &[("F", 20)], None);
    assert_eq!(wait(&w, id)["state"], "finished");
}

#[test]
fn a_project_with_problems_in_several_files_names_each_in_its_file_and_changes_nothing() {
    let (w, _data, dir) = project_server(&[30, 31]);
    let (st, v) = deploy_project(&w, &dir, &[]);
    assert_eq!(st, 200, "{v}");
    let before = w.dump();
    // s30's SQL fails to parse; s31 names a connection no file and no repository has.
    std::fs::write(
        dir.join("sheets/s30.dsr"),
        sheet_text(30, "INSERT INTO other SELEC 1"),
    )
    .expect("s30");
    std::fs::write(
        dir.join("sheets/s31.dsr"),
        sheet_text(31, "INSERT INTO other SELECT 1").replace("connectionId: 2", "connectionId: 9"),
    )
    .expect("s31");
    let (st, v) = deploy_project(&w, &dir, &[]);
    assert_eq!(st, 422, "{v}");
    let errors: Vec<(String, i64, i64, String)> = v["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| {
            (
                d["file"].as_str().unwrap_or("").to_owned(),
                d["line"].as_i64().unwrap_or(0),
                d["column"].as_i64().unwrap_or(0),
                d["path"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert!(
        errors.iter().any(|(f, l, _, p)| f == "sheets/s30.dsr"
            && *l == 8
            && p.starts_with("transformationData.sheets[0].nodes[0]")),
        "the SQL error in its file, at its line, with the file's own path: {errors:?}"
    );
    assert!(
        errors.iter().any(|(f, l, _, p)| f == "sheets/s31.dsr"
            && *l == 9
            && p.starts_with("transformationData.sheets[0].nodes[1]")),
        "the unknown connection in its file: {errors:?}"
    );
    assert_eq!(w.dump(), before, "a rejected project changes nothing");
    // A syntax error in one file and another in a second: both named.
    std::fs::write(
        dir.join("base.dsr"),
        "{version: 1,\n  transformationData: {]\n}",
    )
    .expect("base");
    let (st, v) = deploy_project(&w, &dir, &[]);
    assert_eq!(st, 422, "{v}");
    assert_eq!(v["error"]["details"][0]["file"], "base.dsr", "{v}");
    assert_eq!(v["error"]["details"][0]["line"], 2, "{v}");
    // Two documents with one name are refused before anything is read.
    let (st, v) = command(
        &w,
        "DeployProject",
        json!({"documents": [{"name": "a.dsr", "content": "{}"}, {"name": "a.dsr", "content": "{}"}]}),
        None,
    );
    assert_eq!(st, 400, "{v}");
    assert_eq!(w.dump(), before);
}

#[test]
fn a_project_prunes_what_it_no_longer_holds_unless_something_still_refers_to_it() {
    let (w, _data, dir) = project_server(&[30, 31, 32]);
    let (st, v) = deploy_project(&w, &dir, &[]);
    assert_eq!(st, 200, "{v}");
    // A folder below /p that only the repository has, with a sheet, and a batch naming s31.
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {"folders": [{"id": 21, "path": "/p/old"}],
            "batches": [{"id": 8, "name": "b31", "schedule": "daily 03:00",
                "elements": [{"elementType": "S", "elementId": 31}]}]}}),
    );
    deploy(
        &w,
        &crate::runs::sheet(
            40,
            (21, "/p/old"),
            "Sql",
            "INSERT INTO other SELECT 1",
            &[],
            "other",
        ),
    );
    // s31 and s32 leave the tree: s31 is still named by batch 8, so the prune is refused.
    std::fs::remove_file(dir.join("sheets/s31.dsr")).expect("rm");
    std::fs::remove_file(dir.join("sheets/s32.dsr")).expect("rm");
    let before = w.dump();
    let (st, v) = deploy_project(&w, &dir, &["/p"]);
    assert_eq!(st, 422, "{v}");
    let d = &v["error"]["details"][0];
    assert_eq!(d["path"], "prune[0]", "{v}");
    assert!(
        d["message"]
            .as_str()
            .is_some_and(|m| m.contains("sheet 31 (/p/s31) is named by batch 8 (b31)")),
        "{v}"
    );
    assert_eq!(w.dump(), before, "a refused prune changes nothing");
    // Without the batch, what the tree lacks below /p goes: s31, s32, /p/old and its sheet.
    let (st, v) = command(&w, "DeleteObjects", json!({"batches": [8]}), None);
    assert_eq!(st, 200, "{v}");
    let (st, v) = deploy_project(&w, &dir, &["/p"]);
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        listed(&v["payload"], "deleted"),
        [
            ("folder".to_owned(), 21, String::new()),
            ("sheet".to_owned(), 31, String::new()),
            ("sheet".to_owned(), 32, String::new()),
            ("sheet".to_owned(), 40, String::new()),
        ],
        "{v}"
    );
    let (_, tree) = command(&w, "ListSheets", json!({}), None);
    let left: Vec<i64> = tree["payload"]["sheets"]
        .as_array()
        .expect("sheets")
        .iter()
        .map(|s| s["sheetId"].as_i64().expect("id"))
        .collect();
    assert_eq!(left, [30], "{tree}");
    // A prune of a folder no one has is refused.
    let (st, v) = deploy_project(&w, &dir, &["/nowhere"]);
    assert_eq!(st, 422, "{v}");
    assert_eq!(v["error"]["details"][0]["code"], "prune.not_found", "{v}");
}

#[test]
fn weft_deploy_of_a_directory_reports_each_file_and_each_problem_at_file_line_column() {
    let (w, _data, dir) = project_server(&[30, 31]);
    let cli = |args: &[&str]| {
        let o = std::process::Command::new(weft_bin())
            .arg("deploy")
            .args(args)
            .env("WEFT_HOME", w.home.path())
            .output()
            .expect("weft deploy");
        let (out, err) = text(&o);
        (o.status.code(), out, err)
    };
    let d = dir.display().to_string();
    let (code, out, err) = cli(&[&d]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains(&format!("{d}/sheets/s31.dsr: 1 created"))
            && out.contains(&format!("{d}/base.dsr: 1 created")),
        "{out}"
    );
    std::fs::write(
        dir.join("sheets/s31.dsr"),
        sheet_text(31, "INSERT INTO other SELEC 1"),
    )
    .expect("s31");
    let (code, out, err) = cli(&["--dir", &d, "--prune", "/p"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains(&format!("{d}/sheets/s31.dsr:8:")),
        "the problem at file:line:column: {err}"
    );
    std::fs::remove_file(dir.join("sheets/s31.dsr")).expect("rm");
    // deploySheet.sh passes --dir on; the prune removes sheet 31.
    let o = w.script("deploySheet.sh", &["--dir", &d, "--prune", "/p"], None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("pruned: sheet 31"), "{out}");
    let (code, _, err) = cli(&["--prune", "/p", "--file", &format!("{d}/base.dsr")]);
    assert_eq!(code, Some(2), "--prune needs a project: {err}");
}

/// Every file below `dir` with its text, by path from `dir`.
fn tree(dir: &std::path::Path) -> Vec<(String, String)> {
    documents(dir)
        .as_array()
        .expect("files")
        .iter()
        .map(|d| {
            (
                d["name"].as_str().expect("name").to_owned(),
                d["content"].as_str().expect("content").to_owned(),
            )
        })
        .collect()
}

#[test]
fn an_export_deploys_into_an_empty_repository_and_exports_the_same_files_again() {
    let (w, data) = setup();
    chain_and_batch(&w);
    // A statement of several lines, documentation, variables on the batch.
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {"sheets": [{"id": 130,
            "attributes": {"name": "multi/line: sheet", "folder_id": 11, "folder": "/etl/marts", "documentation": "Loads the mart.\nTwice."},
            "nodes": [
                {"id": 1300, "type": 0, "attributes": {"module": "Sql", "name": "load", "action": "INSERT INTO other\nSELECT COUNT(*)\n  FROM mart\n WHERE v <> '${label}'"}},
                {"id": 1301, "type": 1, "attributes": {"field1": "mart", "objectTypeId": 1, "connectionId": 1}},
                {"id": 1309, "type": 1, "attributes": {"field1": "other", "objectTypeId": 1, "connectionId": 1}}],
            "edges": [{"id": 1301, "from": 1301, "to": 1300}, {"id": 1309, "from": 1300, "to": 1309}]}],
          "batches": [{"id": 9, "name": "with vars", "schedule": "daily 04:00", "enabled": false,
            "variables": [{"variableName": "label", "variableValue": "x"}],
            "elements": [{"elementType": "F", "elementId": 11}],
            "notifications": [{"on": ["late"], "lateAt": "06:00", "to": ["slack"]}]}],
          "notifications": {
            "channels": [
              {"name": "team", "type": "email", "server": "relay", "from": "weft@example.com",
               "to": ["a@example.com", "Team B <b@example.com>"]},
              {"name": "slack", "type": "webhook", "url": "https://hooks.example.com/T1/B2",
               "body": "{\"text\": {{ (batch ~ \": \" ~ headline) | tojson }}}\n"}],
            "rules": [{"on": ["failed", "missed"], "to": ["team"]}]}}}),
    );
    let cli = |w: &Weft, args: &[&str]| {
        let o = std::process::Command::new(weft_bin())
            .args(args)
            .env("WEFT_HOME", w.home.path())
            .output()
            .expect("weft");
        let (out, err) = text(&o);
        (o.status.code(), out, err)
    };
    let first = w.home.path().join("first");
    let (code, out, err) = cli(&w, &["export", &first.display().to_string()]);
    assert_eq!(code, Some(0), "{out}{err}");
    let files = tree(&first);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "_batches.dsr",
            "_connections.dsr",
            "_notifications.dsr",
            "etl/_folder.dsr",
            "etl/marts/_folder.dsr",
            "etl/marts/multi_line_ sheet.dsr",
            "etl/marts/sheet 300.dsr",
            "etl/sheet 100.dsr",
            "etl/sheet 200.dsr",
        ],
        "{out}"
    );
    let multi = &files[5].1;
    assert!(
        multi.contains("'''\n") && multi.contains("  FROM mart\n"),
        "SQL of several lines is a block of lines: {multi}"
    );
    // Into an empty repository, as a project; exported again: the same files.
    let (w2, _) = setup_with_data_of(&data);
    let (code, out, err) = cli(&w2, &["deploy", &first.display().to_string()]);
    assert_eq!(code, Some(0), "{out}{err}");
    let second = w2.home.path().join("second");
    let (code, out, err) = cli(&w2, &["export", &second.display().to_string()]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(
        tree(&second),
        files,
        "export -> deploy -> export gives identical files"
    );
    // It runs there as here.
    let (_, v) = command(&w2, "ListBatches", json!({}), None);
    assert_eq!(
        v["payload"]["batches"].as_array().map(Vec::len),
        Some(2),
        "{v}"
    );
    // One folder's tree: its folder, sheets and the connection they use; no batches.
    let part = w.home.path().join("part");
    let (code, out, err) = cli(
        &w,
        &[
            "export",
            "--folder",
            "/etl/marts",
            &part.display().to_string(),
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    let names: Vec<String> = tree(&part).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "_connections.dsr",
            "etl/marts/_folder.dsr",
            "etl/marts/multi_line_ sheet.dsr",
            "etl/marts/sheet 300.dsr",
        ]
    );
    // A directory with .dsr files in it needs --replace; a folder that is not there is refused.
    let (code, _, err) = cli(&w, &["export", &part.display().to_string()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--replace"), "{err}");
    let (code, out, err) = cli(
        &w,
        &["export", "--replace", "--json", &part.display().to_string()],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    let listed: Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(
        listed["files"].as_array().map(Vec::len),
        Some(files.len()),
        "{out}"
    );
    assert_eq!(tree(&part), files, "replaced: the whole repository now");
    let (code, _, err) = cli(
        &w,
        &[
            "export",
            "--folder",
            "/nope",
            &w.home.path().join("x").display().to_string(),
        ],
    );
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("no folder `/nope`"), "{err}");
}

/// A new server whose connections 1 and 2 are the data file `data` (of another server).
fn setup_with_data_of(data: &std::path::Path) -> (Weft, std::path::PathBuf) {
    let w = Weft::start_with(&["--listen", "127.0.0.1:0"], &[]);
    w.add_keys(&format!(
        "1|sqlite|{0}|||\n2|sqlite|{0}|||\n",
        data.display()
    ));
    (w, data.to_path_buf())
}

#[test]
fn a_backfill_runs_the_batch_once_a_planned_start_with_its_schedule_date_in_order() {
    let (w, data) = setup();
    deploy(
        &w,
        &crate::runs::sheet(
            140,
            (10, "/etl"),
            "Sql",
            "INSERT INTO stage VALUES (${batch_instance_id}, '${schedule_date} ${planned_start}')",
            &[],
            "stage",
        ),
    );
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {"batches": [{"id": 5, "name": "nightly load",
            "schedule": "daily 02:00", "enabled": false,
            "elements": [{"elementType": "S", "elementId": 140}]}]}}),
    );
    let cli = |args: &[&str]| {
        let o = std::process::Command::new(weft_bin())
            .arg("backfill")
            .args(args)
            .env("WEFT_HOME", w.home.path())
            .output()
            .expect("weft backfill");
        let (out, err) = text(&o);
        (o.status.code(), out, err)
    };
    let (code, out, err) = cli(&[
        "nightly load",
        "--from",
        "2026-01-30",
        "--to",
        "2026-02-02",
        "--parallel",
        "2",
        "--wait",
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("4 of 4 finished"), "{out}{err}");
    // Each planned start once, with its own day, in order of the instances.
    let c = rusqlite::Connection::open(&data).expect("data");
    let mut st = c
        .prepare("SELECT id, v FROM stage ORDER BY id")
        .expect("prepare");
    let rows: Vec<(i64, String)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    let days: Vec<&str> = rows.iter().map(|(_, v)| v.as_str()).collect();
    assert_eq!(
        days,
        [
            "2026-01-30 2026-01-30 02:00:00",
            "2026-01-31 2026-01-31 02:00:00",
            "2026-02-01 2026-02-01 02:00:00",
            "2026-02-02 2026-02-02 02:00:00",
        ]
    );
    // One group: the backfill's instances, each with its planned start and the batch.
    let (_, v) = command(
        &w,
        "ListBatchInstances",
        json!({"backfillId": 1, "limit": 10}),
        None,
    );
    let listed = v["payload"]["instances"]
        .as_array()
        .expect("instances")
        .clone();
    assert_eq!(listed.len(), 4, "{v}");
    for i in &listed {
        assert_eq!(i["backfillId"], 1, "{i}");
        assert_eq!(i["batchId"], 5, "{i}");
        assert_eq!(i["user"], "backfill", "{i}");
        assert_eq!(i["state"], "finished", "{i}");
    }
    let (_, one) = command(
        &w,
        "GetBatchInstance",
        json!({"batchInstanceId": rows[0].0}),
        None,
    );
    assert_eq!(one["payload"]["scheduleDate"], "2026-01-30", "{one}");
    // The batch's last success, for an alert on a batch that stopped succeeding.
    weft::init_tls();
    let text = reqwest::blocking::get(w.url.replace("/weft/service", "/metrics"))
        .and_then(|r| r.text())
        .expect("GET /metrics");
    assert!(
        text.lines().any(|l| l
            .starts_with(r#"weft_batch_last_success_timestamp_seconds{batch="nightly load"} "#)),
        "{text}"
    );
    // The answer as JSON; refusals: no such batch, no planned start, a range backwards.
    let (code, out, err) = cli(&["5", "--from", "2026-03-01", "--to", "2026-03-01", "--json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let answer: Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(
        answer["plannedStarts"],
        json!(["2026-03-01 02:00:00"]),
        "{answer}"
    );
    assert_eq!(answer["backfillId"], 2, "{answer}");
    // A day that fails says why, and the exit code says that one did not finish.
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("DROP TABLE stage")
        .expect("drop");
    let (code, out, err) = cli(&["5", "--from", "2026-03-02", "--to", "2026-03-02", "--wait"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("1/1: instance") && err.contains("failed: ") && err.contains("stage"),
        "{err}"
    );
    let (code, _, err) = cli(&["weekly", "--from", "2026-03-01", "--to", "2026-03-02"]);
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("no batch is named `weekly`"), "{err}");
    let (st, v) = command(
        &w,
        "BackfillBatch",
        json!({"batch": 5, "from": "2026-03-05", "to": "2026-03-01"}),
        None,
    );
    assert_eq!(st, 400, "{v}");
    assert_eq!(v["error"]["details"][0]["path"], "payload.to", "{v}");
}

/// UTC time `days` ago as the repository writes times.
fn days_ago(days: i64) -> String {
    (chrono::Utc::now() - chrono::Duration::days(days))
        .format("%Y-%m-%d %H:%M:%S%.3f")
        .to_string()
}

#[test]
fn retention_prunes_old_runs_their_logs_and_the_deploy_history_but_each_objects_newest_line() {
    let (w, _data) = crate::runs::setup_with(&[
        ("WEFT_PRUNE_INTERVAL_SECONDS", "1"),
        ("WEFT_KEEP_RUNS_DAYS", "10"),
        ("WEFT_KEEP_LOGS_DAYS", "5"),
        ("WEFT_KEEP_DEPLOYS_DAYS", "10"),
    ]);
    chain(&w);
    // Sheet 100 again: its first line is not its newest any more.
    deploy(
        &w,
        &crate::runs::sheet(
            100,
            (10, "/etl"),
            "Sql",
            "INSERT INTO raw VALUES (${n}, 'again')",
            &[],
            "raw",
        ),
    );
    let vars = json!([{"variableName": "n", "variableType": "String", "variableValue": "3"}]);
    let runs: Vec<i64> = (0..3)
        .map(|_| {
            let id = crate::runs::run(&w, &[("S", 100)], Some(vars.clone()));
            assert_eq!(wait(&w, id)["state"], "finished");
            id
        })
        .collect();
    let history_before: i64 = w
        .repo_value("SELECT COUNT(*) FROM deploy_history")
        .parse()
        .expect("count");
    w.repo_execute(&format!(
        "UPDATE batch_instances SET ended_at = '{}' WHERE id = {};
         UPDATE batch_instances SET ended_at = '{}' WHERE id = {};
         UPDATE deploy_history SET deployed_at = '{}';
         UPDATE deploys SET deployed_at = '{}';",
        days_ago(20),
        runs[0],
        days_ago(7),
        runs[1],
        days_ago(20),
        days_ago(20),
    ));
    // The event: the oldest run is gone (the next round of pruning, within a second).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (st, _) = command(
            &w,
            "GetBatchInstance",
            json!({"batchInstanceId": runs[0]}),
            None,
        );
        if st == 404 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never pruned");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The second stays without its log lines; the newest keeps them.
    let (_, second) = command(
        &w,
        "GetBatchInstance",
        json!({"batchInstanceId": runs[1]}),
        None,
    );
    assert_eq!(
        action(&second["payload"], 1000)["log"],
        json!(["(log removed by retention: setting keep_logs_days)"]),
        "{second}"
    );
    let (_, third) = command(
        &w,
        "GetBatchInstance",
        json!({"batchInstanceId": runs[2]}),
        None,
    );
    assert!(
        action(&third["payload"], 1000)["log"]
            .as_array()
            .is_some_and(|l| l
                .iter()
                .any(|x| x.as_str().is_some_and(|x| x.starts_with("Sql")))),
        "{third}"
    );
    // The deploy history keeps each object's newest line: one line less (sheet 100's
    // first), and an export still has every object.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let now: i64 = w
            .repo_value("SELECT COUNT(*) FROM deploy_history")
            .parse()
            .expect("count");
        if now == history_before - 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "history never pruned: {now}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (st, v) = command(&w, "ExportRepository", json!({}), None);
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        v["payload"]["files"].as_array().map(Vec::len),
        Some(6),
        "{v}"
    );
}

#[test]
fn a_backup_taken_during_a_run_restores_into_a_new_home_and_the_server_goes_on() {
    let (w, data) = setup();
    chain(&w);
    // A run in flight while the backup is taken: action 5000 waits for the data file's lock.
    let (gate, id) = held_chain(&w, &data);
    let backup = w.home.path().join("backup.db");
    let new_home = tempfile::tempdir().expect("home");
    match backend() {
        Backend::Sqlite => {
            let weft = |home: &std::path::Path, args: &[&str]| {
                let o = std::process::Command::new(weft_bin())
                    .arg("--home")
                    .arg(home)
                    .args(args)
                    .output()
                    .expect("weft");
                let (out, err) = text(&o);
                (o.status.code(), out, err)
            };
            let b = backup.display().to_string();
            let (code, out, err) = weft(w.home.path(), &["backup", &b]);
            assert_eq!(code, Some(0), "{out}{err}");
            assert!(out.contains("integrity checked"), "{out}");
            // Not over a file, and not a file that is no repository.
            assert_eq!(weft(w.home.path(), &["backup", &b]).0, Some(2));
            let junk = w.home.path().join("junk.db");
            std::fs::write(&junk, b"not a database").expect("junk");
            let (code, _, err) = weft(new_home.path(), &["restore", &junk.display().to_string()]);
            assert_eq!(code, Some(5), "{err}");
            assert!(
                !new_home.path().join("repository.db").exists(),
                "nothing restored"
            );
            // Not over the repository of a running server.
            let (code, _, err) = weft(w.home.path(), &["restore", &b, "--replace"]);
            assert_eq!(code, Some(4), "{err}");
            assert!(err.contains("stop it first"), "{err}");
            let (code, _, err) = weft(w.home.path(), &["restore", &b]);
            assert_eq!(code, Some(2), "{err}");
            let (code, out, err) = weft(new_home.path(), &["restore", &b]);
            assert_eq!(code, Some(0), "{out}{err}");
        }
        Backend::Postgres => {
            let pg = repository_server();
            let db = repository_database_of(&w);
            let b = backup.display().to_string();
            pg.client_tool("pg_dump", &["-Fc", "-f", &b, &db])
                .expect("pg_dump");
            let restored = format!("{db}_restored");
            pg.psql(&format!("CREATE DATABASE {restored}"))
                .expect("database");
            pg.client_tool("pg_restore", &["--no-owner", "-d", &restored, &b])
                .expect("pg_restore");
            std::fs::write(
                new_home.path().join("keyfile"),
                format!(
                    "0|postgresql|postgresql://127.0.0.1:{}/{restored}|weft|secret|sslmode=disable\n",
                    pg.port
                ),
            )
            .expect("keyfile");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(
                new_home.path().join("keyfile"),
                std::fs::Permissions::from_mode(0o600),
            )
            .expect("mode");
        }
    }
    // The running server went on: the run ends.
    gate.execute_batch("COMMIT").expect("let the lock go");
    assert_eq!(wait(&w, id)["state"], "finished");
    // A server on the restored repository has what was deployed and the run as it was at
    // the backup's moment (running then: now interrupted, as after any stop).
    let restored = Weft::start_in(new_home, &["--listen", "127.0.0.1:0"], &[]);
    let (_, tree) = command(&restored, "ListSheets", json!({}), None);
    assert_eq!(
        tree["payload"]["sheets"].as_array().map(Vec::len),
        Some(5),
        "{tree}"
    );
    let (st, inst) = command(
        &restored,
        "GetBatchInstance",
        json!({"batchInstanceId": id}),
        None,
    );
    assert_eq!(st, 200, "{inst}");
    assert_ne!(inst["payload"]["state"], "finished", "{inst}");
}

#[test]
fn a_backfill_killed_right_after_a_start_began_goes_on_without_beginning_it_twice() {
    let (w, data) = crate::runs::setup_with(&[("WEFT_FAULT", "after_backfill_start")]);
    deploy(
        &w,
        &crate::runs::sheet(
            140,
            (10, "/etl"),
            "Sql",
            "INSERT INTO stage VALUES (${batch_instance_id}, '${schedule_date}')",
            &[],
            "stage",
        ),
    );
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {"batches": [{"id": 5, "name": "nightly",
            "schedule": "daily 02:00", "enabled": false,
            "elements": [{"elementType": "S", "elementId": 140}]}]}}),
    );
    // The server dies right after the first start's instance and claim committed: maybe
    // before it answered (the backfill thread may begin the start first), so the answer
    // is not asked for; the backfill was committed before any start of it could begin.
    weft::init_tls();
    let _ = reqwest::blocking::Client::new()
        .post(&w.url)
        .header("content-type", "application/json")
        .body(
            json!({"command": "BackfillBatch",
                   "payload": {"batch": 5, "from": "2026-01-01", "to": "2026-01-03"}})
            .to_string(),
        )
        .send();
    let (status, home) = w.exited(std::time::Duration::from_secs(30));
    assert!(!status.success(), "{status:?}");
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    // The backfill goes on: three instances in all, one per day, none twice.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let listed = loop {
        let (_, v) = command(
            &w,
            "ListBatchInstances",
            json!({"backfillId": 1, "limit": 10}),
            None,
        );
        let listed = v["payload"]["instances"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if listed.len() == 3 && listed.iter().all(|i| i["end"].is_string()) {
            break listed;
        }
        assert!(std::time::Instant::now() < deadline, "{v}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut planned: Vec<&str> = listed
        .iter()
        .map(|i| i["plannedStart"].as_str().expect("plannedStart"))
        .collect();
    planned.sort_unstable();
    assert_eq!(
        planned,
        [
            "2026-01-01 02:00:00",
            "2026-01-02 02:00:00",
            "2026-01-03 02:00:00"
        ]
    );
    // The two after the kill ran; the one begun before it ended as a stop leaves it (its
    // actions had not started: nothing of it ran twice).
    let c = rusqlite::Connection::open(&data).expect("data");
    let days: Vec<String> = c
        .prepare("SELECT v FROM stage ORDER BY v")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert!(
        days.iter().filter(|d| *d == "2026-01-02").count() == 1
            && days.iter().filter(|d| *d == "2026-01-03").count() == 1
            && days.iter().filter(|d| *d == "2026-01-01").count() <= 1,
        "{days:?}"
    );
}

#[test]
fn when_slots_are_scarce_the_ready_action_of_the_highest_priority_runs_first() {
    let (w, data) = crate::runs::setup_with(&[("WEFT_MAX_PARALLEL_ACTIONS", "1")]);
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("CREATE TABLE pa (n INTEGER); CREATE TABLE pb (n INTEGER); CREATE TABLE pc (n INTEGER);")
        .expect("tables");
    let action = |id: i64, table: &str, priority: Option<i64>| {
        let mut attributes = json!({"module": "Sql", "name": format!("to {table}"),
            "action": format!("INSERT INTO {table} VALUES ({id})")});
        if let Some(p) = priority {
            attributes["priority"] = json!(p);
        }
        (
            json!({"id": id, "type": 0, "attributes": attributes}),
            json!({"id": id + 1, "type": 1, "attributes": {"field1": table, "objectTypeId": 1, "connectionId": 1}}),
            json!({"id": id + 1, "from": id, "to": id + 1}),
        )
    };
    let parts = [
        action(700, "pa", None),
        action(800, "pb", None),
        action(900, "pc", Some(7)),
    ];
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {"sheets": [{"id": 70,
            "attributes": {"name": "three", "folder_id": 10, "folder": "/etl"},
            "nodes": parts.iter().flat_map(|p| [p.0.clone(), p.1.clone()]).collect::<Vec<_>>(),
            "edges": parts.iter().map(|p| p.2.clone()).collect::<Vec<_>>()}]}}),
    );
    // The one slot's first action waits for the test's lock on the data file: which one it
    // is shows the choice.
    let gate = rusqlite::Connection::open(&data).expect("gate");
    gate.execute_batch("BEGIN IMMEDIATE").expect("lock");
    let id = crate::runs::run(&w, &[("S", 70)], None);
    crate::runs::wait_until_running(&w, id, 900, "Sql action 900");
    let (_, v) = command(&w, "GetBatchInstance", json!({"batchInstanceId": id}), None);
    let waiting: Vec<i64> = v["payload"]["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter(|a| a["state"] == "W")
        .map(|a| a["actionId"].as_i64().expect("id"))
        .collect();
    assert_eq!(waiting, [700, 800], "{v}");
    gate.execute_batch("COMMIT").expect("let go");
    assert_eq!(wait(&w, id)["state"], "finished");
    // A priority out of its range is refused at its place.
    let mut bad = action(990, "pa", Some(5000)).0;
    bad["id"] = json!(990);
    let (st, v) = command(
        &w,
        "DeployRepository",
        json!({"content": json!({"version": 1, "transformationData": {"sheets": [{"id": 99,
            "attributes": {"name": "bad", "folder_id": 10, "folder": "/etl"},
            "nodes": [bad], "edges": []}]}}).to_string()}),
        None,
    );
    assert_eq!(st, 422, "{v}");
    assert!(
        details(&v)
            .iter()
            .any(|(code, path, _)| code == "node.priority"
                && path == "transformationData.sheets[0].nodes[0].attributes.priority"),
        "{v}"
    );
}
