//! End to end: batch runs against the real server and real SQLite data connections. Sheets
//! chained through their tables run in data order whatever order they were deployed and
//! named in; a folder runs everything below it; variables reach the SQL; an error skips
//! exactly its dependants; halt (which stops running actions) and restart; unknown elements
//! and cycles are refused.

use crate::common;

use common::*;
use serde_json::{Value, json};

/// A server with folder 10 `/etl`, connection 1 (type sqlite) whose key file entry is a real
/// SQLite file holding `raw`, `stage`, `mart` and `other`.
pub(crate) fn setup() -> (Weft, std::path::PathBuf) {
    setup_with(&[])
}

/// [`setup`] with extra environment for the server.
pub(crate) fn setup_with(env: &[(&str, &str)]) -> (Weft, std::path::PathBuf) {
    let w = Weft::start_with(&["--listen", "127.0.0.1:0"], env);
    let data = w.home.path().join("data.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch(
            "CREATE TABLE raw (id INTEGER, v TEXT);
             INSERT INTO raw VALUES (1, 'a'), (2, 'b');
             CREATE TABLE stage (id INTEGER, v TEXT);
             CREATE TABLE mart (id INTEGER, v TEXT);
             CREATE TABLE other (n INTEGER);
             CREATE TABLE big (x INTEGER);
             CREATE TABLE after_big (n INTEGER);",
        )
        .expect("tables");
    w.add_keys(&format!("1|sqlite|{}|||\n", data.display()));
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/etl"}, {"id": 11, "path": "/etl/marts"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}]}}),
    );
    (w, data)
}

pub(crate) fn deploy(w: &Weft, doc: &Value) {
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "deploy failed: {v}");
}

/// A one-action sheet: `sources` -> action -> `target`, ids from `id`.
pub(crate) fn sheet(
    id: i64,
    folder: (i64, &str),
    module: &str,
    sql: &str,
    sources: &[&str],
    target: &str,
) -> Value {
    let action = id * 10;
    let mut nodes = vec![
        json!({"id": action, "type": 0, "attributes": {"module": module, "name": format!("step {id}"), "action": sql}}),
    ];
    let mut edges = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        let n = action + 1 + i as i64;
        nodes.push(json!({"id": n, "type": 1, "attributes": {"field1": s, "objectTypeId": 1, "connectionId": 1}}));
        edges.push(json!({"id": n, "from": n, "to": action}));
    }
    let t = action + 9;
    nodes.push(json!({"id": t, "type": 1, "attributes": {"field1": target, "objectTypeId": 1, "connectionId": 1}}));
    edges.push(json!({"id": t, "from": action, "to": t}));
    json!({"version": 1, "transformationData": {"sheets": [{"id": id,
        "attributes": {"name": format!("sheet {id}"), "folder_id": folder.0, "folder": folder.1}, "nodes": nodes, "edges": edges}]}})
}

pub(crate) fn command(
    w: &Weft,
    command: &str,
    payload: Value,
    variables: Option<Value>,
) -> (u16, Value) {
    let mut body = json!({"command": command, "payload": payload});
    if let Some(v) = variables {
        body["variableList"] = v;
    }
    post(&w.url, body.to_string().into_bytes())
}

pub(crate) fn run(w: &Weft, elements: &[(&str, i64)], variables: Option<Value>) -> i64 {
    let list: Vec<Value> = elements
        .iter()
        .map(|(t, id)| json!({"elementType": t, "elementId": id}))
        .collect();
    let (st, v) = command(
        w,
        "RunElements",
        json!({"batchExecution": {"batchName": "test", "user": "tester", "elementList": list}}),
        variables,
    );
    assert_eq!(st, 200, "{v}");
    v["payload"]["batchInstanceId"]
        .as_i64()
        .expect("batchInstanceId")
}

pub(crate) fn wait(w: &Weft, id: i64) -> Value {
    let (st, v) = command(
        w,
        "WaitBatchInstance",
        json!({"batchInstanceId": id, "timeoutSeconds": 60}),
        None,
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["timedOut"], false, "{v}");
    v["payload"].clone()
}

pub(crate) fn action(inst: &Value, id: i64) -> &Value {
    inst["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .find(|a| a["actionId"] == id)
        .unwrap_or_else(|| panic!("action {id} in {inst}"))
}

pub(crate) fn rows(path: &std::path::Path, sql: &str) -> Vec<String> {
    let c = rusqlite::Connection::open(path).expect("open");
    let mut st = c.prepare(sql).expect("prepare");
    st.query_map([], |r| {
        Ok(format!(
            "{}|{}",
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?
        ))
    })
    .expect("query")
    .collect::<Result<_, _>>()
    .expect("rows")
}

/// Three sheets chained raw -> stage -> mart, deployed in reverse order.
pub(crate) fn chain(w: &Weft) {
    deploy(
        w,
        &sheet(
            300,
            (11, "/etl/marts"),
            "Insert",
            "SELECT id, v FROM stage",
            &["stage"],
            "mart",
        ),
    );
    deploy(
        w,
        &sheet(
            200,
            (10, "/etl"),
            "Insert",
            "SELECT id, v FROM raw",
            &["raw"],
            "stage",
        ),
    );
    deploy(
        w,
        &sheet(
            100,
            (10, "/etl"),
            "Sql",
            "INSERT INTO raw VALUES (${n}, '${label}')",
            &[],
            "raw",
        ),
    );
}

/// Runs the three sheets of [`chain`] with the variables their first action needs, and
/// answers the finished instance, once every row reached `mart` once.
fn run_chain(w: &Weft, data: &std::path::Path) -> Value {
    let vars = json!([{"variableName": "n", "variableType": "String", "variableValue": "3"},
                      {"variableName": "label", "variableType": "String", "variableValue": "c"}]);
    let id = run(w, &[("S", 300), ("S", 200), ("S", 100)], Some(vars));
    let inst = wait(w, id);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(
        rows(data, "SELECT id, v FROM mart ORDER BY id"),
        vec!["1|a", "2|b", "3|c"],
        "mart got every row once, the new one too"
    );
    inst
}

#[test]
fn chained_sheets_run_in_data_order_with_variables() {
    let (w, data) = setup();
    chain(&w);
    let inst = run_chain(&w, &data);
    // Each action started after what it waits for ended.
    let (a, b, c) = (
        action(&inst, 1000),
        action(&inst, 2000),
        action(&inst, 3000),
    );
    assert!(
        b["start"].as_str() >= a["end"].as_str() && c["start"].as_str() >= b["end"].as_str(),
        "{inst}"
    );
    assert_eq!(c["rowsWritten"], 3);
    assert!(
        c["log"].as_array().is_some_and(|l| !l.is_empty()),
        "the plugin's log is kept: {inst}"
    );
    assert_eq!(inst["batchName"], "test");
    assert_eq!(inst["user"], "tester");
    // Without the variables, the action that uses them fails and names the variable.
    let id = run(&w, &[("A", 1000)], None);
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "failed");
    assert!(
        action(&inst, 1000)["error"]
            .as_str()
            .unwrap_or("")
            .contains("variable `n` is not set"),
        "{inst}"
    );
}

#[test]
fn a_folder_runs_everything_below_it() {
    let (w, data) = setup();
    chain(&w);
    let vars = json!([{"variableName": "n", "variableValue": 7}, {"variableName": "label", "variableValue": "g"}]);
    let id = run(&w, &[("F", 10)], Some(vars));
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(
        inst["actions"].as_array().map(Vec::len),
        Some(3),
        "the subfolder's sheet too"
    );
    assert_eq!(
        rows(&data, "SELECT id, v FROM mart ORDER BY id"),
        vec!["1|a", "2|b", "7|g"]
    );
    let (st, v) = command(&w, "ListBatchInstances", json!({}), None);
    assert_eq!(st, 200);
    assert_eq!(v["payload"]["instances"][0]["batchInstanceId"], id);
}

/// Sheet 70 `setup` (action 700 `create`: drop and create `ordered`) and sheet 75 `loads`
/// (five actions, each inserting a row into `ordered`, each with the extra attributes
/// `extra`; the DDL's SQL unchecked unless `ddl_known`), deployed on `w`; then ten runs of
/// both, each checked: finished, five rows, every load started after the DDL ended.
fn ddl_and_loads_run_ten_times(w: &Weft, data: &std::path::Path, extra: Value, ddl_known: bool) {
    let mut load_nodes = vec![
        json!({"id": 751, "type": 1, "attributes": {"field1": "ordered", "objectTypeId": 1, "connectionId": 1}}),
    ];
    let mut load_edges = Vec::new();
    for k in 0..5 {
        let id = 760 + k;
        let mut attributes = json!({"module": "Sql", "name": format!("load {k}"),
            "action": format!("INSERT INTO ordered VALUES ({k})")});
        if let (Some(a), Some(e)) = (attributes.as_object_mut(), extra.as_object()) {
            a.extend(e.clone());
        }
        load_nodes.push(json!({"id": id, "type": 0, "attributes": attributes}));
        load_edges.push(json!({"id": id + 10, "from": id, "to": 751}));
    }
    deploy(
        w,
        &json!({"version": 1, "transformationData": {"sheets": [
            {"id": 70, "attributes": {"name": "setup", "folder_id": 10, "folder": "/etl"},
             "nodes": [
                {"id": 700, "type": 0, "attributes": {"module": "Sql", "name": "create",
                  "action": "DROP TABLE IF EXISTS ordered; CREATE TABLE ordered (n INTEGER)",
                  "validateSql": ddl_known}},
                {"id": 701, "type": 1, "attributes": {"field1": "ordered", "objectTypeId": 1, "connectionId": 1}}],
             "edges": [{"id": 702, "from": 700, "to": 701}]},
            {"id": 75, "attributes": {"name": "loads", "folder_id": 10, "folder": "/etl"},
             "nodes": load_nodes, "edges": load_edges}]}}),
    );
    for _ in 0..10 {
        let id = run(w, &[("S", 70), ("S", 75)], None);
        let inst = wait(w, id);
        assert_eq!(inst["state"], "finished", "{inst}");
        assert_eq!(count(data, "ordered"), 5);
        let time = |a: &Value, at: &str| a[at].as_str().map(str::to_owned).expect("a time");
        let actions = inst["actions"].as_array().cloned().unwrap_or_default();
        assert_eq!(actions.len(), 6, "{inst}");
        let create = actions
            .iter()
            .find(|a| a["actionId"] == 700)
            .map(|a| time(a, "end"))
            .expect("create");
        for a in actions.iter().filter(|a| a["actionId"] != 700) {
            assert!(time(a, "start") >= create, "{a} started before {create}");
        }
    }
}

