//! The web page as an operator of nightly loads uses it (issue 29), in a real Chromium: a
//! failed run opens on its failures, with counts and filters by state, the keyboard and deep
//! links that scroll to and focus their action, updates that keep the focus, the selection
//! and what is read; the timeline's clock and zoom; the log's search and the run's logs as a
//! file; and every view free of WCAG 2.1 AA violations (axe-core) in light and dark, at a
//! desktop's and a phone's width.

use super::page::{server_with_sheets, start, wait_end};
use super::run_history::{backfill, deploy_day_batches};
use crate::common::*;

/// The JSON text of `v` for a script.
fn js(v: impl Into<serde_json::Value>) -> String {
    v.into().to_string()
}

#[test]
fn in_a_real_browser_a_failed_run_opens_on_its_failures_and_keeps_the_focus_while_it_updates() {
    let (w, data) = server_with_sheets();
    let base = w.url.trim_end_matches("/weft/service").to_owned();
    // Sheet 1 feeds 2 and 3; 3 fails on a column that does not exist.
    let broken = start(&w, "mixed", &[1, 2, 3]);
    assert_eq!(wait_end(&w, broken)["state"], "failed");

    let browser = weft_tests::browser::Browser::start();
    let page = browser.open(&format!("{base}/#/runs/{broken}"));
    // The failure at the top, with its error's first line, above the timeline.
    page.wait_until(
        "document.querySelectorAll('#failures li').length === 1",
        "the failures",
    );
    assert_eq!(page.text("#failures .failure"), "step 3");
    assert!(
        page.text("#failures .first-line")
            .contains("no such column: nope"),
        "{}",
        page.text("#failures .first-line")
    );
    assert_eq!(
        page.eval("document.querySelector('#failures').getBoundingClientRect().top < document.querySelector('#timeline').getBoundingClientRect().top"),
        true
    );
    // A count for each state there is, as a filter.
    assert_eq!(
        page.eval(
            "[...document.querySelectorAll('#state-filters button:not([hidden])')].map(b => b.textContent)"
        ),
        serde_json::json!(["all 3", "failed 1", "finished 2"])
    );
    let shown = "[...document.querySelectorAll('#timeline .tl-row:not([hidden])')].map(r => Number(r.dataset.action))";
    page.click("[data-filter=failed]");
    page.wait_until(
        "location.hash.includes('show=failed') && document.querySelector('[data-filter=failed]').getAttribute('aria-pressed') === 'true'",
        "failed only",
    );
    assert_eq!(page.eval(shown), serde_json::json!([30]));
    // The failure's link: the action chosen, scrolled to and focused.
    page.click("#failures .failure");
    page.wait_until(
        "document.activeElement?.dataset.action === '30' && document.querySelector('#error')?.textContent.includes('nope')",
        "the failed action focused with its error",
    );
    page.screenshot("run-failures");
    page.dark(true);
    page.screenshot("run-failures-dark");
    page.resize(390, 844);
    page.screenshot("run-failures-phone");
    page.resize(1280, 800);
    page.dark(false);
    assert!(
        page.eval("location.hash")
            .as_str()
            .is_some_and(|h| h.contains("action=30") && h.contains("show=failed"))
    );
    page.click("[data-filter=all]");
    page.wait_until(
        "document.querySelectorAll('#timeline .tl-row:not([hidden])').length === 3",
        "all again",
    );
    let order: Vec<i64> = page
        .eval(shown)
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(serde_json::Value::as_i64)
        .collect();
    assert_eq!(order[0], 10, "what the others need comes first");

    // The keyboard: arrows move between rows, Enter chooses; the row keeps the focus (the
    // page is not drawn again).
    page.eval("document.querySelector(\".tl-row[data-action='10']\").dataset.kept = 'yes'");
    page.eval("document.querySelector(\".tl-row[data-action='10']\").focus()");
    page.press("ArrowDown");
    page.wait_until(
        &format!("document.activeElement?.dataset.action === '{}'", order[1]),
        "the next row focused",
    );
    page.press("Enter");
    page.wait_until(
        &format!(
            "document.querySelector('.tl-row.selected')?.dataset.action === '{}' && document.activeElement?.dataset.action === '{}'",
            order[1], order[1]
        ),
        "chosen by Enter, the focus kept",
    );
    page.press("Home");
    page.wait_until(
        "document.activeElement?.dataset.action === '10'",
        "Home: the first row",
    );
    assert_eq!(
        page.eval("document.querySelector(\".tl-row[data-action='10']\").dataset.kept"),
        "yes",
        "the rows were kept, not drawn again"
    );
    // What the chosen action needs, by name, and a click on it goes there.
    page.wait_for("#needs button");
    assert_eq!(page.text("#needs button"), "step 1");
    page.click("#needs button");
    page.wait_until(
        "document.querySelector('.tl-row.selected')?.dataset.action === '10' && document.activeElement?.dataset.action === '10'",
        "the needed action chosen",
    );

    // The clock: ticks labelled in the service zone; zoom in and back.
    assert!(page.count(".tl-tick") >= 2, "ticks");
    assert!(page.text("#tl-zone").starts_with("time ("));
    page.click("#zoom-in");
    page.wait_until(
        "document.querySelector('#zoom-range').textContent.includes('shown')",
        "zoomed in",
    );
    page.click("#zoom-whole");
    page.wait_until(
        "document.querySelector('#zoom-range').textContent === ''",
        "the whole run",
    );
    // Times to the millisecond.
    assert_eq!(
        page.eval("/\\d{2}:\\d{2}:\\d{2}\\.\\d{3}$/.test(document.querySelector('#run-facts .time').textContent)"),
        true
    );

    // The log's search: matches counted and marked.
    page.type_into("#log-search", "insert");
    page.wait_until(
        "/^1 of \\d+$/.test(document.querySelector('#log-matches').textContent) && document.querySelector('#log mark.current')",
        "a match",
    );
    // The run's logs as one text file.
    page.eval("window.blobs = []; const made = URL.createObjectURL; URL.createObjectURL = (b) => { window.blobs.push(b); return made.call(URL, b); }");
    page.click("#download-logs");
    page.wait_until("window.blobs.length === 1", "the logs made");
    let text = page.eval("window.blobs[0].text()");
    let text = text.as_str().expect("the logs");
    assert!(
        text.starts_with(&format!("run {broken} (mixed): failed")),
        "{text}"
    );
    assert!(
        text.contains("== action 30 step 3") && text.contains("error: ") && text.contains("nope"),
        "{text}"
    );

    // A deep link to an action: scrolled to and focused.
    page.goto(&format!("{base}/#/runs/{broken}?action=20"));
    page.wait_until(
        "document.activeElement?.dataset.action === '20'",
        "the linked action focused",
    );

    // A run followed live: its rows updated in place, the focus and the choice kept.
    let gate = rusqlite::Connection::open(&data).expect("gate");
    gate.execute_batch("BEGIN IMMEDIATE")
        .expect("the write lock");
    let held = start(&w, "held", &[4, 1]);
    page.goto(&format!("{base}/#/runs/{held}?action=40"));
    page.wait_until(
        "document.querySelector('#run-state')?.dataset.state === 'running' && document.activeElement?.dataset.action === '40'",
        "running, the action focused",
    );
    page.eval("document.querySelector(\".tl-row[data-action='40']\").dataset.kept = 'yes'");
    gate.execute_batch("COMMIT").expect("let go");
    page.wait_until(
        "document.querySelector('#run-state')?.dataset.state === 'finished'",
        "finished, live",
    );
    assert_eq!(
        page.eval(&format!(
            "[document.activeElement?.dataset.action, document.activeElement?.dataset.kept, document.querySelector('.tl-row.selected')?.dataset.action, document.querySelector('#detail-title')?.textContent.startsWith({})]",
            js("step 4")
        )),
        serde_json::json!(["40", "yes", "40", true])
    );
    page.screenshot("run-failures-first");
    page.assert_no_errors();
}

