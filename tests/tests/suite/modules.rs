//! The action modules on real SQLite databases: each plugin is loaded from its shared library
//! (built by the test command), run through the host's runner, and the rows that land are
//! compared.

use crate::common;

use common::actions::{plan, rows};

use rusqlite::Connection;
use std::path::PathBuf;
use weft_core::keys::KeyFile;
use weft_core::plugins::Registry;
use weft_engine::exec::{ActionPlan, run_action};

fn registry() -> Registry {
    let dir = common::weft_bin()
        .parent()
        .expect("target dir")
        .to_path_buf();
    let r = Registry::load(&[(dir, false)]);
    for m in ["Sql", "Insert", "Upsert", "Transfer"] {
        assert!(
            r.module(m).is_some(),
            "module {m} did not load: {:?}",
            r.refused
        );
    }
    r
}

struct Dbs {
    dir: tempfile::TempDir,
    keys: KeyFile,
}

impl Dbs {
    /// Connections 1 and 2: two SQLite files; connection 3 is the file of 1 under another
    /// spelling of its path.
    fn new() -> Self {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        let kf = dir.path().join("keyfile");
        std::fs::write(
            &kf,
            format!(
                "1|sqlite|{}|||\n2|sqlite|{}|||\n3|sqlite|{}|||\n",
                dir.path().join("one.db").display(),
                dir.path().join("two.db").display(),
                dir.path().join(".").join("one.db").display()
            ),
        )
        .expect("keyfile");
        std::fs::set_permissions(&kf, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let keys = KeyFile::load(&kf).expect("keys");
        Dbs { dir, keys }
    }

    fn db(&self, n: i64) -> Connection {
        Connection::open(self.path(n)).expect("open")
    }

    fn path(&self, n: i64) -> PathBuf {
        self.dir
            .path()
            .join(if n == 1 { "one.db" } else { "two.db" })
    }

    fn rows(&self, n: i64, sql: &str) -> Vec<String> {
        rows(&self.path(n), sql)
    }
}

fn run(reg: &Registry, dbs: &Dbs, p: &ActionPlan) -> weft_sdk::RunOutcome {
    let ran = run_action(reg, &dbs.keys, p, &[]);
    match ran.outcome {
        Ok(o) => o,
        Err(e) => panic!("the action failed: {e}\nlog: {:?}", ran.log),
    }
}

#[test]
fn sql_runs_several_statements_on_the_target() {
    let reg = registry();
    let dbs = Dbs::new();
    dbs.db(1)
        .execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        .expect("setup");
    let p = plan(
        "Sql",
        "INSERT INTO t VALUES (1, 'a'); INSERT INTO t VALUES (2, 'b'); UPDATE t SET v = v || '!' WHERE id = 2",
        serde_json::json!({}),
        &[],
        Some((1, "t")),
    );
    let o = run(&reg, &dbs, &p);
    assert_eq!(o.rows_written, 3);
    assert_eq!(
        dbs.rows(1, "SELECT * FROM t ORDER BY id"),
        vec!["1|a", "2|b!"]
    );
}

#[test]
fn insert_matches_columns_by_name_with_and_without_truncate() {
    let reg = registry();
    let dbs = Dbs::new();
    dbs.db(1)
        .execute_batch(
            "CREATE TABLE src (a INTEGER, b TEXT, c REAL);
             INSERT INTO src VALUES (1, 'x', 1.5), (2, 'y', NULL), (3, 'z', 3.25);
             CREATE TABLE dst (name TEXT, id INTEGER, amount REAL, note TEXT DEFAULT 'none');
             INSERT INTO dst VALUES ('old', 0, 0.0, 'kept?');",
        )
        .expect("setup");
    let q = "SELECT a AS ID, c AS amount, b AS Name FROM src";
    let o = run(
        &reg,
        &dbs,
        &plan(
            "Insert",
            q,
            serde_json::json!({}),
            &[(1, "src")],
            Some((1, "dst")),
        ),
    );
    assert_eq!((o.rows_read, o.rows_written), (3, 3));
    assert_eq!(
        dbs.rows(1, "SELECT id, name, amount, note FROM dst ORDER BY id"),
        vec![
            "0|old|0.0|kept?",
            "1|x|1.5|none",
            "2|y|NULL|none",
            "3|z|3.25|none"
        ]
    );
    let ran = run_action(
        &reg,
        &dbs.keys,
        &plan(
            "Insert",
            q,
            serde_json::json!({"truncateBefore": true}),
            &[(1, "src")],
            Some((1, "dst")),
        ),
        &[],
    );
    assert_eq!(
        ran.outcome.map(|o| (o.rows_written, o.rows_deleted)),
        Ok((3, 4)),
        "the four old rows are counted as deleted: {:?}",
        ran.log
    );
    // Logged while it held the connection, in order, after the host's line.
    assert_eq!(ran.log.len(), 3, "{:?}", ran.log);
    assert!(
        ran.log[1].starts_with("Emptied \"dst\": 4 row(s) deleted"),
        "{:?}",
        ran.log
    );
    assert!(ran.log[2].starts_with("Inserted 3 row(s)"), "{:?}", ran.log);
    assert_eq!(
        dbs.rows(1, "SELECT id, name FROM dst ORDER BY id"),
        vec!["1|x", "2|y", "3|z"]
    );
    // A column without a match is an error that names it, and nothing changes.
    let ran = run_action(
        &reg,
        &dbs.keys,
        &plan(
            "Insert",
            "SELECT a AS nope FROM src",
            serde_json::json!({"truncateBefore": true}),
            &[(1, "src")],
            Some((1, "dst")),
        ),
        &[],
    );
    let e = ran.outcome.expect_err("no such column").to_string();
    assert!(e.contains("nope") && e.contains("dst"), "{e}");
    assert_eq!(
        dbs.rows(1, "SELECT COUNT(*) FROM dst"),
        vec!["3"],
        "the truncate was rolled back"
    );
}

#[test]
fn upsert_updates_inserts_and_deletes_nothing() {
    let reg = registry();
    let dbs = Dbs::new();
    dbs.db(1)
        .execute_batch(
            "CREATE TABLE src (id INTEGER, v TEXT);
             INSERT INTO src VALUES (1, 'new'), (2, 'two');
             CREATE TABLE dst (id INTEGER PRIMARY KEY, v TEXT);
             INSERT INTO dst VALUES (1, 'old'), (5, 'keep');",
        )
        .expect("setup");
    let o = run(
        &reg,
        &dbs,
        &plan(
            "Upsert",
            "SELECT id, v FROM src",
            serde_json::json!({}),
            &[(1, "src")],
            Some((1, "dst")),
        ),
    );
    assert_eq!((o.rows_read, o.rows_written, o.rows_updated), (2, 1, 1));
    assert_eq!(
        dbs.rows(1, "SELECT * FROM dst ORDER BY id"),
        vec!["1|new", "2|two", "5|keep"]
    );
}

#[test]
fn upsert_by_a_composite_key_attribute_and_across_connections() {
    let reg = registry();
    let dbs = Dbs::new();
    dbs.db(1)
        .execute_batch(
            "CREATE TABLE dst (day TEXT, shop INTEGER, amount REAL, PRIMARY KEY (day, shop));
             INSERT INTO dst VALUES ('2026-11-20', 1, 10.0), ('2026-11-20', 2, 20.0), ('2026-11-21', 1, 30.0);
             CREATE TABLE nokey (day TEXT, shop INTEGER, amount REAL);
             INSERT INTO nokey VALUES ('2026-11-20', 1, 10.0);",
        )
        .expect("setup");
    dbs.db(2)
        .execute_batch(
            "CREATE TABLE src (d TEXT, s INTEGER, amt REAL);
             INSERT INTO src VALUES ('2026-11-20', 2, 25.0), ('2026-11-21', 2, 40.0), ('2026-11-20', 1, 10.0);",
        )
        .expect("setup");
    let q = "SELECT d AS day, s AS shop, amt AS amount FROM src";
    // Source on connection 2, target on connection 1: rows are streamed across.
    let o = run(
        &reg,
        &dbs,
        &plan(
            "Upsert",
            q,
            serde_json::json!({}),
            &[(2, "src")],
            Some((1, "dst")),
        ),
    );
    assert_eq!((o.rows_read, o.rows_written, o.rows_updated), (3, 1, 2));
    assert_eq!(
        dbs.rows(1, "SELECT * FROM dst ORDER BY day, shop"),
        vec![
            "2026-11-20|1|10.0",
            "2026-11-20|2|25.0",
            "2026-11-21|1|30.0",
            "2026-11-21|2|40.0"
        ]
    );
    // A table without a primary key, keyed by the attribute, on one connection.
    dbs.db(1)
        .execute_batch("CREATE TABLE src1 (day TEXT, shop INTEGER, amount REAL); INSERT INTO src1 VALUES ('2026-11-20', 1, 11.0), ('2026-11-22', 3, 5.0);")
        .expect("setup");
    let o = run(
        &reg,
        &dbs,
        &plan(
            "Upsert",
            "SELECT day, shop, amount FROM src1",
            serde_json::json!({"keys": "day, shop"}),
            &[(1, "src1")],
            Some((1, "nokey")),
        ),
    );
    assert_eq!((o.rows_written, o.rows_updated), (1, 1));
    assert_eq!(
        dbs.rows(1, "SELECT * FROM nokey ORDER BY day"),
        vec!["2026-11-20|1|11.0", "2026-11-22|3|5.0"]
    );
    // Without a key: an error that says how to give one.
    let ran = run_action(
        &reg,
        &dbs.keys,
        &plan(
            "Upsert",
            "SELECT day FROM src1",
            serde_json::json!({}),
            &[(1, "src1")],
            Some((1, "nokey")),
        ),
        &[],
    );
    assert!(
        ran.outcome
            .expect_err("no key")
            .to_string()
            .contains("give attribute `keys`")
    );
}

#[test]
fn transfer_streams_rows_between_two_files() {
    let reg = registry();
    let dbs = Dbs::new();
    let src = dbs.db(2);
    src.execute_batch(
        "CREATE TABLE src (id INTEGER, name TEXT, amount REAL, data BLOB, note TEXT)",
    )
    .expect("setup");
    let tx = src.unchecked_transaction().expect("tx");
    for i in 0..25_000i64 {
        tx.execute(
            "INSERT INTO src VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![
                i,
                format!("name {i} é"),
                i as f64 / 4.0,
                vec![(i % 256) as u8, 0u8],
                if i % 3 == 0 { None } else { Some("n") }
            ],
        )
        .expect("row");
    }
    tx.commit().expect("commit");
    dbs.db(1).execute_batch("CREATE TABLE dst (ID INTEGER PRIMARY KEY, Name TEXT, Amount REAL, Data BLOB, Note TEXT)").expect("setup");
    let o = run(
        &reg,
        &dbs,
        &plan(
            "Transfer",
            // A CTE named like the target table: the rows are streamed, not copied inside
            // SQLite (see the test after this one).
            "WITH dst AS (SELECT id, name, amount, data, note FROM src) SELECT * FROM dst",
            serde_json::json!({"batchRows": 1000}),
            &[(2, "src")],
            Some((1, "dst")),
        ),
    );
    assert_eq!((o.rows_read, o.rows_written), (25_000, 25_000));
    let a = dbs.rows(2, "SELECT * FROM src ORDER BY id");
    let b = dbs.rows(1, "SELECT * FROM dst ORDER BY id");
    assert_eq!(a.len(), 25_000);
    assert_eq!(a, b, "every value arrives as it was");
}

