//! Scheduler benchmark (`cargo bench -p weft --bench scheduler`): prints numbers, asserts
//! nothing but that nothing started.
//!
//! 10,000 scheduled batches (daily, weekly, monthly and every-N-minutes schedules, planned
//! starts spread over the next two days) in a real repository file: the cost of one
//! scheduler tick (reading `service_batch_next_run`, deciding what is due; here nothing is,
//! as in almost every tick), and of computing next planned starts, on an ordinary day and
//! across a clock change. Goal (issue 6): numbers in docs/benchmarks.md.

use chrono::{DateTime, Duration, Utc};
use std::sync::Arc;
use std::time::Instant;
use weft_core::sched::schedule::{GapPolicy, OverlapPolicy, Planned, Schedule, parse};

const BATCHES: i64 = 10_000;

fn schedule_text(i: i64) -> String {
    match i % 4 {
        0 => format!("daily {:02}:{:02}", i % 24, (i * 7) % 60),
        1 => format!("weekly mon,wed,fri {:02}:30", i % 24),
        2 => format!("monthly {} 03:00", i % 28 + 1),
        _ => format!("every {} minutes", [5, 15, 30, 60][(i as usize / 4) % 4]),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("scheduler bench: run with `cargo bench -p weft --bench scheduler` for numbers");
        return;
    }
    let zone = chrono_tz::Europe::Berlin;
    let dir = tempfile::tempdir().expect("dir");
    let repo =
        Arc::new(weft_repo::Repository::open(&dir.path().join("repository.db")).expect("repo"));
    let now: DateTime<Utc> = "2026-10-24T12:00:00Z".parse().expect("now");
    let local_now = now.with_timezone(&zone).naive_local();
    // Written as a person or a sheet would, on a connection of its own.
    let mut conn = weft_repo::connect(&dir.path().join("repository.db")).expect("connection");
    let c = conn.transaction().expect("transaction");
    {
        let mut b = c.prepare(
            "INSERT INTO batches (id, name, schedule, elements, variables, created_at, updated_at) VALUES (?1, ?2, ?3, '[{\"elementType\":\"S\",\"elementId\":1}]', '[]', '', '')",
        )
        .expect("prepare");
        let mut n = c
            .prepare("INSERT INTO service_batch_next_run (batch_id, start_dt) VALUES (?1, ?2)")
            .expect("prepare");
        for i in 1..=BATCHES {
            b.execute(rusqlite::params![i, format!("batch {i}"), schedule_text(i)])
                .expect("batch");
            // Planned starts spread over the next 48 hours, none due yet.
            let start = local_now + Duration::seconds(60 + (i * 17) % (48 * 3600));
            n.execute(rusqlite::params![i, weft_core::sched::clock::wall(start)])
                .expect("planned start");
        }
    }
    c.commit().expect("batches");
    let registry = Arc::new(weft_core::plugins::Registry::default());
    let exec = weft_engine::exec::batch::Executor::new(Arc::clone(&repo), registry, None, 2);

    // Ticks: the server makes one a second.
    let mut ticks = Vec::new();
    let mut looked = 0;
    for k in 0..50 {
        let t = Instant::now();
        let r = weft_core::sched::scheduler::tick(&exec, zone, now + Duration::milliseconds(k))
            .expect("tick");
        ticks.push(t.elapsed().as_secs_f64() * 1e3);
        assert!(r.started.is_empty());
        looked = r.looked_at;
    }
    println!(
        "scheduler: one tick over {BATCHES} batches ({looked} planned within three hours): median {:.2} ms, max {:.2} ms",
        median(ticks.clone()),
        ticks.iter().copied().fold(0.0, f64::max)
    );

    // Next planned starts.
    let schedules: Vec<Schedule> = (1..=BATCHES)
        .map(|i| Schedule {
            repeat: parse(&schedule_text(i)).expect("schedule"),
            gap: GapPolicy::Next,
            overlap: if i % 2 == 0 {
                OverlapPolicy::Both
            } else {
                OverlapPolicy::First
            },
        })
        .collect();
    for (what, at) in [
        ("an ordinary day", "2026-11-20T12:00:00Z"),
        ("across the autumn clock change", "2026-10-24T12:00:00Z"),
    ] {
        let at: DateTime<Utc> = at.parse().expect("t");
        let t = Instant::now();
        let firsts: Vec<Planned> = schedules
            .iter()
            .map(|s| s.first_after(zone, at).expect("first"))
            .collect();
        let first_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let mut count = 0;
        for (s, p) in schedules.iter().zip(&firsts) {
            let due = s.due(zone, p).expect("due");
            if s.next(zone, p, due).is_some() {
                count += 1;
            }
        }
        let next_ms = t.elapsed().as_secs_f64() * 1e3;
        println!(
            "scheduler: {what}: first planned start of {BATCHES} schedules {first_ms:.2} ms ({:.1} µs each), next start {next_ms:.2} ms ({:.1} µs each, {count} computed)",
            first_ms * 1e3 / BATCHES as f64,
            next_ms * 1e3 / BATCHES as f64
        );
    }
}