#[test]
fn in_a_real_browser_every_view_passes_axe_in_light_and_dark_at_two_widths() {
    let (w, _data) = server_with_sheets();
    let base = w.url.trim_end_matches("/weft/service").to_owned();
    let chain = start(&w, "nightly load", &[2, 1]);
    assert_eq!(wait_end(&w, chain)["state"], "finished");
    let broken = start(&w, "adhoc", &[1, 3]);
    assert_eq!(wait_end(&w, broken)["state"], "failed");
    deploy_day_batches(&w);
    backfill(&w, "nightly", &days_ago(3), &days_ago(1));

    let browser = weft_tests::browser::Browser::start();
    let page = browser.open(&format!("{base}/#/runs"));
    page.wait_for("#runs tbody tr");
    page.goto(&format!("{base}/#/deploys"));
    page.wait_for(".deploy .changes tbody tr a");
    let change =
        page.eval("document.querySelector('.deploy .changes tbody tr a').getAttribute('href')");
    let change = change.as_str().expect("a change's address").to_owned();
    // Each view, and what shows that it is drawn (its own content, not the last view's).
    let views = [
        ("#/runs".to_owned(), "#runs tbody tr".to_owned()),
        ("#/runs?group=batch".to_owned(), "#groups".to_owned()),
        ("#/grid".to_owned(), ".grid-row".to_owned()),
        ("#/batches/7".to_owned(), "#durations".to_owned()),
        (format!("#/runs/{broken}?action=30"), "#error".to_owned()),
        (format!("#/runs/{chain}"), "#timeline .tl-row".to_owned()),
        ("#/sheets".to_owned(), "#tree".to_owned()),
        ("#/sheets/1?node=10".to_owned(), "#node-sql".to_owned()),
        ("#/lineage".to_owned(), "#lineage-map".to_owned()),
        (
            "#/lineage?table=stage".to_owned(),
            "#lineage-graph".to_owned(),
        ),
        ("#/schedules".to_owned(), "main h1".to_owned()),
        ("#/deploys".to_owned(), ".deploy".to_owned()),
        (change, "#diff".to_owned()),
        ("#/notifications".to_owned(), "main h1".to_owned()),
        ("#/audit".to_owned(), "#audit-show".to_owned()),
    ];
    let mut found = Vec::new();
    for (address, drawn) in &views {
        page.goto(&format!("{base}/{address}"));
        page.wait_until(
            &format!(
                "location.hash === {} && document.querySelector({}) && !document.querySelector('#status')?.textContent.startsWith('loading')",
                js(address.as_str()),
                js(drawn.as_str())
            ),
            address,
        );
        for (width, height) in [(1280, 800), (390, 844)] {
            page.resize(width, height);
            // Nothing wider than the window: wide content scrolls in its own box.
            if page.eval(&format!("document.documentElement.scrollWidth <= {width}")) != true {
                found.push(format!(
                    "{address} at {width} px: the page scrolls sideways ({} px wide)",
                    page.eval("document.documentElement.scrollWidth")
                ));
            }
            for dark in [false, true] {
                page.dark(dark);
                for v in page.axe() {
                    found.push(format!(
                        "{address} at {width} px, {}: {v}",
                        if dark { "dark" } else { "light" }
                    ));
                }
            }
        }
        page.resize(1280, 800);
        page.dark(false);
    }
    // The questions asked before acting, open.
    for (address, button) in [
        ("#/runs".to_owned(), "#start-run"),
        (format!("#/runs/{broken}"), "#restart"),
        ("#/batches/7".to_owned(), "#backfill"),
    ] {
        page.goto(&format!("{base}/{address}"));
        page.click(button);
        page.wait_for("dialog[open]");
        for dark in [false, true] {
            page.dark(dark);
            for v in page.axe() {
                found.push(format!("{address}, {button}'s question: {v}"));
            }
        }
        page.dark(false);
        page.press("Escape");
        page.wait_until(
            "!document.querySelector('dialog')",
            "the question closed by Escape",
        );
    }
    assert!(found.is_empty(), "axe-core found:\n{}", found.join("\n"));
    page.assert_no_errors();
}

