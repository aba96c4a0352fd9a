//! End to end: the scheduler and the DST procedure of SPEC 4.7 (`examples/dst-reschedule`),
//! on the real server in Europe/Berlin with a stepped clock (`weft serve --fake-now T
//! --stepped-clock`): the clock stands still until `AdvanceClock` moves it, and each move
//! runs the scheduler before it answers, naming the instances it started. So every start is
//! made by the scheduler itself, at the exact instant the test chose, and no test waits for
//! real seconds to pass.

use crate::common;

use common::*;
use serde_json::json;
use std::path::Path;

const ZONE: (&str, &str) = ("WEFT_TIMEZONE", "Europe/Berlin");

fn start(home: tempfile::TempDir, fake_now: &str) -> Weft {
    Weft::start_in(
        home,
        &[
            "--listen",
            "127.0.0.1:0",
            "--fake-now",
            fake_now,
            "--stepped-clock",
        ],
        &[ZONE],
    )
}

fn start_dt(w: &Weft, batch: i64) -> String {
    w.repo_value(&format!(
        "SELECT start_dt FROM service_batch_next_run WHERE batch_id = {batch}"
    ))
}

/// The finished scheduled runs of `batch`: (planned start, late seconds), oldest first.
fn runs(w: &Weft, batch: i64) -> Vec<(String, i64)> {
    w.repo_rows(&format!(
        "SELECT planned_start, late_seconds FROM batch_instances WHERE batch_id = {batch} AND state <> 'running' ORDER BY id"
    ))
    .iter()
    .map(|r| {
        let (planned, late) = r.split_once('|').expect("two columns");
        (planned.to_owned(), late.parse().expect("seconds"))
    })
    .collect()
}

/// Moves the clock to `to` (wall-clock time in the service zone) and returns the batches the
/// scheduler started at that instant, as (batch id, instance id).
fn advance(w: &Weft, to: &str) -> Vec<(i64, i64)> {
    let (st, v) = command(w, "AdvanceClock", json!({ "to": to }));
    assert_eq!(st, 200, "AdvanceClock to {to}: {v}");
    assert_eq!(v["payload"]["local"], to, "{v}");
    v["payload"]["started"]
        .as_array()
        .expect("started")
        .iter()
        .map(|s| {
            (
                s["batchId"].as_i64().expect("batchId"),
                s["batchInstanceId"].as_i64().expect("batchInstanceId"),
            )
        })
        .collect()
}

/// Waits (on the server's WaitBatchInstance) until instance `id` has ended; asserts that it
/// finished.
fn finished(w: &Weft, id: i64) {
    let (st, v) = command(
        w,
        "WaitBatchInstance",
        json!({"batchInstanceId": id, "timeoutSeconds": 60}),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["state"], "finished", "{v}");
}

/// Moves the clock to `to`, asserts that exactly `batch` started there, and waits for its run
/// to finish.
fn scheduled_run(w: &Weft, to: &str, batch: i64) -> i64 {
    let started = advance(w, to);
    assert_eq!(
        started.iter().map(|s| s.0).collect::<Vec<_>>(),
        [batch],
        "at {to}"
    );
    finished(w, started[0].1);
    started[0].1
}

/// Key file entry 1: an SQLite file `data.db` in the server's home.
fn add_data_connection(w: &Weft) {
    w.add_keys(&format!(
        "1|sqlite|{}|||\n",
        w.home.path().join("data.db").display()
    ));
}

fn deploy_file(w: &Weft, path: &Path) {
    let text = std::fs::read_to_string(path).expect("example");
    let (st, v) = post(&w.url, deploy_body(&text));
    assert_eq!(st, 200, "deploy of {} failed: {v}", path.display());
}

/// A server at `day 18:00` with the example deployed: connection 1 a data file, connection
/// 7 a copy of entry 0 (`weft keys copy 0 7`).
fn set_up(day: &str) -> Weft {
    let w = start(
        tempfile::tempdir().expect("home"),
        &format!("{day} 18:00:00"),
    );
    add_data_connection(&w);
    let out = std::process::Command::new(weft_bin())
        .args(["keys", "copy", "0", "7", "--home"])
        .arg(w.home.path())
        .output()
        .expect("weft keys copy");
    assert!(out.status.success(), "{:?}", text(&out));
    // The connection to the repository and the procedure's SQL are the backend's.
    let examples = root().join("examples/dst-reschedule");
    let own = match backend() {
        Backend::Sqlite => examples.clone(),
        Backend::Postgres => examples.join("postgresql"),
    };
    deploy_file(&w, &own.join("1-connections.dsr"));
    deploy_file(&w, &examples.join("2-night.dsr"));
    deploy_file(&w, &own.join("3-reschedule.dsr"));
    w
}

