//! Data tests end to end: tests attached to a model (`tests: [...]`) become `Test` actions
//! on the table it writes, run after it and before the actions that read that table; a
//! failing error-level test fails with its count and first rows and skips the readers (as
//! `dbt build` does), a warn-level one only logs; tests written as actions (a query that
//! must return no rows, a row count); the synthetic actions stay out of exports. On SQLite,
//! and on PostgreSQL.

use crate::common;

use common::*;
use serde_json::{Value, json};
use weft_tests::postgres::Postgres;

const RAW: &str = "CREATE TABLE raw_orders (id INTEGER, customer_id INTEGER, status TEXT);
    INSERT INTO raw_orders VALUES (1, 1, 'placed'), (2, 2, 'shipped'), (3, NULL, 'placed');
    CREATE TABLE raw_customers (id INTEGER, name TEXT);
    INSERT INTO raw_customers VALUES (1, 'Ann'), (2, 'Bo');";

/// Sheet 90 on connection `conn`: `customers` and `orders` (with its tests) made from the raw
/// tables, `totals` reading `orders`, and a test written as an action.
fn document(conn: i64, kind: &str) -> Value {
    let sql = |name: &str, text: &str| json!({"module": "Sql", "name": name, "action": text});
    let mut orders = sql(
        "orders",
        "DROP TABLE IF EXISTS orders; CREATE TABLE orders AS SELECT * FROM raw_orders",
    );
    orders["tests"] = json!([
        {"unique": "id"},
        {"not_null": "customer_id", "severity": "warn"},
        {"accepted_values": "status", "values": ["placed", "shipped", "completed"]},
        {"relationships": "customer_id", "to": "customers.id"}
    ]);
    json!({"version": 1, "transformationData": {
    "folders": [{"id": 90, "path": "/dt"}],
    "connections": [{"id": conn, "name": "dw", "type": kind}],
    "sheets": [{"id": 90, "attributes": {"name": "models", "folder_id": 90, "folder": "/dt", "connection": "dw"},
        "nodes": [
            {"id": 901, "type": 0, "attributes": sql("customers", "DROP TABLE IF EXISTS customers; CREATE TABLE customers AS SELECT * FROM raw_customers")},
            {"id": 902, "type": 0, "attributes": orders},
            {"id": 903, "type": 0, "attributes": sql("totals", "DROP TABLE IF EXISTS totals; CREATE TABLE totals AS SELECT status, count(*) AS n FROM orders GROUP BY status")},
            {"id": 904, "type": 0, "attributes": {"module": "Test", "name": "few orders", "test": "row_count", "table": "raw_orders", "max": 100}},
            {"id": 905, "type": 0, "attributes": {"module": "Test", "name": "no unnamed", "action": "SELECT id FROM raw_customers WHERE name IS NULL"}}
        ]}]}})
}

fn action<'a>(inst: &'a Value, name: &str) -> &'a Value {
    inst["actions"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == name))
        .unwrap_or_else(|| panic!("no action {name}: {inst}"))
}

