//! End to end: several `weft serve` processes (hosts) on one repository in PostgreSQL. A
//! deploy on one is seen by all; a run started on one is claimed by whichever host has a
//! free slot and answered the same on every host; halt asked on one host stops an action
//! running on another; a host killed mid-run has its running actions taken over by the
//! others after its lease, run again (nothing of them committed), and each action's rows
//! land once (in a 1,000-action run of four instances started through different hosts, with
//! chains across sheets); a version deployed through one host is what a run through another
//! runs at once; the repository's server stopped and started mid-run loses no end. The
//! actions wait on a PostgreSQL advisory lock the test holds, so what runs where is seen, not
//! raced.

use crate::common;

use common::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use weft_tests::postgres::Postgres;

/// The advisory lock the actions wait for.
const GATE: i64 = 4242;

/// Deploys, on `w`, `n` actions that wait for the gate and insert their id into `t`.
fn deploy_actions(w: &Weft, n: i64) {
    deploy_sql_actions(
        w,
        n,
        &format!(
            "INSERT INTO t SELECT ${{action_id}} FROM (SELECT pg_advisory_xact_lock_shared({GATE})) g"
        ),
    );
}

fn get(w: &Weft, id: i64) -> Value {
    let (st, v) = command(w, "GetBatchInstance", json!({"batchInstanceId": id}));
    assert_eq!(st, 200, "{v}");
    v["payload"].clone()
}

/// The hosts of the running actions of instance `id`, once `running` run, as `w` sees them.
fn running_on(w: &Weft, id: i64, running: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let inst = get(w, id);
        let hosts: Vec<String> = inst["actions"]
            .as_array()
            .expect("actions")
            .iter()
            .filter(|a| a["state"] == "R")
            .map(|a| {
                a["host"]
                    .as_str()
                    .expect("a running action's host")
                    .to_owned()
            })
            .collect();
        if hosts.len() >= running {
            return hosts;
        }
        assert!(Instant::now() < deadline, "{running} never ran: {inst}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn wait(w: &Weft, id: i64) -> Value {
    let (st, v) = command(
        w,
        "WaitBatchInstance",
        json!({"batchInstanceId": id, "timeoutSeconds": 90}),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["timedOut"], false, "{v}");
    v["payload"].clone()
}

fn rows_of_t(data: &str) -> (i64, i64) {
    let out = repository_server()
        .psql_in(
            data,
            "SELECT count(*) || '|' || count(DISTINCT action_id) FROM t",
        )
        .expect("count");
    let (all, distinct) = out.trim().split_once('|').expect("two counts");
    (
        all.parse().expect("count"),
        distinct.parse().expect("distinct"),
    )
}

#[test]
fn three_hosts_share_the_work_and_answer_alike() {
    let (hosts, data) = cluster(3, &[("WEFT_MAX_PARALLEL_ACTIONS", "2")]);
    let gate = Gate::hold(&data, GATE);
    // Deployed on the first host, run on the second.
    deploy_actions(&hosts[0], 9);
    let id = run_folder(&hosts[1]);
    // Two slots a host: six run at once, on all three hosts.
    let on = running_on(&hosts[2], id, 6);
    let mut distinct = on.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "every host took its share: {on:?}");
    // Every host lists the three, and the running instance's hosts.
    let (st, v) = command(&hosts[0], "ListHosts", json!({}));
    assert_eq!(st, 200, "{v}");
    let listed: Vec<&str> = v["payload"]["hosts"]
        .as_array()
        .expect("hosts")
        .iter()
        .map(|h| h["host"].as_str().expect("host"))
        .collect();
    assert_eq!(listed.len(), 3, "{v}");
    for h in &distinct {
        assert!(listed.contains(&h.as_str()), "{h} in {v}");
    }
    let (_, v) = command(&hosts[1], "ListBatchInstances", json!({"limit": 5}));
    let mut running_on_listed: Vec<String> =
        serde_json::from_value(v["payload"]["instances"][0]["runningOn"].clone())
            .expect("runningOn");
    running_on_listed.sort();
    assert_eq!(running_on_listed, distinct, "{v}");
    drop(gate);
    let done = wait(&hosts[0], id);
    assert_eq!(done["state"], "finished", "{done}");
    assert_eq!(rows_of_t(&data), (9, 9), "each action's row once");
    // The same answer on every host.
    let answers: Vec<Value> = hosts.iter().map(|w| get(w, id)).collect();
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[1], answers[2]);
}