/// Said in the log by a Transfer that copied inside SQLite (the source's file attached).
const COPIED_INSIDE: &str = "Copied inside SQLite";

/// A Transfer of `query` from `source` into `target`, run as the host runs it.
fn transfer(
    reg: &Registry,
    dbs: &Dbs,
    query: &str,
    source: (i64, &str),
    target: (i64, &str),
) -> weft_engine::exec::Ran {
    run_action(
        reg,
        &dbs.keys,
        &plan(
            "Transfer",
            query,
            serde_json::json!({}),
            &[source],
            Some(target),
        ),
        &[],
    )
}

#[test]
fn transfer_between_sqlite_files_copies_inside_sqlite_from_the_source_tables_of_the_same_names() {
    let reg = registry();
    let dbs = Dbs::new();
    dbs.db(2)
        .execute_batch(
            "CREATE TABLE t (k INTEGER, v TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b');
             CREATE TABLE u (k INTEGER, w REAL); INSERT INTO u VALUES (1, 0.5), (2, 1.5);",
        )
        .expect("setup");
    // The target's file has tables of the same names: the query must not read them.
    dbs.db(1)
        .execute_batch(
            "CREATE TABLE t (k INTEGER, v TEXT); INSERT INTO t VALUES (99, 'target');
             CREATE TABLE u (k INTEGER, w REAL);
             CREATE TABLE dst (k INTEGER, v TEXT, w REAL);",
        )
        .expect("setup");
    let q = "SELECT t.k, t.v, u.w -- the source's tables\nFROM t JOIN main.u ON u.k = t.k WHERE t.k IN (SELECT k FROM t)";
    let ran = run_action(
        &reg,
        &dbs.keys,
        &plan(
            "Transfer",
            q,
            serde_json::json!({}),
            &[(2, "t"), (2, "u")],
            Some((1, "dst")),
        ),
        &[],
    );
    let o = ran.outcome.expect("the Transfer ran");
    assert_eq!((o.rows_read, o.rows_written), (2, 2));
    assert!(
        ran.log.iter().any(|l| l.contains(COPIED_INSIDE)),
        "copied inside SQLite: {:?}",
        ran.log
    );
    assert_eq!(
        dbs.rows(1, "SELECT * FROM dst ORDER BY k"),
        vec!["1|a|0.5", "2|b|1.5"]
    );
    // The attached file is gone once the action committed: the next action on the target's
    // pooled connection sees its own file only.
    let o = run(
        &reg,
        &dbs,
        &plan(
            "Sql",
            "INSERT INTO dst (k, v) SELECT COUNT(*), group_concat(name) FROM pragma_database_list WHERE name NOT IN ('main', 'temp')",
            serde_json::json!({}),
            &[],
            Some((1, "dst")),
        ),
    );
    assert_eq!(o.rows_written, 1);
    assert_eq!(
        dbs.rows(1, "SELECT k, v FROM dst WHERE w IS NULL"),
        vec!["0|NULL"]
    );
}

