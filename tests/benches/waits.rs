//! Followers of one large run (`cargo bench -p weft_tests --bench waits`): prints numbers,
//! asserts nothing but that the run finished.
//!
//! A run of 5,000 actions held by a lock (4 running, the rest waiting for a slot) on one host
//! with its repository in PostgreSQL, followed by 100 `WaitBatchInstance` requests with
//! `changedFrom` for 15 s (as 100 open pages would), while another client asks
//! `ListBatchInstances` again and again: the server's CPU time over those 15 s and the other
//! client's answer times. The goal of issue 23: waiters cost little and never slow the
//! other commands.
//!
//! Needs `cargo build --release --workspace` first (else the debug binary is measured), and
//! PostgreSQL (`.ci/run` installs it).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use serde_json::json;
use std::time::{Duration, Instant};
use weft_tests::server::*;

const GATE: i64 = 4242;
const ACTIONS: i64 = 5_000;
const WAITERS: usize = 100;
const FOLLOW: Duration = Duration::from_secs(15);

/// The server's CPU time so far (user and system), in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // After the name: state ppid pgrp ... utime is the 14th field of the line, stime 15th.
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    ticks as f64 / 100.0
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("waits bench: run with `cargo bench -p weft_tests --bench waits` for numbers");
        return;
    }
    weft::init_tls();
    println!("weft binary: {}", weft_bin().display());
    let (hosts, data) = cluster(1, &[("WEFT_MAX_PARALLEL_ACTIONS", "4")]);
    let w = &hosts[0];
    deploy_sql_actions(
        w,
        ACTIONS,
        &format!(
            "INSERT INTO t SELECT ${{action_id}} FROM (SELECT pg_advisory_xact_lock_shared({GATE})) g"
        ),
    );
    let gate = Gate::hold(&data, GATE);
    let id = run_folder(w);
    let (st, v) = command(
        w,
        "WaitBatchInstance",
        json!({"batchInstanceId": id, "timeoutSeconds": 0}),
    );
    assert_eq!(st, 200, "{v}");
    let version = v["payload"]["version"]
        .as_str()
        .expect("version")
        .to_owned();
    let pid = w.child.id();
    // The same 15 s without followers: what the held run and the other client cost alone.
    let before = cpu_seconds(pid);
    let started = Instant::now();
    let mut alone = Vec::new();
    while started.elapsed() < FOLLOW {
        let asked = Instant::now();
        let (st, _) = command(w, "ListBatchInstances", json!({"limit": 20}));
        assert_eq!(st, 200);
        alone.push(asked.elapsed());
        std::thread::sleep(Duration::from_millis(50));
    }
    let base_cpu = cpu_seconds(pid) - before;
    alone.sort_unstable();
    println!(
        "no followers for {:.1} s: server CPU {base_cpu:.2} s; ListBatchInstances p50 {:.1} ms, p99 {:.1} ms",
        started.elapsed().as_secs_f64(),
        alone[alone.len() / 2].as_secs_f64() * 1000.0,
        alone[(alone.len() - 1) * 99 / 100].as_secs_f64() * 1000.0
    );
    let before = cpu_seconds(pid);
    let started = Instant::now();
    let mut answers = Vec::new();
    std::thread::scope(|s| {
        for _ in 0..WAITERS {
            let (url, version) = (w.url.clone(), version.clone());
            s.spawn(move || {
                while started.elapsed() < FOLLOW {
                    let left = FOLLOW.saturating_sub(started.elapsed()).as_secs().max(1);
                    let body = json!({"command": "WaitBatchInstance", "payload": {
                        "batchInstanceId": id, "changedFrom": version, "timeoutSeconds": left}});
                    let _ = post(&url, body.to_string().into_bytes());
                }
            });
        }
        while started.elapsed() < FOLLOW {
            let asked = Instant::now();
            let (st, _) = command(w, "ListBatchInstances", json!({"limit": 20}));
            assert_eq!(st, 200);
            answers.push(asked.elapsed());
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let cpu = cpu_seconds(pid) - before;
    let wall = started.elapsed().as_secs_f64();
    answers.sort_unstable();
    let at = |q: f64| answers[((answers.len() - 1) as f64 * q) as usize].as_secs_f64() * 1000.0;
    println!(
        "{WAITERS} followers of a {ACTIONS}-action run for {wall:.1} s: server CPU {cpu:.2} s ({:.0} % of one core)",
        cpu / wall * 100.0
    );
    println!(
        "ListBatchInstances meanwhile ({} asks): p50 {:.1} ms, p99 {:.1} ms, worst {:.1} ms",
        answers.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    );
    drop(gate);
    finish(w, id);
}
