//! Mixed load on the real server (`cargo bench -p weft_tests --bench mixed_load`; build the
//! release binary and plugins first: `cargo build --release --workspace`): 8 clients deploy
//! sheets while 4 clients start a batch run and wait for it, for `MIXED_SECONDS` (default
//! 20) seconds. Prints the deploy and RunElements response times (p50, p99, max), the
//! errors, and checks that nothing acknowledged was lost: every deployed sheet is in the
//! repository and every started run finished. Goal (issue 10): deploy p99 <= 50 ms and
//! RunElements p99 <= 50 ms under this mix.

use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use weft_tests::server::{Weft, deploy_body, post, sheet};

const DEPLOYERS: usize = 8;
const RUNNERS: usize = 4;
/// Actions of the run sheet, chained.
const ACTIONS: usize = 4;

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[(((sorted.len() - 1) as f64) * p).round() as usize].as_secs_f64() * 1e3
}

fn report(what: &str, mut lat: Vec<Duration>) {
    lat.sort_unstable();
    println!(
        "mixed load: {what}: {} requests, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms   (goal p99 <= 50 ms)",
        lat.len(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        lat.last().map_or(0.0, |d| d.as_secs_f64() * 1e3)
    );
}

/// Folder 10 `/sales`, connection 1 (the SQLite file `data.db`, tables t0..t4) and sheet
/// 9000 with `ACTIONS` chained Sql actions.
fn setup(w: &Weft) {
    let data = w.home.path().join("data.db");
    let c = rusqlite::Connection::open(&data).expect("data");
    for t in 0..=ACTIONS {
        c.execute_batch(&format!(
            "CREATE TABLE t{t} (x INTEGER); INSERT INTO t{t} VALUES (1);"
        ))
        .expect("table");
    }
    w.add_keys(&format!("1|sqlite|{}|||\n", data.display()));
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    for t in 0..=ACTIONS {
        nodes.push(json!({"id": 95_000 + t, "type": 1, "attributes": {"field1": format!("t{t}"), "objectTypeId": 1, "connectionId": 1}}));
    }
    for i in 0..ACTIONS {
        let a = 90_001 + i;
        nodes.push(
            json!({"id": a, "type": 0, "attributes": {"module": "Sql", "name": format!("a{i}"),
            "action": format!("INSERT INTO t{} SELECT x FROM t{i} WHERE x < 0", i + 1)}}),
        );
        edges.push(json!({"id": 96_000 + 2 * i, "from": 95_000 + i, "to": a}));
        edges.push(json!({"id": 96_001 + 2 * i, "from": a, "to": 95_001 + i}));
    }
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/sales"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [{"id": 9000, "attributes": {"name": "run me", "folder_id": 10, "folder": "/sales"}, "nodes": nodes, "edges": edges}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
}

fn call(client: &reqwest::blocking::Client, url: &str, body: &Value) -> (u16, Value) {
    match client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
    {
        Ok(r) => {
            let st = r.status().as_u16();
            (st, r.json().unwrap_or(Value::Null))
        }
        Err(e) => (0, json!({"transport": e.to_string()})),
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("mixed load: run with `cargo bench -p weft_tests --bench mixed_load` for numbers");
        return;
    }
    weft::init_tls();
    let seconds: u64 = std::env::var("MIXED_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let w = Weft::start();
    setup(&w);
    let stop = AtomicBool::new(false);
    let errors = AtomicUsize::new(0);
    let url = w.url.as_str();
    let (deploys, runs, deployed, started) = std::thread::scope(|s| {
        let deployers: Vec<_> = (0..DEPLOYERS)
            .map(|c| {
                let (stop, errors) = (&stop, &errors);
                s.spawn(move || {
                    let client = reqwest::blocking::Client::new();
                    let mut lat = Vec::new();
                    let mut ids = Vec::new();
                    let mut n = 0i64;
                    while !stop.load(Ordering::Relaxed) {
                        let id = 100_000 + c as i64 * 100_000 + n;
                        n += 1;
                        let body: Value =
                            serde_json::from_slice(&deploy_body(&sheet(id))).expect("body");
                        let t = Instant::now();
                        let (st, v) = call(&client, url, &body);
                        lat.push(t.elapsed());
                        if st == 200 {
                            ids.push(id);
                        } else {
                            errors.fetch_add(1, Ordering::Relaxed);
                            eprintln!("deploy {id}: {st} {v}");
                        }
                    }
                    (lat, ids)
                })
            })
            .collect();
        let runners: Vec<_> = (0..RUNNERS)
            .map(|_| {
                let (stop, errors) = (&stop, &errors);
                s.spawn(move || {
                    let client = reqwest::blocking::Client::new();
                    let mut lat = Vec::new();
                    let mut ids = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        let t = Instant::now();
                        let (st, v) = call(&client, url, &json!({"command": "RunElements", "payload": {"batchExecution": {
                            "batchName": "mixed", "user": "bench", "elementList": [{"elementType": "S", "elementId": 9000}]}}}));
                        lat.push(t.elapsed());
                        let Some(id) = v["payload"]["batchInstanceId"].as_i64().filter(|_| st == 200) else {
                            errors.fetch_add(1, Ordering::Relaxed);
                            eprintln!("run: {st} {v}");
                            continue;
                        };
                        ids.push(id);
                        let (st, v) = call(&client, url, &json!({"command": "WaitBatchInstance",
                            "payload": {"batchInstanceId": id, "timeoutSeconds": 120}}));
                        if st != 200 || v["payload"]["state"] != "finished" {
                            errors.fetch_add(1, Ordering::Relaxed);
                            eprintln!("wait {id}: {st} {v}");
                        }
                    }
                    (lat, ids)
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs(seconds));
        stop.store(true, Ordering::Relaxed);
        let mut deploys = Vec::new();
        let mut deployed = Vec::new();
        for d in deployers {
            let (lat, ids) = d.join().expect("deployer");
            deploys.extend(lat);
            deployed.extend(ids);
        }
        let mut runs = Vec::new();
        let mut started = Vec::new();
        for r in runners {
            let (lat, ids) = r.join().expect("runner");
            runs.extend(lat);
            started.extend(ids);
        }
        (deploys, runs, deployed, started)
    });
    println!(
        "mixed load: {DEPLOYERS} clients deploying, {RUNNERS} running a {ACTIONS}-action sheet and waiting, {seconds} s"
    );
    report("DeployRepository", deploys);
    report("RunElements", runs);
    // Nothing acknowledged is lost.
    let lost = w.missing_sheets(&deployed).len();
    let unfinished = started
        .iter()
        .filter(|id| w.instance_state(**id) != "finished")
        .count();
    println!(
        "mixed load: {} sheets deployed, {lost} lost; {} runs, {unfinished} not finished; {} errors",
        deployed.len(),
        started.len(),
        errors.load(Ordering::Relaxed)
    );
    // A benchmark of a server that loses work measures nothing worth keeping.
    assert_eq!(lost, 0, "acknowledged deploys were lost");
    assert_eq!(unfinished, 0, "acknowledged runs did not finish");
    assert_eq!(errors.load(Ordering::Relaxed), 0, "requests failed");
}
