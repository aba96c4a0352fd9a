//! Notifications (`cargo bench -p weft_tests --bench notify`): prints numbers, asserts only
//! that every run ended as it should and every notification arrived.
//!
//! The real `weft` binary on a SQLite repository (in `TMPDIR`) and a receiver in this
//! process (a plain TCP listener that answers 204 and notes when each POST arrived):
//!
//! - the outbox's cost: a run of 1,000 `Sql` actions (100 sheets of 10, each writing one
//!   of 10 tables) with no rules, and with rules for every batch on `started`, `finished`,
//!   `failed` and `actionFailed` to a webhook, alternated, 7 of each; the medians and the
//!   difference;
//! - from a failure to the webhook: 30 runs of one action that fails, each timed from the
//!   `RunElements` request to the POST's arrival (an upper bound: the run's own time is in
//!   it); p50, p90 and the worst.
//!
//! Needs `cargo build --release --workspace` first (else the debug binary is measured; set
//! `WEFT_BIN` to measure another build).

use serde_json::json;
use std::io::{Read as _, Write as _};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use weft_tests::server::*;

const SHEETS: i64 = 100;
const PER_SHEET: i64 = 10;
const ROUNDS: usize = 7;
const LATENCY_RUNS: usize = 30;

/// A receiver that answers 204 to every POST and sends when each arrived.
fn receiver() -> (String, mpsc::Receiver<Instant>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                // The head, then as many bytes as Content-Length says.
                loop {
                    let Ok(n) = s.read(&mut chunk) else { return };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf);
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text[..end]
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if buf.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                let _ = tx.send(Instant::now());
                let _ = s.write_all(
                    b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            });
        }
    });
    (url, rx)
}

fn document() -> serde_json::Value {
    let mut sheets: Vec<serde_json::Value> = (0..SHEETS)
        .map(|s| {
            let id = 100 + s;
            let mut nodes = Vec::new();
            let mut edges = Vec::new();
            for a in 0..PER_SHEET {
                let action = id * 100 + a * 2;
                let table = format!("t{}", a % 10);
                nodes.push(json!({"id": action, "type": 0, "attributes": {"module": "Sql",
                    "name": format!("a{action}"), "action": format!("INSERT INTO {table} VALUES ({action})")}}));
                nodes.push(json!({"id": action + 1, "type": 1, "attributes": {"field1": table,
                    "objectTypeId": 1, "connectionId": 1}}));
                edges.push(json!({"id": action + 1, "from": action, "to": action + 1}));
            }
            json!({"id": id, "attributes": {"name": format!("s{id}"), "folder_id": 10, "folder": "/bench"},
                   "nodes": nodes, "edges": edges})
        })
        .collect();
    sheets.push(json!({"id": 9, "attributes": {"name": "fails", "folder_id": 11, "folder": "/fails"},
        "nodes": [
            {"id": 90, "type": 0, "attributes": {"module": "Sql", "name": "load", "action": "INSERT INTO nowhere VALUES (1)"}},
            {"id": 91, "type": 1, "attributes": {"field1": "nowhere", "objectTypeId": 1, "connectionId": 1}}],
        "edges": [{"id": 91, "from": 90, "to": 91}]}));
    json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/bench"}, {"id": 11, "path": "/fails"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": sheets}})
}

fn set_rules(w: &Weft, url: &str, rules: serde_json::Value) {
    let doc = json!({"version": 1, "transformationData": {"notifications": {
        "channels": [{"name": "hook", "type": "webhook", "url": url}], "rules": rules}}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
}

/// Runs folder `folder` and waits for its end; how long it took and its state.
fn run(w: &Weft, folder: i64) -> (Duration, String) {
    let started = Instant::now();
    let (st, v) = command(
        w,
        "RunElements",
        json!({"batchExecution": {"batchName": "bench", "user": "bench",
            "elementList": [{"elementType": "F", "elementId": folder}]}}),
    );
    assert_eq!(st, 200, "{v}");
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    loop {
        let (st, v) = command(
            w,
            "WaitBatchInstance",
            json!({"batchInstanceId": id, "timeoutSeconds": 60}),
        );
        assert_eq!(st, 200, "{v}");
        let state = v["payload"]["state"].as_str().unwrap_or("").to_owned();
        if state != "running" && state != "waiting" {
            return (started.elapsed(), state);
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    // `cargo test --all-targets` runs each bench once without `--bench`: no numbers then.
    if !std::env::args().any(|a| a == "--bench") {
        println!("notify bench: run with `cargo bench -p weft_tests --bench notify`");
        return;
    }
    let (url, arrivals) = receiver();
    let w = Weft::start();
    let data = w.home.path().join("data.db");
    let tables: String = (0..10)
        .map(|t| format!("CREATE TABLE t{t} (n INTEGER);"))
        .collect();
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch(&tables)
        .expect("tables");
    w.add_keys(&format!("1|sqlite|{}|||\n", data.display()));
    let (st, v) = post(&w.url, deploy_body(&document().to_string()));
    assert_eq!(st, 200, "{v}");
    println!("weft: {}", weft_bin().display());

    // The outbox's cost on a 1,000-action run.
    let rules = json!([{"on": ["started", "finished", "failed", "actionFailed"], "to": ["hook"]}]);
    let (mut without, mut with) = (Vec::new(), Vec::new());
    run(&w, 10); // warm: plans parsed, pools open
    for _ in 0..ROUNDS {
        set_rules(&w, &url, json!([]));
        let (t, state) = run(&w, 10);
        assert_eq!(state, "finished");
        without.push(t);
        set_rules(&w, &url, rules.clone());
        let (t, state) = run(&w, 10);
        assert_eq!(state, "finished");
        with.push(t);
    }
    // Each run with rules told its start and its end.
    let mut told = 0;
    while told < 2 * ROUNDS {
        arrivals
            .recv_timeout(Duration::from_secs(30))
            .expect("every notification arrives");
        told += 1;
    }
    let (a, b) = (median(without), median(with));
    println!(
        "outbox: a run of {} actions: without rules {:.1} ms, with rules {:.1} ms (medians of {ROUNDS}): {:+.1} %",
        SHEETS * PER_SHEET,
        a.as_secs_f64() * 1e3,
        b.as_secs_f64() * 1e3,
        (b.as_secs_f64() / a.as_secs_f64() - 1.0) * 100.0
    );

    // From a failure to the webhook.
    set_rules(&w, &url, json!([{"on": ["failed"], "to": ["hook"]}]));
    while arrivals.try_recv().is_ok() {}
    let mut latencies = Vec::new();
    for _ in 0..LATENCY_RUNS {
        let sent = Instant::now();
        let (_, state) = run(&w, 11);
        assert_eq!(state, "failed");
        let arrived = arrivals
            .recv_timeout(Duration::from_secs(30))
            .expect("the webhook arrives");
        latencies.push(arrived.duration_since(sent));
    }
    latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "failure to webhook: {LATENCY_RUNS} runs of one failing action, from RunElements to the POST's arrival: p50 {:.1} ms, p90 {:.1} ms, worst {:.1} ms",
        ms(latencies[LATENCY_RUNS / 2]),
        ms(latencies[LATENCY_RUNS * 9 / 10]),
        ms(latencies[LATENCY_RUNS - 1])
    );
}
