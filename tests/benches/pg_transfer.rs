//! PostgreSQL benchmark (`cargo bench -p weft_tests --bench pg_transfer`): prints numbers,
//! asserts nothing but that the rows arrived.
//!
//! 1,000,000 rows of five columns (bigint, text, numeric(14,2), date, boolean) on a real
//! PostgreSQL server started by the bench, moved by weft's `Transfer` (loaded from its shared
//! library with the bridges, run by the host's action runner), three alternating rounds in
//! one run, medians compared:
//!
//! - PostgreSQL -> PostgreSQL (another database of the same server) through the native
//!   `postgresql` type (binary COPY out and in), against
//!   `psql -c "\copy (SELECT ...) TO STDOUT" | psql -c "\copy t FROM STDIN"`. Goal: weft at
//!   least as fast as the psql pipe.
//! - SQLite -> PostgreSQL and PostgreSQL -> SQLite through the native type, against the same
//!   Transfers through the JDBC bridge. Goal: at least 3x the JDBC path.
//!
//! Two floors are measured beside them, to say how far a goal can be reached at all: the
//! server's own `COPY ... FROM` of the same rows in binary (psql `\copy` from a file, no
//! reading at all), under every Transfer into PostgreSQL; and weft's Transfer SQLite ->
//! SQLite of the same rows, the cost of writing SQLite under every Transfer into SQLite.
//!
//! Needs `cargo build --release --workspace` first, PostgreSQL and its client, a JDK and the
//! Debian package libpostgresql-jdbc-java (`.ci/run` installs them). `WEFT_BENCH_ROWS`
//! changes the row count; `WEFT_BENCH_NATIVE_ONLY=1` leaves out the JDBC and psql rounds
//! (for a profiler's view of the native paths alone).

// The same allocator as the `weft` binary: values cross threads by the million.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::Path;
use std::process::Command;
use std::time::Instant;
use weft_tests::bench::{median, rounds as fmt};
use weft_tests::postgres::Postgres;

const PG_JAR: &str = "/usr/share/java/postgresql.jar";
const PG_TABLE: &str = "CREATE TABLE t (id bigint PRIMARY KEY, name text, amount numeric(14,2), day date, flag boolean)";
const LITE_TABLE: &str =
    "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, amount TEXT, day TEXT, flag INTEGER)";
const QUERY: &str = "SELECT id, name, amount, day, flag FROM t";

/// `sql` in database `db` of `pg`, through psql.
fn psql(pg: &Postgres, db: &str, sql: &str) -> String {
    pg.psql_in(db, sql).unwrap_or_else(|e| panic!("psql: {e}"))
}