#[test]
fn transfer_streams_where_copying_inside_sqlite_could_read_the_wrong_table() {
    let reg = registry();
    let dbs = Dbs::new();
    dbs.db(2)
        .execute_batch("CREATE TABLE src (k INTEGER); INSERT INTO src VALUES (1), (2), (3);")
        .expect("setup");
    dbs.db(1)
        .execute_batch(
            "CREATE TABLE dst (k INTEGER); CREATE TABLE recent (k INTEGER); INSERT INTO recent VALUES (42);
             CREATE TABLE only_here (k INTEGER);",
        )
        .expect("setup");
    // A CTE named like a table of the target: left unqualified it could read that table.
    let ran = transfer(
        &reg,
        &dbs,
        "WITH recent AS (SELECT k FROM src WHERE k > 1) SELECT k FROM recent",
        (2, "src"),
        (1, "dst"),
    );
    assert_eq!(ran.outcome.expect("streamed").rows_written, 2);
    assert!(
        !ran.log.iter().any(|l| l.contains(COPIED_INSIDE)),
        "{:?}",
        ran.log
    );
    assert_eq!(dbs.rows(1, "SELECT k FROM dst ORDER BY k"), vec!["2", "3"]);
    // A table the source does not have, though the target does: the source's error, as when
    // the rows are streamed, and nothing written.
    let ran = transfer(
        &reg,
        &dbs,
        "SELECT k FROM only_here",
        (2, "src"),
        (1, "dst"),
    );
    let e = ran.outcome.expect_err("no such table").to_string();
    assert!(e.contains("no such table: only_here"), "{e}");
    assert!(e.contains("connection 2"), "the source's error: {e}");
    assert_eq!(dbs.rows(1, "SELECT COUNT(*) FROM dst"), vec!["2"]);
    // The target's own file under another name: attaching it would make the commit wait on
    // itself, so the rows are streamed.
    dbs.db(1)
        .execute_batch("INSERT INTO only_here VALUES (7), (8)")
        .expect("rows");
    let ran = transfer(
        &reg,
        &dbs,
        "SELECT k FROM only_here",
        (3, "only_here"),
        (1, "dst"),
    );
    assert_eq!(ran.outcome.expect("streamed").rows_written, 2);
    assert!(
        !ran.log.iter().any(|l| l.contains(COPIED_INSIDE)),
        "{:?}",
        ran.log
    );
    assert_eq!(
        dbs.rows(1, "SELECT k FROM dst ORDER BY k"),
        vec!["2", "3", "7", "8"]
    );
}

