//! Transfer benchmark (`cargo bench -p weft --bench transfer`): prints numbers, asserts
//! nothing but that the rows arrived.
//!
//! Copies 1,000,000 rows of five columns from one SQLite file to another through the
//! `Transfer` plugin (loaded from its shared library, run by the host's action runner), and in
//! the same run times the `sqlite3` command-line tool doing the same copy with `ATTACH` and
//! `INSERT INTO ... SELECT`. Goal: weft within 2x of the command-line tool (issue 3), 1.2x
//! (issue 24; between two SQLite files the plugin now attaches the source and copies inside
//! SQLite as the tool does).
//! Build the plugins first: `cargo build --release --workspace`. `WEFT_BENCH_ROWS` changes
//! the row count.

use std::path::Path;

// The same allocator as the `weft` binary: values cross threads by the million.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::time::Instant;

const CREATE: &str =
    "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, amount REAL, day TEXT, flag INTEGER)";

fn make_source(path: &Path, rows: i64) {
    let mut c = rusqlite::Connection::open(path).expect("source");
    c.execute_batch(CREATE).expect("create");
    let tx = c.transaction().expect("tx");
    {
        let mut st = tx
            .prepare("INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5)")
            .expect("prepare");
        for i in 0..rows {
            st.execute(rusqlite::params![
                i,
                format!("customer {i}"),
                i as f64 * 0.25,
                format!("2026-11-{:02}", i % 28 + 1),
                i % 2
            ])
            .expect("row");
        }
    }
    tx.commit().expect("commit");
}

fn count(path: &Path) -> i64 {
    rusqlite::Connection::open(path)
        .expect("open")
        .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
        .expect("count")
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("transfer bench: run with `cargo bench -p weft --bench transfer` for numbers");
        return;
    }
    let rows: i64 = std::env::var("WEFT_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("dir");
    let src = dir.path().join("src.db");
    make_source(&src, rows);

    let target_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().and_then(|p| p.parent()).map(Path::to_path_buf))
        .unwrap_or_default();
    let registry = weft_core::plugins::Registry::load(&[(target_dir.clone(), false)]);
    assert!(
        registry.module("Transfer").is_some(),
        "no Transfer plugin in {}: run `cargo build --release --workspace` first",
        target_dir.display()
    );
    let sheet = serde_json::json!({"version": 1, "transformationData": {"sheets": [{"id": 1, "attributes": {"name": "copy", "folder_id": 1, "folder": "/"},
        "nodes": [
            {"id": 1, "type": 0, "attributes": {"module": "Transfer", "name": "copy", "action": "SELECT id, name, amount, day, flag FROM t"}},
            {"id": 2, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 2}},
            {"id": 3, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 1}}],
        "edges": [{"id": 1, "from": 2, "to": 1}, {"id": 2, "from": 1, "to": 3}]}]}});
    let (doc, _) = weft_dsr::parse(&sheet.to_string());
    let plan = weft_engine::exec::actions_of(&doc.expect("sheet").sheets[0], &|_| {
        weft_sdk::Dialect::Sqlite
    })
    .remove(0);
    // The same copy streamed through the host in batches, as between other databases: a CTE
    // named like the target table keeps the plugin from copying inside SQLite.
    let streamed_plan = {
        let mut p = plan.clone();
        p.text = Some(
            "WITH t AS (SELECT id, name, amount, day, flag FROM main.t) SELECT * FROM t".to_owned(),
        );
        p
    };
    let (mut weft_times, mut cli_times, mut streamed_times) = (Vec::new(), Vec::new(), Vec::new());
    // Three rounds, alternating, each into a fresh file; the medians are compared.
    for round in 0..3 {
        let dst = dir.path().join(format!("weft{round}.db"));
        rusqlite::Connection::open(&dst)
            .expect("dst")
            .execute_batch(CREATE)
            .expect("create");
        let kf = dir.path().join(format!("keyfile{round}"));
        std::fs::write(
            &kf,
            format!(
                "1|sqlite|{}|||\n2|sqlite|{}|||\n",
                dst.display(),
                src.display()
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
        // Streamed, into a fresh file under the same connection.
        std::fs::remove_file(&dst).expect("rm");
        rusqlite::Connection::open(&dst)
            .expect("dst")
            .execute_batch(CREATE)
            .expect("create");
        let t = Instant::now();
        let ran = weft_engine::exec::run_action(&registry, &keys, &streamed_plan, &[]);
        streamed_times.push(t.elapsed().as_secs_f64());
        assert_eq!(ran.outcome.expect("streamed").rows_written as i64, rows);
        assert!(!ran.log.iter().any(|l| l.contains("Copied inside SQLite")));

        // The reference: the sqlite3 command-line tool, same copy, same kind of files.
        let reference = dir.path().join(format!("cli{round}.db"));
        rusqlite::Connection::open(&reference)
            .expect("cli")
            .execute_batch(CREATE)
            .expect("create");
        let sql = format!(
            "ATTACH '{}' AS s; INSERT INTO t SELECT * FROM s.t;",
            src.display()
        );
        let t = Instant::now();
        let status = std::process::Command::new("sqlite3")
            .arg(&reference)
            .arg(&sql)
            .status();
        let secs = t.elapsed().as_secs_f64();
        if !matches!(status, Ok(s) if s.success()) {
            println!(
                "transfer: weft Transfer plugin {:.2} s for {rows} rows",
                weft_times[0]
            );
            println!(
                "transfer: the sqlite3 command-line tool is missing (apt-get install sqlite3): no reference time"
            );
            return;
        }
        assert_eq!(count(&reference), rows);
        cli_times.push(secs);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (w, c, st) = (
        median(&mut weft_times),
        median(&mut cli_times),
        median(&mut streamed_times),
    );
    println!(
        "transfer: {rows} rows of 5 columns, SQLite file to SQLite file, median of 3 alternating rounds"
    );
    println!(
        "transfer: weft Transfer plugin      {w:>7.2} s  ({:.0} rows/s)  rounds {:?}",
        rows as f64 / w,
        weft_times
            .iter()
            .map(|t| format!("{t:.2}"))
            .collect::<Vec<_>>()
    );
    println!(
        "transfer: sqlite3 ATTACH + INSERT   {c:>7.2} s  ({:.0} rows/s)  rounds {:?}",
        rows as f64 / c,
        cli_times
            .iter()
            .map(|t| format!("{t:.2}"))
            .collect::<Vec<_>>()
    );
    println!(
        "transfer: ratio weft / sqlite3      {:>7.2}x  (goal <= 1.2x, issue 24)",
        w / c
    );
    println!(
        "transfer: streamed through the host {st:>7.2} s  ({:.0} rows/s, {:.2}x the tool)  rounds {:?}",
        rows as f64 / st,
        st / c,
        streamed_times
            .iter()
            .map(|t| format!("{t:.2}"))
            .collect::<Vec<_>>()
    );
}
