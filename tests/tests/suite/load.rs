//! Load and faults together, end to end: clients deploy sheets and run a batch (and wait for
//! it) without pause while the server is killed (SIGKILL) and started again in the same home
//! every few hundred acknowledged deploys. At the end: no request failed except while the
//! server was down, every acknowledged deploy is in the repository, every acknowledged run
//! finished (restarted after a kill where needed) and did its work exactly once (each run
//! inserts a row naming its instance; the commit markers keep a kill right after a commit
//! from repeating it), and the last server's memory and descriptors stayed flat.
//!
//! It runs for `WEFT_SOAK_SECONDS` seconds (default 45, well under two minutes); the soak run
//! is `WEFT_SOAK_SECONDS=600 cargo test --release -p weft_tests --test suite -- load:: --nocapture`.

use crate::common;

use common::*;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

const DEPLOYERS: usize = 3;
const RUNNERS: usize = 2;
/// Acknowledged deploys between two kills.
const KILL_EVERY: usize = 300;
const ENV: &[(&str, &str)] = &[("WEFT_MAX_PARALLEL_ACTIONS", "2")];

fn seconds() -> u64 {
    std::env::var("WEFT_SOAK_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(45)
}

/// Resident memory (kB) and open descriptors of a process.
fn usage(pid: u32) -> (u64, usize) {
    let rss = proc_status(pid, "VmRSS");
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count);
    (rss, fds)
}

