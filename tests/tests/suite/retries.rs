//! End to end: retries of failed actions on a real `weft serve`: an action's own `retries`
//! with `retryOn: all` passing once what it lacked is there, each failed try kept and told
//! (`retried`); the default `retryOn` (connection) leaving a SQL error alone; a batch's
//! default for the actions of its backfilled runs; a connection that cannot be opened tried
//! again at once without counting; the attributes checked at deploy.

use crate::common;
use crate::runs::{deploy, setup_with, wait};
use common::*;
use serde_json::{Value, json};

/// Sheet `id` with one `Sql` action (`id * 10`) running `sql` into `table` on `connection`,
/// with `retry` (its attributes' retry fields) merged into its attributes.
fn sheet_with(id: i64, sql: &str, table: &str, connection: i64, retry: Value) -> Value {
    let mut attributes = json!({"module": "Sql", "name": format!("step {id}"), "action": sql});
    for (k, v) in retry.as_object().expect("fields") {
        attributes[k] = v.clone();
    }
    json!({"id": id, "attributes": {"name": format!("sheet {id}"), "folder_id": 10, "folder": "/etl"},
        "nodes": [
            {"id": id * 10, "type": 0, "attributes": attributes},
            {"id": id * 10 + 1, "type": 1, "attributes": {"field1": table, "objectTypeId": 1, "connectionId": connection}}],
        "edges": [{"id": id * 10 + 1, "from": id * 10, "to": id * 10 + 1}]})
}

fn run_sheet(w: &Weft, sheet: i64) -> i64 {
    let (st, v) = command(
        w,
        "RunElements",
        json!({"batchExecution": {"batchName": "retries", "user": "t",
            "elementList": [{"elementType": "S", "elementId": sheet}]}}),
    );
    assert_eq!(st, 200, "{v}");
    v["payload"]["batchInstanceId"].as_i64().expect("id")
}

fn action(w: &Weft, instance: i64) -> Value {
    let (st, v) = command(w, "GetBatchInstance", json!({"batchInstanceId": instance}));
    assert_eq!(st, 200, "{v}");
    v["payload"]["actions"][0].clone()
}

/// The instance's one action once `done` holds of it (30 s at most).
fn action_when(w: &Weft, instance: i64, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let a = action(w, instance);
        if done(&a) || std::time::Instant::now() > deadline {
            return a;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn an_action_tried_again_passes_once_what_it_lacked_is_there_and_its_failed_try_is_kept() {
    let hook = weft_tests::receivers::Webhook::start("s", 0);
    let (w, data) = setup_with(&[]);
    w.add_keys("hook|secret|||s|\n");
    let mut sheet = sheet_with(
        1,
        "INSERT INTO other SELECT COUNT(*) FROM arrives_later",
        "other",
        1,
        json!({"retries": 3, "retryDelaySeconds": 1, "retryOn": "all"}),
    );
    sheet["nodes"]
        .as_array_mut()
        .expect("nodes")
        .push(json!({"id": 19, "type": 1,
        "attributes": {"field1": "arrives_later", "objectTypeId": 1, "connectionId": 1}}));
    sheet["edges"]
        .as_array_mut()
        .expect("edges")
        .push(json!({"id": 19, "from": 19, "to": 10}));
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {
            "sheets": [sheet],
            "notifications": {
                "channels": [{"name": "hook", "type": "webhook", "url": hook.url, "secret": "hook"}],
                "rules": [{"on": ["retried", "actionFailed"], "to": ["hook"]}]}}}),
    );
    let id = run_sheet(&w, 1);
    // The first try failed; the action waits a second to be tried again.
    let waiting = action_when(&w, id, |a| !a["tries"].as_array().is_none_or(Vec::is_empty));
    assert_eq!(waiting["state"], "W", "{waiting:#}");
    assert!(waiting["retryAt"].is_string(), "{waiting:#}");
    let tried = &waiting["tries"][0];
    assert_eq!(tried["attempt"], 1);
    assert_eq!(tried["counted"], true);
    assert!(
        tried["error"]
            .as_str()
            .expect("error")
            .contains("no such table: arrives_later"),
        "{tried}"
    );
    // What it lacked arrives; the next try passes.
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("CREATE TABLE arrives_later (n INTEGER)")
        .expect("table");
    let done = wait(&w, id);
    assert_eq!(done["state"], "finished", "{done:#}");
    let a = action(&w, id);
    assert_eq!(a["state"], "F");
    assert!(a.get("retryAt").is_none(), "{a:#}");
    let tries = a["tries"].as_array().expect("tries");
    assert!(!tries.is_empty() && tries.len() <= 3, "{a:#}");
    // Each try ended before the next began, and the last (that passed) after them all.
    let at = |v: &Value| v.as_str().expect("a time").to_owned();
    for t in tries {
        assert!(
            at(&t["start"]) <= at(&t["end"]) && at(&t["end"]) <= at(&t["retryAt"]),
            "{a:#}"
        );
        assert!(at(&t["retryAt"]) <= at(&a["start"]), "{a:#}");
    }
    assert!(tries.iter().all(|t| {
        t["error"]
            .as_str()
            .is_some_and(|e| e.contains("arrives_later"))
    }));
    // Each failed try was told as retried; none as a failed action (it did not fail in the end).
    let got = hook.wait_for(|r| r.len() >= tries.len());
    let events: Vec<String> = got
        .iter()
        .map(|r| {
            let body: Value =
                serde_json::from_str(r["body"].as_str().expect("body")).expect("JSON");
            assert!(body["retryAt"].is_string(), "{body}");
            body["event"].as_str().expect("event").to_owned()
        })
        .collect();
    assert_eq!(events, vec!["retried".to_owned(); tries.len()], "{got:#?}");
}

