//! Deploy benchmark (`cargo bench -p weft --bench deploy`): prints numbers, asserts nothing.
//!
//! 1. The `.dsr` reader's throughput in MB/s on a generated multi-sheet document, next to
//!    serde_json reading the same document as JSON (a reference, not a goal).
//! 2. Deploys of generated three-node sheets over HTTP to a real server on loopback (the
//!    production router, a real SQLite repository in a temporary directory): sheets per
//!    second and p50/p99 latency, with one client and with four concurrent clients.
//!
//! 3. A project of 500 sheets (a file each, and one with the folder and connection) deployed
//!    over HTTP as one `DeployProject`, cold and again unchanged (which must write nothing:
//!    the repository's files are compared), and `DeleteObjects` of a folder of 1,000 sheets.
//!
//! Goals on a 2-core machine (issue 2): at least 2,000 sheets/s, p50 at most 2 ms, parsing at
//! least 50 MB/s; (issue 25) a 500-sheet project in under 2 s. Set `WEFT_BENCH_SHEETS` to
//! change the number of deployed sheets, `WEFT_BENCH_PARTS` to `parser`, `http` or
//! `project` (comma-separated) to run only those.

use std::sync::Arc;
use std::time::{Duration, Instant};
use weft::api::{AppState, app};
use weft_core::settings::Settings;
use weft_repo::Repository;

/// A three-node sheet (source, action, target) with ids derived from `n`, in `/bench`.
fn sheet(n: i64) -> String {
    sheet_in(n, (1, "/bench"))
}

/// [`sheet`] in folder `folder` (id and path).
fn sheet_in(n: i64, folder: (i64, &str)) -> String {
    let base = n * 10;
    let (folder_id, folder) = folder;
    format!(
        r#"# generated sheet {n}
{{
  version: 1
  transformationData: {{
    sheets: [
      {{
        id: {n}
        attributes: {{
          documentation: "Generated for the benchmark."
          name: load table {n}
          folder_id: {folder_id}
          folder: {folder}
        }}
        nodes: [
          {{
            id: {a}
            type: 1
            layout: {{ x: 40, y: 80, width: 160, height: 60 }}
            attributes: {{ field1: "src_{n}", field2: "main", field3: null, objectTypeId: 1, connectionId: 1, dependency: "Y" }}
          }}
          {{
            id: {b}
            type: 0
            layout: {{ x: 260, y: 80, width: 160, height: 60 }}
            attributes: {{
              module: Insert
              documentation: null
              name: copy {n}
              action:
                '''
                SELECT id, name, amount
                  FROM src_{n}
                 WHERE loaded_at >= '${{since}}'
                '''
            }}
          }}
          {{
            id: {c}
            type: 1
            layout: {{ x: 480, y: 80, width: 160, height: 60 }}
            attributes: {{ field1: "dst_{n}", field2: "main", field3: null, objectTypeId: 1, connectionId: 1, dependency: "Y" }}
          }}
        ]
        edges: [
          {{ id: {d}, from: {a}, to: {b} }}
          {{ id: {e}, from: {b}, to: {c} }}
        ]
      }}
    ]
  }}
}}
"#,
        a = base + 1,
        b = base + 2,
        c = base + 3,
        d = base + 4,
        e = base + 5,
    )
}