#[test]
fn a_halt_asked_on_one_host_stops_an_action_running_on_another() {
    let (hosts, data) = cluster(2, &[("WEFT_MAX_PARALLEL_ACTIONS", "1")]);
    let gate = Gate::hold(&data, GATE);
    deploy_actions(&hosts[0], 3);
    let id = run_folder(&hosts[0]);
    let on = running_on(&hosts[0], id, 2);
    assert_eq!(on.len(), 2, "one on each host: {on:?}");
    let (st, v) = command(
        &hosts[1],
        "HaltBatchInstance",
        json!({"batchInstanceId": id}),
    );
    assert_eq!(st, 200, "{v}");
    // Both running statements are cancelled (the gate still stands), the waiting one halted.
    let done = wait(&hosts[0], id);
    assert_eq!(done["state"], "halted", "{done}");
    let states: Vec<&str> = done["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| a["state"].as_str().expect("state"))
        .collect();
    assert_eq!(states, ["H", "H", "H"], "{done}");
    drop(gate);
    assert_eq!(rows_of_t(&data), (0, 0), "nothing committed");
}

#[test]
fn a_wait_on_one_host_reads_nothing_while_nothing_changes_and_wakes_at_a_change_on_another() {
    let (hosts, data) = cluster(2, &[("WEFT_MAX_PARALLEL_ACTIONS", "1")]);
    let gate = Gate::hold(&data, GATE);
    deploy_actions(&hosts[0], 1);
    let id = run_folder(&hosts[0]);
    running_on(&hosts[0], id, 1);
    // Host 1 follows the run: while the action waits for the gate nothing changes, and it
    // reads the repository only for its first look and its answer, and at most once more
    // for a notice of the action's start that arrives late (a poll once a second would have
    // made five more reads).
    let before = hosts[1].wait_reads();
    let (st, v) = command(
        &hosts[1],
        "WaitBatchInstance",
        json!({"batchInstanceId": id, "timeoutSeconds": 5}),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["timedOut"], true, "{v}");
    let reads = hosts[1].wait_reads() - before;
    assert!(reads <= 4, "{reads} reads while nothing changed");
    let metrics = reqwest::blocking::get(hosts[1].url.replace("/weft/service", "/metrics"))
        .and_then(|r| r.text())
        .expect("GET /metrics");
    assert!(
        metrics.lines().any(|l| l == "weft_change_feed_up 1"),
        "{metrics}"
    );
    // A halt asked on host 0 answers host 1's wait before its time is up, change by change.
    let mut version = v["payload"]["version"]
        .as_str()
        .expect("version")
        .to_owned();
    let waiting = {
        let (url, from) = (hosts[1].url.clone(), version.clone());
        std::thread::spawn(move || {
            let body = json!({"command": "WaitBatchInstance",
                "payload": {"batchInstanceId": id, "timeoutSeconds": 60, "changedFrom": from}});
            post(&url, body.to_string().into_bytes())
        })
    };
    while hosts[1].wait_reads() < before + reads + 1 {
        std::thread::yield_now();
    }
    let (st, v) = command(
        &hosts[0],
        "HaltBatchInstance",
        json!({"batchInstanceId": id}),
    );
    assert_eq!(st, 200, "{v}");
    let (st, mut v) = waiting.join().expect("the waiting thread");
    assert_eq!(st, 200, "{v}");
    loop {
        assert_eq!(v["payload"]["timedOut"], false, "{v}");
        assert_ne!(v["payload"]["version"], version, "{v}");
        if v["payload"]["state"] == "halted" {
            break;
        }
        version = v["payload"]["version"]
            .as_str()
            .expect("version")
            .to_owned();
        let (_, next) = command(
            &hosts[1],
            "WaitBatchInstance",
            json!({"batchInstanceId": id, "timeoutSeconds": 60, "changedFrom": version}),
        );
        v = next;
    }
    drop(gate);
}

#[test]
fn a_killed_host_is_taken_over_and_its_actions_run_again_once() {
    let (mut hosts, data) = cluster(
        2,
        &[
            ("WEFT_MAX_PARALLEL_ACTIONS", "2"),
            ("WEFT_HOST_LEASE_SECONDS", "2"),
        ],
    );
    let gate = Gate::hold(&data, GATE);
    deploy_actions(&hosts[0], 8);
    let id = run_folder(&hosts[0]);
    let on = running_on(&hosts[1], id, 4);
    let victim = hosts.remove(0);
    let (st, v) = command(&victim, "ListHosts", json!({}));
    assert_eq!(st, 200, "{v}");
    let victim_id = v["payload"]["thisHost"]
        .as_str()
        .expect("thisHost")
        .to_owned();
    assert!(on.contains(&victim_id), "the victim runs some: {on:?}");
    let home = victim.stop(); // SIGKILL, its actions waiting on the gate
    drop(gate);
    // The survivor takes over after the lease; the killed host's transactions died with it.
    let done = wait(&hosts[0], id);
    assert_eq!(done["state"], "finished", "{done}");
    assert_eq!(rows_of_t(&data), (8, 8), "each action's row once");
    let survivor = hosts[0].home.path().join("host-id");
    let survivor = std::fs::read_to_string(survivor).expect("host-id");
    let rerun: Vec<&Value> = done["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter(|a| {
            a["log"].as_array().is_some_and(|l| {
                l.iter()
                    .any(|x| x.as_str().is_some_and(|x| x.contains("no commit marker")))
            })
        })
        .collect();
    assert_eq!(
        rerun.len(),
        on.iter().filter(|h| **h == victim_id).count(),
        "what ran on the killed host ran again: {done}"
    );
    for a in rerun {
        assert_eq!(a["host"].as_str(), Some(survivor.trim()), "{a}");
    }
    // The killed host is forgotten; started again (its id kept in its home), it rejoins.
    let (_, v) = command(&hosts[0], "ListHosts", json!({}));
    assert_eq!(
        v["payload"]["hosts"].as_array().map(Vec::len),
        Some(1),
        "{v}"
    );
    let back = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    let (_, v) = command(&back, "ListHosts", json!({}));
    assert_eq!(v["payload"]["thisHost"], victim_id.as_str(), "{v}");
    assert_eq!(
        v["payload"]["hosts"].as_array().map(Vec::len),
        Some(2),
        "{v}"
    );
}

