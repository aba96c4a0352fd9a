//! End to end: notifications of a real `weft serve` to a real HTTP receiver (Python's
//! `http.server`, checking each signature with Python's `hmac`): the rules of the setup and
//! of a batch, the webhook's body and headers, a receiver that is down and comes back, a
//! server killed while a notification waits, `ListNotifications` and `weft notifications`,
//! and the deploy's checks of channels, rules and templates at their place.

use crate::common;
use crate::runs::{deploy, setup_with, wait};
use common::*;
use serde_json::{Value, json};
use weft_tests::receivers::Webhook;

const SECRET: &str = "s3cret-of-the-hook";

/// Sheets 1 (an action that finishes) and 2 (one that fails: no such table), and the
/// notification setup: one webhook channel signed with key-file entry `hook`, a rule for
/// every batch on `rules`.
fn notify_doc(url: &str, rules: Value) -> Value {
    json!({"version": 1, "transformationData": {
        "sheets": [
            {"id": 1, "attributes": {"name": "good", "folder_id": 10, "folder": "/etl"},
             "nodes": [
                {"id": 100, "type": 0, "attributes": {"module": "Sql", "name": "fill other", "action": "INSERT INTO other VALUES (1)"}},
                {"id": 101, "type": 1, "attributes": {"field1": "other", "objectTypeId": 1, "connectionId": 1}}],
             "edges": [{"id": 101, "from": 100, "to": 101}]},
            {"id": 2, "attributes": {"name": "bad", "folder_id": 10, "folder": "/etl"},
             "nodes": [
                {"id": 200, "type": 0, "attributes": {"module": "Sql", "name": "load orders", "action": "INSERT INTO nowhere VALUES (1)"}},
                {"id": 201, "type": 1, "attributes": {"field1": "nowhere", "objectTypeId": 1, "connectionId": 1}}],
             "edges": [{"id": 201, "from": 200, "to": 201}]}],
        "notifications": {
            "channels": [{"name": "team-hook", "type": "webhook", "url": url, "secret": "hook"}],
            "rules": rules}}})
}

/// Runs sheet `sheet` as batch `name`; its id once it ended.
fn run_sheet(w: &Weft, sheet: i64, name: &str) -> i64 {
    let (st, v) = command(
        w,
        "RunElements",
        json!({"batchExecution": {"batchName": name, "user": "t",
            "elementList": [{"elementType": "S", "elementId": sheet}]}}),
    );
    assert_eq!(st, 200, "{v}");
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    wait(w, id);
    id
}

fn notifications(w: &Weft, payload: Value) -> Vec<Value> {
    let (st, v) = command(w, "ListNotifications", payload);
    assert_eq!(st, 200, "{v}");
    v["payload"]["notifications"]
        .as_array()
        .expect("notifications")
        .clone()
}