#[test]
fn a_failed_action_leaves_no_partial_rows_and_unset_variables_are_named() {
    let reg = registry();
    let dbs = Dbs::new();
    dbs.db(2)
        .execute_batch("CREATE TABLE src (id INTEGER); INSERT INTO src VALUES (1), (2), (2), (3);")
        .expect("setup");
    dbs.db(1)
        .execute_batch("CREATE TABLE dst (id INTEGER PRIMARY KEY)")
        .expect("setup");
    // The duplicate 2 fails the insert of the second batch: the first batch is rolled back.
    // Streamed (a CTE named like the target table), and copied inside SQLite.
    for query in [
        "WITH dst AS (SELECT id FROM src) SELECT id FROM dst",
        "SELECT id FROM src",
    ] {
        let ran = run_action(
            &reg,
            &dbs.keys,
            &plan(
                "Transfer",
                query,
                serde_json::json!({"batchRows": 2}),
                &[(2, "src")],
                Some((1, "dst")),
            ),
            &[],
        );
        assert!(
            ran.outcome
                .expect_err("duplicate key")
                .to_string()
                .contains("UNIQUE"),
            "the message says what SQLite said"
        );
        assert_eq!(dbs.rows(1, "SELECT COUNT(*) FROM dst"), vec!["0"]);
    }
    let ran = run_action(
        &reg,
        &dbs.keys,
        &plan(
            "Sql",
            "DELETE FROM dst WHERE id > ${min_id}",
            serde_json::json!({}),
            &[],
            Some((1, "dst")),
        ),
        &[],
    );
    assert!(
        ran.outcome
            .expect_err("unset")
            .to_string()
            .contains("variable `min_id` is not set")
    );
    let vars = vec![("min_id".to_owned(), "0".to_owned())];
    let ran = run_action(
        &reg,
        &dbs.keys,
        &plan(
            "Sql",
            "INSERT INTO dst VALUES (${min_id} + 7)",
            serde_json::json!({}),
            &[],
            Some((1, "dst")),
        ),
        &vars,
    );
    assert!(ran.outcome.is_ok(), "{:?}", ran.outcome);
    assert_eq!(dbs.rows(1, "SELECT id FROM dst"), vec!["7"]);
}

