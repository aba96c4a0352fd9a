//! The executor on a real repository and a real SQLite data file: instances waiting for a
//! slot and their bound, ends the repository cannot record at once, and actions a stopped
//! host left running, settled by their commit markers (fenced: the old host's late end
//! changes nothing).

use super::*;
use std::time::{Duration, Instant};
use weft_core::connect::sqlite::testing::{WriteLock, execute, rows};
use weft_repo::model::{ActionState, InstanceRow, InstanceState};

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
    let home = crate::testing::home(limit, options, &doc);
    execute(&home.data(), "CREATE TABLE t (n INTEGER);");
    Env {
        dir: home.dir,
        exec: home.exec,
    }
}

impl Env {
    fn start(&self) -> Result<i64, StartError> {
        self.exec.start(RunRequest {
            held: Vec::new(),
            exclusion: weft_repo::model::Exclusion::None,
            batch_name: "b".into(),
            user: "u".into(),
            elements: vec![Element { kind: 'S', id: 50 }],
            variables: Vec::new(),
            select: weft_protocol::Selection::Named,
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

    /// Waits until the first action of instance `id` runs here: shown running in the
    /// repository and holding its slot on this host.
    fn running_here(&self, id: i64) {
        self.until(id, "running", |r| {
            r.actions[0].state == ActionState::Running
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.exec.running() == 0 {
            assert!(Instant::now() < deadline, "no slot taken for {id}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Starts a run whose action waits for the data file's lock, fills the repository's
    /// disk while it runs, then lets the action commit: its end cannot be recorded.
    /// Answers the instance.
    fn run_into_a_full_disk(&self) -> i64 {
        let lock = self.lock_data();
        let id = self.start().expect("start");
        self.running_here(id);
        self.exec.repo().fill_disk(true);
        drop(lock);
        id
    }

    fn instances(&self) -> i64 {
        weft_repo::sqlite::testing::rows(self.exec.repo(), "SELECT COUNT(*) FROM batch_instances")
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
    env.running_here(a);
    let b = env.start().expect("second waits");
    assert_eq!(env.get(b).summary.state, InstanceState::Waiting);
    assert_eq!(env.exec.running(), 1, "one action runs");
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
    env.running_here(a);
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
    assert_eq!(
        env.exec
            .restart(b, weft_repo::model::Definitions::Current, &[])
            .expect("restart"),
        1
    );
    env.until(b, "restarted and finished", |r| {
        r.summary.state == InstanceState::Finished
    });
    assert_eq!(env.rows(), 2);
}

/// A second executor on the same files, as a server started after a kill would be: its own
/// repository handle and host id, not yet claiming work.
fn restarted_server(env: &Env) -> Arc<Executor> {
    let dir = env.dir.path();
    let repo = Arc::new(Repository::open(&dir.join("repository.db")).expect("open"));
    let kf = weft_core::keys::KeyFile::load(&weft_core::keys::KeyFile::path_in(dir)).expect("keys");
    let keys = Arc::new(KeyStore::new(weft_core::keys::KeyFile::path_in(dir), kf));
    let registry = Arc::new(weft_core::plugins::load_test_registry());
    Executor::paused(repo, registry, Some(keys), 1, "restarted".to_owned())
}

#[test]
fn an_end_that_cannot_be_recorded_is_tried_again_until_it_is() {
    let env = env(1);
    env.exec.set_write_patience(Duration::from_millis(50));
    let id = env.run_into_a_full_disk();
    let deadline = Instant::now() + Duration::from_secs(30);
    while env.rows() == 0 {
        assert!(
            Instant::now() < deadline,
            "the action never committed: {:?}",
            env.get(id)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Past the patience: the end is still held, not given up.
    match env.exec.halt(id) {
        Err(StartError::Repo(e)) => assert_eq!(e.fault(), weft_repo::Fault::Full, "{e}"),
        other => panic!("halt says the disk is full: {other:?}"),
    }
    assert_eq!(
        env.exec.running(),
        1,
        "its slot is held until the end is recorded"
    );
    env.exec.repo().fill_disk(false);
    env.until(id, "finished", |r| {
        r.summary.state == InstanceState::Finished
    });
    let row = env.get(id);
    assert_eq!(row.actions[0].state, ActionState::Finished, "{row:?}");
    assert_eq!(
        row.actions[0].rows_written, 1,
        "its counts were kept: {row:?}"
    );
    assert_eq!(env.rows(), 1, "the row once");
}

#[test]
fn an_action_committed_before_a_kill_is_finished_by_its_marker_and_the_old_end_is_fenced() {
    let env = env(1);
    // The first server's action commits, but its end cannot be recorded (its repository's
    // disk is full): as if it were killed right after the commit.
    let id = env.run_into_a_full_disk();
    let deadline = Instant::now() + Duration::from_secs(30);
    while env.rows() == 0 {
        assert!(
            Instant::now() < deadline,
            "the action never committed: {:?}",
            env.get(id)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let next = restarted_server(&env);
    let interrupted = next.recover().expect("recover");
    assert_eq!(interrupted, vec![id]);
    let row = next.repo().instance(id).expect("read").expect("instance");
    assert_eq!(row.actions[0].state, ActionState::Finished, "{row:?}");
    assert_eq!(row.summary.state, InstanceState::Finished, "{row:?}");
    assert!(
        row.actions[0]
            .log
            .iter()
            .any(|l| l.contains("commit marker was found")),
        "{row:?}"
    );
    // The first server's end arrives late: it no longer owns the action, nothing changes.
    env.exec.repo().fill_disk(false);
    let deadline = Instant::now() + Duration::from_secs(30);
    while env.exec.running() > 0 {
        assert!(
            Instant::now() < deadline,
            "the old end was never tried again"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let after = env.get(id);
    assert_eq!(after.actions[0].state, ActionState::Finished);
    assert_eq!(
        after.actions[0].rows_written, 0,
        "the late end was not recorded: {after:?}"
    );
    assert_eq!(env.rows(), 1, "the row once");
    assert_eq!(
        next.restart(id, weft_repo::model::Definitions::Current, &[])
            .map_err(|e| e.to_string())
            .expect_err("finished"),
        format!("batch instance {id} finished; there is nothing to run again")
    );
}

#[test]
fn an_action_that_ran_without_a_marker_is_reported_as_maybe_committed() {
    let env = env_with(1, vec![("weft.commit_marker".to_owned(), "off".to_owned())]);
    let lock = env.lock_data();
    let id = env.start().expect("start");
    // Claimed (`R`) first, then its thread records the connections it writes unmarked
    // before it begins (and it cannot commit while the test holds the file).
    env.until(id, "running, its unmarked connections recorded", |r| {
        r.actions[0].state == ActionState::Running && !r.actions[0].unmarked.is_empty()
    });
    assert_eq!(
        env.get(id).actions[0].unmarked,
        vec![1],
        "recorded before the action began"
    );
    // The server is gone (as after a kill) while the action still runs; the next one
    // settles it.
    let next = restarted_server(&env);
    assert_eq!(next.recover().expect("recover"), vec![id]);
    let row = env.get(id);
    assert_eq!(row.actions[0].state, ActionState::Error, "{row:?}");
    assert_eq!(row.summary.state, InstanceState::Interrupted, "{row:?}");
    let error = row.actions[0].error.clone().unwrap_or_default();
    assert!(
        error.contains("interrupted by a server stop")
            && error.contains("without a commit marker")
            && error.contains("may have committed"),
        "{error}"
    );
    drop(lock);
    let deadline = Instant::now() + Duration::from_secs(30);
    while env.exec.running() > 0 {
        assert!(Instant::now() < deadline, "the old action never ended");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(env.rows(), 1, "it did commit: at-least-once");
    assert_eq!(env.get(id).actions[0].state, ActionState::Error, "fenced");
}

#[test]
fn a_host_taking_over_runs_again_what_did_not_commit_and_the_instance_goes_on() {
    let env = env(1);
    // The marker table exists (an earlier run made it), so that the new host can look for
    // the marker while the first host's action still waits for the file's write lock.
    execute(
        &env.data(),
        "CREATE TABLE weft_commit_marker (token VARCHAR(120) NOT NULL PRIMARY KEY, committed_at VARCHAR(20) NOT NULL)",
    );
    let lock = env.lock_data();
    let id = env.start().expect("start");
    env.until(id, "running", |r| {
        r.actions[0].state == ActionState::Running
    });
    // Another host takes over (lease 0: the first host counts as silent) while the first
    // one's action still waits for the file: no marker, so it runs again on the new host.
    let next = restarted_server(&env);
    next.register().expect("register");
    assert_eq!(next.take_over(Duration::ZERO).expect("take over"), 1);
    let row = env.get(id);
    assert_eq!(row.actions[0].state, ActionState::Waiting, "{row:?}");
    assert!(
        row.actions[0]
            .log
            .iter()
            .any(|l| l.contains("no commit marker")),
        "{row:?}"
    );
    // The first host finds that it lost its lease: its action stops, rolled back, and its
    // end is not recorded (the action is no longer its own). It claims nothing more here.
    env.exec.pause();
    env.exec.abandon_all_here();
    let deadline = Instant::now() + Duration::from_secs(30);
    while env.exec.running() > 0 {
        assert!(Instant::now() < deadline, "the old action never stopped");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(env.get(id).actions[0].state, ActionState::Waiting, "fenced");
    next.open().expect("open");
    drop(lock);
    env.until(id, "finished", |r| {
        r.summary.state == InstanceState::Finished
    });
    let row = env.get(id);
    assert_eq!(row.actions[0].attempt, 2, "{row:?}");
    assert_eq!(env.rows(), 1, "the row once");
}

#[test]
fn a_paused_host_claims_nothing_new_and_its_running_actions_end_and_are_recorded() {
    let env = env(2);
    let lock = env.lock_data();
    let a = env.start().expect("first");
    env.running_here(a);
    // Stopping, as a server told to stop: nothing new is claimed.
    env.exec.pause();
    let b = env.start().expect("stored");
    assert_eq!(
        env.exec.wait_idle(Duration::ZERO),
        1,
        "one action still runs"
    );
    drop(lock);
    assert_eq!(env.exec.wait_idle(Duration::from_secs(30)), 0);
    let row = env.get(a);
    assert_eq!(
        row.summary.state,
        InstanceState::Finished,
        "recorded before idle: {row:?}"
    );
    let waiting = env.get(b);
    assert_eq!(waiting.summary.state, InstanceState::Waiting, "{waiting:?}");
    assert_eq!(waiting.actions[0].state, ActionState::Waiting);
    // Opened again, it claims what waits.
    env.exec.open().expect("open");
    env.until(b, "finished", |r| {
        r.summary.state == InstanceState::Finished
    });
    assert_eq!(env.rows(), 2);
}

#[test]
fn a_marker_table_dropped_or_a_file_replaced_after_the_first_run_is_made_again_in_the_action() {
    let env = env(1);
    let markers = |env: &Env| -> i64 {
        rows(&env.data(), "SELECT COUNT(*) FROM weft_commit_marker")[0]
            .parse()
            .expect("count")
    };
    let a = env.start().expect("first");
    env.until(a, "finished", |r| {
        r.summary.state == InstanceState::Finished
    });
    assert_eq!(markers(&env), 1);
    // The server knows the table now; someone drops it.
    execute(&env.data(), "DROP TABLE weft_commit_marker;");
    let b = env.start().expect("second");
    env.until(b, "finished", |r| {
        r.summary.state == InstanceState::Finished
    });
    assert_eq!(markers(&env), 1, "made again, with the second run's marker");
    // The file replaced under its name by one without the table.
    let fresh = env.dir.path().join("fresh.db");
    execute(&fresh, "CREATE TABLE t (n INTEGER);");
    std::fs::rename(&fresh, env.data()).expect("replace");
    let c = env.start().expect("third");
    env.until(c, "finished", |r| {
        r.summary.state == InstanceState::Finished
    });
    assert_eq!(markers(&env), 1);
    assert_eq!(env.rows(), 1, "the new file's one row");
}

#[test]
fn a_run_after_a_redeploy_runs_the_new_definition() {
    // The repository keeps a sheet's plans parsed between runs: a redeploy must show.
    let env = env(1);
    let a = env.start().expect("first");
    env.until(a, "finished", |r| {
        r.summary.state == InstanceState::Finished
    });
    crate::testing::deploy(
        &env.exec,
        &serde_json::json!({"version": 1, "transformationData": {
        "sheets": [{"id": 50, "attributes": {"name": "s", "folder_id": 5, "folder": "/s"},
          "nodes": [{"id": 51, "type": 0, "attributes": {"module": "Sql", "name": "s",
              "action": "INSERT INTO t VALUES (2)"}},
            {"id": 52, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 1}}],
          "edges": [{"id": 53, "from": 51, "to": 52}]}]}})
        .to_string(),
    );
    let b = env.start().expect("second");
    env.until(b, "finished", |r| {
        r.summary.state == InstanceState::Finished
    });
    assert_eq!(
        rows(&env.data(), "SELECT n FROM t ORDER BY n"),
        ["1", "2"],
        "the second run ran the redeployed statement"
    );
}

#[test]
fn an_end_that_makes_several_ready_fills_the_free_slots_at_once() {
    // 1 writes t; 2, 3 and 4 read it. 2 runs long: while it does, 3 and 4 must take the
    // free slots at once (the end of 1 claims one of them for its own slot and rings the
    // worker for the rest), not after the worker's next look, which is an hour away here,
    // nor one after the other on 1's slot.
    let slow = "INSERT INTO u SELECT COUNT(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT x FROM c)";
    let action = |id: i64, sql: &str| serde_json::json!({"id": id, "type": 0, "attributes": {"module": "Sql", "name": format!("a{id}"), "action": sql}});
    let object = |id: i64, table: &str| serde_json::json!({"id": id, "type": 1, "attributes": {"field1": table, "objectTypeId": 1, "connectionId": 1}});
    let edge = |id: i64, from: i64, to: i64| serde_json::json!({"id": id, "from": from, "to": to});
    let doc = serde_json::json!({"version": 1, "transformationData": {
        "folders": [{"id": 5, "path": "/s"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [{"id": 50, "attributes": {"name": "s", "folder_id": 5, "folder": "/s"},
          "nodes": [action(51, "INSERT INTO t VALUES (1)"), object(52, "t"),
            action(53, slow), object(54, "u"),
            action(55, "INSERT INTO v SELECT n FROM t"), object(56, "v"),
            action(57, "INSERT INTO w SELECT n FROM t"), object(58, "w")],
          "edges": [edge(60, 51, 52), edge(61, 52, 53), edge(62, 53, 54), edge(63, 52, 55),
            edge(64, 55, 56), edge(65, 52, 57), edge(66, 57, 58)]}]}})
    .to_string();
    let home = crate::testing::home(4, Vec::new(), &doc);
    execute(
        &home.data(),
        "CREATE TABLE t (n INTEGER); CREATE TABLE u (n INTEGER); CREATE TABLE v (n INTEGER); CREATE TABLE w (n INTEGER);",
    );
    let env = Env {
        dir: home.dir,
        exec: home.exec,
    };
    env.exec
        .poll_ms
        .store(3_600_000, std::sync::atomic::Ordering::SeqCst);
    env.exec.open().expect("open");
    let id = env.start().expect("start");
    env.until(id, "finished", |r| {
        r.summary.state == InstanceState::Finished
    });
    // They wait for 2's lock on the file, but they were claimed and started while it ran.
    let row = env.get(id);
    let at = |a: i64, end: bool| {
        let x = row
            .actions
            .iter()
            .find(|x| x.action_id == a)
            .expect("action");
        if end { x.end.clone() } else { x.start.clone() }.expect("a time")
    };
    for a in [55, 57] {
        assert!(
            at(a, false) < at(53, true),
            "action {a} started only after 2 ended: {row:?}"
        );
    }
}
