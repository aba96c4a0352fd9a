//! `examples/jaffle_shop`, dbt Labs' jaffle_shop written for weft, end to end with the real
//! binary: its documents hold no id and fewer non-blank lines than dbt's project (247); one
//! `weft deploy` of the project and one run give the tables dbt gives, on SQLite and on
//! PostgreSQL (types included); bad data fails the test dbt fails and skips what depends on
//! the tested model.

use crate::common;

use common::actions::rows;
use common::*;
use weft_tests::postgres::Postgres;

fn example() -> std::path::PathBuf {
    root().join("examples/jaffle_shop")
}

/// `weft ARGS` in `w`'s home: exit code and both outputs.
fn weft(w: &Weft, args: &[&str]) -> (Option<i32>, String) {
    let (code, out, err) = w.cli(&[args, &["--url", &w.url]].concat());
    (code, format!("{out}{err}"))
}

/// Deploys the connection of `kind` and the project in `project`, and runs the folder as
/// the batch does; the run's exit code and output.
fn deploy_and_run(w: &Weft, kind: &str, project: &std::path::Path) -> (Option<i32>, String) {
    let conn = example().join(format!("connections/{kind}.dsr"));
    let (code, out) = weft(w, &["deploy", conn.to_str().expect("path")]);
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = weft(w, &["deploy", project.to_str().expect("path")]);
    assert_eq!(code, Some(0), "{out}");
    weft(
        w,
        &[
            "run",
            "--folder",
            "/jaffle",
            "--name",
            "jaffle_shop",
            "--wait",
        ],
    )
}

#[test]
fn the_example_is_shorter_than_dbts_and_holds_no_id() {
    let mut files = Vec::new();
    weft_tests::documents::files(&example().join("project"), &[".dsr", ".sql"], &mut files);
    assert_eq!(files.len(), 9, "{files:?}");
    let mut lines = 0;
    for text in &files {
        lines += text.lines().filter(|l| !l.trim().is_empty()).count();
        for l in text.lines() {
            let t = l.trim_start();
            assert!(
                !t.starts_with("id:")
                    && !t.contains("{ id:")
                    && !t.contains("_id:")
                    && !t.contains("type: 0"),
                "a hand-written id: {l}"
            );
        }
    }
    assert!(lines <= 247, "{lines} non-blank lines");
    // Checked offline with the connection of an environment; without it, the one problem is
    // said once per sheet.
    let check = |with: &[&str]| {
        let home = tempfile::tempdir().expect("home");
        let o = std::process::Command::new(weft_bin())
            .arg("check")
            .arg(example().join("project"))
            .args(with)
            .env("WEFT_HOME", home.path())
            .output()
            .expect("weft check");
        let (out, err) = text(&o);
        (o.status.code(), format!("{out}{err}"))
    };
    let conn = example().join("connections/postgresql.dsr");
    let (code, out) = check(&["--with", conn.to_str().expect("path")]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("(4 files): 0 error(s), 0 warning(s)"), "{out}");
    let (code, out) = check(&[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("(4 files): 3 error(s)"), "{out}");
}

#[test]
fn jaffle_shop_builds_dbts_tables_on_sqlite() {
    let w = Weft::start();
    let db = w.home.path().join("jaffle.db");
    w.add_keys(&format!("jaffle|sqlite|{}|||\n", db.display()));
    let (code, out) = deploy_and_run(&w, "sqlite", &example().join("project"));
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("finished: F 28"), "{out}");
    assert_eq!(
        rows(
            &db,
            "SELECT * FROM customers WHERE customer_id IN (1, 3, 100) ORDER BY 1"
        ),
        [
            "1|Michael|P.|2018-01-01|2018-02-10|2|33",
            "3|Kathleen|P.|2018-01-02|2018-03-11|3|65",
            "100|Jean|M.|NULL|NULL|NULL|NULL"
        ]
    );
    // The sums as the raw files give them (each payment's cents divided by 100, as dbt's
    // stg_payments does), worked out apart from weft.
    assert_eq!(
        rows(
            &db,
            "SELECT count(*), sum(amount), sum(credit_card_amount), sum(coupon_amount), sum(bank_transfer_amount), sum(gift_card_amount) FROM orders"
        ),
        ["99|1672|871|185|411|205"]
    );
}

#[test]
fn jaffle_shop_builds_dbts_tables_on_postgresql_and_bad_data_fails_dbts_test() {
    let pg = Postgres::start().expect("PostgreSQL");
    let w = Weft::start();
    w.add_keys(&format!(
        "jaffle|postgresql|postgresql://127.0.0.1:{}/weft|weft|secret|sslmode=disable\n",
        pg.port
    ));
    let (code, out) = deploy_and_run(&w, "postgresql", &example().join("project"));
    assert_eq!(code, Some(0), "{out}");
    let columns = |t: &str| {
        pg.psql(&format!("SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = '{t}'"))
            .expect("columns")
    };
    // As dbt-postgres makes them.
    assert_eq!(
        columns("raw_payments"),
        "id integer, order_id integer, payment_method text, amount integer"
    );
    assert_eq!(
        columns("customers"),
        "customer_id integer, first_name text, last_name text, first_order date, most_recent_order date, number_of_orders bigint, customer_lifetime_value bigint"
    );
    assert_eq!(
        columns("orders"),
        "order_id integer, customer_id integer, order_date date, status text, credit_card_amount bigint, coupon_amount bigint, bank_transfer_amount bigint, gift_card_amount bigint, amount bigint"
    );
    assert_eq!(
        pg.psql("SELECT concat_ws('|', count(*), sum(amount), sum(customer_id)) FROM orders")
            .expect("orders"),
        "99|1672|4777"
    );
    assert_eq!(
        pg.psql("SELECT customer_lifetime_value FROM customers WHERE customer_id = 1")
            .expect("clv"),
        "33"
    );
    assert_eq!(
        pg.psql("SELECT table_type FROM information_schema.tables WHERE table_name = 'stg_orders'")
            .expect("view"),
        "VIEW"
    );
    // Bad data: an order with a status dbt's accepted_values refuses.
    let dir = tempfile::tempdir().expect("copy");
    let project = dir.path().join("project");
    weft_tests::documents::copy_tree(&example().join("project"), &project);
    let orders = project.join("seeds/raw_orders.csv");
    let mut csv = std::fs::read_to_string(&orders).expect("csv");
    csv.push_str("100,1,2018-04-10,lost\n");
    std::fs::write(&orders, csv).expect("csv");
    let (code, out) = deploy_and_run(&w, "postgresql", &project);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("stg_orders: accepted_values(status)"), "{out}");
    assert!(
        out.contains("test accepted_values(status: placed, shipped, completed, return_pending, returned) of \"stg_orders\" failed: 1 failing row(s); each: status='lost', n=1"),
        "{out}"
    );
    // The models reading stg_orders were skipped; the old tables stand.
    assert_eq!(
        pg.psql("SELECT count(*) FROM orders").expect("orders"),
        "99"
    );
}
