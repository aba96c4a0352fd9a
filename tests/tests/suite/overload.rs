//! End to end: more work than the server takes at once, and a repository whose disk is full.
//! A flood of `RunElements` waits in a bounded queue (threads stay flat, one more gets 429
//! and creates nothing); a full disk answers 507 and changes nothing, and an instance whose
//! states could not be recorded is settled by halt or restart once space is back, without a
//! server restart, its action counted once by its commit marker.

use crate::common;

use common::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Folder 10, connection 1 (the SQLite file `data`, holding table `t`) and sheet 70 whose
/// one action (700) runs `sql`, which inserts a row into `t`.
fn deploy_insert(w: &Weft, data: &std::path::Path, sql: &str) {
    rusqlite::Connection::open(data)
        .expect("data")
        .execute_batch("CREATE TABLE IF NOT EXISTS t (n INTEGER);")
        .expect("table");
    w.add_keys(&format!("1|sqlite|{}|||\n", data.display()));
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/etl"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [{"id": 70, "attributes": {"name": "insert", "folder_id": 10, "folder": "/etl"},
            "nodes": [
                {"id": 700, "type": 0, "attributes": {"module": "Sql", "name": "insert", "action": sql}},
                {"id": 709, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 1}}],
            "edges": [{"id": 709, "from": 700, "to": 709}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
}

/// `RunElements` of sheet 70 with the variable `big`.
fn run_body(big: &str) -> Vec<u8> {
    json!({"command": "RunElements", "payload": {"batchExecution": {"batchName": "flood", "user": "tester",
        "elementList": [{"elementType": "S", "elementId": 70}]}},
        "variableList": [{"variableName": "big", "variableType": "String", "variableValue": big}]})
    .to_string()
    .into_bytes()
}

/// Threads of the server process.
fn threads(w: &Weft) -> u64 {
    proc_status(w.child.id(), "Threads")
}

/// Resident memory of the server process, in kB.
fn rss_kb(w: &Weft) -> u64 {
    proc_status(w.child.id(), "VmRSS")
}

fn count(data: &std::path::Path) -> i64 {
    rusqlite::Connection::open(data)
        .expect("data")
        .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
        .expect("count")
}

