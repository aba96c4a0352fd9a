//! End to end: `GET /metrics` of a real `weft serve` in Prometheus's text format: deploys
//! applied and rejected, actions ended with their durations, rows and failing modules,
//! connections that could not be opened, instances by state, the build; every line in the
//! format; the guard of the commands (a token beyond loopback, no cross-site page, GET only).

use crate::common;

use common::*;
use serde_json::json;

/// The metrics URL of a server whose service URL is `url`.
fn metrics_url(url: &str) -> String {
    url.replace("/weft/service", "/metrics")
}

/// GET /metrics with extra headers: status, content type, body.
fn scrape(url: &str, headers: &[(&str, &str)]) -> (u16, String, String) {
    weft::init_tls();
    let mut req = reqwest::blocking::Client::new().get(metrics_url(url));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().expect("request");
    let status = resp.status().as_u16();
    let kind = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, kind, resp.text().expect("body"))
}

/// The value of the sample written as `series` (name and labels), if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| {
            l.strip_prefix(series)
                .is_some_and(|rest| rest.starts_with(' '))
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// Every line is a `# HELP`/`# TYPE` comment or `name{labels} value`, as Prometheus reads.
fn assert_text_format(text: &str) {
    assert!(text.ends_with('\n'), "the answer ends with a line break");
    for line in text.lines() {
        if let Some(comment) = line.strip_prefix("# ") {
            assert!(
                comment.starts_with("HELP weft_") || comment.starts_with("TYPE weft_"),
                "{line}"
            );
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a value");
        let name_end = series.find('{').unwrap_or(series.len());
        let name = &series[..name_end];
        assert!(
            name.starts_with("weft_")
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{line}"
        );
        if name_end < series.len() {
            assert!(series.ends_with('}'), "{line}");
        }
        assert!(value.parse::<f64>().is_ok() || value == "+Inf", "{line}");
    }
}

/// The server's log files, read again until `done` holds of them (for 10 s at most).
fn server_log_with(w: &Weft, done: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let mut log = String::new();
        for entry in std::fs::read_dir(w.home.path().join("logs")).expect("logs") {
            log.push_str(
                &std::fs::read_to_string(entry.expect("entry").path()).unwrap_or_default(),
            );
        }
        if done(&log) || std::time::Instant::now() > deadline {
            return log;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `promtool` (Debian's prometheus package; tests/install-needs.sh installs it) with `args`,
/// `stdin` written to it, in the repository's root.
fn promtool(args: &[&str], stdin: Option<&str>) -> std::process::Output {
    use std::io::Write as _;
    let mut child = std::process::Command::new("promtool")
        .args(args)
        .current_dir(root())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (Debian: apt-get install prometheus; tests/install-needs.sh does)");
    let mut input = child.stdin.take().expect("stdin");
    input
        .write_all(stdin.unwrap_or_default().as_bytes())
        .expect("write to promtool");
    drop(input);
    child.wait_with_output().expect("promtool ran")
}

#[test]
fn the_example_alert_rules_are_valid_pass_their_tests_and_name_only_series_weft_serves() {
    let rules = "docs/alerts/weft.rules.yml";
    let checked = promtool(&["check", "rules", rules], None);
    assert!(checked.status.success(), "{checked:?}");
    let tested = promtool(&["test", "rules", "docs/alerts/weft.rules.test.yml"], None);
    assert!(tested.status.success(), "{tested:?}");
    // Every weft series a rule names is one the server makes (its HELP text is in the
    // metrics' source): a renamed metric breaks this test, not a team's alert in silence.
    let text = std::fs::read_to_string(root().join(rules)).expect("rules");
    let source =
        std::fs::read_to_string(root().join("host/core/src/metrics.rs")).expect("metrics.rs");
    let mut named = 0;
    for (at, _) in text.match_indices("weft_") {
        let name: String = text[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name == "weft_" || text[..at].ends_with("# ") {
            continue;
        }
        named += 1;
        assert!(
            source.contains(&format!("\"{name}\"")),
            "{rules} names {name}, which weft does not serve"
        );
    }
    assert!(named >= 6, "{named} series named");
}

fn run_sheet(w: &Weft, sheet: i64) -> serde_json::Value {
    let (st, v) = command(
        w,
        "RunElements",
        json!({"batchExecution": {"batchName": "m", "user": "t",
            "elementList": [{"elementType": "S", "elementId": sheet}]}}),
    );
    assert_eq!(st, 200, "{v}");
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    let (st, v) = command(
        w,
        "WaitBatchInstance",
        json!({"batchInstanceId": id, "timeoutSeconds": 60}),
    );
    assert_eq!(st, 200, "{v}");
    v["payload"].clone()
}

/// Sheet `id` whose one `Sql` action runs `sql` into `table` on `connection`.
fn one_action(id: i64, sql: &str, table: &str, connection: i64) -> serde_json::Value {
    let (a, t) = (id * 10, id * 10 + 1);
    json!({"id": id, "attributes": {"name": format!("m{id}"), "folder_id": 10, "folder": "/m"},
      "nodes": [
        {"id": a, "type": 0, "attributes": {"module": "Sql", "name": format!("a{id}"), "action": sql}},
        {"id": t, "type": 1, "attributes": {"field1": table, "objectTypeId": 1, "connectionId": connection}}],
      "edges": [{"id": t, "from": a, "to": t}]})
}

#[test]
fn metrics_count_deploys_actions_rows_and_failures_in_prometheus_text() {
    let w = Weft::start();
    let data = w.home.path().join("data.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("CREATE TABLE t (n INTEGER)")
        .expect("table");
    w.add_keys(&format!(
        "1|sqlite|{}|||\n3|sqlite|{}|||\n",
        data.display(),
        w.home.path().join("no-such-folder/x.db").display()
    ));
    // Nothing yet: the build, this host, no deploys.
    let (st, kind, text) = scrape(&w.url, &[]);
    assert_eq!(st, 200, "{text}");
    assert_eq!(kind, "text/plain; version=0.0.4; charset=utf-8");
    assert_text_format(&text);
    assert!(text.contains("weft_build_info{version=\""), "{text}");
    assert_eq!(sample(&text, "weft_hosts"), Some(1.0), "{text}");
    assert_eq!(
        sample(&text, r#"weft_deploys_total{result="applied"}"#),
        None
    );

    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/m"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"},
                        {"id": 3, "name": "gone", "type": "sqlite"}],
        "sheets": [
            one_action(1, "INSERT INTO t VALUES (1), (2)", "t", 1),
            one_action(2, "INSERT INTO nowhere VALUES (1)", "nowhere", 1),
            one_action(3, "INSERT INTO t VALUES (3)", "t", 3)]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    let (st, v) = post(
        &w.url,
        deploy_body("{ version: 1, transformationData: { sheets: [ { id: 1 } ] } }"),
    );
    assert_eq!(st, 422, "{v}");
    assert_eq!(run_sheet(&w, 1)["state"], "finished");
    assert_eq!(run_sheet(&w, 2)["state"], "failed");
    assert_eq!(run_sheet(&w, 3)["state"], "failed");

    let (st, _, text) = scrape(&w.url, &[]);
    assert_eq!(st, 200, "{text}");
    assert_text_format(&text);
    let is =
        |series: &str, n: f64| assert_eq!(sample(&text, series), Some(n), "{series} in\n{text}");
    is(r#"weft_deploys_total{result="applied"}"#, 1.0);
    is(r#"weft_deploys_total{result="rejected"}"#, 1.0);
    is(r#"weft_actions_ended_total{state="finished"}"#, 1.0);
    // Three tries failed: sheet 2's, and sheet 3's twice (a connection that cannot be
    // opened is tried again at once, once, without counting against its retries).
    is(r#"weft_actions_ended_total{state="failed"}"#, 3.0);
    is(r#"weft_rows_total{kind="written"}"#, 2.0);
    is(r#"weft_plugin_errors_total{module="Sql"}"#, 3.0);
    // Connection 3 could not be opened three times: by the deploy's check of its object,
    // and by the run's two tries.
    is(r#"weft_connection_errors_total{type="sqlite"}"#, 3.0);
    is(r#"weft_instances{state="finished"}"#, 1.0);
    is(r#"weft_instances{state="failed"}"#, 2.0);
    is(r#"weft_actions{state="R"}"#, 0.0);
    is("weft_host_actions_running", 0.0);
    is(r#"weft_action_duration_seconds_count{state="failed"}"#, 3.0);
    // Each instance's end, by its batch name: counted right after its end is recorded (a
    // wait may answer first), so looked for until there.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (_, _, text) = scrape(&w.url, &[]);
        let runs = |state: &str| {
            sample(
                &text,
                &format!(r#"weft_batch_runs_total{{batch="m",state="{state}"}}"#),
            )
        };
        if runs("finished") == Some(1.0) && runs("failed") == Some(2.0) {
            assert_eq!(
                sample(&text, r#"weft_batch_duration_seconds_count{batch="m"}"#),
                Some(3.0),
                "{text}"
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{text}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    is(
        r#"weft_action_duration_seconds_bucket{state="finished",le="+Inf"}"#,
        1.0,
    );
    // A failed action and a failed instance are in the server's log at WARN, with the
    // batch, the instance, the action and the error (the log file is written behind, so
    // read until there).
    let failed_action = |log: &str| {
        log.lines().any(|l| {
            l.contains(" WARN ")
                && l.contains("An action failed.")
                && l.contains(r#"batch="m" "#)
                && l.contains(r#"action="a2" "#)
                && l.contains("no such table: nowhere")
        })
    };
    let failed_instance = |log: &str| {
        log.lines().any(|l| {
            l.contains(" WARN ")
                && l.contains("Batch instance ended without finishing.")
                && l.contains(r#"batch="m" "#)
                && l.contains("state=failed")
        })
    };
    let log = server_log_with(&w, |log| failed_action(log) && failed_instance(log));
    assert!(failed_action(&log) && failed_instance(&log), "{log}");
    // Prometheus itself reads the answer as valid.
    let checked = promtool(&["check", "metrics"], Some(&text));
    assert!(
        checked.status.success(),
        "promtool check metrics: {checked:?}\n{text}"
    );
    assert!(
        !text.contains("secret") && !text.contains("no-such-folder"),
        "no key file text: {text}"
    );

    // The guard of the commands: GET only, no cross-site page.
    weft::init_tls();
    let resp = reqwest::blocking::Client::new()
        .post(metrics_url(&w.url))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .expect("request");
    assert_eq!(resp.status().as_u16(), 405);
    let (st, _, body) = scrape(&w.url, &[("origin", "http://evil.example")]);
    assert_eq!(st, 403, "{body}");
    assert!(body.contains("request.cross_site"), "{body}");
}

#[test]
fn beyond_loopback_metrics_need_the_token() {
    let w = Weft::start_with(&["--listen", "0.0.0.0:0"], &[]);
    let (st, _, body) = scrape(&w.url, &[]);
    assert_eq!(st, 401, "{body}");
    assert!(body.contains("request.unauthorized"), "{body}");
    let o = w.script("getkey", &["weft_server", "--field", "token"], None);
    assert!(o.status.success(), "{o:?}");
    let token = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let (st, _, text) = scrape(&w.url, &[("authorization", &format!("Bearer {token}"))]);
    assert_eq!(st, 200, "{text}");
    assert_text_format(&text);
    assert!(!text.contains(&token), "the token is not in the answer");
}

#[test]
fn unknown_module_and_connection_type_names_do_not_make_new_series() {
    let w = Weft::start();
    let data = w.home.path().join("data.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("CREATE TABLE t (n INTEGER)")
        .expect("table");
    w.add_keys(&format!(
        "1|sqlite|{}|||\n4|madeup-type-1|x://nowhere|||\n5|madeup-type-2|x://nowhere|||\n",
        data.display()
    ));
    // Forty sheets naming forty modules nobody has, deployed without validation, and two
    // connections of types nobody has.
    let sheets: Vec<serde_json::Value> = (1..=40)
        .map(|id| {
            let mut s = one_action(
                id,
                "SELECT 1",
                "t",
                if id % 3 == 0 { 4 + id % 2 } else { 1 },
            );
            s["nodes"][0]["attributes"]["module"] = json!(format!("NoSuchModule{id}"));
            s
        })
        .collect();
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/m"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"},
                        {"id": 4, "name": "odd1", "type": "madeup-type-1"},
                        {"id": 5, "name": "odd2", "type": "madeup-type-2"}],
        "sheets": sheets}});
    let body = json!({"command": "DeployRepository", "payload": {"content": doc.to_string(),
        "deployOptions": {"validate": "false"}}});
    let (st, v) = post(&w.url, body.to_string().into_bytes());
    assert_eq!(st, 200, "{v}");
    for id in 1..=40 {
        assert_eq!(run_sheet(&w, id)["state"], "failed");
    }
    let (st, _, text) = scrape(&w.url, &[]);
    assert_eq!(st, 200, "{text}");
    assert_text_format(&text);
    assert_eq!(
        sample(&text, r#"weft_plugin_errors_total{module="unknown"}"#),
        Some(40.0),
        "{text}"
    );
    assert!(!text.contains("NoSuchModule"), "{text}");
    assert!(!text.contains("madeup-type"), "{text}");
}
