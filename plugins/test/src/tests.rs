//! Each kind of test on a real SQLite file, passing and failing.

use super::*;
use weft_sdk::AttributeValue;
use weft_sdk::testing::{self, Run};

const SETUP: &str = "CREATE TABLE customers (id INTEGER, name TEXT);
    INSERT INTO customers VALUES (1, 'Ann'), (2, 'Bo'), (3, NULL);
    CREATE TABLE orders (id INTEGER, customer_id INTEGER, status TEXT);
    INSERT INTO orders VALUES (10, 1, 'placed'), (11, 2, 'shipped'), (12, 2, 'lost'), (12, 9, 'placed'), (13, NULL, NULL);";

fn run(attrs: &[(&str, &str)], text: &str) -> (PluginResult<RunOutcome>, Vec<String>) {
    let conn = testing::sqlite(SETUP).expect("db");
    let mut r = Run::new(text)
        .source(testing::table(2, 1, "orders"))
        .connection(1, conn);
    for (k, v) in attrs {
        let value = match v.parse::<i64>() {
            Ok(i) if matches!(*k, "min" | "max") => AttributeValue::integer(i),
            _ => AttributeValue::string(*v),
        };
        r = r.attribute(k, value);
    }
    let (mut ctx, log) = r.build();
    let out = Test.run(&mut ctx);
    (out, log.lines())
}

fn failure(attrs: &[(&str, &str)], text: &str) -> String {
    run(attrs, text).0.expect_err("fails").to_string()
}

#[test]
fn each_kind_fails_with_its_count_and_rows() {
    assert_eq!(
        failure(&[("test", "unique"), ("column", "id")], ""),
        "test unique(id) of \"orders\" failed: 1 failing row(s); each: id=12, n=2"
    );
    assert_eq!(
        failure(
            &[("test", "not_null"), ("column", "customer_id, status")],
            ""
        ),
        "test not_null(customer_id, status) of \"orders\" failed: 1 failing row(s); each: id=13, customer_id=NULL, status=NULL"
    );
    assert_eq!(
        failure(
            &[
                ("test", "accepted_values"),
                ("column", "status"),
                ("values", "placed, shipped")
            ],
            ""
        ),
        "test accepted_values(status: placed, shipped) of \"orders\" failed: 1 failing row(s); each: status='lost', n=1"
    );
    assert_eq!(
        failure(
            &[
                ("test", "relationships"),
                ("column", "customer_id"),
                ("to", "customers.id")
            ],
            ""
        ),
        "test relationships(customer_id -> customers.id) of \"orders\" failed: 1 failing row(s); each: customer_id=9"
    );
    assert_eq!(
        failure(&[("test", "row_count"), ("min", "6")], ""),
        "test row_count(6..) of \"orders\" failed: \"orders\" holds 5 rows"
    );
    assert_eq!(
        failure(&[], "SELECT id FROM orders WHERE status = 'lost';"),
        "test no_rows of \"orders\" failed: 1 failing row(s); each: id=12"
    );
}

#[test]
fn passing_tests_and_warnings_finish() {
    let (out, log) = run(
        &[("test", "unique"), ("column", "id"), ("where", "id < 12")],
        "",
    );
    out.expect("passes");
    assert_eq!(log, ["test unique(id) of \"orders\" passed."]);
    run(&[("test", "row_count"), ("min", "1"), ("max", "5")], "")
        .0
        .expect("5 rows");
    run(&[("test", "not_null"), ("column", "id")], "")
        .0
        .expect("ids");
    let (out, log) = run(
        &[("test", "unique"), ("column", "id"), ("severity", "warn")],
        "",
    );
    assert_eq!(out.expect("warns").rows_read, 1);
    assert!(
        log[0].starts_with("warning (severity warn): test unique(id)"),
        "{log:?}"
    );
}

#[test]
fn at_most_ten_rows_are_shown() {
    let conn = testing::sqlite(
        "CREATE TABLE t (v INTEGER); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 25) INSERT INTO t SELECT NULL FROM n;",
    )
    .expect("db");
    let (mut ctx, _) = Run::new("")
        .source(testing::table(2, 1, "t"))
        .connection(1, conn)
        .attribute("test", AttributeValue::string("not_null"))
        .attribute("column", AttributeValue::string("v"))
        .build();
    let e = Test.run(&mut ctx).expect_err("fails").to_string();
    assert!(e.contains("25 failing row(s); the first 10: v=NULL"), "{e}");
    assert_eq!(e.matches("v=NULL").count(), 10, "{e}");
}

#[test]
fn validation_reads_the_tables_and_says_what_is_checked() {
    let input = testing::Validate::new(None)
        .attribute("test", AttributeValue::string("relationships"))
        .attribute("table", AttributeValue::string("dw.orders"))
        .attribute("column", AttributeValue::string("customer_id"))
        .attribute("to", AttributeValue::string("customers.id"))
        .build();
    let out = Test.validate(&input);
    assert!(out.problems().is_empty(), "{:?}", out.problems());
    let reads: Vec<String> = out
        .reads()
        .iter()
        .map(|t| format!("{:?}.{}", t.schema(), t.name()))
        .collect();
    assert_eq!(reads, ["Some(\"dw\").orders", "None.customers"]);
    let checked = Test.checks(&input);
    assert_eq!(
        (checked[0].schema(), checked[0].name()),
        (Some("dw"), "orders")
    );
    let custom = testing::Validate::new(Some("SELECT * FROM orders WHERE amount < 0")).build();
    assert!(Test.checks(&custom).is_empty());
    let none = testing::Validate::new(None)
        .attribute("test", AttributeValue::string("unique"))
        .attribute("column", AttributeValue::string("id"))
        .build();
    assert_eq!(Test.validate(&none).problems()[0].code(), "Test.table");
}
