//! History benchmark (`cargo bench -p weft_tests --bench history`): prints numbers, asserts
//! only that both ways wrote the same history.
//!
//! A dimension of 1,000,000 keys (four columns) with its history opened in an SQLite file,
//! then 1% of the keys changed in the staging table (a tenth of those deleted, a tenth new).
//! The same change is historised on copies of that file through weft's `History` (the
//! plugin loaded from its shared library and run by the host's action runner, one
//! transaction) and, in the same run, by the same SCD2 written by hand as two SQL statements
//! in the `sqlite3` command-line shell (one transaction). Three alternating rounds, medians
//! compared. Goal (issue 17): weft within 1.5x of the hand-written SQL.
//!
//! Needs `cargo build --release --workspace` first and the `sqlite3` shell (Debian's
//! `sqlite3`). `WEFT_BENCH_ROWS` changes the key count.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::Path;
use std::process::Command;
use std::time::Instant;
use weft_tests::bench::median;

const TABLES: &str = "
CREATE TABLE stg (id INTEGER PRIMARY KEY, name TEXT, city TEXT, amount INTEGER);
CREATE TABLE dim (id INTEGER NOT NULL, name TEXT, city TEXT, amount INTEGER,
                  valid_from_dt TEXT NOT NULL, invalid_from_dt TEXT,
                  PRIMARY KEY (id, valid_from_dt));";

/// The hand-written SCD2 of the same change: close what changed or went, open what is new
/// or changed.
const BY_HAND: &str = "
BEGIN;
UPDATE dim SET invalid_from_dt = '2026-01-02'
 WHERE invalid_from_dt IS NULL
   AND NOT EXISTS (SELECT 1 FROM stg s WHERE s.id = dim.id AND s.name IS dim.name
                   AND s.city IS dim.city AND s.amount IS dim.amount);
INSERT INTO dim (id, name, city, amount, valid_from_dt, invalid_from_dt)
SELECT s.id, s.name, s.city, s.amount, '2026-01-02', NULL FROM stg s
 WHERE NOT EXISTS (SELECT 1 FROM dim d WHERE d.id = s.id AND d.invalid_from_dt IS NULL);
COMMIT;";

