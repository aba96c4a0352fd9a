//! Running one action: [`run_action`] (and [`run_marked`] for a batch run, whose commits
//! carry the run's marker) opens the connections, substitutes the variables, runs the
//! module in one transaction per target connection, and commits or rolls back; the log
//! lines on their way ([`Lines`], live to the repository while it runs); whether a run's
//! commit markers are in every connection an action writes ([`committed`]).

use super::error::{Stopped, Untold};
use super::targets::Targets;
use super::variables::substitute;
use super::{halt, looped, process};
use crate::fault;
use std::sync::{Arc, Mutex};
use weft_core::connect;
use weft_core::connect::marker;
use weft_core::keys::KeyFile;
use weft_core::plan::ActionPlan;
use weft_core::plugins::Registry;
use weft_repo::model::FailureClass;
use weft_sdk::{Log, RunContext, RunOutcome, RunParts};

/// `text` with every secret replaced by `***`.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for s in secrets.iter().filter(|s| s.len() >= 3) {
        out = out.replace(s.as_str(), "***");
    }
    // And what secret stores' programs printed, as of now.
    weft_core::keys::redact_printed(&out)
}

/// Where a batch run's log lines go while its action runs (the repository, so that
/// `GetBatchInstance` shows them): called with lines already redacted; `false` when they
/// could not be stored now (they are tried again with the next line, or come back at the
/// end).
pub type LiveLog = Arc<dyn Fn(&[String]) -> bool + Send + Sync>;

/// How often at most a running action's new lines are handed to its [`LiveLog`].
const LIVE_LOG_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// A logger that keeps the lines for the caller, and hands them to a [`LiveLog`] as they
/// come: at most every 250 ms, counted from the logger's start, and a line held back is
/// handed on at the latest 250 ms after the last hand-over (or the start) even when no line
/// follows it (the log flusher's thread does that). The lines not handed on are the caller's
/// at the end: an action shorter than that stores its log with its end, in one write.
#[derive(Clone, Default)]
pub struct Lines(Arc<Mutex<LinesState>>);

#[derive(Default)]
struct LinesState {
    lines: Vec<String>,
    handed: usize,
    last: Option<std::time::Instant>,
    live: Option<(LiveLog, Vec<String>)>,
    /// Whether the flusher holds a hand-over for it.
    deferred: bool,
}

impl LinesState {
    /// Hands the lines not yet handed to the live log.
    fn hand_over(&mut self) {
        if let Some((live, secrets)) = &self.live
            && self.handed < self.lines.len()
        {
            let new: Vec<String> = self.lines[self.handed..]
                .iter()
                .map(|l| redact(l, secrets))
                .collect();
            if live(&new) {
                self.handed = self.lines.len();
            }
        }
        self.last = Some(std::time::Instant::now());
    }
}