#[test]
fn scheduled_starts_happen_once_across_hosts_with_kills_between() {
    const DAYS: u32 = 200;
    let zone = ("WEFT_TIMEZONE", "Europe/Berlin");
    let first = "2026-03-01 12:00:00";
    let (mut hosts, data) = cluster_with(
        3,
        &["--fake-now", first, "--stepped-clock"],
        &[("WEFT_MAX_PARALLEL_ACTIONS", "2"), zone],
    );
    deploy_sql_actions(&hosts[0], 1, "INSERT INTO t VALUES (${batch_instance_id})");
    let batch = json!({"version": 1, "transformationData": {"batches": [{"id": 3,
        "name": "nightly", "schedule": "daily 22:00",
        "elements": [{"elementType": "F", "elementId": 10}]}]}});
    let (st, v) = post(&hosts[1].url, deploy_body(&batch.to_string()));
    assert_eq!(st, 200, "{v}");
    let mut started = Vec::new();
    for day in 1..=DAYS {
        let date = chrono::NaiveDate::from_ymd_opt(2026, 3, 1).expect("date")
            + chrono::Duration::days(i64::from(day) - 1);
        let to = format!("{date} 22:00:00");
        // Every host's clock reaches the start at once; one of them starts it.
        let now = advance_all(&hosts, &to);
        let all: Vec<i64> = now.iter().flatten().copied().collect();
        assert_eq!(all.len(), 1, "day {day}: one start over all hosts: {now:?}");
        started.push(all[0]);
        if day % 20 == 0 {
            // The host that started it is killed right after the start was committed, and
            // started again (its clock where the others are).
            let k = now.iter().position(|n| !n.is_empty()).expect("the starter");
            let home = hosts.remove(k).stop();
            let back = Weft::start_in(
                home,
                &[
                    "--listen",
                    "127.0.0.1:0",
                    "--fake-now",
                    &to,
                    "--stepped-clock",
                ],
                &[
                    ("WEFT_MAX_PARALLEL_ACTIONS", "2"),
                    ("WEFT_HOST_POLL_MS", "50"),
                    zone,
                ],
            );
            hosts.push(back);
        }
        // The run ends before the next night (a batch still running skips its next start).
        let done = wait(&hosts[0], all[0]);
        assert_eq!(done["state"], "finished", "day {day}: {done}");
    }
    let mut distinct = started.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), DAYS as usize, "{started:?}");
    let (st, v) = command(&hosts[2], "ListBatchInstances", json!({"limit": 1000}));
    assert_eq!(st, 200, "{v}");
    let planned: Vec<&str> = v["payload"]["instances"]
        .as_array()
        .expect("instances")
        .iter()
        .map(|i| i["plannedStart"].as_str().expect("plannedStart"))
        .collect();
    let mut once = planned.clone();
    once.sort_unstable();
    once.dedup();
    assert_eq!(
        (planned.len(), once.len()),
        (DAYS as usize, DAYS as usize),
        "{v}"
    );
    assert_eq!(
        rows_of_t(&data),
        (i64::from(DAYS), i64::from(DAYS)),
        "each run's row once"
    );
}

#[test]
fn a_version_deployed_through_one_host_is_what_the_next_run_through_another_runs() {
    let (hosts, data) = cluster(3, &[]);
    // Twenty versions of one sheet, each deployed through one host and at once run through
    // the next: each run inserts its own version's number, never the one before.
    for version in 1..=20i64 {
        let (a, b) = (
            &hosts[version as usize % 3],
            &hosts[(version as usize + 1) % 3],
        );
        deploy_sql_actions(a, 1, &format!("INSERT INTO t VALUES ({version})"));
        let id = run_folder(b);
        let done = wait(&hosts[(version as usize + 2) % 3], id);
        assert_eq!(done["state"], "finished", "{done}");
    }
    let rows = repository_server()
        .psql_in(
            &data,
            "SELECT string_agg(action_id::text, ',' ORDER BY action_id) FROM t",
        )
        .expect("rows");
    let expected: Vec<String> = (1..=20).map(|v: i64| v.to_string()).collect();
    assert_eq!(
        rows,
        expected.join(","),
        "each run ran the version just deployed"
    );
}