/// The history's rows, as one text to compare.
fn digest(path: &Path) -> (i64, i64, i64) {
    rusqlite::Connection::open(path)
        .expect("open")
        .query_row(
            "SELECT COUNT(*), SUM(invalid_from_dt IS NULL), SUM(id * (valid_from_dt = '2026-01-02') + COALESCE(amount, 0))
               FROM dim",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("digest")
}

fn keyfile(dir: &Path, db: &Path, round: usize) -> weft_core::keys::KeyFile {
    use std::os::unix::fs::PermissionsExt;
    let kf = dir.join(format!("keyfile{round}"));
    std::fs::write(&kf, format!("1|sqlite|{}|||\n", db.display())).expect("keyfile");
    std::fs::set_permissions(&kf, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    weft_core::keys::KeyFile::load(&kf).expect("keys")
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("history bench: run with `cargo bench -p weft_tests --bench history`");
        return;
    }
    let rows: i64 = std::env::var("WEFT_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let target_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().and_then(|p| p.parent()).map(Path::to_path_buf))
        .unwrap_or_default();
    let registry = weft_core::plugins::Registry::load(&[(target_dir.clone(), false)]);
    assert!(
        registry.module("History").is_some(),
        "no History plugin in {}: run `cargo build --release --workspace` first",
        target_dir.display()
    );
    let plan_at = |at: &str| {
        let sheet = serde_json::json!({"version": 1, "transformationData": {"sheets": [{"id": 1, "attributes": {"name": "history", "folder_id": 1, "folder": "/"},
            "nodes": [
                {"id": 1, "type": 0, "attributes": {"module": "History", "name": "history",
                  "action": "SELECT id, name, city, amount FROM stg", "keys": "id", "changeTime": at}},
                {"id": 2, "type": 1, "attributes": {"field1": "stg", "objectTypeId": 1, "connectionId": 1}},
                {"id": 3, "type": 1, "attributes": {"field1": "dim", "objectTypeId": 1, "connectionId": 1}}],
            "edges": [{"id": 1, "from": 2, "to": 1}, {"id": 2, "from": 1, "to": 3}]}]}});
        let (doc, _) = weft_dsr::parse(&sheet.to_string());
        weft_engine::exec::actions_of(&doc.expect("sheet").sheets[0], &|_| {
            weft_sdk::Dialect::Sqlite
        })
        .remove(0)
    };

    let dir = tempfile::tempdir().expect("dir");
    let base = dir.path().join("base.db");
    let t = Instant::now();
    {
        let c = rusqlite::Connection::open(&base).expect("base");
        c.execute_batch(TABLES).expect("tables");
        c.execute_batch(&format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})
             INSERT INTO stg SELECT i, 'name ' || i, 'city ' || (i % 1000), i % 97 FROM n;"
        ))
        .expect("staging");
    }
    // The first load, through History: every key opens a period.
    let keys = keyfile(dir.path(), &base, 99);
    let t_first = Instant::now();
    let first = weft_engine::exec::run_action(&registry, &keys, &plan_at("2026-01-01"), &[])
        .outcome
        .expect("the first load");
    println!(
        "history: {rows} keys staged in {:.1} s; the first load opened {} periods in {:.2} s",
        t.elapsed().as_secs_f64() - t_first.elapsed().as_secs_f64(),
        first.rows_written,
        t_first.elapsed().as_secs_f64()
    );
    // 1% changed: most of them updated, a tenth deleted, a tenth new keys.
    let changed = rows / 100;
    {
        let c = rusqlite::Connection::open(&base).expect("base");
        c.execute_batch(&format!(
            "UPDATE stg SET city = city || ' moved' WHERE id % 100 = 7 AND id % 1000 <> 507 AND id % 1000 <> 607;
             DELETE FROM stg WHERE id % 1000 = 507;
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {new})
             INSERT INTO stg SELECT {rows} + i, 'new ' || i, 'city new', 1 FROM n;
             VACUUM;",
            new = changed / 10
        ))
        .expect("the change");
    }

    let (mut weft_times, mut hand_times) = (Vec::new(), Vec::new());
    let mut digests = Vec::new();
    for round in 0..3 {
        let ours = dir.path().join(format!("weft{round}.db"));
        std::fs::copy(&base, &ours).expect("copy");
        let keys = keyfile(dir.path(), &ours, round);
        let t = Instant::now();
        let ran = weft_engine::exec::run_action(&registry, &keys, &plan_at("2026-01-02"), &[]);
        weft_times.push(t.elapsed().as_secs_f64());
        let o = ran.outcome.expect("history");
        if round == 0 {
            println!(
                "history: weft read {}, opened {}, closed {} ({})",
                o.rows_read,
                o.rows_written,
                o.rows_updated,
                ran.log.last().cloned().unwrap_or_default()
            );
        }
        digests.push(digest(&ours));

        let theirs = dir.path().join(format!("hand{round}.db"));
        std::fs::copy(&base, &theirs).expect("copy");
        let t = Instant::now();
        let out = Command::new("sqlite3")
            .arg(&theirs)
            .arg(BY_HAND)
            .output()
            .expect("sqlite3 (install Debian's sqlite3)");
        hand_times.push(t.elapsed().as_secs_f64());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        digests.push(digest(&theirs));
        println!(
            "history: round {round}: weft {:.3} s, by hand in sqlite3 {:.3} s",
            weft_times[round], hand_times[round]
        );
    }
    assert!(
        digests.windows(2).all(|w| w[0] == w[1]),
        "both ways wrote the same history: {digests:?}"
    );
    let (w, h) = (median(&weft_times), median(&hand_times));
    println!(
        "history over {rows} keys, {changed} changed: weft {w:.3} s, by hand {h:.3} s: {:.2}x (goal <= 1.5x)",
        w / h
    );
}
