//! The decisions of [`super`] on an in-memory SQLite repository, without threads or files:
//! the order dependencies impose, the claim's limit, error skipping, halt, restart, fenced
//! ends and the takeover of a silent host.

use super::*;
use crate::instances;
use crate::model::{NewAction, NewInstance, Restarted};

fn repo() -> rusqlite::Connection {
    let mut conn = rusqlite::Connection::open_in_memory().expect("memory");
    crate::sqlite::migrations::to_latest(&mut conn).expect("schema");
    conn
}

/// An instance whose actions are `(id, depends_on)`.
fn instance(conn: &rusqlite::Connection, actions: &[(i64, &[i64])]) -> i64 {
    let new = new_instance(actions);
    store_plans(conn, &new);
    instances::create(conn, &new, None).expect("create")
}

/// Stores the plans `new` runs, as a deploy would: each of its sheets' at version 1.
fn store_plans(conn: &dyn Session, new: &NewInstance) {
    let mut sheets: std::collections::BTreeMap<i64, Vec<serde_json::Value>> = Default::default();
    for a in &new.actions {
        sheets
            .entry(a.sheet_id)
            .or_default()
            .push(serde_json::json!({"id": a.action_id,
            "name": a.name, "module": "Sql", "text": null, "attributes": [], "sources": [],
            "targets": []}));
    }
    for (sheet, plans) in sheets {
        conn.execute(
            "INSERT OR REPLACE INTO sheet_plans (sheet_id, version, plans) VALUES (?1, 1, ?2)",
            args![sheet, serde_json::Value::Array(plans).to_string()],
        )
        .expect("plans");
    }
}

/// A claimed action as the engine has it (its plan is not looked at here).
fn claimed(p: &Pinned) -> Claimed {
    Claimed {
        instance: p.instance,
        action: p.action,
        attempt: p.attempt,
        plan: Err("not read".to_owned()),
        unmarked: p.unmarked.clone(),
    }
}

/// A new instance whose actions are `(id, depends_on)`, not stored yet.
fn new_instance(actions: &[(i64, &[i64])]) -> NewInstance {
    NewInstance {
        batch_name: "b".to_owned(),
        user: "u".to_owned(),
        elements: Vec::new(),
        variables: Vec::new(),
        actions: actions
            .iter()
            .map(|(id, deps)| NewAction {
                action_id: *id,
                sheet_id: 1,
                name: format!("a{id}"),
                module: "Sql".to_owned(),
                plan_version: 1,
                depends_on: deps.to_vec(),
                held: false,
                priority: 0,
                retry: weft_core::plan::RetryPlan::default(),
            })
            .collect(),
        backfill: None,
        exclusion: crate::model::Exclusion::None,
    }
}

fn ids(claimed: &[Pinned]) -> Vec<i64> {
    claimed.iter().map(|c| c.action).collect()
}

fn actions(claimed: &[Claimed]) -> Vec<i64> {
    claimed.iter().map(|c| c.action).collect()
}

fn states(conn: &dyn Session, id: i64) -> Vec<(i64, String)> {
    conn.rows(
        "SELECT action_id, state FROM instance_actions WHERE instance_id = ?1 ORDER BY action_id",
        args![id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .expect("states")
}

fn state(conn: &rusqlite::Connection, id: i64) -> InstanceState {
    instances::state_of(conn, id)
        .expect("read")
        .expect("instance")
}

fn finished() -> ActionEnd<'static> {
    ActionEnd {
        error: None,
        halted: false,
        rows_read: 0,
        rows_written: 1,
        rows_updated: 0,
        rows_deleted: 0,
        log: &[],
        class: crate::model::FailureClass::Other,
        untouched: false,
    }
}

fn failed() -> ActionEnd<'static> {
    ActionEnd {
        error: Some("no such table"),
        ..finished()
    }
}

fn end_of(conn: &rusqlite::Connection, host: &str, c: &Pinned, how: &ActionEnd<'_>) -> Ended {
    end(conn, host, c.instance, c.action, c.attempt, how).expect("end")
}

