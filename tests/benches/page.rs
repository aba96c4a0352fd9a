//! The web page's speed (`cargo bench -p weft_tests --bench page`): prints numbers, asserts
//! only that the page showed what it should.
//!
//! A release `weft serve` on a SQLite repository holding 100,000 batch instances (2 % failed,
//! every tenth named `adhoc ...`) and one run of 1,000 actions (ten layers that depend on the
//! layer before), written straight into the repository file before the server starts.
//!
//! 1. The runs view's first page as the page asks it (`ListBatchInstances`, 50): p50 and
//!    worst of 30, newest, by state (the rare `failed`) and by name. Goal: <= 200 ms.
//! 2. In Chromium: the runs view drawn, from the address to the table (the page marks
//!    `weft:drawn` when a view is on screen).
//! 3. In Chromium: the 1,000-action run's timeline drawn. Goal: <= 1 s.
//! 4. What following costs when no page is open: the server's CPU time over 10 s idle.
//!
//! Needs `cargo build --release --workspace` first and Chromium (`.ci/run` installs it).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use serde_json::json;
use std::time::{Duration, Instant};
use weft_tests::server::*;

const INSTANCES: i64 = 100_000;
const ACTIONS: i64 = 1_000;

/// Fills the repository of `home` (made by a first start) with the instances and the big run;
/// the big run's id.
fn fill(home: &std::path::Path) -> i64 {
    let mut c = rusqlite::Connection::open(home.join("repository.db")).expect("repository");
    let tx = c.transaction().expect("tx");
    {
        let mut add = tx
            .prepare("INSERT INTO batch_instances (batch_name, user_name, state, started_at, ended_at, elements, variables) VALUES (?1, 'etl', ?2, ?3, ?4, '[]', '[]')")
            .expect("prepare");
        for i in 0..INSTANCES {
            let name = if i % 10 == 0 {
                format!("adhoc {i}")
            } else {
                "nightly load".to_owned()
            };
            let state = if i % 50 == 7 { "failed" } else { "finished" };
            let start = chrono::DateTime::from_timestamp(1_760_000_000 + i * 60, 0).expect("time");
            let end = start + chrono::Duration::seconds(42);
            add.execute(rusqlite::params![
                name,
                state,
                start.format("%Y-%m-%d %H:%M:%S").to_string(),
                end.format("%Y-%m-%d %H:%M:%S").to_string()
            ])
            .expect("instance");
        }
    }
    tx.execute(
        "INSERT INTO batch_instances (batch_name, user_name, state, started_at, ended_at, elements, variables) VALUES ('wide load', 'etl', 'finished', '2026-11-25 01:00:00', '2026-11-25 01:10:00', '[]', '[]')",
        [],
    )
    .expect("big run");
    let big = tx.last_insert_rowid();
    {
        let mut add = tx
            .prepare("INSERT INTO instance_actions (instance_id, action_id, sheet_id, name, module, depends_on, state, started_at, ended_at, rows_written, log) VALUES (?1, ?2, ?3, ?4, 'Sql', ?5, 'F', ?6, ?7, 100, ?8)")
            .expect("prepare");
        for a in 0..ACTIONS {
            let layer = a / 100;
            let deps: Vec<i64> = if layer == 0 {
                Vec::new()
            } else {
                vec![(layer - 1) * 100 + (a % 100) + 1]
            };
            let start = chrono::DateTime::from_timestamp(1_795_568_400 + layer * 60 + a % 7, 0)
                .expect("time");
            let end = start + chrono::Duration::seconds(30 + a % 20);
            add.execute(rusqlite::params![
                big,
                a + 1,
                a / 10 + 1,
                format!("load part {a}"),
                serde_json::to_string(&deps).expect("deps"),
                start.format("%Y-%m-%d %H:%M:%S").to_string(),
                end.format("%Y-%m-%d %H:%M:%S").to_string(),
                format!(
                    "Sql action {} `load part {a}`: INSERT INTO part_{a} SELECT * FROM raw",
                    a + 1
                )
            ])
            .expect("action");
        }
    }
    tx.commit().expect("commit");
    big
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// p50 and worst of `n` asks of `payload`.
fn asks(w: &Weft, payload: &serde_json::Value, n: usize) -> (f64, f64, usize) {
    let mut times = Vec::new();
    let mut shown = 0;
    for _ in 0..n {
        let t = Instant::now();
        let (st, v) = command(w, "ListBatchInstances", payload.clone());
        times.push(ms(t.elapsed()));
        assert_eq!(st, 200, "{v}");
        shown = v["payload"]["instances"].as_array().map_or(0, Vec::len);
    }
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], times[times.len() - 1], shown)
}

/// The server's CPU time (user + system) so far, from /proc.
fn cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().expect("utime") + f[12].parse::<f64>().expect("stime");
    ticks * 10.0
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("page bench: run with `cargo bench -p weft_tests --bench page`");
        return;
    }
    weft::init_tls();
    // A first start makes the repository; it is filled while no server runs.
    let first = Weft::start();
    let home = first.stop();
    let t = Instant::now();
    let big = fill(home.path());
    println!(
        "repository filled: {INSTANCES} instances and a run of {ACTIONS} actions in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);

    // 1. The first page.
    for (what, payload) in [
        ("newest", json!({"limit": 50})),
        ("state failed", json!({"limit": 50, "state": "failed"})),
        ("name 'adhoc'", json!({"limit": 50, "name": "adhoc"})),
        (
            "name matching none (every row read)",
            json!({"limit": 50, "name": "no such batch"}),
        ),
    ] {
        let (p50, worst, shown) = asks(&w, &payload, 30);
        assert_eq!(shown, if what.contains("none") { 0 } else { 50 }, "{what}");
        println!(
            "runs view, first page of 50 of {INSTANCES} instances, {what}: p50 {p50:.1} ms, worst {worst:.1} ms (goal <= 200 ms)"
        );
    }

    // 2. and 3. In the browser.
    let base = w.url.trim_end_matches("/weft/service").to_owned();
    let browser = weft_tests::browser::Browser::start();
    let page = browser.open(&format!("{base}/#/runs"));
    page.wait_until(
        "document.querySelectorAll('#runs tbody tr').length === 50",
        "the first page",
    );
    let drawn = page.eval("performance.getEntriesByName('weft:drawn').pop().startTime");
    println!(
        "runs view in Chromium: drawn {:.0} ms after the address was opened (page load included)",
        drawn.as_f64().unwrap_or(f64::NAN)
    );
    page.eval("performance.clearMarks(); performance.mark('go')");
    page.goto(&format!("{base}/#/runs/{big}"));
    page.wait_until(
        &format!("document.querySelectorAll('.tl-row').length === {ACTIONS}"),
        "the timeline",
    );
    let took = page.eval("performance.measure('timeline', 'go', 'weft:drawn').duration");
    println!(
        "a run of {ACTIONS} actions in Chromium: timeline drawn {:.0} ms after its address (goal <= 1000 ms)",
        took.as_f64().unwrap_or(f64::NAN)
    );
    page.screenshot("bench-timeline");
    page.assert_no_errors();
    drop(page);
    drop(browser);

    // 4. No page open.
    let pid = w.child.id();
    let before = cpu_ms(pid);
    std::thread::sleep(Duration::from_secs(10));
    println!(
        "no page open: the server used {:.0} ms of CPU in 10 s",
        cpu_ms(pid) - before
    );
}
