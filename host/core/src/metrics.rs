//! What a server counts for the monitoring systems teams already run, served as `GET
//! /metrics` in Prometheus's text format (docs/api.md, "Metrics").
//!
//! Two kinds of numbers: events this process counted since it started (actions it ended and
//! how long each took, rows, deploys, scheduled starts and their lateness, plugin and
//! connection errors), kept here and counted where they happen through the functions of
//! this module; and what the repository holds now (instances by state, actions waiting and
//! running, live hosts), read by the endpoint at each scrape and handed to [`render`].
//!
//! One set per process (a server is one process). Every label takes its values from a closed
//! set (states, results, the loaded modules and connection types), never from a request, so
//! that a client cannot make the answer grow.

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};
use std::sync::OnceLock;

/// The content type of the answer (Prometheus's text format, version 0.0.4).
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The buckets of action durations, in seconds: from a trivial statement to a long load.
const ACTION_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
];

/// The buckets of the window between a lease check and a commit, in seconds.
const WINDOW_BUCKETS: &[f64] = &[
    0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];

/// The buckets of scheduler lateness, in seconds.
const LATENESS_BUCKETS: &[f64] = &[0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 3600.0];

/// How an action this host ran ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It committed.
    Finished,
    /// It failed.
    Failed,
    /// Its instance was halted while it ran.
    Halted,
}

impl Ended {
    fn label(self) -> &'static str {
        match self {
            Ended::Finished => "finished",
            Ended::Failed => "failed",
            Ended::Halted => "halted",
        }
    }
}

/// How a deploy ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deployed {
    /// Something changed and was committed.
    Applied,
    /// Nothing differed from the repository.
    Unchanged,
    /// A dry run: judged, nothing written.
    DryRun,
    /// Refused for its problems (422).
    Rejected,
    /// It failed otherwise (the repository, the server).
    Failed,
}

impl Deployed {
    fn label(self) -> &'static str {
        match self {
            Deployed::Applied => "applied",
            Deployed::Unchanged => "unchanged",
            Deployed::DryRun => "dry_run",
            Deployed::Rejected => "rejected",
            Deployed::Failed => "failed",
        }
    }
}

/// The rows an action reports.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rows {
    /// Read.
    pub read: u64,
    /// Written (inserted).
    pub written: u64,
    /// Updated.
    pub updated: u64,
    /// Deleted.
    pub deleted: u64,
}

/// What the repository holds now, read at each scrape.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Batch instances by state word (`waiting`, `running`, ...).
    pub instances: Vec<(String, i64)>,
    /// Actions of unfinished instances by state code: `W` (ready, waiting for a slot), `R`
    /// (running), `D` (waiting for what they depend on).
    pub actions: Vec<(String, i64)>,
    /// Hosts with a live lease on the repository (1 for a server alone on SQLite).
    pub hosts: i64,
    /// Actions running on this host.
    pub running_here: usize,
    /// Scheduled batches by name, each with the end of its newest finished run (seconds
    /// since 1970, UTC).
    pub last_success: Vec<(String, f64)>,
    /// Scheduled batches with an unfinished run, each with the start of its oldest (seconds
    /// since 1970, UTC).
    pub running_since: Vec<(String, f64)>,
}

/// The buckets of batch durations, in seconds: from a minute's run to a day's.
const BATCH_BUCKETS: &[f64] = &[
    1.0, 10.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14_400.0, 28_800.0, 86_400.0,
];

/// The most batch names this process labels series with; a run of any other batch counts
/// under `batch="other"`, so that many names (`RunElements` takes any) cannot make the
/// answer grow without bound.
pub const MAX_BATCH_LABELS: usize = 100;

/// The label of batch `name`: itself while fewer than [`MAX_BATCH_LABELS`] names were
/// labelled, else `other`.
fn batch_label(name: &str) -> String {
    static SEEN: std::sync::Mutex<Option<std::collections::HashSet<String>>> =
        std::sync::Mutex::new(None);
    let mut seen = SEEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let seen = seen.get_or_insert_with(Default::default);
    if seen.contains(name) {
        return name.to_owned();
    }
    if seen.len() < MAX_BATCH_LABELS {
        seen.insert(name.to_owned());
        return name.to_owned();
    }
    "other".to_owned()
}