/// The names of the actions `name` depends on.
fn waits_for(inst: &Value, name: &str) -> Vec<String> {
    let ids: Vec<i64> = action(inst, name)["dependsOn"]
        .as_array()
        .map(|d| d.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    let mut names: Vec<String> = inst["actions"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|x| x["actionId"].as_i64().is_some_and(|i| ids.contains(&i)))
                .filter_map(|x| x["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Runs the scenario on a server whose connection `conn` is ready, `exec` running SQL on it.
fn scenario(w: &Weft, conn: i64, kind: &str, exec: &dyn Fn(&str)) {
    let (st, v) = post(&w.url, deploy_body(&document(conn, kind).to_string()));
    assert_eq!(st, 200, "{v}");
    let inst = run_sheet_to_end(w, "/dt/models");
    assert_eq!(inst["state"], "finished", "{inst}");
    // Each test after what it tests (a relationship after its parent too), the reader of
    // `orders` after its tests.
    assert_eq!(waits_for(&inst, "orders: unique(id)"), ["orders"]);
    assert_eq!(
        waits_for(&inst, "orders: relationships(customer_id)"),
        ["customers", "orders"]
    );
    assert_eq!(
        waits_for(&inst, "totals"),
        [
            "orders",
            "orders: accepted_values(status)",
            "orders: not_null(customer_id)",
            "orders: relationships(customer_id)",
            "orders: unique(id)"
        ]
    );
    // The warning is only logged: one order has no customer.
    let warned = action(&inst, "orders: not_null(customer_id)");
    assert_eq!(warned["state"], "F", "{inst}");
    assert!(
        warned["log"].to_string().contains("warning (severity warn): test not_null(customer_id) of \\\"orders\\\" failed: 1 failing row(s); each: id=3, customer_id=NULL, status='placed'"),
        "{warned}"
    );
    // Bad data: an unknown status fails its test, and `totals` is skipped.
    exec("INSERT INTO raw_orders VALUES (4, 1, 'lost'), (5, 1, 'lost'), (5, 2, 'placed')");
    let inst = run_sheet_to_end(w, "/dt/models");
    assert_eq!(inst["state"], "failed", "{inst}");
    let failed = action(&inst, "orders: accepted_values(status)");
    assert_eq!(failed["state"], "E", "{inst}");
    assert_eq!(
        failed["error"],
        format!(
            "action {} (Test): test accepted_values(status: placed, shipped, completed) of \"orders\" failed: 1 failing row(s); each: status='lost', n=2",
            failed["actionId"]
        ),
        "{inst}"
    );
    assert!(
        action(&inst, "orders: unique(id)")["error"]
            .as_str()
            .is_some_and(|e| e.ends_with("1 failing row(s); each: id=5, n=2")),
        "{inst}"
    );
    assert_eq!(action(&inst, "totals")["state"], "S", "{inst}");
    assert_eq!(action(&inst, "few orders")["state"], "F", "{inst}");
    exec("INSERT INTO raw_customers VALUES (3, NULL)");
    let inst = run_sheet_to_end(w, "/dt/models");
    assert_eq!(
        action(&inst, "no unnamed")["error"],
        "action 905 (Test): test no_rows of \"raw_customers\" failed: 1 failing row(s); each: id=3",
        "{inst}"
    );
}

#[test]
fn attached_tests_run_after_their_model_and_a_failure_skips_its_readers_on_sqlite() {
    let w = Weft::start();
    let data = w.home.path().join("dw.db");
    rusqlite::Connection::open(&data)
        .expect("db")
        .execute_batch(RAW)
        .expect("raw");
    w.add_keys(&format!("5|sqlite|{}|||\n", data.display()));
    scenario(&w, 5, "sqlite", &|sql| {
        rusqlite::Connection::open(&data)
            .expect("db")
            .execute_batch(sql)
            .expect("exec");
    });
    // The tests are nodes of the stored sheet, not of its export.
    let (st, v) = command(&w, "GetSheet", json!({"sheetId": 90}));
    assert_eq!(st, 200, "{v}");
    assert!(
        v.to_string()
            .contains("\"module\":\"Test\",\"name\":\"orders: unique(id)\""),
        "{v}"
    );
    let (st, v) = command(&w, "ExportRepository", json!({}));
    assert_eq!(st, 200, "{v}");
    let all = v["payload"].to_string();
    assert!(
        all.contains("accepted_values") && !all.contains("orders: unique(id)"),
        "{all}"
    );
}

#[test]
fn attached_tests_on_postgresql() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql(RAW).expect("raw");
    let w = Weft::start();
    w.add_keys(&format!(
        "7|postgresql|postgresql://127.0.0.1:{}/weft|weft|secret|sslmode=disable\n",
        pg.port
    ));
    scenario(&w, 7, "postgresql", &|sql| {
        pg.psql(sql).expect("exec");
    });
}

#[test]
fn wrong_tests_are_refused_at_their_place() {
    let w = Weft::start();
    let mut doc = document(5, "sqlite");
    let orders = &mut doc["transformationData"]["sheets"][0]["nodes"][1]["attributes"];
    orders["tests"] = json!([
        {"unique": "id"},
        "not_null",
        {"uniq": "id"},
        {"accepted_values": "status"},
        {"relationships": "customer_id", "to": "customers"},
        {"unique": "id", "table": "elsewhere"}
    ]);
    let text = serde_json::to_string_pretty(&doc).expect("text");
    let (st, v) = post(&w.url, deploy_body(&text));
    assert_eq!(st, 422, "{v}");
    let got: Vec<String> = v["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| format!("{} {} {}", d["line"], d["code"], d["message"]))
        .collect();
    let line_of = |needle: &str| {
        text.lines()
            .position(|l| l.contains(needle))
            .map(|i| i + 1)
            .unwrap_or_default()
    };
    let want = [
        (
            line_of("\"not_null\""),
            "action.tests",
            "a test is an object",
        ),
        (
            line_of("\"uniq\""),
            "Test.attribute",
            "`test: uniq` is not a test",
        ),
        (
            line_of("\"accepted_values\""),
            "Test.attribute",
            "needs `values`",
        ),
        (
            line_of("\"to\": \"customers\""),
            "Test.attribute",
            "needs `to`",
        ),
        (
            line_of("\"elsewhere\""),
            "action.tests",
            "`table: elsewhere` is none of the tables action 902 writes (orders)",
        ),
    ];
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for ((line, code, message), g) in want.iter().zip(&got) {
        assert!(
            g.starts_with(&format!("{line} \"{code}\"")) && g.contains(message),
            "{g} (wanted line {line}, {code}, {message})"
        );
    }
}
