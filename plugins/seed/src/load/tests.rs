//! Loads into real SQLite files through the sdk's test connections.

use super::*;
use crate::Seed;
use weft_sdk::testing::{self, Run};
use weft_sdk::{ActionModule, AttributeValue};

const ORDERS: &str = "id,user_id,order_date,status,amount,paid\n\
1,1,2018-01-01,returned,10.5,true\n\
2,3,2018-01-02,completed,,false\n\
3,94,2018-01-04,completed,3000000000,\n";

fn run(
    db: &std::path::Path,
    data: &str,
    attrs: &[(&str, &str)],
) -> (PluginResult<RunOutcome>, Vec<String>) {
    let conn = testing::sqlite_file(db, "").expect("file");
    let mut run = Run::new(data)
        .target(testing::table(2, 1, "raw_orders"))
        .connection(1, conn)
        .attribute("file", AttributeValue::string("seeds/raw_orders.csv"));
    for (k, v) in attrs {
        run = run.attribute(k, AttributeValue::string(*v));
    }
    let (mut ctx, log) = run.build();
    let out = Seed.run(&mut ctx);
    (out, log.lines())
}

fn query(db: &std::path::Path, sql: &str) -> Vec<Vec<String>> {
    let mut c = testing::sqlite_file(db, "").expect("file");
    let (_, rows) = c.query_all(sql, &[]).expect("query");
    rows.iter()
        .map(|r| r.iter().map(|v| format!("{:?}", v.get())).collect())
        .collect()
}

#[test]
fn a_csv_is_loaded_with_inferred_types_once_until_it_changes() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("dw.db");
    let (out, log) = run(&db, ORDERS, &[]);
    assert_eq!(out.expect("load").rows_written, 3);
    assert!(
        log.iter()
            .any(|l| l.contains("made and loaded: 3 rows from seeds/raw_orders.csv")),
        "{log:?}"
    );
    let types = query(
        &db,
        "SELECT name, type FROM pragma_table_info('raw_orders')",
    );
    let types: Vec<String> = types.iter().map(|r| format!("{} {}", r[0], r[1])).collect();
    assert_eq!(
        types,
        [
            "Text(\"id\") Text(\"INTEGER\")",
            "Text(\"user_id\") Text(\"INTEGER\")",
            "Text(\"order_date\") Text(\"DATE\")",
            "Text(\"status\") Text(\"TEXT\")",
            "Text(\"amount\") Text(\"REAL\")",
            "Text(\"paid\") Text(\"BOOLEAN\")",
        ]
    );
    assert_eq!(
        query(
            &db,
            "SELECT amount, paid, typeof(order_date) FROM raw_orders ORDER BY id"
        ),
        [
            ["Float(10.5)", "Int(1)", "Text(\"text\")"],
            ["Null", "Int(0)", "Text(\"text\")"],
            ["Float(3000000000.0)", "Null", "Text(\"text\")"],
        ]
    );
    // The same data again: not loaded (a row changed by hand stays).
    let mut c = testing::sqlite_file(&db, "").expect("file");
    c.execute_batch("UPDATE raw_orders SET status = 'by hand' WHERE id = 1")
        .expect("update");
    let (out, log) = run(&db, ORDERS, &[]);
    assert_eq!(out.expect("skip").rows_written, 0);
    assert!(
        log.iter().any(|l| l.contains("not loaded again")),
        "{log:?}"
    );
    assert_eq!(
        query(&db, "SELECT status FROM raw_orders WHERE id = 1"),
        [["Text(\"by hand\")"]]
    );
    // Changed data: loaded again, and so is the same data read another way.
    let changed = format!("{ORDERS}4,5,2018-01-05,placed,1,true\n");
    let (out, _) = run(&db, &changed, &[]);
    assert_eq!(out.expect("reload").rows_written, 4);
    assert_eq!(
        query(&db, "SELECT status FROM raw_orders WHERE id = 1"),
        [["Text(\"returned\")"]]
    );
    let (out, log) = run(&db, &changed, &[("columnTypes", "amount numeric(12,2)")]);
    assert_eq!(out.expect("declared").rows_written, 4, "{log:?}");
    assert_eq!(
        query(
            &db,
            "SELECT type FROM pragma_table_info('raw_orders') WHERE name = 'amount'"
        ),
        [["Text(\"numeric(12,2)\")"]]
    );
}

