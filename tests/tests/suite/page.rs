//! End to end: the monitoring page as the real `weft serve` serves it over HTTP: the page and
//! its files at the root, with the headers that keep other sites from using them (a script
//! policy of the server's own files only, no frames, no sniffing), a foreign `Host` or
//! `Origin` refused, unknown files 404 and other methods 405, the page the same beyond
//! loopback (it holds no data; its commands need the token as every client does).

use crate::common;

use common::*;

/// GET `path` of the server of service URL `url` with extra headers: status, headers, body.
fn get(
    url: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, reqwest::header::HeaderMap, String) {
    weft::init_tls();
    let base = url.trim_end_matches("/weft/service");
    let mut req = reqwest::blocking::Client::new().get(format!("{base}{path}"));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().expect("request");
    let status = resp.status().as_u16();
    let h = resp.headers().clone();
    (status, h, resp.text().expect("body"))
}

fn header<'a>(h: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    h.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

#[test]
fn the_page_and_its_files_are_served_with_a_strict_policy() {
    let w = Weft::start();
    let (st, h, body) = get(&w.url, "/", &[]);
    assert_eq!(st, 200, "{body}");
    assert_eq!(header(&h, "content-type"), "text/html; charset=utf-8");
    assert!(
        body.contains(r#"<script type="module" src="/ui/app.js">"#),
        "{body}"
    );
    let csp = header(&h, "content-security-policy");
    for rule in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
        "connect-src 'self'",
    ] {
        assert!(csp.contains(rule), "{rule} in {csp}");
    }
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
        "{csp}"
    );
    assert_eq!(header(&h, "x-frame-options"), "DENY");
    assert_eq!(header(&h, "x-content-type-options"), "nosniff");
    // Every file the page names is there, with its type.
    for (path, kind) in [
        ("/ui/app.js", "text/javascript; charset=utf-8"),
        ("/ui/app.css", "text/css; charset=utf-8"),
        ("/ui/favicon.svg", "image/svg+xml"),
    ] {
        assert!(body.contains(path), "the page names {path}");
        let (st, h, text) = get(&w.url, path, &[]);
        assert_eq!(st, 200, "{path}: {text}");
        assert_eq!(header(&h, "content-type"), kind, "{path}");
        assert!(!text.is_empty(), "{path}");
    }
    // A file the browser has is "not modified": it asks again with the tag it was given.
    let (_, h, _) = get(&w.url, "/ui/app.css", &[]);
    let tag = header(&h, "etag").to_owned();
    assert!(tag.starts_with('"') && tag.ends_with('"'), "{tag}");
    let (st, h, body) = get(&w.url, "/ui/app.css", &[("if-none-match", tag.as_str())]);
    assert_eq!((st, body.as_str()), (304, ""));
    assert_eq!(header(&h, "etag"), tag);
    let (st, _, body) = get(&w.url, "/ui/app.css", &[("if-none-match", "\"other\"")]);
    assert_eq!(st, 200);
    assert!(!body.is_empty());
    // The modules the entry imports are served too, typed as scripts; that they write text
    // only is page_code's to check.
    for path in ["/ui/router.js", "/ui/lib/dom.js", "/ui/views/run.js"] {
        let (st, h, text) = get(&w.url, path, &[]);
        assert_eq!(st, 200, "{path}: {text}");
        assert_eq!(header(&h, "content-type"), "text/javascript; charset=utf-8");
        assert!(text.contains("import") || text.contains("export"), "{path}");
    }
    // Anything else is 404 or 405 in the error shape; no file outside the embedded ones.
    for path in [
        "/ui/nothing.js",
        "/ui/..%2Fsrc%2Flib.rs",
        "/ui/../src/lib.rs",
        "/ui/tsconfig.json",
        "/ui/package.json",
        "/ui/",
        "/index.html",
    ] {
        let (st, _, body) = get(&w.url, path, &[]);
        assert_eq!(st, 404, "{path}: {body}");
        assert!(
            body.contains("request.not_found") || body.contains("\"error\""),
            "{path}: {body}"
        );
    }
    weft::init_tls();
    let resp = reqwest::blocking::Client::new()
        .post(w.url.trim_end_matches("/weft/service").to_owned() + "/")
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .expect("request");
    assert_eq!(resp.status().as_u16(), 405);
    // A page of another site cannot load it, nor can a rebound name.
    let (st, _, body) = get(&w.url, "/", &[("origin", "http://evil.example")]);
    assert_eq!(st, 403, "{body}");
    let (st, _, body) = get(&w.url, "/ui/app.js", &[("host", "evil.example")]);
    assert_eq!(st, 403, "{body}");
    // A link to the page followed from another site (a chat, a mail) opens it, as the
    // browser sends such a navigation; framed or fetched from there, it stays refused, and a
    // rebound name too.
    let link = [
        ("sec-fetch-site", "cross-site"),
        ("sec-fetch-mode", "navigate"),
        ("sec-fetch-dest", "document"),
    ];
    let (st, h, body) = get(&w.url, "/", &link);
    assert_eq!(st, 200, "{body}");
    assert_eq!(header(&h, "content-type"), "text/html; charset=utf-8");
    for refused in [
        vec![
            ("sec-fetch-site", "cross-site"),
            ("sec-fetch-mode", "navigate"),
            ("sec-fetch-dest", "iframe"),
        ],
        vec![
            ("sec-fetch-site", "cross-site"),
            ("sec-fetch-mode", "cors"),
            ("sec-fetch-dest", "empty"),
        ],
        vec![
            ("sec-fetch-site", "cross-site"),
            ("sec-fetch-mode", "navigate"),
            ("sec-fetch-dest", "document"),
            ("host", "evil.example"),
        ],
    ] {
        let (st, _, body) = get(&w.url, "/", &refused);
        assert_eq!(st, 403, "{refused:?}: {body}");
    }
}

#[test]
fn beyond_loopback_the_page_loads_and_its_commands_need_the_token() {
    let w = Weft::start_with(&["--listen", "0.0.0.0:0"], &[]);
    let (st, _, body) = get(&w.url, "/", &[]);
    assert_eq!(st, 200, "{body}");
    let (st, _, body) = get(&w.url, "/ui/app.js", &[]);
    assert_eq!(st, 200, "{body}");
    let (st, _, body) = get(&w.url, "/ui/lib/session.js", &[]);
    assert_eq!(st, 200, "{body}");
    // What the page asks first: refused without the token, so the page shows its sign-in.
    let (st, v) = command(&w, "ListBatchInstances", serde_json::json!({"limit": 50}));
    assert_eq!(st, 401, "{v}");
    assert!(
        body.contains("Unauthorized") && body.contains("/weft/session"),
        "the page signs in: {body}"
    );
}