/// A Transfer from `(table, connection)` to `(table, connection)`, with the dialects of the
/// connections.
fn plan(
    from: i64,
    to: i64,
    dialect: impl Fn(i64) -> weft_sdk::Dialect,
) -> weft_engine::exec::ActionPlan {
    let sheet = serde_json::json!({"version": 1, "transformationData": {"sheets": [{"id": 1, "attributes": {"name": "copy", "folder_id": 1, "folder": "/"},
        "nodes": [
            {"id": 1, "type": 0, "attributes": {"module": "Transfer", "name": "copy", "action": QUERY}},
            {"id": 2, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": from}},
            {"id": 3, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": to}}],
        "edges": [{"id": 1, "from": 2, "to": 1}, {"id": 2, "from": 1, "to": 3}]}]}});
    let (doc, _) = weft_dsr::parse(&sheet.to_string());
    weft_engine::exec::actions_of(&doc.expect("sheet").sheets[0], &dialect).remove(0)
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("pg bench: run with `cargo bench -p weft_tests --bench pg_transfer`");
        return;
    }
    let rows: i64 = std::env::var("WEFT_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let pg = Postgres::start().expect("start PostgreSQL");
    let t = Instant::now();
    psql(&pg, "weft", "CREATE DATABASE other");
    psql(
        &pg,
        "weft",
        &format!(
            "{PG_TABLE}; INSERT INTO t SELECT i, 'customer ' || i, i * 0.25, DATE '2026-11-01' + (i % 28), i % 2 = 0 FROM generate_series(0, {}) AS i",
            rows - 1
        ),
    );
    psql(&pg, "weft", "VACUUM ANALYZE t");
    psql(&pg, "other", PG_TABLE);
    println!(
        "pg: {rows} rows loaded into PostgreSQL in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let dir = tempfile::tempdir().expect("dir");
    let lite_src = dir.path().join("src.db");
    {
        let c = rusqlite::Connection::open(&lite_src).expect("source");
        c.execute_batch(&format!(
            "{LITE_TABLE}; WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {})
             INSERT INTO t SELECT i, 'customer ' || i, printf('%.2f', i * 0.25), date('2026-11-01', '+' || (i % 28) || ' days'), i % 2 = 0 FROM n;",
            rows - 1
        ))
        .expect("SQLite source");
    }
    let drivers = dir.path().join("drivers");
    std::fs::create_dir_all(&drivers).expect("drivers");
    std::os::unix::fs::symlink(PG_JAR, drivers.join("postgresql.jar")).expect("link jar");
    let target_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().and_then(|p| p.parent()).map(Path::to_path_buf))
        .unwrap_or_default();
    let mut registry = weft_core::plugins::Registry::load(&[(target_dir.clone(), false)]);
    assert!(
        registry.module("Transfer").is_some()
            && registry.bridge("postgresql").is_some()
            && registry.bridge("jdbc").is_some(),
        "no Transfer plugin or bridges in {}: run `cargo build --release --workspace` first",
        target_dir.display()
    );
    registry.set_bridge_options(vec![(
        "weft.drivers".to_owned(),
        drivers.to_string_lossy().into_owned(),
    )]);
    // 1: SQLite source, 2: PostgreSQL `weft` (native), 3: PostgreSQL `other` (native),
    // 4: PostgreSQL `weft` (JDBC), 5: PostgreSQL `other` (JDBC), 6: a SQLite target.
    let kf = dir.path().join("keyfile");
    let lite_dst = dir.path().join("dst.db");
    let url = |db: &str| format!("postgresql://127.0.0.1:{}/{db}", pg.port);
    let jdbc = |db: &str| format!("jdbc:postgresql://127.0.0.1:{}/{db}", pg.port);
    std::fs::write(
        &kf,
        format!(
            "1|sqlite|{}|||\n2|postgresql|{}|weft|secret|sslmode=disable\n3|postgresql|{}|weft|secret|sslmode=disable\n4|jdbc|{}|weft|secret|\n5|jdbc|{}|weft|secret|\n6|sqlite|{}|||\n",
            lite_src.display(),
            url("weft"),
            url("other"),
            jdbc("weft"),
            jdbc("other"),
            lite_dst.display()
        ),
    )
    .expect("keyfile");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&kf, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let keys = weft_core::keys::KeyFile::load(&kf).expect("keys");
    let dialect = |c: i64| match c {
        1 | 6 => weft_sdk::Dialect::Sqlite,
        _ => weft_sdk::Dialect::Postgres,
    };
    let transfer = |from: i64, to: i64| {
        let p = plan(from, to, dialect);
        let t = Instant::now();
        let ran = weft_engine::exec::run_action(&registry, &keys, &p, &[]);
        let secs = t.elapsed().as_secs_f64();
        let outcome = ran
            .outcome
            .unwrap_or_else(|e| panic!("transfer {from} -> {to}: {e}"));
        assert_eq!(outcome.rows_written as i64, rows);
        secs
    };
    let empty_other = || psql(&pg, "other", "TRUNCATE t");
    // Emptied in place: the host keeps the file's connections open in its pool.
    let empty_lite = || {
        rusqlite::Connection::open(&lite_dst)
            .expect("target")
            .execute_batch(&format!("DROP TABLE IF EXISTS t; {LITE_TABLE}"))
            .expect("create");
    };
    let native_only = std::env::var_os("WEFT_BENCH_NATIVE_ONLY").is_some();
    // Warm-up: the JVM starts, connections open.
    empty_other();
    if !native_only {
        transfer(4, 5);
    }
    let binary = dir.path().join("t.bin");
    psql(
        &pg,
        "weft",
        &format!("\\copy t TO '{}' (FORMAT binary)", binary.display()),
    );
    let (mut pg_weft, mut pg_psql) = (Vec::new(), Vec::new());
    let (mut floor_pg, mut floor_lite) = (Vec::new(), Vec::new());
    let (mut in_native, mut in_jdbc, mut out_native, mut out_jdbc) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        empty_other();
        pg_weft.push(transfer(2, 3));
        empty_other();
        in_native.push(transfer(1, 3));
        empty_lite();
        out_native.push(transfer(2, 6));
        empty_lite();
        floor_lite.push(transfer(1, 6));
        empty_other();
        let t = Instant::now();
        psql(
            &pg,
            "other",
            &format!("\\copy t FROM '{}' (FORMAT binary)", binary.display()),
        );
        floor_pg.push(t.elapsed().as_secs_f64());
        if native_only {
            continue;
        }
        empty_other();
        let t = Instant::now();
        let pipe = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "psql -X -q -h 127.0.0.1 -p {port} -U weft -d weft -c '\\copy ({QUERY}) TO STDOUT' | psql -X -q -h 127.0.0.1 -p {port} -U weft -d other -c '\\copy t FROM STDIN'",
                port = pg.port
            ))
            .env("PGPASSWORD", "secret")
            .status()
            .expect("psql pipe");
        pg_psql.push(t.elapsed().as_secs_f64());
        assert!(pipe.success(), "the psql pipe failed");
        assert_eq!(
            psql(&pg, "other", "SELECT count(*) FROM t"),
            rows.to_string()
        );
        empty_other();
        in_jdbc.push(transfer(1, 5));
        empty_lite();
        out_jdbc.push(transfer(4, 6));
    }
    if native_only {
        pg_psql.push(f64::NAN);
        in_jdbc.push(f64::NAN);
        out_jdbc.push(f64::NAN);
    }
    println!(
        "pg: {rows} rows of 5 columns (bigint, text, numeric(14,2), date, boolean), median of 3 alternating rounds"
    );
    let line = |what: &str, v: &[f64]| {
        let m = median(v);
        println!(
            "pg: {what:<44} {m:>6.2} s  {:>9.0} rows/s  rounds [{}]",
            rows as f64 / m,
            fmt(v)
        );
        m
    };
    line("floor: COPY FROM a binary file (server only)", &floor_pg);
    line("floor: SQLite -> SQLite, weft", &floor_lite);
    let w = line("PostgreSQL -> PostgreSQL, weft (native)", &pg_weft);
    let p = line("PostgreSQL -> PostgreSQL, psql \\copy pipe", &pg_psql);
    println!(
        "pg: weft / psql pipe time                     {:>6.2}x  (goal <= 1x)",
        w / p
    );
    let a = line("SQLite -> PostgreSQL, weft (native)", &in_native);
    let b = line("SQLite -> PostgreSQL, weft (JDBC bridge)", &in_jdbc);
    println!(
        "pg: native speed-up over JDBC                 {:>6.2}x  (goal >= 3x)",
        b / a
    );
    let c = line("PostgreSQL -> SQLite, weft (native)", &out_native);
    let d = line("PostgreSQL -> SQLite, weft (JDBC bridge)", &out_jdbc);
    println!(
        "pg: native speed-up over JDBC                 {:>6.2}x  (goal >= 3x)",
        d / c
    );
}
