//! History on real SQLite files: each behaviour of the attributes, the refusals, and a
//! property test against a reference history kept in plain Rust.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;
use weft_sdk::Datum;
use weft_sdk::testing::{self, Run};

const SETUP: &str = "
CREATE TABLE IF NOT EXISTS src (id INTEGER, a INTEGER, b TEXT);
CREATE TABLE IF NOT EXISTS dim (id INTEGER, a INTEGER, b TEXT, valid_from_dt TEXT, invalid_from_dt TEXT);";

/// Runs History once on the file `db` at `at` with `attributes`; its outcome and log.
fn run_at(
    db: &Path,
    at: &str,
    attributes: &[(&str, AttributeValue)],
) -> (PluginResult<RunOutcome>, Vec<String>) {
    let conn = testing::sqlite_file(db, SETUP).expect("the file");
    let mut run = Run::new("SELECT id, a, b FROM src")
        .source(testing::table(1, 1, "src"))
        .target(testing::table(2, 1, "dim"))
        .connection(1, conn)
        .attribute("changeTime", AttributeValue::string(at));
    for (name, value) in attributes {
        run = run.attribute(name, value.clone());
    }
    let (mut ctx, log) = run.build();
    let out = History.run(&mut ctx);
    (out, log.lines())
}

fn exec(db: &Path, sql: &str) {
    let mut conn = testing::sqlite_file(db, SETUP).expect("the file");
    conn.execute_batch(sql).expect(sql);
}

/// The target's rows, ordered by key and start.
fn rows(db: &Path) -> Vec<Period> {
    let mut conn = testing::sqlite_file(db, SETUP).expect("the file");
    let (_, rows) = conn
        .query_all(
            "SELECT id, a, b, valid_from_dt, invalid_from_dt FROM dim ORDER BY id, valid_from_dt",
            &[],
        )
        .expect("the target");
    let int = |v: &Value| match v.get() {
        Datum::Int(n) => Some(n),
        _ => None,
    };
    let text = |v: &Value| match v.get() {
        Datum::Text(t) => Some(t.to_owned()),
        _ => None,
    };
    rows.iter()
        .map(|r| Period {
            id: int(&r[0]).expect("id"),
            a: int(&r[1]),
            b: text(&r[2]),
            from: text(&r[3]).expect("from"),
            to: text(&r[4]),
        })
        .collect()
}

fn counts(out: &RunOutcome) -> (u64, u64, u64) {
    (out.rows_read, out.rows_written, out.rows_updated)
}

#[test]
fn changed_rows_close_and_open_missing_keys_close_and_returning_keys_open_again() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("dw.db");
    let by_id = [("keys", AttributeValue::string("id"))];
    exec(
        &db,
        "INSERT INTO src VALUES (1, 10, 'x'), (2, 20, NULL), (3, 30, 'z')",
    );
    let (out, log) = run_at(&db, "2026-01-01", &by_id);
    assert_eq!(counts(&out.expect("first")), (3, 3, 0));
    assert!(
        log[0].contains("3 period(s) opened, 0 closed, 0 unchanged"),
        "{log:?}"
    );
    // Unchanged (a NULL equal to a NULL), one changed, one gone, one new.
    exec(
        &db,
        "DELETE FROM src; INSERT INTO src VALUES (1, 10, 'x'), (2, 21, NULL), (4, 40, 'w')",
    );
    let (out, _) = run_at(&db, "2026-01-02", &by_id);
    assert_eq!(counts(&out.expect("second")), (3, 2, 2));
    // Key 3 comes back: a new period.
    exec(&db, "INSERT INTO src VALUES (3, 30, 'z')");
    let (out, _) = run_at(&db, "2026-01-03", &by_id);
    assert_eq!(counts(&out.expect("third")), (4, 1, 0));
    let d = |s: &str| s.to_owned();
    let got: Vec<_> = rows(&db)
        .into_iter()
        .map(|p| (p.id, p.a, p.b, p.from, p.to))
        .collect();
    assert_eq!(
        got,
        [
            (1, Some(10), Some(d("x")), d("2026-01-01"), None),
            (2, Some(20), None, d("2026-01-01"), Some(d("2026-01-02"))),
            (2, Some(21), None, d("2026-01-02"), None),
            (
                3,
                Some(30),
                Some(d("z")),
                d("2026-01-01"),
                Some(d("2026-01-02"))
            ),
            (3, Some(30), Some(d("z")), d("2026-01-03"), None),
            (4, Some(40), Some(d("w")), d("2026-01-02"), None),
        ]
    );
}