/// A server with connection 1 (`data.db`: `raw`, `stage`, `mart`, `slow`) and folder 10
/// `/etl`: sheet 1 (raw -> stage) and 2 (stage -> mart) in a chain, 3 failing on a column
/// that does not exist, 4 writing `slow` (held by a test that holds the file's lock).
pub(crate) fn server_with_sheets() -> (Weft, std::path::PathBuf) {
    let w = Weft::start();
    let data = w.home.path().join("data.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch(
            "CREATE TABLE raw (id INTEGER, v TEXT); INSERT INTO raw VALUES (1, 'a'), (2, '<b>bold</b>');
             CREATE TABLE stage (id INTEGER, v TEXT); CREATE TABLE mart (id INTEGER, v TEXT);
             CREATE TABLE slow (n INTEGER);",
        )
        .expect("tables");
    w.add_keys(&format!("1|sqlite|{}|||\n", data.display()));
    let sheet = |id: i64, sql: &str, sources: &[&str], target: &str| {
        let a = id * 10;
        let mut nodes = vec![
            serde_json::json!({"id": a, "type": 0, "attributes": {"module": "Sql", "name": format!("step {id}"), "action": sql}}),
        ];
        let mut edges = Vec::new();
        for (i, s) in sources.iter().enumerate() {
            let n = a + 1 + i as i64;
            nodes.push(serde_json::json!({"id": n, "type": 1, "attributes": {"field1": s, "objectTypeId": 1, "connectionId": 1}}));
            edges.push(serde_json::json!({"id": n, "from": n, "to": a}));
        }
        let t = a + 9;
        nodes.push(serde_json::json!({"id": t, "type": 1, "attributes": {"field1": target, "objectTypeId": 1, "connectionId": 1}}));
        edges.push(serde_json::json!({"id": t, "from": a, "to": t}));
        serde_json::json!({"id": id, "attributes": {"name": format!("sheet {id}"), "folder_id": 10, "folder": "/etl"}, "nodes": nodes, "edges": edges})
    };
    let doc = serde_json::json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/etl"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [
            sheet(1, "INSERT INTO stage SELECT * FROM raw", &["raw"], "stage"),
            sheet(2, "INSERT INTO mart SELECT * FROM stage", &["stage"], "mart"),
            sheet(3, "INSERT INTO mart SELECT id, v FROM stage WHERE nope = 1", &["stage"], "mart"),
            sheet(4, "INSERT INTO slow VALUES (1)", &[], "slow")]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    (w, data)
}

pub(crate) fn start(w: &Weft, name: &str, sheets: &[i64]) -> i64 {
    let list: Vec<serde_json::Value> = sheets
        .iter()
        .map(|s| serde_json::json!({"elementType": "S", "elementId": s}))
        .collect();
    let (st, v) = command(
        w,
        "RunElements",
        serde_json::json!({"batchExecution": {"batchName": name, "user": "tester", "elementList": list}}),
    );
    assert_eq!(st, 200, "{v}");
    v["payload"]["batchInstanceId"].as_i64().expect("id")
}

pub(crate) fn wait_end(w: &Weft, id: i64) -> serde_json::Value {
    let (st, v) = command(
        w,
        "WaitBatchInstance",
        serde_json::json!({"batchInstanceId": id, "timeoutSeconds": 60}),
    );
    assert_eq!(st, 200, "{v}");
    v["payload"].clone()
}

