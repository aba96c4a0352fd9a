//! JDBC benchmark (`cargo bench -p weft_tests --bench jdbc_transfer`): prints numbers,
//! asserts nothing but that the rows arrived.
//!
//! Copies 1,000,000 rows of five columns (bigint, text, numeric, date, boolean) from a real
//! PostgreSQL server, started by the bench, into an SQLite file: through weft's `Transfer`
//! (the jdbc bridge and the native SQLite connection, loaded from their shared libraries and
//! run by the host's action runner) and, in the same run, through the plain Java program
//! `benches/java/JdbcCopy.java` over JDBC on both sides (PostgreSQL's driver and the SQLite
//! JDBC driver of Debian). Three alternating rounds, each into a fresh file; medians compared.
//! Goal (issue 5): weft at least 80% of the Java program's throughput.
//!
//! Needs `cargo build --release --workspace` first, PostgreSQL, a JDK, and the Debian packages
//! libpostgresql-jdbc-java and libxerial-sqlite-jdbc-java (`.ci/run` installs them).
//! `WEFT_BENCH_ROWS` changes the row count.

// The same allocator as the `weft` binary: values cross threads by the million.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use weft_tests::bench::median;
use weft_tests::postgres::Postgres;

const CREATE: &str =
    "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, amount TEXT, day TEXT, flag INTEGER)";
const PG_JAR: &str = "/usr/share/java/postgresql.jar";
const SQLITE_JAR: &str = "/usr/share/java/sqlite-jdbc.jar";

fn count(path: &Path) -> i64 {
    rusqlite::Connection::open(path)
        .expect("open")
        .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
        .expect("count")
}

