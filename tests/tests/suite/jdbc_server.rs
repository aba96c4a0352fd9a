//! End to end with JDBC: `bin/jdbcManager add` installs the PostgreSQL driver from a `file:`
//! entry into an installation's `drivers/`, the real `weft serve` of that installation runs a
//! Transfer from a real PostgreSQL server into SQLite, and a server that finds no Java still
//! runs its SQLite actions and says, for the JDBC one, what is missing.

use crate::common;

use common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use weft_tests::postgres::Postgres;

/// An installation (INSTALL) with a jdbcList offering the Debian PostgreSQL jar, installed.
fn installation(dir: &Path) {
    installation_of(dir, "pg", "PostgreSQL", "postgresql.jar");
}

/// An installation (INSTALL) whose jdbcList offers the Debian jar `jar` as `name`, installed
/// by `bin/jdbcManager add`.
fn installation_of(dir: &Path, name: &str, description: &str, jar: &str) {
    std::fs::create_dir_all(dir.join("drivers")).expect("drivers");
    std::fs::write(
        dir.join("jdbcList"),
        format!("{name}:{description} (Debian):file:/usr/share/java/{jar}\n"),
    )
    .expect("jdbcList");
    let out = Command::new(root().join("bin/jdbcManager"))
        .args(["add", name])
        .env("WEFT_BIN", weft_bin())
        .env("WEFT_INSTALL", dir)
        .output()
        .expect("jdbcManager");
    let (o, e) = text(&out);
    assert!(out.status.success(), "jdbcManager add failed: {o}{e}");
    assert!(dir.join(format!("drivers/{name}.jar")).is_file());
}

/// Connections 1 (SQLite `data.db` in the home) and 2 (PostgreSQL), and a sheet 1 whose
/// Transfer copies `e2e_src` into `dst`, and a sheet 2 that works on SQLite only.
fn prepare(w: &Weft, pg_url: &str) -> std::path::PathBuf {
    let data = w.home.path().join("data.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch(
            "CREATE TABLE dst (id INTEGER, name TEXT, day TEXT);
             CREATE TABLE lite_src (n INTEGER); INSERT INTO lite_src VALUES (7);
             CREATE TABLE lite_dst (n INTEGER);",
        )
        .expect("tables");
    w.add_keys(&format!(
        "1|sqlite|{}|||\n2|jdbc|{pg_url}|weft|secret|\n",
        data.display()
    ));
    let object = |id: i64, table: &str, conn: i64| json!({"id": id, "type": 1, "attributes": {"field1": table, "objectTypeId": 1, "connectionId": conn}});
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/jdbc"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"},
                        {"id": 2, "name": "warehouse", "type": "jdbc"}],
        "sheets": [
          {"id": 1, "attributes": {"name": "from postgres", "folder_id": 10, "folder": "/jdbc"},
           "nodes": [
             {"id": 10, "type": 0, "attributes": {"module": "Transfer", "name": "copy",
               "action": "SELECT id, name, day FROM e2e_src WHERE id > ${min_id}"}},
             object(11, "e2e_src", 2), object(19, "dst", 1)],
           "edges": [{"id": 1, "from": 11, "to": 10}, {"id": 2, "from": 10, "to": 19}]},
          {"id": 2, "attributes": {"name": "sqlite only", "folder_id": 10, "folder": "/jdbc"},
           "nodes": [
             {"id": 20, "type": 0, "attributes": {"module": "Insert", "name": "lite",
               "action": "SELECT n FROM lite_src"}},
             object(21, "lite_src", 1), object(29, "lite_dst", 1)],
           "edges": [{"id": 3, "from": 21, "to": 20}, {"id": 4, "from": 20, "to": 29}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "deploy failed: {v}");
    data
}

fn run_and_wait(w: &Weft, sheet: i64) -> Value {
    let body = json!({"command": "RunElements", "payload": {"batchExecution": {
        "batchName": "jdbc e2e", "user": "tester",
        "elementList": [{"elementType": "S", "elementId": sheet}]}},
        "variableList": [{"variableName": "min_id", "variableType": "String", "variableValue": "1"}]});
    let (st, v) = post(&w.url, body.to_string().into_bytes());
    assert_eq!(st, 200, "{v}");
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    let body = json!({"command": "WaitBatchInstance",
        "payload": {"batchInstanceId": id, "timeoutSeconds": 120}});
    let (st, v) = post(&w.url, body.to_string().into_bytes());
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["timedOut"], false, "{v}");
    v["payload"].clone()
}