/// DDL before the loads, in one run, said with `after` (by the DDL's path in another sheet),
/// here with `validateSql: false` on the DDL, so that it is not known from the SQL.
#[test]
fn after_orders_ddl_before_the_loads_of_one_run_across_sheets() {
    let (w, data) = setup();
    ddl_and_loads_run_ten_times(&w, &data, json!({"after": ["/etl/setup/create"]}), false);
}

/// DDL before the loads of its table without a word: the deploy knows from the SQL that
/// action 700 drops and creates `ordered`, which the five loads write.
#[test]
fn ddl_goes_before_the_loads_of_its_table_in_one_run() {
    let (w, data) = setup();
    ddl_and_loads_run_ten_times(&w, &data, json!({}), true);
}

/// Sheets without object nodes: each action names its connection (the sheet's, or its own
/// by id), and the deploy takes the objects from the SQL. The load in another sheet reads
/// what the staging action creates, so it runs after it; the sheet shows the objects.
#[test]
fn objects_taken_from_the_sql_order_a_run_across_sheets() {
    let (w, data) = setup();
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {"sheets": [
            {"id": 80, "attributes": {"name": "stage", "folder_id": 10, "folder": "/etl", "connection": "data"},
             "nodes": [{"id": 800, "type": 0, "attributes": {"module": "Sql", "name": "stage",
                "action": "DROP TABLE IF EXISTS s_orders; CREATE TABLE s_orders AS SELECT id, v FROM raw"}}],
             "edges": []},
            {"id": 81, "attributes": {"name": "mart", "folder_id": 10, "folder": "/etl"},
             "nodes": [{"id": 810, "type": 0, "attributes": {"module": "Sql", "name": "load", "connection": 1,
                "action": "DELETE FROM mart; INSERT INTO mart WITH o AS (SELECT id, v FROM s_orders) SELECT id, v FROM o"}}],
             "edges": []}]}}),
    );
    for _ in 0..3 {
        let id = run(&w, &[("S", 81), ("S", 80)], None);
        let inst = wait(&w, id);
        assert_eq!(inst["state"], "finished", "{inst}");
        let actions = inst["actions"].as_array().cloned().unwrap_or_default();
        let at = |id: i64, when: &str| {
            actions
                .iter()
                .find(|a| a["actionId"] == id)
                .and_then(|a| a[when].as_str())
                .map(str::to_owned)
                .expect("a time")
        };
        assert!(at(810, "start") >= at(800, "end"), "{inst}");
        assert_eq!(
            rows(&data, "SELECT id, v FROM mart ORDER BY id"),
            vec!["1|a", "2|b"]
        );
    }
    let (st, v) = command(&w, "GetSheet", json!({"sheetId": 81}), None);
    assert_eq!(st, 200, "{v}");
    let answer = v.to_string();
    assert!(
        answer.contains("s_orders") && answer.contains("-810001"),
        "{v}"
    );
    // Lineage across the repository: who feeds `s_orders`, and what it feeds.
    let (st, v) = command(&w, "GetLineage", json!({"table": "S_ORDERS"}), None);
    assert_eq!(st, 200, "{v}");
    let ids = |list: &str| -> Vec<i64> {
        v["payload"][list]
            .as_array()
            .map(|a| a.iter().filter_map(|x| x["actionId"].as_i64()).collect())
            .unwrap_or_default()
    };
    assert_eq!(
        (ids("writers"), ids("readers")),
        (vec![800], vec![810]),
        "{v}"
    );
    assert_eq!(v["payload"]["writers"][0]["folder"], "/etl", "{v}");
    // One step further each way: what the writer reads, what the reader writes.
    let tables = |who: &str, which: &str| -> Vec<String> {
        v["payload"][who][0][which]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t["table"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(tables("writers", "reads"), vec!["raw"], "{v}");
    assert_eq!(tables("readers", "writes"), vec!["mart"], "{v}");
    let o = std::process::Command::new(weft_bin())
        .args(["lineage", "s_orders", "--url", &w.url])
        .env("WEFT_HOME", w.home.path())
        .output()
        .expect("weft lineage");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        out.contains("s_orders written by: 1\n  /etl/stage/stage\t(action 800")
            && out.contains("      reads raw\n")
            && out.contains("s_orders read by: 1\n  /etl/mart/load\t(action 810")
            && out.contains("      writes mart\n"),
        "{out}"
    );
    let (st, v) = command(&w, "GetLineage", json!({"table": ""}), None);
    assert_eq!(st, 400, "{v}");
    // Elements by path: a folder, a sheet, an action.
    for (kind, path, actions) in [
        ("F", "/etl", 2),
        ("S", "/etl/stage", 1),
        ("A", "/etl/mart/load", 1),
    ] {
        let (st, v) = command(
            &w,
            "RunElements",
            json!({"batchExecution": {"batchName": "by path", "user": "t",
                "elementList": [{"elementType": kind, "elementId": path}]}}),
            None,
        );
        assert_eq!(st, 200, "{v}");
        let inst = wait(&w, v["payload"]["batchInstanceId"].as_i64().expect("id"));
        assert_eq!(inst["state"], "finished", "{inst}");
        assert!(
            inst["actions"]
                .as_array()
                .is_some_and(|a| a.len() >= actions),
            "{path}: {inst}"
        );
    }
    let (st, v) = command(
        &w,
        "RunElements",
        json!({"batchExecution": {"batchName": "by path", "user": "t",
            "elementList": [{"elementType": "S", "elementId": "/etl/nowhere"}]}}),
        None,
    );
    assert_eq!(st, 404, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("`/etl/nowhere`: no sheet has this path")),
        "{v}"
    );
    let o = std::process::Command::new(weft_bin())
        .args(["run", "--sheet", "/etl/mart", "--wait", "--url", &w.url])
        .env("WEFT_HOME", w.home.path())
        .output()
        .expect("weft run");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
}

#[test]
fn an_error_skips_exactly_its_dependants() {
    let (w, data) = setup();
    chain(&w);
    // Break the middle step: a column that does not exist.
    deploy(
        &w,
        &sheet(
            200,
            (10, "/etl"),
            "Insert",
            "SELECT id, v AS nope FROM raw",
            &["raw"],
            "stage",
        ),
    );
    deploy(
        &w,
        &sheet(
            400,
            (10, "/etl"),
            "Sql",
            "INSERT INTO other VALUES (42)",
            &[],
            "other",
        ),
    );
    let vars = json!([{"variableName": "n", "variableValue": "3"}, {"variableName": "label", "variableValue": "c"}]);
    let id = run(&w, &[("F", 10)], Some(vars));
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "failed");
    assert_eq!(action(&inst, 1000)["state"], "F");
    assert_eq!(action(&inst, 2000)["state"], "E");
    assert!(
        action(&inst, 2000)["error"]
            .as_str()
            .unwrap_or("")
            .contains("nope"),
        "{inst}"
    );
    assert_eq!(
        action(&inst, 3000)["state"],
        "S",
        "the dependant is skipped"
    );
    assert_eq!(
        action(&inst, 4000)["state"],
        "F",
        "the independent action goes on"
    );
    let other: i64 = rusqlite::Connection::open(&data)
        .expect("data")
        .query_row("SELECT COUNT(*) FROM other", [], |r| r.get(0))
        .expect("count");
    assert_eq!(other, 1);
}