#[test]
fn transfer_from_several_sources_and_on_one_connection() {
    let reg = registry();
    let dbs = Dbs::new();
    dbs.db(2)
        .execute_batch(
            "CREATE TABLE orders (id INTEGER, customer INTEGER, amount REAL);
             CREATE TABLE customers (id INTEGER, name TEXT);
             INSERT INTO customers VALUES (1, 'ann'), (2, 'bob');
             INSERT INTO orders VALUES (10, 1, 5.0), (11, 2, 7.5), (12, 1, 1.25);",
        )
        .expect("setup");
    dbs.db(1)
        .execute_batch("CREATE TABLE report (order_id INTEGER, name TEXT, amount REAL)")
        .expect("setup");
    let q = "SELECT o.id AS order_id, c.name, o.amount FROM orders o JOIN customers c ON c.id = o.customer -- every order";
    let o = run(
        &reg,
        &dbs,
        &plan(
            "Transfer",
            q,
            serde_json::json!({}),
            &[(2, "orders"), (2, "customers")],
            Some((1, "report")),
        ),
    );
    assert_eq!(o.rows_written, 3);
    assert_eq!(
        dbs.rows(1, "SELECT * FROM report ORDER BY order_id"),
        vec!["10|ann|5.0", "11|bob|7.5", "12|ann|1.25"]
    );
    // Source and target on one connection: the database copies the rows itself.
    dbs.db(2)
        .execute_batch("CREATE TABLE copy (name TEXT, id INTEGER)")
        .expect("setup");
    let o = run(
        &reg,
        &dbs,
        &plan(
            "Transfer",
            "SELECT id, name FROM customers",
            serde_json::json!({}),
            &[(2, "customers")],
            Some((2, "copy")),
        ),
    );
    assert_eq!(o.rows_written, 2);
    assert_eq!(
        dbs.rows(2, "SELECT id, name FROM copy ORDER BY id"),
        vec!["1|ann", "2|bob"]
    );
}