impl Lines {
    /// A logger whose lines also go to `live`, each redacted of `secrets`.
    pub fn live(live: LiveLog, secrets: Vec<String>) -> Self {
        Lines(Arc::new(Mutex::new(LinesState {
            live: Some((live, secrets)),
            last: Some(std::time::Instant::now()),
            ..LinesState::default()
        })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, LinesState> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The lines not yet handed to the live log (all of them without one); nothing is
    /// handed to it afterwards.
    pub fn rest(&self) -> Vec<String> {
        let mut state = self.state();
        state.live = None;
        state.lines[state.handed..].to_vec()
    }
}

impl Lines {
    /// Keeps a line, and hands it on when its time comes.
    pub fn push(&self, line: &str) {
        let mut state = self.state();
        state.lines.push(line.to_string());
        if state.live.is_none() {
            return;
        }
        match state.last {
            Some(t) if t.elapsed() < LIVE_LOG_EVERY => {
                if !state.deferred {
                    state.deferred = true;
                    flusher::defer(Arc::downgrade(&self.0), t + LIVE_LOG_EVERY);
                }
            }
            _ => state.hand_over(),
        }
    }
}

/// The one thread that hands on the log lines held back by [`Lines`] when their time comes.
mod flusher {
    use super::LinesState;
    use std::collections::BTreeMap;
    use std::sync::{Condvar, Mutex, Once, OnceLock, PoisonError, Weak};
    use std::time::Instant;

    /// The loggers waiting for their time, by that time (and a number that keeps two of one
    /// time apart): the earliest is the first, and a new one rings the thread only when it
    /// comes before every other (an action's start defers its first lines, so thousands may
    /// wait at once).
    struct Flusher {
        due: Mutex<(Due, u64)>,
        wake: Condvar,
    }

    /// Each waiting logger by its time and number.
    type Due = BTreeMap<(Instant, u64), Weak<Mutex<LinesState>>>;

    static FLUSHER: OnceLock<Flusher> = OnceLock::new();
    static STARTED: Once = Once::new();

    /// Hands on the lines of `lines` at `at` (nothing when the action ended before).
    pub(super) fn defer(lines: Weak<Mutex<LinesState>>, at: Instant) {
        let f = FLUSHER.get_or_init(|| Flusher {
            due: Mutex::new((BTreeMap::new(), 0)),
            wake: Condvar::new(),
        });
        STARTED.call_once(|| {
            let spawned = std::thread::Builder::new()
                .name("weft-log-flush".to_owned())
                .spawn(move || run(f));
            if let Err(e) = spawned {
                // Held-back lines then come with the next line or the action's end.
                tracing::warn!(message = "Cannot start the log flusher's thread.", error = %e);
            }
        });
        let first = {
            let mut due = f.due.lock().unwrap_or_else(PoisonError::into_inner);
            let (map, seq) = &mut *due;
            *seq += 1;
            map.insert((at, *seq), lines);
            map.first_key_value().is_some_and(|(k, _)| *k == (at, *seq))
        };
        if first {
            f.wake.notify_one();
        }
    }

    fn run(f: &Flusher) {
        let mut due = f.due.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let now = Instant::now();
            let mut ready = Vec::new();
            while let Some(entry) = due.0.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                ready.push(entry.remove());
            }
            if !ready.is_empty() {
                drop(due);
                for lines in ready {
                    if let Some(lines) = lines.upgrade() {
                        let mut state = lines.lock().unwrap_or_else(PoisonError::into_inner);
                        state.deferred = false;
                        state.hand_over();
                    }
                }
                due = f.due.lock().unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            due = match due.0.first_key_value().map(|((at, _), _)| *at) {
                Some(next) => {
                    f.wake
                        .wait_timeout(due, next.saturating_duration_since(now))
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => f.wake.wait(due).unwrap_or_else(PoisonError::into_inner),
            };
        }
    }
}

/// What running an action gave.
#[derive(Debug)]
pub struct Ran {
    /// Rows read, written, updated; why it did not finish (failed or halted) otherwise.
    pub outcome: Result<RunOutcome, Stopped>,
    /// The log lines of the plugin (with a live log, those it was not handed).
    pub log: Vec<String>,
    /// What kind of failure it was (for its retries); `Other` when it did not fail.
    pub class: FailureClass,
    /// It failed before its module ran: it did nothing.
    pub untouched: bool,
}

impl Ran {
    /// An action that failed before it ran, with `message`.
    pub fn failed(message: String) -> Self {
        Ran {
            outcome: Err(Stopped::failed(message)),
            log: Vec::new(),
            class: FailureClass::Other,
            untouched: true,
        }
    }
}

/// The kind of a failure from the plugin's error kind and, for what a database says in its
/// own words, the message: a lost connection, or a deadlock, serialization failure or lock
/// not had (SQLSTATE classes 08, 40, 55P03; SQLite's "database is locked").
pub fn classify(kind: Option<weft_sdk::ErrorKind>, message: &str) -> FailureClass {
    let m = message.to_ascii_lowercase();
    let any = |words: &[&str]| words.iter().any(|w| m.contains(w));
    if kind == Some(weft_sdk::ErrorKind::Connection)
        || any(&[
            "(08000)",
            "(08001)",
            "(08003)",
            "(08006)",
            "connection refused",
            "connection reset",
            "broken pipe",
            "server closed the connection",
            "terminating connection",
            "connection closed",
        ])
    {
        FailureClass::Connection
    } else if any(&[
        "deadlock",
        "(40001)",
        "(40p01)",
        "could not serialize",
        "serialization failure",
        "database is locked",
        "(55p03)",
        "lock timeout",
        "lock wait timeout",
    ]) {
        FailureClass::Transient
    } else {
        FailureClass::Other
    }
}

/// Runs one action: opens a connection for every connection number its objects use (from
/// the key file), substitutes the variables, starts a transaction on every target
/// connection, runs the module, and commits when it succeeded, rolls back when it failed.
pub fn run_action(
    registry: &Registry,
    keys: &KeyFile,
    plan: &ActionPlan,
    variables: &[(String, String)],
) -> Ran {
    run_marked(registry, keys, plan, variables, None)
}

/// How a batch run marks an action's commits: the run the markers name, and where to record,
/// before the action begins, the connections it writes without a marker.
pub struct Marking<'a> {
    /// The run.
    pub run: &'a marker::Run,
    /// Records the connections written without a marker; an error keeps the action from
    /// running.
    pub unmarked: &'a dyn Fn(&[i64]) -> weft_repo::Result<()>,
    /// Where the action's log lines go while it runs; those not handed there come back in
    /// [`Ran::log`].
    pub live_log: Option<LiveLog>,
    /// The halt of the action's instance: its signal reaches the module, and raising it
    /// interrupts the action's connections.
    pub halt: Option<&'a halt::Halt>,
    /// Asked right before the action's targets commit: why its host may no longer commit
    /// (its lease lapsed), which rolls the action back.
    pub lease: Option<&'a dyn Fn() -> Option<String>>,
}

/// [`run_action`] where, with `marking`, each target's transaction also carries the run's
/// commit marker ([`marker`]), as batch instances run actions.
pub fn run_marked(
    registry: &Registry,
    keys: &KeyFile,
    plan: &ActionPlan,
    variables: &[(String, String)],
    marking: Option<&Marking<'_>>,
) -> Ran {
    // Secrets from the key file, and those its secret stores print (`redact` asks for them
    // at each use), never reach a log or an error.
    let secrets = keys.secrets();
    let lines = match marking.and_then(|m| m.live_log.clone()) {
        Some(live) => Lines::live(live, secrets.clone()),
        None => Lines::default(),
    };
    let mut class = FailureClass::Other;
    let mut untouched = false;
    let outcome = run_inner(registry, keys, plan, variables, marking, &lines).map_err(|f| {
        class = f.class;
        untouched = f.untouched;
        let message = redact(&f.message, &secrets);
        // Whatever ended it, an action that did not commit after its instance was asked to
        // halt counts as halted.
        if marking
            .and_then(|m| m.halt)
            .is_some_and(halt::Halt::is_raised)
        {
            Stopped::Halted {
                message,
                partial: f.partial,
            }
        } else {
            Stopped::Failed {
                message,
                partial: f.partial,
            }
        }
    });
    let log = lines.rest();
    let log = log.iter().map(|l| redact(l, &secrets)).collect();
    Ran {
        outcome,
        log,
        class,
        untouched,
    }
}

/// Why an action failed: the message, the rows it reported before it failed, its kind, and
/// whether it failed before its module ran.
struct Failure {
    message: String,
    partial: RunOutcome,
    class: FailureClass,
    untouched: bool,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure {
            message,
            partial: RunOutcome::default(),
            class: FailureClass::Other,
            untouched: false,
        }
    }
}

impl Failure {
    /// A failure of a plugin call, classified; `untouched` before the module ran.
    fn of(message: String, e: &weft_sdk::PluginError, untouched: bool) -> Self {
        Failure {
            class: classify(Some(e.kind()), &message),
            message,
            partial: RunOutcome::default(),
            untouched,
        }
    }
}

fn run_inner(
    registry: &Registry,
    keys: &KeyFile,
    plan: &ActionPlan,
    variables: &[(String, String)],
    marking: Option<&Marking<'_>>,
    lines: &Lines,
) -> Result<RunOutcome, Failure> {
    let module = registry
        .module(&plan.module)
        .ok_or_else(|| format!("action {}: module `{}` is not loaded", plan.id, plan.module))?;
    // Deployed elsewhere, or before the setting changed: refused here all the same.
    if let Some(why) = registry.refusal(&plan.module) {
        return Err(format!("action {}: {why}", plan.id).into());
    }
    // A looped action's text is substituted at each iteration, with the loop row's columns.
    let looped = looped::Loop::of(plan).filter(|_| registry.process_module(&plan.module).is_none());
    let text = match (&plan.text, &looped) {
        (Some(t), Some(_)) => t.clone(),
        (Some(t), None) => {
            substitute(t, variables).map_err(|unset| format!("action {}: {unset}", plan.id))?
        }
        (None, _) => String::new(),
    };
    // The statement as run, first in the action's log.
    lines.push(&format!(
        "{} action {} `{}`: {}",
        plan.module,
        plan.id,
        plan.name,
        text.trim()
    ));
    let mut ids: Vec<i64> = plan
        .sources
        .iter()
        .chain(&plan.targets)
        .map(|o| o.connection)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    if let Some(program) = registry.process_module(&plan.module) {
        return run_process(program, plan, &text, variables, keys, &ids, marking, lines);
    }
    let connections = open_connections(registry, keys, plan, &ids)?;
    // One transaction on each connection the action writes: its targets', or, for an action
    // without targets (a Sql action on its source's connection), the connection it runs on.
    let target_ids = written_connections(plan);
    let halt_signal = marking
        .and_then(|m| m.halt)
        .map(halt::Halt::signal)
        .unwrap_or_default();
    let log = {
        let lines = lines.clone();
        Log::new(move |line| lines.push(line))
    };
    let mut ctx = RunContext::new(RunParts {
        action_id: plan.id,
        action_name: plan.name.clone(),
        action: text,
        attributes: plan.sdk_attributes(registry.module(&plan.module).map(|m| &m.info)),
        sources: plan.source_refs(),
        targets: plan.target_refs(),
        connections,
        variables: variables.to_vec(),
        log,
        halt: halt_signal.clone(),
    });
    // A halt interrupts what runs on the action's connections, until the action ends (the
    // registration goes before the connections do), and stops the SQLite statements and
    // lock waits of this thread.
    let _on_this_thread = connect::sqlite::halt_on_this_thread(halt_signal.clone());
    let _interrupts = marking.and_then(|m| m.halt).map(|h| {
        h.register(
            ctx.connections()
                .filter_map(|(_, c)| c.interrupter())
                .collect(),
        )
    });
    let marked = match marking {
        Some(marking) => prepare_markers(&mut ctx, keys, plan, &target_ids, marking, lines)?,
        None => Vec::new(),
    };
    let targets = Targets::begin(&mut ctx, &target_ids)
        .map_err(|(_, e)| Failure::of(format!("action {}: {e}", plan.id), &e, true))?;
    // A halt asked before this point finds no statement running to interrupt.
    let mut result = if halt_signal.is_raised() {
        Err(weft_sdk::PluginError::of(
            weft_sdk::ErrorKind::Halted,
            "the halt was asked before it began",
        ))
    } else {
        let run = |c: &mut RunContext| module.module.run(c).into_result();
        match &looped {
            Some(lp) => run_looped(lp, run, &mut ctx, plan, variables, &target_ids, lines)?,
            None => run(&mut ctx),
        }
    };
    if result.is_ok() && halt_signal.is_raised() {
        result = Err(weft_sdk::PluginError::of(
            weft_sdk::ErrorKind::Halted,
            "it ended after the halt was asked, so it was not committed",
        ));
    }
    if let (Ok(_), Some(marking)) = (&result, marking)
        && let Err(e) = targets.mark(&mut ctx, &marked, marking.run, &|id| {
            plan.schemas.get(&id).cloned()
        })
    {
        result = Err(e);
    }
    let mut checked: Option<std::time::Instant> = None;
    if result.is_ok() {
        // The last moment to give way to a host that took this one's actions over.
        if let Some(lease) = marking.and_then(|m| m.lease) {
            checked = Some(std::time::Instant::now());
            if let Some(why) = lease() {
                result = Err(weft_sdk::PluginError::of(
                    weft_sdk::ErrorKind::Halted,
                    format!("rolled back before its commit: {why}"),
                ));
            }
        }
    }
    if result.is_ok() {
        fault::hit_for(fault::BEFORE_TARGET_COMMIT, plan.id);
    }
    if let Err((_, e)) = targets.finish(&mut ctx, result.is_ok()) {
        // It may have committed (an answer lost): never tried again by itself.
        return Err(Failure {
            class: FailureClass::Commit,
            ..format!("action {}: commit failed: {e}", plan.id).into()
        });
    }
    if let (Ok(_), Some(at), false) = (&result, checked, target_ids.is_empty()) {
        weft_core::metrics::commit_window(at.elapsed().as_secs_f64());
    }
    result.map_err(|e| {
        Failure::of(
            format!("action {} ({}): {e}", plan.id, plan.module),
            &e,
            false,
        )
    })
}

/// The key file entry of connection `id`, which `plan` uses.
fn entry_of<'k>(
    keys: &'k KeyFile,
    plan: &ActionPlan,
    id: i64,
) -> Result<&'k weft_core::keys::Entry, Failure> {
    keys.get(&id.to_string()).ok_or_else(|| {
        format!(
            "action {}: the key file has no entry for connection {id}",
            plan.id
        )
        .into()
    })
}