/// Counts a batch instance that ended on this host (its last action's end was recorded
/// here): its batch name, how it ended (`finished`, `failed`, `halted`, ...) and how long it
/// took.
pub fn instance_ended(batch: &str, state: &str, seconds: f64) {
    let Some(m) = get() else { return };
    let label = batch_label(batch);
    m.batch_runs.with_label_values(&[&label, state]).inc();
    m.batch_seconds
        .with_label_values(&[&label])
        .observe(seconds.max(0.0));
}

struct Metrics {
    registry: Registry,
    actions_ended: IntCounterVec,
    action_seconds: HistogramVec,
    rows: IntCounterVec,
    deploys: IntCounterVec,
    scheduled_starts: IntCounter,
    missed_starts: IntCounter,
    wait_reads: IntCounter,
    change_feed: IntGauge,
    start_lateness: Histogram,
    commit_window: Histogram,
    plugin_errors: IntCounterVec,
    connection_errors: IntCounterVec,
    instances: IntGaugeVec,
    actions: IntGaugeVec,
    hosts: IntGauge,
    running_here: IntGauge,
    batch_runs: IntCounterVec,
    batch_seconds: HistogramVec,
    batch_last_success: prometheus::GaugeVec,
    batch_running_since: prometheus::GaugeVec,
}