#[test]
fn a_repository_server_restarted_mid_run_loses_no_end() {
    // The repository on a PostgreSQL server of this test's own, which it stops and starts;
    // the data stays on the shared one.
    let server = Postgres::start().expect("PostgreSQL");
    let (hosts, data) = cluster_on(&server, 2, &[], &[("WEFT_MAX_PARALLEL_ACTIONS", "2")]);
    let gate = Gate::hold(&data, GATE);
    deploy_actions(&hosts[0], 6);
    let id = run_folder(&hosts[0]);
    running_on(&hosts[1], id, 4);
    // The server goes down (a fast shutdown cuts every session); meanwhile the actions end,
    // and their ends cannot be recorded.
    server.stop().expect("stop");
    drop(gate);
    let deadline = Instant::now() + Duration::from_secs(30);
    while rows_of_t(&data).0 < 4 {
        assert!(
            Instant::now() < deadline,
            "the running actions never committed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    server.start_again().expect("start");
    // Back (well within the 10 s lease): the ends are recorded, the rest runs.
    let done = wait(&hosts[1], id);
    assert_eq!(done["state"], "finished", "{done}");
    assert_eq!(rows_of_t(&data), (6, 6), "each action's row once");
    let rerun = done["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter(|a| a["log"].to_string().contains("commit marker"))
        .count();
    assert_eq!(rerun, 0, "no action was settled or run again: {done}");
}

/// Deploys, on `w`, folder 11 `/chain`: `layers` layers of `width` sheets each, the sheet
/// of layer j reading table `k{j-1}` and writing `k{j}` (each with a unique key), so that a
/// layer runs only after the whole layer before it: its action inserts its id only when it
/// finds all `width` rows of the layer before (the first layer reads `k_seed`).
fn deploy_chains(w: &Weft, data: &str, layers: i64, width: i64) {
    let pg = repository_server();
    pg.psql_in(
        data,
        "CREATE TABLE k_seed (n BIGINT); INSERT INTO k_seed SELECT generate_series(1, 10)",
    )
    .expect("seed");
    let mut sheets = Vec::new();
    for j in 0..layers {
        pg.psql_in(
            data,
            &format!("CREATE TABLE k{j} (action_id BIGINT NOT NULL UNIQUE)"),
        )
        .expect("layer table");
        let before = if j == 0 {
            "k_seed".to_owned()
        } else {
            format!("k{}", j - 1)
        };
        let expected = if j == 0 { 10 } else { width };
        for c in 0..width {
            let id = 5000 + j * 100 + c;
            let (a, src, tgt) = (id * 10, id * 10 + 1, id * 10 + 2);
            let sql = format!(
                "INSERT INTO k{j} SELECT ${{action_id}} FROM (SELECT count(*) AS n FROM {before}) s WHERE s.n = {expected}"
            );
            sheets.push(json!({"id": id, "attributes": {"name": format!("chain {j}.{c}"), "folder_id": 11, "folder": "/chain"},
              "nodes": [
                {"id": a, "type": 0, "attributes": {"module": "Sql", "name": format!("c{id}"), "action": sql}},
                {"id": src, "type": 1, "attributes": {"field1": before, "objectTypeId": 1, "connectionId": 1}},
                {"id": tgt, "type": 1, "attributes": {"field1": format!("k{j}"), "objectTypeId": 1, "connectionId": 1}}],
              "edges": [{"id": src, "from": src, "to": a}, {"id": tgt, "from": a, "to": tgt}]}));
        }
    }
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 11, "path": "/chain"}], "sheets": sheets}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
}

/// Starts `elements` (`[type, id]`) on `w` as batch `name`; the instance id.
fn run_elements(w: &Weft, name: &str, elements: &[(&str, i64)]) -> i64 {
    let list: Vec<Value> = elements
        .iter()
        .map(|(t, id)| json!({"elementType": t, "elementId": id}))
        .collect();
    let (st, v) = command(
        w,
        "RunElements",
        json!({"batchExecution": {"batchName": name, "user": "tester", "elementList": list}}),
    );
    assert_eq!(st, 200, "{v}");
    v["payload"]["batchInstanceId"].as_i64().expect("id")
}