#[test]
fn jdbc_manager_installs_the_driver_and_the_server_transfers_from_postgres() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql(
        "CREATE TABLE e2e_src (id int PRIMARY KEY, name text, day date);
         INSERT INTO e2e_src VALUES (1, 'skipped', '2026-01-01'), (2, 'two', '2026-10-25'),
           (3, 'drei', '2027-03-28');",
    )
    .expect("setup");
    let install = tempfile::tempdir().expect("install");
    installation(install.path());
    let install_dir = install.path().to_string_lossy().into_owned();

    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0"],
        &[("WEFT_INSTALL", install_dir.as_str())],
    );
    let data = prepare(&w, &pg.jdbc_url());
    let inst = run_and_wait(&w, 1);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(inst["actions"][0]["state"], "F", "{inst}");
    assert_eq!(
        common::actions::rows(&data, "SELECT * FROM dst ORDER BY id"),
        vec!["2|two|2026-10-25", "3|drei|2027-03-28"]
    );
    drop(w);

    // No Java: JAVA_HOME unset, no `java` on PATH, no setting. SQLite work goes on; the
    // JDBC action fails with its reason.
    let empty = tempfile::tempdir().expect("empty PATH dir");
    let path = empty.path().to_string_lossy().into_owned();
    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0"],
        &[
            ("WEFT_INSTALL", install_dir.as_str()),
            ("PATH", path.as_str()),
            ("JAVA_HOME", ""),
        ],
    );
    prepare(&w, &pg.jdbc_url());
    let inst = run_and_wait(&w, 2);
    assert_eq!(inst["actions"][0]["state"], "F", "{inst}");
    let inst = run_and_wait(&w, 1);
    assert_eq!(inst["actions"][0]["state"], "E", "{inst}");
    let text = inst["actions"][0]["error"].to_string();
    assert!(
        text.contains("no Java runtime found") && text.contains("JAVA_HOME"),
        "{inst}"
    );
}

#[test]
fn the_delivered_debian_entries_of_jdbc_list_install() {
    let install = tempfile::tempdir().expect("install");
    std::fs::create_dir_all(install.path().join("drivers")).expect("drivers");
    let list = std::fs::read_to_string(root().join("jdbcList")).expect("the delivered jdbcList");
    std::fs::write(install.path().join("jdbcList"), &list).expect("copy");
    let mut tried = 0;
    for line in list
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let mut parts = line.splitn(3, ':');
        let (name, url) = (parts.next().expect("name"), parts.nth(1).expect("url"));
        let Some(path) = url.strip_prefix("file:") else {
            continue;
        };
        let out = Command::new(root().join("bin/jdbcManager"))
            .args(["add", name])
            .env("WEFT_BIN", weft_bin())
            .env("WEFT_INSTALL", install.path())
            .output()
            .expect("jdbcManager");
        let (o, e) = text(&out);
        assert!(out.status.success(), "add {name} failed: {o}{e}");
        let installed = std::fs::read(install.path().join("drivers").join(format!("{name}.jar")))
            .expect("installed jar");
        assert_eq!(
            installed,
            std::fs::read(path).expect("source jar"),
            "{name}"
        );
        tried += 1;
    }
    assert!(
        tried >= 5,
        "only {tried} file: entries in the delivered jdbcList"
    );
}