/// Waits until action `action` of instance `id` runs and its first log line (the statement
/// as run) is stored: a running action's log is seen before it ends.
pub(crate) fn wait_until_running(w: &Weft, id: i64, action_id: i64, first_line: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (_, v) = command(w, "GetBatchInstance", json!({"batchInstanceId": id}), None);
        let a = action(&v["payload"], action_id);
        let logged = a["log"].as_array().is_some_and(|l| {
            l.iter()
                .filter_map(|x| x.as_str())
                .any(|x| x.starts_with(first_line))
        });
        if a["state"] == "R" && logged {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the action never started, or its log was not seen while it ran: {v}"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Halts instance `id` and waits for its end; how long that took.
fn halt_and_wait(w: &Weft, id: i64) -> (Value, std::time::Duration) {
    let asked = std::time::Instant::now();
    let (st, v) = command(w, "HaltBatchInstance", json!({"batchInstanceId": id}), None);
    assert_eq!(st, 200, "{v}");
    let inst = wait(w, id);
    let took = asked.elapsed();
    eprintln!("instance {id} halted in {took:?}");
    (inst, took)
}

/// Sheets 500 (an Sql action 5000 writing `big`) and 600 (an Insert reading `big` into
/// `after_big`) run as one instance while the test holds `data`'s write lock: answers the
/// lock's connection (`COMMIT` lets go) and the instance, once action 5000 runs, waiting on
/// the lock.
pub(crate) fn held_chain(w: &Weft, data: &std::path::Path) -> (rusqlite::Connection, i64) {
    deploy(
        w,
        &sheet(
            500,
            (10, "/etl"),
            "Sql",
            "INSERT INTO big SELECT 7",
            &[],
            "big",
        ),
    );
    deploy(
        w,
        &sheet(
            600,
            (10, "/etl"),
            "Insert",
            "SELECT COUNT(*) AS n FROM big",
            &["big"],
            "after_big",
        ),
    );
    let gate = rusqlite::Connection::open(data).expect("gate");
    gate.execute_batch("BEGIN IMMEDIATE")
        .expect("the write lock");
    let id = run(w, &[("S", 600), ("S", 500)], None);
    wait_until_running(w, id, 5000, "Sql action 5000");
    (gate, id)
}

#[test]
fn halt_stops_an_action_waiting_for_a_lock_and_restart_runs_it_again() {
    let (w, data) = setup();
    // The test holds the data file's write lock: action 5000 starts and then waits on it
    // (a data connection waits up to 30 s for a lock), so the halt surely meets it running,
    // however fast or slow the machine.
    let (gate, id) = held_chain(&w, &data);
    // The halt ends its wait for the lock at once, not after 30 s.
    let (inst, took) = halt_and_wait(&w, id);
    assert!(
        took < std::time::Duration::from_secs(1),
        "the halt took {took:?}"
    );
    gate.execute_batch("COMMIT").expect("let the lock go");
    assert_eq!(inst["state"], "halted", "{inst}");
    let a = action(&inst, 5000);
    assert_eq!(a["state"], "H", "the running action was halted: {inst}");
    assert!(
        a["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("halted on request: ") && e.contains("locked")),
        "{inst}"
    );
    // Each line once: the one stored while it ran, none twice at its end.
    let log: Vec<&str> = a["log"]
        .as_array()
        .map(|l| l.iter().filter_map(|x| x.as_str()).collect())
        .unwrap_or_default();
    assert_eq!(log.len(), 1, "{log:?}");
    assert!(log[0].starts_with("Sql action 5000"), "{log:?}");
    assert_eq!(action(&inst, 6000)["state"], "H", "nothing new started");
    let count_big = || -> i64 {
        rusqlite::Connection::open(&data)
            .expect("data")
            .query_row("SELECT COUNT(*) FROM big", [], |r| r.get(0))
            .expect("big")
    };
    assert_eq!(count_big(), 0, "the halted action wrote nothing");
    // Halting again is refused; restarting runs what was halted, never what finished.
    let (st, _) = command(
        &w,
        "HaltBatchInstance",
        json!({"batchInstanceId": id}),
        None,
    );
    assert_eq!(st, 409);
    let (st, v) = command(
        &w,
        "RestartBatchInstance",
        json!({"batchInstanceId": id}),
        None,
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["actionsToRun"], 2);
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(count_big(), 1, "the halted action ran once in all");
    let n: i64 = rusqlite::Connection::open(&data)
        .expect("data")
        .query_row("SELECT n FROM after_big", [], |r| r.get(0))
        .expect("after");
    assert_eq!(n, 1);
    let (st, _) = command(
        &w,
        "RestartBatchInstance",
        json!({"batchInstanceId": id}),
        None,
    );
    assert_eq!(st, 409, "a finished instance has nothing to run again");
}

#[test]
fn halt_stops_an_endless_statement_within_a_second_and_rolls_its_transaction_back() {
    let (w, data) = setup();
    // A statement that writes a row and then counts to ten billion: hours of work, so the
    // halt surely meets it running.
    deploy(
        &w,
        &sheet(
            500,
            (10, "/etl"),
            "Sql",
            "INSERT INTO big SELECT 1; INSERT INTO big SELECT COUNT(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10000000000) SELECT x FROM c)",
            &[],
            "big",
        ),
    );
    let id = run(&w, &[("S", 500)], None);
    wait_until_running(&w, id, 5000, "Sql action 5000");
    let (inst, took) = halt_and_wait(&w, id);
    assert!(
        took < std::time::Duration::from_secs(1),
        "the halt took {took:?}"
    );
    assert_eq!(inst["state"], "halted", "{inst}");
    let a = action(&inst, 5000);
    assert_eq!(a["state"], "H", "{inst}");
    // The test sees the action running from its first log line, which comes before its
    // statement starts: the halt may reach it before the statement (then it never starts) or
    // during it (then SQLite interrupts it). Both mechanisms have deterministic unit tests in
    // connect::sqlite.
    assert!(
        a["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("halted on request: ")
                && (e.contains("interrupted") || e.contains("before it began"))),
        "{inst}"
    );
    let n: i64 = rusqlite::Connection::open(&data)
        .expect("data")
        .query_row("SELECT COUNT(*) FROM big", [], |r| r.get(0))
        .expect("big");
    assert_eq!(n, 0, "the row its first statement wrote was rolled back");
}

#[test]
fn unknown_elements_and_cycles_are_refused_and_store_nothing() {
    let (w, _) = setup();
    let (st, v) = command(
        &w,
        "RunElements",
        json!({"batchExecution": {"batchName": "x", "user": "u", "elementList": [{"elementType": "S", "elementId": 999}]}}),
        None,
    );
    assert_eq!(st, 404, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("sheet 999 does not exist"),
        "{v}"
    );
    let (st, v) = command(
        &w,
        "RunElements",
        json!({"batchExecution": {"batchName": "x", "user": "u", "elementList": [{"elementType": "Q", "elementId": 1}]}}),
        None,
    );
    assert_eq!(st, 400, "{v}");
    // Two sheets that feed each other.
    deploy(
        &w,
        &sheet(
            700,
            (10, "/etl"),
            "Insert",
            "SELECT id, v FROM stage",
            &["stage"],
            "mart",
        ),
    );
    deploy(
        &w,
        &sheet(
            800,
            (10, "/etl"),
            "Insert",
            "SELECT id, v FROM mart",
            &["mart"],
            "stage",
        ),
    );
    let (st, v) = command(
        &w,
        "RunElements",
        json!({"batchExecution": {"batchName": "x", "user": "u", "elementList": [{"elementType": "F", "elementId": 10}]}}),
        None,
    );
    assert_eq!(st, 422, "{v}");
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        msg.contains("7000")
            && msg.contains("8000")
            && msg.contains("stage")
            && msg.contains("mart"),
        "{msg}"
    );
    let (_, v) = command(&w, "ListBatchInstances", json!({}), None);
    assert_eq!(v["payload"]["instances"], json!([]), "nothing was stored");
    let (st, _) = command(
        &w,
        "GetBatchInstance",
        json!({"batchInstanceId": 12345}),
        None,
    );
    assert_eq!(st, 404);
}

#[test]
fn monitoring_stays_right_while_20_runs_go_on() {
    let (w, data) = setup();
    deploy(
        &w,
        &sheet(
            400,
            (10, "/etl"),
            "Sql",
            "INSERT INTO other VALUES (${n})",
            &[],
            "other",
        ),
    );
    let ids: Vec<i64> = (0..20)
        .map(|i| {
            run(
                &w,
                &[("S", 400)],
                Some(json!([{"variableName": "n", "variableValue": i}])),
            )
        })
        .collect();
    let mut distinct = ids.clone();
    distinct.dedup();
    assert_eq!(distinct.len(), 20);
    // Ask about every instance while they run: each answer is about that instance and
    // coherent (a finished action has an end, a running one a start and no end).
    for _ in 0..3 {
        for &id in &ids {
            let (st, v) = command(&w, "GetBatchInstance", json!({"batchInstanceId": id}), None);
            assert_eq!(st, 200, "{v}");
            let p = &v["payload"];
            assert_eq!(p["batchInstanceId"], id);
            assert!(
                // "waiting": queued for a coordinator, as 20 runs at once may be.
                ["waiting", "running", "finished"].contains(&p["state"].as_str().unwrap_or("")),
                "{p}"
            );
            let a = action(p, 4000);
            match a["state"].as_str().unwrap_or("") {
                "F" => assert!(a["end"].is_string() && a["start"].is_string(), "{a}"),
                "R" => assert!(a["start"].is_string() && a["end"].is_null(), "{a}"),
                "W" | "D" => assert!(a["start"].is_null(), "{a}"),
                other => panic!("state {other} in {p}"),
            }
            if p["state"] == "finished" {
                assert_eq!(a["state"], "F", "{p}");
            }
            if p["state"] == "waiting" {
                assert_eq!(a["state"], "W", "{p}");
            }
        }
    }
    for &id in &ids {
        assert_eq!(wait(&w, id)["state"], "finished");
    }
    let c = rusqlite::Connection::open(&data).expect("data");
    let (n, sum): (i64, i64) = c
        .query_row("SELECT COUNT(*), SUM(n) FROM other", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("rows");
    assert_eq!(
        (n, sum),
        (20, (0..20).sum()),
        "each run wrote its own variable once"
    );
}

#[test]
fn a_kill_during_a_large_transfer_loses_nothing_and_duplicates_nothing() {
    // Stopped dead when the Transfer (action 9100) has moved every row and not committed.
    let (w, data) = setup_with(&[("WEFT_FAULT", "before_target_commit@9100")]);
    // Connection 2: a second file with a million rows to move.
    let source = w.home.path().join("source.db");
    rusqlite::Connection::open(&source)
        .expect("source")
        .execute_batch(
            "CREATE TABLE src (id INTEGER, name TEXT);
             WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000)
             INSERT INTO src SELECT x, 'name ' || x FROM c;",
        )
        .expect("source rows");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("CREATE TABLE dst (id INTEGER, name TEXT); CREATE TABLE marker (n INTEGER);")
        .expect("tables");
    w.add_keys(&format!("2|sqlite|{}|||\n", source.display()));
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {"connections": [{"id": 2, "name": "source", "type": "sqlite"}]}}),
    );
    // First a quick action (it finishes before the kill), then the large Transfer after it.
    deploy(
        &w,
        &sheet(
            900,
            (10, "/etl"),
            "Sql",
            "INSERT INTO marker VALUES (1)",
            &[],
            "marker",
        ),
    );
    let transfer = json!({"version": 1, "transformationData": {"sheets": [{"id": 910,
        "attributes": {"name": "move", "folder_id": 10, "folder": "/etl"},
        "nodes": [
            {"id": 9100, "type": 0, "attributes": {"module": "Transfer", "name": "move", "action": "SELECT id, name FROM src", "batchRows": 5000}},
            {"id": 9101, "type": 1, "attributes": {"field1": "src", "objectTypeId": 1, "connectionId": 2}},
            {"id": 9102, "type": 1, "attributes": {"field1": "marker", "objectTypeId": 1, "connectionId": 1}},
            {"id": 9109, "type": 1, "attributes": {"field1": "dst", "objectTypeId": 1, "connectionId": 1}}],
        "edges": [{"id": 9101, "from": 9101, "to": 9100}, {"id": 9102, "from": 9102, "to": 9100}, {"id": 9109, "from": 9100, "to": 9109}]}]}});
    // `marker` (connection 1) is a source of the Transfer only so that it waits for the
    // marker action; its query runs on connection 2. Transfer's validation wants all sources
    // on one connection, so this sheet is deployed without validation.
    let body = json!({"command": "DeployRepository", "payload": {"content": transfer.to_string(), "deployOptions": {"validate": false}}});
    let (st, v) = post(&w.url, body.to_string().into_bytes());
    assert_eq!(st, 200, "{v}");
    let id = run(&w, &[("S", 910), ("S", 900)], None);
    let (status, home) = w.exited(std::time::Duration::from_secs(60));
    assert!(
        !status.success(),
        "the server stopped at the fault: {status}"
    );
    let count = |table: &str| -> i64 {
        rusqlite::Connection::open(&data)
            .expect("data")
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .expect("count")
    };
    assert_eq!(count("dst"), 0, "a killed action left no partial rows");
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    let inst = if backend() == Backend::Postgres {
        // A host of a shared repository settles what it left running when it starts again:
        // no commit marker in the target, so the transfer runs again and the instance goes
        // on by itself.
        let inst = wait(&w, id);
        let t = action(&inst, 9100);
        assert!(
            t["log"].as_array().is_some_and(|l| l
                .iter()
                .any(|x| x.as_str().is_some_and(|x| x.contains("no commit marker")))),
            "{inst}"
        );
        inst
    } else {
        let (_, v) = command(&w, "GetBatchInstance", json!({"batchInstanceId": id}), None);
        let p = &v["payload"];
        assert_eq!(p["state"], "interrupted", "{p}");
        assert_eq!(action(p, 9000)["state"], "F");
        assert_eq!(action(p, 9100)["state"], "E");
        assert_eq!(
            action(p, 9100)["error"],
            "interrupted by a server stop before it committed",
            "no commit marker in the target: it did not commit"
        );
        let (st, v) = command(
            &w,
            "RestartBatchInstance",
            json!({"batchInstanceId": id}),
            None,
        );
        assert_eq!(st, 200, "{v}");
        assert_eq!(
            v["payload"]["actionsToRun"], 1,
            "the finished action does not run again"
        );
        wait(&w, id)
    };
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(count("dst"), 1_000_000, "every row once");
    assert_eq!(count("marker"), 1, "no finished action ran twice");
    let distinct: i64 = rusqlite::Connection::open(&data)
        .expect("data")
        .query_row("SELECT COUNT(DISTINCT id) FROM dst", [], |r| r.get(0))
        .expect("distinct");
    assert_eq!(distinct, 1_000_000);
}

