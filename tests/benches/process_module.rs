//! Process module benchmark (`cargo bench -p weft_tests --bench process_module`): prints
//! numbers, asserts only that every call finished.
//!
//! The cost of one call of a process module through the host's action runner (a process
//! started, one JSON request written, one JSON answer read and checked, its group killed):
//! a module that is a `/bin/sh` script answering at once, and the reference Python module
//! of `examples/modules/min_rows` counting a table of 3 rows; beside them, a native `Sql`
//! action (`SELECT 1`) on an SQLite file as the floor, and `python3 -c pass` alone. 200 calls each after 5 to warm up;
//! p50 and mean. Goal (issue 17): a process module's overhead per call <= 20 ms.
//!
//! Needs `cargo build --release --workspace` first and `python3`.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::Path;
use std::time::Instant;

fn plan(module: &str, source: Option<&str>) -> weft_engine::exec::ActionPlan {
    let mut nodes = vec![
        serde_json::json!({"id": 1, "type": 0, "attributes": {"module": module, "name": "call", "action": "SELECT 1"}}),
    ];
    let mut edges = Vec::new();
    if let Some(t) = source {
        nodes.push(serde_json::json!({"id": 2, "type": 1, "attributes": {"field1": t, "objectTypeId": 1, "connectionId": 1}}));
        edges.push(serde_json::json!({"id": 1, "from": 2, "to": 1}));
    }
    let sheet = serde_json::json!({"version": 1, "transformationData": {"sheets": [{"id": 1, "attributes": {"name": "bench", "folder_id": 1, "folder": "/"},
        "nodes": nodes, "edges": edges}]}});
    let (doc, _) = weft_dsr::parse(&sheet.to_string());
    weft_engine::exec::actions_of(&doc.expect("sheet").sheets[0], &|_| {
        weft_sdk::Dialect::Sqlite
    })
    .remove(0)
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!(
            "process module bench: run with `cargo bench -p weft_tests --bench process_module`"
        );
        return;
    }
    let target_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().and_then(|p| p.parent()).map(Path::to_path_buf))
        .unwrap_or_default();
    let dir = tempfile::tempdir().expect("dir");
    let modules = dir.path().join("modules");
    let noop = modules.join("noop");
    std::fs::create_dir_all(&noop).expect("noop");
    std::fs::write(
        noop.join("weft-module.json"),
        r#"{"name": "Noop", "command": ["/bin/sh", "-c", "cat > /dev/null; echo '{\"state\": \"finished\"}'"]}"#,
    )
    .expect("manifest");
    let example =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/modules/min_rows");
    let min_rows = modules.join("min_rows");
    std::fs::create_dir_all(&min_rows).expect("min_rows");
    for f in ["weft-module.json", "min_rows.py"] {
        std::fs::copy(example.join(f), min_rows.join(f)).expect("copy");
    }
    let mut registry = weft_core::plugins::Registry::load(&[(target_dir.clone(), false)]);
    registry.load_process_modules(&[modules]);
    assert!(
        registry.module("Sql").is_some() && registry.process_module("Noop").is_some(),
        "no Sql plugin in {} (run `cargo build --release --workspace` first) or no process module: {:?}",
        target_dir.display(),
        registry
            .refused
            .iter()
            .map(|r| r.reason.clone())
            .collect::<Vec<_>>()
    );
    let db = dir.path().join("data.db");
    rusqlite::Connection::open(&db)
        .expect("data")
        .execute_batch("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1), (2), (3);")
        .expect("table");
    let kf = dir.path().join("keyfile");
    std::fs::write(&kf, format!("1|sqlite|{}|||\n", db.display())).expect("keyfile");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&kf, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let keys = weft_core::keys::KeyFile::load(&kf).expect("keys");
    let measure = |what: &str, p: &weft_engine::exec::ActionPlan| -> f64 {
        let mut times = Vec::new();
        for i in 0..205 {
            let t = Instant::now();
            let ran = weft_engine::exec::run_action(&registry, &keys, p, &[]);
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            if let Err(e) = ran.outcome {
                panic!("{what}: {e}");
            }
            if i >= 5 {
                times.push(ms);
            }
        }
        times.sort_by(f64::total_cmp);
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        println!(
            "process module: {what}: p50 {:.2} ms, mean {mean:.2} ms, worst {:.2} ms (200 calls)",
            times[times.len() / 2],
            times[times.len() - 1]
        );
        times[times.len() / 2]
    };
    let native = measure(
        "native Sql `SELECT 1` on SQLite (the floor)",
        &plan("Sql", Some("t")),
    );
    let sh = measure("a /bin/sh process module", &plan("Noop", None));
    let py = measure(
        "the Python reference module MinRows",
        &plan("MinRows", Some("t")),
    );
    // What the Python module's own interpreter costs before it reads a byte.
    let mut starts = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let status = std::process::Command::new("python3")
            .args(["-c", "pass"])
            .status()
            .expect("python3");
        assert!(status.success());
        starts.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    starts.sort_by(f64::total_cmp);
    println!(
        "process module: `python3 -c pass` alone: p50 {:.2} ms (20 starts)",
        starts[starts.len() / 2]
    );
    println!(
        "process module: overhead per call over the native action: sh {:.2} ms, Python {:.2} ms (goal <= 20 ms)",
        sh - native,
        py - native
    );
}