#[test]
fn close_missing_false_leaves_gone_keys_open_and_compare_limits_what_is_a_change() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("dw.db");
    exec(&db, "INSERT INTO src VALUES (1, 10, 'x'), (2, 20, 'y')");
    let keep = [
        ("closeMissing", AttributeValue::bool(false)),
        ("compare", AttributeValue::string("a")),
        ("keys", AttributeValue::string("id")),
    ];
    run_at(&db, "2026-01-01", &keep).0.expect("first");
    // Key 2 gone, key 1's `b` changed (not compared): nothing happens.
    exec(
        &db,
        "DELETE FROM src; INSERT INTO src VALUES (1, 10, 'changed')",
    );
    let (out, _) = run_at(&db, "2026-01-02", &keep);
    assert_eq!(counts(&out.expect("second")), (1, 0, 0));
    assert!(rows(&db).iter().all(|r| r.to.is_none()), "{:?}", rows(&db));
}

#[test]
fn an_open_period_may_end_in_a_far_future_value_and_the_period_columns_have_other_names() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("dw.db");
    exec(
        &db,
        "CREATE TABLE scd (id INTEGER, a INTEGER, b TEXT, since TEXT, until TEXT);
         INSERT INTO src VALUES (1, 10, 'x')",
    );
    let attrs = |at: &str| {
        let conn = testing::sqlite_file(&db, SETUP).expect("file");
        let (mut ctx, _) = Run::new("SELECT id, a, b FROM src")
            .target(testing::table(2, 1, "scd"))
            .connection(1, conn)
            .attribute("keys", AttributeValue::string("id"))
            .attribute("validFrom", AttributeValue::string("since"))
            .attribute("invalidFrom", AttributeValue::string("until"))
            .attribute("openUntil", AttributeValue::string("9999-12-31"))
            .attribute("changeTime", AttributeValue::string(at))
            .build();
        History.run(&mut ctx).expect("run")
    };
    attrs("2026-01-01");
    exec(&db, "UPDATE src SET a = 11");
    assert_eq!(counts(&attrs("2026-01-02")), (1, 1, 1));
    let mut conn = testing::sqlite_file(&db, SETUP).expect("file");
    let (_, got) = conn
        .query_all("SELECT a, since, until FROM scd ORDER BY since", &[])
        .expect("scd");
    let got: Vec<String> = got
        .iter()
        .map(|r| {
            r.iter()
                .map(|v| format!("{:?}", v.get()))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(
        got,
        [
            "Int(10) Text(\"2026-01-01\") Text(\"2026-01-02\")",
            "Int(11) Text(\"2026-01-02\") Text(\"9999-12-31\")"
        ]
    );
}

#[test]
fn the_change_time_defaults_to_the_planned_day_of_a_scheduled_run_else_the_action_start() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("dw.db");
    exec(&db, "INSERT INTO src VALUES (1, 10, 'x')");
    let run = |planned: &str| {
        let conn = testing::sqlite_file(&db, SETUP).expect("file");
        let (mut ctx, log) = Run::new("SELECT id, a, b FROM src")
            .target(testing::table(2, 1, "dim"))
            .connection(1, conn)
            .attribute("keys", AttributeValue::string("id"))
            .variable("planned_start", planned)
            .variable("schedule_date", "2026-03-01")
            .variable("action_start_local", "2026-03-02 07:08:09")
            .build();
        History.run(&mut ctx).expect("run");
        log.lines()
    };
    assert!(run("2026-03-01 02:00:00")[0].contains("at 2026-03-01:"));
    exec(&db, "UPDATE src SET a = 11");
    assert!(run("")[0].contains("at 2026-03-02 07:08:09:"));
    // Variables in the attribute, and `$${` for a literal.
    let conn = testing::sqlite_file(&db, SETUP).expect("file");
    let (ctx, _) = Run::new("SELECT id, a, b FROM src")
        .connection(1, conn)
        .attribute("changeTime", AttributeValue::string("${day} 06:00 $${x}"))
        .variable("day", "2026-04-01")
        .build();
    assert_eq!(
        Spec::of(&ctx).expect("spec").change_time,
        "2026-04-01 06:00 ${x}"
    );
}