#[test]
fn weft_run_waits_shows_states_and_says_how_it_ended() {
    let (w, data) = setup();
    chain(&w);
    let run_cli = |args: &[&str]| {
        std::process::Command::new(weft_bin())
            .arg("run")
            .args(args)
            .env("WEFT_HOME", w.home.path())
            .output()
            .expect("weft run")
    };
    let o = run_cli(&[
        "--folder", "10", "--var", "n=9", "--var", "label=z", "--wait", "--name", "nightly",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        out.contains("finished") && out.contains("3000 step 300"),
        "{out}"
    );
    assert!(
        err.contains("instance") && err.contains("F 3"),
        "the live display shows states: {err}"
    );
    assert_eq!(
        rows(&data, "SELECT id, v FROM mart WHERE id = 9"),
        vec!["9|z"]
    );
    // A failing run exits 1 and shows the error.
    let o = run_cli(&["--action", "1000", "--wait"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(out.contains("variable `n` is not set"), "{out}");
    // Nothing to run is a usage error; an unknown sheet is refused.
    assert_eq!(run_cli(&["--wait"]).status.code(), Some(2));
    let o = run_cli(&["--sheet", "4242"]);
    assert_eq!(o.status.code(), Some(4));
    assert!(text(&o).1.contains("sheet 4242 does not exist"));
}

#[test]
fn restart_as_started_runs_the_failed_and_skipped_actions_with_the_definitions_they_ran() {
    let (w, data) = setup();
    // `later` does not exist yet: the first step fails, the second is skipped.
    deploy(
        &w,
        &sheet(
            110,
            (10, "/etl"),
            "Sql",
            "INSERT INTO later VALUES (${batch_instance_id})",
            &[],
            "later",
        ),
    );
    let started = deploy_id(
        &w,
        &sheet(
            120,
            (10, "/etl"),
            "Insert",
            "SELECT n FROM later",
            &["later"],
            "other",
        ),
    );
    let id = run(&w, &[("S", 120), ("S", 110)], None);
    let inst = wait(&w, id);
    assert_eq!(
        (
            action(&inst, 1100)["state"].as_str(),
            action(&inst, 1200)["state"].as_str()
        ),
        (Some("E"), Some("S")),
        "{inst}"
    );
    assert_eq!(
        action(&inst, 1200)["deployId"],
        Value::Null,
        "a skipped action ran no definitions: {inst}"
    );
    // A deploy after the start changes nothing of this instance when it restarts as started.
    deploy(
        &w,
        &sheet(
            120,
            (10, "/etl"),
            "Insert",
            "SELECT n + 1000 AS n FROM later",
            &["later"],
            "other",
        ),
    );
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("CREATE TABLE later (n INTEGER)")
        .expect("table");
    let (st, v) = command(
        &w,
        "RestartBatchInstance",
        json!({"batchInstanceId": id, "asStarted": true}),
        None,
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["actionsToRun"], 2);
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(action(&inst, 1200)["deployId"], started, "{inst}");
    let c = rusqlite::Connection::open(&data).expect("data");
    // The built-in variable reached the SQL, and the plan of the start ran.
    let n: i64 = c
        .query_row("SELECT n FROM other", [], |r| r.get(0))
        .expect("other");
    assert_eq!(
        n, id,
        "batch_instance_id reached the SQL; the plan of the start ran, not the redeployed one"
    );
    // Two restarts of a finished instance: both refused, nothing runs twice.
    let (st1, _) = command(
        &w,
        "RestartBatchInstance",
        json!({"batchInstanceId": id}),
        None,
    );
    let (st2, _) = command(
        &w,
        "RestartBatchInstance",
        json!({"batchInstanceId": id}),
        None,
    );
    assert_eq!((st1, st2), (409, 409));
    let count: i64 = c
        .query_row("SELECT COUNT(*) FROM later", [], |r| r.get(0))
        .expect("later");
    assert_eq!(count, 1);
}

/// Deploys `doc`; the deploy's number.
fn deploy_id(w: &Weft, doc: &Value) -> i64 {
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "deploy failed: {v}");
    v["payload"]["deployId"].as_i64().expect("a deploy id")
}

/// `(state, deployId)` of each action of `inst`, by id.
fn states_and_deploys(inst: &Value) -> Vec<(i64, String, Option<i64>)> {
    inst["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| {
            (
                a["actionId"].as_i64().expect("id"),
                a["state"].as_str().expect("state").to_owned(),
                a["deployId"].as_i64(),
            )
        })
        .collect()
}

#[test]
fn a_fix_deployed_after_a_failure_is_what_a_restart_runs_and_each_action_names_its_deploy() {
    let (w, data) = setup();
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("CREATE TABLE strict (n INTEGER NOT NULL)")
        .expect("table");
    let bad = |action: i64| {
        let doc = sheet(
            130,
            (10, "/etl"),
            "Sql",
            "INSERT INTO strict VALUES (NULL)",
            &[],
            "strict",
        );
        serde_json::from_str::<Value>(&doc.to_string().replace("1300", &action.to_string()))
            .expect("sheet")
    };
    let first = deploy_id(&w, &bad(1300));
    let reader = deploy_id(
        &w,
        &sheet(
            140,
            (10, "/etl"),
            "Insert",
            "SELECT n FROM strict",
            &["strict"],
            "other",
        ),
    );
    let id = run(&w, &[("S", 130), ("S", 140)], None);
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "failed", "{inst}");
    assert!(
        action(&inst, 1300)["error"]
            .as_str()
            .is_some_and(|e| e.contains("NOT NULL")),
        "{inst}"
    );
    assert_eq!(
        states_and_deploys(&inst),
        vec![(1300, "E".into(), Some(first)), (1400, "S".into(), None)]
    );
    // The fix, deployed; a restart runs it (the default), and what was skipped after it.
    let fixed = deploy_id(
        &w,
        &sheet(
            130,
            (10, "/etl"),
            "Sql",
            "INSERT INTO strict VALUES (7)",
            &[],
            "strict",
        ),
    );
    let (st, v) = command(
        &w,
        "RestartBatchInstance",
        json!({"batchInstanceId": id}),
        None,
    );
    assert_eq!((st, &v["payload"]["actionsToRun"]), (200, &json!(2)), "{v}");
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(
        states_and_deploys(&inst),
        vec![
            (1300, "F".into(), Some(fixed)),
            (1400, "F".into(), Some(reader))
        ]
    );
    let c = rusqlite::Connection::open(&data).expect("data");
    let other: i64 = c
        .query_row("SELECT n FROM other", [], |r| r.get(0))
        .expect("other");
    assert_eq!(other, 7);

    // A failed run whose failed action the current definitions no longer have: a restart
    // with them is refused, names the action and changes nothing; as started, it runs the
    // definitions it ran (and fails again the same way).
    deploy(&w, &bad(1300));
    let id = run(&w, &[("S", 130)], None);
    assert_eq!(wait(&w, id)["state"], "failed");
    deploy(&w, &bad(1305));
    let before = wait(&w, id);
    let restart_cli = |args: &[&str]| {
        std::process::Command::new(weft_bin())
            .arg("restart")
            .args(args)
            .env("WEFT_HOME", w.home.path())
            .output()
            .expect("weft restart")
    };
    let o = restart_cli(&[&id.to_string()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(4), "{out}{err}");
    assert!(
        err.contains("action 1300 of sheet 130 is no longer deployed") && err.contains("asStarted"),
        "{err}"
    );
    assert_eq!(wait(&w, id), before, "a refused restart changes nothing");
    let o = restart_cli(&[&id.to_string(), "--as-started", "--json"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let answer: Value = serde_json::from_str(out.trim()).expect("the answer as JSON");
    assert_eq!(answer, json!({"batchInstanceId": id, "actionsToRun": 1}));
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "failed", "{inst}");
    assert!(
        action(&inst, 1300)["error"]
            .as_str()
            .is_some_and(|e| e.contains("NOT NULL")),
        "{inst}"
    );
    // Unknown and finished instances are refused with exit code 4.
    assert_eq!(restart_cli(&["999999"]).status.code(), Some(4));
    let o = restart_cli(&["abc"]);
    assert_eq!(o.status.code(), Some(2), "a usage error: {}", text(&o).1);
}

#[test]
fn max_parallel_actions_limits_what_runs_at_once() {
    for (limit, expected) in [("1", 1), ("2", 2)] {
        let w = Weft::start_with(
            &["--listen", "127.0.0.1:0"],
            &[("WEFT_MAX_PARALLEL_ACTIONS", limit)],
        );
        // Two files, so that the per-file write lock does not serialise the actions.
        let mut keys = std::fs::read_to_string(w.home.path().join("keyfile")).expect("keyfile");
        for n in [1, 3] {
            let f = w.home.path().join(format!("d{n}.db"));
            rusqlite::Connection::open(&f)
                .expect("db")
                .execute_batch("CREATE TABLE big (x INTEGER)")
                .expect("table");
            keys.push_str(&format!("{n}|sqlite|{}|||\n", f.display()));
        }
        std::fs::write(w.home.path().join("keyfile"), keys).expect("keyfile");
        deploy(
            &w,
            &json!({"version": 1, "transformationData": {"folders": [{"id": 10, "path": "/etl"}],
            "connections": [{"id": 1, "name": "one", "type": "sqlite"}, {"id": 3, "name": "three", "type": "sqlite"}]}}),
        );
        let quick = "INSERT INTO big SELECT 1";
        deploy(&w, &sheet(510, (10, "/etl"), "Sql", quick, &[], "big"));
        // The second sheet's target `big` lives on connection 3.
        let mut b = sheet(520, (10, "/etl"), "Sql", quick, &[], "big");
        b["transformationData"]["sheets"][0]["nodes"][1]["attributes"]["connectionId"] = json!(3);
        deploy(&w, &b);
        // The test holds both files' write locks: a started action waits on its file until
        // the test lets go, so what runs at once is seen, not raced.
        let gates: Vec<rusqlite::Connection> = [1, 3]
            .iter()
            .map(|n| {
                let g = rusqlite::Connection::open(w.home.path().join(format!("d{n}.db")))
                    .expect("gate");
                g.execute_batch("BEGIN IMMEDIATE").expect("the write lock");
                g
            })
            .collect();
        let id = run(&w, &[("S", 510), ("S", 520)], None);
        let states = || {
            let (_, v) = command(&w, "GetBatchInstance", json!({"batchInstanceId": id}), None);
            let mut s: Vec<String> = [5100, 5200]
                .iter()
                .map(|a| {
                    action(&v["payload"], *a)["state"]
                        .as_str()
                        .unwrap_or("?")
                        .to_owned()
                })
                .collect();
            s.sort();
            s
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let seen = loop {
            let s = states();
            if s.iter().filter(|x| *x == "R").count() == expected {
                break s;
            }
            assert!(std::time::Instant::now() < deadline, "{s:?}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        // Both actions are ready; with one slot the second waits for the first, which cannot
        // end while its file is held.
        let want: Vec<&str> = if expected == 1 {
            vec!["R", "W"]
        } else {
            vec!["R", "R"]
        };
        assert_eq!(seen, want, "max_parallel_actions = {limit}");
        assert_eq!(states(), want, "still, while the files are held");
        for g in &gates {
            g.execute_batch("COMMIT").expect("let go");
        }
        assert_eq!(wait(&w, id)["state"], "finished");
    }
}

/// Rows the fault tests move.
const MOVED: i64 = 20_000;

/// A server told to stop dead at `fault` runs a Transfer of [`MOVED`] rows from `src` to
/// `dst` (both in the SQLite file of connection 1) and dies there; answers its home, the
/// data file and the instance.
fn killed_at(fault: &str) -> (tempfile::TempDir, std::path::PathBuf, i64) {
    let (w, data) = setup_with(&[("WEFT_FAULT", fault)]);
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch(&format!(
            "CREATE TABLE src (id INTEGER, name TEXT);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {MOVED})
             INSERT INTO src SELECT i, 'row ' || i FROM n;
             CREATE TABLE dst (id INTEGER, name TEXT);"
        ))
        .expect("tables");
    deploy(
        &w,
        &sheet(
            950,
            (10, "/etl"),
            "Transfer",
            "SELECT id, name FROM src",
            &["src"],
            "dst",
        ),
    );
    let id = run(&w, &[("S", 950)], None);
    let (status, home) = w.exited(std::time::Duration::from_secs(60));
    assert!(
        !status.success(),
        "the server stopped at the fault: {status}"
    );
    (home, data, id)
}

fn count(data: &std::path::Path, table: &str) -> i64 {
    rusqlite::Connection::open(data)
        .expect("data")
        .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .expect("count")
}

#[test]
fn a_kill_right_after_the_target_commit_counts_the_action_once() {
    let (home, data, id) = killed_at("after_target_commit");
    assert_eq!(count(&data, "dst"), MOVED, "the target committed");
    assert_eq!(count(&data, "weft_commit_marker"), 1, "with its marker");
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    let (_, v) = command(&w, "GetBatchInstance", json!({"batchInstanceId": id}), None);
    let p = &v["payload"];
    let a = action(p, 9500);
    assert_eq!(a["state"], "F", "recorded as finished from its marker: {p}");
    assert!(
        a["log"].to_string().contains("commit marker was found"),
        "{a}"
    );
    assert_eq!(p["state"], "finished", "nothing is left to run: {p}");
    let (st, v) = command(
        &w,
        "RestartBatchInstance",
        json!({"batchInstanceId": id}),
        None,
    );
    assert_eq!(st, 409, "a finished instance does not run again: {v}");
    assert_eq!(count(&data, "dst"), MOVED, "every row once");
}

#[test]
fn a_kill_right_before_the_target_commit_runs_the_action_again_once() {
    let (home, data, id) = killed_at("before_target_commit");
    assert_eq!(count(&data, "dst"), 0, "nothing committed");
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    if backend() == Backend::Sqlite {
        let (_, v) = command(&w, "GetBatchInstance", json!({"batchInstanceId": id}), None);
        let p = &v["payload"];
        assert_eq!(p["state"], "interrupted", "{p}");
        assert_eq!(
            action(p, 9500)["error"],
            "interrupted by a server stop before it committed"
        );
        let (st, v) = command(
            &w,
            "RestartBatchInstance",
            json!({"batchInstanceId": id}),
            None,
        );
        assert_eq!(st, 200, "{v}");
    }
    // On a shared repository the host runs it again by itself when it starts again.
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(count(&data, "dst"), MOVED, "every row once");
    assert_eq!(
        count(&data, "weft_commit_marker"),
        1,
        "one marker: the second attempt's"
    );
}

/// The end of an action that claimed the next one committed, and its answer was lost (as
/// when the repository's connection breaks at the commit): the end is tried again, and
/// the action it claimed, running here on no slot, is found by the worker and settled by
/// its markers (not committed: ready again). The chain ends, each action's rows once.
#[test]
fn an_end_whose_commit_answer_was_lost_leaves_no_action_running_on_no_slot() {
    let (w, data) = setup_with(&[("WEFT_FAULT", "end_answer_lost")]);
    chain(&w);
    let inst = run_chain(&w, &data);
    // The first end claimed the second action; that claim's answer was the one lost.
    let second = action(&inst, 2000);
    assert!(
        second["log"].to_string().contains("no commit marker"),
        "settled by its markers, then run: {second}"
    );
    for other in [1000, 3000] {
        assert!(
            !action(&inst, other)["log"].to_string().contains("marker"),
            "{inst}"
        );
    }
}

#[test]
fn weft_hosts_lists_the_one_host_of_a_server_alone() {
    let (w, _) = setup();
    let (st, v) = command(&w, "ListHosts", json!({}), None);
    assert_eq!(st, 200, "{v}");
    let hosts = v["payload"]["hosts"].as_array().expect("hosts");
    assert_eq!(hosts.len(), 1, "{v}");
    assert_eq!(hosts[0]["host"], v["payload"]["thisHost"], "{v}");
    assert_eq!(hosts[0]["url"], w.url.as_str(), "{v}");
    assert_eq!(hosts[0]["running"], 0, "{v}");
    let o = std::process::Command::new(weft_bin())
        .args(["hosts", "--url", &w.url])
        .env("WEFT_HOME", w.home.path())
        .output()
        .expect("weft hosts");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "a header and one host: {out}");
    assert!(
        lines[1].contains("(this)") && lines[1].contains(&w.url),
        "{out}"
    );
    // A payload field weft does not know is refused, as for every command.
    let (st, v) = command(&w, "ListHosts", json!({"all": true}), None);
    assert_eq!(st, 400, "{v}");
}

#[test]
fn instances_are_listed_by_state_and_name_a_page_at_a_time() {
    let (w, _) = setup();
    deploy(
        &w,
        &sheet(
            1,
            (10, "/etl"),
            "Sql",
            "INSERT INTO other VALUES (1)",
            &[],
            "other",
        ),
    );
    deploy(
        &w,
        &sheet(
            2,
            (10, "/etl"),
            "Sql",
            "INSERT INTO nowhere VALUES (1)",
            &[],
            "nowhere",
        ),
    );
    // Twelve runs: nine finished of two names (one with LIKE's wildcards in it), three failed.
    let mut ids = Vec::new();
    for i in 0..12 {
        let (name, sheet) = match i % 4 {
            0 => ("adhoc 50%_x", 1),
            3 => ("nightly load", 2),
            _ => ("nightly load", 1),
        };
        let (st, v) = command(
            &w,
            "RunElements",
            json!({"batchExecution": {"batchName": name, "user": "tester",
                "elementList": [{"elementType": "S", "elementId": sheet}]}}),
            None,
        );
        assert_eq!(st, 200, "{v}");
        let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
        wait(&w, id);
        ids.push(id);
    }
    let list = |payload: Value| -> Vec<i64> {
        let (st, v) = command(&w, "ListBatchInstances", payload, None);
        assert_eq!(st, 200, "{v}");
        v["payload"]["instances"]
            .as_array()
            .expect("instances")
            .iter()
            .map(|i| i["batchInstanceId"].as_i64().expect("id"))
            .collect()
    };
    let newest_first = |pick: &dyn Fn(usize) -> bool| -> Vec<i64> {
        ids.iter()
            .enumerate()
            .rev()
            .filter(|(i, _)| pick(*i))
            .map(|(_, id)| *id)
            .collect()
    };
    assert_eq!(
        list(json!({"state": "failed"})),
        newest_first(&|i| i % 4 == 3)
    );
    assert_eq!(list(json!({"name": "50%_"})), newest_first(&|i| i % 4 == 0));
    assert_eq!(
        list(json!({"name": "0%_"})),
        newest_first(&|i| i % 4 == 0),
        "any part"
    );
    assert_eq!(
        list(json!({"name": "NIGHTLY", "state": "finished"})),
        newest_first(&|i| i % 4 == 1 || i % 4 == 2)
    );
    assert!(
        list(json!({"name": "5_%"})).is_empty(),
        "wildcards are matched as text"
    );
    // Pages of five, each after the last id of the one before.
    let first = list(json!({"limit": 5}));
    let second = list(json!({"limit": 5, "before": first[4]}));
    let third = list(json!({"limit": 5, "before": second[4]}));
    let all: Vec<i64> = first.iter().chain(&second).chain(&third).copied().collect();
    assert_eq!(all, newest_first(&|_| true));
    // A bad filter is refused at its place.
    let (st, v) = command(&w, "ListBatchInstances", json!({"state": "sleeping"}), None);
    assert_eq!(st, 400, "{v}");
    assert_eq!(v["error"]["details"][0]["path"], "payload.state", "{v}");
    let (st, v) = command(&w, "ListBatchInstances", json!({"before": 0}), None);
    assert_eq!(st, 400, "{v}");
    assert_eq!(v["error"]["details"][0]["path"], "payload.before", "{v}");
}

#[test]
fn a_wait_with_changed_from_answers_at_each_change_of_a_run_and_not_before() {
    let (w, data) = setup();
    // The first action waits on the data file's write lock the test holds.
    let (gate, id) = held_chain(&w, &data);
    let watch = |from: &str, seconds: f64| -> Value {
        let (st, v) = command(
            &w,
            "WaitBatchInstance",
            json!({"batchInstanceId": id, "timeoutSeconds": seconds, "changedFrom": from}),
            None,
        );
        assert_eq!(st, 200, "{v}");
        v["payload"].clone()
    };
    let (_, first) = command(&w, "GetBatchInstance", json!({"batchInstanceId": id}), None);
    assert_eq!(first["payload"]["state"], "running", "{first}");
    // Nothing changes while the lock is held: the wait runs out with the same version.
    let now = watch("", 0.0);
    let version = now["version"].as_str().expect("version").to_owned();
    assert_eq!(version.len(), 16, "{now}");
    let still = watch(&version, 0.6);
    assert_eq!(still["timedOut"], true, "{still}");
    assert_eq!(still["version"], version.as_str(), "{still}");
    // Let go: each wait answers at the next change, with a new version, until the end.
    gate.execute_batch("COMMIT").expect("let the lock go");
    let mut seen = vec![version];
    loop {
        let next = watch(seen.last().expect("a version"), 30.0);
        assert_eq!(next["timedOut"], false, "{next}");
        let v = next["version"].as_str().expect("version").to_owned();
        assert!(!seen.contains(&v), "a new version at each answer: {next}");
        seen.push(v);
        if next["state"] != "running" && next["state"] != "waiting" {
            assert_eq!(next["state"], "finished", "{next}");
            break;
        }
    }
    assert!(seen.len() >= 2, "{seen:?}");
    // An ended run's own version: answered at once, the same version, not timed out.
    let last = seen.last().expect("a version").clone();
    let ended = watch(&last, 30.0);
    assert_eq!(
        (&ended["timedOut"], &ended["version"]),
        (&json!(false), &json!(last)),
        "{ended}"
    );
    // A version too long to be one is refused at its place.
    let (st, v) = command(
        &w,
        "WaitBatchInstance",
        json!({"batchInstanceId": id, "changedFrom": "x".repeat(65)}),
        None,
    );
    assert_eq!(st, 400, "{v}");
    assert_eq!(
        v["error"]["details"][0]["path"], "payload.changedFrom",
        "{v}"
    );
}

/// Sheet `id` with one lone Shell action running `script`, with `extra` attributes.
fn shell_sheet(id: i64, script: &str, extra: Value) -> Value {
    let mut attributes =
        json!({"module": "Shell", "name": format!("script {id}"), "action": script});
    if let (Some(a), Some(e)) = (attributes.as_object_mut(), extra.as_object()) {
        a.extend(e.clone());
    }
    json!({"version": 1, "transformationData": {"sheets": [{"id": id,
        "attributes": {"name": format!("sheet {id}"), "folder_id": 10, "folder": "/etl"},
        "nodes": [{"id": id * 10, "type": 0, "attributes": attributes}], "edges": []}]}})
}

#[test]
fn shell_actions_are_refused_unless_the_server_allows_them() {
    let (w, _) = setup();
    let doc = serde_json::to_string_pretty(&shell_sheet(70, "echo hi", json!({}))).expect("json");
    let before = w.dump();
    let (status, answer) = post(&w.url, deploy_body(&doc));
    assert_eq!(status, 422, "{answer}");
    let d = answer["error"]["details"]
        .as_array()
        .and_then(|all| all.iter().find(|d| d["code"] == "node.module_off"))
        .unwrap_or_else(|| panic!("no node.module_off in {answer}"))
        .clone();
    assert!(
        d["message"]
            .as_str()
            .is_some_and(|m| m.contains("set `shell_modules = true` in HOME/weft.toml")),
        "{d}"
    );
    // At the module's name in the document.
    let (line, column) = doc
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find("\"Shell\"").map(|c| (i as i64 + 1, c as i64 + 1)))
        .expect("the module");
    assert_eq!(
        (d["line"].as_i64(), d["column"].as_i64()),
        (Some(line), Some(column)),
        "{d}"
    );
    assert_eq!(before, w.dump(), "nothing deployed");
}

#[test]
fn a_shell_action_runs_its_script_logs_its_output_and_fails_on_its_exit_code() {
    let (w, _) = setup_with(&[("WEFT_SHELL_MODULES", "true")]);
    deploy(
        &w,
        &shell_sheet(
            71,
            "echo \"run ${batch_instance_id} of $batch_name\"; echo warn >&2",
            json!({}),
        ),
    );
    deploy(
        &w,
        &shell_sheet(72, "echo 'it broke' >&2; exit 4", json!({})),
    );
    let id = run(&w, &[("S", 71)], None);
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "finished", "{inst}");
    let log: Vec<String> = action(&inst, 710)["log"]
        .as_array()
        .expect("log")
        .iter()
        .map(|l| l.as_str().unwrap_or_default().to_owned())
        .collect();
    // `${...}` in the text is the host's substitution; `$batch_name` the script's environment.
    let batch = inst["batchName"].as_str().expect("batch name");
    let want = format!("stdout: run {id} of {batch}");
    assert!(log.contains(&want), "{want}: {log:?}");
    assert!(log.iter().any(|l| l == "stderr: warn"), "{log:?}");
    let id = run(&w, &[("S", 72)], None);
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "failed", "{inst}");
    let error = action(&inst, 720)["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        error.contains("exited with code 4") && error.contains("it broke"),
        "{error}"
    );
}

#[test]
fn halting_a_shell_action_kills_its_process_group_and_a_server_without_the_setting_refuses_to_run_it()
 {
    let (w, _) = setup_with(&[("WEFT_SHELL_MODULES", "true")]);
    let pidfile = w.home.path().join("child.pid");
    let script = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    deploy(&w, &shell_sheet(73, &script, json!({"timeout": 600})));
    let id = run(&w, &[("S", 73)], None);
    // Halt once the script runs: its child's pid is written.
    let pid = wait_for_pid_file(&pidfile, "the script");
    let (st, v) = command(
        &w,
        "HaltBatchInstance",
        json!({"batchInstanceId": id}),
        None,
    );
    assert_eq!(st, 200, "{v}");
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "halted", "{inst}");
    assert!(process_gone(&pid), "the script's child is gone");
    // The same home without the setting: the deployed action is refused when it runs.
    let w = Weft::start_in(w.stop(), &["--listen", "127.0.0.1:0"], &[]);
    let id = run(&w, &[("S", 73)], None);
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "failed", "{inst}");
    assert!(
        action(&inst, 730)["error"]
            .as_str()
            .is_some_and(|e| e.contains("does not allow")),
        "{inst}"
    );
}