impl Metrics {
    fn new() -> prometheus::Result<Self> {
        let registry = Registry::new();
        let counters = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels)?;
            registry.register(Box::new(c.clone()))?;
            Ok::<_, prometheus::Error>(c)
        };
        let gauges = |name: &str, help: &str, labels: &[&str]| {
            let g = IntGaugeVec::new(Opts::new(name, help), labels)?;
            registry.register(Box::new(g.clone()))?;
            Ok::<_, prometheus::Error>(g)
        };
        let gauge = |name: &str, help: &str| {
            let g = IntGauge::new(name, help)?;
            registry.register(Box::new(g.clone()))?;
            Ok::<_, prometheus::Error>(g)
        };
        let action_seconds = HistogramVec::new(
            HistogramOpts::new(
                "weft_action_duration_seconds",
                "How long the actions this host ran took, from their start to their end, by how they ended.",
            )
            .buckets(ACTION_BUCKETS.to_vec()),
            &["state"],
        )?;
        registry.register(Box::new(action_seconds.clone()))?;
        let batch_seconds = HistogramVec::new(
            HistogramOpts::new(
                "weft_batch_duration_seconds",
                "How long the batch instances whose end this host recorded took, from their start to their end, by batch name (at most 100 names; the rest as other).",
            )
            .buckets(BATCH_BUCKETS.to_vec()),
            &["batch"],
        )?;
        registry.register(Box::new(batch_seconds.clone()))?;
        let batch_last_success = prometheus::GaugeVec::new(
            Opts::new(
                "weft_batch_last_success_timestamp_seconds",
                "When the newest finished run of each scheduled batch ended (seconds since 1970, UTC), from the repository: the 100 most recent.",
            ),
            &["batch"],
        )?;
        registry.register(Box::new(batch_last_success.clone()))?;
        let batch_running_since = prometheus::GaugeVec::new(
            Opts::new(
                "weft_batch_running_since_timestamp_seconds",
                "When the oldest unfinished (waiting or running) run of each scheduled batch started (seconds since 1970, UTC), from the repository; absent while none runs.",
            ),
            &["batch"],
        )?;
        registry.register(Box::new(batch_running_since.clone()))?;
        let start_lateness = Histogram::with_opts(
            HistogramOpts::new(
                "weft_scheduler_lateness_seconds",
                "How late this host's scheduler started each planned batch start, in seconds.",
            )
            .buckets(LATENESS_BUCKETS.to_vec()),
        )?;
        registry.register(Box::new(start_lateness.clone()))?;
        let commit_window = Histogram::with_opts(
            HistogramOpts::new(
                "weft_commit_window_seconds",
                "From an action's last check of this host's lease to its targets' commit: the window in which a pause past the lease could still let an action that another host took over commit twice.",
            )
            .buckets(WINDOW_BUCKETS.to_vec()),
        )?;
        registry.register(Box::new(commit_window.clone()))?;
        let scheduled_starts = IntCounter::new(
            "weft_scheduled_starts_total",
            "Planned batch starts this host's scheduler started.",
        )?;
        registry.register(Box::new(scheduled_starts.clone()))?;
        let missed_starts = IntCounter::new(
            "weft_scheduled_starts_missed_total",
            "Planned batch starts this host's scheduler passed because the batch's previous run had not finished (ifRunning skip).",
        )?;
        registry.register(Box::new(missed_starts.clone()))?;
        let wait_reads = IntCounter::new(
            "weft_wait_reads_total",
            "Reads of the repository this host made for WaitBatchInstance requests (a watcher's look at an instance, a waiter's own): none while nothing changes.",
        )?;
        registry.register(Box::new(wait_reads.clone()))?;
        let change_feed = IntGauge::new(
            "weft_change_feed_up",
            "Whether this host hears the changes other hosts make to instances (1: its connection listening on a PostgreSQL repository is up; 0: down, and its waits look once a second). Absent alone on SQLite.",
        )?;
        let build = gauges(
            "weft_build_info",
            "The weft build this server runs (always 1).",
            &["version"],
        )?;
        build.with_label_values(&[env!("CARGO_PKG_VERSION")]).set(1);
        Ok(Metrics {
            actions_ended: counters(
                "weft_actions_ended_total",
                "Actions this host ran to their end, by how they ended.",
                &["state"],
            )?,
            action_seconds,
            rows: counters(
                "weft_rows_total",
                "Rows the actions this host ran reported, by what they did to them (read, written, updated, deleted).",
                &["kind"],
            )?,
            deploys: counters(
                "weft_deploys_total",
                "Deploys this host answered, by result (applied, unchanged, dry_run, rejected, failed).",
                &["result"],
            )?,
            scheduled_starts,
            missed_starts,
            wait_reads,
            change_feed,
            start_lateness,
            commit_window,
            plugin_errors: counters(
                "weft_plugin_errors_total",
                "Actions whose module failed (an error, or a panic caught by the host), by module.",
                &["module"],
            )?,
            connection_errors: counters(
                "weft_connection_errors_total",
                "Connections that could not be opened (by actions and by deploys checking their objects), by connection type.",
                &["type"],
            )?,
            instances: gauges(
                "weft_instances",
                "Batch instances in the repository, by state.",
                &["state"],
            )?,
            actions: gauges(
                "weft_actions",
                "Actions of unfinished batch instances in the repository, by state (D: waiting for what they depend on, W: ready, R: running).",
                &["state"],
            )?,
            hosts: gauge("weft_hosts", "Hosts with a live lease on the repository.")?,
            running_here: gauge(
                "weft_host_actions_running",
                "Actions running on this host now.",
            )?,
            batch_runs: counters(
                "weft_batch_runs_total",
                "Batch instances whose end this host recorded, by batch name (at most 100 names; the rest as other) and how they ended.",
                &["batch", "state"],
            )?,
            batch_seconds,
            batch_last_success,
            batch_running_since,
            registry,
        })
    }
}

/// The process's metrics; `None` only if they could not be made (a bug, logged once).
fn get() -> Option<&'static Metrics> {
    static METRICS: OnceLock<Option<Metrics>> = OnceLock::new();
    METRICS
        .get_or_init(|| {
            Metrics::new()
                .map_err(|e| {
                    tracing::error!(message = "The metrics cannot be made; /metrics answers without them.", error = %e);
                })
                .ok()
        })
        .as_ref()
}