#[test]
fn in_a_real_browser_the_runs_and_a_run_follow_what_happens() {
    let (w, data) = server_with_sheets();
    let base = w.url.trim_end_matches("/weft/service").to_owned();
    let chain = start(&w, "nightly load", &[2, 1]);
    assert_eq!(wait_end(&w, chain)["state"], "finished");
    let broken = start(&w, "adhoc", &[1, 3]);
    assert_eq!(wait_end(&w, broken)["state"], "failed");
    // A run held by the data file's lock: it runs until the test lets go.
    let gate = rusqlite::Connection::open(&data).expect("gate");
    gate.execute_batch("BEGIN IMMEDIATE")
        .expect("the write lock");
    let held = start(&w, "held", &[4]);

    let browser = weft_tests::browser::Browser::start();
    // The runs, newest first, with their states.
    let page = browser.open(&format!("{base}/#/runs"));
    page.wait_until(
        "document.querySelectorAll('#runs tbody tr').length === 3",
        "three runs",
    );
    let ids: Vec<i64> = page
        .eval(
            "[...document.querySelectorAll('#runs tbody tr')].map(r => Number(r.dataset.instance))",
        )
        .as_array()
        .expect("ids")
        .iter()
        .filter_map(serde_json::Value::as_i64)
        .collect();
    assert_eq!(ids, vec![held, broken, chain]);
    page.screenshot("runs-1280");
    // The newest page follows new runs on its own, and what is typed in the filters stays.
    page.type_into("input[name=name]", "typed");
    let fresh = start(&w, "fresh", &[1]);
    page.wait_until(
        &format!("document.querySelector('#runs tbody tr')?.dataset.instance === '{fresh}'"),
        "a new run shown without a reload",
    );
    assert_eq!(
        page.eval("document.querySelector('input[name=name]').value"),
        "typed"
    );
    page.eval("document.querySelector('input[name=name]').value = ''");
    // Filtered by state: only the failed one.
    page.eval("document.querySelector('select[name=state]').value = 'failed'");
    page.click("form.filters button");
    page.wait_until(
        &format!("location.hash === '#/runs?state=failed' && document.querySelectorAll('#runs tbody tr').length === 1 && document.querySelector('#runs tbody tr').dataset.instance === '{broken}'"),
        "the failed run alone",
    );
    // A phone's width: still readable, the table scrolls inside its box.
    page.resize(390, 844);
    page.goto(&format!("{base}/#/runs"));
    page.wait_until(
        "document.querySelectorAll('#runs tbody tr').length === 4",
        "four runs on a phone",
    );
    assert_eq!(
        page.eval("document.documentElement.scrollWidth <= 390"),
        true,
        "no page-wide scrolling"
    );
    page.screenshot("runs-phone");
    page.resize(1280, 800);

    // The held run, followed without a reload until it finishes.
    page.goto(&format!("{base}/#/runs/{held}"));
    page.wait_until(
        "document.querySelector('#run-state')?.dataset.state === 'running'",
        "running",
    );
    page.eval("window.notReloaded = true");
    page.screenshot("run-running");
    gate.execute_batch("COMMIT").expect("let go");
    page.wait_until(
        "document.querySelector('#run-state')?.dataset.state === 'finished'",
        "finished, live",
    );
    assert_eq!(
        page.eval("window.notReloaded === true"),
        true,
        "the page was not reloaded"
    );
    assert_eq!(page.eval("document.querySelector('#halt').disabled"), true);

    // The chain: in dependency order; an action's log on a click, linkable.
    page.goto(&format!("{base}/#/runs/{chain}"));
    page.wait_until(
        "document.querySelectorAll('.tl-row').length === 2",
        "two actions",
    );
    let order =
        page.eval("[...document.querySelectorAll('.tl-row')].map(r => Number(r.dataset.action))");
    assert_eq!(
        order,
        serde_json::json!([10, 20]),
        "what an action needs comes above it"
    );
    page.click(".tl-row[data-action='10']");
    page.wait_until("document.querySelector('#log')?.textContent.includes('INSERT INTO stage SELECT * FROM raw')", "the log");
    assert_eq!(
        page.text("#rows"),
        "0 read, 2 written, 0 updated, 0 deleted"
    );
    // The deploy whose definitions it ran, linked to the deploy history from there.
    assert!(
        page.text("#deploy").starts_with("deploy "),
        "{}",
        page.text("#deploy")
    );
    assert_eq!(
        page.eval("/^#\\/deploys\\?before=\\d+$/.test(document.querySelector('#deploy').getAttribute('href'))"),
        true
    );
    assert!(
        page.eval("location.hash")
            .as_str()
            .is_some_and(|h| h.ends_with("?action=10"))
    );
    // Its neighbours in the dependencies are marked: 20 needs it; 10 needs nothing.
    let marks = "[...document.querySelectorAll('.tl-row')].map(r => [Number(r.dataset.action), r.classList.contains('needed'), r.classList.contains('follows')])";
    assert_eq!(
        page.eval(marks),
        serde_json::json!([[10, false, false], [20, false, true]])
    );
    page.screenshot("run-action-log");
    page.click(".tl-row[data-action='20']");
    page.wait_until(
        "document.querySelector('.tl-row.selected')?.dataset.action === '20'",
        "the second action chosen",
    );
    assert_eq!(
        page.eval(marks),
        serde_json::json!([[10, true, false], [20, false, false]])
    );
    page.click(".tl-row[data-action='10']");

    // The failed one: its error, and where its statement went wrong.
    page.goto(&format!("{base}/#/runs/{broken}?action=30"));
    page.wait_for("#error");
    assert!(
        page.text("#error").contains("no such column: nope"),
        "{}",
        page.text("#error")
    );
    assert_eq!(page.text("#error-place mark"), "nope");
    assert_eq!(
        page.eval("document.querySelector('#restart').disabled"),
        false
    );
    page.screenshot("run-failed");

    // Halt by the button, then Restart by the other.
    gate.execute_batch("BEGIN IMMEDIATE")
        .expect("the write lock again");
    let second = start(&w, "held again", &[4]);
    page.goto(&format!("{base}/#/runs/{second}"));
    page.wait_until(
        "document.querySelector('#run-state')?.dataset.state === 'running'",
        "running again",
    );
    // Halt asks first; Cancel leaves the run alone.
    page.click("#halt");
    page.wait_for("#halt-question");
    assert!(
        page.text("#halt-question")
            .contains(&format!("Halt run {second}"))
    );
    page.click("#halt-cancel");
    page.wait_until(
        "!document.querySelector('#halt-question')",
        "the question withdrawn",
    );
    assert_eq!(w.instance_state(second), "running");
    page.click("#halt");
    page.click("#halt-confirm");
    page.wait_until(
        "document.querySelector('#run-state')?.dataset.state === 'halted'",
        "halted by the button",
    );
    gate.execute_batch("COMMIT").expect("let go");
    page.click("#restart");
    page.click("#restart-confirm");
    page.wait_until(
        "document.querySelector('#run-state')?.dataset.state === 'finished'",
        "restarted and finished",
    );
    page.assert_no_errors();
}

#[test]
fn in_a_real_browser_a_sheet_is_drawn_as_its_graph_with_its_sql_and_last_runs() {
    let (w, _) = server_with_sheets();
    let base = w.url.trim_end_matches("/weft/service").to_owned();
    let run = start(&w, "nightly load", &[1, 2]);
    assert_eq!(wait_end(&w, run)["state"], "finished");
    // A sheet deployed with its layout: drawn where it says.
    let laid = serde_json::json!({"version": 1, "transformationData": {"folders": [{"id": 11, "path": "/etl/marts"}], "sheets": [{"id": 7,
        "attributes": {"name": "laid out", "folder_id": 11, "folder": "/etl/marts", "documentation": "Loads the <mart>."},
        "nodes": [
          {"id": 71, "type": 1, "layout": {"x": 10, "y": 40, "width": 120, "height": 50}, "attributes": {"field1": "raw", "objectTypeId": 1, "connectionId": 1}},
          {"id": 70, "type": 0, "layout": {"x": 220, "y": 40, "width": 140, "height": 50}, "attributes": {"module": "Sql", "name": "to mart", "action": "INSERT INTO mart SELECT * FROM raw", "documentation": "Copies raw rows."}},
          {"id": 79, "type": 1, "layout": {"x": 440, "y": 40, "width": 120, "height": 50}, "attributes": {"field1": "mart", "objectTypeId": 1, "connectionId": 1}}],
        "edges": [{"id": 71, "from": 71, "to": 70}, {"id": 79, "from": 70, "to": 79}]}]}});
    let (st, v) = post(&w.url, deploy_body(&laid.to_string()));
    assert_eq!(st, 200, "{v}");

    let browser = weft_tests::browser::Browser::start();
    let page = browser.open(&format!("{base}/#/sheets"));
    page.wait_for("#tree a[data-sheet='7']");
    let folders =
        page.eval("[...document.querySelectorAll('#tree .folder-name')].map(f => f.textContent)");
    assert_eq!(folders, serde_json::json!(["/etl", "/etl/marts"]));
    assert_eq!(page.count("#tree a[data-sheet]"), 5);
    page.screenshot("sheets-tree");

    // A sheet without a layout is laid out by its edges; its last runs are listed.
    page.click("#tree a[data-sheet='1']");
    page.wait_for("#graph");
    assert_eq!(page.count("#graph .node.action"), 1);
    assert_eq!(page.count("#graph .node.object"), 2);
    assert_eq!(page.count("#graph .edge[marker-end]"), 2);
    let source_left_of_action = page.eval(
        "document.querySelector('#graph .node[data-node=\"11\"] rect').x.baseVal.value < document.querySelector('#graph .node[data-node=\"10\"] rect').x.baseVal.value",
    );
    assert_eq!(
        source_left_of_action, true,
        "the source is drawn before its action"
    );
    assert_eq!(
        page.eval("[...document.querySelectorAll('#sheet-runs tbody tr')].map(r => Number(r.dataset.instance))"),
        serde_json::json!([run])
    );

    // The laid-out one: where its layout says, its action's SQL and documentation on a click.
    page.goto(&format!("{base}/#/sheets/7"));
    page.wait_until(
        "document.querySelector('#graph .node[data-node=\"79\"]')",
        "the laid-out graph",
    );
    assert_eq!(
        page.eval(
            "document.querySelector('#graph .node[data-node=\"79\"] rect').getAttribute('x')"
        ),
        "440"
    );
    page.click("#graph .node[data-node='70'] rect");
    page.wait_for("#node-sql");
    assert_eq!(page.text("#node-sql"), "INSERT INTO mart SELECT * FROM raw");
    assert_eq!(page.text("#node-doc"), "Copies raw rows.");
    assert_eq!(page.text("#node-module"), "Sql");
    assert!(
        page.text("main p.muted").contains("Loads the <mart>."),
        "documentation as text"
    );
    page.screenshot("sheet-graph");
    page.click("#graph .node[data-node='79'] rect");
    page.wait_until(
        "document.querySelector('#node-table')?.textContent === 'mart'",
        "the object's table",
    );
    assert_eq!(
        page.eval("document.querySelector('#sheet-runs')"),
        serde_json::Value::Null,
        "sheet 7 never ran"
    );
    page.resize(390, 844);
    page.goto(&format!("{base}/#/sheets/1"));
    page.wait_for("#graph");
    assert_eq!(
        page.eval("document.documentElement.scrollWidth <= 390"),
        true,
        "no page-wide scrolling"
    );
    page.screenshot("sheet-phone");
    page.assert_no_errors();
    // A sheet that does not exist says so (the browser logs the server's 404, nothing else).
    page.goto(&format!("{base}/#/sheets/999"));
    page.wait_until(
        "document.querySelector('#problem')?.textContent.includes('sheet 999 does not exist')",
        "a missing sheet",
    );
    let errors = page.take_errors();
    assert!(
        errors.len() == 1 && errors[0].contains("404"),
        "only the 404: {errors:?}"
    );
}