#[test]
fn a_key_returned_twice_a_period_column_in_the_query_or_a_missing_one_is_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("dw.db");
    exec(
        &db,
        "INSERT INTO src VALUES (1, 10, 'x'), (1, 11, 'y'), (2, 20, 'z')",
    );
    let (out, _) = run_at(&db, "2026-01-01", &[("keys", AttributeValue::string("id"))]);
    let e = out.expect_err("twice").message().to_owned();
    assert!(
        e.contains("returns 1 key(s) more than once") && e.contains("(id)"),
        "{e}"
    );
    assert!(rows(&db).is_empty(), "nothing written before the refusal");
    // Without keys and without a primary key besides the periods: say so.
    exec(&db, "DELETE FROM src WHERE a = 11");
    let (out, _) = run_at(&db, "2026-01-01", &[]);
    let e = out.expect_err("no key").message().to_owned();
    assert!(e.contains("give attribute `keys`"), "{e}");
    // A period column the table lacks.
    let (out, _) = run_at(
        &db,
        "2026-01-01",
        &[
            ("keys", AttributeValue::string("id")),
            ("validFrom", AttributeValue::string("since")),
        ],
    );
    let e = out.expect_err("no column").message().to_owned();
    assert!(e.contains("no column `since` (validFrom"), "{e}");
}

#[test]
fn the_default_key_is_the_primary_key_without_the_period_columns() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("dw.db");
    exec(
        &db,
        "CREATE TABLE pk (id INTEGER, a INTEGER, b TEXT, valid_from_dt TEXT, invalid_from_dt TEXT, PRIMARY KEY (id, valid_from_dt));
         INSERT INTO src VALUES (1, 10, 'x'), (2, 20, 'y')",
    );
    let run = |at: &str| {
        let conn = testing::sqlite_file(&db, SETUP).expect("file");
        let (mut ctx, _) = Run::new("SELECT id, a, b FROM src")
            .target(testing::table(2, 1, "pk"))
            .connection(1, conn)
            .attribute("changeTime", AttributeValue::string(at))
            .build();
        History.run(&mut ctx).expect("run")
    };
    run("2026-01-01");
    exec(&db, "UPDATE src SET b = 'yy' WHERE id = 2");
    assert_eq!(counts(&run("2026-01-02")), (2, 1, 1));
}

#[test]
fn validation_names_the_attribute_and_the_place() {
    let input = |attrs: &[(&str, &str)]| {
        let mut v = testing::Validate::new(Some("SELECT id, a, b FROM src"))
            .source(testing::table(1, 1, "src"))
            .target(testing::table(2, 1, "dim"));
        for (k, val) in attrs {
            v = v.attribute(k, AttributeValue::string(*val));
        }
        History.validate(&v.build())
    };
    let out = input(&[("keys", "id, nope"), ("compare", "a,zz")]);
    let got: Vec<(String, Option<u32>, Option<String>)> = out
        .problems()
        .iter()
        .map(|p| {
            (
                p.message().to_owned(),
                p.offset(),
                p.attribute().map(str::to_owned),
            )
        })
        .collect();
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got[0].0.contains("`nope` is not a column of the query"),
        "{got:?}"
    );
    assert_eq!((got[0].1, got[0].2.as_deref()), (Some(4), Some("keys")));
    assert!(got[1].0.contains("`zz`"), "{got:?}");
    assert_eq!((got[1].1, got[1].2.as_deref()), (Some(2), Some("compare")));
    let out = input(&[("keys", " , ")]);
    assert!(out.problems()[0].message().contains("names no column"));
    // Looped: closeMissing must be off, and truncateBefore would empty at each iteration.
    let codes = |attrs: &[(&str, AttributeValue)]| {
        let mut v = testing::Validate::new(Some("SELECT id, a, b FROM src WHERE a = ${a}"))
            .source(testing::table(1, 1, "src"))
            .target(testing::table(2, 1, "dim"));
        for (k, val) in attrs {
            v = v.attribute(k, val.clone());
        }
        History
            .validate(&v.build())
            .problems()
            .iter()
            .map(|p| p.code().to_owned())
            .collect::<Vec<_>>()
    };
    let looped = ("loopQuery", AttributeValue::string("SELECT a FROM src"));
    assert_eq!(codes(std::slice::from_ref(&looped)), ["loop_close_missing"]);
    assert_eq!(
        codes(&[
            looped.clone(),
            ("closeMissing", AttributeValue::bool(false))
        ]),
        Vec::<String>::new()
    );
    assert_eq!(
        codes(&[
            looped,
            ("closeMissing", AttributeValue::bool(false)),
            ("truncateBefore", AttributeValue::bool(true))
        ]),
        ["loop_truncate"]
    );
    // A query that returns a period column, and one that is no query.
    let out = History.validate(
        &testing::Validate::new(Some("SELECT id, a, valid_from_dt FROM src"))
            .target(testing::table(2, 1, "dim"))
            .build(),
    );
    assert!(
        out.problems()[0]
            .message()
            .contains("returns `valid_from_dt`"),
        "{:?}",
        out.problems()
    );
    let out = History.validate(
        &testing::Validate::new(Some("DELETE FROM src"))
            .target(testing::table(2, 1, "dim"))
            .build(),
    );
    assert_eq!(out.problems()[0].code(), "sql.not_a_query");
}