#[test]
fn by_default_only_connection_and_lock_failures_are_tried_again_and_a_batch_gives_its_actions_a_default()
 {
    let (w, _) = setup_with(&[]);
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {
            "sheets": [
                sheet_with(1, "INSERT INTO nowhere VALUES (1)", "nowhere", 1, json!({"retries": 3, "retryDelaySeconds": 0})),
                sheet_with(2, "INSERT INTO nowhere VALUES (2)", "nowhere", 1, json!({}))],
            "batches": [{"id": 4, "name": "tries everything", "schedule": "daily 01:00", "enabled": false,
                "retries": 2, "retryDelaySeconds": 0, "retryOn": "all",
                "elements": [{"elementType": "S", "elementId": 2}]}]}}),
    );
    // A SQL error is not a connection's: with retries left, it fails at once.
    let id = run_sheet(&w, 1);
    assert_eq!(wait(&w, id)["state"], "failed");
    let a = action(&w, id);
    assert!(a.get("tries").is_none(), "{a:#}");
    // Run by hand, sheet 2 has no retries of its own; in a run of its batch (a backfill of a
    // day), the batch's default tries it twice again.
    let id = run_sheet(&w, 2);
    assert_eq!(wait(&w, id)["state"], "failed");
    assert!(action(&w, id).get("tries").is_none());
    let (st, v) = command(
        &w,
        "BackfillBatch",
        json!({"batch": 4, "from": "2026-11-20", "to": "2026-11-20"}),
    );
    assert_eq!(st, 200, "{v}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let backfilled = loop {
        let ids =
            w.repo_rows("SELECT id FROM batch_instances WHERE batch_id = 4 AND state = 'failed'");
        if let Some(id) = ids.first() {
            break id.parse::<i64>().expect("id");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the backfilled run did not fail"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let a = action(&w, backfilled);
    let tries = a["tries"].as_array().expect("tries");
    assert_eq!(tries.len(), 2, "{a:#}");
    assert_eq!(
        tries
            .iter()
            .map(|t| t["attempt"].as_i64())
            .collect::<Vec<_>>(),
        [Some(1), Some(2)]
    );
    assert!(
        a["error"]
            .as_str()
            .is_some_and(|e| e.contains("no such table")),
        "{a:#}"
    );
}

#[test]
fn a_connection_that_cannot_be_opened_is_tried_again_at_once_without_counting() {
    let (w, _) = setup_with(&[]);
    let gone = w.home.path().join("not-yet").join("data.db");
    w.add_keys(&format!("2|sqlite|{}|||\n", gone.display()));
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {
            "connections": [{"id": 2, "name": "not yet", "type": "sqlite"}],
            "sheets": [sheet_with(1, "CREATE TABLE IF NOT EXISTS x (n INTEGER)", "x", 2, json!({}))]}}),
    );
    let id = run_sheet(&w, 1);
    assert_eq!(wait(&w, id)["state"], "failed");
    let a = action(&w, id);
    let tries = a["tries"].as_array().expect("tries");
    // Once at once, not counted; then the default (no retries) lets it fail.
    assert_eq!(tries.len(), 1, "{a:#}");
    assert_eq!(tries[0]["counted"], false);
    assert!(
        tries[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("not-yet")),
        "{a:#}"
    );
    assert_eq!(tries[0]["retryAt"], tries[0]["end"]);
}

#[test]
fn retry_fields_out_of_range_are_refused_at_their_place() {
    let (w, _) = setup_with(&[]);
    let before = w.dump();
    let doc = json!({"version": 1, "transformationData": {
        "sheets": [sheet_with(1, "INSERT INTO other VALUES (1)", "other", 1,
            json!({"retries": 21, "retryDelaySeconds": -1, "retryOn": "sometimes"}))],
        "batches": [{"id": 4, "name": "b", "schedule": "daily 01:00", "retries": 100,
            "elements": [{"elementType": "S", "elementId": 1}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 422, "{v}");
    let details = v["error"]["details"].as_array().expect("details");
    for (path, text) in [
        (
            "transformationData.sheets[0].nodes[0].attributes.retries",
            "use 0 to 20",
        ),
        (
            "transformationData.sheets[0].nodes[0].attributes.retryDelaySeconds",
            "use 0 to 3600",
        ),
        (
            "transformationData.sheets[0].nodes[0].attributes.retryOn",
            "`sometimes`",
        ),
        ("transformationData.batches[0].retries", "use 0 to 20"),
    ] {
        assert!(
            details.iter().any(|d| d["code"] == "retry.policy"
                && d["path"] == path
                && d["message"].as_str().is_some_and(|m| m.contains(text))),
            "no retry.policy at {path} in {details:#?}"
        );
    }
    assert_eq!(w.dump(), before);
}