#[test]
fn upsert_on_conflict_with_a_composite_primary_key_counts_what_landed() {
    let reg = registry();
    let dbs = Dbs::new();
    dbs.db(1)
        .execute_batch(
            "CREATE TABLE dst (day TEXT, shop INTEGER, amount REAL, PRIMARY KEY (day, shop));
             INSERT INTO dst VALUES ('d1', 1, 1.0);
             CREATE TABLE src (day TEXT, shop INTEGER, amount REAL);
             INSERT INTO src VALUES ('d1', 1, 2.0), ('d2', 1, 3.0), ('d2', 1, 4.0);",
        )
        .expect("setup");
    let o = run(
        &reg,
        &dbs,
        &plan(
            "Upsert",
            "SELECT day, shop, amount FROM src ORDER BY amount",
            serde_json::json!({}),
            &[(1, "src")],
            Some((1, "dst")),
        ),
    );
    // ('d2', 1) comes twice: inserted once, then updated by its second row.
    assert_eq!((o.rows_read, o.rows_written, o.rows_updated), (3, 1, 2));
    assert_eq!(
        dbs.rows(1, "SELECT * FROM dst ORDER BY day"),
        vec!["d1|1|2.0", "d2|1|4.0"]
    );
}

#[test]
fn history_keeps_periods_through_the_host_and_a_failed_run_changes_nothing() {
    let reg = registry();
    assert!(reg.module("History").is_some(), "{:?}", reg.refused);
    let dbs = Dbs::new();
    dbs.db(1)
        .execute_batch(
            "CREATE TABLE stg (id INTEGER, name TEXT);
             INSERT INTO stg VALUES (1, 'a'), (2, 'b');
             CREATE TABLE dim (id INTEGER, name TEXT, valid_from_dt TEXT, invalid_from_dt TEXT,
                               PRIMARY KEY (id, valid_from_dt));",
        )
        .expect("setup");
    let history = |at: &str, attributes: serde_json::Value| {
        let mut attributes = attributes;
        attributes["changeTime"] = serde_json::json!(at);
        run_action(
            &reg,
            &dbs.keys,
            &plan(
                "History",
                "SELECT id, name FROM stg",
                attributes,
                &[(1, "stg")],
                Some((1, "dim")),
            ),
            &[],
        )
    };
    let first = history("2026-01-01", serde_json::json!({}));
    let o = first.outcome.expect("first run");
    assert_eq!((o.rows_read, o.rows_written, o.rows_updated), (2, 2, 0));
    assert!(
        first
            .log
            .iter()
            .any(|l| l.contains("2 period(s) opened, 0 closed, 0 unchanged")),
        "{:?}",
        first.log
    );
    dbs.db(1)
        .execute_batch("UPDATE stg SET name = 'bb' WHERE id = 2")
        .expect("change");
    let o = history("2026-01-02", serde_json::json!({}))
        .outcome
        .expect("second run");
    assert_eq!((o.rows_read, o.rows_written, o.rows_updated), (2, 1, 1));
    let before = dbs.rows(1, "SELECT * FROM dim ORDER BY id, valid_from_dt");
    assert_eq!(
        before,
        [
            "1|a|2026-01-01|NULL",
            "2|b|2026-01-01|2026-01-02",
            "2|bb|2026-01-02|NULL"
        ]
    );
    // Emptied first, then a key returned twice: refused, and the emptying rolled back.
    dbs.db(1)
        .execute_batch("INSERT INTO stg VALUES (1, 'again')")
        .expect("a duplicate");
    let failed = history("2026-01-03", serde_json::json!({"truncateBefore": true}));
    let e = failed.outcome.expect_err("a key twice").to_string();
    assert!(e.contains("more than once"), "{e}");
    assert_eq!(
        dbs.rows(1, "SELECT * FROM dim ORDER BY id, valid_from_dt"),
        before
    );
    // A second run at the same change time: the primary key refuses it, nothing changes.
    dbs.db(1)
        .execute_batch(
            "DELETE FROM stg WHERE name = 'again'; UPDATE stg SET name = 'bbb' WHERE id = 2",
        )
        .expect("change");
    let again = history("2026-01-02", serde_json::json!({}));
    assert!(again.outcome.is_err(), "{:?}", again.log);
    assert_eq!(
        dbs.rows(1, "SELECT * FROM dim ORDER BY id, valid_from_dt"),
        before
    );
}