#[test]
fn ready_actions_of_a_higher_priority_are_claimed_first_then_the_others_in_order() {
    let conn = repo();
    let mut new = new_instance(&[(1, &[]), (2, &[]), (3, &[]), (4, &[]), (5, &[])]);
    new.actions[2].priority = 5;
    new.actions[4].priority = 9;
    store_plans(&conn, &new);
    instances::create(&conn, &new, None).expect("create");
    let order: Vec<i64> = (0..5)
        .flat_map(|_| ids(&claim(&conn, "h", 1).expect("claim")))
        .collect();
    assert_eq!(
        order,
        [5, 3, 1, 2, 4],
        "9, then 5, then the rest oldest first"
    );
    assert!(claim(&conn, "h", 1).expect("claim").is_empty());
}

#[test]
fn dependents_become_ready_when_all_they_wait_for_finished_and_the_claim_keeps_its_limit() {
    let conn = repo();
    let id = instance(&conn, &[(1, &[]), (2, &[1]), (3, &[1]), (4, &[2, 3])]);
    assert_eq!(state(&conn, id), InstanceState::Waiting);
    let first = claim(&conn, "h", 10).expect("claim");
    assert_eq!(ids(&first), [1], "only what waits for nothing");
    mark_running(&conn, &[id]).expect("running");
    assert_eq!(state(&conn, id), InstanceState::Running);
    assert!(
        claim(&conn, "h", 10).expect("claim").is_empty(),
        "nothing else ready"
    );
    let e = end_of(&conn, "h", &first[0], &finished());
    assert!(e.recorded && e.ready > 0 && e.instance.is_none(), "{e:?}");
    let next = claim(&conn, "h", 1).expect("claim");
    assert_eq!(ids(&next), [2], "the limit holds, oldest first");
    let next2 = claim(&conn, "h", 5).expect("claim");
    assert_eq!(ids(&next2), [3]);
    let e = end_of(&conn, "h", &next[0], &finished());
    assert_eq!(e.ready, 0, "4 still waits for 3: {e:?}");
    assert_eq!(states(&conn, id)[3], (4, "D".to_owned()));
    let e = end_of(&conn, "h", &next2[0], &finished());
    assert_eq!(e.ready, 1, "{e:?}");
    assert!(
        claim(&conn, "h", 0).expect("claim").is_empty(),
        "no slot, no claim"
    );
    let last = claim(&conn, "h", 5).expect("claim");
    assert_eq!(ids(&last), [4]);
    assert_eq!(last[0].attempt, 1);
    let e = end_of(&conn, "h", &last[0], &finished());
    assert_eq!(e.instance, Some(InstanceState::Finished));
    assert_eq!(state(&conn, id), InstanceState::Finished);
}

#[test]
fn a_failure_skips_what_depends_on_it_transitively_and_the_rest_goes_on() {
    let conn = repo();
    let id = instance(&conn, &[(1, &[]), (2, &[1]), (3, &[2]), (4, &[])]);
    let c = claim(&conn, "h", 10).expect("claim");
    assert_eq!(ids(&c), [1, 4]);
    let e = end_of(&conn, "h", &c[0], &failed());
    assert!(
        e.recorded && e.ready == 0 && e.instance.is_none(),
        "4 still runs: {e:?}"
    );
    assert_eq!(
        states(&conn, id),
        [
            (1, "E".to_owned()),
            (2, "S".to_owned()),
            (3, "S".to_owned()),
            (4, "R".to_owned())
        ]
    );
    let e = end_of(&conn, "h", &c[1], &finished());
    assert_eq!(e.instance, Some(InstanceState::Failed));
}

#[test]
fn halt_halts_what_waits_and_the_instance_ends_with_its_last_running_action() {
    let conn = repo();
    let id = instance(&conn, &[(1, &[]), (2, &[1]), (3, &[])]);
    let c = claim(&conn, "h", 1).expect("claim");
    assert_eq!(halt(&conn, id).expect("halt"), Halted::Asked { running: 1 });
    assert_eq!(
        states(&conn, id),
        [
            (1, "R".to_owned()),
            (2, "H".to_owned()),
            (3, "H".to_owned())
        ]
    );
    assert_eq!(halts_asked(&conn, &[id, id + 1]).expect("asked"), [id]);
    assert!(state(&conn, id).is_ongoing(), "its action still runs");
    let stopped = ActionEnd {
        error: Some("halted on request"),
        halted: true,
        ..finished()
    };
    let e = end_of(&conn, "h", &c[0], &stopped);
    assert_eq!(e.instance, Some(InstanceState::Halted));
    assert_eq!(
        halt(&conn, id).expect("halt"),
        Halted::NotRunning(InstanceState::Halted)
    );
    assert_eq!(halt(&conn, 999).expect("halt"), Halted::NotFound);
    // A halt that reaches an instance whose every action then commits changes nothing.
    let late = instance(&conn, &[(1, &[])]);
    let c = claim(&conn, "h", 1).expect("claim");
    halt(&conn, late).expect("halt");
    let e = end_of(&conn, "h", &c[0], &finished());
    assert_eq!(e.instance, Some(InstanceState::Finished));
}