/// The day `n` days before today, UTC (the test server's zone is the machine's; the views
/// show 90 days and more, so a day's shift by a zone does not move these out).
fn days_ago(n: i64) -> String {
    (chrono::Utc::now() - chrono::Duration::days(n))
        .format("%Y-%m-%d")
        .to_string()
}

#[test]
fn in_a_real_browser_runs_over_days_show_as_a_grid_a_duration_chart_a_calendar_and_pages() {
    let (w, _data) = server_with_sheets();
    deploy_day_batches(&w);
    backfill(&w, "nightly", &days_ago(55), &days_ago(1));
    backfill(&w, "broken", &days_ago(3), &days_ago(2));
    let base = w.url.trim_end_matches("/weft/service").to_owned();
    let browser = weft_tests::browser::Browser::start();

    // Every batch by day: a row each, a cell a day coloured by its run's state.
    let page = browser.open(&format!("{base}/#/grid"));
    page.wait_until(
        "document.querySelectorAll('.grid-row').length === 2",
        "two batches",
    );
    let cells = |sel: &str| page.count(sel);
    assert_eq!(cells(".grid-row[data-batch='8'] rect.st-failed"), 2);
    assert_eq!(cells(".grid-row[data-batch='7'] rect.st-finished"), 55);
    assert_eq!(cells(".grid-row[data-batch='7'] rect.cell"), 90);
    page.screenshot("grid");
    page.click(".grid-row[data-batch='8'] rect.st-failed");
    page.wait_until(
        "/^#\\/runs\\/\\d+$/.test(location.hash) && document.querySelector('#run-state')?.dataset.state === 'failed'",
        "the day's run opened",
    );
    page.goto(&format!("{base}/#/grid?days=365"));
    page.wait_until(
        "document.querySelectorAll(\".grid-row[data-batch='7'] rect.cell\").length === 365",
        "a year",
    );

    // One batch: its days as a calendar, its durations, its planned starts ahead.
    page.goto(&format!("{base}/#/batches/7"));
    page.wait_for("#durations");
    assert_eq!(cells("#batch-days rect.st-finished"), 55);
    assert_eq!(cells("#durations a"), 55);
    assert!(
        page.text("#duration-summary")
            .starts_with("55 runs: median "),
        "{}",
        page.text("#duration-summary")
    );
    assert_eq!(page.text("#batch-enabled"), "disabled (by its definition)");
    assert!(
        page.eval("[...document.querySelectorAll('#starts-calendar .cal-starts')].every(c => c.textContent === '02:00')")
            == true
            && cells("#starts-calendar .cal-starts") >= 28,
        "a start a day ahead"
    );
    page.screenshot("batch");
    // The days by keyboard: End is today (no run yet), a day up is yesterday's run.
    page.eval("document.querySelector('#batch-days svg').focus()");
    page.press("End");
    page.wait_until(
        "/: no run$/.test(document.querySelector('#batch-hover').textContent)",
        "today said",
    );
    page.press("ArrowUp");
    page.wait_until(
        &format!(
            "document.querySelector('#batch-hover').textContent.startsWith('{}: 1 run, the newest finished')",
            days_ago(1)
        ),
        "yesterday said",
    );
    page.press("Enter");
    page.wait_until(
        "/^#\\/runs\\/\\d+$/.test(location.hash) && document.querySelector('#run-state')?.dataset.state === 'finished'",
        "yesterday's run opened by the keyboard",
    );
    page.goto(&format!("{base}/#/batches/7"));
    page.wait_for("#durations");

    // The runs grouped by batch, then paged by number and by date.
    page.goto(&format!("{base}/#/runs?group=batch"));
    page.wait_until(
        "document.querySelectorAll('#groups tbody tr').length === 2",
        "two groups",
    );
    assert_eq!(
        page.eval("[...document.querySelectorAll('#groups tbody tr')].map(r => [r.cells[0].textContent, r.cells[1].textContent, r.cells[2].textContent])"),
        serde_json::json!([["broken", "2", "2"], ["nightly", "55", "0"]])
    );
    page.goto(&format!("{base}/#/runs"));
    page.wait_until(
        "document.querySelector('#shown')?.textContent === '1–50 of 57'",
        "the first page of 57",
    );
    page.click("[data-page='2']");
    page.wait_until(
        "location.hash === '#/runs?page=2' && document.querySelector('#shown')?.textContent === '51–57 of 57' && document.querySelectorAll('#runs tbody tr').length === 7",
        "the second page",
    );
    // By date: every run here started today (a backfill runs past days now).
    page.goto(&format!("{base}/#/runs?from={}", days_ago(2)));
    page.wait_until(
        "document.querySelector('#shown')?.textContent === 'No runs match.'",
        "none started before",
    );
    page.goto(&format!("{base}/#/runs?from={}", days_ago(-1)));
    page.wait_until(
        "document.querySelector('#shown')?.textContent === '1–50 of 57'",
        "all started by tomorrow",
    );
    page.assert_no_errors();
}

