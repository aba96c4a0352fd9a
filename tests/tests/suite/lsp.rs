//! `weft lsp` driven by a real LSP client over standard input and output: Microsoft's
//! vscode-languageserver-protocol (what VS Code speaks through), from Node, installed by
//! `./test.sh` into `target/lsp-client`. On a copy of examples/jaffle_shop: the problems of
//! `weft check` as the text changes (in a `.dsr` document and in a `.sql` file its action
//! reads), cleared when fixed; hover documentation of a module's attribute and of table A;
//! go to definition from a table in SQL and in a test's `to` to the action that writes it;
//! formatting; a clean shutdown.

use crate::common;

use common::*;
use serde_json::{Value, json};
use std::path::Path;

/// The LSP position (line from 0, UTF-16 column) of the first `needle` in `text`, plus `ahead`
/// characters.
fn position(text: &str, needle: &str, ahead: usize) -> Value {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle} not in\n{text}"))
        + ahead;
    let line = text[..at].matches('\n').count();
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    json!({ "line": line, "character": text[start..at].encode_utf16().count() })
}

fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// Runs `steps` through the client: one answer per step.
fn drive(steps: &[Value], args: &[&str]) -> Vec<Value> {
    let modules = root().join("target/lsp-client/node_modules");
    assert!(
        modules.join("vscode-languageserver-protocol").is_dir(),
        "the LSP client is missing at {}: ./test.sh installs it (npm install --prefix target/lsp-client vscode-languageserver-protocol@3.17.5)",
        modules.display()
    );
    let script = tempfile::NamedTempFile::new().expect("script");
    std::fs::write(script.path(), serde_json::to_vec(steps).expect("json")).expect("write");
    let o = std::process::Command::new("node")
        .arg(root().join("tests/lsp/client.js"))
        .arg(weft_bin())
        .arg(script.path())
        .args(args)
        .env("NODE_PATH", &modules)
        .output()
        .expect("node");
    let (out, err) = text(&o);
    assert!(o.status.success(), "the client failed:\n{out}\n{err}");
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn an_editor_sees_problems_as_it_types_hovers_attributes_and_goes_to_the_writer_of_a_table() {
    let work = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("home");
    let ws = std::fs::canonicalize(work.path())
        .expect("canonical")
        .join("jaffle");
    weft_tests::documents::copy_tree(&root().join("examples/jaffle_shop"), &ws);
    let staging_path = ws.join("project/staging.dsr");
    let marts_path = ws.join("project/marts.dsr");
    let sql_path = ws.join("project/models/customers.sql");
    let staging = std::fs::read_to_string(&staging_path).expect("staging");
    let marts = std::fs::read_to_string(&marts_path).expect("marts");
    let sql = std::fs::read_to_string(&sql_path).expect("sql");
    let open = |path: &Path, text: &str, language: &str| {
        json!({ "notify": "textDocument/didOpen", "params": { "textDocument": {
            "uri": uri(path), "languageId": language, "version": 1, "text": text } } })
    };
    let change = |path: &Path, text: &str, version: u32| {
        json!({ "notify": "textDocument/didChange", "params": {
            "textDocument": { "uri": uri(path), "version": version },
            "contentChanges": [{ "text": text }] } })
    };
    let at = |method: &str, path: &Path, pos: Value| {
        json!({ "request": method, "params": {
            "textDocument": { "uri": uri(path) }, "position": pos } })
    };
    let typo = staging.replacen("materialize: \"view\"", "materialize: \"viw\"", 1);
    let broken_sql = sql.replacen(
        "select * from stg_customers",
        "select * fro stg_customers",
        1,
    );
    let messy = "{version: 1\ntransformationData: {}}";
    let trap = staging.replacen("{ unique: \"customer_id\" }", "{ unique: customer_id }", 1);
    let steps = vec![
        json!({ "spawn": { "cwd": ws, "env": { "WEFT_HOME": home.path() } },
                "initialize": { "processId": null, "rootUri": uri(&ws), "capabilities": {},
                                "workspaceFolders": [{ "uri": uri(&ws), "name": "jaffle" }],
                                "initializationOptions": { "project": "project",
                                                           "with": ["connections/sqlite.dsr"] } } }),
        open(&staging_path, &staging, "hjson"),
        json!({ "diagnostics": uri(&staging_path), "until": "empty" }),
        // A typo in an attribute: the module's own problem at the value's place.
        change(&staging_path, &typo, 2),
        json!({ "diagnostics": uri(&staging_path), "until": "Model.attribute" }),
        change(&staging_path, &staging, 3),
        json!({ "diagnostics": uri(&staging_path), "until": "empty" }),
        // A syntax error in SQL the action reads from a file, as typed in that file.
        open(&sql_path, &sql, "sql"),
        change(&sql_path, &broken_sql, 2),
        json!({ "diagnostics": uri(&sql_path), "until": "sql.syntax" }),
        change(&sql_path, &sql, 3),
        json!({ "diagnostics": uri(&sql_path), "until": "empty" }),
        // Hover: a module's attribute, table A's, a test kind; nothing on a folder.
        at(
            "textDocument/hover",
            &staging_path,
            position(&staging, "materialize:", 3),
        ),
        at(
            "textDocument/hover",
            &staging_path,
            position(&staging, "file:", 1),
        ),
        at(
            "textDocument/hover",
            &staging_path,
            position(&staging, "unique", 2),
        ),
        at(
            "textDocument/hover",
            &staging_path,
            position(&staging, "folder", 1),
        ),
        // Definition: a table read in SQL, a test's parent table, a word that is no table.
        at(
            "textDocument/definition",
            &sql_path,
            position(&sql, "stg_orders", 4),
        ),
        open(&marts_path, &marts, "hjson"),
        at(
            "textDocument/definition",
            &marts_path,
            position(&marts, "to: \"customers", 6),
        ),
        at(
            "textDocument/definition",
            &sql_path,
            position(&sql, "customer_id", 2),
        ),
        json!({ "request": "textDocument/formatting", "params": {
            "textDocument": { "uri": uri(&ws.join("project/new.dsr")) },
            "options": { "tabSize": 2, "insertSpaces": true } } }),
        open(&ws.join("project/new.dsr"), messy, "hjson"),
        json!({ "request": "textDocument/formatting", "params": {
            "textDocument": { "uri": uri(&ws.join("project/new.dsr")) },
            "options": { "tabSize": 2, "insertSpaces": true } } }),
        json!({ "request": "weft/unknown", "params": {} }),
        // HJSON's trap as it is typed: placed on the value that swallowed the brace; the
        // definitions of the last good check stay.
        change(&staging_path, &trap, 4),
        json!({ "diagnostics": uri(&staging_path), "until": "dsr.syntax" }),
        at(
            "textDocument/definition",
            &sql_path,
            position(&sql, "stg_orders", 4),
        ),
        json!({ "shutdown": true }),
    ];
    let answers = drive(&steps, &[]);
    assert_eq!(answers.len(), steps.len(), "{answers:#?}");
    let caps = &answers[0]["initialize"]["capabilities"];
    assert_eq!(caps["hoverProvider"], json!(true), "{caps}");
    assert_eq!(caps["definitionProvider"], json!(true), "{caps}");

    let typo_problem = answers[4]["diagnostics"]
        .as_array()
        .expect("list")
        .iter()
        .find(|d| d["code"] == "Model.attribute")
        .expect("the typo")
        .clone();
    assert_eq!(
        typo_problem["range"]["start"],
        position(&typo, "\"viw\"", 0),
        "{typo_problem}"
    );
    assert!(
        typo_problem["message"]
            .as_str()
            .expect("message")
            .contains("`materialize: viw`"),
        "{typo_problem}"
    );
    assert_eq!(typo_problem["severity"], json!(1), "an error");
    let sql_problem = &answers[9]["diagnostics"][0];
    assert_eq!(sql_problem["code"], "sql.syntax", "{sql_problem}");
    assert_eq!(
        sql_problem["range"]["start"]["line"],
        position(&broken_sql, "fro stg_customers", 0)["line"],
        "{sql_problem}"
    );

    let hover = |i: usize| {
        answers[i]["response"]["contents"]["value"]
            .as_str()
            .map(str::to_owned)
    };
    let materialize = hover(12).unwrap_or_else(|| panic!("{:#?}", &answers[10..]));
    assert!(
        materialize.starts_with("**materialize** (text, default `table`) of `Model`")
            && materialize.contains("table, view or incremental"),
        "{materialize}"
    );
    assert!(
        hover(13)
            .expect("file")
            .contains("from a file of the project")
    );
    assert!(
        hover(14)
            .expect("unique")
            .starts_with("**unique** (data test)")
    );
    assert_eq!(answers[15]["response"], Value::Null, "a sheet's attribute");

    // stg_orders is written by the action stg_orders of staging.dsr.
    let to_staging = &answers[16]["response"];
    assert_eq!(to_staging.as_array().map(Vec::len), Some(1), "{to_staging}");
    assert_eq!(to_staging[0]["uri"], uri(&staging_path));
    assert_eq!(
        to_staging[0]["range"]["start"],
        position(&staging, "\"stg_orders\"", 0),
        "{to_staging}"
    );
    let to_customers = &answers[18]["response"];
    assert_eq!(to_customers[0]["uri"], uri(&marts_path), "{to_customers}");
    assert_eq!(
        to_customers[0]["range"]["start"],
        position(&marts, "\"customers\"", 0)
    );
    assert_eq!(answers[19]["response"], Value::Null, "a column is no table");

    assert_eq!(
        answers[20]["response"],
        Value::Null,
        "no such file, not open"
    );
    let edit = &answers[22]["response"][0];
    assert_eq!(
        edit["newText"], "{\n  version: 1\n  transformationData: {}\n}\n",
        "{edit}"
    );
    assert_eq!(
        answers[23]["error"]["code"],
        json!(-32601),
        "{}",
        answers[23]
    );
    let trap_problem = &answers[25]["diagnostics"][0];
    assert_eq!(
        trap_problem["range"]["start"],
        position(&trap, "customer_id }", 0),
        "{trap_problem}"
    );
    assert!(
        trap_problem["message"]
            .as_str()
            .expect("message")
            .starts_with("the value of `unique`, `customer_id }, { not_null: \"customer_id\" }]`, has no quotes"),
        "{trap_problem}"
    );
    assert_eq!(answers[26]["response"], answers[16]["response"]);
    assert_eq!(answers[27]["exit"], json!(0));
}

#[test]
fn an_editor_that_goes_away_without_a_word_ends_the_server() {
    let mut child = std::process::Command::new(weft_bin())
        .arg("lsp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("weft lsp");
    drop(child.stdin.take());
    let o = child.wait_with_output().expect("ends");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(out.is_empty(), "nothing but the protocol on stdout: {out}");
    assert!(err.starts_with("weft lsp: "), "{err}");
}
