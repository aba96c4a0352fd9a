//! Models end to end (`Model`, `materialize: table | view | incremental`) on PostgreSQL and
//! SQLite: a view whose columns change is replaced, a table is built under a temporary
//! name and swapped in while a view on it is made again after it in the same run, and an
//! incremental model adds what its filter keeps, replacing rows by key.

use crate::common;

use common::*;
use serde_json::{Value, json};
use weft_tests::postgres::Postgres;

const RAW: &str = "CREATE TABLE raw_events (id INTEGER, day DATE, v TEXT);
    INSERT INTO raw_events VALUES (1, '2024-01-01', 'a'), (2, '2024-01-02', 'b');";

/// Sheet 60: `stg` a view of the raw table (its columns `stg_columns`), `daily` a table from
/// it, `on_daily` a view on that, and `events` incremental.
fn document(conn: i64, kind: &str, stg_columns: &str) -> Value {
    let model = |name: &str, materialize: &str, text: &str| json!({"module": "Model", "name": name, "table": name, "materialize": materialize, "action": text});
    let mut events = model("events", "incremental", "SELECT id, day, v FROM raw_events");
    events["uniqueKey"] = json!("id");
    events["filter"] = json!("day >= (SELECT max(day) FROM {{this}})");
    json!({"version": 1, "transformationData": {
    "folders": [{"id": 60, "path": "/m"}],
    "connections": [{"id": conn, "name": "dw", "type": kind}],
    "sheets": [{"id": 60, "attributes": {"name": "models", "folder_id": 60, "folder": "/m", "connection": "dw"},
        "nodes": [
            {"id": 601, "type": 0, "attributes": model("stg", "view", &format!("SELECT {stg_columns} FROM raw_events"))},
            {"id": 602, "type": 0, "attributes": model("daily", "table", "SELECT day, count(*) AS n FROM stg GROUP BY day")},
            {"id": 603, "type": 0, "attributes": model("on_daily", "view", "SELECT sum(n) AS total FROM daily")},
            {"id": 604, "type": 0, "attributes": events}
        ]}]}})
}

fn run(w: &Weft) -> Value {
    let inst = run_sheet_to_end(w, "/m/models");
    assert_eq!(inst["state"], "finished", "{inst}");
    inst
}

fn deploy(w: &Weft, doc: &Value) {
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
}

/// The scenario; `query` answers one value of a query on the connection, `exec` runs SQL.
fn scenario(w: &Weft, conn: i64, kind: &str, query: &dyn Fn(&str) -> String, exec: &dyn Fn(&str)) {
    deploy(w, &document(conn, kind, "id, day"));
    run(w);
    assert_eq!(query("SELECT total FROM on_daily"), "2");
    assert_eq!(query("SELECT count(*) FROM events"), "2");
    // The view's columns change (another one, another order); the table and the view on it
    // are built again after it in the same run.
    deploy(w, &document(conn, kind, "v, day, id"));
    exec(
        "INSERT INTO raw_events VALUES (3, '2024-01-03', 'c'); UPDATE raw_events SET v = 'B' WHERE id = 2",
    );
    let inst = run(w);
    assert_eq!(query("SELECT v FROM stg WHERE id = 3"), "c");
    assert_eq!(query("SELECT total FROM on_daily"), "3");
    let daily = inst["actions"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == "daily"))
        .expect("daily");
    assert!(
        daily["log"]
            .to_string()
            .contains("built under a temporary name and swapped in (3 rows)"),
        "{daily}"
    );
    // Incremental: rows from the latest day on, by key: 2 replaced (B), 3 added; 1 kept.
    assert_eq!(query("SELECT count(*) FROM events"), "3");
    assert_eq!(query("SELECT v FROM events WHERE id = 2"), "B");
    exec("UPDATE raw_events SET v = 'A' WHERE id = 1");
    run(w);
    assert_eq!(
        query("SELECT v FROM events WHERE id = 1"),
        "a",
        "before the filter's day: kept"
    );
}