#[test]
fn a_host_killed_in_a_thousand_action_run_leaves_every_row_once() {
    const LEASE: u64 = 2;
    let (mut hosts, data) = cluster(
        3,
        &[
            ("WEFT_MAX_PARALLEL_ACTIONS", "2"),
            ("WEFT_HOST_LEASE_SECONDS", &LEASE.to_string()),
        ],
    );
    repository_server()
        .psql_in(
            &data,
            "ALTER TABLE t ADD CONSTRAINT t_once UNIQUE (action_id)",
        )
        .expect("unique key");
    // 900 one-row sheets (100..999) and ten layers of ten chained sheets: 1,000 actions.
    deploy_sql_actions(&hosts[0], 900, "INSERT INTO t VALUES (${action_id})");
    deploy_chains(&hosts[1], &data, 10, 10);
    // Four instances, started through different hosts.
    let sheets = |from: i64| -> Vec<(&str, i64)> { (from..from + 300).map(|s| ("S", s)).collect() };
    let instances = [
        run_elements(&hosts[0], "first", &sheets(100)),
        run_elements(&hosts[1], "second", &sheets(400)),
        run_elements(&hosts[2], "third", &sheets(700)),
        run_elements(&hosts[1], "chains", &[("F", 11)]),
    ];
    // The first host is killed at whatever its actions are doing once a fifth of the rows
    // are in: some between a statement and its commit, some between the commit and its
    // record.
    let deadline = Instant::now() + Duration::from_secs(60);
    while rows_of_t(&data).0 < 200 {
        assert!(Instant::now() < deadline, "the runs never got going");
        std::thread::sleep(Duration::from_millis(2));
    }
    let dead = std::fs::read_to_string(hosts[0].home.path().join("host-id"))
        .expect("host id")
        .trim()
        .to_owned();
    drop(hosts.remove(0).stop());
    let killed = Instant::now();
    // Taken over within the lease and a few seconds: nothing shows running on the dead host.
    loop {
        let on_dead = instances
            .iter()
            .map(|&id| {
                get(&hosts[0], id)["actions"]
                    .as_array()
                    .expect("actions")
                    .iter()
                    .filter(|a| a["state"] == "R" && a["host"] == dead.as_str())
                    .count()
            })
            .sum::<usize>();
        if on_dead == 0 {
            break;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(LEASE + 5),
            "{on_dead} actions still shown running on the dead host {dead} after {:?}",
            killed.elapsed()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for (n, &id) in instances.iter().enumerate() {
        let done = wait(&hosts[n % 2], id);
        assert_eq!(done["state"], "finished", "{done}");
        let all = done["actions"].as_array().expect("actions");
        assert_eq!(all.len(), if n < 3 { 300 } else { 100 });
        assert!(all.iter().all(|a| a["state"] == "F"), "{done}");
    }
    assert_eq!(
        rows_of_t(&data),
        (900, 900),
        "every one-row action's row, once"
    );
    // Each layer found the whole layer before it: ten rows in every layer's table.
    let layers = repository_server()
        .psql_in(
            &data,
            &(0..10)
                .map(|j| format!("SELECT count(*) FROM k{j}"))
                .collect::<Vec<_>>()
                .join(" UNION ALL "),
        )
        .expect("layers");
    assert_eq!(layers, ["10"; 10].join("\n"), "every chained row, in order");
}

/// Moves every host's stepped clock to `to` at once; the ids each host's tick started.
fn advance_all(hosts: &[Weft], to: &str) -> Vec<Vec<i64>> {
    std::thread::scope(|s| {
        let asks: Vec<_> = hosts
            .iter()
            .map(|w| {
                s.spawn(move || {
                    let (st, v) = command(w, "AdvanceClock", json!({ "to": to }));
                    assert_eq!(st, 200, "{v}");
                    v["payload"]["started"]
                        .as_array()
                        .expect("started")
                        .iter()
                        .map(|x| x["batchInstanceId"].as_i64().expect("id"))
                        .collect::<Vec<i64>>()
                })
            })
            .collect();
        asks.into_iter().map(|a| a.join().expect("host")).collect()
    })
}

#[test]
fn both_occurrences_of_an_autumn_overlap_start_once_each_across_hosts() {
    const BATCHES: i64 = 30;
    let zone = ("WEFT_TIMEZONE", "Europe/Berlin");
    let (hosts, data) = cluster_with(
        3,
        &["--fake-now", "2026-10-24 12:00:00", "--stepped-clock"],
        &[("WEFT_MAX_PARALLEL_ACTIONS", "40"), zone],
    );
    deploy_sql_actions(
        &hosts[0],
        1,
        &format!(
            "INSERT INTO t SELECT ${{batch_instance_id}} FROM (SELECT pg_advisory_xact_lock_shared({GATE})) g"
        ),
    );
    // Odd batches skip a start while their last run runs, even ones wait for it.
    let batches: Vec<Value> = (1..=BATCHES)
        .map(|id| {
            json!({"id": id, "name": format!("overlap {id}"), "schedule": "daily 02:30",
                "autumnOverlap": "both", "ifRunning": if id % 2 == 0 { "wait" } else { "skip" },
                "elements": [{"elementType": "F", "elementId": 10}]})
        })
        .collect();
    let doc = json!({"version": 1, "transformationData": {"batches": batches}});
    let (st, v) = post(&hosts[1].url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    let starts = |to: &str| -> Vec<i64> {
        let mut s: Vec<i64> = advance_all(&hosts, to).into_iter().flatten().collect();
        s.sort_unstable();
        s
    };
    let finish = |ids: &[i64]| {
        for id in ids {
            let done = wait(&hosts[0], *id);
            assert_eq!(done["state"], "finished", "{done}");
        }
    };
    // The first 02:30 (CEST, 00:30 UTC), every host at once: each batch starts once, and its
    // run is held until after the second 02:30.
    let gate = Gate::hold(&data, GATE);
    let first = starts("2026-10-25T00:30:00Z");
    assert_eq!(
        first.len(),
        BATCHES as usize,
        "one start of each: {first:?}"
    );
    // The second 02:30 (CET, 01:30 UTC): the skipping batches pass it, the waiting ones wait.
    let second = starts("2026-10-25T01:30:00Z");
    assert_eq!(second, Vec::<i64>::new(), "their runs still run");
    drop(gate);
    finish(&first);
    // A second later, every host at once: each waiting batch starts its second 02:30 once.
    let waited = starts("2026-10-25T01:30:01Z");
    assert_eq!(waited.len(), (BATCHES / 2) as usize, "one each: {waited:?}");
    finish(&waited);
    // The next night: each once again.
    let next = starts("2026-10-26T01:30:00Z");
    assert_eq!(next.len(), BATCHES as usize, "one start of each: {next:?}");
    finish(&next);
    let counts = hosts[2].repo_rows(
        "SELECT batch_id || ':' || count(*) FROM batch_instances GROUP BY batch_id ORDER BY batch_id",
    );
    let want: Vec<String> = (1..=BATCHES)
        .map(|b| format!("{b}:{}", if b % 2 == 0 { 3 } else { 2 }))
        .collect();
    assert_eq!(counts, want, "starts of each batch in all");
    let missed = hosts[2].repo_value("SELECT count(*) FROM missed_starts WHERE reason = 'running'");
    assert_eq!(
        missed,
        (BATCHES / 2).to_string(),
        "each skipping batch passed its second 02:30 once"
    );
}

/// This host's id, as it answers `ListHosts`.
fn this_host(w: &Weft) -> String {
    let (st, v) = command(w, "ListHosts", json!({}));
    assert_eq!(st, 200, "{v}");
    v["payload"]["thisHost"]
        .as_str()
        .expect("thisHost")
        .to_owned()
}

/// How many actions `w` runs now, as its `/metrics` says.
fn running_here(w: &Weft) -> i64 {
    let url = w.url.replace("/weft/service", "/metrics");
    let body = reqwest::blocking::get(&url)
        .and_then(reqwest::blocking::Response::text)
        .expect("metrics");
    body.lines()
        .find_map(|l| l.strip_prefix("weft_host_actions_running "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no weft_host_actions_running in {body}"))
}

#[test]
fn a_copy_of_a_host_s_home_is_refused_while_the_host_lives_and_a_killed_host_restarts_at_once() {
    // An hour's lease: a start that waited for it would never answer.
    let lease = ("WEFT_HOST_LEASE_SECONDS", "3600");
    let (mut hosts, data) = cluster(1, &[("WEFT_MAX_PARALLEL_ACTIONS", "4"), lease]);
    let gate = Gate::hold(&data, GATE);
    deploy_actions(&hosts[0], 4);
    let id = run_folder(&hosts[0]);
    let original = this_host(&hosts[0]);
    assert_eq!(running_on(&hosts[0], id, 4), vec![original.clone(); 4]);
    // A copy of its HOME (a cloned machine, a restored backup) with the same host-id.
    let copy = tempfile::tempdir().expect("copy");
    for f in ["host-id", "keyfile"] {
        std::fs::copy(hosts[0].home.path().join(f), copy.path().join(f)).expect("copy");
    }
    let log = copy.path().join("stderr.log");
    let mut started = std::process::Command::new(weft_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--home"])
        .arg(copy.path())
        .env("WEFT_HOST_LEASE_SECONDS", "3600")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("the copy");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = started.try_wait().expect("try_wait") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = started.kill();
            let _ = started.wait();
            panic!("the copy started and serves beside the original");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let said = std::fs::read_to_string(&log).expect("log");
    assert!(!status.success(), "the copy is refused: {said}");
    assert!(
        said.contains(&format!("host id {original} (HOME/host-id) is in use")),
        "{said}"
    );
    // The original's actions were left alone: still running there, and each row lands once.
    assert_eq!(running_on(&hosts[0], id, 4), vec![original.clone(); 4]);
    drop(gate);
    let done = wait(&hosts[0], id);
    assert_eq!(done["state"], "finished", "{done}");
    assert_eq!(rows_of_t(&data), (4, 4), "nothing ran twice");
    // Killed while an action runs, the host starts again at once under its id (its last
    // process is dead on this machine) and settles what it left.
    let gate = Gate::hold(&data, GATE);
    let id = run_folder(&hosts[0]);
    running_on(&hosts[0], id, 4);
    let home = hosts.remove(0).stop();
    let back = Weft::start_in(
        home,
        &["--listen", "127.0.0.1:0"],
        &[("WEFT_MAX_PARALLEL_ACTIONS", "4"), lease],
    );
    assert_eq!(this_host(&back), original);
    drop(gate);
    let done = wait(&back, id);
    assert_eq!(done["state"], "finished", "{done}");
    assert_eq!(rows_of_t(&data), (8, 4), "each action once per run");
}

#[test]
fn a_host_paused_past_its_lease_commits_nothing_that_was_taken_over() {
    // Few enough that the test server's connections suffice beside the other tests.
    const N: i64 = 8;
    let (hosts, data) = cluster(
        2,
        &[
            ("WEFT_MAX_PARALLEL_ACTIONS", "8"),
            ("WEFT_HOST_LEASE_SECONDS", "4"),
        ],
    );
    let gate = Gate::hold(&data, GATE);
    deploy_actions(&hosts[0], N);
    let signal = |host: &Weft, s: &str| {
        let st = std::process::Command::new("kill")
            .args([s, &host.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(st.success());
    };
    // The other host held while the run starts, so that the host to pause claims them: which
    // host claims first is otherwise a race.
    signal(&hosts[1], "-STOP");
    let id = run_folder(&hosts[0]);
    let on = running_on(&hosts[0], id, N as usize);
    signal(&hosts[1], "-CONT");
    let paused = this_host(&hosts[0]);
    let survivor = this_host(&hosts[1]);
    let mine = on.iter().filter(|h| **h == paused).count();
    assert!(mine > 0, "the host to pause runs some: {on:?}");
    // Paused (SIGSTOP: a frozen VM, a long stall) while its statements wait for the gate.
    signal(&hosts[0], "-STOP");
    // The other host takes them over after the lease and runs them again.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let hosts_now = running_on(&hosts[1], id, N as usize);
        if hosts_now.iter().all(|h| *h == survivor) {
            break;
        }
        assert!(Instant::now() < deadline, "never taken over: {hosts_now:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Their statements end on the database, the paused host's included: its sessions wait
    // for the gate too, and its inserts are done there, waiting for it to commit.
    drop(gate);
    let done = wait(&hosts[1], id);
    assert_eq!(done["state"], "finished", "{done}");
    assert_eq!(rows_of_t(&data), (N, N));
    // Resumed: its actions reach their commit with a lapsed lease and roll back.
    signal(&hosts[0], "-CONT");
    let deadline = Instant::now() + Duration::from_secs(60);
    while running_here(&hosts[0]) > 0 {
        assert!(Instant::now() < deadline, "its actions never ended");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(rows_of_t(&data), (N, N), "nothing committed twice");
    let after = get(&hosts[1], id);
    assert_eq!(
        after["state"], "finished",
        "its late ends changed nothing: {after}"
    );
}

#[test]
fn three_hosts_send_each_notification_once() {
    let hook = weft_tests::receivers::Webhook::start("three-hosts", 0);
    let (hosts, _data) = cluster(3, &[("WEFT_MAX_PARALLEL_ACTIONS", "4")]);
    for w in &hosts {
        w.add_keys("hook|secret|||three-hosts|\n");
    }
    // Thirty actions that fail: each an actionFailed, and the run's failed, on any host.
    deploy_sql_actions(&hosts[0], 30, "INSERT INTO nowhere VALUES (1)");
    let doc = json!({"version": 1, "transformationData": {"notifications": {
        "channels": [{"name": "hook", "type": "webhook", "url": hook.url, "secret": "hook"}],
        "rules": [{"on": ["failed", "actionFailed"], "to": ["hook"]}]}}});
    let (st, v) = post(&hosts[1].url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    let id = run_folder(&hosts[2]);
    assert_eq!(wait(&hosts[0], id)["state"], "failed");
    let all_sent = |w: &Weft| {
        let (st, v) = command(w, "ListNotifications", json!({"limit": 500}));
        assert_eq!(st, 200, "{v}");
        let list = v["payload"]["notifications"]
            .as_array()
            .expect("list")
            .clone();
        (list.len(), list.iter().all(|n| n["state"] == "sent"))
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while all_sent(&hosts[0]) != (31, true) {
        assert!(Instant::now() < deadline, "{:?}", all_sent(&hosts[0]));
        std::thread::sleep(Duration::from_millis(50));
    }
    // Every host answers the same list; the receiver got each once.
    assert_eq!(all_sent(&hosts[1]), (31, true));
    let got = hook.requests();
    let mut ids: Vec<&str> = got
        .iter()
        .map(|r| r["headers"]["weft-notification-id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids.len(), 31, "{got:#?}");
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 31, "no notification twice");
    assert!(got.iter().all(|r| r["valid"] == true));
}

/// A token from `weft users add NAME --role ROLE` on `w` (the loopback admin).
fn add_user(w: &Weft, name: &str, role: &str) -> String {
    let (code, out, err) = w.cli(&["users", "add", name, "--role", role, "--url", &w.url]);
    assert_eq!(code, Some(0), "{out}{err}");
    out.lines()
        .find_map(|l| l.strip_prefix("token:"))
        .map(|t| t.trim().to_owned())
        .expect("a token printed")
}

/// A day of work on three hosts of one repository, each step through another host: users
/// added, a deploy, a run refused and one started, halted, restarted, a token refused, a
/// user disabled, a token rotated, a sheet deleted. The audit holds every step once, in
/// order, with who, from where and on which host, the same read through every host; the
/// run and the deploys record their users.
#[test]
fn a_day_of_work_on_three_hosts_is_audited_completely_and_alike_everywhere() {
    let (hosts, data) = cluster(3, &[("WEFT_MAX_PARALLEL_ACTIONS", "1")]);
    let ids: Vec<String> = hosts.iter().map(this_host).collect();
    let gate = Gate::hold(&data, GATE);
    // Morning, host 0: the admin (loopback) adds the team.
    let dana = add_user(&hosts[0], "dana", "deployer");
    let otto = add_user(&hosts[0], "otto", "operator");
    let vera = add_user(&hosts[0], "vera", "viewer");
    // Host 1: dana deploys two sheets.
    let sheet = |id: i64| {
        json!({"id": id, "attributes": {"name": format!("s{id}"), "folder_id": 10, "folder": "/load"},
          "nodes": [
            {"id": id * 10, "type": 0, "attributes": {"module": "Sql", "name": format!("a{id}"),
                "action": format!("INSERT INTO t SELECT {id} FROM (SELECT pg_advisory_xact_lock_shared({GATE})) g")}},
            {"id": id * 10 + 1, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 1}}],
          "edges": [{"id": id * 10 + 1, "from": id * 10, "to": id * 10 + 1}]})
    };
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/load"}],
        "connections": [{"id": 1, "name": "data", "type": "postgresql"}],
        "sheets": [sheet(100), sheet(101)]}});
    let (st, v) = command_as(
        &hosts[1],
        &dana,
        "DeployRepository",
        json!({"content": doc.to_string()}),
    );
    assert_eq!(st, 200, "{v}");
    // Host 2: vera may not run; otto runs sheet 100.
    let run = json!({"batchExecution": {"batchName": "adhoc", "user": "whoever",
        "elementList": [{"elementType": "S", "elementId": 100}]}});
    assert_eq!(
        command_as(&hosts[2], &vera, "RunElements", run.clone()).0,
        403
    );
    let (st, v) = command_as(&hosts[2], &otto, "RunElements", run);
    assert_eq!(st, 200, "{v}");
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    running_on(&hosts[0], id, 1);
    // Host 0: otto halts it; host 1: otto restarts it, and it finishes.
    let (st, v) = command_as(
        &hosts[0],
        &otto,
        "HaltBatchInstance",
        json!({"batchInstanceId": id}),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(wait(&hosts[0], id)["state"], "halted");
    let (st, v) = command_as(
        &hosts[1],
        &otto,
        "RestartBatchInstance",
        json!({"batchInstanceId": id}),
    );
    assert_eq!(st, 200, "{v}");
    drop(gate);
    assert_eq!(wait(&hosts[1], id)["state"], "finished");
    // Host 1: a wrong token. Host 2: the admin disables vera and rotates otto's token.
    assert_eq!(
        command_as(
            &hosts[1],
            "weft_0123456789abcdef_0000",
            "ListHosts",
            json!({})
        )
        .0,
        401
    );
    let (code, _, err) = hosts[2].cli(&["users", "disable", "vera", "--url", &hosts[2].url]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        command_as(&hosts[0], &vera, "ListHosts", json!({})).0,
        401,
        "disabled on every host at once"
    );
    let (code, _, err) = hosts[2].cli(&[
        "users",
        "token",
        "otto",
        "--replace",
        "--url",
        &hosts[2].url,
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        command_as(&hosts[1], &otto, "ListHosts", json!({})).0,
        401,
        "revoked on every host at once"
    );
    // Evening, host 0: dana deletes sheet 101.
    let (st, v) = command_as(&hosts[0], &dana, "DeleteObjects", json!({"sheets": [101]}));
    assert_eq!(st, 200, "{v}");
    // The audit, through each host: every step once, in order.
    let audits: Vec<Value> = hosts
        .iter()
        .map(|w| {
            let (st, v) = command(w, "ListAudit", json!({"limit": 1000}));
            assert_eq!(st, 200, "{v}");
            v["payload"]["entries"].clone()
        })
        .collect();
    assert_eq!(audits[0], audits[1]);
    assert_eq!(audits[1], audits[2]);
    let host_of = |h: &str| {
        ids.iter()
            .position(|i| i == h)
            .map_or_else(|| h.to_owned(), |i| format!("h{i}"))
    };
    let lines = audit_lines(
        &audits[0],
        &["host", "user", "command", "outcome", "client"],
        |field, v| {
            if field == "host" {
                host_of(v)
            } else {
                v.to_owned()
            }
        },
    );
    assert_eq!(
        lines,
        [
            "h0 loopback AddUser done 127.0.0.1",
            "h0 loopback AddUser done 127.0.0.1",
            "h0 loopback AddUser done 127.0.0.1",
            "h1 dana DeployRepository done 127.0.0.1",
            "h2 vera RunElements refused 127.0.0.1",
            "h2 otto RunElements done 127.0.0.1",
            "h0 otto HaltBatchInstance done 127.0.0.1",
            "h1 otto RestartBatchInstance done 127.0.0.1",
            "h1 none  refused 127.0.0.1",
            "h2 loopback ChangeUser done 127.0.0.1",
            "h0 none  refused 127.0.0.1",
            "h2 loopback CreateToken done 127.0.0.1",
            "h1 none  refused 127.0.0.1",
            "h0 dana DeleteObjects done 127.0.0.1",
        ],
        "{:#}",
        audits[0]
    );
    let entries = audits[0].as_array().expect("entries");
    let what = |command: &str, outcome: &str| {
        entries
            .iter()
            .find(|e| e["command"] == command && e["outcome"] == outcome)
            .and_then(|e| e["what"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let refused = what("RunElements", "refused");
    assert!(
        refused.contains("`RunElements` needs the right `operate`"),
        "{refused}"
    );
    let ran = what("RunElements", "done");
    assert!(ran.starts_with(&format!("instance {id}: ")), "{ran}");
    let halted = what("HaltBatchInstance", "done");
    assert!(
        halted.contains(&format!("\"batchInstanceId\":{id}")),
        "{halted}"
    );
    let deployed = what("DeployRepository", "done");
    assert!(deployed.starts_with("deploy "), "{deployed}");
    // Who ran and who deployed, as the run and the deploy history say.
    let (_, v) = command(
        &hosts[2],
        "GetBatchInstance",
        json!({"batchInstanceId": id}),
    );
    assert_eq!(v["payload"]["user"], "otto", "{v}");
    let (_, v) = command(&hosts[2], "ListDeploys", json!({}));
    let deployers: Vec<&str> = v["payload"]["deploys"]
        .as_array()
        .expect("deploys")
        .iter()
        .map(|d| d["user"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(deployers, ["dana", "dana"], "{v}");
}