#[test]
fn a_flood_of_runs_waits_in_a_bounded_queue_with_flat_threads() {
    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0"],
        &[
            ("WEFT_MAX_PARALLEL_ACTIONS", "2"),
            ("WEFT_MAX_WAITING_INSTANCES", "20"),
        ],
    );
    let data = w.home.path().join("data.db");
    deploy_insert(&w, &data, "INSERT INTO t VALUES (1)");
    let before = threads(&w);
    let rss_before = rss_kb(&w);
    // The test holds the data file's write lock: every action blocks on it.
    let mut lock = rusqlite::Connection::open(&data).expect("lock connection");
    let tx = lock
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .expect("write lock");
    let url = w.url.clone();
    let answers: Vec<(u16, Option<String>, Value)> = std::thread::scope(|s| {
        let clients: Vec<_> = (0..16)
            .map(|_| {
                let url = url.clone();
                s.spawn(move || {
                    weft::init_tls();
                    let client = reqwest::blocking::Client::new();
                    (0..125)
                        .map(|_| {
                            let r = client
                                .post(&url)
                                .header("content-type", "application/json")
                                .body(run_body("x"))
                                .send()
                                .expect("request");
                            let st = r.status().as_u16();
                            let retry = r
                                .headers()
                                .get("retry-after")
                                .and_then(|v| v.to_str().ok())
                                .map(str::to_owned);
                            (st, retry, r.json::<Value>().expect("JSON"))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        clients
            .into_iter()
            .flat_map(|c| c.join().expect("client"))
            .collect()
    });
    let during = threads(&w);
    let rss_during = rss_kb(&w);
    let started: Vec<i64> = answers
        .iter()
        .filter(|(st, _, _)| *st == 200)
        .filter_map(|(_, _, v)| v["payload"]["batchInstanceId"].as_i64())
        .collect();
    let refused: Vec<&(u16, Option<String>, Value)> =
        answers.iter().filter(|(st, _, _)| *st == 429).collect();
    assert_eq!(started.len() + refused.len(), 2_000, "only 200 or 429");
    // One running (every run writes `t`, and two runs never write one table at once: the
    // second slot stays free), twenty waiting; the twenty-second and later are refused.
    assert_eq!(started.len(), 21, "{:?}", &answers[..3]);
    for (_, retry, v) in &refused {
        assert_eq!(retry.as_deref(), Some("5"));
        assert_eq!(v["error"]["code"], "run.queue_full", "{v}");
    }
    let (_, list) = command(&w, "ListBatchInstances", json!({"limit": 100}));
    let listed = list["payload"]["instances"].as_array().expect("instances");
    assert_eq!(listed.len(), 21, "a refused run created nothing");
    let waiting = listed.iter().filter(|i| i["state"] == "waiting").count();
    assert_eq!(waiting, 20, "{list}");
    // 2,000 runs, 21 stored: two coordinators, at most two action threads, the idle-pool
    // sweeper, and tokio's blocking threads (at most 64): bounded whatever the flood, never a
    // thread per instance (which made 2,000 here).
    assert!(
        during <= before + 2 + 2 + 1 + 64,
        "threads grew from {before} to {during} under the flood"
    );
    // Memory likewise: what a refused request cost is freed (a thread per instance held a
    // stack and a coordinator each, 0.7 MB a run in the measurement).
    assert!(
        rss_during <= rss_before + 64 * 1024,
        "resident memory grew from {rss_before} kB to {rss_during} kB under the flood"
    );
    drop(tx);
    drop(lock);
    for id in &started {
        let (st, v) = command(
            &w,
            "WaitBatchInstance",
            json!({"batchInstanceId": id, "timeoutSeconds": 120}),
        );
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["payload"]["state"], "finished", "{v}");
    }
    assert_eq!(count(&data), 21, "every accepted run once");
}

/// A tmpfs of `size` at `dir` (root only); `None` where mounting is not allowed.
fn tmpfs(dir: &std::path::Path, size: &str) -> Option<Mount> {
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success());
    ok.then(|| Mount(dir.to_owned()))
}

struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// Fills the file system of `dir` with `dir/filler` until it is full.
fn fill(dir: &std::path::Path) -> std::path::PathBuf {
    use std::io::Write as _;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).expect("filler");
    let block = vec![0u8; 64 * 1024];
    while f.write_all(&block).is_ok() {}
    let small = [0u8; 512];
    while f.write_all(&small).is_ok() {}
    let _ = f.sync_all();
    path
}

#[test]
fn a_full_disk_answers_507_changes_nothing_and_a_run_caught_in_it_ends_once() {
    // The disk that fills is the one of HOME's SQLite repository.
    if weft_tests::server::skipped_on_postgres("fills the SQLite repository's disk") {
        return;
    }
    let mnt = tempfile::tempdir().expect("mount point");
    let Some(_mount) = tmpfs(mnt.path(), "16m") else {
        eprintln!("skipped: mounting a tmpfs needs root (CI runs as root)");
        return;
    };
    let home = tempfile::Builder::new()
        .tempdir_in(mnt.path())
        .expect("home on the tmpfs");
    // Only the repository's disk is small: the plugins' private copies (tens of MB in a
    // debug build) are kept on the big one, so that what fills the tmpfs is this test's.
    let copies = tempfile::tempdir().expect("a folder for the plugin copies");
    std::fs::create_dir_all(home.path().join("plugins")).expect("plugins folder");
    std::os::unix::fs::symlink(copies.path(), home.path().join("plugins/.loaded"))
        .expect("link the copies folder");
    let w = Weft::start_in(
        home,
        &["--listen", "127.0.0.1:0"],
        &[
            ("WEFT_MAX_PARALLEL_ACTIONS", "1"),
            ("WEFT_REPOSITORY_RETRY_SECONDS", "1"),
        ],
    );
    // The data file is elsewhere: only the repository's disk fills. The action's statement
    // (logged when it ends) is twice the size of its variable, so recording its end needs
    // more of the log than the start did: SQLite reuses its write-ahead log, and only a
    // write that must grow it meets the full disk.
    let elsewhere = tempfile::tempdir().expect("data dir");
    let data = elsewhere.path().join("data.db");
    deploy_insert(
        &w,
        &data,
        "INSERT INTO t SELECT length('${big}') + length('${big}')",
    );
    let mut lock = rusqlite::Connection::open(&data).expect("lock connection");
    let tx = lock
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .expect("write lock");
    let (st, v) = post(&w.url, run_body(&"x".repeat(1_500_000)));
    assert_eq!(st, 200, "{v}");
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, v) = command(&w, "GetBatchInstance", json!({"batchInstanceId": id}));
        if v["payload"]["actions"][0]["state"] == "R" {
            break;
        }
        assert!(Instant::now() < deadline, "the action never started: {v}");
        std::thread::sleep(Duration::from_millis(10));
    }
    let filler = fill(mnt.path());
    let before = w.dump();
    // New work that needs room is refused with its own code, and changes nothing.
    let (st, v) = post(&w.url, run_body(&"y".repeat(6_000_000)));
    assert_eq!(st, 507, "{v}");
    assert_eq!(v["error"]["code"], "repository.full", "{v}");
    let big_folder = format!(
        "{{ version: 1, transformationData: {{ folders: [ {{ id: 11, path: \"/more\", documentation: \"{}\" }} ] }} }}",
        "z".repeat(6_000_000)
    );
    let (st, v) = post(&w.url, deploy_body(&big_folder));
    assert_eq!(st, 507, "{v}");
    assert_eq!(v["error"]["code"], "repository.full", "{v}");
    assert_eq!(before, w.dump(), "a refusal changed the repository");
    // The action commits its row; its end cannot be recorded.
    drop(tx);
    drop(lock);
    let deadline = Instant::now() + Duration::from_secs(30);
    while count(&data) == 0 {
        assert!(Instant::now() < deadline, "the action did not commit");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Space is back. The coordinator either settled the action by its commit marker when it
    // gave up, or, if even that could not be written, left it to RestartBatchInstance:
    // without a server restart, the action ends finished, its row written once.
    std::fs::remove_file(&filler).expect("free the disk");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, v) = command(&w, "GetBatchInstance", json!({"batchInstanceId": id}));
        if v["payload"]["state"] == "finished" {
            break;
        }
        let (st, r) = command(&w, "RestartBatchInstance", json!({"batchInstanceId": id}));
        if st == 200 {
            assert_eq!(r["payload"]["actionsToRun"], 0, "the action committed: {r}");
        }
        assert!(Instant::now() < deadline, "the instance never ended: {v}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, v) = command(&w, "GetBatchInstance", json!({"batchInstanceId": id}));
    assert_eq!(v["payload"]["actions"][0]["state"], "F", "{v}");
    assert_eq!(count(&data), 1, "the row once");
}

/// Descriptors the server process holds.
fn descriptors(w: &Weft) -> usize {
    std::fs::read_dir(format!("/proc/{}/fd", w.child.id()))
        .expect("proc fd")
        .count()
}

#[test]
fn a_run_over_many_files_keeps_few_descriptors_and_running_out_of_them_is_survived() {
    const FILES: i64 = 150;
    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0"],
        &[("WEFT_MAX_PARALLEL_ACTIONS", "2")],
    );
    let keyfile = w.home.path().join("keyfile");
    let mut keys = std::fs::read_to_string(&keyfile).expect("keyfile");
    let mut connections = Vec::new();
    let mut sheets = Vec::new();
    for i in 1..=FILES {
        let data = w.home.path().join(format!("data_{i}.db"));
        rusqlite::Connection::open(&data)
            .expect("data")
            .execute_batch("CREATE TABLE t (n INTEGER);")
            .expect("table");
        keys.push_str(&format!("{i}|sqlite|{}|||\n", data.display()));
        connections.push(json!({"id": i, "name": format!("data {i}"), "type": "sqlite"}));
        let a = 10_000 + i * 10;
        sheets.push(json!({"id": 1000 + i, "attributes": {"name": format!("s{i}"), "folder_id": 10, "folder": "/many"},
            "nodes": [
                {"id": a, "type": 0, "attributes": {"module": "Sql", "name": "insert", "action": "INSERT INTO t VALUES (1)"}},
                {"id": a + 1, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": i}}],
            "edges": [{"id": a + 1, "from": a, "to": a + 1}]}));
    }
    std::fs::write(&keyfile, keys).expect("write keyfile");
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/many"}], "connections": connections, "sheets": sheets}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    // Fewer descriptors than files.
    let limit = 120;
    let lowered = std::process::Command::new("prlimit")
        .arg(format!("--pid={}", w.child.id()))
        .arg(format!("--nofile={limit}:{limit}"))
        .status()
        .expect("prlimit (util-linux)");
    assert!(lowered.success());
    let (st, v) = command(
        &w,
        "RunElements",
        json!({"batchExecution": {"batchName": "many", "user": "tester",
            "elementList": [{"elementType": "F", "elementId": 10}]}}),
    );
    assert_eq!(st, 200, "{v}");
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    let (st, v) = command(
        &w,
        "WaitBatchInstance",
        json!({"batchInstanceId": id, "timeoutSeconds": 120}),
    );
    assert_eq!(st, 200, "{v}");
    let failed: Vec<&Value> = v["payload"]["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter(|a| a["state"] != "F")
        .collect();
    assert!(failed.is_empty(), "every action ran: {failed:?}");
    assert_eq!(v["payload"]["state"], "finished");
    let held = descriptors(&w);
    assert!(held < limit - 20, "{held} descriptors held after the run");
    // Out of descriptors: clients hold every one the server may open.
    let authority = w
        .url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("authority")
        .to_owned();
    let clients: Vec<std::net::TcpStream> = (0..limit)
        .filter_map(|_| std::net::TcpStream::connect(&authority).ok())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    while descriptors(&w) < limit - 1 {
        assert!(
            Instant::now() < deadline,
            "the server never ran out: {}",
            descriptors(&w)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(clients);
    // Once they are gone the server answers again, and it said what happened.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answered = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .expect("client")
            .post(&w.url)
            .header("content-type", "application/json")
            .body(json!({"command": "ListBatchInstances", "payload": {}}).to_string())
            .send()
            .is_ok_and(|r| r.status().as_u16() == 200);
        if answered {
            break;
        }
        assert!(Instant::now() < deadline, "the server did not recover");
        std::thread::sleep(Duration::from_millis(50));
    }
    let logs: String = std::fs::read_dir(w.home.path().join("logs"))
        .expect("logs")
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .collect();
    assert!(
        logs.contains("Accepting a connection failed"),
        "the log says why no connection was accepted"
    );
}

/// A dry-run deploy of one Sql action whose text is `SELECT n FROM t WHERE n IN (...)` with
/// numbers up to about `bytes` long.
fn big_in_list(bytes: usize) -> Vec<u8> {
    let mut sql = String::with_capacity(bytes + 64);
    sql.push_str("INSERT INTO t SELECT n FROM t WHERE n IN (");
    let mut i = 0u64;
    while sql.len() < bytes {
        if i > 0 {
            sql.push(',');
        }
        sql.push_str(&i.to_string());
        i += 1;
    }
    sql.push(')');
    let doc = json!({"version": 1, "transformationData": {
        "sheets": [{"id": 71, "attributes": {"name": "big", "folder_id": 10, "folder": "/etl"},
            "nodes": [
                {"id": 710, "type": 0, "attributes": {"module": "Sql", "name": "big", "action": sql}},
                {"id": 719, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 1}}],
            "edges": [{"id": 719, "from": 710, "to": 719}]}]}});
    json!({"command": "DeployRepository", "payload": {"content": doc.to_string(),
        "deployOptions": {"dryRun": "true"}}})
    .to_string()
    .into_bytes()
}

#[test]
fn large_action_texts_are_checked_within_a_memory_budget_and_the_largest_refused() {
    let w = Weft::start();
    let data = w.home.path().join("data.db");
    deploy_insert(&w, &data, "INSERT INTO t VALUES (1)");
    let base = rss_kb(&w);
    // Eight dry runs at once, each of an action text just under the most that is checked:
    // they take turns, so the server holds one parse (or two) at a time, not eight.
    let body = big_in_list(2 * 1024 * 1024 - 1024);
    let url = w.url.as_str();
    std::thread::scope(|s| {
        let asks: Vec<_> = (0..8)
            .map(|_| {
                let body = body.clone();
                s.spawn(move || post(url, body))
            })
            .collect();
        for a in asks {
            let (st, v) = a.join().expect("deploy");
            assert_eq!(
                st,
                200,
                "{}",
                v.to_string().chars().take(500).collect::<String>()
            );
        }
    });
    let peak = proc_status(w.child.id(), "VmHWM");
    // One parse of a 2 MiB IN list costs about 180 MB (sqlparser's tree); eight at once
    // took well over 1 GB.
    assert!(
        peak < base + 700 * 1024,
        "peak {peak} kB over a start of {base} kB"
    );
    // Four times that (a 7.9 MiB text within the 8 MiB body) is refused, not parsed.
    let (st, v) = post(&w.url, big_in_list(8 * 1024 * 1024 - 64 * 1024));
    assert_eq!(
        st,
        422,
        "{}",
        v.to_string().chars().take(500).collect::<String>()
    );
    let d = &v["error"]["details"][0];
    assert_eq!(d["code"], "module.text_too_long", "{d}");
    assert_eq!(
        d["path"], "transformationData.sheets[0].nodes[0].attributes.action",
        "{d}"
    );
    assert!(proc_status(w.child.id(), "VmHWM") < base + 700 * 1024);
}