#[test]
fn restart_runs_again_what_did_not_finish_with_its_waits_counted_again() {
    let conn = repo();
    let id = instance(&conn, &[(1, &[]), (2, &[1]), (3, &[2])]);
    let c = claim(&conn, "h", 5).expect("claim");
    end_of(&conn, "h", &c[0], &finished());
    let c = claim(&conn, "h", 5).expect("claim");
    assert_eq!(ids(&c), [2]);
    let e = end_of(&conn, "h", &c[0], &failed());
    assert_eq!(e.instance, Some(InstanceState::Failed));
    assert_eq!(
        restart(&conn, id, crate::model::Definitions::AsStarted, &[]).expect("restart"),
        Restarted::Reset(2)
    );
    assert_eq!(state(&conn, id), InstanceState::Waiting);
    assert_eq!(
        states(&conn, id),
        [
            (1, "F".to_owned()),
            (2, "W".to_owned()),
            (3, "D".to_owned())
        ],
        "2's dependency finished, 3 waits for 2"
    );
    assert_eq!(
        restart(&conn, id, crate::model::Definitions::AsStarted, &[]).expect("restart"),
        Restarted::Running
    );
    let c = claim(&conn, "h", 5).expect("claim");
    assert_eq!((ids(&c), c[0].attempt), (vec![2], 2), "the second attempt");
    end_of(&conn, "h", &c[0], &finished());
    let c = claim(&conn, "h", 5).expect("claim");
    let e = end_of(&conn, "h", &c[0], &finished());
    assert_eq!(e.instance, Some(InstanceState::Finished));
    assert_eq!(
        restart(&conn, id, crate::model::Definitions::AsStarted, &[]).expect("restart"),
        Restarted::Finished
    );
    assert_eq!(
        restart(&conn, 999, crate::model::Definitions::AsStarted, &[]).expect("restart"),
        Restarted::NotFound
    );
}