#[test]
fn a_mistake_in_the_data_names_its_line_and_leaves_the_table_alone() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("dw.db");
    run(&db, ORDERS, &[]).0.expect("first");
    let conn = testing::sqlite_file(&db, "").expect("file");
    let (mut ctx, _) = Run::new("id,name\n1,a\n2\n")
        .target(testing::table(2, 1, "raw_orders"))
        .connection(1, conn)
        .attribute("file", AttributeValue::string("seeds/raw_orders.csv"))
        .build();
    let e = Seed.run(&mut ctx).expect_err("short line");
    assert!(
        e.to_string()
            .contains("seeds/raw_orders.csv, line 3: this record has 1 fields"),
        "{e}"
    );
    assert_eq!(query(&db, "SELECT count(*) FROM raw_orders"), [["Int(3)"]]);
}

#[test]
fn json_lines_load_by_their_keys() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("dw.db");
    let conn = testing::sqlite_file(&db, "").expect("file");
    let (mut ctx, _) = Run::new(
        "{\"id\": 1, \"tags\": [\"a\"]}\n{\"id\": 2, \"when\": \"2020-01-01 10:00:00\"}\n",
    )
    .target(testing::table(2, 1, "events"))
    .connection(1, conn)
    .attribute("file", AttributeValue::string("events.jsonl"))
    .build();
    assert_eq!(Seed.run(&mut ctx).expect("load").rows_written, 2);
    assert_eq!(
        query(&db, "SELECT id, tags, \"when\" FROM events ORDER BY id"),
        [
            ["Int(1)", "Text(\"[\\\"a\\\"]\")", "Null"],
            ["Int(2)", "Null", "Text(\"2020-01-01 10:00:00\")"],
        ]
    );
}

#[test]
fn declared_types_are_compared_as_postgresql_names_them() {
    assert!(same_type("numeric(10,2)", "NUMERIC(10, 2)"));
    assert!(same_type("integer", "int"));
    assert!(same_type("character varying(20)", "varchar(20)"));
    assert!(same_type("timestamp with time zone", "timestamptz"));
    assert!(!same_type("integer", "bigint"));
    assert!(!same_type("numeric(10,2)", "numeric(12,2)"));
}

#[test]
fn a_path_is_read_only_below_the_directories_allowed() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("d.csv");
    std::fs::write(&file, "a\n1\n").expect("csv");
    let path = file.to_str().expect("path");
    // No directory allowed (the default): refused, at deploy and at run.
    let e = crate::options::allowed_lexically(path).expect_err("none allowed");
    assert!(e.contains("WEFT_SEED_DIRS lists none"), "{e}");
    assert!(crate::options::read_allowed(path).is_err());
}

#[test]
fn validation_finds_the_mistake_and_the_table() {
    let input = testing::Validate::new(Some("a,b\n1,2\n3,4,5\n"))
        .attribute("file", AttributeValue::string("seeds/x.csv"))
        .build();
    let out = Seed.validate(&input);
    let p = &out.problems()[0];
    assert_eq!((p.code(), p.offset()), ("Seed.data", Some(8)));
    let w = Seed.writes(&input);
    assert_eq!(w[0].table().name(), "x");
    assert!(w[0].defines());
    let none = testing::Validate::new(None).build();
    let out = Seed.validate(&none);
    let codes: Vec<&str> = out.problems().iter().map(|p| p.code()).collect();
    assert_eq!(codes, ["Seed.data", "Seed.table"]);
    let declared = testing::Validate::new(Some("a\n1\n"))
        .attribute("file", AttributeValue::string("x.csv"))
        .attribute("columnTypes", AttributeValue::string("b text"))
        .build();
    let out = Seed.validate(&declared);
    let p = &out.problems()[0];
    assert_eq!(
        (p.code(), p.attribute()),
        ("Seed.columnTypes", Some("columnTypes"))
    );
}