/// Opens a connection for each of `ids` (from the key file), each with its default schema.
fn open_connections(
    registry: &Registry,
    keys: &KeyFile,
    plan: &ActionPlan,
    ids: &[i64],
) -> Result<Vec<(i64, weft_sdk::Connection)>, Failure> {
    let mut connections = Vec::with_capacity(ids.len());
    for id in ids {
        let entry = entry_of(keys, plan, *id)?;
        // A connection that cannot be opened: nothing was done yet.
        let connection =
            connect::open_in(entry, registry, plan.schemas.get(id).map(String::as_str)).map_err(
                |e| Failure {
                    class: FailureClass::Connection,
                    untouched: true,
                    ..format!("action {}: {e}", plan.id).into()
                },
            )?;
        connections.push((*id, connection));
    }
    Ok(connections)
}

/// Makes the marker table on each target that may have one (outside any transaction), and
/// records, before the action begins, the targets written without one: the connections
/// whose transaction carries the run's commit marker.
fn prepare_markers(
    ctx: &mut RunContext,
    keys: &KeyFile,
    plan: &ActionPlan,
    target_ids: &[i64],
    marking: &Marking<'_>,
    lines: &Lines,
) -> Result<Vec<i64>, Failure> {
    let halted = || marking.halt.is_some_and(halt::Halt::is_raised);
    let mut marked: Vec<i64> = Vec::new();
    let run = marking.run;
    for id in target_ids {
        let entry = keys.get(&id.to_string()).filter(|e| marker::enabled(e));
        let prepared = if let Some(entry) = entry {
            // Twice: two actions creating the table at once may make one of them fail.
            let schema = plan.schemas.get(id).map(String::as_str);
            let place = marker::place(entry, schema);
            let mut tried = ctx
                .connection(*id)
                .map_err(|e| e.to_string())
                .and_then(|c| marker::prepare_once(c, schema, &place));
            if tried.is_err() {
                tried = ctx
                    .connection(*id)
                    .map_err(|e| e.to_string())
                    .and_then(|c| marker::prepare_once(c, schema, &place));
            }
            tried
        } else {
            Err(format!("the key file entry sets {}=off", marker::OPTION))
        };
        match prepared {
            Ok(()) => marked.push(*id),
            Err(e) if halted() => {
                return Err(format!("action {}: stopped before it began: {e}", plan.id).into());
            }
            Err(e) => lines.push(&format!(
                "connection {id}: no commit marker ({e}); if the server stops between this action's commit and its record, a restart runs it again (at-least-once; run {})",
                run.token()
            )),
        }
    }
    let unmarked: Vec<i64> = target_ids
        .iter()
        .copied()
        .filter(|id| !marked.contains(id))
        .collect();
    if !unmarked.is_empty() {
        (marking.unmarked)(&unmarked).map_err(|e| {
            format!(
                "action {}: it did not run, as it writes connection(s) {unmarked:?} without a commit marker and that could not be recorded: {e}",
                plan.id
            )
        })?;
    }
    Ok(marked)
}