#[test]
fn a_silent_host_is_forgotten_its_actions_taken_and_its_late_end_changes_nothing() {
    let conn = repo();
    register(&conn, "h1", "http://a", 2, "p1").expect("register");
    register(&conn, "h2", "http://b", 2, "p2").expect("register");
    let id = instance(&conn, &[(1, &[]), (2, &[1])]);
    let c = claim(&conn, "h1", 5).expect("claim");
    assert!(
        take_over(&conn, "h2", 60_000)
            .expect("take over")
            .is_empty(),
        "h1 beat just now"
    );
    // h1 has been silent for 100 s.
    conn.execute_batch("UPDATE hosts SET heartbeat_ms = heartbeat_ms - 100000 WHERE id = 'h1'")
        .expect("silence");
    let running = hosts(&conn).expect("hosts");
    assert_eq!(
        running.iter().map(|h| h.running).collect::<Vec<_>>(),
        [1, 0]
    );
    assert!(running[0].silent_ms >= 100_000, "{running:?}");
    let taken = take_over(&conn, "h2", 10_000).expect("take over");
    assert_eq!(ids(&taken), [1]);
    assert_eq!(
        hosts(&conn)
            .expect("hosts")
            .iter()
            .map(|h| h.id.as_str())
            .collect::<Vec<_>>(),
        ["h2"]
    );
    assert_eq!(
        heartbeat(&conn, "h1", "p1").expect("beat"),
        Beat::Gone,
        "h1 learns it was taken over"
    );
    assert_eq!(heartbeat(&conn, "h2", "p2").expect("beat"), Beat::Alive);
    // A second process registering h2's id displaces the first, whose beats then say so.
    register(&conn, "h2", "http://b", 2, "p3").expect("register");
    assert_eq!(
        heartbeat(&conn, "h2", "p2").expect("beat"),
        Beat::Displaced("p3".to_owned())
    );
    let held = holder(&conn, "h2").expect("holder").expect("a row");
    assert_eq!(held.process.as_deref(), Some("p3"));
    assert!(held.silent_ms < 60_000, "{held:?}");
    // Leaving takes the row only of the process holding it, with nothing running there.
    leave(&conn, "h2", "p2").expect("leave");
    assert!(holder(&conn, "h2").expect("holder").is_some(), "not p2's");
    leave(&conn, "h2", "p3").expect("leave");
    assert!(
        holder(&conn, "h2").expect("holder").is_some(),
        "h2 runs an action"
    );
    assert_eq!(running_on(&conn, "h2").expect("on h2").len(), 1);
    // Nothing committed: it runs again.
    let e = settled(
        &conn,
        "h2",
        &claimed(&taken[0]),
        &Settle::Rerun,
        "not committed",
        true,
    )
    .expect("settle");
    assert!(e.recorded && e.ready > 0, "{e:?}");
    // h1's attempt ends late: fenced.
    let late = end_of(&conn, "h1", &c[0], &finished());
    assert!(!late.recorded, "{late:?}");
    assert_eq!(states(&conn, id)[0], (1, "W".to_owned()));
    let again = claim(&conn, "h2", 5).expect("claim");
    assert_eq!(again[0].attempt, 2);
    assert!(
        !end_of(&conn, "h1", &c[0], &finished()).recorded,
        "still fenced"
    );
    assert!(end_of(&conn, "h2", &again[0], &finished()).recorded);
    let c = claim(&conn, "h2", 5).expect("claim");
    // A committed attempt found by its marker is finished, and what follows follows.
    conn.execute_batch("DELETE FROM hosts WHERE id = 'h2'")
        .expect("forget h2");
    let taken = take_over(&conn, "h3", 0).expect("take over");
    assert_eq!(ids(&taken), ids(&c));
    let e = settled(
        &conn,
        "h3",
        &claimed(&taken[0]),
        &Settle::Committed,
        "marker found",
        true,
    )
    .expect("settle");
    assert_eq!(e.instance, Some(InstanceState::Finished));
}

#[test]
fn an_end_claims_the_next_ready_action_for_its_slot_in_its_own_transaction() {
    use crate::store::{Created, InstanceStore as _};
    let dir = tempfile::tempdir().expect("dir");
    let repo = crate::Repository::open(&dir.path().join("repository.db")).expect("open");
    // 1 -> 2 -> 3, and 4 that waits for nothing.
    let new = new_instance(&[(1, &[]), (2, &[1]), (3, &[2]), (4, &[])]);
    repo.with(|c| {
        store_plans(c, &new);
        Ok(())
    })
    .expect("plans");
    let Created::Stored(id) = repo.create_instance(&new, None, 10).expect("create") else {
        panic!("not stored")
    };
    let first = repo.claim("h", 1).expect("claim");
    assert_eq!(actions(&first), [1]);
    // Its plan, found in the sheet's plans at the version the instance runs.
    assert_eq!(first[0].plan.as_ref().map(|p| p.name.as_str()), Ok("a1"));
    // The end of 1 makes 2 ready; the slot is taken again at once, oldest action first.
    let (ended, next) = repo
        .end_action("h", id, 1, first[0].attempt, &finished(), 1)
        .expect("end");
    assert!(ended.recorded && ended.ready == 1, "{ended:?}");
    assert_eq!(actions(&next), [2]);
    assert_eq!(next[0].attempt, 1);
    let (ended, next) = repo.end_action("h", id, 2, 1, &finished(), 1).expect("end");
    assert!(ended.recorded, "{ended:?}");
    assert_eq!(actions(&next), [3], "3 became ready and comes before 4");
    // Asked for none (a paused host), it claims none: 4 stays ready for the worker.
    let (_, next) = repo.end_action("h", id, 3, 1, &finished(), 0).expect("end");
    assert!(next.is_empty(), "{next:?}");
    // An end that is not this host's records nothing and claims nothing.
    let (ended, next) = repo
        .end_action("other", id, 4, 0, &finished(), 1)
        .expect("end");
    assert!(!ended.recorded && next.is_empty(), "{ended:?} {next:?}");
    let all = repo.with(|c| Ok(states(c, id))).expect("states");
    assert_eq!(
        all,
        [
            (1, "F".to_owned()),
            (2, "F".to_owned()),
            (3, "F".to_owned()),
            (4, "W".to_owned())
        ]
    );
}

