//! The scheduler's decisions on a real repository and this executor (its `Starter`), at
//! chosen instants.

use crate::exec::batch::Executor;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use std::sync::Arc;
use weft_core::sched::scheduler::{next_runs, tick};
use weft_repo::sqlite::testing::{execute, rows};

struct Env {
    _dir: tempfile::TempDir,
    exec: Arc<Executor>,
}

const BERLIN: Tz = chrono_tz::Europe::Berlin;

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .expect("rfc3339")
        .with_timezone(&Utc)
}

/// A repository with a one-action sheet (a quick Sql on a data file) and batch 5 `daily
/// 22:00` deployed as `extra` says, planned for 2026-11-20 22:00.
fn env(extra: &str) -> Env {
    let doc = serde_json::json!({"version": 1, "transformationData": {
        "folders": [{"id": 5, "path": "/s"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [{"id": 50, "attributes": {"name": "s", "folder_id": 5, "folder": "/s"},
          "nodes": [{"id": 51, "type": 0, "attributes": {"module": "Sql", "name": "s",
              "action": "CREATE TABLE IF NOT EXISTS t (d TEXT); INSERT INTO t VALUES ('${schedule_date}')"}},
            {"id": 52, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 1}}],
          "edges": [{"id": 53, "from": 51, "to": 52}]}],
        "batches": [{"id": 5, "name": "nightly", "schedule": "daily 22:00",
          "elements": [{"elementType": "S", "elementId": 50}]}]}})
    .to_string()
    .replacen("}]}}", &format!("{extra}}}]}}}}"), 1);
    let home = crate::testing::home(2, Vec::new(), &doc);
    let (dir, exec) = (home.dir, home.exec);
    let repo = Arc::clone(exec.repo());
    execute(
        &repo,
        "UPDATE service_batch_next_run SET start_dt = '2026-11-20 22:00:00' WHERE batch_id = 5",
    );
    Env { _dir: dir, exec }
}

impl Env {
    fn start_dt(&self) -> String {
        rows(
            self.exec.repo(),
            "SELECT start_dt FROM service_batch_next_run WHERE batch_id = 5",
        )
        .concat()
    }

    fn instances(&self) -> Vec<(Option<String>, Option<i64>, String)> {
        let given = |cell: &str| (cell != "NULL").then(|| cell.to_owned());
        rows(
            self.exec.repo(),
            "SELECT planned_start, late_seconds, user_name FROM batch_instances WHERE batch_id = 5 ORDER BY id",
        )
        .iter()
        .map(|row| {
            let cells: Vec<&str> = row.split('|').collect();
            (
                given(cells[0]),
                given(cells[1]).map(|n| n.parse().expect("late_seconds")),
                cells[2].to_owned(),
            )
        })
        .collect()
    }

    fn wait_idle(&self) {
        for _ in 0..200 {
            let running = rows(
                self.exec.repo(),
                "SELECT COUNT(*) FROM batch_instances WHERE state IN ('running', 'waiting')",
            );
            if running == ["0"] {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("the run did not end");
    }
}

#[test]
fn a_due_batch_starts_once_and_its_next_start_is_written() {
    let e = env("");
    // 21:59:59 Berlin: not yet.
    let t = tick(&e.exec, BERLIN, utc("2026-11-20T20:59:59Z")).expect("tick");
    assert!(t.started.is_empty());
    assert_eq!(t.looked_at, 1);
    let t = tick(&e.exec, BERLIN, utc("2026-11-20T21:00:00Z")).expect("tick");
    assert_eq!(t.started.len(), 1);
    assert_eq!(e.start_dt(), "2026-11-21 22:00:00");
    // The same instant again: nothing more.
    let t = tick(&e.exec, BERLIN, utc("2026-11-20T21:00:00Z")).expect("tick");
    assert!(t.started.is_empty());
    e.wait_idle();
    assert_eq!(
        e.instances(),
        vec![(
            Some("2026-11-20 22:00:00".to_owned()),
            Some(0),
            "scheduler".to_owned()
        )]
    );
}

#[test]
fn after_a_downtime_the_missed_start_runs_once_late() {
    let e = env("");
    // Back three days later at 10:00.
    let t = tick(&e.exec, BERLIN, utc("2026-11-23T09:00:00Z")).expect("tick");
    assert_eq!(t.started.len(), 1);
    let t = tick(&e.exec, BERLIN, utc("2026-11-23T09:00:01Z")).expect("tick");
    assert!(t.started.is_empty(), "missed days are not repeated");
    assert_eq!(e.start_dt(), "2026-11-23 22:00:00");
    e.wait_idle();
    let runs = e.instances();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].0.as_deref(), Some("2026-11-20 22:00:00"));
    assert_eq!(runs[0].1, Some(2 * 86_400 + 12 * 3600));
    // The run's schedule_date is the planned day.
    let day = weft_core::connect::sqlite::testing::rows(
        &e._dir.path().join("data.db"),
        "SELECT d FROM t",
    );
    assert_eq!(day, ["2026-11-20"]);
}

fn fake_running_instance(e: &Env) {
    execute(
        e.exec.repo(),
        "INSERT INTO batch_instances (batch_name, user_name, state, started_at, elements, variables, batch_id) VALUES ('nightly', 'scheduler', 'running', '2026-11-19 21:00:00', '[]', '[]', 5)",
    );
}

#[test]
fn a_batch_still_running_is_skipped_or_waited_for_as_it_says() {
    let e = env("");
    fake_running_instance(&e);
    let t = tick(&e.exec, BERLIN, utc("2026-11-20T21:00:05Z")).expect("tick");
    assert_eq!((t.started.len(), t.passed.clone()), (0, vec![5]));
    assert_eq!(e.start_dt(), "2026-11-21 22:00:00");

    let e = env(", \"ifRunning\": \"wait\"");
    fake_running_instance(&e);
    let t = tick(&e.exec, BERLIN, utc("2026-11-20T21:00:05Z")).expect("tick");
    assert_eq!(t.waiting, vec![5]);
    assert_eq!(e.start_dt(), "2026-11-20 22:00:00", "a waiting start stays");
    // The previous run ends; the waiting start goes, late.
    execute(
        e.exec.repo(),
        "UPDATE batch_instances SET state = 'finished' WHERE batch_id = 5",
    );
    let t = tick(&e.exec, BERLIN, utc("2026-11-20T21:10:00Z")).expect("tick");
    assert_eq!(t.started.len(), 1);
    e.wait_idle();
    let late = e.instances().last().and_then(|r| r.1);
    assert_eq!(late, Some(600));
}

#[test]
fn a_disabled_batch_lets_its_starts_pass() {
    let e = env(", \"enabled\": false");
    let t = tick(&e.exec, BERLIN, utc("2026-11-20T21:00:00Z")).expect("tick");
    assert_eq!((t.started.len(), t.passed.clone()), (0, vec![5]));
    assert_eq!(e.start_dt(), "2026-11-21 22:00:00");
    assert!(e.instances().is_empty());
}

#[test]
fn a_start_dt_written_by_hand_is_honoured_at_the_next_tick() {
    let e = env("");
    execute(
        e.exec.repo(),
        "UPDATE service_batch_next_run SET start_dt = '2026-11-21 22:00:00' WHERE batch_id = 5",
    );
    let t = tick(&e.exec, BERLIN, utc("2026-11-20T21:00:00Z")).expect("tick");
    assert!(t.started.is_empty());
    let t = tick(&e.exec, BERLIN, utc("2026-11-21T21:00:00Z")).expect("tick");
    assert_eq!(t.started.len(), 1);
    assert_eq!(e.start_dt(), "2026-11-22 22:00:00");
    // An unreadable start_dt is left alone, and the others go on.
    execute(
        e.exec.repo(),
        "UPDATE service_batch_next_run SET start_dt = 'tomorrow' WHERE batch_id = 5",
    );
    let t = tick(&e.exec, BERLIN, utc("2026-11-23T21:00:00Z")).expect("tick");
    assert!(t.started.is_empty());
    e.wait_idle();
}

#[test]
fn a_start_dt_written_with_a_t_or_long_gone_is_taken_and_goes_on_from_now() {
    let e = env("");
    execute(
        e.exec.repo(),
        "UPDATE service_batch_next_run SET start_dt = '2026-11-20T22:00:00' WHERE batch_id = 5",
    );
    let t = tick(&e.exec, BERLIN, utc("2026-11-20T21:00:01Z")).expect("tick");
    assert_eq!(t.started.len(), 1, "a `T` start_dt is read on time");
    assert_eq!(e.start_dt(), "2026-11-21 22:00:00");
    e.wait_idle();
    execute(
        e.exec.repo(),
        "UPDATE service_batch_next_run SET start_dt = '1900-01-01 22:00:00' WHERE batch_id = 5",
    );
    let t = tick(&e.exec, BERLIN, utc("2026-11-21T12:00:00Z")).expect("tick");
    assert_eq!(t.started.len(), 1, "a long-gone start runs once");
    assert_eq!(
        e.start_dt(),
        "2026-11-21 22:00:00",
        "and the schedule goes on"
    );
    e.wait_idle();
}

#[test]
fn a_busy_repository_keeps_the_start_for_the_next_tick() {
    let e = env("");
    // Another connection holds the repository's write lock for the whole tick, longer than
    // the (shortened) busy timeout.
    e.exec
        .repo()
        .set_busy_timeout(std::time::Duration::from_millis(50));
    let path = e.exec.repo().path().expect("a file").to_path_buf();
    let holder = weft_core::connect::sqlite::testing::WriteLock::take(&path);
    let first = tick(&e.exec, BERLIN, utc("2026-11-20T21:00:00Z"));
    drop(holder);
    assert!(
        first.map(|t| t.started.is_empty()).unwrap_or(true),
        "nothing started while the repository was busy"
    );
    assert_eq!(
        e.start_dt(),
        "2026-11-20 22:00:00",
        "the start was not passed over"
    );
    let t = tick(&e.exec, BERLIN, utc("2026-11-20T21:00:20Z")).expect("tick");
    assert_eq!(t.started.len(), 1);
    e.wait_idle();
}

#[test]
fn a_start_dt_that_is_not_a_timestamp_is_named_not_silent() {
    let e = env("");
    // What a hand-written UPDATE may leave: SQLite turns the text into a number.
    execute(
        e.exec.repo(),
        "UPDATE service_batch_next_run SET start_dt = start_dt + 1 WHERE batch_id = 5",
    );
    let t = tick(&e.exec, BERLIN, utc("2026-11-20T21:00:00Z")).expect("the tick goes on");
    assert!(t.started.is_empty());
    let runs = next_runs(&**e.exec.repo(), 5, 3, BERLIN)
        .expect("next runs")
        .expect("batch 5");
    let problem = runs.problem.clone().unwrap_or_default();
    assert!(
        problem.contains("start_dt `2027`") && problem.contains("YYYY-MM-DD HH:MM:SS"),
        "{runs:?}"
    );
    assert!(runs.starts.is_empty(), "{runs:?}");
    // Written right again, it runs.
    execute(
        e.exec.repo(),
        "UPDATE service_batch_next_run SET start_dt = '2026-11-20 22:00:00' WHERE batch_id = 5",
    );
    let t = tick(&e.exec, BERLIN, utc("2026-11-20T21:00:00Z")).expect("tick");
    assert_eq!(t.started.len(), 1);
}

#[test]
fn actions_no_longer_deployed_are_named_by_sheet_and_counted_past_ten() {
    use super::not_deployed;
    assert_eq!(not_deployed(&[(2, 7)]), "action 7 of sheet 2 is");
    assert_eq!(
        not_deployed(&[(2, 7), (3, 8), (3, 9), (3, 10)]),
        "action 7 of sheet 2, actions 8, 9 and 10 of sheet 3 are"
    );
    let many: Vec<(i64, i64)> = (1..=12).map(|a| (4, a)).collect();
    assert_eq!(
        not_deployed(&many),
        "actions 1, 2, 3, 4, 5, 6, 7, 8, 9 and 10 of sheet 4, 2 more are"
    );
}