#[test]
fn a_shell_action_running_at_a_kill_is_recorded_as_may_have_run_and_its_processes_are_killed_at_the_next_start()
 {
    let (w, _) = setup_with(&[("WEFT_SHELL_MODULES", "true")]);
    let pidfile = w.home.path().join("child.pid");
    // No object at all: nothing can carry a commit marker for it.
    let script = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    deploy(&w, &shell_sheet(74, &script, json!({})));
    let id = run(&w, &[("S", 74)], None);
    let pid = wait_for_pid_file(&pidfile, "the script");
    // A second server on the same HOME is refused while this one runs.
    let second = std::process::Command::new(weft_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--home"])
        .arg(w.home.path())
        .env("WEFT_SHELL_MODULES", "true")
        .output()
        .expect("second server");
    assert!(!second.status.success(), "{second:?}");
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(said.contains("another weft server"), "{said}");
    assert!(!process_gone(&pid), "the refused server killed nothing");
    // Killed while the script runs: the script lives on as an orphan until the next start.
    let home = w.stop();
    assert!(!process_gone(&pid), "the orphan outlives its server");
    let w = Weft::start_in(
        home,
        &["--listen", "127.0.0.1:0"],
        &[("WEFT_SHELL_MODULES", "true")],
    );
    assert!(
        process_gone(&pid),
        "the next start killed what the last server left running"
    );
    let inst = wait(&w, id);
    let a = action(&inst, 740);
    assert_eq!(
        a["state"], "E",
        "not finished by a vacuous marker check: {inst}"
    );
    assert!(
        a["error"]
            .as_str()
            .is_some_and(|e| e.contains("it may have run")),
        "{inst}"
    );
    assert_ne!(inst["state"], "finished", "{inst}");
}

#[test]
fn waits_are_bounded_and_leave_connections_for_other_commands() {
    // 40 connections: at most 10 of them wait.
    let (w, data) = setup_with(&[("WEFT_MAX_CONNECTIONS", "40")]);
    let (gate, id) = held_chain(&w, &data);
    let (st, v) = command(
        &w,
        "WaitBatchInstance",
        json!({"batchInstanceId": id, "timeoutSeconds": 0}),
        None,
    );
    assert_eq!(st, 200, "{v}");
    let version = v["payload"]["version"]
        .as_str()
        .expect("version")
        .to_owned();
    let (tx, rx) = std::sync::mpsc::channel();
    let url = w.url.clone();
    let waiters: Vec<_> = (0..14)
        .map(|_| {
            let (tx, url, version) = (tx.clone(), url.clone(), version.clone());
            std::thread::spawn(move || {
                let body = json!({"command": "WaitBatchInstance", "payload": {
                    "batchInstanceId": id, "changedFrom": version, "timeoutSeconds": 60}});
                let answer = post(&url, body.to_string().into_bytes());
                let _ = tx.send(answer);
            })
        })
        .collect();
    // Four are refused at once: the other ten hold every place for waits.
    for _ in 0..4 {
        let (st, v) = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("a refusal");
        assert_eq!(st, 429, "{v}");
        assert_eq!(v["error"]["code"], "run.too_many_waits", "{v}");
    }
    // A halt still gets a connection and an answer while ten waits hang.
    let (st, v) = command(
        &w,
        "HaltBatchInstance",
        json!({"batchInstanceId": id}),
        None,
    );
    assert_eq!(st, 200, "{v}");
    // The ten waiters are woken by the change, each with a new version.
    for _ in 0..10 {
        let (st, v) = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("a waiter's answer");
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["payload"]["timedOut"], false, "{v}");
        assert_ne!(v["payload"]["version"], version.as_str(), "{v}");
    }
    for t in waiters {
        t.join().expect("waiter");
    }
    drop(gate);
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "halted", "{inst}");
}