#[test]
fn in_a_real_browser_an_operator_starts_restarts_reruns_pauses_and_backfills_each_asked_first() {
    let (w, _data) = server_with_sheets();
    deploy_day_batches(&w);
    // One batch on a schedule (its start far from now does not matter: it is paused here).
    let doc = serde_json::json!({"version": 1, "transformationData": {"batches": [
        {"id": 9, "name": "daily", "schedule": "daily 02:00",
         "elements": [{"elementType": "S", "elementId": 1}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    let base = w.url.trim_end_matches("/weft/service").to_owned();
    let browser = weft_tests::browser::Browser::start();

    // A run of sheet 1 and what it feeds, with a variable, asked first in words.
    let page = browser.open(&format!("{base}/#/runs"));
    page.click("#start-run");
    page.wait_for("#run-question");
    page.type_into("#run-elements", "table x");
    page.click("#run-confirm");
    page.wait_until(
        "document.querySelector('#run-problem')?.textContent.startsWith('line 1: `table` is not sheet')",
        "the problem at its line",
    );
    page.eval("document.querySelector('#run-elements').value = ''");
    page.type_into("#run-elements", "sheet 1+");
    page.type_into("#run-variables", "n=1");
    page.wait_until(
        "document.querySelector('#run-sentence').textContent.includes('of sheet 1 and everything downstream of them (what they feed) with n=1')",
        "what will happen",
    );
    page.click("#run-confirm");
    page.wait_until(
        "/^#\\/runs\\/\\d+$/.test(location.hash) && document.querySelector('h1')?.textContent.startsWith(`Run ${location.hash.split('/')[2]}:`) && document.querySelector('#run-state')?.dataset.state === 'failed' && document.querySelectorAll('#timeline .tl-row').length === 3",
        "the run of sheet 1 and what it feeds",
    );
    let first: i64 = page
        .eval("Number(location.hash.split('/')[2])")
        .as_i64()
        .expect("the run");
    assert_eq!(page.text("#elements"), "sheet 1");

    // Restart as it ran: the same failure again; the audit says how it was asked.
    page.click("#restart");
    page.wait_for("#restart-question");
    assert!(
        page.text("#restart-text")
            .contains("runs again what failed, was halted or interrupted (1 action"),
        "{}",
        page.text("#restart-text")
    );
    page.click("#restart-as-started");
    page.click("#restart-confirm");
    page.wait_until(
        "document.querySelector('#message')?.textContent === 'Restarted as it ran.'",
        "restarted",
    );
    page.wait_until(
        "document.querySelector('#run-state')?.dataset.state === 'failed'",
        "failed again",
    );
    let (_, audit) = command(
        &w,
        "ListAudit",
        serde_json::json!({"command": "RestartBatchInstance"}),
    );
    assert!(
        audit["payload"]["entries"][0]["what"]
            .as_str()
            .is_some_and(|t| t.contains("\"asStarted\":true")),
        "{audit}"
    );
    // The SQL fixed and deployed; only the failed action restarted, with the definitions
    // deployed now.
    let fixed = serde_json::json!({"version": 1, "transformationData": {"sheets": [{"id": 3,
        "attributes": {"name": "sheet 3", "folder_id": 10, "folder": "/etl"},
        "nodes": [
            {"id": 30, "type": 0, "attributes": {"module": "Sql", "name": "step 3", "action": "INSERT INTO mart SELECT id, v FROM stage WHERE id = 1"}},
            {"id": 31, "type": 1, "attributes": {"field1": "stage", "objectTypeId": 1, "connectionId": 1}},
            {"id": 39, "type": 1, "attributes": {"field1": "mart", "objectTypeId": 1, "connectionId": 1}}],
        "edges": [{"id": 31, "from": 31, "to": 30}, {"id": 39, "from": 30, "to": 39}]}]}});
    let (st, v) = post(&w.url, deploy_body(&fixed.to_string()));
    assert_eq!(st, 200, "{v}");
    page.click(".tl-row[data-action='30']");
    page.click("#restart-action");
    page.wait_for("#restart-question");
    assert!(
        page.text("#restart-text")
            .starts_with("Restart action step 3 of run")
    );
    page.click("#restart-confirm");
    page.wait_until(
        "document.querySelector('#run-state')?.dataset.state === 'finished'",
        "finished after the fix",
    );

    // Run again from an action: a new run of it and what follows.
    page.click(".tl-row[data-action='10']");
    page.click("#run-from");
    page.wait_for("#run-question");
    assert_eq!(
        page.eval("document.querySelector('#run-elements').value"),
        "action 10+"
    );
    page.click("#run-confirm");
    page.wait_until(
        &format!("/^#\\/runs\\/\\d+$/.test(location.hash) && location.hash !== '#/runs/{first}' && document.querySelector('h1')?.textContent.startsWith(`Run ${{location.hash.split('/')[2]}}:`) && document.querySelector('#run-state')?.dataset.state === 'finished' && document.querySelectorAll('#timeline .tl-row').length === 3"),
        "the new run from action 10",
    );
    // A question answered Cancel does nothing; one left open is withdrawn when another view
    // is asked for.
    page.click(".tl-row[data-action='20']");
    page.click("#run-from");
    page.click("#run-cancel");
    page.wait_until(
        "!document.querySelector('#run-question')",
        "the question withdrawn",
    );
    page.click("#run-from");
    page.wait_for("#run-question");
    page.eval("location.hash = '#/schedules'");
    page.wait_until(
        "!document.querySelector('#run-question') && document.querySelector('h1')?.textContent === 'Schedules'",
        "the question withdrawn by another view",
    );

    // Pause and resume a schedule.
    page.goto(&format!("{base}/#/batches/9"));
    page.wait_until(
        "document.querySelector('#batch-enabled')?.textContent === 'on schedule'",
        "on schedule",
    );
    page.click("#pause");
    page.wait_for("#pause-question");
    assert!(
        page.text("#pause-text")
            .contains("planned starts pass without a run")
    );
    page.click("#pause-confirm");
    page.wait_until(
        "document.querySelector('#batch-enabled')?.textContent === 'paused' && document.querySelector('#resume')",
        "paused",
    );
    let (_, batches) = command(&w, "ListBatches", serde_json::json!({}));
    assert!(
        batches["payload"]["batches"]
            .as_array()
            .is_some_and(|b| b.iter().any(|b| b["batchId"] == 9 && b["paused"] == true)),
        "{batches}"
    );
    page.click("#resume");
    page.click("#resume-confirm");
    page.wait_until(
        "document.querySelector('#batch-enabled')?.textContent === 'on schedule'",
        "resumed",
    );

    // Backfill two days: its runs, one group.
    page.click("#backfill");
    page.wait_for("#backfill-question");
    page.eval(&format!(
        "document.querySelector('#backfill-from').value = '{}'; document.querySelector('#backfill-to').value = '{}'; document.querySelector('#backfill-to').dispatchEvent(new Event('input'))",
        days_ago(2),
        days_ago(1)
    ));
    assert!(page.text("#backfill-sentence").contains(&format!(
        "from {} to {}",
        days_ago(2),
        days_ago(1)
    )));
    page.click("#backfill-confirm");
    page.wait_until(
        "/^#\\/runs\\?backfill=\\d+$/.test(location.hash) && document.querySelectorAll('#runs tbody tr').length === 2",
        "the backfill's two runs",
    );
    page.assert_no_errors();
}

#[test]
fn in_a_real_browser_lineage_spans_the_repository_zooms_and_a_sheet_shows_its_neighbours_and_run_states()
 {
    let (w, _data) = server_with_sheets();
    let chain = start(&w, "nightly load", &[2, 1]);
    assert_eq!(wait_end(&w, chain)["state"], "finished");
    let broken = start(&w, "adhoc", &[3]);
    assert_eq!(wait_end(&w, broken)["state"], "failed");
    let base = w.url.trim_end_matches("/weft/service").to_owned();
    let browser = weft_tests::browser::Browser::start();

    // The whole repository: every table and action, left to right as the data flows.
    let page = browser.open(&format!("{base}/#/lineage"));
    page.wait_for("#lineage-map");
    let actions = "[...document.querySelectorAll('#lineage-map [data-action]')].map(n => Number(n.dataset.action)).sort((a, b) => a - b)";
    assert_eq!(page.eval(actions), serde_json::json!([10, 20, 30, 40]));
    assert_eq!(page.count("#lineage-map [data-table]"), 4);
    assert_eq!(page.count("#lineage-map .edge"), 7);
    let x = |sel: &str| {
        page.eval(&format!(
            "document.querySelector(\"#lineage-map {sel} rect\").x.baseVal.value"
        ))
        .as_f64()
        .expect("x")
    };
    assert!(
        x("[data-table='raw']") < x("[data-action='10']")
            && x("[data-action='10']") < x("[data-action='20']")
            && x("[data-action='20']") < x("[data-table='mart']"),
        "left to right"
    );
    // Zoom in and back to the whole.
    let width = "document.querySelector('#lineage-map').viewBox.baseVal.width";
    page.wait_until(&format!("{width} > 0"), "laid out");
    let whole = page.eval(width).as_f64().expect("width");
    page.click(".zoom-bar [aria-label='zoom in']");
    page.wait_until(&format!("{width} < {whole}"), "zoomed in");
    page.click(".zoom-bar [aria-label='show it whole']");
    page.wait_until(&format!("{width} === {whole}"), "whole again");
    page.screenshot("lineage-map");

    // Around a table: one action away, then two.
    page.goto(&format!("{base}/#/lineage?table=mart&depth=1"));
    page.wait_until(
        "document.querySelector('h1')?.textContent === 'Lineage of mart' && document.querySelector('#lineage-map')",
        "mart's neighbourhood",
    );
    assert_eq!(page.eval(actions), serde_json::json!([20, 30]));
    page.click("[data-depth='2']");
    page.wait_until(
        "location.hash.endsWith('depth=2') && document.querySelectorAll('#lineage-map [data-action]').length === 3",
        "two actions away",
    );
    assert_eq!(page.eval(actions), serde_json::json!([10, 20, 30]));

    // A sheet: the sheets that feed it and that it feeds, and its last run's states.
    page.goto(&format!("{base}/#/sheets/1"));
    page.wait_for("#feeds li");
    assert_eq!(
        page.eval("[...document.querySelectorAll('#feeds li')].map(l => l.textContent)"),
        serde_json::json!(["/etl/sheet 2 reads stage", "/etl/sheet 3 reads stage"])
    );
    assert_eq!(page.count("#fed-by li"), 0);
    page.wait_until(
        "document.querySelector(\"#graph .node[data-node='10']\")?.classList.contains('run-F') && document.querySelector('#graph-states').textContent.startsWith('Actions coloured by their state in run')",
        "the last run's states on the graph",
    );
    page.goto(&format!("{base}/#/sheets/3"));
    page.wait_until(
        "document.querySelector('h1')?.textContent.startsWith('Sheet 3') && document.querySelector(\"#graph .node[data-node='30']\")?.classList.contains('run-E')",
        "a failed action on the graph",
    );
    assert_eq!(
        page.eval("[...document.querySelectorAll('#fed-by li')].map(l => l.textContent)"),
        serde_json::json!(["/etl/sheet 1 writes stage"])
    );
    // A click on a node chooses it without drawing the graph again (its zoom stays).
    page.eval("document.querySelector('#graph').dataset.kept = 'yes'");
    page.click("#graph .node[data-node='30'] rect");
    page.wait_for("#node-sql");
    assert_eq!(
        page.eval("document.querySelector('#graph').dataset.kept"),
        "yes"
    );
    page.screenshot("sheet-states");
    page.assert_no_errors();
    // The command itself: a table no action touches is an empty graph; bad asks refused.
    let (st, v) = command(
        &w,
        "GetLineageGraph",
        serde_json::json!({"table": "nowhere"}),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["edges"], serde_json::json!([]), "{v}");
    for (payload, path) in [
        (serde_json::json!({"depth": 0}), "payload.depth"),
        (serde_json::json!({"table": ""}), "payload.table"),
        (serde_json::json!({"tables": "x"}), "payload"),
    ] {
        let (st, v) = command(&w, "GetLineageGraph", payload.clone());
        assert_eq!(st, 400, "{payload}: {v}");
        assert!(
            v["error"]["details"][0]["path"]
                .as_str()
                .is_some_and(|p| p.starts_with(path)),
            "{payload}: {v}"
        );
    }
}