/// Counts an action this host ran: how it ended, how long it took, its rows; `module` is
/// the module to count a plugin error against (its call failed).
pub fn action_ended(ended: Ended, seconds: f64, rows: Rows, module: Option<&str>) {
    let Some(m) = get() else { return };
    m.actions_ended.with_label_values(&[ended.label()]).inc();
    m.action_seconds
        .with_label_values(&[ended.label()])
        .observe(seconds);
    for (kind, n) in [
        ("read", rows.read),
        ("written", rows.written),
        ("updated", rows.updated),
        ("deleted", rows.deleted),
    ] {
        if n > 0 {
            m.rows.with_label_values(&[kind]).inc_by(n);
        }
    }
    if let Some(module) = module {
        m.plugin_errors.with_label_values(&[module]).inc();
    }
}

/// Counts a deploy.
pub fn deployed(result: Deployed) {
    if let Some(m) = get() {
        m.deploys.with_label_values(&[result.label()]).inc();
    }
}

/// Counts a planned start the scheduler started, `late_seconds` after its time.
pub fn scheduled_start(late_seconds: f64) {
    if let Some(m) = get() {
        m.scheduled_starts.inc();
        m.start_lateness.observe(late_seconds.max(0.0));
    }
}

/// Observes the window from an action's lease check to its targets' commit.
pub fn commit_window(seconds: f64) {
    if let Some(m) = get() {
        m.commit_window.observe(seconds);
    }
}

/// Counts a planned start the scheduler passed because the batch still ran.
pub fn scheduled_start_missed() {
    if let Some(m) = get() {
        m.missed_starts.inc();
    }
}

/// Counts a read of the repository made for a wait.
pub fn wait_read() {
    if let Some(m) = get() {
        m.wait_reads.inc();
    }
}

/// Says whether the repository's change feed is up; the gauge appears with the first call.
pub fn change_feed(up: bool) {
    if let Some(m) = get() {
        // Registered at the first report (a host alone on SQLite has no feed to show); the
        // later registrations are refused as repeated, which is what is meant.
        let _ = m.registry.register(Box::new(m.change_feed.clone()));
        m.change_feed.set(i64::from(up));
    }
}

/// Counts a connection of type `kind` that could not be opened.
pub fn connection_failed(kind: &str) {
    if let Some(m) = get() {
        m.connection_errors.with_label_values(&[kind]).inc();
    }
}