/// The text of the server's log files in its HOME.
fn log_files(w: &Weft) -> String {
    let mut all = String::new();
    for e in std::fs::read_dir(w.home.path().join("logs"))
        .expect("logs")
        .flatten()
    {
        if e.file_name().to_string_lossy().starts_with("weft.log") {
            all.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    all
}

#[test]
fn a_failed_action_and_its_instance_are_logged_as_warnings_with_the_error() {
    let (w, _) = setup();
    deploy(
        &w,
        &sheet(
            90,
            (10, "/etl"),
            "Sql",
            "INSERT INTO other SELECT nope FROM raw",
            &["raw"],
            "other",
        ),
    );
    let id = run(&w, &[("S", 90)], None);
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "failed", "{inst}");
    // The log is written by a thread of its own: wait for the lines.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let log = log_files(&w);
        let failed = log.lines().find(|l| l.contains("An action failed."));
        let ended = log
            .lines()
            .find(|l| l.contains("Batch instance ended without finishing."));
        if let (Some(failed), Some(ended)) = (failed, ended) {
            assert!(
                failed.contains("WARN") && failed.contains("no such column: nope"),
                "{failed}"
            );
            assert!(
                ended.contains("WARN") && ended.contains("failed"),
                "{ended}"
            );
            assert!(!log.contains('\u{1b}'), "no colour codes in the file");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not logged:\n{log}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn the_server_s_standard_error_has_no_colour_codes_when_it_is_no_terminal() {
    let home = tempfile::tempdir().expect("home");
    let err = home.path().join("stderr.txt");
    let mut child = std::process::Command::new(weft_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--home"])
        .arg(home.path().join("h"))
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("weft serve");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).expect("listening line");
    assert!(line.starts_with("weft listening on "), "{line}");
    let _ = child.kill();
    let _ = child.wait();
    let said = std::fs::read_to_string(&err).expect("stderr");
    // A new HOME is a warning, and the start says where it listens.
    assert!(
        said.contains("WARN") && said.contains("Server started."),
        "{said}"
    );
    assert!(!said.contains('\u{1b}'), "{said:?}");
}

#[test]
fn built_in_times_and_instance_times_follow_the_service_clock_to_the_millisecond() {
    let w = Weft::start_with(
        &[
            "--listen",
            "127.0.0.1:0",
            "--fake-now",
            "2030-01-02 03:04:05",
        ],
        &[("WEFT_TIMEZONE", "UTC")],
    );
    let data = w.home.path().join("data.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("CREATE TABLE raw (id INTEGER, v TEXT); CREATE TABLE other (v TEXT);")
        .expect("tables");
    w.add_keys(&format!("1|sqlite|{}|||\n", data.display()));
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/etl"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}]}}),
    );
    deploy(
        &w,
        &sheet(
            91,
            (10, "/etl"),
            "Sql",
            "INSERT INTO other VALUES ('${action_start_utc}'), ('${action_start_local}')",
            &[],
            "other",
        ),
    );
    let id = run(&w, &[("S", 91)], None);
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "finished", "{inst}");
    let got: Vec<String> = rusqlite::Connection::open(&data)
        .expect("data")
        .prepare("SELECT v FROM other")
        .expect("select")
        .query_map([], |r| r.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("values");
    for v in &got {
        assert!(
            v.starts_with("2030-01-02 03:0"),
            "the service clock's day: {got:?}"
        );
    }
    // The instance's and the action's times: the service clock's, with milliseconds.
    for t in [&inst["start"], &inst["end"], &action(&inst, 910)["start"]] {
        let t = t.as_str().expect("a time");
        assert!(t.starts_with("2030-01-02T03:0"), "{t}");
        assert_eq!(t.len(), "2030-01-02T03:04:05.123Z".len(), "{t}");
    }
}

#[test]
fn a_waiting_client_costs_no_repository_reads_while_nothing_changes_and_wakes_at_a_change() {
    let (w, _) = setup_with(&[("WEFT_SHELL_MODULES", "true")]);
    let pidfile = w.home.path().join("child.pid");
    // A run that stays as it is: one action that sleeps and writes nothing to its log.
    let script = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    deploy(&w, &shell_sheet(76, &script, json!({"timeout": 600})));
    let id = run(&w, &[("S", 76)], None);
    wait_for_pid_file(&pidfile, "the script");
    let before = w.wait_reads();
    let (st, v) = command(
        &w,
        "WaitBatchInstance",
        json!({"batchInstanceId": id, "timeoutSeconds": 5}),
        None,
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["timedOut"], true, "{v}");
    assert_eq!(v["payload"]["state"], "running", "{v}");
    // The watcher's first look and the answer's two (the version before and after the
    // instance is read whole), and on PostgreSQL at most two more for the notice of the
    // action's start, which may arrive late: a look at the state alone, after which the
    // answer reads the version once more. No look per second, which would have made five
    // more.
    let reads = w.wait_reads() - before;
    assert!(reads <= 5, "{reads} reads while nothing changed");
    // A change wakes a long wait at once: the halt, sent while it waits. A wait from the
    // version answered looks at the instance first (a read), so it is in place once the
    // count moved.
    let mut version = v["payload"]["version"]
        .as_str()
        .expect("version")
        .to_owned();
    let from = version.clone();
    let waiting = {
        let url = w.url.clone();
        std::thread::spawn(move || {
            let body = json!({"command": "WaitBatchInstance",
                "payload": {"batchInstanceId": id, "timeoutSeconds": 60, "changedFrom": from}});
            post(&url, body.to_string().into_bytes())
        })
    };
    while w.wait_reads() < before + reads + 1 {
        std::thread::yield_now();
    }
    let (st, v) = command(
        &w,
        "HaltBatchInstance",
        json!({"batchInstanceId": id}),
        None,
    );
    assert_eq!(st, 200, "{v}");
    let (st, mut v) = waiting.join().expect("the waiting thread");
    // Each change answers the wait before its time is up, until the instance is halted.
    loop {
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["payload"]["timedOut"], false, "{v}");
        assert_ne!(v["payload"]["version"], version, "{v}");
        if v["payload"]["state"] == "halted" {
            break;
        }
        version = v["payload"]["version"]
            .as_str()
            .expect("version")
            .to_owned();
        let (_, next) = command(
            &w,
            "WaitBatchInstance",
            json!({"batchInstanceId": id, "timeoutSeconds": 60, "changedFrom": version}),
            None,
        );
        v = next;
    }
}

#[test]
fn a_run_may_set_its_schedule_date_and_is_refused_a_built_in_or_an_expression_it_cannot_compute() {
    let (w, data) = setup();
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("CREATE TABLE days (d TEXT, m TEXT, y TEXT)")
        .expect("table");
    deploy(
        &w,
        &sheet(
            150,
            (10, "/etl"),
            "Sql",
            "INSERT INTO days VALUES ('${schedule_date}', '${month_start}', '${ymd}')",
            &[],
            "days",
        ),
    );
    let var = |name: &str, value: &str| json!({"variableName": name, "variableType": "string", "variableValue": value});
    let listed = |w: &Weft| {
        command(w, "ListBatchInstances", json!({}), None).1["payload"]["instances"]
            .as_array()
            .map_or(0, Vec::len)
    };
    // What a run cannot set or compute is refused at its place, and nothing is stored.
    let body = |vars: Value| {
        json!({"command": "RunElements",
            "payload": {"batchExecution": {"batchName": "t", "user": "u",
                "elementList": [{"elementType": "S", "elementId": 150}]}},
            "variableList": vars})
        .to_string()
        .into_bytes()
    };
    for (vars, said) in [
        (
            json!([var("user", "x")]),
            "variable `user` is set by weft for every action and cannot be set by a run",
        ),
        (
            json!([var("schedule_date", "31.01.2026")]),
            "`schedule_date` must be a date as YYYY-MM-DD, found `31.01.2026`",
        ),
        (
            json!([var("month_start", "${begin_of_month(schedule_date)}")]),
            "unknown function `begin_of_month`",
        ),
    ] {
        let (st, v) = post(&w.url, body(vars));
        assert_eq!(st, 400, "{v}");
        let message = v["error"]["message"].as_str().expect("message");
        assert!(message.contains(said), "{message}");
        assert_eq!(
            v["error"]["details"][0]["path"], "variableList[0].variableValue",
            "{v}"
        );
    }
    assert_eq!(listed(&w), 0, "a refused run stores nothing");
    // A past day: the run's schedule date is the one it set, and its variables are computed
    // from it.
    let (st, v) = post(
        &w.url,
        body(json!([
            var("schedule_date", "2026-01-31"),
            var("month_start", "${start_of_month(schedule_date)}"),
            var("ymd", "${format(add_months(schedule_date, 1), '%Y%m%d')}")
        ])),
    );
    assert_eq!(st, 200, "{v}");
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(
        (&inst["scheduleDate"], &inst["scheduleDateSet"]),
        (&json!("2026-01-31"), &json!(true)),
        "{inst}"
    );
    let c = rusqlite::Connection::open(&data).expect("data");
    let day: (String, String, String) = c
        .query_row("SELECT d, m, y FROM days", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .expect("a row");
    assert_eq!(
        day,
        ("2026-01-31".into(), "2026-01-01".into(), "20260228".into())
    );
    // Without one, a manual run's schedule date is the day it started.
    let id = run(
        &w,
        &[("S", 150)],
        Some(json!([var("month_start", "x"), var("ymd", "y")])),
    );
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(inst["scheduleDateSet"], Value::Null, "{inst}");
    assert_eq!(
        inst["scheduleDate"].as_str().map(str::len),
        Some(10),
        "{inst}"
    );
}

#[test]
fn the_operator_s_command_line_lists_shows_follows_halts_and_reads_a_run_s_logs() {
    let (w, data) = setup();
    let cli = |args: &[&str]| {
        std::process::Command::new(weft_bin())
            .args(args)
            .env("WEFT_HOME", w.home.path())
            .output()
            .expect("weft")
    };
    // A run held on the data file's lock: action 5000 runs until the test lets go.
    let (gate, id) = held_chain(&w, &data);
    let ids = id.to_string();
    let o = cli(&["runs", "--state", "running"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with(&format!("{id}\trunning\ttest\ttester"))),
        "{out}"
    );
    let o = cli(&["runs", "--json", "--limit", "1"]);
    let listed: Value = serde_json::from_str(text(&o).0.trim()).expect("JSON");
    assert_eq!(listed["instances"][0]["batchInstanceId"], id, "{listed}");
    assert_eq!(cli(&["runs", "--state", "sleeping"]).status.code(), Some(2));
    let o = cli(&["show", &ids]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        out.contains(&format!("batch instance {id} `test` running"))
            && out.contains("R 5000 step 500"),
        "{out}"
    );
    let o = cli(&["show", "999999"]);
    assert_eq!(o.status.code(), Some(4));
    assert!(text(&o).1.contains("999999"), "{}", text(&o).1);
    let o = cli(&["logs", &ids, "--action", "5000"]);
    assert_eq!(
        text(&o)
            .0
            .lines()
            .next()
            .map(|l| l.starts_with("Sql action 5000")),
        Some(true),
        "{:?}",
        text(&o)
    );
    assert_eq!(cli(&["logs", &ids, "--action", "1"]).status.code(), Some(2));
    // `weft follow` of the running instance ends when a `weft halt` halts it: exit 1.
    let follower = std::process::Command::new(weft_bin())
        .args(["follow", &ids])
        .env("WEFT_HOME", w.home.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("weft follow");
    let o = cli(&["halt", &ids]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let followed = follower.wait_with_output().expect("follow ended");
    let (out, err) = text(&followed);
    assert_eq!(followed.status.code(), Some(1), "{out}{err}");
    assert!(
        out.trim_end()
            .ends_with(&format!("batch instance {id} halted"))
            && out.contains("H 5000 step 500"),
        "{out}"
    );
    gate.execute_batch("COMMIT").expect("let go");
    // Halting it again is refused (exit 4); its logs read as `action<TAB>line`.
    assert_eq!(cli(&["halt", &ids]).status.code(), Some(4));
    let o = cli(&["logs", &ids]);
    assert!(
        text(&o).0.lines().all(|l| l.starts_with("5000\t")),
        "{:?}",
        text(&o)
    );
}

#[test]
fn two_runs_never_write_one_table_at_once_and_the_later_says_what_it_waits_for() {
    let (w, data) = setup();
    // Run 1 writes `big` and is held there (the test holds the data file's write lock).
    let (gate, first) = held_chain(&w, &data);
    // Run 3 writes a table of another file (connection 2).
    let elsewhere = w.home.path().join("elsewhere.db");
    rusqlite::Connection::open(&elsewhere)
        .expect("file")
        .execute_batch("CREATE TABLE other (n INTEGER)")
        .expect("table");
    w.add_keys(&format!("2|sqlite|{}|||\n", elsewhere.display()));
    let on_two = sheet(
        160,
        (10, "/etl"),
        "Sql",
        "INSERT INTO other VALUES (160)",
        &[],
        "other",
    )
    .to_string()
    .replace("\"connectionId\":1", "\"connectionId\":2");
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {
            "connections": [{"id": 2, "name": "elsewhere", "type": "sqlite"}]}}),
    );
    deploy(&w, &serde_json::from_str(&on_two).expect("sheet"));
    // Run 2 writes `big` too: it waits while run 1's action writes it. Run 3, started after
    // it and writing another table, runs at once on the free slot: the claim went past run
    // 2's action (actions are claimed oldest run first), which did not start.
    let second = run(&w, &[("S", 500)], None);
    let third = run(&w, &[("S", 160)], None);
    assert_eq!(wait(&w, third)["state"], "finished");
    let (_, v) = command(
        &w,
        "GetBatchInstance",
        json!({"batchInstanceId": second}),
        None,
    );
    let waiting = action(&v["payload"], 5000);
    assert_eq!(waiting["state"], "W", "{v}");
    assert_eq!(
        waiting["waitingFor"],
        json!({"connectionId": 1, "schema": "", "object": "big", "batchInstanceId": first, "actionId": 5000}),
        "{v}"
    );
    // Run 1's action ends; run 2's runs after it.
    gate.execute_batch("COMMIT").expect("let go");
    assert_eq!(wait(&w, first)["state"], "finished");
    let inst = wait(&w, second);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(action(&inst, 5000)["waitingFor"], Value::Null, "{inst}");
    let c = rusqlite::Connection::open(&data).expect("data");
    let rows: i64 = c
        .query_row("SELECT COUNT(*) FROM big", [], |r| r.get(0))
        .expect("big");
    assert_eq!(rows, 2, "each run wrote once");
}

#[test]
fn a_run_selects_what_follows_or_what_comes_before_its_elements_by_the_data_graph() {
    let (w, _data) = setup();
    // 100 writes raw; 200 reads raw, writes stage; 300 reads stage, writes mart.
    chain(&w);
    let vars = json!([{"variableName": "n", "variableType": "String", "variableValue": "3"},
                      {"variableName": "label", "variableType": "String", "variableValue": "c"}]);
    let selected = |select: &str| {
        let (st, v) = command(
            &w,
            "RunElements",
            json!({"batchExecution": {"batchName": "sel", "user": "u",
                "elementList": [{"elementType": "S", "elementId": 200}], "select": select}}),
            Some(vars.clone()),
        );
        assert_eq!(st, 200, "{v}");
        let inst = wait(&w, v["payload"]["batchInstanceId"].as_i64().expect("id"));
        assert_eq!(inst["state"], "finished", "{inst}");
        let mut ran: Vec<i64> = inst["actions"]
            .as_array()
            .expect("actions")
            .iter()
            .map(|a| a["actionId"].as_i64().expect("id"))
            .collect();
        ran.sort_unstable();
        ran
    };
    assert_eq!(selected("downstream"), vec![2000, 3000]);
    assert_eq!(selected("upstream"), vec![1000, 2000]);
    assert_eq!(selected("named"), vec![2000]);
    let (st, v) = command(
        &w,
        "RunElements",
        json!({"batchExecution": {"batchName": "sel", "user": "u",
            "elementList": [{"elementType": "S", "elementId": 200}], "select": "sideways"}}),
        None,
    );
    assert_eq!(st, 400, "{v}");
    assert_eq!(
        v["error"]["details"][0]["path"], "payload.batchExecution.select",
        "{v}"
    );
    // `weft run --action 1000 --downstream`: the whole chain from its first action.
    let o = std::process::Command::new(weft_bin())
        .args(["run", "--action", "1000", "--downstream", "--wait"])
        .args(["--var", "n=4", "--var", "label=d"])
        .env("WEFT_HOME", w.home.path())
        .output()
        .expect("weft run");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        out.contains("1000 step 100")
            && out.contains("2000 step 200")
            && out.contains("3000 step 300"),
        "{out}"
    );
}

#[test]
fn a_restart_of_one_failed_action_reruns_it_and_what_it_skipped_and_leaves_the_rest() {
    let (w, data) = setup();
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch(
            "CREATE TABLE strict (n INTEGER NOT NULL); CREATE TABLE strict2 (n INTEGER NOT NULL)",
        )
        .expect("tables");
    let step = |id: i64, sql: &str, sources: &[&str], target: &str, module: &str| {
        deploy(&w, &sheet(id, (10, "/etl"), module, sql, sources, target));
    };
    step(
        170,
        "INSERT INTO strict VALUES (NULL)",
        &[],
        "strict",
        "Sql",
    );
    step(180, "SELECT n FROM strict", &["strict"], "other", "Insert");
    step(
        190,
        "INSERT INTO strict2 VALUES (NULL)",
        &[],
        "strict2",
        "Sql",
    );
    let id = run(&w, &[("S", 170), ("S", 180), ("S", 190)], None);
    let states = |inst: &Value| -> Vec<(i64, String)> {
        states_and_deploys(inst)
            .into_iter()
            .map(|(a, s, _)| (a, s))
            .collect()
    };
    let inst = wait(&w, id);
    assert_eq!(
        states(&inst),
        vec![(1700, "E".into()), (1800, "S".into()), (1900, "E".into())]
    );
    // Sheet 170 fixed: only its action runs again, with the one it skipped.
    step(170, "INSERT INTO strict VALUES (5)", &[], "strict", "Sql");
    let (st, v) = command(
        &w,
        "RestartBatchInstance",
        json!({"batchInstanceId": id, "actions": [1700]}),
        None,
    );
    assert_eq!((st, &v["payload"]["actionsToRun"]), (200, &json!(2)), "{v}");
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "failed", "{inst}");
    assert_eq!(
        states(&inst),
        vec![(1700, "F".into()), (1800, "F".into()), (1900, "E".into())]
    );
    // What finished, or is no action of the instance, is refused, naming it; nothing changes.
    let (st, v) = command(
        &w,
        "RestartBatchInstance",
        json!({"batchInstanceId": id, "actions": [1800, 4242]}),
        None,
    );
    assert_eq!(st, 409, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("actions 1800, 4242 did not fail")),
        "{v}"
    );
    let (st, v) = command(
        &w,
        "RestartBatchInstance",
        json!({"batchInstanceId": id, "actions": "1900"}),
        None,
    );
    assert_eq!(st, 400, "{v}");
    // `weft restart ID --action 1900` after its fix: the instance finishes.
    step(190, "INSERT INTO strict2 VALUES (6)", &[], "strict2", "Sql");
    let o = std::process::Command::new(weft_bin())
        .args(["restart", &id.to_string(), "--action", "1900"])
        .env("WEFT_HOME", w.home.path())
        .output()
        .expect("weft restart");
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(
        text(&o).0.contains("1 action(s) run again"),
        "{:?}",
        text(&o)
    );
    assert_eq!(wait(&w, id)["state"], "finished");
    let c = rusqlite::Connection::open(&data).expect("data");
    let other: i64 = c
        .query_row("SELECT COUNT(*) FROM other", [], |r| r.get(0))
        .expect("other");
    assert_eq!(other, 1, "what was skipped ran once");
}
