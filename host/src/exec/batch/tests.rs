//! The executor on a real repository and a real SQLite data file: the queue of waiting
//! instances, its bound, and instances whose states the repository could not record.

use super::*;
use crate::connect::sqlite::testing::{WriteLock, execute, rows};
use std::time::{Duration, Instant};

struct Env {
    dir: tempfile::TempDir,
    exec: Arc<Executor>,
}

/// A repository with sheet 50, whose one action (51) inserts a row into `t` of the data
/// file (connection 1); the executor runs at most `limit` actions at once.
fn env(limit: usize) -> Env {
    env_with(limit, Vec::new())
}

/// [`env`] with options on connection 1's key file entry.
fn env_with(limit: usize, options: Vec<(String, String)>) -> Env {
    let doc = serde_json::json!({"version": 1, "transformationData": {
        "folders": [{"id": 5, "path": "/s"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [{"id": 50, "attributes": {"name": "s", "folder_id": 5, "folder": "/s"},
          "nodes": [{"id": 51, "type": 0, "attributes": {"module": "Sql", "name": "s",
              "action": "INSERT INTO t VALUES (1)"}},
            {"id": 52, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 1}}],
          "edges": [{"id": 53, "from": 51, "to": 52}]}]}})
    .to_string();
    let home = crate::exec::testing::home(limit, options, &doc);
    execute(&home.data(), "CREATE TABLE t (n INTEGER);");
    Env {
        dir: home.dir,
        exec: home.exec,
    }
}

impl Env {
    fn start(&self) -> Result<i64, StartError> {
        self.exec.start(RunRequest {
            batch_name: "b".into(),
            user: "u".into(),
            elements: vec![Element { kind: 'S', id: 50 }],
            variables: Vec::new(),
        })
    }

    fn data(&self) -> std::path::PathBuf {
        self.dir.path().join("data.db")
    }

    /// Holds the data file's write lock: actions block on it until it is dropped.
    fn lock_data(&self) -> WriteLock {
        WriteLock::take(&self.data())
    }

    fn rows(&self) -> i64 {
        rows(&self.data(), "SELECT COUNT(*) FROM t")[0]
            .parse()
            .expect("count")
    }

    fn get(&self, id: i64) -> InstanceRow {
        self.exec
            .repo()
            .instance(id)
            .expect("read")
            .expect("instance")
    }

    /// Waits until `done` holds for instance `id`.
    fn until(&self, id: i64, what: &str, done: impl Fn(&InstanceRow) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let row = self.get(id);
            if done(&row) {
                return;
            }
            assert!(Instant::now() < deadline, "{what}: {row:?}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Starts a run whose action waits for the data file's lock, fills the repository's
    /// disk while it runs, then lets the action commit: its end cannot be recorded.
    /// Answers the instance.
    fn run_into_a_full_disk(&self) -> i64 {
        let lock = self.lock_data();
        let id = self.start().expect("start");
        self.until(id, "running", |r| {
            r.actions[0].state == ActionState::Running
        });
        self.exec.repo().fill_disk(true);
        drop(lock);
        id
    }

    /// Waits until no coordinator runs (the one of a stranded instance gave up).
    fn until_no_coordinator(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.exec.load().1 > 0 {
            assert!(Instant::now() < deadline, "the coordinator never gave up");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn instances(&self) -> i64 {
        crate::repo::sqlite::testing::rows(self.exec.repo(), "SELECT COUNT(*) FROM batch_instances")
            [0]
        .parse()
        .expect("count")
    }
}

#[test]
fn instances_beyond_the_limit_wait_and_a_full_queue_refuses_the_next() {
    let env = env(1);
    env.exec.set_max_waiting(1);
    let lock = env.lock_data();
    let a = env.start().expect("first");
    env.until(a, "running", |r| r.actions[0].state == ActionState::Running);
    let b = env.start().expect("second waits");
    assert_eq!(env.get(b).summary.state, InstanceState::Waiting);
    assert_eq!(env.exec.load(), (1, 1), "one waiting, one coordinator");
    match env.start() {
        Err(StartError::Busy(m)) => assert!(m.contains("max_waiting_instances"), "{m}"),
        other => panic!("a third is refused while one waits: {other:?}"),
    }
    assert_eq!(env.instances(), 2, "the refused run stored nothing");
    drop(lock);
    env.until(b, "the waiting one ran", |r| {
        r.summary.state == InstanceState::Finished
    });
    assert_eq!(env.get(a).summary.state, InstanceState::Finished);
    assert_eq!(env.rows(), 2);
}

#[test]
fn a_waiting_instance_is_halted_at_once_and_never_runs() {
    let env = env(1);
    let lock = env.lock_data();
    let a = env.start().expect("first");
    env.until(a, "running", |r| r.actions[0].state == ActionState::Running);
    let b = env.start().expect("second waits");
    env.exec.halt(b).expect("halt the waiting one");
    let row = env.get(b);
    assert_eq!(row.summary.state, InstanceState::Halted, "{row:?}");
    assert_eq!(row.actions[0].state, ActionState::Halted);
    drop(lock);
    env.until(a, "the first finished", |r| {
        r.summary.state == InstanceState::Finished
    });
    assert_eq!(env.rows(), 1, "the halted one never ran");
    assert_eq!(env.exec.restart(b).expect("restart"), 1);
    env.until(b, "restarted and finished", |r| {
        r.summary.state == InstanceState::Finished
    });
    assert_eq!(env.rows(), 2);
}

#[test]
fn an_instance_whose_states_cannot_be_recorded_is_settled_by_halt_and_restart() {
    let env = env(1);
    env.exec.set_write_patience(Duration::from_millis(100));
    // The disk fills while the action runs: its end cannot be recorded, nor anything else.
    let id = env.run_into_a_full_disk();
    env.until_no_coordinator();
    assert_eq!(env.rows(), 1, "the action committed its row");
    match env.exec.halt(id) {
        Err(StartError::Repo(e)) => assert_eq!(e.fault(), crate::repo::Fault::Full, "{e}"),
        other => panic!("halt says the disk is full: {other:?}"),
    }
    match env.exec.restart(id) {
        Err(StartError::Repo(e)) => assert_eq!(e.fault(), crate::repo::Fault::Full, "{e}"),
        other => panic!("restart says the disk is full: {other:?}"),
    }
    // Space is back, no server restart: halt settles the action by its commit marker.
    env.exec.repo().fill_disk(false);
    let row = env.get(id);
    assert_eq!(
        row.summary.state,
        InstanceState::Running,
        "nothing was recorded: {row:?}"
    );
    env.exec.halt(id).expect("halt");
    let row = env.get(id);
    assert_eq!(row.summary.state, InstanceState::Halted, "{row:?}");
    assert_eq!(
        row.actions[0].state,
        ActionState::Finished,
        "its marker was found: {row:?}"
    );
    assert!(
        row.actions[0]
            .log
            .iter()
            .any(|l| l.contains("commit marker was found")),
        "{row:?}"
    );
    assert_eq!(
        env.exec.restart(id).expect("restart"),
        0,
        "nothing to run again"
    );
    env.until(id, "finished", |r| {
        r.summary.state == InstanceState::Finished
    });
    assert_eq!(env.rows(), 1, "the row once");
}

#[test]
fn a_repository_that_recovers_while_a_run_tries_again_loses_nothing() {
    let env = env(1);
    env.exec.set_write_patience(Duration::from_millis(300));
    let id = env.run_into_a_full_disk();
    // The end of the action cannot be recorded; space comes back while the coordinator
    // still tries: then it records what it knows.
    let deadline = Instant::now() + Duration::from_secs(30);
    while env.rows() == 0 {
        assert!(Instant::now() < deadline, "the action never committed");
        std::thread::sleep(Duration::from_millis(5));
    }
    env.exec.repo().fill_disk(false);
    env.until(id, "finished", |r| {
        r.summary.state == InstanceState::Finished
    });
    assert_eq!(env.get(id).actions[0].state, ActionState::Finished);
    assert_eq!(env.rows(), 1);
}

#[test]
fn an_action_that_ran_without_a_marker_is_reported_as_maybe_committed() {
    let env = env_with(1, vec![("weft.commit_marker".to_owned(), "off".to_owned())]);
    env.exec.set_write_patience(Duration::from_millis(100));
    let lock = env.lock_data();
    let id = env.start().expect("start");
    env.until(id, "running", |r| {
        r.actions[0].state == ActionState::Running
    });
    assert_eq!(
        env.get(id).actions[0].unmarked,
        vec![1],
        "recorded before the action began"
    );
    env.exec.repo().fill_disk(true);
    drop(lock);
    env.until_no_coordinator();
    env.exec.repo().fill_disk(false);
    env.exec.halt(id).expect("halt");
    let row = env.get(id);
    assert_eq!(row.actions[0].state, ActionState::Error, "{row:?}");
    let error = row.actions[0].error.clone().unwrap_or_default();
    assert!(
        error.contains("without a commit marker") && error.contains("may have committed"),
        "{error}"
    );
    assert_eq!(env.rows(), 1, "it did commit: at-least-once");
}