/// Sheet 3: a Transfer of `many` (SQLite, connection 1) into `pg_dst` (PostgreSQL,
/// connection 2); its action is 30.
fn deploy_into_postgres(w: &Weft, pg_url: &str, rows: i64) -> std::path::PathBuf {
    let data = w.home.path().join("data.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch(&format!(
            "CREATE TABLE many (id INTEGER, name TEXT);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})
             INSERT INTO many SELECT i, 'row ' || i FROM n;"
        ))
        .expect("source");
    w.add_keys(&format!(
        "1|sqlite|{}|||\n2|jdbc|{pg_url}|weft|secret|\n",
        data.display()
    ));
    let object = |id: i64, table: &str, conn: i64| json!({"id": id, "type": 1, "attributes": {"field1": table, "objectTypeId": 1, "connectionId": conn}});
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/jdbc"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"},
                        {"id": 2, "name": "warehouse", "type": "jdbc"}],
        "sheets": [
          {"id": 3, "attributes": {"name": "into postgres", "folder_id": 10, "folder": "/jdbc"},
           "nodes": [
             {"id": 30, "type": 0, "attributes": {"module": "Transfer", "name": "load",
               "action": "SELECT id, name FROM many"}},
             object(31, "many", 1), object(39, "pg_dst", 2)],
           "edges": [{"id": 5, "from": 31, "to": 30}, {"id": 6, "from": 30, "to": 39}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "deploy failed: {v}");
    data
}

#[test]
fn a_kill_right_after_a_postgres_commit_counts_the_transfer_once() {
    const ROWS: i64 = 5_000;
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql("CREATE TABLE pg_dst (id int, name text);")
        .expect("target");
    let install = tempfile::tempdir().expect("install");
    installation(install.path());
    let install_dir = install.path().to_string_lossy().into_owned();
    let env = [
        ("WEFT_INSTALL", install_dir.as_str()),
        ("WEFT_FAULT", "after_target_commit"),
    ];
    let w = Weft::start_with(&["--listen", "127.0.0.1:0"], &env);
    deploy_into_postgres(&w, &pg.jdbc_url(), ROWS);
    let body = json!({"command": "RunElements", "payload": {"batchExecution": {
        "batchName": "kill", "user": "tester",
        "elementList": [{"elementType": "S", "elementId": 3}]}}});
    let (st, v) = post(&w.url, body.to_string().into_bytes());
    assert_eq!(st, 200, "{v}");
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    let (status, home) = w.exited(std::time::Duration::from_secs(120));
    assert!(!status.success(), "stopped at the fault: {status}");
    let count = |sql: &str| pg.psql(sql).expect("count");
    assert_eq!(count("SELECT COUNT(*) FROM pg_dst"), ROWS.to_string());
    assert_eq!(count("SELECT COUNT(*) FROM weft_commit_marker"), "1");
    // The next start finds the marker in PostgreSQL: finished, not run again.
    let w = Weft::start_in(
        home,
        &["--listen", "127.0.0.1:0"],
        &[("WEFT_INSTALL", install_dir.as_str())],
    );
    let body = json!({"command": "GetBatchInstance", "payload": {"batchInstanceId": id}});
    let (_, v) = post(&w.url, body.to_string().into_bytes());
    assert_eq!(v["payload"]["state"], "finished", "{v}");
    assert_eq!(v["payload"]["actions"][0]["state"], "F", "{v}");
    let body = json!({"command": "RestartBatchInstance", "payload": {"batchInstanceId": id}});
    let (st, v) = post(&w.url, body.to_string().into_bytes());
    assert_eq!(st, 409, "{v}");
    assert_eq!(
        count("SELECT COUNT(*) FROM pg_dst"),
        ROWS.to_string(),
        "every row once"
    );
}

/// csvjdbc says its search-string escape is `_`, a wildcard itself, and reports no schema:
/// a CSV file whose name has an underscore, under a connection with a schema, is found by
/// the deploy's object check (no false `object.missing`), and the sheet runs. A file that
/// is not there still gets the warning.
#[test]
fn a_csv_table_through_csvjdbc_is_no_false_missing_object_and_loads() {
    let install = tempfile::tempdir().expect("install");
    installation_of(install.path(), "csv", "CSV", "csvjdbc.jar");
    let install_dir = install.path().to_string_lossy().into_owned();
    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0"],
        &[("WEFT_INSTALL", install_dir.as_str())],
    );
    let csv = w.home.path().join("csv");
    std::fs::create_dir_all(&csv).expect("csv dir");
    std::fs::write(
        csv.join("stg_people.csv"),
        "id,name\n1,Ada Lovelace\n2,\"Hopper, Grace\"\n",
    )
    .expect("csv");
    let data = w.home.path().join("data.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("CREATE TABLE people (id INTEGER, name TEXT);")
        .expect("target");
    w.add_keys(&format!(
        "1|sqlite|{}|||\n3|jdbc|jdbc:relique:csv:{}|||columnTypes=Integer,String\n",
        data.display(),
        csv.display()
    ));
    let object = |id: i64, table: &str, conn: i64| json!({"id": id, "type": 1, "attributes": {"field1": table, "objectTypeId": 1, "connectionId": conn}});
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/csv"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"},
                        {"id": 3, "name": "files", "type": "jdbc", "schema": "files"}],
        "sheets": [
          {"id": 4, "attributes": {"name": "from csv", "folder_id": 10, "folder": "/csv"},
           "nodes": [
             {"id": 40, "type": 0, "attributes": {"module": "Transfer", "name": "load",
               "action": "SELECT id, name FROM stg_people"}},
             object(41, "stg_people", 3), object(42, "stg_nobody", 3), object(49, "people", 1)],
           "edges": [{"id": 7, "from": 41, "to": 40}, {"id": 8, "from": 42, "to": 40},
                     {"id": 9, "from": 40, "to": 49}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "deploy failed: {v}");
    let missing = warnings(&v, "object.missing");
    assert_eq!(missing.len(), 1, "{v}");
    assert!(missing[0].contains("stg_nobody"), "{missing:?}");
    let inst = run_and_wait(&w, 4);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(
        common::actions::rows(&data, "SELECT id, name FROM people ORDER BY id"),
        vec!["1|Ada Lovelace", "2|Hopper, Grace"]
    );
}