#[test]
fn truncate_before_on_transfer_and_upsert_empties_the_target_in_the_same_transaction() {
    let reg = registry();
    let dbs = Dbs::new();
    dbs.db(2)
        .execute_batch(
            "CREATE TABLE src (id INTEGER, v TEXT); INSERT INTO src VALUES (1, 'x'), (2, 'y');",
        )
        .expect("source");
    dbs.db(1)
        .execute_batch(
            "CREATE TABLE dst (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO dst VALUES (7, 'old'), (8, 'old');
             CREATE TABLE src (id INTEGER, v TEXT); INSERT INTO src VALUES (1, 'x'), (1, 'dup');",
        )
        .expect("target");
    let load = |module: &str, from: i64| {
        run_action(
            &reg,
            &dbs.keys,
            &plan(
                module,
                "SELECT id, v FROM src",
                serde_json::json!({"truncateBefore": true, "keys": "id"})
                    .as_object()
                    .map(|o| {
                        let mut o = o.clone();
                        if module == "Transfer" {
                            o.remove("keys");
                        }
                        serde_json::Value::Object(o)
                    })
                    .expect("attributes"),
                &[(from, "src")],
                Some((1, "dst")),
            ),
            &[],
        )
    };
    // Transfer across files: the old rows go, the new ones come.
    let ran = load("Transfer", 2);
    let o = ran.outcome.expect("transfer");
    assert_eq!((o.rows_written, o.rows_deleted), (2, 2), "{:?}", ran.log);
    assert!(
        ran.log
            .iter()
            .any(|l| l.starts_with("Emptied \"dst\": 2 row(s) deleted")),
        "{:?}",
        ran.log
    );
    assert_eq!(
        dbs.rows(1, "SELECT id, v FROM dst ORDER BY id"),
        ["1|x", "2|y"]
    );
    // Upsert on the target's file from a query with a key twice... the second row updates
    // the first: after emptying, one row per key.
    let ran = load("Upsert", 1);
    let o = ran.outcome.expect("upsert");
    assert_eq!(o.rows_deleted, 2, "{:?}", ran.log);
    assert_eq!(dbs.rows(1, "SELECT COUNT(*) FROM dst"), ["1"]);
    // A failing Transfer leaves the old rows: the emptying is rolled back with it.
    dbs.db(2)
        .execute_batch("INSERT INTO src VALUES (2, 'dup')")
        .expect("a duplicate key for dst");
    let ran = load("Transfer", 2);
    assert!(ran.outcome.is_err(), "{:?}", ran.log);
    assert_eq!(dbs.rows(1, "SELECT COUNT(*) FROM dst"), ["1"]);
}

