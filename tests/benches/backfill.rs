//! A backfill (`cargo bench -p weft_tests --bench backfill`): prints numbers, asserts only
//! that every instance finished.
//!
//! The real `weft` binary on a SQLite repository (in `TMPDIR`), a batch of 10 `Sql` actions
//! chained through 10 tables of a SQLite data file, backfilled over 365 days (one instance a
//! day): the time from `BackfillBatch` until the last instance finished, with 1 and with 4
//! instances at a time, and what that is an instance and an action.
//!
//! Needs `cargo build --release --workspace` first (else the debug binary is measured; set
//! `WEFT_BIN` to measure another build).

use serde_json::json;
use std::time::{Duration, Instant};
use weft_tests::server::*;

const DAYS: i64 = 365;
const ACTIONS: i64 = 10;

/// Ten sheets: sheet `k` inserts a row of `t{k-1}` into `t{k}` (sheet 1 writes one row).
fn chain() -> serde_json::Value {
    let sheets: Vec<serde_json::Value> = (1..=ACTIONS)
        .map(|k| {
            let a = k * 10;
            let sql = if k == 1 {
                "INSERT INTO t1 VALUES ('${schedule_date}')".to_owned()
            } else {
                format!("INSERT INTO t{k} SELECT d FROM t{} WHERE d = '${{schedule_date}}'", k - 1)
            };
            let mut nodes = vec![
                json!({"id": a, "type": 0, "attributes": {"module": "Sql", "name": format!("step {k}"), "action": sql}}),
                json!({"id": a + 9, "type": 1, "attributes": {"field1": format!("t{k}"), "objectTypeId": 1, "connectionId": 1}}),
            ];
            let mut edges = vec![json!({"id": a + 9, "from": a, "to": a + 9})];
            if k > 1 {
                nodes.push(json!({"id": a + 1, "type": 1, "attributes": {"field1": format!("t{}", k - 1), "objectTypeId": 1, "connectionId": 1}}));
                edges.push(json!({"id": a + 1, "from": a + 1, "to": a}));
            }
            json!({"id": k, "attributes": {"name": format!("step {k}"), "folder_id": 1, "folder": "/bench"},
                   "nodes": nodes, "edges": edges})
        })
        .collect();
    json!({"version": 1, "transformationData": {
        "folders": [{"id": 1, "path": "/bench"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": sheets,
        "batches": [{"id": 1, "name": "daily load", "schedule": "daily 02:00", "enabled": false,
                     "elements": [{"elementType": "F", "elementId": 1}]}]}})
}

/// Backfills the year with `parallel` at a time; the time until the last one finished.
fn year(w: &Weft, parallel: i64) -> Duration {
    let started = Instant::now();
    let (st, v) = command(
        w,
        "BackfillBatch",
        json!({"batch": 1, "from": "2025-01-01", "to": "2025-12-31", "parallel": parallel}),
    );
    assert_eq!(st, 200, "{v}");
    let backfill = v["payload"]["backfillId"].as_i64().expect("backfillId");
    loop {
        let (_, v) = command(
            w,
            "ListBatchInstances",
            json!({"backfillId": backfill, "limit": 1000}),
        );
        let listed = v["payload"]["instances"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let ended = listed.iter().filter(|i| i["end"].is_string()).count() as i64;
        if ended == DAYS {
            assert!(
                listed.iter().all(|i| i["state"] == "finished"),
                "every instance finished"
            );
            return started.elapsed();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!(
            "backfill bench: run with `cargo bench -p weft_tests --bench backfill` for numbers"
        );
        return;
    }
    weft::init_tls();
    println!("weft binary: {}", weft_bin().display());
    for parallel in [1, 4] {
        let w = Weft::start_with(&["--listen", "127.0.0.1:0"], &[]);
        let data = w.home.path().join("data.db");
        let tables: String = (1..=ACTIONS)
            .map(|k| format!("CREATE TABLE t{k} (d TEXT);"))
            .collect();
        rusqlite::Connection::open(&data)
            .expect("data")
            .execute_batch(&tables)
            .expect("tables");
        w.add_keys(&format!("1|sqlite|{}|||\n", data.display()));
        let (st, v) = post(&w.url, deploy_body(&chain().to_string()));
        assert_eq!(st, 200, "{v}");
        let took = year(&w, parallel);
        let rows: i64 = rusqlite::Connection::open(&data)
            .expect("data")
            .query_row(&format!("SELECT COUNT(*) FROM t{ACTIONS}"), [], |r| {
                r.get(0)
            })
            .expect("rows");
        assert_eq!(rows, DAYS, "each day reached the last table once");
        println!(
            "backfill of {DAYS} days of a {ACTIONS}-action batch, {parallel} at a time: {:.2} s, {:.1} ms an instance, {:.2} ms an action",
            took.as_secs_f64(),
            took.as_secs_f64() * 1e3 / DAYS as f64,
            took.as_secs_f64() * 1e3 / (DAYS * ACTIONS) as f64,
        );
    }
}