/// The notifications in `state`, waited for (the sender marks them right after the send).
fn wait_notifications(w: &Weft, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let got = notifications(w, json!({}));
        if done(&got) || std::time::Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_failed_run_is_posted_signed_once_per_event_with_its_facts_and_listed_as_sent() {
    let hook = Webhook::start(SECRET, 0);
    let (w, _) = setup_with(&[]);
    w.add_keys(&format!("hook|secret|||{SECRET}|\n"));
    deploy(
        &w,
        &notify_doc(
            &hook.url,
            json!([{"on": ["failed", "actionFailed"], "to": ["team-hook"]}]),
        ),
    );
    let failed = run_sheet(&w, 2, "nightly");
    let got = hook.wait_for(|r| r.len() >= 2);
    assert_eq!(got.len(), 2, "{got:#?}");
    for r in &got {
        assert_eq!(r["valid"], true, "the signature holds: {r:#?}");
        assert_eq!(r["status"], 204, "{r:#?}");
        assert_eq!(r["path"], "/hook?token=abc");
        assert_eq!(r["headers"]["content-type"], "application/json");
    }
    let bodies: Vec<Value> = got
        .iter()
        .map(|r| serde_json::from_str(r["body"].as_str().expect("body")).expect("JSON body"))
        .collect();
    let by_event = |e: &str| {
        bodies
            .iter()
            .find(|b| b["event"] == e)
            .unwrap_or_else(|| panic!("no {e} in {bodies:#?}"))
    };
    let action = by_event("actionFailed");
    assert_eq!(action["batch"], "nightly");
    assert_eq!(action["instanceId"], failed);
    assert_eq!(action["actionId"], 200);
    assert_eq!(action["actionName"], "load orders");
    assert!(
        action["error"]
            .as_str()
            .expect("error")
            .contains("no such table: nowhere"),
        "{action}"
    );
    let run = by_event("failed");
    assert_eq!(run["state"], "failed");
    assert_eq!(run["headline"], format!("run {failed} failed"));
    assert_eq!(run["failedCount"], 1);
    assert_eq!(run["failedActions"][0]["name"], "load orders");
    assert!(
        run["failedActions"][0]["firstLine"]
            .as_str()
            .expect("line")
            .contains("no such table"),
        "{run}"
    );
    let page = w.url.replace("weft/service", "");
    assert_eq!(run["url"], format!("{page}#/runs/{failed}"));
    assert!(
        run["seconds"].as_f64().is_some() && run["startedAt"].is_string(),
        "{run}"
    );
    // Each request carries its notification's id; the list answers them sent, once.
    let ids: Vec<i64> = got
        .iter()
        .map(|r| {
            r["headers"]["weft-notification-id"]
                .as_str()
                .expect("id")
                .parse()
                .expect("number")
        })
        .collect();
    let listed = wait_notifications(&w, |n| n.iter().all(|n| n["state"] == "sent"));
    assert_eq!(listed.len(), 2, "{listed:#?}");
    for n in &listed {
        assert!(ids.contains(&n["id"].as_i64().expect("id")), "{n}");
        assert_eq!(n["state"], "sent", "{n}");
        assert_eq!(n["attempts"], 1, "{n}");
        assert_eq!(n["batchInstanceId"], failed);
        assert_eq!(n["channel"], "team-hook");
        assert!(n["sent"].is_string(), "{n}");
    }
    // A run that finishes is no event of these rules: nothing is recorded for it (the end
    // and its notifications are one transaction, committed before the wait answers).
    let fine = run_sheet(&w, 1, "nightly");
    assert!(notifications(&w, json!({"batchInstanceId": fine})).is_empty());
    assert_eq!(notifications(&w, json!({})).len(), 2);
    // The command line lists them.
    let out = std::process::Command::new(weft_bin())
        .args(["notifications", "--home"])
        .arg(w.home.path())
        .args(["--state", "sent"])
        .output()
        .expect("weft notifications");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.starts_with("ID\tSTATE\tEVENT"), "{stdout}");
    assert_eq!(
        stdout.lines().filter(|l| l.contains("\tsent\t")).count(),
        2,
        "{stdout}"
    );
    assert!(stdout.contains("\tactionFailed\tnightly\t"), "{stdout}");
}

#[test]
fn a_receiver_that_is_down_gets_the_notification_when_it_is_back_and_the_tries_are_kept() {
    // Down for the first two tries; the first back-off is a second (then two).
    let hook = Webhook::start(SECRET, 2);
    let (w, _) = setup_with(&[("WEFT_NOTIFY_RETRY_SECONDS", "1")]);
    w.add_keys(&format!("hook|secret|||{SECRET}|\n"));
    deploy(
        &w,
        &notify_doc(&hook.url, json!([{"on": ["failed"], "to": ["team-hook"]}])),
    );
    let failed = run_sheet(&w, 2, "nightly");
    let got = hook.wait_for(|r| r.iter().any(|r| r["status"] == 204));
    let statuses: Vec<i64> = got
        .iter()
        .map(|r| r["status"].as_i64().expect("status"))
        .collect();
    assert_eq!(statuses, vec![503, 503, 204], "{got:#?}");
    // The same notification each time.
    let ids: Vec<&str> = got
        .iter()
        .map(|r| r["headers"]["weft-notification-id"].as_str().expect("id"))
        .collect();
    assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");
    let listed = wait_notifications(&w, |n| n.first().is_some_and(|n| n["state"] == "sent"));
    assert_eq!(listed.len(), 1, "{listed:#?}");
    let n = &listed[0];
    assert_eq!(
        (n["state"].as_str(), n["attempts"].as_i64()),
        (Some("sent"), Some(3)),
        "{n}"
    );
    assert_eq!(n["batchInstanceId"], failed);
    // The last failure is kept, with what the receiver said (the URL's query left out).
    let last = n["lastError"].as_str().expect("last error");
    assert!(last.contains("503") && last.contains("/hook?..."), "{last}");
    assert!(!last.contains("token=abc"), "{last}");
}

