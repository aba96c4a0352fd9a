//! Models built on a real SQLite file.

use super::*;
use weft_sdk::AttributeValue;
use weft_sdk::testing::{self, Run};

fn build(
    db: &std::path::Path,
    table: &str,
    query: &str,
    attrs: &[(&str, &str)],
) -> (PluginResult<RunOutcome>, Vec<String>) {
    let conn = testing::sqlite_file(db, "").expect("db");
    let mut r = Run::new(query)
        .target(testing::table(2, 1, table))
        .connection(1, conn);
    for (k, v) in attrs {
        r = r.attribute(k, AttributeValue::string(*v));
    }
    let (mut ctx, log) = r.build();
    (Model.run(&mut ctx), log.lines())
}

fn rows(db: &std::path::Path, sql: &str) -> Vec<String> {
    let mut c = testing::sqlite_file(db, "").expect("db");
    let (_, rows) = c.query_all(sql, &[]).expect("query");
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|v| format!("{:?}", v.get()))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

fn exec(db: &std::path::Path, sql: &str) {
    testing::sqlite_file(db, "")
        .expect("db")
        .execute_batch(sql)
        .expect("exec");
}

#[test]
fn a_table_is_built_and_swapped_in_under_the_views_that_read_it() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("dw.db");
    exec(
        &db,
        "CREATE TABLE src (id INTEGER, v TEXT); INSERT INTO src VALUES (1, 'a'), (2, 'b');",
    );
    let (out, log) = build(&db, "t", "SELECT id, v FROM src", &[]);
    assert_eq!(out.expect("first").rows_written, 2);
    assert!(log[0].contains("swapped in (2 rows)"), "{log:?}");
    exec(&db, "CREATE VIEW on_t AS SELECT count(*) AS n FROM t;");
    // Other columns: the view on it still reads it.
    exec(&db, "INSERT INTO src VALUES (3, 'c');");
    build(&db, "t", "SELECT id, v, id * 2 AS twice FROM src", &[])
        .0
        .expect("again");
    assert_eq!(rows(&db, "SELECT n FROM on_t"), ["Int(3)"]);
    assert_eq!(rows(&db, "SELECT twice FROM t WHERE id = 3"), ["Int(6)"]);
    // A failing query leaves the table as it was, and no leftover.
    let (out, _) = build(&db, "t", "SELECT nope FROM src", &[]);
    assert!(out.is_err());
    assert_eq!(rows(&db, "SELECT count(*) FROM t"), ["Int(3)"]);
}

#[test]
fn a_view_is_made_again_when_its_columns_change_and_replaces_a_table() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("dw.db");
    exec(
        &db,
        "CREATE TABLE src (id INTEGER, v TEXT); INSERT INTO src VALUES (1, 'a'); CREATE TABLE stg (x INTEGER);",
    );
    build(&db, "stg", "SELECT id FROM src", &[("materialize", "view")])
        .0
        .expect("view over a table");
    build(
        &db,
        "stg",
        "SELECT v, id FROM src",
        &[("materialize", "view")],
    )
    .0
    .expect("other columns");
    assert_eq!(
        rows(&db, "SELECT type FROM sqlite_master WHERE name = 'stg'"),
        ["Text(\"view\")"]
    );
    assert_eq!(rows(&db, "SELECT * FROM stg"), ["Text(\"a\")|Int(1)"]);
}

#[test]
fn an_incremental_model_adds_what_its_filter_keeps_and_replaces_by_key() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("dw.db");
    exec(
        &db,
        "CREATE TABLE ev (id INTEGER, day TEXT, v TEXT); INSERT INTO ev VALUES (1, '2024-01-01', 'a'), (2, '2024-01-02', 'b');",
    );
    let attrs = [
        ("materialize", "incremental"),
        ("uniqueKey", "id"),
        ("filter", "day >= (SELECT max(day) FROM {{this}})"),
    ];
    let (out, log) = build(&db, "inc", "SELECT id, day, v FROM ev", &attrs);
    assert_eq!(out.expect("first").rows_written, 2);
    assert!(
        log[0].contains("first build of an incremental model"),
        "{log:?}"
    );
    exec(
        &db,
        "UPDATE ev SET v = 'B' WHERE id = 2; UPDATE ev SET v = 'A' WHERE id = 1; INSERT INTO ev VALUES (3, '2024-01-03', 'c');",
    );
    let (out, log) = build(&db, "inc", "SELECT id, day, v FROM ev", &attrs);
    assert_eq!(out.expect("again").rows_written, 2, "{log:?}");
    assert!(
        log[0].contains("2 rows put in incrementally (1 replaced by key)"),
        "{log:?}"
    );
    assert_eq!(
        rows(&db, "SELECT id, v FROM inc ORDER BY id"),
        [
            "Int(1)|Text(\"a\")",
            "Int(2)|Text(\"B\")",
            "Int(3)|Text(\"c\")"
        ]
    );
    // Without a key, rows are added.
    let (out, _) = build(
        &db,
        "inc",
        "SELECT id, day, v FROM ev",
        &[("materialize", "incremental"), ("filter", "id = 3")],
    );
    assert_eq!(out.expect("append").rows_written, 1);
    assert_eq!(rows(&db, "SELECT count(*) FROM inc"), ["Int(4)"]);
}

#[test]
fn a_long_name_gets_a_temporary_name_postgresql_keeps_apart() {
    let long = "x".repeat(60);
    let temp = build::temp_name_of(&long);
    assert!(
        temp.len() <= 63 && temp != long && !long.starts_with(&temp),
        "{temp}"
    );
    assert_eq!(temp, build::temp_name_of(&long));
    assert_eq!(build::temp_name_of("orders"), "orders__weft_new");
}

#[test]
fn validation_wants_one_query_and_fitting_attributes() {
    let target = testing::table(2, 1, "t");
    let check = |text: &str, attrs: &[(&str, &str)]| -> Vec<String> {
        let mut v = testing::Validate::new(Some(text)).target(target.clone());
        for (k, val) in attrs {
            v = v.attribute(k, AttributeValue::string(*val));
        }
        Model
            .validate(&v.build())
            .problems()
            .iter()
            .map(|p| p.code().to_owned())
            .collect()
    };
    assert!(check("SELECT 1 AS x", &[]).is_empty());
    assert_eq!(check("DELETE FROM t", &[]), ["Model.query"]);
    assert_eq!(
        check("SELECT 1", &[("materialize", "matview")]),
        ["Model.attribute"]
    );
    assert_eq!(
        check("SELECT 1", &[("uniqueKey", "id")]),
        ["Model.attribute"]
    );
    let input = testing::Validate::new(Some("SELECT 1"))
        .attribute("file", AttributeValue::string("models/customers.sql"))
        .build();
    let w = Model.writes(&input);
    assert_eq!((w[0].table().name(), w[0].defines()), ("customers", true));
}