fn fresh_target(path: &Path) {
    rusqlite::Connection::open(path)
        .expect("target")
        .execute_batch(CREATE)
        .expect("create");
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("jdbc bench: run with `cargo bench -p weft_tests --bench jdbc_transfer`");
        return;
    }
    let rows: i64 = std::env::var("WEFT_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let pg = Postgres::start().expect("start PostgreSQL");
    let t = Instant::now();
    pg.psql(&format!(
        "CREATE TABLE t (id bigint PRIMARY KEY, name text, amount numeric(14,2), day date,
           flag boolean);
         INSERT INTO t SELECT i, 'customer ' || i, i * 0.25, DATE '2026-11-01' + (i % 28),
           i % 2 = 0 FROM generate_series(0, {}) AS i;
         VACUUM ANALYZE t;",
        rows - 1
    ))
    .expect("load PostgreSQL");
    println!(
        "jdbc: {rows} rows loaded into PostgreSQL in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let dir = tempfile::tempdir().expect("dir");
    // weft: drivers folder with the PostgreSQL driver, the bridge and Transfer from
    // target/release.
    let drivers = dir.path().join("drivers");
    std::fs::create_dir_all(&drivers).expect("drivers");
    std::os::unix::fs::symlink(PG_JAR, drivers.join("postgresql.jar")).expect("link jar");
    let target_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().and_then(|p| p.parent()).map(Path::to_path_buf))
        .unwrap_or_default();
    let mut registry = weft_core::plugins::Registry::load(&[(target_dir.clone(), false)]);
    assert!(
        registry.module("Transfer").is_some() && registry.bridge("jdbc").is_some(),
        "no Transfer plugin or jdbc bridge in {}: run `cargo build --release --workspace` first",
        target_dir.display()
    );
    registry.set_bridge_options(vec![(
        "weft.drivers".to_owned(),
        drivers.to_string_lossy().into_owned(),
    )]);
    let sheet = serde_json::json!({"version": 1, "transformationData": {"sheets": [{"id": 1, "attributes": {"name": "copy", "folder_id": 1, "folder": "/"},
        "nodes": [
            {"id": 1, "type": 0, "attributes": {"module": "Transfer", "name": "copy", "action": "SELECT id, name, amount, day, flag FROM t"}},
            {"id": 2, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 2}},
            {"id": 3, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 1}}],
        "edges": [{"id": 1, "from": 2, "to": 1}, {"id": 2, "from": 1, "to": 3}]}]}});
    let (doc, _) = weft_dsr::parse(&sheet.to_string());
    let plan = weft_engine::exec::actions_of(&doc.expect("sheet").sheets[0], &|c| {
        if c == 2 {
            weft_sdk::Dialect::Postgres
        } else {
            weft_sdk::Dialect::Sqlite
        }
    })
    .remove(0);

    // Java: the reference program, compiled once.
    let classes = dir.path().join("classes");
    let javac = Command::new("javac")
        .arg("-d")
        .arg(&classes)
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/java/JdbcCopy.java"))
        .status()
        .expect("javac (install a JDK)");
    assert!(javac.success(), "javac failed");
    let classpath = format!("{}:{PG_JAR}:{SQLITE_JAR}", classes.display());

    let (mut weft_times, mut java_times, mut java_process) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..3 {
        let dst = dir.path().join(format!("weft{round}.db"));
        fresh_target(&dst);
        let kf = dir.path().join(format!("keyfile{round}"));
        std::fs::write(
            &kf,
            format!(
                "1|sqlite|{}|||\n2|jdbc|{}|weft|secret|\n",
                dst.display(),
                pg.jdbc_url()
            ),
        )
        .expect("keyfile");
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&kf, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        }
        let keys = weft_core::keys::KeyFile::load(&kf).expect("keys");
        let t = Instant::now();
        let ran = weft_engine::exec::run_action(&registry, &keys, &plan, &[]);
        weft_times.push(t.elapsed().as_secs_f64());
        let outcome = ran.outcome.expect("transfer");
        assert_eq!(outcome.rows_written as i64, rows);
        assert_eq!(count(&dst), rows);

        let reference = dir.path().join(format!("java{round}.db"));
        fresh_target(&reference);
        let t = Instant::now();
        let out = Command::new("java")
            .arg("-cp")
            .arg(&classpath)
            .arg("JdbcCopy")
            .arg(pg.jdbc_url())
            .args(["weft", "secret"])
            .arg(&reference)
            .output()
            .expect("java");
        java_process.push(t.elapsed().as_secs_f64());
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "the Java program failed: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let secs: f64 = text
            .split_whitespace()
            .nth(4)
            .and_then(|s| s.parse().ok())
            .expect("`copied N rows in S s`");
        java_times.push(secs);
        assert_eq!(count(&reference), rows);
        if round == 0 {
            // Both copies hold the same values.
            let c = rusqlite::Connection::open(&dst).expect("open");
            c.execute(&format!("ATTACH '{}' AS j", reference.display()), [])
                .expect("attach");
            let differ: i64 = c
                .query_row(
                    "SELECT COUNT(*) FROM (SELECT * FROM t EXCEPT SELECT * FROM j.t)",
                    [],
                    |r| r.get(0),
                )
                .expect("compare");
            assert_eq!(differ, 0, "weft's copy and Java's copy differ");
        }
    }
    let (w, j) = (median(&weft_times), median(&java_times));
    let fmt = |v: &[f64]| {
        v.iter()
            .map(|t| format!("{t:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "jdbc: {rows} rows of 5 columns, PostgreSQL to an SQLite file, median of 3 alternating rounds"
    );
    println!(
        "jdbc: weft Transfer (jdbc bridge)     {w:>6.2} s  {:>9.0} rows/s  rounds [{}] (the first starts the JVM)",
        rows as f64 / w,
        fmt(&weft_times)
    );
    println!(
        "jdbc: plain Java program over JDBC    {j:>6.2} s  {:>9.0} rows/s  rounds [{}] (JVM start excluded; whole process [{}])",
        rows as f64 / j,
        fmt(&java_times),
        fmt(&java_process)
    );
    println!(
        "jdbc: weft throughput / Java's        {:>6.0}%  (goal >= 80%)",
        100.0 * j / w
    );
}