#[test]
fn models_build_views_tables_and_increments_on_postgresql() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql(RAW).expect("raw");
    let w = Weft::start();
    w.add_keys(&format!(
        "7|postgresql|postgresql://127.0.0.1:{}/weft|weft|secret|sslmode=disable\n",
        pg.port
    ));
    scenario(&w, 7, "postgresql", &|q| pg.psql(q).expect("query"), &|s| {
        pg.psql(s).expect("exec");
    });
}

#[test]
fn models_build_views_tables_and_increments_on_sqlite() {
    let w = Weft::start();
    let data = w.home.path().join("dw.db");
    rusqlite::Connection::open(&data)
        .expect("db")
        .execute_batch(RAW)
        .expect("raw");
    w.add_keys(&format!("5|sqlite|{}|||\n", data.display()));
    scenario(
        &w,
        5,
        "sqlite",
        &|q| common::actions::rows(&data, q).join(","),
        &|s| {
            rusqlite::Connection::open(&data)
                .expect("db")
                .execute_batch(s)
                .expect("exec");
        },
    );
}

/// A model whose text is a template (dbt's loop over payment methods) renders at deploy,
/// runs, and its mistakes are refused at their place: in the template, or in the rendered
/// SQL, named by its line.
#[test]
fn a_templated_model_renders_its_loop_and_its_mistakes_are_placed() {
    let w = Weft::start();
    let data = w.home.path().join("dw.db");
    rusqlite::Connection::open(&data)
        .expect("db")
        .execute_batch(
            "CREATE TABLE payments (order_id INTEGER, method TEXT, amount INTEGER);
            INSERT INTO payments VALUES (1, 'coupon', 5), (1, 'card', 10), (2, 'card', 7);",
        )
        .expect("raw");
    w.add_keys(&format!("5|sqlite|{}|||\n", data.display()));
    let template = "{% set methods = ['card', 'coupon', 'gift'] %}
SELECT
    order_id,
    {% for m in methods -%}
    sum(CASE WHEN method = '{{ m }}' THEN amount ELSE 0 END) AS {{ m }}_amount,
    {% endfor -%}
    sum(amount) AS total
FROM payments
GROUP BY order_id";
    let doc = |text: &str| {
        json!({"version": 1, "transformationData": {
            "folders": [{"path": "/t"}],
            "connections": [{"id": 5, "name": "dw", "type": "sqlite"}],
            "sheets": [{"attributes": {"name": "models", "folder": "/t", "connection": "dw"},
                "nodes": [{"attributes": {"module": "Model", "name": "order_payments", "table": "order_payments", "template": true, "action": text}}]}]}})
        .to_string()
    };
    let (st, v) = post(&w.url, deploy_body(&doc(template)));
    assert_eq!(st, 200, "{v}");
    let inst = run_sheet_to_end(&w, "/t/models");
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(
        common::actions::rows(&data, "SELECT * FROM order_payments ORDER BY 1"),
        ["1|10|5|0|15", "2|7|0|0|7"]
    );
    // The template's own mistake, at its place in the template.
    let broken = template.replace("{% endfor -%}", "{% endfro -%}");
    let text = doc(&broken);
    let (st, v) = post(&w.url, deploy_body(&text));
    assert_eq!(st, 422, "{v}");
    let d = &v["error"]["details"][0];
    assert_eq!(d["code"], "action.template", "{v}");
    assert!(
        d["message"]
            .as_str()
            .is_some_and(|m| m.contains("the template does not render")),
        "{v}"
    );
    // A mistake in what it renders: the rendered line is named.
    let bad_sql = template.replace("sum(amount) AS total", "sum(amount) AS total,");
    let (st, v) = post(&w.url, deploy_body(&doc(&bad_sql)));
    assert_eq!(st, 422, "{v}");
    let d = &v["error"]["details"][0];
    assert_eq!(d["code"], "sql.syntax", "{v}");
    assert!(
        d["message"]
            .as_str()
            .is_some_and(|m| m.contains("of the rendered template: `FROM payments`")),
        "{v}"
    );
}
