//! Run benchmark (`cargo bench -p weft --bench runs`): prints numbers, asserts nothing but
//! that the runs finished.
//!
//! 1. `RunElements` response time (p50, p99) over HTTP: the request returns when the instance
//!    is stored and started, not when it ends.
//! 2. The host's overhead per action for batches of trivial `Sql` actions on a real SQLite
//!    file (1,000, 10,000 and 100,000 actions; `RUNS_SIZES=1000,10000` picks), chained (each
//!    reads the table the previous one writes) and fanned out (all read one table): the
//!    `RunElements` answer for the whole batch, and wall time per action minus the time the
//!    same statements take when run directly with rusqlite (and, beside them, through weft's
//!    own data-connection path alone, without the repository: `data_path`). Goals: response p50 <= 5 ms and
//!    overhead <= 1 ms per action (issue 4); per-action cost of a 10,000-chain within 1.2x
//!    of a 1,000-chain, `RunElements` linear in the actions, <= 400 ms for 10,000 (issue
//!    12). Build the plugins first: `cargo build --release --workspace`.
//!
//! A batch of more than 10,000 actions is several sheets of at most 10,000 in a folder of
//! their own, chained across the sheets, and runs as the folder (one sheet of 100,000 actions
//! passes the `.dsr` reader's limit of a million values). Its data file (100,001 tables) takes
//! minutes to make, as SQLite's cost per `CREATE TABLE` grows with the schema, so data files
//! are made once and kept in `target/bench-data/`.

use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The batch sizes measured unless `RUNS_SIZES` says otherwise.
const SIZES: &[usize] = &[1_000, 10_000, 100_000];

fn statement(i: usize, chained: bool) -> String {
    let src = if chained { i } else { 0 };
    format!("INSERT INTO t{} SELECT x FROM t{src} WHERE x < 0", i + 1)
}

/// Ids of sheet `id`'s nodes and edges: far enough apart for 100,000 actions.
const SPAN: i64 = 1_000_000;

/// The most actions one sheet of the bench holds.
const SHEET_ACTIONS: usize = 10_000;

/// One sheet of Sql actions `actions` on connection `conn` in folder `folder`: action i reads
/// t(i) (chained) or t0 (fanned out), writes t(i+1).
fn sheet(
    id: i64,
    folder: i64,
    actions: std::ops::Range<usize>,
    conn: i64,
    chained: bool,
) -> String {
    let base = id * 4 * SPAN;
    let n = actions.len();
    let mut nodes = Vec::with_capacity(2 * n + 2);
    let mut edges = Vec::with_capacity(2 * n);
    let tables = (actions.start..=actions.end).chain((!chained && actions.start > 0).then_some(0));
    for t in tables {
        nodes.push(json!({"id": base + SPAN + t as i64, "type": 1, "attributes": {"field1": format!("t{t}"), "objectTypeId": 1, "connectionId": conn}}));
    }
    for i in actions {
        let a = base + i as i64 + 1;
        nodes.push(json!({"id": a, "type": 0, "attributes": {"module": "Sql", "name": format!("a{i}"), "action": statement(i, chained)}}));
        let src = if chained { i } else { 0 };
        edges.push(
            json!({"id": base + 2 * i as i64 + 1, "from": base + SPAN + src as i64, "to": a}),
        );
        edges.push(
            json!({"id": base + 2 * i as i64 + 2, "from": a, "to": base + SPAN + i as i64 + 1}),
        );
    }
    json!({"version": 1, "transformationData": {"sheets": [{"id": id, "attributes": {"name": format!("bench {id}"), "folder_id": folder, "folder": format!("/bench/{folder}")}, "nodes": nodes, "edges": edges}]}}).to_string()
}