/// The reference: a history as a list of periods, changed as the module's docs say.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Period {
    id: i64,
    from: String,
    a: Option<i64>,
    b: Option<String>,
    to: Option<String>,
}

fn reference(
    history: &mut Vec<Period>,
    snapshot: &BTreeMap<i64, (Option<i64>, Option<String>)>,
    at: &str,
    close_missing: bool,
) {
    for p in history.iter_mut().filter(|p| p.to.is_none()) {
        match snapshot.get(&p.id) {
            Some((a, b)) if *a == p.a && *b == p.b => {}
            Some(_) => p.to = Some(at.to_owned()),
            None if close_missing => p.to = Some(at.to_owned()),
            None => {}
        }
    }
    for (id, (a, b)) in snapshot {
        if !history.iter().any(|p| p.id == *id && p.to.is_none()) {
            history.push(Period {
                id: *id,
                from: at.to_owned(),
                a: *a,
                b: b.clone(),
                to: None,
            });
        }
    }
}

fn snapshot() -> impl Strategy<Value = BTreeMap<i64, (Option<i64>, Option<String>)>> {
    prop::collection::btree_map(
        0..12i64,
        (
            prop::option::of(0..3i64),
            prop::option::of(prop::sample::select(vec!["p".to_owned(), "q".to_owned()])),
        ),
        0..10,
    )
}

fn literal<T: std::fmt::Display>(v: &Option<T>, quoted: bool) -> String {
    match v {
        None => "NULL".to_owned(),
        Some(v) if quoted => format!("'{v}'"),
        Some(v) => v.to_string(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_target_equals_the_reference_history_after_every_snapshot(
        snapshots in prop::collection::vec(snapshot(), 1..7),
        close_missing in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().expect("dir");
        let db = dir.path().join("dw.db");
        let mut expected = Vec::new();
        for (i, snap) in snapshots.iter().enumerate() {
            let values: Vec<String> = snap
                .iter()
                .map(|(id, (a, b))| format!("({id}, {}, {})", literal(a, false), literal(b, true)))
                .collect();
            let mut load = "DELETE FROM src;".to_owned();
            if !values.is_empty() {
                load.push_str(&format!("INSERT INTO src VALUES {};", values.join(", ")));
            }
            exec(&db, &load);
            let at = format!("2026-01-{:02}", i + 1);
            let (out, _) = run_at(
                &db,
                &at,
                &[
                    ("keys", AttributeValue::string("id")),
                    ("closeMissing", AttributeValue::bool(close_missing)),
                ],
            );
            let out = out.expect("run");
            let before = expected.len();
            reference(&mut expected, snap, &at, close_missing);
            prop_assert_eq!(out.rows_read, snap.len() as u64);
            prop_assert_eq!(out.rows_written, (expected.len() - before) as u64);
            let mut want: Vec<Period> = expected.clone();
            want.sort();
            let mut got = rows(&db);
            got.sort();
            prop_assert_eq!(got, want, "after snapshot {}", i);
        }
    }
}