#[test]
fn a_notification_waiting_when_the_server_is_killed_is_sent_by_the_next_start() {
    let hook = Webhook::start(SECRET, 0);
    // The secret's key-file entry is missing: the send fails and the notification waits.
    let (w, _) = setup_with(&[("WEFT_NOTIFY_RETRY_SECONDS", "1")]);
    deploy(
        &w,
        &notify_doc(&hook.url, json!([{"on": ["failed"], "to": ["team-hook"]}])),
    );
    run_sheet(&w, 2, "nightly");
    let listed = wait_notifications(&w, |n| {
        n.first().is_some_and(|n| n["attempts"].as_i64() >= Some(1))
    });
    assert_eq!(listed[0]["state"], "pending", "{listed:#?}");
    assert!(
        listed[0]["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("no entry `hook`")),
        "{listed:#?}"
    );
    assert!(hook.requests().is_empty());
    // Killed; the entry is added; the next start sends it, once.
    let home = w.stop();
    let w = Weft::start_in(
        home,
        &["--listen", "127.0.0.1:0"],
        &[("WEFT_NOTIFY_RETRY_SECONDS", "1")],
    );
    w.add_keys(&format!("hook|secret|||{SECRET}|\n"));
    let got = hook.wait_for(|r| !r.is_empty());
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(got[0]["valid"], true);
    let listed = wait_notifications(&w, |n| n.first().is_some_and(|n| n["state"] == "sent"));
    assert_eq!(listed[0]["state"], "sent", "{listed:#?}");
    assert_eq!(hook.requests().len(), 1);
}

#[test]
fn bad_channels_rules_and_templates_are_refused_at_their_place_and_change_nothing() {
    let (w, _) = setup_with(&[]);
    let before = w.dump();
    // In `r##` quotes: a document weft reads but refuses, which the JSON Schema's check of
    // the test documents (they must all pass it) does not take.
    let doc = r##"{
  version: 1
  transformationData: {
    notifications: {
      channels: [
        { name: "mail", type: "email", server: "relay", from: "weft@example.com", to: ["not an address"] }
        { name: "hook", type: "webhook", url: "ftp://x", subject: "hi" }
        { name: "tpl", type: "webhook", url: "https://x.example/h", body: "{% if batch %}open" }
        { name: "mail", type: "pager" }
      ]
      rules: [
        { on: ["failed", "exploded"], to: ["nobody"] }
        { on: ["late"], to: ["hook"] }
      ]
    }
    batches: [
      { id: 5, name: "nightly", schedule: "daily 01:00", elements: [{ elementType: "S", elementId: 1 }],
        notifications: [{ on: ["finished"], to: ["mail", "ghost"], lateAt: "25:00" }] }
    ]
  }
}"##;
    let (st, v) = post(&w.url, deploy_body(doc));
    assert_eq!(st, 422, "{v}");
    let details = v["error"]["details"].as_array().expect("details").clone();
    let has = |code: &str, path: &str, line: i64, text: &str| {
        assert!(
            details.iter().any(|d| d["code"] == code
                && d["path"] == path
                && d["line"] == line
                && d["message"].as_str().is_some_and(|m| m.contains(text))),
            "no {code} at {path} line {line} with `{text}` in {details:#?}"
        );
    };
    has(
        "notifications.address",
        "transformationData.notifications.channels[0].to[0]",
        6,
        "not an e-mail address",
    );
    has(
        "notifications.channel",
        "transformationData.notifications.channels[1].url",
        7,
        "http:// or https://",
    );
    has(
        "notifications.channel",
        "transformationData.notifications.channels[1].subject",
        7,
        "belongs to email",
    );
    has(
        "notifications.template",
        "transformationData.notifications.channels[2].body",
        8,
        "does not read",
    );
    has(
        "notifications.channel",
        "transformationData.notifications.channels[3].name",
        9,
        "defined twice",
    );
    has(
        "notifications.channel",
        "transformationData.notifications.channels[3].type",
        9,
        "`pager`",
    );
    has(
        "notifications.event",
        "transformationData.notifications.rules[0].on[1]",
        12,
        "`exploded`",
    );
    has(
        "notifications.unknown_channel",
        "transformationData.notifications.rules[0].to[0]",
        12,
        "`nobody`",
    );
    has(
        "notifications.rule",
        "transformationData.notifications.rules[1].on",
        13,
        "lateAt",
    );
    has(
        "notifications.unknown_channel",
        "transformationData.batches[0].notifications[0].to[1]",
        18,
        "`ghost`",
    );
    has(
        "notifications.rule",
        "transformationData.batches[0].notifications[0].lateAt",
        18,
        "HH:MM",
    );
    assert_eq!(w.dump(), before, "a refused deploy changes nothing");
}