/// Connection 1 (`data.db`: `src`, `runs`) and sheet 7000: a Sql action inserting one row
/// naming its instance into `runs`, after a Transfer of `src` into `copy`.
fn setup(w: &Weft) -> std::path::PathBuf {
    let data = w.home.path().join("data.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch(
            "CREATE TABLE src (id INTEGER, v TEXT);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
             INSERT INTO src SELECT i, 'v' || i FROM n;
             CREATE TABLE copy (id INTEGER, v TEXT);
             CREATE TABLE runs (instance INTEGER, copied INTEGER);",
        )
        .expect("tables");
    w.add_keys(&format!("1|sqlite|{}|||\n", data.display()));
    let object = |id: i64, t: &str| json!({"id": id, "type": 1, "attributes": {"field1": t, "objectTypeId": 1, "connectionId": 1}});
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/sales"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [{"id": 7000, "attributes": {"name": "load", "folder_id": 10, "folder": "/sales"},
          "nodes": [
            {"id": 7001, "type": 0, "attributes": {"module": "Transfer", "name": "copy", "action": "SELECT id, v FROM src"}},
            {"id": 7002, "type": 0, "attributes": {"module": "Sql", "name": "count",
              "action": "INSERT INTO runs SELECT ${batch_instance_id}, COUNT(*) FROM copy"}},
            object(7003, "src"), object(7004, "copy"), object(7005, "runs")],
          "edges": [{"id": 7001, "from": 7003, "to": 7001}, {"id": 7002, "from": 7001, "to": 7004},
                    {"id": 7003, "from": 7004, "to": 7002}, {"id": 7004, "from": 7002, "to": 7005}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    data
}

struct Shared {
    url: RwLock<String>,
    stop: AtomicBool,
    /// Requests that failed while the server was up.
    errors: Mutex<Vec<String>>,
    deployed: AtomicUsize,
}

impl Shared {
    fn url(&self) -> String {
        self.url
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn error(&self, e: String) {
        self.errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(e);
    }
}

/// Sends `body` until the server answers (a refused or broken connection means it is being
/// restarted); answers the status and body.
fn call(shared: &Shared, client: &reqwest::blocking::Client, body: &Value) -> Option<(u16, Value)> {
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return None;
        }
        let sent = client
            .post(shared.url())
            .header("content-type", "application/json")
            .body(body.to_string())
            .send();
        match sent {
            Ok(r) => {
                let st = r.status().as_u16();
                match r.json::<Value>() {
                    Ok(v) => return Some((st, v)),
                    // The server died while answering.
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn deployer(shared: &Shared, c: usize) -> Vec<i64> {
    let client = reqwest::blocking::Client::new();
    let mut acknowledged = Vec::new();
    let mut n = 0;
    while !shared.stop.load(Ordering::Relaxed) {
        let id = 1_000_000 + c as i64 * 1_000_000 + n;
        n += 1;
        let body: Value = serde_json::from_slice(&deploy_body(&sheet(id))).expect("body");
        match call(shared, &client, &body) {
            Some((200, _)) => {
                acknowledged.push(id);
                shared.deployed.fetch_add(1, Ordering::Relaxed);
            }
            Some((st, v)) => shared.error(format!("deploy {id}: {st} {v}")),
            None => break,
        }
    }
    acknowledged
}

/// Runs sheet 7000 and waits for each run to finish, restarting it when a kill interrupted
/// it; answers the acknowledged instances.
fn runner(shared: &Shared) -> Vec<i64> {
    let client = reqwest::blocking::Client::new();
    let mut acknowledged = Vec::new();
    let run = json!({"command": "RunElements", "payload": {"batchExecution": {
        "batchName": "load", "user": "tester", "elementList": [{"elementType": "S", "elementId": 7000}]}}});
    'runs: while !shared.stop.load(Ordering::Relaxed) {
        let id = match call(shared, &client, &run) {
            Some((200, v)) => v["payload"]["batchInstanceId"].as_i64().expect("id"),
            Some((st, v)) => {
                shared.error(format!("run: {st} {v}"));
                continue;
            }
            None => break,
        };
        acknowledged.push(id);
        loop {
            let wait = json!({"command": "WaitBatchInstance", "payload": {"batchInstanceId": id, "timeoutSeconds": 60}});
            let Some((st, v)) = call(shared, &client, &wait) else {
                break 'runs;
            };
            match (st, v["payload"]["state"].as_str()) {
                (200, Some("finished")) => break,
                (200, Some("interrupted" | "failed")) => {
                    let restart = json!({"command": "RestartBatchInstance", "payload": {"batchInstanceId": id}});
                    match call(shared, &client, &restart) {
                        Some((200 | 409, _)) => {}
                        Some((st, v)) => shared.error(format!("restart {id}: {st} {v}")),
                        None => break 'runs,
                    }
                }
                (200, _) => {}
                _ => shared.error(format!("wait {id}: {st} {v}")),
            }
        }
    }
    acknowledged
}

#[test]
fn deploys_and_runs_through_kills_lose_nothing_and_stay_flat() {
    let w = Weft::start_with(&["--listen", "127.0.0.1:0"], ENV);
    let data = setup(&w);
    let shared = Shared {
        url: RwLock::new(w.url.clone()),
        stop: AtomicBool::new(false),
        errors: Mutex::new(Vec::new()),
        deployed: AtomicUsize::new(0),
    };
    let deadline = Instant::now() + Duration::from_secs(seconds());
    let mut server = Some(w);
    let mut kills = 0;
    let mut last_life = (0u64, 0usize, 0u64, 0usize);
    let (deployed, started) = std::thread::scope(|s| {
        let deployers: Vec<_> = (0..DEPLOYERS)
            .map(|c| {
                let shared = &shared;
                s.spawn(move || deployer(shared, c))
            })
            .collect();
        let runners: Vec<_> = (0..RUNNERS)
            .map(|_| {
                let shared = &shared;
                s.spawn(move || runner(shared))
            })
            .collect();
        // Kill after every KILL_EVERY acknowledged deploys; measure the live server after the
        // first hundred deploys of its life and at its end.
        let mut next_kill = KILL_EVERY;
        let mut warm: Option<(u64, usize)> = None;
        while Instant::now() < deadline {
            let done = shared.deployed.load(Ordering::Relaxed);
            let w = server.as_ref().expect("server");
            if warm.is_none() && done + KILL_EVERY >= next_kill + 100 {
                warm = Some(usage(w.child.id()));
            }
            // The last third of the time: no more kills, one long life to measure.
            let killing = deadline.saturating_duration_since(Instant::now())
                > Duration::from_secs(seconds() / 3);
            if killing && done >= next_kill {
                let home = server.take().expect("server").stop();
                kills += 1;
                let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], ENV);
                *shared
                    .url
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = w.url.clone();
                server = Some(w);
                next_kill = shared.deployed.load(Ordering::Relaxed) + KILL_EVERY;
                warm = None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let w = server.as_ref().expect("server");
        let (rss, fds) = usage(w.child.id());
        let (rss0, fds0) = warm.unwrap_or((rss, fds));
        last_life = (rss0, fds0, rss, fds);
        shared.stop.store(true, Ordering::Relaxed);
        let deployed: Vec<i64> = deployers
            .into_iter()
            .flat_map(|d| d.join().expect("deployer"))
            .collect();
        let started: Vec<i64> = runners
            .into_iter()
            .flat_map(|r| r.join().expect("runner"))
            .collect();
        (deployed, started)
    });
    let w = server.expect("server");
    let errors = shared
        .errors
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    eprintln!(
        "load: {} s, {kills} kills, {} deploys and {} runs acknowledged, {} errors; last server: rss {} -> {} kB, descriptors {} -> {}",
        seconds(),
        deployed.len(),
        started.len(),
        errors.len(),
        last_life.0,
        last_life.2,
        last_life.1,
        last_life.3
    );
    assert!(
        errors.is_empty(),
        "requests failed: {:?}",
        &errors[..errors.len().min(5)]
    );
    assert!(kills >= 1, "the server was never killed: too few deploys");
    assert!(!started.is_empty(), "no run was started");
    // Every acknowledged deploy is there.
    let missing = w.missing_sheets(&deployed);
    assert!(missing.is_empty(), "acknowledged deploys lost: {missing:?}");
    // Every acknowledged run finished and did its work once. (The last run of each runner
    // may have been cut off by the end of the test: it is finished or still running, never
    // repeated.)
    let data = rusqlite::Connection::open(&data).expect("data");
    let mut per_run: HashMap<i64, i64> = HashMap::new();
    let mut st = data
        .prepare("SELECT instance, COUNT(*) FROM runs GROUP BY instance")
        .expect("runs");
    for row in st
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
        .expect("query")
    {
        let (instance, n) = row.expect("row");
        per_run.insert(instance, n);
    }
    let twice: Vec<_> = per_run.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "runs that did their work twice: {twice:?}"
    );
    let mut unfinished = 0;
    for id in &started {
        if w.instance_state(*id) == "finished" {
            assert_eq!(per_run.get(id), Some(&1), "instance {id} finished once");
        } else {
            unfinished += 1;
        }
    }
    assert!(
        unfinished <= RUNNERS,
        "{unfinished} acknowledged runs never finished"
    );
    // Flat: the last server's memory and descriptors did not grow with the requests.
    let (rss0, fds0, rss, fds) = last_life;
    assert!(
        rss <= rss0 * 2 + 32 * 1024,
        "memory grew from {rss0} kB to {rss} kB"
    );
    assert!(fds <= fds0 + 32, "descriptors grew from {fds0} to {fds}");
}
