//! Run benchmark (`cargo bench -p weft --bench runs`): prints numbers, asserts nothing but
//! that the runs finished.
//!
//! 1. `RunElements` response time (p50, p99) over HTTP: the request returns when the instance
//!    is stored and started, not when it ends.
//! 2. The host's overhead per action for 1,000 trivial `Sql` actions on a real SQLite file,
//!    chained (each reads the table the previous one writes) and fanned out (all read one
//!    table): wall time per action minus the time the same 1,000 statements take when run
//!    directly with rusqlite. Goals (issue 4): response p50 <= 5 ms; overhead <= 1 ms per
//!    action. Build the plugins first: `cargo build --release --workspace`.

use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const N: usize = 1000;

fn statement(i: usize, chained: bool) -> String {
    let src = if chained { i } else { 0 };
    format!("INSERT INTO t{} SELECT x FROM t{src} WHERE x < 0", i + 1)
}

/// One sheet of `N` Sql actions: action i reads t(i) (chained) or t0 (fanned out), writes t(i+1).
fn sheet(id: i64, chained: bool) -> String {
    let base = id * 10_000;
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    for t in 0..=N {
        nodes.push(json!({"id": base + 5000 + t as i64, "type": 1, "attributes": {"field1": format!("t{t}"), "objectTypeId": 1, "connectionId": 1}}));
    }
    for i in 0..N {
        let a = base + i as i64 + 1;
        nodes.push(json!({"id": a, "type": 0, "attributes": {"module": "Sql", "name": format!("a{i}"), "action": statement(i, chained)}}));
        let src = if chained { i } else { 0 };
        edges.push(
            json!({"id": base + 2 * i as i64 + 1, "from": base + 5000 + src as i64, "to": a}),
        );
        edges.push(
            json!({"id": base + 2 * i as i64 + 2, "from": a, "to": base + 5000 + i as i64 + 1}),
        );
    }
    json!({"version": 1, "transformationData": {"sheets": [{"id": id, "attributes": {"name": format!("bench {id}"), "folder_id": 1, "folder": "/bench"}, "nodes": nodes, "edges": edges}]}}).to_string()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[(((sorted.len() - 1) as f64) * p).round() as usize]
}

async fn call(client: &reqwest::Client, url: &str, body: serde_json::Value) -> serde_json::Value {
    let r = client.post(url).json(&body).send().await.expect("request");
    let status = r.status();
    let v: serde_json::Value = r.json().await.expect("json");
    assert!(status.is_success(), "{status}: {v}");
    v
}

async fn run_and_wait(client: &reqwest::Client, url: &str, sheet: i64) -> Duration {
    let t = Instant::now();
    let v = call(client, url, json!({"command": "RunElements", "payload": {"batchExecution": {"batchName": "bench", "user": "bench", "elementList": [{"elementType": "S", "elementId": sheet}]}}})).await;
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    let done = call(client, url, json!({"command": "WaitBatchInstance", "payload": {"batchInstanceId": id, "timeoutSeconds": 600}})).await;
    assert_eq!(done["payload"]["state"], "finished", "{done}");
    t.elapsed()
}

fn baseline(data: &Path, chained: bool) -> Duration {
    let c = rusqlite::Connection::open(data).expect("data");
    let t = Instant::now();
    for i in 0..N {
        // As the runner does: one transaction per action.
        c.execute_batch(&format!(
            "BEGIN IMMEDIATE; {}; COMMIT",
            statement(i, chained)
        ))
        .expect("statement");
    }
    t.elapsed()
}