/// The procedure over the evenings `days[0]` (ordinary), `days[1]` (the eve of the clock
/// change), `days[2]` (the day of the change) and `days[3]`.
fn procedure_over(days: [&str; 4]) {
    let [d0, d1, d2, d3] = days;
    let w = set_up(d0);
    assert_eq!(start_dt(&w, 1), format!("{d0} 19:00:00"));
    assert_eq!(start_dt(&w, 2), format!("{d0} 22:00:00"));
    // Nothing starts before its planned start.
    assert_eq!(advance(&w, &format!("{d0} 18:59:59")), []);
    // An ordinary evening: Reschedule runs at 19:00 and moves nothing.
    scheduled_run(&w, &format!("{d0} 19:00:00"), 1);
    assert_eq!(start_dt(&w, 2), format!("{d0} 22:00:00"));
    assert_eq!(start_dt(&w, 1), format!("{d1} 19:00:00"));

    // The night batch runs at 22:00 and goes on at 22:00 the next day.
    scheduled_run(&w, &format!("{d0} 22:00:00"), 2);
    assert_eq!(start_dt(&w, 2), format!("{d1} 22:00:00"));

    // The eve of the clock change: Reschedule moves the night batch by one day, once, also
    // when it runs a second time that evening.
    scheduled_run(&w, &format!("{d1} 19:00:00"), 1);
    assert_eq!(start_dt(&w, 2), format!("{d2} 22:00:00"));
    let body = json!({"command": "RunElements", "payload": {"batchExecution": {
        "batchName": "Reschedule by hand", "user": "tester",
        "elementList": [{"elementType": "S", "elementId": 920}]}}});
    let (st, v) = post(&w.url, body.to_string().into_bytes());
    assert_eq!(st, 200, "{v}");
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    let (_, v) = command(
        &w,
        "WaitBatchInstance",
        json!({"batchInstanceId": id, "timeoutSeconds": 60}),
    );
    assert_eq!(v["payload"]["state"], "finished", "{v}");
    assert_eq!(v["payload"]["actions"][0]["state"], "F", "{v}");
    assert_eq!(start_dt(&w, 2), format!("{d2} 22:00:00"));

    // 22:00 of the eve passes without a night run.
    assert_eq!(advance(&w, &format!("{d1} 22:00:00")), []);
    assert_eq!(advance(&w, &format!("{d1} 23:59:59")), []);
    assert_eq!(
        runs(&w, 2).len(),
        1,
        "the night batch ran on the night of the change"
    );
    assert_eq!(start_dt(&w, 2), format!("{d2} 22:00:00"));

    // The day of the change (the clocks change at night, between d1 and d2): Reschedule
    // moves nothing any more.
    assert_eq!(advance(&w, &format!("{d2} 12:00:00")), []);
    scheduled_run(&w, &format!("{d2} 19:00:00"), 1);
    assert_eq!(start_dt(&w, 2), format!("{d2} 22:00:00"));

    // The night batch runs at its new time, on time, and goes on at 22:00.
    scheduled_run(&w, &format!("{d2} 22:00:00"), 2);
    assert_eq!(runs(&w, 2)[1], (format!("{d2} 22:00:00"), 0));
    assert_eq!(start_dt(&w, 2), format!("{d3} 22:00:00"));
    let log = common::actions::rows(
        &w.home.path().join("data.db"),
        "SELECT planned, ran_at FROM night_log ORDER BY rowid",
    );
    assert_eq!(
        log,
        vec![format!("{d0}|{d0} 22:00:00"), format!("{d2}|{d2} 22:00:00")]
    );
}

#[test]
fn the_dst_procedure_moves_the_night_batch_once_in_autumn() {
    procedure_over(["2026-10-23", "2026-10-24", "2026-10-25", "2026-10-26"]);
}

#[test]
fn the_dst_procedure_moves_the_night_batch_once_in_spring() {
    procedure_over(["2027-03-26", "2027-03-27", "2027-03-28", "2027-03-29"]);
}