/// Runs a looped action: its module once per row of its `loopQuery`, on its first target.
fn run_looped(
    lp: &looped::Loop,
    mut run: impl FnMut(&mut RunContext) -> weft_sdk::PluginResult<RunOutcome>,
    ctx: &mut RunContext,
    plan: &ActionPlan,
    variables: &[(String, String)],
    target_ids: &[i64],
    lines: &Lines,
) -> Result<weft_sdk::PluginResult<RunOutcome>, Failure> {
    let Some(on) = target_ids.first().copied() else {
        return Err(format!(
            "action {}: loopQuery needs a connection to run on, and the action has no object",
            plan.id
        )
        .into());
    };
    let template = plan.text.clone().unwrap_or_default();
    Ok(looped::run(
        lp,
        &mut run,
        ctx,
        &template,
        variables,
        on,
        target_ids,
        &|line| lines.push(line),
    ))
}

/// Runs a process module: it opens its connections itself (their key file entries go in
/// its request), so the host opens none and begins no transaction; its writes carry no
/// commit marker, which is recorded first (a restart may run it again).
#[allow(clippy::too_many_arguments)]
fn run_process(
    program: &weft_core::plugins::process::ProcessModule,
    plan: &ActionPlan,
    text: &str,
    variables: &[(String, String)],
    keys: &KeyFile,
    ids: &[i64],
    marking: Option<&Marking<'_>>,
    lines: &Lines,
) -> Result<RunOutcome, Failure> {
    // Each entry as the module gets it: a password from a secret store's program asked now.
    let mut resolved = Vec::with_capacity(ids.len());
    for id in ids {
        let entry = entry_of(keys, plan, *id)?
            .resolved()
            .map_err(|e| format!("action {}: {e}", plan.id))?
            .into_owned();
        resolved.push((*id, entry));
    }
    let entries: Vec<(i64, &weft_core::keys::Entry)> =
        resolved.iter().map(|(id, e)| (*id, e)).collect();
    if let Some(m) = marking {
        let written = written_connections(plan);
        if !written.is_empty() {
            (m.unmarked)(&written).map_err(|e| {
                format!(
                    "action {}: it did not run, as its writes carry no commit marker and that could not be recorded: {e}",
                    plan.id
                )
            })?;
        }
    }
    let halt = marking.and_then(|m| m.halt);
    let lease = marking.and_then(|m| m.lease);
    process::run(
        program,
        plan,
        text,
        variables,
        &entries,
        // A process module commits itself: it is killed when its host's lease lapses.
        &|| halt.is_some_and(halt::Halt::is_raised) || lease.is_some_and(|l| l().is_some()),
        &|line| lines.push(line),
    )
    .map_err(|e| {
        let message = format!(
            "action {} ({}): {}",
            plan.id,
            plan.module,
            e.error.message()
        );
        // A process module commits itself: one that said it handled rows is not tried again.
        let class = if e.counts == RunOutcome::default() {
            classify(Some(e.error.kind()), &message)
        } else {
            FailureClass::Commit
        };
        Failure {
            message,
            partial: e.counts,
            class,
            untouched: false,
        }
    })
}

