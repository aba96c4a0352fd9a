//! The runs over days (issue 29): `ListRunDays` (each scheduled batch's runs by schedule
//! date, for the page's grid), `ListRunGroups` (the runs grouped by batch name) and the pages
//! of `ListBatchInstances` by number and date (`offset`, `startedBefore`, `total`), on real
//! runs of real backfills.

use super::page::{server_with_sheets, start, wait_end};
use crate::common::*;
use serde_json::{Value, json};

/// The answer's payload of a command that must succeed.
fn ok(w: &Weft, name: &str, payload: Value) -> Value {
    let (st, v) = command(w, name, payload);
    assert_eq!(st, 200, "{name}: {v}");
    v["payload"].clone()
}

/// Deploys two batches that never start by the clock: 7 `nightly` (sheet 1, which works) and
/// 8 `broken` (sheet 3, which fails), on `page::server_with_sheets`' sheets.
pub(crate) fn deploy_day_batches(w: &Weft) {
    let doc = json!({"version": 1, "transformationData": {"batches": [
        {"id": 7, "name": "nightly", "schedule": "daily 02:00", "enabled": false,
         "elements": [{"elementType": "S", "elementId": 1}]},
        {"id": 8, "name": "broken", "schedule": "daily 03:00", "enabled": false,
         "elements": [{"elementType": "S", "elementId": 3}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
}

/// Backfills `batch` over the days, waiting until its runs ended (the client waits).
pub(crate) fn backfill(w: &Weft, batch: &str, from: &str, to: &str) {
    let (_code, out, err) = w.cli(&["backfill", batch, "--from", from, "--to", to, "--wait"]);
    assert!(err.contains("instance"), "{out}{err}");
}

#[test]
fn runs_are_listed_by_schedule_date_grouped_by_batch_and_paged_by_number_and_date() {
    let (w, _data) = server_with_sheets();
    deploy_day_batches(&w);
    backfill(&w, "nightly", "2026-11-01", "2026-11-05");
    backfill(&w, "broken", "2026-11-03", "2026-11-04");
    // A day run again: two runs that day, the newer one shown.
    backfill(&w, "nightly", "2026-11-02", "2026-11-02");
    let adhoc = start(&w, "adhoc", &[1]);
    assert_eq!(wait_end(&w, adhoc)["state"], "finished");

    let days = ok(
        &w,
        "ListRunDays",
        json!({"from": "2026-11-01", "to": "2026-11-06"}),
    );
    let batches = days["batches"].as_array().expect("batches");
    let names: Vec<&str> = batches.iter().filter_map(|b| b["name"].as_str()).collect();
    assert_eq!(names, ["broken", "nightly"], "by name: {days}");
    let cells = |b: &Value| -> Vec<(String, i64, i64, String)> {
        b["days"]
            .as_array()
            .expect("days")
            .iter()
            .map(|d| {
                (
                    d["day"].as_str().unwrap_or_default().to_owned(),
                    d["runs"].as_i64().unwrap_or(-1),
                    d["failed"].as_i64().unwrap_or(-1),
                    d["state"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    };
    let c = |day: &str, runs: i64, failed: i64, state: &str| {
        (day.to_owned(), runs, failed, state.to_owned())
    };
    assert_eq!(
        cells(&batches[0]),
        [
            c("2026-11-03", 1, 1, "failed"),
            c("2026-11-04", 1, 1, "failed")
        ]
    );
    assert_eq!(
        cells(&batches[1]),
        [
            c("2026-11-01", 1, 0, "finished"),
            c("2026-11-02", 2, 0, "finished"),
            c("2026-11-03", 1, 0, "finished"),
            c("2026-11-04", 1, 0, "finished"),
            c("2026-11-05", 1, 0, "finished"),
        ]
    );
    // The day's newest run is the one named; each says how long it ran.
    let second = &batches[1]["days"][1];
    let runs_of_day = ok(&w, "ListBatchInstances", json!({"batchId": 7, "limit": 10}));
    let newest_of_day = runs_of_day["instances"]
        .as_array()
        .expect("instances")
        .iter()
        .filter(|i| i["plannedStart"] == "2026-11-02 02:00:00")
        .filter_map(|i| i["batchInstanceId"].as_i64())
        .max()
        .expect("runs of the day");
    assert_eq!(second["batchInstanceId"], newest_of_day, "{second}");
    assert!(
        second["seconds"].as_f64().is_some_and(|s| s >= 0.0),
        "{second}"
    );
    // One batch, and a range that holds none of its days.
    let one = ok(
        &w,
        "ListRunDays",
        json!({"from": "2026-11-04", "to": "2026-11-04", "batchId": 7}),
    );
    assert_eq!(one["batches"].as_array().map(Vec::len), Some(1), "{one}");
    assert_eq!(
        cells(&one["batches"][0]),
        [c("2026-11-04", 1, 0, "finished")]
    );
    let none = ok(
        &w,
        "ListRunDays",
        json!({"from": "2025-01-01", "to": "2025-12-31"}),
    );
    assert!(
        none["batches"]
            .as_array()
            .is_some_and(|b| b.len() == 2 && b.iter().all(|b| b["days"] == json!([]))),
        "{none}"
    );
    // Refused, each at its place: a range backwards, too long, not a day, missing.
    for (payload, path) in [
        (
            json!({"from": "2026-11-05", "to": "2026-11-01"}),
            "payload.to",
        ),
        (
            json!({"from": "2025-01-01", "to": "2026-11-01"}),
            "payload.to",
        ),
        (
            json!({"from": "yesterday", "to": "2026-11-01"}),
            "payload.from",
        ),
        (json!({"from": "2026-11-01"}), "payload"),
        (
            json!({"from": "2026-11-01", "to": "2026-11-02", "batch": 7}),
            "payload",
        ),
    ] {
        let (st, v) = command(&w, "ListRunDays", payload.clone());
        assert_eq!(st, 400, "{payload}: {v}");
        assert!(
            v["error"]["details"].as_array().is_some_and(|d| d
                .iter()
                .any(|d| d["path"].as_str().is_some_and(|p| p.starts_with(path)))),
            "{payload}: {v}"
        );
    }

    // Grouped by batch name: the newest run's group first, with its counts.
    let groups = ok(&w, "ListRunGroups", json!({}));
    let summary: Vec<(String, i64, i64, i64)> = groups["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| {
            (
                g["batchName"].as_str().unwrap_or_default().to_owned(),
                g["runs"].as_i64().unwrap_or(-1),
                g["failed"].as_i64().unwrap_or(-1),
                g["last"]["batchInstanceId"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    let all = ok(&w, "ListBatchInstances", json!({"limit": 100}));
    let newest = |name: &str| {
        all["instances"]
            .as_array()
            .expect("instances")
            .iter()
            .filter(|i| i["batchName"] == name)
            .filter_map(|i| i["batchInstanceId"].as_i64())
            .max()
            .unwrap_or(-1)
    };
    assert_eq!(
        summary,
        [
            ("adhoc".to_owned(), 1, 0, adhoc),
            ("nightly".to_owned(), 6, 0, newest("nightly")),
            ("broken".to_owned(), 2, 2, newest("broken")),
        ]
    );
    let failed = ok(&w, "ListRunGroups", json!({"state": "failed", "limit": 5}));
    assert_eq!(
        failed["groups"]
            .as_array()
            .map(|g| g.iter().map(|g| g["batchName"].clone()).collect::<Vec<_>>()),
        Some(vec![json!("broken")])
    );
    let (st, v) = command(&w, "ListRunGroups", json!({"limit": 0}));
    assert_eq!(st, 400, "{v}");

    // Pages by number: the total, and the second page of three.
    let ids = |v: &Value| -> Vec<i64> {
        v["instances"]
            .as_array()
            .expect("instances")
            .iter()
            .filter_map(|i| i["batchInstanceId"].as_i64())
            .collect()
    };
    let every = ids(&all);
    assert_eq!(every.len(), 9);
    let first = ok(&w, "ListBatchInstances", json!({"limit": 3, "total": true}));
    assert_eq!(first["total"], 9, "{first}");
    assert_eq!(ids(&first), every[..3]);
    let page2 = ok(&w, "ListBatchInstances", json!({"limit": 3, "offset": 3}));
    assert_eq!(ids(&page2), every[3..6]);
    assert!(page2.get("total").is_none(), "counted only when asked");
    let failed_total = ok(
        &w,
        "ListBatchInstances",
        json!({"limit": 1, "state": "failed", "total": true}),
    );
    assert_eq!(failed_total["total"], 2, "{failed_total}");
    // Pages by date: started before a time (UTC).
    let future = ok(
        &w,
        "ListBatchInstances",
        json!({"limit": 100, "startedBefore": "2999-01-01", "total": true}),
    );
    assert_eq!(future["total"], 9);
    let past = ok(
        &w,
        "ListBatchInstances",
        json!({"limit": 100, "startedBefore": "2000-01-01T00:00:00Z", "total": true}),
    );
    assert_eq!((ids(&past).len(), past["total"].clone()), (0, json!(0)));
    let (st, v) = command(
        &w,
        "ListBatchInstances",
        json!({"limit": 1, "startedBefore": "last week"}),
    );
    assert_eq!(st, 400, "{v}");
    assert_eq!(
        v["error"]["details"][0]["path"], "payload.startedBefore",
        "{v}"
    );
}