#[test]
fn a_restart_during_a_scheduled_run_neither_loses_nor_repeats_the_next_start() {
    let w = start(tempfile::tempdir().expect("home"), "2026-11-22 21:00:00");
    add_data_connection(&w);
    let data = w.home.path().join("data.db");
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 5, "path": "/slow"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [{"id": 50, "attributes": {"name": "slow", "folder_id": 5, "folder": "/slow"},
          "nodes": [
            {"id": 51, "type": 0, "attributes": {"module": "Sql", "name": "slow",
              "action": "CREATE TABLE IF NOT EXISTS slow (n INTEGER); INSERT INTO slow VALUES (1)"}},
            {"id": 52, "type": 1, "attributes": {"field1": "slow", "objectTypeId": 1, "connectionId": 1}}],
          "edges": [{"id": 53, "from": 51, "to": 52}]}],
        "batches": [{"id": 3, "name": "slow night", "schedule": "daily 22:00",
          "elements": [{"elementType": "S", "elementId": 50}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    assert_eq!(start_dt(&w, 3), "2026-11-22 22:00:00");
    // The test holds the data file's write lock: the scheduled run cannot end until the
    // server is killed.
    let lock = rusqlite::Connection::open(&data).expect("data file");
    lock.execute_batch("BEGIN IMMEDIATE").expect("write lock");
    let started = advance(&w, "2026-11-22 22:00:00");
    assert_eq!(started.len(), 1, "{started:?}");
    // Stored `waiting`, `running` once the host claimed its action.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while w.instance_state(started[0].1) != "running" {
        assert!(
            std::time::Instant::now() < deadline,
            "the run never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // The next planned start was written with the instance.
    assert_eq!(start_dt(&w, 3), "2026-11-23 22:00:00");
    // Killed right after the start was committed, while the run goes on.
    let home = w.stop();
    drop(lock);
    let w = start(home, "2026-11-22 22:00:30");
    let all = |w: &Weft| -> Vec<(String, String)> {
        w.repo_rows(
            "SELECT planned_start, state FROM batch_instances WHERE batch_id = 3 ORDER BY id",
        )
        .iter()
        .map(|r| {
            let (planned, state) = r.split_once('|').expect("two columns");
            (planned.to_owned(), state.to_owned())
        })
        .collect()
    };
    // Interrupted (on a shared repository: run again by its host and finished), not
    // started again; the next start is still there.
    assert_eq!(advance(&w, "2026-11-22 22:00:30"), []);
    let after_the_kill = if backend() == Backend::Postgres {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while w.instance_state(started[0].1) != "finished" {
            assert!(
                std::time::Instant::now() < deadline,
                "the run never went on"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        "finished"
    } else {
        "interrupted"
    };
    assert_eq!(
        all(&w),
        vec![("2026-11-22 22:00:00".to_owned(), after_the_kill.to_owned())]
    );
    assert_eq!(start_dt(&w, 3), "2026-11-23 22:00:00");
    // And it comes, once.
    assert_eq!(advance(&w, "2026-11-23 21:59:59"), []);
    scheduled_run(&w, "2026-11-23 22:00:00", 3);
    assert_eq!(advance(&w, "2026-11-23 22:00:00"), []);
    assert_eq!(advance(&w, "2026-11-23 23:00:00"), []);
    let runs = all(&w);
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(
        runs[1],
        ("2026-11-23 22:00:00".to_owned(), "finished".to_owned())
    );
    // ListBatchInstances says which runs were scheduled, and for when.
    let (st, v) = command(&w, "ListBatchInstances", json!({"limit": 5}));
    assert_eq!(st, 200, "{v}");
    let newest = &v["payload"]["instances"][0];
    assert_eq!(newest["batchId"], 3, "{v}");
    assert_eq!(newest["plannedStart"], "2026-11-23 22:00:00", "{v}");
    assert_eq!(newest["late"], false, "{v}");
    assert_eq!(newest["user"], "scheduler", "{v}");
    assert_eq!(start_dt(&w, 3), "2026-11-24 22:00:00");
}

/// Deploys batch 4 `hourly` (`every 60 minutes`) running sheet 50, whose one action runs
/// `sql` on connection 1 (writing table `t`).
fn deploy_hourly(w: &Weft, sql: &str) {
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 5, "path": "/n"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [{"id": 50, "attributes": {"name": "n", "folder_id": 5, "folder": "/n"},
          "nodes": [{"id": 51, "type": 0, "attributes": {"module": "Sql", "name": "n", "action": sql}},
            {"id": 52, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 1}}],
          "edges": [{"id": 53, "from": 51, "to": 52}]}],
        "batches": [{"id": 4, "name": "hourly", "schedule": "every 60 minutes",
          "elements": [{"elementType": "S", "elementId": 50}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
}

#[test]
fn a_start_missed_while_the_server_was_down_runs_once_late() {
    let w = start(tempfile::tempdir().expect("home"), "2026-11-22 21:00:00");
    add_data_connection(&w);
    deploy_hourly(&w, "CREATE TABLE IF NOT EXISTS t (x INTEGER)");
    let first = start_dt(&w, 4);
    // Down for three planned starts and a half: one late run when it is back, then the next
    // planned start is the first one after now.
    let w = start(w.stop(), "2026-11-23 00:30:00");
    let started = advance(&w, "2026-11-23 00:30:00");
    assert_eq!(
        started.len(),
        1,
        "{started:?} (first planned start {first})"
    );
    finished(&w, started[0].1);
    let (planned, late) = runs(&w, 4)[0].clone();
    assert_eq!(planned, first);
    assert!(late >= 1800, "late by {late} s");
    assert_eq!(start_dt(&w, 4), "2026-11-23 01:00:00");
    assert_eq!(advance(&w, "2026-11-23 00:59:59"), []);
    assert_eq!(runs(&w, 4).len(), 1);
}

#[test]
fn starts_passed_while_the_batch_still_runs_are_kept_as_missed() {
    let w = start(tempfile::tempdir().expect("home"), "2026-11-22 21:00:00");
    add_data_connection(&w);
    let data = w.home.path().join("data.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("CREATE TABLE t (x INTEGER)")
        .expect("table");
    deploy_hourly(&w, "INSERT INTO t VALUES (1)");
    // The first run is held by the data file's lock while three hourly starts pass.
    let gate = rusqlite::Connection::open(&data).expect("data");
    gate.execute_batch("BEGIN IMMEDIATE")
        .expect("the write lock");
    let held = advance(&w, "2026-11-22 22:00:00");
    assert_eq!(held.len(), 1, "{held:?}");
    for at in [
        "2026-11-22 23:00:00",
        "2026-11-23 00:00:00",
        "2026-11-23 01:00:00",
    ] {
        assert_eq!(advance(&w, at), [], "at {at}");
    }
    gate.execute_batch("ROLLBACK").expect("let go");
    finished(&w, held[0].1);
    // Kept once each, listed newest first with why and when, by the service clock (Berlin
    // is UTC+1 in November).
    assert_eq!(
        w.repo_value("SELECT COUNT(*) FROM missed_starts WHERE batch_id = 4"),
        "3"
    );
    let (st, v) = command(&w, "ListBatches", json!({}));
    assert_eq!(st, 200, "{v}");
    let missed: Vec<(String, String, String)> = v["payload"]["batches"][0]["missed"]
        .as_array()
        .expect("missed")
        .iter()
        .map(|m| {
            let s = |k: &str| m[k].as_str().unwrap_or_default().to_owned();
            (s("planned"), s("reason"), s("decided"))
        })
        .collect();
    let row = |planned: &str, decided: &str| {
        (planned.to_owned(), "running".to_owned(), decided.to_owned())
    };
    assert_eq!(
        missed,
        [
            row("2026-11-23 01:00:00", "2026-11-23T00:00:00Z"),
            row("2026-11-23 00:00:00", "2026-11-22T23:00:00Z"),
            row("2026-11-22 23:00:00", "2026-11-22T22:00:00Z"),
        ]
    );
}

#[test]
fn next_runs_lists_planned_starts_with_the_clock_change_and_fake_now_is_for_development_only() {
    let w = start(tempfile::tempdir().expect("home"), "2026-10-20 12:00:00");
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 5, "path": "/n"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [{"id": 50, "attributes": {"name": "n", "folder_id": 5, "folder": "/n"},
          "nodes": [{"id": 51, "type": 0, "attributes": {"module": "Sql", "name": "n", "action": "SELECT 1"}},
            {"id": 52, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 1}}],
          "edges": [{"id": 53, "from": 51, "to": 52}]}],
        "batches": [{"id": 4, "name": "early", "schedule": "daily 02:30", "autumnOverlap": "both",
          "springGap": "skip", "elements": [{"elementType": "S", "elementId": 50}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    let body = json!({"command": "NextRuns", "payload": {"batchId": 4, "count": 7}});
    let (st, v) = post(&w.url, body.to_string().into_bytes());
    assert_eq!(st, 200, "{v}");
    let starts = v["payload"]["starts"].as_array().expect("starts");
    let utc: Vec<&str> = starts
        .iter()
        .map(|s| s["utc"].as_str().expect("utc"))
        .collect();
    assert_eq!(
        utc,
        [
            "2026-10-21T00:30:00Z",
            "2026-10-22T00:30:00Z",
            "2026-10-23T00:30:00Z",
            "2026-10-24T00:30:00Z",
            "2026-10-25T00:30:00Z",
            "2026-10-25T01:30:00Z",
            "2026-10-26T01:30:00Z"
        ]
    );
    assert_eq!(starts[5]["secondOccurrence"], true);
    assert!(
        starts[4]["clockChange"]
            .as_str()
            .is_some_and(|c| c.contains("happens twice")),
        "{v}"
    );
    assert_eq!(starts[6]["utcOffset"], "+01:00");
    let body = json!({"command": "NextRuns", "payload": {"batchId": 99}});
    let (st, v) = post(&w.url, body.to_string().into_bytes());
    assert_eq!(st, 404, "{v}");
    // The same from the command line.
    let cli = |args: &[&str]| {
        std::process::Command::new(weft_bin())
            .arg("next-runs")
            .args(args)
            .args(["--url", w.url.as_str()])
            .output()
            .expect("weft next-runs")
    };
    let out = cli(&["4", "--count", "6"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].contains("`early`: daily 02:30 in Europe/Berlin"),
        "{stdout}"
    );
    assert_eq!(lines.len(), 7, "{stdout}");
    assert!(
        lines[5].starts_with("  2026-10-25 02:30:00  UTC+02:00  2026-10-25T00:30:00Z  ")
            && lines[5].contains("happens twice"),
        "{stdout}"
    );
    assert!(
        lines[6].contains("UTC+01:00  2026-10-25T01:30:00Z"),
        "{stdout}"
    );
    let out = cli(&["99"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out).1.contains("batch 99 does not exist"),
        "{:?}",
        text(&out)
    );
    drop(w);

    // --fake-now and --stepped-clock outside a development environment: refused, with the
    // reason.
    for (flags, refused) in [
        (&["--fake-now", "2026-10-24 19:00"][..], "--fake-now"),
        (&["--stepped-clock"][..], "--stepped-clock"),
    ] {
        let out = std::process::Command::new(weft_bin())
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--environment",
                "production",
            ])
            .args(flags)
            .arg("--home")
            .arg(tempfile::tempdir().expect("home").path())
            .output()
            .expect("weft serve");
        assert!(!out.status.success());
        assert!(
            text(&out)
                .1
                .contains(&format!("{refused} is for development environments only")),
            "{:?}",
            text(&out)
        );
    }
}

#[test]
fn advance_clock_moves_only_a_stepped_clock_and_only_forward() {
    let w = start(tempfile::tempdir().expect("home"), "2026-10-20 12:00:00");
    let (st, v) = command(&w, "AdvanceClock", json!({"seconds": 90}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["now"], "2026-10-20T10:01:30Z", "{v}");
    assert_eq!(v["payload"]["local"], "2026-10-20 12:01:30", "{v}");
    let (st, v) = command(&w, "AdvanceClock", json!({"to": "2026-10-20 12:00:00"}));
    assert_eq!(st, 409, "{v}");
    assert_eq!(v["error"]["code"], "clock.backwards", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("forward only")),
        "{v}"
    );
    for bad in [
        json!({}),
        json!({"seconds": -1}),
        json!({"seconds": "ten"}),
        json!({"to": "tomorrow"}),
        json!({"seconds": 1, "to": "2026-10-21 00:00"}),
        json!({"minutes": 1}),
    ] {
        let (st, v) = command(&w, "AdvanceClock", bad.clone());
        assert_eq!(st, 400, "{bad}: {v}");
    }
    let (_, v) = command(&w, "AdvanceClock", json!({"seconds": 0}));
    assert_eq!(v["payload"]["local"], "2026-10-20 12:01:30", "{v}");
    drop(w);
    // A server whose clock runs refuses it.
    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0", "--fake-now", "2026-10-20 12:00"],
        &[ZONE],
    );
    let (st, v) = command(&w, "AdvanceClock", json!({"seconds": 1}));
    assert_eq!(st, 409, "{v}");
    assert_eq!(v["error"]["code"], "clock.not_stepped", "{v}");
}

#[test]
fn a_nightly_derives_its_load_date_from_the_schedule_date_and_a_batch_cannot_set_it() {
    let w = start(tempfile::tempdir().expect("home"), "2026-11-22 21:00:00");
    add_data_connection(&w);
    let doc = |variables: serde_json::Value| {
        json!({"version": 1, "transformationData": {
            "folders": [{"id": 5, "path": "/n"}],
            "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
            "sheets": [{"id": 60, "attributes": {"name": "days", "folder_id": 5, "folder": "/n"},
              "nodes": [{"id": 61, "type": 0, "attributes": {"module": "Sql", "name": "days",
                  "action": "CREATE TABLE IF NOT EXISTS days (d TEXT, l TEXT, y TEXT);
                             INSERT INTO days VALUES ('${schedule_date}', '${load_day}', '${ymd}')"}},
                {"id": 62, "type": 1, "attributes": {"field1": "days", "objectTypeId": 1, "connectionId": 1}}],
              "edges": [{"id": 63, "from": 61, "to": 62}]}],
            "batches": [{"id": 6, "name": "nightly", "schedule": "daily 02:30",
              "elements": [{"elementType": "S", "elementId": 60}],
              "variables": variables}]}})
    };
    let var = |name: &str, value: &str| json!({"variableName": name, "variableValue": value});
    // A batch may not set schedule_date, nor a variable that cannot be computed.
    for (bad, said) in [
        (
            var("schedule_date", "2026-01-01"),
            "cannot be set by the batch",
        ),
        (
            var("load_day", "${add_day(schedule_date, -1)}"),
            "unknown function `add_day`",
        ),
        (
            var("load_day", "${yesterday}"),
            "`${yesterday}`, which is no built-in",
        ),
        (var("user", "me"), "cannot be set by a run"),
    ] {
        let (st, v) = post(&w.url, deploy_body(&doc(json!([bad])).to_string()));
        assert_eq!(st, 422, "{v}");
        let problems = v["error"]["details"].to_string();
        assert!(
            problems.contains(said) && problems.contains("batch.variable"),
            "{problems}"
        );
    }
    let (st, v) = post(
        &w.url,
        deploy_body(
            &doc(json!([
                var("load_day", "${add_days(schedule_date, -1)}"),
                var("ymd", "${format(schedule_date, '%Y%m%d')}")
            ]))
            .to_string(),
        ),
    );
    assert_eq!(st, 200, "{v}");
    let id = scheduled_run(&w, "2026-11-23 02:30:00", 6);
    let data = rusqlite::Connection::open(w.home.path().join("data.db")).expect("data");
    let day: (String, String, String) = data
        .query_row("SELECT d, l, y FROM days", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .expect("a row");
    assert_eq!(
        day,
        ("2026-11-23".into(), "2026-11-22".into(), "20261123".into())
    );
    let (st, v) = command(&w, "GetBatchInstance", json!({"batchInstanceId": id}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["scheduleDate"], "2026-11-23", "{v}");
    assert_eq!(
        v["payload"]["scheduleDateSet"],
        serde_json::Value::Null,
        "{v}"
    );
}

#[test]
fn a_batch_after_another_waits_for_its_run_of_the_day_and_passes_when_it_does_not_finish_in_time() {
    let (w, data) = night_server("CREATE TABLE t (d TEXT); CREATE TABLE u (d TEXT);");
    let sheet = |id: i64, sql: &str, target: &str| one_action_sheet(id, sql, None, target);
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 1, "path": "/n"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [sheet(50, "INSERT INTO t VALUES ('${schedule_date}')", "t"),
                   sheet(60, "INSERT INTO u VALUES ('${schedule_date}')", "u")],
        "batches": [
            {"id": 1, "name": "extract", "schedule": "daily 02:00",
             "elements": [{"elementType": "S", "elementId": 50}]},
            {"id": 2, "name": "load", "schedule": "daily 02:00", "after": [1],
             "afterTimeoutMinutes": 30,
             "elements": [{"elementType": "S", "elementId": 60}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    // Night one: the load waits for the extract's run of the day, then starts.
    let first = advance(&w, "2026-03-10 02:00:00");
    assert_eq!(
        first.iter().map(|s| s.0).collect::<Vec<_>>(),
        [1],
        "{first:?}"
    );
    finished(&w, first[0].1);
    scheduled_run(&w, "2026-03-10 02:00:01", 2);
    // Night two: the extract fails (its table is gone); the load waits its 30 minutes and
    // passes, recorded with why.
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("DROP TABLE t")
        .expect("drop");
    let second = advance(&w, "2026-03-11 02:00:00");
    assert_eq!(
        second.iter().map(|s| s.0).collect::<Vec<_>>(),
        [1],
        "{second:?}"
    );
    let (_, v) = command(
        &w,
        "WaitBatchInstance",
        json!({"batchInstanceId": second[0].1, "timeoutSeconds": 60}),
    );
    assert_eq!(v["payload"]["state"], "failed", "{v}");
    assert!(
        advance(&w, "2026-03-11 02:29:00").is_empty(),
        "still waiting"
    );
    assert!(
        advance(&w, "2026-03-11 02:30:01").is_empty(),
        "passed, not started"
    );
    let (_, v) = command(&w, "ListBatches", json!({}));
    let load = v["payload"]["batches"]
        .as_array()
        .expect("batches")
        .iter()
        .find(|b| b["batchId"] == 2)
        .expect("batch 2")
        .clone();
    assert_eq!(
        load["missed"][0]["planned"], "2026-03-11 02:00:00",
        "{load}"
    );
    assert_eq!(
        load["missed"][0]["reason"],
        "after: batches [1] had not finished their runs of 2026-03-11 within 30 minutes",
        "{load}"
    );
    // It ran once, on the first night.
    let c = rusqlite::Connection::open(&data).expect("data");
    let loaded: Vec<String> = c
        .prepare("SELECT d FROM u")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(loaded, ["2026-03-10"]);
    // `after` naming nothing there, or itself, is refused at deploy.
    let bad = json!({"version": 1, "transformationData": {"batches": [
        {"id": 3, "name": "x", "schedule": "daily 03:00", "after": [3, 99],
         "elements": [{"elementType": "S", "elementId": 60}]}]}});
    let (st, v) = post(&w.url, deploy_body(&bad.to_string()));
    assert_eq!(st, 422, "{v}");
    let paths: Vec<&str> = v["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter_map(|d| d["path"].as_str())
        .collect();
    assert_eq!(
        paths,
        [
            "transformationData.batches[0].after[0]",
            "transformationData.batches[0].after[1]"
        ],
        "{v}"
    );
}

#[test]
fn a_batchs_elements_may_be_skipped_or_start_halted_until_a_restart() {
    let (w, data) = night_server(
        "CREATE TABLE t (d TEXT); CREATE TABLE u (d TEXT); CREATE TABLE v (d TEXT); CREATE TABLE x (d TEXT);",
    );
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 1, "path": "/n"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [
            one_action_sheet(50, "INSERT INTO t VALUES ('${schedule_date}')", None, "t"),
            one_action_sheet(60, "INSERT INTO u SELECT d FROM t", Some("t"), "u"),
            one_action_sheet(70, "INSERT INTO v VALUES ('${schedule_date}')", None, "v"),
            one_action_sheet(80, "INSERT INTO x VALUES ('${schedule_date}')", None, "x")],
        "batches": [{"id": 1, "name": "nightly", "schedule": "daily 02:00", "elements": [
            {"elementType": "S", "elementId": 50, "halted": true},
            {"elementType": "S", "elementId": 60},
            {"elementType": "S", "elementId": 70},
            {"elementType": "S", "elementId": 80, "skip": true}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    let started = advance(&w, "2026-03-10 02:00:00");
    assert_eq!(started.len(), 1, "{started:?}");
    let id = started[0].1;
    let (_, v) = command(
        &w,
        "WaitBatchInstance",
        json!({"batchInstanceId": id, "timeoutSeconds": 60}),
    );
    let inst = &v["payload"];
    assert_eq!(inst["state"], "halted", "{inst}");
    let states: Vec<(i64, String)> = inst["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| {
            (
                a["actionId"].as_i64().expect("id"),
                a["state"].as_str().expect("state").to_owned(),
            )
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(
        states,
        [
            (500, "H".to_owned()),
            (600, "H".to_owned()),
            (700, "F".to_owned())
        ],
        "the halted element and what depends on it wait, the skipped one is not there: {inst}"
    );
    assert!(
        inst["actions"][0]["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("held: ")),
        "{inst}"
    );
    // A restart runs what was held.
    let (st, v) = command(&w, "RestartBatchInstance", json!({"batchInstanceId": id}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["actionsToRun"], 2, "{v}");
    finished(&w, id);
    let count = |table: &str| -> i64 {
        rusqlite::Connection::open(&data)
            .expect("data")
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .expect("count")
    };
    assert_eq!(
        (count("t"), count("u"), count("v"), count("x")),
        (1, 1, 1, 0),
        "each ran once; the skipped element never"
    );
}

#[test]
fn a_batch_that_excludes_manual_runs_refuses_them_while_it_runs_and_waits_for_them() {
    let (w, data) = night_server("CREATE TABLE t (d TEXT); CREATE TABLE v (d TEXT);");
    let sheet = |id: i64, sql: &str, target: &str| one_action_sheet(id, sql, None, target);
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 1, "path": "/n"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [sheet(50, "INSERT INTO t VALUES ('${schedule_date}')", "t"),
                   sheet(70, "INSERT INTO v VALUES ('x')", "v")],
        "batches": [{"id": 1, "name": "nightly", "schedule": "daily 02:00", "manualRuns": "exclude",
             "elements": [{"elementType": "S", "elementId": 50}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    let manual = |sheet: i64| {
        command(
            &w,
            "RunElements",
            json!({"batchExecution": {"batchName": "by hand", "user": "ops",
                "elementList": [{"elementType": "S", "elementId": sheet}]}}),
        )
    };
    // The nightly runs, held by the test's lock on the data file.
    let gate = rusqlite::Connection::open(&data).expect("gate");
    gate.execute_batch("BEGIN IMMEDIATE").expect("lock");
    let started = advance(&w, "2026-03-10 02:00:00");
    assert_eq!(started.len(), 1, "{started:?}");
    // A manual run of its sheet is refused, naming the run; another sheet's is not.
    let (st, v) = manual(50);
    assert_eq!(st, 409, "{v}");
    assert_eq!(v["error"]["code"], "run.excluded", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(&format!(
                "batch instance {} (nightly) runs action 500",
                started[0].1
            ))),
        "{v}"
    );
    let (st, v) = manual(70);
    assert_eq!(st, 200, "{v}");
    gate.execute_batch("COMMIT").expect("let go");
    finished(&w, started[0].1);
    // The other way: a manual run of its sheet goes at the next planned start; the start
    // waits for it, then starts.
    gate.execute_batch("BEGIN IMMEDIATE").expect("lock");
    let (st, v) = manual(50);
    assert_eq!(st, 200, "{v}");
    let by_hand = v["payload"]["batchInstanceId"].as_i64().expect("id");
    let (st, v) = command(&w, "AdvanceClock", json!({"to": "2026-03-11 02:00:00"}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["started"], json!([]), "{v}");
    gate.execute_batch("COMMIT").expect("let go");
    finished(&w, by_hand);
    scheduled_run(&w, "2026-03-11 02:00:01", 1);
}

/// Sheet `id` in folder 1 `/n`: one Sql action (id `id * 10`) writing `target` through
/// connection 1, reading `source` when given.
fn one_action_sheet(id: i64, sql: &str, source: Option<&str>, target: &str) -> serde_json::Value {
    let a = id * 10;
    let mut nodes = vec![
        json!({"id": a, "type": 0, "attributes": {"module": "Sql", "name": format!("a{id}"), "action": sql}}),
        json!({"id": a + 1, "type": 1, "attributes": {"field1": target, "objectTypeId": 1, "connectionId": 1}}),
    ];
    let mut edges = vec![json!({"id": a + 1, "from": a, "to": a + 1})];
    if let Some(s) = source {
        nodes.push(json!({"id": a + 2, "type": 1, "attributes": {"field1": s, "objectTypeId": 1, "connectionId": 1}}));
        edges.push(json!({"id": a + 2, "from": a + 2, "to": a}));
    }
    json!({"id": id, "attributes": {"name": format!("s{id}"), "folder_id": 1, "folder": "/n"},
           "nodes": nodes, "edges": edges})
}

/// A server at 2026-03-10 01:00 (stepped clock) with connection 1 a data file holding
/// `tables` (their DDL): the server and the file.
fn night_server(tables: &str) -> (Weft, std::path::PathBuf) {
    let w = start(tempfile::tempdir().expect("home"), "2026-03-10 01:00:00");
    add_data_connection(&w);
    let data = w.home.path().join("data.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch(tables)
        .expect("tables");
    (w, data)
}

#[test]
fn a_paused_batch_passes_its_starts_as_missed_keeps_the_pause_through_a_deploy_and_runs_when_resumed()
 {
    let w = start(tempfile::tempdir().expect("home"), "2026-11-22 21:00:00");
    add_data_connection(&w);
    deploy_hourly(&w, "CREATE TABLE IF NOT EXISTS t (x INTEGER)");
    let (st, v) = command(&w, "PauseBatch", json!({"batch": "hourly"}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["paused"], true, "{v}");
    assert_eq!(v["payload"]["batchId"], 4, "{v}");
    assert_eq!(v["payload"]["pausedAt"], "2026-11-22T20:00:00.000Z", "{v}");
    let by = v["payload"]["pausedBy"].clone();
    assert!(by.is_string(), "{v}");
    // Its starts pass without a run, each kept as missed: paused.
    assert_eq!(advance(&w, "2026-11-22 22:00:00"), []);
    assert_eq!(advance(&w, "2026-11-22 23:00:00"), []);
    let (_, v) = command(&w, "ListBatches", json!({}));
    let b = &v["payload"]["batches"][0];
    assert_eq!(
        (b["paused"].clone(), b["pausedBy"].clone()),
        (json!(true), by)
    );
    let reasons: Vec<&str> = b["missed"]
        .as_array()
        .expect("missed")
        .iter()
        .filter_map(|m| m["reason"].as_str())
        .collect();
    assert_eq!(reasons, ["paused", "paused"], "{b}");
    let (_, v) = command(&w, "NextRuns", json!({"batchId": 4, "count": 1}));
    assert_eq!(v["payload"]["paused"], true, "{v}");
    // Pausing again keeps who paused and when; a deploy of the batch keeps the pause.
    let (_, again) = command(&w, "PauseBatch", json!({"batch": 4, "paused": true}));
    assert_eq!(again["payload"]["pausedAt"], "2026-11-22T20:00:00.000Z");
    deploy_hourly(&w, "CREATE TABLE IF NOT EXISTS t (x INTEGER, y INTEGER)");
    assert_eq!(advance(&w, "2026-11-23 00:00:00"), []);
    // Resumed: the next start runs; nothing is caught up.
    let (st, v) = command(&w, "PauseBatch", json!({"batch": 4, "paused": false}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["paused"], false, "{v}");
    assert!(v["payload"].get("pausedAt").is_none(), "{v}");
    scheduled_run(&w, "2026-11-23 01:00:00", 4);
    assert_eq!(runs(&w, 4), [("2026-11-23 01:00:00".to_owned(), 0)]);
    // Refused: no such batch, a name no batch has, a payload without a batch.
    for (payload, status) in [
        (json!({"batch": 99}), 404),
        (json!({"batch": "weekly"}), 404),
        (json!({"paused": true}), 400),
        (json!({"batch": 4, "paused": "maybe"}), 400),
    ] {
        let (st, v) = command(&w, "PauseBatch", payload.clone());
        assert_eq!(st, status, "{payload}: {v}");
    }
    // From the command line.
    let (code, out, err) = w.cli(&["pause", "hourly"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("batch 4 (hourly) is paused"), "{out}");
    let (code, out, err) = w.cli(&["resume", "4", "--json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("\"paused\":false"), "{out}");
    let (code, _, err) = w.cli(&["pause", "weekly"]);
    assert_eq!(code, Some(4), "{err}");
}

#[test]
fn the_second_run_of_a_repeated_autumn_time_is_listed_as_the_second() {
    // Berlin, the night the clocks go back: 02:30 happens twice (autumnOverlap: both).
    let w = start(tempfile::tempdir().expect("home"), "2026-10-25 02:00:00");
    add_data_connection(&w);
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 5, "path": "/n"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [{"id": 50, "attributes": {"name": "n", "folder_id": 5, "folder": "/n"},
          "nodes": [{"id": 51, "type": 0, "attributes": {"module": "Sql", "name": "n", "action": "CREATE TABLE IF NOT EXISTS t (x INTEGER)"}},
            {"id": 52, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 1}}],
          "edges": [{"id": 53, "from": 51, "to": 52}]}],
        "batches": [{"id": 4, "name": "early", "schedule": "daily 02:30", "autumnOverlap": "both",
          "elements": [{"elementType": "S", "elementId": 50}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    let first = scheduled_run(&w, "2026-10-25 02:30:00", 4);
    // An hour later by the clock is 02:30 again.
    let (st, v) = command(&w, "AdvanceClock", json!({"seconds": 3600}));
    assert_eq!(st, 200, "{v}");
    let second = v["payload"]["started"][0]["batchInstanceId"]
        .as_i64()
        .expect("the second 02:30 started");
    finished(&w, second);
    let (_, v) = command(&w, "ListBatchInstances", json!({"batchId": 4, "limit": 5}));
    let listed: Vec<(i64, String, bool)> = v["payload"]["instances"]
        .as_array()
        .expect("instances")
        .iter()
        .map(|i| {
            (
                i["batchInstanceId"].as_i64().unwrap_or(-1),
                i["plannedStart"].as_str().unwrap_or_default().to_owned(),
                i["plannedSecond"] == true,
            )
        })
        .collect();
    let at = "2026-10-25 02:30:00".to_owned();
    assert_eq!(listed, [(second, at.clone(), true), (first, at, false)]);
}