/// The connections an action writes, each in one transaction: its targets', or, for an
/// action without targets (a Sql action on its source's connection), the one it runs on.
pub fn written_connections(plan: &ActionPlan) -> Vec<i64> {
    let mut ids = plan.written_connections();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Whether the run's commit markers are in every connection `plan` writes: `Ok(true)` when
/// all are, `Ok(false)` when none is, `Err` with what is known otherwise (some are, a
/// connection could not be asked, or the action writes no connection at all).
///
/// # Errors
///
/// A description of a partial commit, or of why it cannot be told.
pub fn committed(
    registry: &Registry,
    keys: &KeyFile,
    plan: &ActionPlan,
    run: &marker::Run,
) -> Result<bool, Untold> {
    let written = written_connections(plan);
    // Nothing to look in: an action with no object (a lone Shell action, a process module
    // without connections) leaves no marker, so that it ended cannot be told.
    if written.is_empty() {
        return Err(Untold::NoMarkerPlace);
    }
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for id in written {
        let entry = keys.get(&id.to_string()).ok_or(Untold::NoEntry(id))?;
        if !marker::enabled(entry) {
            return Err(Untold::MarkerOff {
                connection: id,
                option: marker::OPTION,
            });
        }
        let schema = plan.schemas.get(&id).map(String::as_str);
        let mut conn =
            connect::open_in(entry, registry, schema).map_err(|e| Untold::CannotOpen {
                connection: id,
                error: keys.redact(&e.to_string()),
            })?;
        match marker::committed(&mut conn, run, schema) {
            Ok(true) => found.push(id),
            Ok(false) => missing.push(id),
            Err(error) => {
                return Err(Untold::CannotRead {
                    connection: id,
                    error,
                });
            }
        }
    }
    match (found.is_empty(), missing.is_empty()) {
        (_, true) => Ok(true),
        (true, false) => Ok(false),
        (false, false) => Err(Untold::Partly { found, missing }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_told_apart_by_their_kind_and_the_databases_words() {
        use weft_sdk::ErrorKind;
        let class = |kind, m: &str| classify(kind, m);
        // What the native PostgreSQL and SQLite connections and the JDBC bridge say.
        for m in [
            "action 4 (Sql): PostgreSQL (connection 2): deadlock detected (40P01)",
            "action 4 (Sql): PostgreSQL (connection 2): could not serialize access due to concurrent update (40001)",
            "action 4 (Sql): SQLite (connection 1): database is locked",
            "action 4 (Sql): PostgreSQL (connection 2): canceling statement due to lock timeout (55P03)",
        ] {
            assert_eq!(
                class(Some(ErrorKind::Failed), m),
                FailureClass::Transient,
                "{m}"
            );
        }
        for m in [
            "action 4 (Sql): PostgreSQL (connection 2): terminating connection due to administrator command (57P01): server closed the connection unexpectedly",
            "action 4 (Transfer): connection 3: Connection refused (os error 111)",
            "action 4 (Sql): connection 2: SSL SYSCALL error (08006)",
        ] {
            assert_eq!(
                class(Some(ErrorKind::Failed), m),
                FailureClass::Connection,
                "{m}"
            );
        }
        assert_eq!(
            class(Some(ErrorKind::Connection), "anything"),
            FailureClass::Connection
        );
        for m in [
            "action 4 (Sql): SQLite (connection 1): no such table: orders",
            "action 4 (Sql): PostgreSQL (connection 2): duplicate key value violates unique constraint (23505)",
        ] {
            assert_eq!(
                class(Some(ErrorKind::Failed), m),
                FailureClass::Other,
                "{m}"
            );
        }
    }

    #[test]
    fn a_held_back_line_is_handed_on_without_a_line_after_it() {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<String>>();
        let tx = Mutex::new(tx);
        let live: LiveLog = Arc::new(move |lines: &[String]| {
            let _ = tx
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .send(lines.to_vec());
            true
        });
        let lines = Lines::live(live, vec!["s3cret".to_owned()]);
        lines.push("first");
        lines.push("second, with s3cret");
        let wait = std::time::Duration::from_secs(30);
        // Held back (they came within 250 ms of the start), then handed on together by the
        // flusher, redacted.
        assert_eq!(
            rx.recv_timeout(wait)
                .expect("both, with no line after them"),
            vec!["first", "second, with ***"]
        );
        assert!(lines.rest().is_empty(), "each line once");
        // After the end nothing more goes to the live log.
        lines.push("late");
        assert_eq!(lines.rest(), vec!["late"]);
    }

    #[test]
    fn redacts_secrets() {
        let secrets = vec!["s3cret-pw".to_owned()];
        assert_eq!(
            redact("login failed for etl/s3cret-pw at host", &secrets),
            "login failed for etl/*** at host"
        );
    }
}