/// The runs of a sheet come from the sheets each instance ran (`instance_sheets`): newest
/// first, at most the limit, one line an instance however many of its actions the sheet
/// had, none for a sheet never run.
#[test]
fn the_runs_of_a_sheet_are_the_instances_that_ran_it_newest_first() {
    let conn = repo();
    let on_sheets = |sheets: &[i64]| {
        let mut new = new_instance(&[(1, &[]), (2, &[1]), (3, &[])]);
        for (a, s) in new.actions.iter_mut().zip(sheets) {
            a.sheet_id = *s;
        }
        store_plans(&conn, &new);
        instances::create(&conn, &new, None).expect("create")
    };
    let first = on_sheets(&[7, 7, 8]);
    let second = on_sheets(&[8, 8, 8]);
    let third = on_sheets(&[7, 9, 9]);
    let runs = |sheet: i64, limit: i64| -> Vec<i64> {
        instances::of_sheet(&conn, sheet, limit)
            .expect("runs")
            .iter()
            .map(|r| r.batch_instance_id)
            .collect()
    };
    assert_eq!(runs(7, 10), [third, first]);
    assert_eq!(runs(8, 10), [second, first]);
    assert_eq!(runs(8, 1), [second]);
    assert_eq!(runs(9, 10), [third]);
    assert!(runs(10, 10).is_empty());
}

/// A start that read a sheet's plans before a deploy replaced them (and no instance kept
/// them) stores nothing and says which sheet: the start reads them again.
#[test]
fn a_new_instance_of_plans_a_deploy_replaced_is_not_stored() {
    use crate::store::{Created, InstanceStore as _};
    let dir = tempfile::tempdir().expect("dir");
    let repo = crate::Repository::open(&dir.path().join("repository.db")).expect("open");
    let new = new_instance(&[(1, &[]), (2, &[1])]);
    let before = repo.dump().expect("dump");
    match repo.create_instance(&new, None, 10) {
        Err(crate::error::Error::Redeployed(sheet)) => assert_eq!(sheet, 1),
        other => panic!("stored: {other:?}"),
    }
    assert_eq!(before, repo.dump().expect("dump"), "nothing stored");
    repo.with(|c| {
        store_plans(c, &new);
        Ok(())
    })
    .expect("plans");
    assert!(matches!(
        repo.create_instance(&new, None, 10),
        Ok(Created::Stored(_))
    ));
}

#[test]
fn one_claim_never_starts_two_runs_writing_one_table() {
    let conn = repo();
    let first = instance(&conn, &[(1, &[])]);
    let second = instance(&conn, &[(1, &[])]);
    conn.execute_batch(
        "INSERT INTO data_flow (action_id, writes, connection_id, schema_name, object_name)
         VALUES (1, 1, 7, '', 't')",
    )
    .expect("the data graph");
    // Two slots free: the first run's action starts, the second's waits for it.
    let got = claim(&conn, "h", 2).expect("claim");
    assert_eq!(
        got.iter()
            .map(|p| (p.instance, p.action))
            .collect::<Vec<_>>(),
        vec![(first, 1)]
    );
    assert!(claim(&conn, "h", 2).expect("claim").is_empty());
    conn.execute_batch("UPDATE instance_actions SET state = 'F' WHERE state = 'R'")
        .expect("ended");
    let got = claim(&conn, "h", 2).expect("claim");
    assert_eq!(
        got.iter()
            .map(|p| (p.instance, p.action))
            .collect::<Vec<_>>(),
        vec![(second, 1)]
    );
}

#[test]
fn the_pause_before_a_retry_doubles_up_to_an_hour() {
    use super::retry_pause;
    assert_eq!(
        (0..8).map(|n| retry_pause(60, n)).collect::<Vec<_>>(),
        [60, 120, 240, 480, 960, 1920, 3600, 3600]
    );
    assert_eq!(retry_pause(0, 5), 0);
    assert_eq!(retry_pause(1, 40), 3600);
    assert_eq!(retry_pause(3600, 3), 3600);
}