#[test]
fn a_channel_a_stored_batch_still_sends_to_cannot_be_dropped() {
    let hook = Webhook::start(SECRET, 0);
    let (w, _) = setup_with(&[]);
    let mut doc = notify_doc(&hook.url, json!([]));
    doc["transformationData"]["batches"] = json!([{"id": 5, "name": "nightly", "schedule": "daily 01:00",
        "elements": [{"elementType": "S", "elementId": 2}],
        "notifications": [{"on": ["failed"], "to": ["team-hook"]}]}]);
    deploy(&w, &doc);
    let before = w.dump();
    let (st, v) = post(
        &w.url,
        deploy_body(&json!({"version": 1, "transformationData": {"notifications": {"channels": [], "rules": []}}}).to_string()),
    );
    assert_eq!(st, 422, "{v}");
    let message = v["error"]["details"][0]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        v["error"]["details"][0]["code"] == "notifications.channel_in_use"
            && message.contains("`team-hook`")
            && message.contains("batch 5 (`nightly`)"),
        "{v}"
    );
    assert_eq!(w.dump(), before);
}

/// A server on a stepped clock standing at `fake_now` (service time) with `env`: its data
/// file (connection 1) holding `tables`, the webhook's secret in its key file.
fn stepped_server(
    fake_now: &str,
    env: &[(&str, &str)],
    tables: &str,
) -> (Weft, std::path::PathBuf) {
    let w = Weft::start_with(
        &[
            "--listen",
            "127.0.0.1:0",
            "--fake-now",
            fake_now,
            "--stepped-clock",
        ],
        env,
    );
    let data = w.home.path().join("data.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch(tables)
        .expect("tables");
    w.add_keys(&format!(
        "1|sqlite|{}|||\nhook|secret|||{SECRET}|\n",
        data.display()
    ));
    (w, data)
}

/// `doc` with the folder and connection a [`stepped_server`] does not have yet.
fn with_data(doc: &mut Value) {
    doc["transformationData"]["folders"] = json!([{"id": 10, "path": "/etl"}]);
    doc["transformationData"]["connections"] = json!([{"id": 1, "name": "data", "type": "sqlite"}]);
}

#[test]
fn late_runs_are_told_once_by_the_time_of_day_and_by_how_long_they_run() {
    let hook = Webhook::start(SECRET, 0);
    let (w, data) = stepped_server(
        "2026-11-27 05:50:00",
        &[("WEFT_TIMEZONE", "Europe/Berlin")],
        "CREATE TABLE other (n INTEGER); CREATE TABLE slow (n INTEGER);",
    );
    let mut doc = notify_doc(
        &hook.url,
        json!([{"on": ["late"], "longerThanMinutes": 30, "to": ["team-hook"]}]),
    );
    with_data(&mut doc);
    let td = &mut doc["transformationData"];
    let at_six = json!([{"on": ["late"], "lateAt": "06:00", "to": ["team-hook"]}]);
    let element = json!([{"elementType": "S", "elementId": 1}]);
    td["batches"] = json!([
        // Friday 27 November 2026: not planned today, never late today.
        {"id": 5, "name": "sundays", "schedule": "weekly SUN 01:00", "elements": element, "notifications": at_six},
        // Its run of the day finished (a backfill of today): not late.
        {"id": 6, "name": "done", "schedule": "daily 01:00", "elements": element, "notifications": at_six},
        // No run of the day: late at 06:00, once.
        {"id": 7, "name": "nightly", "schedule": "daily 01:00", "elements": element, "notifications": at_six}]);
    deploy(&w, &doc);
    let (st, v) = command(
        &w,
        "BackfillBatch",
        json!({"batch": "done", "from": "2026-11-27", "to": "2026-11-27", "user": "t"}),
    );
    assert_eq!(st, 200, "{v}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while w.repo_value(
        "SELECT COUNT(*) FROM batch_instances WHERE batch_id = 6 AND state = 'finished'",
    ) != "1"
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the backfill of batch done did not finish"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // A run held by the data file's write lock, started at 05:50.
    let gate = rusqlite::Connection::open(&data).expect("data");
    gate.execute_batch("BEGIN IMMEDIATE")
        .expect("the write lock");
    let (st, v) = command(
        &w,
        "RunElements",
        json!({"batchExecution": {"batchName": "by hand", "user": "t",
            "elementList": [{"elementType": "S", "elementId": 1}]}}),
    );
    assert_eq!(st, 200, "{v}");
    let held = v["payload"]["batchInstanceId"].as_i64().expect("id");
    // 06:00:30: past 06:00, and the held run has gone 30.5 minutes.
    let (st, v) = command(&w, "AdvanceClock", json!({"to": "2026-11-27 06:20:30"}));
    assert_eq!(st, 200, "{v}");
    let got = hook.wait_for(|r| r.len() >= 2);
    gate.execute_batch("ROLLBACK").expect("release");
    let bodies: Vec<Value> = got
        .iter()
        .map(|r| serde_json::from_str(r["body"].as_str().expect("body")).expect("JSON"))
        .collect();
    assert_eq!(bodies.len(), 2, "{bodies:#?}");
    let by_time = bodies
        .iter()
        .find(|b| b["lateAt"] == "06:00")
        .expect("the 06:00 lateness");
    assert_eq!(by_time["event"], "late");
    assert_eq!(by_time["batch"], "nightly");
    assert_eq!(by_time["headline"], "no run of the day finished by 06:00");
    let by_length = bodies
        .iter()
        .find(|b| b["longerThanMinutes"] == "30")
        .expect("the run going too long");
    assert_eq!(by_length["instanceId"], held);
    assert_eq!(by_length["batch"], "by hand");
    assert_eq!(
        by_length["headline"],
        format!("run {held} has been going for more than 30 minutes")
    );
    // Each once, and nothing for the batches that were not late; still so a while later.
    let (st, v) = command(&w, "AdvanceClock", json!({"to": "2026-11-27 07:00:00"}));
    assert_eq!(st, 200, "{v}");
    let listed = wait_notifications(&w, |n| n.iter().all(|n| n["state"] == "sent"));
    let late: Vec<&str> = listed
        .iter()
        .map(|n| n["batchName"].as_str().expect("batch"))
        .collect();
    assert_eq!(late.len(), 2, "{listed:#?}");
    assert!(
        late.contains(&"nightly") && late.contains(&"by hand"),
        "{late:?}"
    );
}

#[test]
fn a_failure_is_mailed_over_starttls_and_implicit_tls_with_authentication_and_a_refusing_relay_is_tried_again()
 {
    use weft_tests::receivers::{Smtp, SmtpMode};
    // The STARTTLS relay refuses the first mail (451), as one not ready does.
    let starttls = Smtp::start(SmtpMode::StartTls, "weft", "mail-pw", 1);
    let implicit = Smtp::start(SmtpMode::Implicit, "weft", "mail-pw", 0);
    let (w, _) = setup_with(&[("WEFT_NOTIFY_RETRY_SECONDS", "1")]);
    w.add_keys(&format!(
        "relay|smtp|smtp://localhost:{}|weft|mail-pw|ca={}\n\
         relay-tls|smtp|smtps://localhost:{}|weft|mail-pw|ca={}\n\
         relay-wrong|smtp|smtp://localhost:{}|weft|not-the-password|ca={}\n",
        starttls.port,
        starttls.ca.display(),
        implicit.port,
        implicit.ca.display(),
        starttls.port,
        starttls.ca.display(),
    ));
    let mut doc = notify_doc(
        "https://unused.example/",
        json!([
        {"on": ["failed"], "to": ["team", "on-call", "wrong-password"]}]),
    );
    doc["transformationData"]["notifications"]["channels"] = json!([
        {"name": "team", "type": "email", "server": "relay", "from": "weft@example.com",
         "to": ["data-team@example.com", "Anna <anna@example.com>"]},
        {"name": "on-call", "type": "email", "server": "relay-tls", "from": "weft@example.com",
         "to": ["oncall@example.com"], "subject": "{{ batch | upper }} {{ state }}"},
        {"name": "wrong-password", "type": "email", "server": "relay-wrong", "from": "weft@example.com",
         "to": ["nobody@example.com"]}]);
    deploy(&w, &doc);
    let failed = run_sheet(&w, 2, "nightly");
    let team = starttls.wait_for(|m| !m.is_empty());
    assert_eq!(team.len(), 1, "{team:#?}");
    let mail = &team[0];
    assert_eq!(mail["tls"], true, "STARTTLS was used: {mail}");
    assert_eq!(mail["user"], "weft", "{mail}");
    assert_eq!(mail["from"], "weft@example.com");
    assert_eq!(
        mail["to"],
        json!(["data-team@example.com", "anna@example.com"])
    );
    assert_eq!(
        mail["subject"],
        format!("[weft] nightly: run {failed} failed")
    );
    assert_eq!(
        mail["header_to"],
        "data-team@example.com, Anna <anna@example.com>"
    );
    let body = mail["body"].as_str().expect("body");
    assert!(
        body.starts_with(&format!(
            "Run {failed} failed.\n\nBatch:    nightly\nRun:      {failed} (failed)\n"
        )),
        "{body}"
    );
    assert!(
        body.contains(
            "  - load orders (200): action 200 (Sql): SQLite (connection 1): no such table: nowhere"
        ),
        "{body}"
    );
    assert!(body.contains(&format!("#/runs/{failed}\n")), "{body}");
    let on_call = implicit.wait_for(|m| !m.is_empty());
    assert_eq!(on_call.len(), 1, "{on_call:#?}");
    assert_eq!(on_call[0]["tls"], true);
    assert_eq!(on_call[0]["subject"], "NIGHTLY failed");
    // The relay that refused first was tried again; the wrong password waits, saying why.
    let listed = wait_notifications(&w, |n| {
        n.iter().filter(|n| n["state"] == "sent").count() == 2
            && n.iter()
                .any(|n| n["channel"] == "wrong-password" && n["attempts"].as_i64() >= Some(1))
    });
    let of = |channel: &str| {
        listed
            .iter()
            .find(|n| n["channel"] == channel)
            .unwrap_or_else(|| panic!("no {channel} in {listed:#?}"))
    };
    assert_eq!(
        (
            of("team")["state"].as_str(),
            of("team")["attempts"].as_i64()
        ),
        (Some("sent"), Some(2)),
        "{listed:#?}"
    );
    assert!(
        of("team")["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("451")),
        "{listed:#?}"
    );
    assert_eq!(of("on-call")["attempts"], 1);
    let wrong = of("wrong-password");
    assert_eq!(wrong["state"], "pending", "{wrong}");
    let why = wrong["lastError"].as_str().expect("why");
    assert!(
        why.contains("535") && why.contains(&format!("localhost:{}", starttls.port)),
        "{why}"
    );
    assert!(!why.contains("not-the-password"), "{why}");
}

#[test]
fn a_notification_that_cannot_be_sent_is_given_up_after_its_time_with_why() {
    // The receiver never takes it; the clock moves only when the test says.
    let hook = Webhook::start(SECRET, usize::MAX >> 1);
    let (w, _data) = stepped_server(
        "2026-11-27 10:00:00",
        &[
            ("WEFT_NOTIFY_RETRY_SECONDS", "1"),
            ("WEFT_NOTIFY_GIVE_UP_MINUTES", "1"),
        ],
        "CREATE TABLE other (n INTEGER)",
    );
    let mut doc = notify_doc(&hook.url, json!([{"on": ["failed"], "to": ["team-hook"]}]));
    with_data(&mut doc);
    deploy(&w, &doc);
    run_sheet(&w, 2, "nightly");
    let first = wait_notifications(&w, |n| n.first().is_some_and(|n| n["attempts"] == 1));
    assert_eq!(first[0]["state"], "pending", "{first:#?}");
    // Past the minute: the next try fails too, and it is given up.
    let (st, v) = command(&w, "AdvanceClock", json!({"to": "2026-11-27 10:02:00"}));
    assert_eq!(st, 200, "{v}");
    let listed = wait_notifications(&w, |n| n.first().is_some_and(|n| n["state"] == "given_up"));
    let n = &listed[0];
    assert_eq!(
        (n["state"].as_str(), n["attempts"].as_i64()),
        (Some("given_up"), Some(2)),
        "{n}"
    );
    let why = n["lastError"].as_str().expect("why");
    assert!(
        why.starts_with("given up after 2 tries over 2 minutes: POST "),
        "{why}"
    );
    assert!(why.contains("503"), "{why}");
    assert!(n.get("nextAttempt").is_none(), "{n}");
    assert_eq!(hook.requests().len(), 2);
    let given_up = notifications(&w, json!({"state": "given_up"}));
    assert_eq!(given_up.len(), 1);
    assert!(notifications(&w, json!({"state": "pending"})).is_empty());
}

#[test]
fn a_planned_start_passed_while_the_batch_still_runs_is_told_as_missed() {
    let hook = Webhook::start(SECRET, 0);
    let (w, data) = stepped_server(
        "2026-11-27 10:30:00",
        &[("WEFT_TIMEZONE", "Europe/Berlin")],
        "CREATE TABLE other (n INTEGER)",
    );
    let mut doc = notify_doc(
        &hook.url,
        json!([{"on": ["missed", "started"], "to": ["team-hook"]}]),
    );
    with_data(&mut doc);
    let td = &mut doc["transformationData"];
    td["batches"] = json!([{"id": 8, "name": "hourly", "schedule": "every 60 minutes",
        "elements": [{"elementType": "S", "elementId": 1}]}]);
    deploy(&w, &doc);
    // The 11:00 run waits for the data file's write lock; the 12:00 start passes.
    let gate = rusqlite::Connection::open(&data).expect("data");
    gate.execute_batch("BEGIN IMMEDIATE")
        .expect("the write lock");
    for to in ["2026-11-27 11:00:00", "2026-11-27 12:00:00"] {
        let (st, v) = command(&w, "AdvanceClock", json!({"to": to}));
        assert_eq!(st, 200, "{v}");
    }
    let got = hook.wait_for(|r| r.len() >= 2);
    gate.execute_batch("ROLLBACK").expect("release");
    let bodies: Vec<Value> = got
        .iter()
        .map(|r| serde_json::from_str(r["body"].as_str().expect("body")).expect("JSON"))
        .collect();
    assert_eq!(bodies.len(), 2, "{bodies:#?}");
    let started = bodies
        .iter()
        .find(|b| b["event"] == "started")
        .expect("started");
    assert_eq!(started["batch"], "hourly");
    assert_eq!(started["plannedStart"], "2026-11-27 11:00:00");
    let missed = bodies
        .iter()
        .find(|b| b["event"] == "missed")
        .expect("missed");
    assert_eq!(missed["batch"], "hourly");
    assert_eq!(missed["batchId"], 8);
    assert_eq!(missed["planned"], "2026-11-27 12:00:00");
    assert_eq!(
        missed["headline"],
        "the planned start 2026-11-27 12:00:00 was missed"
    );
    assert!(
        missed["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{missed}"
    );
}

/// A server on a home of its own with the webhook's secret, whose process stops dead at
/// fault point `fault`; sheets 1 and 2 and a rule on `failed` deployed.
fn server_stopping_at(hook: &Webhook, fault: &str) -> Weft {
    let (w, _) = setup_with(&[("WEFT_FAULT", fault)]);
    w.add_keys(&format!("hook|secret|||{SECRET}|\n"));
    deploy(
        &w,
        &notify_doc(&hook.url, json!([{"on": ["failed"], "to": ["team-hook"]}])),
    );
    w
}

/// Runs the failing sheet 2 on `w`, whose process then stops dead at its fault point; its
/// home.
fn fail_and_stop(w: Weft) -> tempfile::TempDir {
    let (st, v) = command(
        &w,
        "RunElements",
        json!({"batchExecution": {"batchName": "nightly", "user": "t",
            "elementList": [{"elementType": "S", "elementId": 2}]}}),
    );
    assert_eq!(st, 200, "{v}");
    let (status, home) = w.exited(std::time::Duration::from_secs(30));
    assert!(!status.success(), "{status:?}");
    home
}

#[test]
fn a_server_killed_after_the_event_and_before_the_send_sends_it_once_when_it_starts_again() {
    let hook = Webhook::start(SECRET, 0);
    // The run fails; its notification is committed with its end, claimed, and the process
    // stops dead before anything is sent.
    let home = fail_and_stop(server_stopping_at(&hook, "before_notification_send"));
    assert!(hook.requests().is_empty());
    // At its next start the claim of the stopped process is let go: sent at once, once.
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    let got = hook.wait_for(|r| !r.is_empty());
    assert_eq!(got.len(), 1, "{got:#?}");
    let listed = wait_notifications(&w, |n| n.first().is_some_and(|n| n["state"] == "sent"));
    assert_eq!(
        (listed.len(), listed[0]["attempts"].as_i64()),
        (1, Some(1)),
        "{listed:#?}"
    );
    assert_eq!(hook.requests().len(), 1, "nothing sent twice");
}

#[test]
fn a_server_killed_after_the_send_and_before_its_record_sends_it_again_with_the_same_id() {
    let hook = Webhook::start(SECRET, 0);
    let home = fail_and_stop(server_stopping_at(&hook, "after_notification_send"));
    assert_eq!(
        hook.requests().len(),
        1,
        "the receiver took it before the stop"
    );
    // Delivery is at least once: the next start sends it again, with the same id, by which
    // the receiver can tell the repeat.
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    let got = hook.wait_for(|r| r.len() >= 2);
    assert_eq!(got.len(), 2, "{got:#?}");
    assert_eq!(
        got[0]["headers"]["weft-notification-id"],
        got[1]["headers"]["weft-notification-id"]
    );
    // The same notification; only the link names the restarted server's new port.
    let body = |r: &Value| {
        let mut b: Value = serde_json::from_str(r["body"].as_str().expect("body")).expect("JSON");
        b.as_object_mut().expect("object").remove("url");
        b
    };
    assert_eq!(body(&got[0]), body(&got[1]), "the same notification");
    let listed = wait_notifications(&w, |n| n.first().is_some_and(|n| n["state"] == "sent"));
    assert_eq!(listed[0]["state"], "sent", "{listed:#?}");
}

#[test]
fn a_receiver_that_does_not_answer_is_given_up_on_after_the_channels_timeout_and_tried_again() {
    // The first POST gets no answer for 10 s; the channel waits 1 s.
    let hook = Webhook::start_hanging(SECRET, 1, 0);
    let (w, _) = setup_with(&[("WEFT_NOTIFY_RETRY_SECONDS", "1")]);
    w.add_keys(&format!("hook|secret|||{SECRET}|\n"));
    let mut doc = notify_doc(&hook.url, json!([{"on": ["failed"], "to": ["team-hook"]}]));
    doc["transformationData"]["notifications"]["channels"][0]["timeoutSeconds"] = json!(1);
    deploy(&w, &doc);
    let started = std::time::Instant::now();
    run_sheet(&w, 2, "nightly");
    let listed = wait_notifications(&w, |n| n.first().is_some_and(|n| n["state"] == "sent"));
    let n = &listed[0];
    assert_eq!(
        (n["state"].as_str(), n["attempts"].as_i64()),
        (Some("sent"), Some(2)),
        "{n}"
    );
    let why = n["lastError"].as_str().expect("the first try's error");
    assert!(
        why.contains("timed out") || why.contains("timeout"),
        "{why}"
    );
    // Well before the receiver's 10 s: the send did not wait for it.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(9),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(hook.requests().len(), 1);
}