/// A data file at `path` with tables t0..=tn, one row each: a copy of the one kept in
/// `cache`, made there first when missing.
fn data_file(path: &Path, n: usize, cache: &Path) {
    let kept = cache.join(format!("tables-{n}.db"));
    if !kept.is_file() {
        std::fs::create_dir_all(cache).expect("bench data folder");
        println!(
            "runs: making the data file of {} tables once, kept as {}",
            n + 1,
            kept.display()
        );
        let making = kept.with_extension("making");
        let _ = std::fs::remove_file(&making);
        let c = rusqlite::Connection::open(&making).expect("data");
        c.execute_batch("BEGIN").expect("begin");
        for t in 0..=n {
            c.execute_batch(&format!(
                "CREATE TABLE t{t} (x INTEGER); INSERT INTO t{t} VALUES (1);"
            ))
            .expect("table");
        }
        c.execute_batch("COMMIT").expect("commit");
        drop(c);
        std::fs::rename(&making, &kept).expect("keep data file");
    }
    std::fs::copy(&kept, path).expect("copy data file");
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

async fn run_and_wait(
    client: &reqwest::Client,
    url: &str,
    element: &serde_json::Value,
) -> Duration {
    let t = Instant::now();
    let v = call(client, url, json!({"command": "RunElements", "payload": {"batchExecution": {"batchName": "bench", "user": "bench", "elementList": [element]}}})).await;
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    let done = call(client, url, json!({"command": "WaitBatchInstance", "payload": {"batchInstanceId": id, "timeoutSeconds": 3600}})).await;
    assert_eq!(done["payload"]["state"], "finished", "{done}");
    t.elapsed()
}

/// The same `n` statements run directly with rusqlite, one transaction each as the runner
/// does; with `marker`, each transaction also inserts one row into a table of the same
/// shape as weft's commit marker table, as weft does (which turns a statement that changes
/// nothing into a durable commit).
fn baseline(data: &Path, n: usize, chained: bool, marker: bool) -> Duration {
    let c = rusqlite::Connection::open(data).expect("data");
    c.execute_batch(
        "CREATE TABLE IF NOT EXISTS bench_marker (token VARCHAR(120) NOT NULL PRIMARY KEY, committed_at VARCHAR(20) NOT NULL)",
    )
    .expect("marker table");
    let t = Instant::now();
    for i in 0..n {
        let mark = if marker {
            format!(
                "INSERT INTO bench_marker VALUES ('bench:{chained}:{i}:{:?}', '2026-11-27 06:00:00');",
                Instant::now()
            )
        } else {
            String::new()
        };
        c.execute_batch(&format!(
            "BEGIN IMMEDIATE; {}; {mark} COMMIT",
            statement(i, chained)
        ))
        .expect("statement");
    }
    t.elapsed()
}

/// The same `n` statements through weft's own data-connection path, as an action's run takes
/// it, without the repository or the plugin call: a pooled connection, `BEGIN IMMEDIATE`,
/// the statement, the commit marker (weft's table), `COMMIT`, the connection back to the
/// pool. Beside [`baseline`] with a marker, it shows what weft's path adds to the
/// statements themselves.
fn data_path(data: &Path, n: usize, chained: bool) -> Duration {
    use weft_core::connect::{marker, sqlite};
    let path = data.to_string_lossy();
    let open = || sqlite::open("bench", &path).expect("data").boxed();
    marker::prepare(&mut open(), None).expect("marker table");
    let t = Instant::now();
    for i in 0..n {
        let mut conn = open();
        conn.begin().expect("begin");
        conn.execute_batch(&statement(i, chained))
            .expect("statement");
        let run = marker::Run {
            repository: "bench-data-path".to_owned(),
            instance: i64::from(chained),
            started: format!("{:?}", t),
            action: i as i64,
            attempt: 1,
        };
        marker::write(&mut conn, &run, None, false).expect("marker");
        conn.commit().expect("commit");
    }
    t.elapsed()
}

fn main() {
    // `RUST_LOG=info` shows the server's log (where a start spends its time, for one).
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    weft::init_tls();
    if !std::env::args().any(|a| a == "--bench") {
        println!("runs bench: run with `cargo bench -p weft --bench runs` for numbers");
        return;
    }
    let sizes: Vec<usize> = std::env::var("RUNS_SIZES")
        .ok()
        .map(|v| {
            v.split(',')
                .map(|n| {
                    n.trim()
                        .parse()
                        .expect("RUNS_SIZES: numbers, e.g. 1000,10000")
                })
                .collect()
        })
        .unwrap_or_else(|| SIZES.to_vec());
    let dir = tempfile::tempdir().expect("dir");
    // Connection 1 holds t0 and t1 for the one-action sheet; connection k + 2 the tables of
    // the k-th size.
    let data = |k: usize| dir.path().join(format!("data{k}.db"));
    let target_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().and_then(|p| p.parent()).map(Path::to_path_buf))
        .unwrap_or_default();
    let cache = target_dir
        .parent()
        .map_or_else(|| target_dir.join("bench-data"), |t| t.join("bench-data"));
    data_file(&data(0), 1, &cache);
    for (k, &n) in sizes.iter().enumerate() {
        data_file(&data(k + 1), n, &cache);
    }
    let keyfile = dir.path().join("keyfile");
    let entries: String = (0..=sizes.len())
        .map(|k| format!("{}|sqlite|{}|||\n", k + 1, data(k).display()))
        .collect();
    std::fs::write(&keyfile, entries).expect("keyfile");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&keyfile, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let keys = Arc::new(weft_core::keys::KeyStore::new(
        keyfile.clone(),
        weft_core::keys::KeyFile::load(&keyfile).expect("keys"),
    ));
    let repo = Arc::new(
        weft_repo::Repository::open(&dir.path().join("repository.db")).expect("repository"),
    );
    let registry = Arc::new(weft_core::plugins::Registry::load(&[(
        target_dir.clone(),
        false,
    )]));
    assert!(
        registry.module("Sql").is_some(),
        "no plugins in {}: run `cargo build --release --workspace` first",
        target_dir.display()
    );
    let limit = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    let executor = weft_engine::exec::batch::Executor::new(
        Arc::clone(&repo),
        Arc::clone(&registry),
        Some(Arc::clone(&keys)),
        limit,
    );
    let state = Arc::new(weft::api::AppState::new(
        repo,
        weft_core::settings::Settings::default(),
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
        let connections: Vec<serde_json::Value> = (0..=sizes.len())
            .map(|k| json!({"id": k + 1, "name": format!("data{k}"), "type": "sqlite"}))
            .collect();
        // Folder 1 holds the one-action sheet; folder 10 * conn + 1 (chained) and
        // 10 * conn + 2 (fanned out) the sheets of one size.
        let mut folders = vec![json!({"id": 1, "path": "/bench"})];
        for k in 0..sizes.len() as i64 {
            for f in [10 * (k + 2) + 1, 10 * (k + 2) + 2] {
                folders.push(json!({"id": f, "path": format!("/bench/{f}")}));
            }
        }
        let base = json!({"version": 1, "transformationData": {"folders": folders, "connections": connections}});
        call(&client, &url, json!({"command": "DeployRepository", "payload": {"content": base.to_string()}})).await;
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
        for (k, &n) in sizes.iter().enumerate() {
            let conn = k as i64 + 2;
            let t = Instant::now();
            let parts = n.div_ceil(SHEET_ACTIONS);
            for (folder, chained) in [(10 * conn + 1, true), (10 * conn + 2, false)] {
                for part in 0..parts {
                    let actions = part * SHEET_ACTIONS..n.min((part + 1) * SHEET_ACTIONS);
                    let id = 100 * folder + part as i64;
                    call(&client, &url, json!({"command": "DeployRepository", "payload": {"content": sheet(id, folder, actions, conn, chained)}})).await;
                }
            }
            println!(
                "runs: {n} actions: deployed in {:.1} s ({} sheets of at most {SHEET_ACTIONS} actions per shape)",
                t.elapsed().as_secs_f64(),
                parts
            );
            for (folder, chained, what) in [(10 * conn + 1, true, "chained"), (10 * conn + 2, false, "fanned out")] {
                // One sheet runs as the sheet, several as their folder.
                let element = if parts == 1 {
                    json!({"elementType": "S", "elementId": 100 * folder})
                } else {
                    json!({"elementType": "F", "elementId": folder})
                };
                // The response to starting n actions (expanded, ordered, stored).
                let t = Instant::now();
                let v = call(&client, &url, json!({"command": "RunElements", "payload": {"batchExecution": {"batchName": "bench", "user": "bench", "elementList": [element]}}})).await;
                let response = t.elapsed();
                let instance = v["payload"]["batchInstanceId"].as_i64().expect("id");
                let done = call(&client, &url, json!({"command": "WaitBatchInstance", "payload": {"batchInstanceId": instance, "timeoutSeconds": 3600}})).await;
                assert_eq!(done["payload"]["state"], "finished", "{done}");
                let wall = run_and_wait(&client, &url, &element).await;
                let base = baseline(&data(k + 1), n, chained, false);
                let marked = baseline(&data(k + 1), n, chained, true);
                let path = data_path(&data(k + 1), n, chained);
                // Fanned out, `limit` actions run at once: the host's time per action is the
                // wall time times the parallelism.
                let parallel = if chained { 1.0 } else { limit as f64 };
                let per = wall.as_secs_f64() * 1e3 / n as f64;
                let direct = base.as_secs_f64() * 1e3 / n as f64;
                let with_marker = marked.as_secs_f64() * 1e3 / n as f64;
                let through_weft = path.as_secs_f64() * 1e3 / n as f64;
                println!(
                    "runs: {n} trivial Sql actions, {what}: RunElements answered in {:.1} ms ({:.3} ms per action); ran in {:.2} s, {per:.3} ms per action (x{parallel} parallel); the same statements directly {direct:.3} ms each, {with_marker:.3} ms with a marker row, {through_weft:.3} ms through weft's data path alone; host overhead {:.3} ms per action, {:.3} ms beyond the marker's commit   (goal <= 1 ms)",
                    response.as_secs_f64() * 1e3,
                    response.as_secs_f64() * 1e3 / n as f64,
                    wall.as_secs_f64(),
                    per * parallel - direct,
                    per * parallel - with_marker
                );
            }
        }
    });
}