#[test]
fn a_loop_query_runs_the_action_once_per_row_with_its_columns_as_variables() {
    let reg = registry();
    let dbs = Dbs::new();
    dbs.db(1)
        .execute_batch(
            "CREATE TABLE regions (code TEXT, share INTEGER);
             INSERT INTO regions VALUES ('EU', 2), ('US', 3), (NULL, 5);
             CREATE TABLE sales (region TEXT, n INTEGER NOT NULL, iteration INTEGER);",
        )
        .expect("setup");
    let looped = |text: &str, attributes: serde_json::Value| {
        run_action(
            &reg,
            &dbs.keys,
            &plan(
                "Sql",
                text,
                attributes,
                &[(1, "regions")],
                Some((1, "sales")),
            ),
            &[("base".to_owned(), "10".to_owned())],
        )
    };
    let ran = looped(
        "INSERT INTO sales VALUES ('${code}', ${base} * ${share}, ${iteration})",
        serde_json::json!({"loopQuery": "SELECT code, share FROM regions ORDER BY share"}),
    );
    let o = ran.outcome.expect("the loop");
    assert_eq!(o.rows_written, 3, "{:?}", ran.log);
    assert_eq!(
        dbs.rows(
            1,
            "SELECT region, n, iteration FROM sales ORDER BY iteration"
        ),
        ["EU|20|1", "US|30|2", "|50|3"],
        "a NULL column is an empty variable"
    );
    assert!(
        ran.log
            .iter()
            .any(|l| l.starts_with("loopQuery returned 3 row(s) (columns code, share)")),
        "{:?}",
        ran.log
    );
    assert!(
        ran.log.iter().any(|l| l.starts_with(
            "iteration 2 (code=US, share=3): INSERT INTO sales VALUES ('US', 10 * 3, 2)"
        )),
        "{:?}",
        ran.log
    );
    assert!(
        ran.log
            .iter()
            .any(|l| l == "loop: 3 iteration(s), 0 failed"),
        "{:?}",
        ran.log
    );

    // The first failing iteration fails the action, and every iteration is undone.
    let ran = looped(
        "INSERT INTO sales VALUES ('${code}', CASE WHEN ${share} = 3 THEN NULL ELSE 1 END, 0)",
        serde_json::json!({"loopQuery": "SELECT code, share FROM regions ORDER BY share"}),
    );
    let e = ran.outcome.expect_err("iteration 2 fails").to_string();
    assert!(
        e.contains("iteration 2 (code=US, share=3)") && e.contains("NOT NULL"),
        "{e}"
    );
    assert_eq!(dbs.rows(1, "SELECT COUNT(*) FROM sales"), ["3"]);

    // With loopContinueOnError, only the failing iteration is undone.
    let ran = looped(
        "INSERT INTO sales VALUES ('${code}', CASE WHEN ${share} = 3 THEN NULL ELSE 7 END, ${iteration})",
        serde_json::json!({"loopQuery": "SELECT code, share FROM regions ORDER BY share", "loopContinueOnError": true}),
    );
    let o = ran.outcome.expect("goes on");
    assert_eq!(o.rows_written, 2, "{:?}", ran.log);
    assert!(
        ran.log
            .iter()
            .any(|l| l.starts_with("loop: 3 iteration(s), 1 failed (2;")),
        "{:?}",
        ran.log
    );
    assert_eq!(
        dbs.rows(
            1,
            "SELECT region, iteration FROM sales WHERE n = 7 ORDER BY iteration"
        ),
        ["EU|1", "|3"]
    );

    // An empty loop does nothing, or fails with errorIfLoopEmpty.
    let none = serde_json::json!({"loopQuery": "SELECT code FROM regions WHERE 0"});
    let ran = looped("INSERT INTO sales VALUES ('${code}', 0, 0)", none.clone());
    assert_eq!(ran.outcome.map(|o| o.rows_written), Ok(0));
    let mut strict = none;
    strict["errorIfLoopEmpty"] = serde_json::json!(true);
    let ran = looped("INSERT INTO sales VALUES ('${code}', 0, 0)", strict);
    assert!(
        ran.outcome
            .expect_err("empty")
            .to_string()
            .contains("loopQuery returned no row"),
        "{:?}",
        ran.log
    );
    // A variable neither the run nor the loop sets is named.
    let ran = looped(
        "INSERT INTO sales VALUES ('${nothing}', 0, 0)",
        serde_json::json!({"loopQuery": "SELECT code FROM regions"}),
    );
    assert!(
        ran.outcome
            .expect_err("unset")
            .to_string()
            .contains("variable `nothing` is not set"),
        "{:?}",
        ran.log
    );
    assert_eq!(dbs.rows(1, "SELECT COUNT(*) FROM sales"), ["5"]);
}

#[test]
fn a_loop_query_works_with_every_sql_module() {
    let reg = registry();
    let dbs = Dbs::new();
    dbs.db(1)
        .execute_batch(
            "CREATE TABLE days (d TEXT); INSERT INTO days VALUES ('2026-01-01'), ('2026-01-02');
             CREATE TABLE src (id INTEGER PRIMARY KEY, d TEXT); INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02');
             CREATE TABLE ins (id INTEGER, d TEXT);
             CREATE TABLE ups (id INTEGER PRIMARY KEY, d TEXT);",
        )
        .expect("setup");
    for (module, target) in [("Insert", "ins"), ("Upsert", "ups"), ("Transfer", "ins")] {
        let ran = run_action(
            &reg,
            &dbs.keys,
            &plan(
                module,
                "SELECT id, d FROM src WHERE d = '${d}'",
                serde_json::json!({"loopQuery": "SELECT d FROM days ORDER BY d"}),
                &[(1, "src")],
                Some((1, target)),
            ),
            &[],
        );
        let o = ran.outcome.expect(module);
        assert_eq!(o.rows_written, 2, "{module}: {:?}", ran.log);
    }
    assert_eq!(dbs.rows(1, "SELECT COUNT(*) FROM ins"), ["4"]);
    assert_eq!(
        dbs.rows(1, "SELECT id, d FROM ups ORDER BY id"),
        ["1|2026-01-01", "2|2026-01-02"]
    );
}
