//! End to end: the scheduler and the DST procedure of SPEC 4.7 (`examples/dst-reschedule`),
//! on the real server with an injected clock (`weft serve --fake-now`), in Europe/Berlin.
//!
//! The server is restarted at the moments that matter (a few seconds before 19:00 and 22:00
//! of the evenings around a clock change) and the real clock runs the last seconds, so every
//! start is made by the scheduler itself.

mod common;

use common::*;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

const ZONE: (&str, &str) = ("WEFT_TIMEZONE", "Europe/Berlin");

fn start(home: tempfile::TempDir, fake_now: &str) -> Weft {
    Weft::start_in(
        home,
        &["--listen", "127.0.0.1:0", "--fake-now", fake_now],
        &[ZONE],
    )
}

fn repo(w: &Weft) -> rusqlite::Connection {
    rusqlite::Connection::open(w.repository()).expect("repository")
}

fn start_dt(w: &Weft, batch: i64) -> String {
    repo(w)
        .query_row(
            "SELECT start_dt FROM service_batch_next_run WHERE batch_id = ?1",
            [batch],
            |r| r.get(0),
        )
        .expect("a planned start")
}

/// The finished scheduled runs of `batch`: (planned start, late seconds), oldest first.
fn runs(w: &Weft, batch: i64) -> Vec<(String, i64)> {
    let c = repo(w);
    let mut st = c
        .prepare(
            "SELECT planned_start, late_seconds FROM batch_instances WHERE batch_id = ?1 AND state <> 'running' ORDER BY id",
        )
        .expect("prepare");
    st.query_map([batch], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "waited 30 s for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
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

/// A server at `day 18:59:50` with the example deployed (ten seconds leave room for a slow
/// start and the deploys, which must come before 19:00): connection 1 a data file,
/// connection 7 a copy of entry 0 (`weft keys copy 0 7`).
fn set_up(day: &str) -> Weft {
    let w = start(
        tempfile::tempdir().expect("home"),
        &format!("{day} 18:59:50"),
    );
    add_data_connection(&w);
    let out = std::process::Command::new(weft_bin())
        .args(["keys", "copy", "0", "7", "--home"])
        .arg(w.home.path())
        .output()
        .expect("weft keys copy");
    assert!(out.status.success(), "{:?}", text(&out));
    for f in ["1-connections.dsr", "2-night.dsr", "3-reschedule.dsr"] {
        deploy_file(&w, &root().join("examples/dst-reschedule").join(f));
    }
    w
}

fn restart(w: Weft, at: &str) -> Weft {
    start(w.stop(), at)
}

/// The procedure over the evenings `days[0]` (ordinary), `days[1]` (the eve of the clock
/// change), `days[2]` (the day of the change) and `days[3]`.
fn procedure_over(days: [&str; 4]) {
    let [d0, d1, d2, d3] = days;
    let w = set_up(d0);
    assert_eq!(start_dt(&w, 1), format!("{d0} 19:00:00"));
    assert_eq!(start_dt(&w, 2), format!("{d0} 22:00:00"));
    // An ordinary evening: Reschedule runs at 19:00 and moves nothing.
    wait_for("Reschedule on the ordinary evening", || {
        runs(&w, 1).len() == 1
    });
    assert_eq!(start_dt(&w, 2), format!("{d0} 22:00:00"));
    assert_eq!(start_dt(&w, 1), format!("{d1} 19:00:00"));

    // The night batch runs at 22:00 and goes on at 22:00 the next day.
    let w = restart(w, &format!("{d0} 21:59:57"));
    wait_for("the ordinary night run", || runs(&w, 2).len() == 1);
    assert_eq!(start_dt(&w, 2), format!("{d1} 22:00:00"));

    // The eve of the clock change: Reschedule moves the night batch by one day, once, also
    // when it runs a second time that evening.
    let w = restart(w, &format!("{d1} 18:59:57"));
    wait_for("Reschedule on the eve", || runs(&w, 1).len() == 2);
    assert_eq!(start_dt(&w, 2), format!("{d2} 22:00:00"));
    let body = json!({"command": "RunElements", "payload": {"batchExecution": {
        "batchName": "Reschedule by hand", "user": "tester",
        "elementList": [{"elementType": "S", "elementId": 920}]}}});
    let (st, v) = post(&w.url, body.to_string().into_bytes());
    assert_eq!(st, 200, "{v}");
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    let wait = json!({"command": "WaitBatchInstance",
        "payload": {"batchInstanceId": id, "timeoutSeconds": 30}});
    let (_, v) = post(&w.url, wait.to_string().into_bytes());
    assert_eq!(v["payload"]["state"], "finished", "{v}");
    assert_eq!(v["payload"]["actions"][0]["state"], "F", "{v}");
    assert_eq!(start_dt(&w, 2), format!("{d2} 22:00:00"));

    // 22:00 of the eve passes without a night run.
    let w = restart(w, &format!("{d1} 21:59:57"));
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(
        runs(&w, 2).len(),
        1,
        "the night batch ran on the night of the change"
    );
    assert_eq!(start_dt(&w, 2), format!("{d2} 22:00:00"));

    // The day of the change: Reschedule moves nothing any more.
    let w = restart(w, &format!("{d2} 18:59:57"));
    wait_for("Reschedule on the day of the change", || {
        runs(&w, 1).len() == 3
    });
    assert_eq!(start_dt(&w, 2), format!("{d2} 22:00:00"));

    // The night batch runs at its new time, on time, and goes on at 22:00.
    let w = restart(w, &format!("{d2} 21:59:57"));
    wait_for("the shifted night run", || runs(&w, 2).len() == 2);
    let (planned, late) = runs(&w, 2)[1].clone();
    assert_eq!(planned, format!("{d2} 22:00:00"));
    assert!(late < 60, "late by {late} s");
    assert_eq!(start_dt(&w, 2), format!("{d3} 22:00:00"));
    let log = common::actions::rows(
        &w.home.path().join("data.db"),
        "SELECT planned, substr(ran_at, 1, 16) FROM night_log ORDER BY rowid",
    );
    assert_eq!(
        log,
        vec![format!("{d0}|{d0} 22:00"), format!("{d2}|{d2} 22:00")]
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
    // Ten seconds before 22:00, so that the deploy comes before it even on a slow machine.
    let w = start(tempfile::tempdir().expect("home"), "2026-11-22 21:59:50");
    add_data_connection(&w);
    // A slow action: the server is killed while it runs.
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 5, "path": "/slow"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [{"id": 50, "attributes": {"name": "slow", "folder_id": 5, "folder": "/slow"},
          "nodes": [
            {"id": 51, "type": 0, "attributes": {"module": "Sql", "name": "slow",
              "action": "CREATE TABLE IF NOT EXISTS slow (n INTEGER); INSERT INTO slow SELECT COUNT(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000000) SELECT x FROM c)"}},
            {"id": 52, "type": 1, "attributes": {"field1": "slow", "objectTypeId": 1, "connectionId": 1}}],
          "edges": [{"id": 53, "from": 51, "to": 52}]}],
        "batches": [{"id": 3, "name": "slow night", "schedule": "daily 22:00",
          "elements": [{"elementType": "S", "elementId": 50}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    assert_eq!(start_dt(&w, 3), "2026-11-22 22:00:00");
    let running = |w: &Weft| -> i64 {
        repo(w)
            .query_row(
                "SELECT COUNT(*) FROM batch_instances WHERE batch_id = 3 AND state = 'running'",
                [],
                |r| r.get(0),
            )
            .expect("count")
    };
    wait_for("the scheduled run to start", || running(&w) == 1);
    // The next planned start was written with the instance.
    assert_eq!(start_dt(&w, 3), "2026-11-23 22:00:00");
    let w = restart(w, "2026-11-22 22:00:30");
    std::thread::sleep(Duration::from_secs(3));
    let all = |w: &Weft| -> Vec<(String, String)> {
        let c = repo(w);
        let mut st = c
            .prepare(
                "SELECT planned_start, state FROM batch_instances WHERE batch_id = 3 ORDER BY id",
            )
            .expect("prepare");
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    };
    // Interrupted, not started again; the next start is still there.
    assert_eq!(
        all(&w),
        vec![("2026-11-22 22:00:00".to_owned(), "interrupted".to_owned())]
    );
    assert_eq!(start_dt(&w, 3), "2026-11-23 22:00:00");
    // And it comes, once.
    let w = restart(w, "2026-11-23 21:59:58");
    wait_for("the next night's run", || all(&w).len() == 2);
    std::thread::sleep(Duration::from_secs(2));
    let runs = all(&w);
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[1].0, "2026-11-23 22:00:00");
    // ListBatchInstances says which runs were scheduled, and for when.
    let body = json!({"command": "ListBatchInstances", "payload": {"limit": 5}});
    let (st, v) = post(&w.url, body.to_string().into_bytes());
    assert_eq!(st, 200, "{v}");
    let newest = &v["payload"]["instances"][0];
    assert_eq!(newest["batchId"], 3, "{v}");
    assert_eq!(newest["plannedStart"], "2026-11-23 22:00:00", "{v}");
    assert_eq!(newest["late"], false, "{v}");
    assert_eq!(newest["user"], "scheduler", "{v}");
    assert_eq!(start_dt(&w, 3), "2026-11-24 22:00:00");
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

    // --fake-now outside a development environment: refused, with the reason.
    let out = std::process::Command::new(weft_bin())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--environment",
            "production",
        ])
        .args(["--fake-now", "2026-10-24 19:00", "--home"])
        .arg(tempfile::tempdir().expect("home").path())
        .output()
        .expect("weft serve");
    assert!(!out.status.success());
    assert!(
        text(&out)
            .1
            .contains("--fake-now is for development environments only"),
        "{:?}",
        text(&out)
    );
}