fn bench_parser() {
    // One document with many sheets, about 8 MB.
    let mut sheets = Vec::new();
    let mut size = 0;
    let mut n = 1;
    while size < 8 * 1024 * 1024 {
        let s = sheet(n);
        let start = s.find("      {\n        id:").unwrap_or(0);
        let end = s.rfind("\n    ]").unwrap_or(s.len());
        size += end - start;
        sheets.push(s[start..end].to_owned());
        n += 1;
    }
    let text = format!(
        "{{\n  version: 1\n  transformationData: {{\n    sheets: [\n{}\n    ]\n  }}\n}}\n",
        sheets.join("\n")
    );
    let mb = text.len() as f64 / 1e6;
    let rounds = 5;
    let t = Instant::now();
    let mut problems = 0;
    for _ in 0..rounds {
        let (doc, p) = weft_dsr::parse(&text);
        problems += p.as_slice().len();
        std::hint::black_box(doc);
    }
    let full = t.elapsed().as_secs_f64() / rounds as f64;
    let t = Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(weft_dsr::hjson::parse(&text).ok());
    }
    let syntax = t.elapsed().as_secs_f64() / rounds as f64;
    let json = weft_dsr::hjson::parse(&text)
        .map(|v| v.value.to_json().to_string())
        .unwrap_or_default();
    let t = Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(serde_json::from_str::<serde_json::Value>(&json).ok());
    }
    let reference = t.elapsed().as_secs_f64() / rounds as f64;
    assert_eq!(problems, 0, "the generated document must be valid");
    println!("parser: {:.1} MB document, {} sheets", mb, n - 1);
    println!(
        "parser: HJSON to spanned values      {:>8.1} MB/s",
        mb / syntax
    );
    println!(
        "parser: HJSON to typed .dsr model    {:>8.1} MB/s   (goal >= 50 MB/s)",
        mb / full
    );
    println!(
        "parser: reference serde_json (JSON)  {:>8.1} MB/s   (same document as {:.1} MB of JSON)",
        json.len() as f64 / 1e6 / reference,
        json.len() as f64 / 1e6
    );
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn deploy_run(url: &str, first: i64, count: i64, clients: i64) -> (f64, Vec<Duration>) {
    weft::init_tls();
    let client = reqwest::Client::new();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let client = client.clone();
        let url = url.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut n = first + c;
            while n < first + count {
                let body = serde_json::json!({"command": "DeployRepository", "payload": {"content": sheet(n)}}).to_string();
                let t = Instant::now();
                let resp = client.post(&url).header("content-type", "application/json").body(body).send().await;
                match resp {
                    Ok(r) if r.status().is_success() => {
                        let _ = r.bytes().await;
                    }
                    Ok(r) => panic!("deploy of sheet {n} failed: {} {}", r.status(), r.text().await.unwrap_or_default()),
                    Err(e) => panic!("deploy of sheet {n} failed: {e}"),
                }
                lat.push(t.elapsed());
                n += clients;
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap_or_default());
    }
    let secs = start.elapsed().as_secs_f64();
    all.sort_unstable();
    (count as f64 / secs, all)
}

/// The production router on loopback over `repo`, with the plugins of the release target
/// directory (build them first with `cargo build --release --workspace`): its service URL.
async fn serve(repo: &Arc<Repository>) -> String {
    let dir = std::env::current_exe()
        .ok()
        .and_then(|e| {
            e.parent()
                .and_then(|p| p.parent())
                .map(std::path::Path::to_path_buf)
        })
        .unwrap_or_default();
    let registry = weft_core::plugins::Registry::load(&[(dir.clone(), false)]);
    assert!(
        registry.module("Insert").is_some(),
        "no plugins in {}: run `cargo build --release --workspace` first",
        dir.display()
    );
    let registry = Arc::new(registry);
    let executor =
        weft_engine::exec::batch::Executor::new(Arc::clone(repo), Arc::clone(&registry), None, 2);
    let state = Arc::new(AppState::new(
        Arc::clone(repo),
        Settings::default(),
        None,
        false,
        registry,
        executor,
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app(state)).await });
    format!("http://{addr}/weft/service")
}

fn bench_http() {
    let count: i64 = std::env::var("WEFT_BENCH_SHEETS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = Arc::new(Repository::open(&dir.path().join("repository.db")).expect("repository"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let url = serve(&repo).await;
        let base = "{version: 1, transformationData: {folders: [{id: 1, path: \"/bench\"}], connections: [{id: 1, name: \"bench\", type: \"sqlite\"}]}}";
        let body = serde_json::json!({"command": "DeployRepository", "payload": {"content": base}}).to_string();
        let r = reqwest::Client::new().post(&url).header("content-type", "application/json").body(body).send().await.expect("setup deploy");
        assert!(r.status().is_success(), "setup deploy failed: {}", r.text().await.unwrap_or_default());
        // Warm up.
        deploy_run(&url, 1_000_000, 200, 1).await;
        for (clients, first) in [(1, 1), (4, 2_000_001)] {
            let (rate, lat) = deploy_run(&url, first, count, clients).await;
            println!(
                "deploy over HTTP, {clients} client(s): {count} three-node sheets, {rate:>7.0} sheets/s, p50 {:.2} ms, p99 {:.2} ms   (goal >= 2000 sheets/s, p50 <= 2 ms)",
                percentile(&lat, 0.5).as_secs_f64() * 1e3,
                percentile(&lat, 0.99).as_secs_f64() * 1e3,
            );
        }
        // Redeploying identical sheets writes nothing.
        let (rate, lat) = deploy_run(&url, 1, count, 4).await;
        println!(
            "identical redeploy,   4 client(s): {count} sheets, {rate:>7.0} sheets/s, p50 {:.2} ms, p99 {:.2} ms",
            percentile(&lat, 0.5).as_secs_f64() * 1e3,
            percentile(&lat, 0.99).as_secs_f64() * 1e3,
        );
    });
}