#[test]
fn in_a_real_browser_the_schedules_show_the_next_starts_across_a_clock_change_and_late_runs() {
    // Berlin, two days before the autumn change, on a clock the test moves.
    let w = Weft::start_with(
        &[
            "--listen",
            "127.0.0.1:0",
            "--fake-now",
            "2026-10-23 12:00:00",
            "--stepped-clock",
        ],
        &[("WEFT_TIMEZONE", "Europe/Berlin")],
    );
    let data = w.home.path().join("data.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("CREATE TABLE t (n INTEGER)")
        .expect("table");
    w.add_keys(&format!("1|sqlite|{}|||\n", data.display()));
    let doc = serde_json::json!({"version": 1, "transformationData": {
        "folders": [{"id": 5, "path": "/night"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [{"id": 50, "attributes": {"name": "load", "folder_id": 5, "folder": "/night"},
          "nodes": [
            {"id": 51, "type": 0, "attributes": {"module": "Sql", "name": "load", "action": "INSERT INTO t VALUES (1)"}},
            {"id": 52, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 1}}],
          "edges": [{"id": 53, "from": 51, "to": 52}]}],
        "batches": [
          {"id": 3, "name": "early", "schedule": "daily 02:30", "autumnOverlap": "both",
           "elements": [{"elementType": "S", "elementId": 50}]},
          {"id": 4, "name": "off", "schedule": "daily 05:00", "enabled": false,
           "elements": [{"elementType": "S", "elementId": 50}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    // The first night's start is reached ten minutes late (a downtime): a late run.
    let (st, v) = command(
        &w,
        "AdvanceClock",
        serde_json::json!({"to": "2026-10-24 02:40:00"}),
    );
    assert_eq!(st, 200, "{v}");
    let late = v["payload"]["started"][0]["batchInstanceId"]
        .as_i64()
        .expect("started");
    assert_eq!(wait_end(&w, late)["state"], "finished");
    // An hourly batch whose run is held by the data file's lock past its next start: that
    // start passes (ifRunning skip) and is kept as missed.
    let hourly = serde_json::json!({"version": 1, "transformationData": {"batches": [
        {"id": 5, "name": "often", "schedule": "every 60 minutes",
         "elements": [{"elementType": "S", "elementId": 50}]}]}});
    let (st, v) = post(&w.url, deploy_body(&hourly.to_string()));
    assert_eq!(st, 200, "{v}");
    let gate = rusqlite::Connection::open(&data).expect("data");
    gate.execute_batch("BEGIN IMMEDIATE")
        .expect("the write lock");
    let advance = |to: &str| {
        let (st, v) = command(&w, "AdvanceClock", serde_json::json!({ "to": to }));
        assert_eq!(st, 200, "{v}");
        v["payload"]["started"].clone()
    };
    let held = advance("2026-10-24 03:00:00")[0]["batchInstanceId"]
        .as_i64()
        .expect("the hourly run started");
    assert_eq!(advance("2026-10-24 04:00:00"), serde_json::json!([]));
    gate.execute_batch("ROLLBACK").expect("let go");
    assert_eq!(wait_end(&w, held)["state"], "finished");

    let base = w.url.trim_end_matches("/weft/service").to_owned();
    let browser = weft_tests::browser::Browser::start();
    let page = browser.open(&format!("{base}/#/schedules"));
    page.wait_until(
        "document.querySelectorAll('.schedule').length === 3",
        "three batches",
    );
    assert_eq!(
        page.eval(
            "[...document.querySelectorAll('.schedule h2:first-child')].map(h => h.textContent)"
        ),
        serde_json::json!(["early ", "off disabled", "often "])
    );
    // The missed start, with why.
    let missed = page.eval(
        "[...document.querySelectorAll(\".schedule[data-batch='5'] .missed tbody tr\")].map(r => [r.cells[0].textContent, r.cells[1].textContent, r.cells[2].textContent])",
    );
    assert_eq!(
        missed,
        serde_json::json!([[
            "2026-10-24 04:00:00",
            "the previous run had not finished (ifRunning: skip)",
            // In the service zone (Berlin; the browser's zone is UTC here, 02:00).
            "2026-10-24 04:00:00"
        ]])
    );
    // The times in the browser's zone on request, labelled; and back.
    assert_eq!(page.text("#zone"), "Europe/Berlin (service)");
    let passed = "document.querySelector(\".schedule[data-batch='5'] .missed tbody tr\")?.cells[2].textContent";
    page.click("#zone");
    page.wait_until(
        &format!("{passed} === '2026-10-24 02:00:00' && document.querySelector('#zone').textContent === 'UTC (browser)'"),
        "times in the browser's zone",
    );
    page.click("#zone");
    page.wait_until(
        &format!("{passed} === '2026-10-24 04:00:00'"),
        "times in the service zone again",
    );
    assert_eq!(
        page.count(".schedule[data-batch='3'] .missed"),
        0,
        "a batch that missed nothing shows no missed starts"
    );
    // The next starts of `early`: the autumn night runs twice (both), marked.
    let early = ".schedule[data-batch='3']";
    assert_eq!(page.text(&format!("{early} .schedule-text")), "daily 02:30");
    let starts = page.eval(&format!(
        "[...document.querySelectorAll(\"{early} .next-starts tbody tr\")].map(r => [r.cells[0].textContent, r.cells[2].textContent, r.classList.contains('clock-change')])"
    ));
    let rows = starts.as_array().expect("rows");
    assert_eq!(rows.len(), 5, "{starts}");
    assert_eq!(rows[0][0], "2026-10-25 02:30:00", "{starts}");
    assert_eq!(rows[1][0], "2026-10-25 02:30:00 (second)", "{starts}");
    assert_ne!(rows[0][1], rows[1][1], "two instants: {starts}");
    assert_eq!(rows[0][2], true, "the clock change is marked: {starts}");
    // The late run, with its lateness.
    page.wait_for(&format!("{early} .recent tbody tr[data-instance='{late}']"));
    assert_eq!(
        page.text(&format!(
            "{early} .recent tbody tr[data-instance='{late}'] td.late"
        )),
        "late 10 min 0 s"
    );
    page.screenshot("schedules");
    page.assert_no_errors();
}

#[test]
fn in_a_real_browser_beyond_loopback_the_page_asks_for_the_token_first() {
    let w = Weft::start_with(&["--listen", "0.0.0.0:0"], &[]);
    let o = w.script("getkey", &["weft_server", "--field", "token"], None);
    assert!(o.status.success(), "{o:?}");
    let token = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let base = w.url.trim_end_matches("/weft/service").to_owned();
    let browser = weft_tests::browser::Browser::start();
    let page = browser.open(&format!("{base}/#/runs"));
    // Nothing is shown without the token: the sign-in is.
    page.wait_for(".login form input[name=token]");
    assert_eq!(page.count("#runs"), 0);
    // A wrong token is refused and said so.
    page.type_into(".login input[name=token]", "not-the-token");
    page.click(".login button");
    page.wait_until(
        "document.querySelector('.login .problem')?.textContent === 'That token was refused.'",
        "a refused token",
    );
    // The right one shows the runs (none yet).
    page.type_into(".login input[name=token]", &token);
    page.click(".login button");
    page.wait_for("#runs");
    assert!(page.text("main").contains("No runs match."));
    assert!(
        !page
            .eval("document.body.innerText")
            .to_string()
            .contains(&token),
        "the token is not shown"
    );
    // The browser logged the server's 401 answers, and nothing else.
    let errors = page.take_errors();
    assert!(
        !errors.is_empty() && errors.iter().all(|e| e.contains("401")),
        "{errors:?}"
    );
}

#[test]
fn in_a_real_browser_the_deploys_show_what_each_deploy_changed() {
    let (w, _data) = server_with_sheets();
    // A second deploy changes sheet 1's SQL; a dry run and an identical deploy are no deploys.
    let sheet1 = |sql: &str| {
        serde_json::json!({"version": 1, "transformationData": {"sheets": [{"id": 1,
            "attributes": {"name": "sheet 1", "folder_id": 10, "folder": "/etl"},
            "nodes": [
                {"id": 10, "type": 0, "attributes": {"module": "Sql", "name": "step 1", "action": sql}},
                {"id": 11, "type": 1, "attributes": {"field1": "raw", "objectTypeId": 1, "connectionId": 1}},
                {"id": 19, "type": 1, "attributes": {"field1": "stage", "objectTypeId": 1, "connectionId": 1}}],
            "edges": [{"id": 11, "from": 11, "to": 10}, {"id": 19, "from": 10, "to": 19}]}]}})
        .to_string()
    };
    let changed = sheet1("INSERT INTO stage SELECT id, upper(v) FROM raw");
    let (st, v) = command(
        &w,
        "DeployRepository",
        serde_json::json!({"content": changed, "deployOptions": {"dryRun": true}}),
    );
    assert_eq!(st, 200, "{v}");
    for _ in 0..2 {
        let (st, v) = post(&w.url, deploy_body(&changed));
        assert_eq!(st, 200, "{v}");
    }

    let base = w.url.trim_end_matches("/weft/service").to_owned();
    let browser = weft_tests::browser::Browser::start();
    let page = browser.open(&format!("{base}/#/deploys"));
    page.wait_until(
        "document.querySelectorAll('.deploy').length === 2",
        "two deploys",
    );
    let newest = page.eval(
        "[...document.querySelectorAll('.deploy')[0].querySelectorAll('.changes tbody tr')].map(r => [...r.cells].map(c => c.textContent))",
    );
    assert_eq!(
        newest,
        serde_json::json!([["updated", "sheet", "1", "sheet 1"]])
    );
    assert_eq!(
        page.eval("document.querySelectorAll('.deploy')[1].querySelector('.counts').textContent"),
        "6 created"
    );
    let first = page.eval(
        "[...document.querySelectorAll('.deploy')[1].querySelectorAll('.changes tbody tr')].map(r => r.cells[3].textContent)",
    );
    assert_eq!(
        first,
        serde_json::json!(["/etl", "data", "sheet 1", "sheet 2", "sheet 3", "sheet 4"])
    );
    assert_eq!(page.count("#older"), 0, "two deploys fit one page");
    page.screenshot("deploys");

    // The change: the SQL line before and after, the rest folded.
    page.click(".deploy .changes tbody tr a");
    page.wait_for("#diff");
    let marked = |class: &str| {
        page.eval(&format!(
            "[...document.querySelectorAll('#diff .{class}')].map(s => s.textContent.replace(/\\s+/g, ' '))"
        ))
    };
    // The definition as fields and lines, not JSON; the words that changed marked.
    assert_eq!(
        marked("del"),
        serde_json::json!(["- action: INSERT INTO stage SELECT * FROM raw"])
    );
    assert_eq!(
        marked("add"),
        serde_json::json!(["+ action: INSERT INTO stage SELECT id, upper(v) FROM raw"])
    );
    assert_eq!(
        page.eval("[...document.querySelectorAll('#diff del, #diff ins')].map(w => w.textContent)"),
        serde_json::json!(["*", "id, upper(v)"])
    );
    let folds = marked("fold");
    assert!(
        folds.as_array().is_some_and(|f| !f.is_empty()),
        "unchanged lines are folded"
    );
    // A fold opens in place, with the lines it hid.
    let lines = "document.querySelectorAll('#diff .same').length";
    let before = page.eval(lines).as_i64().expect("a count");
    page.click("#diff button.fold");
    page.wait_until(
        &format!(
            "{lines} > {before} && document.querySelectorAll('#diff button.fold').length === {}",
            folds.as_array().map_or(0, |f| f.len() - 1)
        ),
        "the fold opened",
    );
    assert_eq!(page.text("#change-kind"), "updated");
    page.screenshot("deploy-change");
    page.resize(390, 844);
    page.goto(&format!("{base}/#/deploys"));
    page.wait_until(
        "document.querySelectorAll('.deploy').length === 2",
        "two deploys on a phone",
    );
    page.screenshot("deploys-phone");

    // A change that does not exist says so (the browser logs the server's 404, nothing else).
    page.goto(&format!("{base}/#/deploys/changes/999"));
    page.wait_until(
        "document.querySelector('#problem')?.textContent.includes('no change 999')",
        "a missing change",
    );
    let errors = page.take_errors();
    assert!(errors.iter().all(|e| e.contains("404")), "{errors:?}");

    // A delete is a deploy of its own, its line the version that went.
    let (st, v) = command(
        &w,
        "DeleteObjects",
        serde_json::json!({"sheets": ["/etl/sheet 4"]}),
    );
    assert_eq!(st, 200, "{v}");
    page.goto(&format!("{base}/#/deploys"));
    page.wait_until(
        "document.querySelectorAll('.deploy').length === 3",
        "the delete's deploy",
    );
    assert_eq!(
        page.eval("document.querySelectorAll('.deploy')[0].querySelector('.counts').textContent"),
        "1 deleted"
    );
    assert_eq!(
        page.eval(
            "[...document.querySelectorAll('.deploy')[0].querySelectorAll('.changes tbody tr')].map(r => [...r.cells].map(c => c.textContent))",
        ),
        serde_json::json!([["deleted", "sheet", "4", "/etl/sheet 4"]])
    );
    page.click(".deploy .changes tbody tr a");
    page.wait_for("#diff");
    assert_eq!(page.text("#change-kind"), "deleted");
    assert_eq!(
        marked("add"),
        serde_json::json!([]),
        "nothing after a delete"
    );
    assert!(
        marked("del").as_array().is_some_and(|d| d
            .iter()
            .any(|l| l.as_str().is_some_and(|l| l.contains("name: sheet 4")))),
        "the deleted version's lines: {}",
        marked("del")
    );
    assert_eq!(
        page.eval("[...document.querySelectorAll('.actions-bar a')].map(a => a.textContent)"),
        serde_json::json!(["All deploys"]),
        "no link to a sheet that is gone"
    );
    page.assert_no_errors();
}

#[test]
fn in_a_real_browser_a_long_chain_and_a_long_error_draw_and_the_page_reconnects_after_a_restart() {
    let w = Weft::start();
    let base = w.url.trim_end_matches("/weft/service").to_owned();
    let port = base.rsplit(':').next().expect("port").to_owned();
    // A failed run of 5,000 actions in one chain, the deepest listed first, whose failed
    // action's error is 800 KB of what made a backtracking expression take minutes.
    const CHAIN: i64 = 5_000;
    let id = {
        let mut c = rusqlite::Connection::open(w.repository()).expect("repository");
        let tx = c.transaction().expect("tx");
        tx.execute(
            "INSERT INTO batch_instances (batch_name, user_name, state, started_at, ended_at, elements, variables) VALUES ('long chain', 'etl', 'failed', '2026-11-25 01:00:00', '2026-11-25 01:10:00', '[]', '[]')",
            [],
        )
        .expect("instance");
        let id = tx.last_insert_rowid();
        let error = format!("near \"x\": syntax error {}", "in `x` ".repeat(115_000));
        {
            let mut add = tx
                .prepare("INSERT INTO instance_actions (instance_id, action_id, sheet_id, name, module, depends_on, state, started_at, ended_at, error, log) VALUES (?1, ?2, 1, ?3, 'Sql', ?4, ?5, ?6, ?7, ?8, '')")
                .expect("prepare");
            // Action 1 needs 2, 2 needs 3, ..., the first listed is the deepest.
            for a in 1..=CHAIN {
                let deps = if a == CHAIN {
                    "[]".to_owned()
                } else {
                    format!("[{}]", a + 1)
                };
                let (state, at, err) = if a == CHAIN {
                    ("E", Some("2026-11-25 01:00:00"), Some(error.as_str()))
                } else {
                    ("S", None, None)
                };
                add.execute(rusqlite::params![
                    id,
                    a,
                    format!("step {a}"),
                    deps,
                    state,
                    at,
                    at,
                    err
                ])
                .expect("action");
            }
        }
        tx.commit().expect("commit");
        id
    };
    let browser = weft_tests::browser::Browser::start();
    let page = browser.open(&format!("{base}/#/runs/{id}?action={CHAIN}"));
    page.wait_until(
        &format!("document.querySelectorAll('#timeline .tl-row').length === {CHAIN}"),
        "the whole chain drawn",
    );
    page.wait_until(
        "document.querySelector('#error')?.textContent.length > 800000",
        "the long error shown",
    );
    // In dependency order: what an action needs comes above it.
    assert_eq!(
        page.eval("[...document.querySelectorAll('#timeline .tl-row')].slice(0, 3).map((r) => r.dataset.action).join(',')"),
        serde_json::json!("5000,4999,4998")
    );
    page.assert_no_errors();
    // The runs view follows the list; the server goes away and comes back on its port.
    page.goto(&format!("{base}/#/runs"));
    page.wait_for("#runs tbody tr");
    let home = w.stop();
    page.wait_until(
        "document.querySelector('#status')?.textContent.includes('reconnecting')",
        "the page says it reconnects",
    );
    let w = Weft::start_in(home, &["--listen", &format!("127.0.0.1:{port}")], &[]);
    page.wait_until(
        "!document.querySelector('#status')?.textContent.includes('reconnecting') && document.querySelectorAll('#runs tbody tr').length === 1",
        "the page carried on by itself",
    );
    // The browser logged the refused connections while the server was gone, nothing else.
    let errors = page.take_errors();
    assert!(
        errors.iter().all(|e| e.contains("ERR_CONNECTION_REFUSED")
            || e.contains("Failed to fetch")
            || e.contains("net::")),
        "{errors:?}"
    );
    drop(w);
}

#[test]
fn in_a_real_browser_a_backfills_runs_are_one_group() {
    let (w, _data) = server_with_sheets();
    let doc = serde_json::json!({"version": 1, "transformationData": {"batches": [{"id": 3,
        "name": "slow nightly", "schedule": "daily 03:00", "enabled": false,
        "elements": [{"elementType": "S", "elementId": 4}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    let (st, v) = command(
        &w,
        "BackfillBatch",
        serde_json::json!({"batch": "slow nightly", "from": "2026-05-01", "to": "2026-05-02"}),
    );
    assert_eq!(st, 200, "{v}");
    // A run by hand beside them, which is not of the group.
    let (st, v) = command(
        &w,
        "RunElements",
        serde_json::json!({"batchExecution": {"batchName": "by hand", "user": "u",
            "elementList": [{"elementType": "S", "elementId": 1}]}}),
    );
    assert_eq!(st, 200, "{v}");
    let base = w.url.trim_end_matches("/weft/service").to_owned();
    let browser = weft_tests::browser::Browser::start();
    let page = browser.open(&format!("{base}/#/runs"));
    page.wait_until(
        "document.querySelectorAll('#runs a.backfill').length === 2",
        "the backfill's two runs",
    );
    assert_eq!(
        page.eval("[...document.querySelectorAll('#runs a.backfill')].map(a => a.textContent)"),
        serde_json::json!([
            "backfill 1 (2026-05-02 03:00:00)",
            "backfill 1 (2026-05-01 03:00:00)"
        ])
    );
    page.click("#runs a.backfill");
    page.wait_until(
        "document.querySelector('h1')?.textContent === 'Runs of backfill 1' && document.querySelectorAll('#runs tbody tr').length === 2",
        "the group alone",
    );
    page.click("#runs tbody tr a");
    page.wait_for("#backfill");
    assert_eq!(page.text("#backfill"), "backfill 1");
    page.assert_no_errors();
}

#[test]
fn in_a_real_browser_the_notifications_and_a_retried_actions_tries_are_shown() {
    let (w, data) = server_with_sheets();
    // A receiver that answers 503: the notification waits with its error.
    let hook = weft_tests::receivers::Webhook::start("s", usize::MAX >> 1);
    let doc = serde_json::json!({"version": 1, "transformationData": {
        "sheets": [{"id": 50, "attributes": {"name": "late table", "folder_id": 10, "folder": "/etl"},
            "nodes": [
                {"id": 500, "type": 0, "attributes": {"module": "Sql", "name": "count it",
                    "action": "INSERT INTO slow SELECT COUNT(*) FROM comes_later", "retries": 5,
                    "retryDelaySeconds": 1, "retryOn": "all"}},
                {"id": 501, "type": 1, "attributes": {"field1": "slow", "objectTypeId": 1, "connectionId": 1}},
                {"id": 502, "type": 1, "attributes": {"field1": "comes_later", "objectTypeId": 1, "connectionId": 1}}],
            "edges": [{"id": 501, "from": 500, "to": 501}, {"id": 502, "from": 502, "to": 500}]}],
        "notifications": {
            "channels": [{"name": "ops hook", "type": "webhook", "url": hook.url}],
            "rules": [{"on": ["retried"], "to": ["ops hook"]}]}}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    let id = start(&w, "retrying", &[50]);
    // The first try failed and waits; its notification waits for the receiver.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while w.repo_value("SELECT COUNT(*) FROM notifications WHERE attempts > 0") == "0" {
        assert!(
            std::time::Instant::now() < deadline,
            "no try of the notification"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let base = w.url.trim_end_matches("/weft/service").to_owned();
    let browser = weft_tests::browser::Browser::start();
    let page = browser.open(&format!("{base}/#/notifications?state=pending"));
    page.wait_for("#notifications tbody tr");
    let row = page.text("#notifications tbody tr");
    assert!(
        row.contains("pending") && row.contains("retried") && row.contains("ops hook"),
        "{row}"
    );
    assert!(row.contains("next try"), "{row}");
    // A later try of the action may have queued a newer notification, not tried yet: the
    // one tried is among the rows, with the receiver's answer.
    let rows = page.text("#notifications tbody");
    assert!(rows.contains("503"), "the last error: {rows}");
    page.click("#notifications tbody tr a");
    page.wait_for("h1");
    // The run's action shows its failed tries.
    page.goto(&format!("{base}/#/runs/{id}?action=500"));
    page.wait_for("#tries tbody tr");
    let tried = page.text("#tries tbody tr");
    assert!(tried.contains("no such table: comes_later"), "{tried}");
    // What it lacked arrives: the run finishes, the tries stay.
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("CREATE TABLE comes_later (n INTEGER)")
        .expect("table");
    assert_eq!(wait_end(&w, id)["state"], "finished");
    page.goto(&format!("{base}/#/runs/{id}?action=500"));
    page.wait_for("#tries tbody tr");
    assert!(page.count("#tries tbody tr") >= 1);
    page.assert_no_errors();
}

#[test]
fn in_a_real_browser_the_lineage_of_a_table_spans_sheets_and_is_followed_by_a_click() {
    let (w, _) = server_with_sheets();
    let base = w.url.trim_end_matches("/weft/service").to_owned();
    let browser = weft_tests::browser::Browser::start();
    let page = browser.open(&format!("{base}/#/lineage"));
    // Sheet 1 writes `stage` from `raw`; sheets 2 and 3 read it and write `mart`.
    page.type_into("#lineage-table", "STAGE");
    page.click("main form button");
    page.wait_for("#lineage-graph");
    assert_eq!(
        page.eval("[...document.querySelectorAll('#lineage-graph [data-table]')].map(n => n.dataset.table)"),
        serde_json::json!(["raw", "STAGE", "mart"])
    );
    assert_eq!(
        page.eval("[...document.querySelectorAll('#lineage-graph [data-action]')].map(n => Number(n.dataset.action))"),
        serde_json::json!([10, 20, 30])
    );
    assert_eq!(
        page.count("#lineage-graph .edge[marker-end]"),
        6,
        "raw→1→stage→2,3→mart"
    );
    let x = |sel: &str| {
        page.eval(&format!(
            "document.querySelector(\"#lineage-graph {sel} rect\").x.baseVal.value"
        ))
        .as_f64()
        .expect("x")
    };
    assert!(
        x("[data-table='raw']") < x("[data-action='10']")
            && x("[data-action='10']") < x("[data-table='STAGE']")
            && x("[data-table='STAGE']") < x("[data-action='20']")
            && x("[data-action='20']") < x("[data-table='mart']"),
        "left to right as the data flows"
    );
    assert_eq!(
        page.text("#lineage-writers li"),
        "/etl/sheet 1/step 1 reads raw"
    );
    assert_eq!(page.count("#lineage-readers li"), 2);
    page.screenshot("lineage");

    // A click on an upstream table follows it; on an action, opens it in its sheet.
    page.click("#lineage-graph [data-table='raw'] rect");
    page.wait_until(
        "document.querySelector('h1')?.textContent === 'Lineage of raw'",
        "the lineage of raw",
    );
    assert_eq!(page.count("#lineage-writers li"), 0);
    assert_eq!(
        page.text("#lineage-readers li"),
        "/etl/sheet 1/step 1 writes stage"
    );
    page.click("#lineage-graph [data-action='10'] rect");
    page.wait_for("#node-sql");
    assert_eq!(
        page.text("#node-sql"),
        "INSERT INTO stage SELECT * FROM raw"
    );
    // From a table of a sheet's graph to its lineage.
    page.goto(&format!("{base}/#/sheets/2?node=29"));
    page.click("#node-lineage");
    page.wait_until(
        "document.querySelector('h1')?.textContent === 'Lineage of mart'",
        "the lineage of mart",
    );
    assert_eq!(
        page.eval("[...document.querySelectorAll('#lineage-writers li')].map(l => Number(l.dataset.action))"),
        serde_json::json!([20, 30])
    );
    page.goto(&format!("{base}/#/lineage?table=nowhere"));
    page.wait_for("#lineage-none");
    page.resize(390, 844);
    page.goto(&format!("{base}/#/lineage?table=stage"));
    page.wait_for("#lineage-graph");
    assert_eq!(
        page.eval("document.documentElement.scrollWidth <= 390"),
        true,
        "the graph scrolls in its card, not the page"
    );
    page.screenshot("lineage-phone");
    page.assert_no_errors();
}

/// Each role in a real browser: signed in with its token (kept in an HttpOnly cookie that no
/// script reads, shared by the browser's tabs, never in an address), shown with its role,
/// given only the buttons it may use, and signed out.
#[test]
fn in_a_real_browser_each_role_signs_in_sees_its_buttons_and_signs_out() {
    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0"],
        &[("WEFT_REQUIRE_TOKEN_ON_LOOPBACK", "true")],
    );
    let (_, admin, _) = w.cli(&["getkey", "weft_server", "--field", "token"]);
    let admin = admin.trim().to_owned();
    for file in ["1-folder.dsr", "2-connection.dsr", "3-sheet.dsr"] {
        let doc = std::fs::read_to_string(example(file)).expect("example");
        let (st, v) = command_as(
            &w,
            &admin,
            "DeployRepository",
            serde_json::json!({"content": doc}),
        );
        assert_eq!(st, 200, "{v}");
    }
    // A run that fails (its variable is not set): Restart is what an operator could press.
    let (st, v) = command_as(
        &w,
        &admin,
        "RunElements",
        serde_json::json!({"batchExecution": {"batchName": "adhoc", "user": "u",
            "elementList": [{"elementType": "S", "elementId": 100}]}}),
    );
    assert_eq!(st, 200, "{v}");
    let run = v["payload"]["batchInstanceId"].as_i64().expect("id");
    let (st, v) = command_as(
        &w,
        &admin,
        "WaitBatchInstance",
        serde_json::json!({"batchInstanceId": run, "timeoutSeconds": 60}),
    );
    assert_eq!(st, 200, "{v}");
    let base = w.url.trim_end_matches("/weft/service").to_owned();
    let browser = weft_tests::browser::Browser::start();
    for role in ["viewer", "operator", "deployer", "admin"] {
        let name = format!("page-{role}");
        let (code, out, err) = w.cli(&["users", "add", &name, "--role", role, "--url", &w.url]);
        assert_eq!(code, Some(0), "{out}{err}");
        let token = out
            .lines()
            .find_map(|l| l.strip_prefix("token:"))
            .map(|t| t.trim().to_owned())
            .expect("token");
        let page = browser.open(&format!("{base}/#/runs/{run}"));
        page.wait_for(".login form input[name=token]");
        page.type_into(".login input[name=token]", &token);
        page.click("#sign-in-submit");
        page.wait_for("#run-state");
        assert_eq!(page.text("#me-user"), name);
        assert_eq!(page.text("#me-role"), role);
        let operates = role != "viewer";
        assert_eq!(page.count("#restart") == 1, operates, "{role}: Restart");
        assert_eq!(page.count("#halt") == 1, operates, "{role}: Halt");
        // What an operator starts from the page: not drawn for a viewer.
        page.click(".tl-row");
        page.wait_for("#detail-title");
        assert_eq!(page.count("#run-from") == 1, operates, "{role}: Run again");
        page.goto(&format!("{base}/#/runs"));
        page.wait_for("#runs");
        assert_eq!(
            page.count("#start-run") == 1,
            operates,
            "{role}: Start a run"
        );
        // The audit is the admin's to read: its link, and its view with filters.
        assert_eq!(
            page.eval("document.getElementById('nav-audit').hidden"),
            serde_json::Value::Bool(role != "admin"),
            "{role}: the audit's link"
        );
        if role == "admin" {
            page.click("#nav-audit");
            page.wait_for("#audit tbody tr");
            assert_eq!(
                page.count("#audit tbody tr"),
                8,
                "three deploys, a run, four users"
            );
            assert!(page.text("#audit tbody tr").contains("AddUser"));
            page.eval("document.getElementById('audit-command').value = 'HaltBatchInstance'");
            page.click("#audit-show");
            page.wait_until(
                "location.hash === '#/audit?command=HaltBatchInstance'",
                "the filter in the address",
            );
            // The filtered view replaces the whole list (the old one has a muted line too).
            page.wait_until(
                "document.querySelector('main')?.textContent.includes('No entry matches.')",
                "the filtered, empty audit",
            );
            assert_eq!(page.count("#audit tbody tr"), 0);
            page.goto(&format!("{base}/#/runs/{run}"));
            page.wait_for("#run-state");
        }
        // The token: in no script's reach, no address, nothing shown.
        let secret = &token[token.len() - 64..];
        for what in [
            "document.cookie",
            "location.href",
            "document.body.innerText",
            "JSON.stringify(sessionStorage) + JSON.stringify(localStorage)",
        ] {
            let v = page.eval(what).to_string();
            assert!(!v.contains(secret), "{what} holds the token: {v}");
        }
        // Another tab of the browser is signed in too.
        let other = browser.open(&format!("{base}/#/deploys"));
        other.wait_for(".deploy");
        assert_eq!(other.text("#me-user"), name);
        assert!(
            other.text(".deploy h2").contains("by keyfile"),
            "{}",
            other.text(".deploy h2")
        );
        // Signed out: the sign-in again, in this tab and the next.
        page.click("#sign-out");
        page.wait_for(".login form input[name=token]");
        assert_eq!(page.count("#me-user"), 0);
        let after = browser.open(&format!("{base}/#/runs"));
        after.wait_for(".login form input[name=token]");
    }
    // The audit has each sign-in that failed: none here; the page's commands are reads.
    let (_, v) = command_as(
        &w,
        &admin,
        "ListAudit",
        serde_json::json!({"outcome": "refused"}),
    );
    assert_eq!(v["payload"]["entries"], serde_json::json!([]), "{v}");
}