/// The text of `GET /metrics`: what this process counted, with `now` from the repository.
pub fn render(now: &Snapshot) -> String {
    let Some(m) = get() else {
        return String::new();
    };
    m.instances.reset();
    for (state, n) in &now.instances {
        m.instances.with_label_values(&[state]).set(*n);
    }
    m.actions.reset();
    for state in ["D", "W", "R"] {
        let n = now
            .actions
            .iter()
            .find(|(s, _)| s == state)
            .map_or(0, |(_, n)| *n);
        m.actions.with_label_values(&[state]).set(n);
    }
    m.hosts.set(now.hosts);
    m.batch_last_success.reset();
    for (batch, at) in &now.last_success {
        m.batch_last_success.with_label_values(&[batch]).set(*at);
    }
    m.batch_running_since.reset();
    for (batch, at) in &now.running_since {
        m.batch_running_since.with_label_values(&[batch]).set(*at);
    }
    m.running_here
        .set(i64::try_from(now.running_here).unwrap_or(i64::MAX));
    let mut out = Vec::new();
    if let Err(e) = TextEncoder::new().encode(&m.registry.gather(), &mut out) {
        tracing::error!(message = "The metrics cannot be written.", error = %e);
    }
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of the sample `line_start` (name and labels as written), if present.
    fn sample(text: &str, line_start: &str) -> Option<f64> {
        text.lines()
            .find(|l| l.starts_with(line_start) && l[line_start.len()..].starts_with(' '))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    }

    #[test]
    fn events_and_the_repository_s_numbers_are_written_in_the_text_format() {
        let before = render(&Snapshot::default());
        let ended =
            |t: &str| sample(t, r#"weft_actions_ended_total{state="failed"}"#).unwrap_or(0.0);
        let failed_before = ended(&before);
        action_ended(
            Ended::Failed,
            0.3,
            Rows {
                written: 5,
                ..Rows::default()
            },
            Some("Sql"),
        );
        deployed(Deployed::Rejected);
        scheduled_start(2.0);
        connection_failed("postgresql");
        let text = render(&Snapshot {
            instances: vec![("running".to_owned(), 2), ("failed".to_owned(), 7)],
            actions: vec![("R".to_owned(), 3)],
            hosts: 2,
            running_here: 1,
            last_success: vec![("nightly".to_owned(), 1_795_000_000.5)],
            running_since: vec![("hourly".to_owned(), 1_795_003_600.0)],
        });
        assert_eq!(ended(&text), failed_before + 1.0, "{text}");
        assert_eq!(
            sample(
                &text,
                r#"weft_batch_last_success_timestamp_seconds{batch="nightly"}"#
            ),
            Some(1_795_000_000.5)
        );
        assert_eq!(
            sample(
                &text,
                r#"weft_batch_running_since_timestamp_seconds{batch="hourly"}"#
            ),
            Some(1_795_003_600.0)
        );
        assert!(sample(&text, r#"weft_rows_total{kind="written"}"#).unwrap_or(0.0) >= 5.0);
        assert!(sample(&text, r#"weft_deploys_total{result="rejected"}"#).is_some());
        assert!(sample(&text, r#"weft_plugin_errors_total{module="Sql"}"#).is_some());
        assert!(sample(&text, r#"weft_connection_errors_total{type="postgresql"}"#).is_some());
        assert_eq!(
            sample(&text, r#"weft_instances{state="failed"}"#),
            Some(7.0)
        );
        assert_eq!(sample(&text, r#"weft_actions{state="R"}"#), Some(3.0));
        assert_eq!(sample(&text, r#"weft_actions{state="W"}"#), Some(0.0));
        assert_eq!(sample(&text, "weft_hosts"), Some(2.0));
        assert_eq!(sample(&text, "weft_host_actions_running"), Some(1.0));
        assert!(
            sample(
                &text,
                r#"weft_action_duration_seconds_bucket{state="failed",le="0.5"}"#
            )
            .unwrap_or(0.0)
                >= 1.0,
            "{text}"
        );
        assert!(text.contains("# TYPE weft_action_duration_seconds histogram"));
        assert!(text.contains(&format!(
            "weft_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        )));
        // A state gone from the repository is gone from the answer.
        let later = render(&Snapshot {
            instances: vec![("running".to_owned(), 1)],
            ..Snapshot::default()
        });
        assert_eq!(sample(&later, r#"weft_instances{state="failed"}"#), None);
    }

    #[test]
    fn batch_series_count_each_run_under_at_most_a_bounded_number_of_batch_names() {
        instance_ended("nightly load", "failed", 12.0);
        instance_ended("nightly load", "failed", 3.0);
        let text = render(&Snapshot::default());
        assert!(
            sample(
                &text,
                r#"weft_batch_runs_total{batch="nightly load",state="failed"}"#
            )
            .unwrap_or(0.0)
                >= 2.0,
            "{text}"
        );
        assert!(
            sample(
                &text,
                r#"weft_batch_duration_seconds_count{batch="nightly load"}"#
            )
            .unwrap_or(0.0)
                >= 2.0,
            "{text}"
        );
        // Past the cap, every other name counts as `other`.
        for i in 0..(MAX_BATCH_LABELS + 10) {
            instance_ended(&format!("adhoc {i}"), "finished", 1.0);
        }
        let text = render(&Snapshot::default());
        let names: std::collections::HashSet<&str> = text
            .lines()
            .filter(|l| l.starts_with("weft_batch_runs_total{"))
            .filter_map(|l| l.split("batch=\"").nth(1)?.split('"').next())
            .collect();
        assert!(names.len() <= MAX_BATCH_LABELS + 1, "{}", names.len());
        assert!(names.contains("other"), "{names:?}");
    }
}