fn main() {
    weft::init_tls();
    // `cargo bench` passes --bench; `cargo test --benches` passes nothing and wants it quick.
    let quick = !std::env::args().any(|a| a == "--bench");
    if quick {
        println!("deploy bench: run with `cargo bench -p weft --bench deploy` for numbers");
        return;
    }
    let parts =
        std::env::var("WEFT_BENCH_PARTS").unwrap_or_else(|_| "parser,http,project".to_owned());
    let parts: Vec<&str> = parts.split(',').map(str::trim).collect();
    if parts.contains(&"parser") {
        bench_parser();
    }
    if parts.contains(&"http") {
        bench_http();
    }
    if parts.contains(&"project") {
        bench_project();
    }
}

/// The bytes of the repository's files (the database, its write-ahead log), to tell a
/// deploy that wrote nothing.
fn repository_bytes(dir: &std::path::Path) -> Vec<Vec<u8>> {
    ["repository.db", "repository.db-wal"]
        .iter()
        .map(|f| std::fs::read(dir.join(f)).unwrap_or_default())
        .collect()
}

/// A `DeployProject` body: the folder and connection in `base.dsr`, then `sheets` sheets in
/// folder `folder`, a file each.
fn project_body(folder: (i64, &str), first: i64, sheets: i64) -> String {
    let base = format!(
        "{{version: 1, transformationData: {{folders: [{{id: {}, path: \"{}\"}}], connections: [{{id: 1, name: \"bench\", type: \"sqlite\"}}]}}}}",
        folder.0, folder.1
    );
    let mut documents = vec![serde_json::json!({"name": "base.dsr", "content": base})];
    for n in first..first + sheets {
        documents.push(
            serde_json::json!({"name": format!("sheets/s{n}.dsr"), "content": sheet_in(n, folder)}),
        );
    }
    serde_json::json!({"command": "DeployProject", "payload": {"documents": documents}}).to_string()
}

fn bench_project() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = Arc::new(Repository::open(&dir.path().join("repository.db")).expect("repository"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let url = serve(&repo).await;
        let client = reqwest::Client::new();
        let send = |body: String| {
            let client = client.clone();
            let url = url.clone();
            async move {
                let t = Instant::now();
                let r = client.post(&url).header("content-type", "application/json").body(body).send().await.expect("send");
                let ok = r.status().is_success();
                let text = r.text().await.unwrap_or_default();
                assert!(ok, "the request failed: {}", &text[..text.len().min(2000)]);
                (t.elapsed(), text)
            }
        };
        // 500 sheets: cold, then the same project unchanged.
        let body = project_body((2, "/project"), 1, 500);
        let (cold, _) = send(body.clone()).await;
        let before = repository_bytes(dir.path());
        let (again, answer) = send(body.clone()).await;
        let wrote = repository_bytes(dir.path()) != before;
        let unchanged = answer.matches("\"file\"").count();
        println!(
            "project deploy, 500 sheets in 501 files ({:.1} MB): cold {:.0} ms, unchanged {:.0} ms ({unchanged} objects unchanged, repository written: {})   (goal < 2000 ms; unchanged writes nothing)",
            body.len() as f64 / 1e6,
            cold.as_secs_f64() * 1e3,
            again.as_secs_f64() * 1e3,
            if wrote { "YES" } else { "no" },
        );
        // A folder of 1,000 sheets deleted.
        let (_, _) = send(project_body((3, "/doomed"), 10_000, 1000)).await;
        let delete = serde_json::json!({"command": "DeleteObjects", "payload": {"folders": ["/doomed"], "recursive": true}}).to_string();
        let (took, answer) = send(delete).await;
        println!(
            "delete of a folder of 1,000 sheets: {:.0} ms ({} objects deleted)",
            took.as_secs_f64() * 1e3,
            answer.matches("\"kind\"").count(),
        );
    });
}