fn main() {
    weft::init_tls();
    if !std::env::args().any(|a| a == "--bench") {
        println!("runs bench: run with `cargo bench -p weft --bench runs` for numbers");
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let data = dir.path().join("data.db");
    {
        let c = rusqlite::Connection::open(&data).expect("data");
        for t in 0..=N {
            c.execute_batch(&format!(
                "CREATE TABLE t{t} (x INTEGER); INSERT INTO t{t} VALUES (1);"
            ))
            .expect("table");
        }
    }
    let keyfile = dir.path().join("keyfile");
    std::fs::write(&keyfile, format!("1|sqlite|{}|||\n", data.display())).expect("keyfile");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&keyfile, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let keys = Arc::new(weft::keys::KeyStore::new(
        keyfile.clone(),
        weft::keys::KeyFile::load(&keyfile).expect("keys"),
    ));
    let repo = Arc::new(
        weft::repo::Repository::open(&dir.path().join("repository.db")).expect("repository"),
    );
    let target_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().and_then(|p| p.parent()).map(Path::to_path_buf))
        .unwrap_or_default();
    let registry = Arc::new(weft::plugins::Registry::load(&[(
        target_dir.clone(),
        false,
    )]));
    assert!(
        registry.module("Sql").is_some(),
        "no plugins in {}: run `cargo build --release --workspace` first",
        target_dir.display()
    );
    let limit = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    let executor = weft::exec::batch::Executor::new(
        Arc::clone(&repo),
        Arc::clone(&registry),
        Some(Arc::clone(&keys)),
        limit,
    );
    let state = Arc::new(weft::api::AppState::new(
        repo,
        weft::settings::Settings::default(),
        Some(keys),
        false,
        registry,
        executor,
    ));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move { axum::serve(listener, weft::api::app(state)).await });
        let url = format!("http://{addr}/weft/service");
        weft::init_tls();
        let client = reqwest::Client::new();
        let base = json!({"version": 1, "transformationData": {"folders": [{"id": 1, "path": "/bench"}], "connections": [{"id": 1, "name": "data", "type": "sqlite"}]}});
        call(&client, &url, json!({"command": "DeployRepository", "payload": {"content": base.to_string()}})).await;
        for (id, chained) in [(1, true), (2, false)] {
            call(&client, &url, json!({"command": "DeployRepository", "payload": {"content": sheet(id, chained)}})).await;
        }
        // A one-action sheet for response times.
        let one = json!({"version": 1, "transformationData": {"sheets": [{"id": 3, "attributes": {"name": "one", "folder_id": 1, "folder": "/bench"},
            "nodes": [{"id": 90001, "type": 0, "attributes": {"module": "Sql", "name": "one", "action": "INSERT INTO t1 SELECT x FROM t0 WHERE x < 0"}},
                      {"id": 90002, "type": 1, "attributes": {"field1": "t0", "objectTypeId": 1, "connectionId": 1}},
                      {"id": 90003, "type": 1, "attributes": {"field1": "t1", "objectTypeId": 1, "connectionId": 1}}],
            "edges": [{"id": 90001, "from": 90002, "to": 90001}, {"id": 90002, "from": 90001, "to": 90003}]}]}});
        call(&client, &url, json!({"command": "DeployRepository", "payload": {"content": one.to_string()}})).await;
        let mut lat = Vec::new();
        let mut ids = Vec::new();
        for _ in 0..300 {
            let t = Instant::now();
            let v = call(&client, &url, json!({"command": "RunElements", "payload": {"batchExecution": {"batchName": "one", "user": "bench", "elementList": [{"elementType": "S", "elementId": 3}]}}})).await;
            lat.push(t.elapsed());
            ids.push(v["payload"]["batchInstanceId"].as_i64().expect("id"));
            // Let the run end, so that each request meets an idle server.
            call(&client, &url, json!({"command": "WaitBatchInstance", "payload": {"batchInstanceId": ids[ids.len() - 1], "timeoutSeconds": 60}})).await;
        }
        lat.sort_unstable();
        println!(
            "runs: RunElements response (1-action sheet, 300 requests): p50 {:.2} ms, p99 {:.2} ms   (goal p50 <= 5 ms)",
            percentile(&lat, 0.5).as_secs_f64() * 1e3,
            percentile(&lat, 0.99).as_secs_f64() * 1e3
        );
        for (id, chained, what) in [(1, true, "chained"), (2, false, "fanned out")] {
            // The response to starting 1,000 actions (expanded, ordered, stored).
            let t = Instant::now();
            let v = call(&client, &url, json!({"command": "RunElements", "payload": {"batchExecution": {"batchName": "bench", "user": "bench", "elementList": [{"elementType": "S", "elementId": id}]}}})).await;
            let response = t.elapsed();
            let instance = v["payload"]["batchInstanceId"].as_i64().expect("id");
            let done = call(&client, &url, json!({"command": "WaitBatchInstance", "payload": {"batchInstanceId": instance, "timeoutSeconds": 600}})).await;
            assert_eq!(done["payload"]["state"], "finished", "{done}");
            let wall = run_and_wait(&client, &url, id).await;
            let base = baseline(&data, chained);
            // Fanned out, `limit` actions run at once: the host's time per action is the
            // wall time times the parallelism.
            let parallel = if chained { 1.0 } else { limit as f64 };
            let per = wall.as_secs_f64() * 1e3 / N as f64;
            let direct = base.as_secs_f64() * 1e3 / N as f64;
            println!(
                "runs: {N} trivial Sql actions, {what}: RunElements answered in {:.1} ms; ran in {:.2} s, {per:.3} ms per action (x{parallel} parallel); the same statements directly {direct:.3} ms each; host overhead {:.3} ms per action   (goal <= 1 ms)",
                response.as_secs_f64() * 1e3,
                wall.as_secs_f64(),
                per * parallel - direct
            );
        }
    });
}
