//! Running actions: what an action is made of (its module, text, attributes, sources and
//! targets, taken from a sheet), `${name}` variable substitution, and [`run_action`], which
//! opens the connections, runs the module in one transaction per target connection, and
//! commits or rolls back. Batch instances, ordering and persistence build on this.

pub mod batch;
pub mod coordinator;
pub mod marker;
pub mod slots;
#[cfg(test)]
pub(crate) mod testing;

pub use crate::plan::{ActionPlan, actions_of, objects_of};

use crate::connect;
use crate::keys::KeyFile;
use crate::plugins::Registry;
use std::sync::{Arc, Mutex};
use weft_sdk::abi_stable::sabi_trait::TD_Opaque;
use weft_sdk::abi_stable::std_types::{RStr, RString, RVec, Tuple2};
use weft_sdk::{ConnectionSlot, Logger, Logger_TO, RunContext, RunOutcome};

/// Substitutes `${name}` in `text` with the variables' values, as text; `$${` writes a
/// literal `${`.
///
/// # Errors
///
/// The name of the first variable that is not set.
pub fn substitute(text: &str, variables: &[(String, String)]) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("$${") {
            out.push_str("${");
            rest = after;
        } else if let Some(after) = tail.strip_prefix("${") {
            let Some(close) = after.find('}') else {
                out.push_str(tail);
                rest = "";
                break;
            };
            let name = &after[..close];
            match variables.iter().rev().find(|(n, _)| n == name) {
                Some((_, v)) => out.push_str(v),
                None => return Err(name.to_owned()),
            }
            rest = &after[close + 1..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// `text` with every secret replaced by `***`.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for s in secrets.iter().filter(|s| s.len() >= 3) {
        out = out.replace(s.as_str(), "***");
    }
    out
}

/// Where a batch run's log lines go while its action runs (the repository, so that
/// `GetBatchInstance` shows them): called with lines already redacted; `false` when they
/// could not be stored now (they are tried again with the next line, or come back at the
/// end).
pub type LiveLog = Arc<dyn Fn(&[String]) -> bool + Send + Sync>;

/// How often at most a running action's new lines are handed to its [`LiveLog`].
const LIVE_LOG_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// A logger that keeps the lines for the caller, and hands them to a [`LiveLog`] as they
/// come (the first at once, then at most every 250 ms); the lines not handed on
/// are the caller's at the end.
#[derive(Clone, Default)]
pub struct Lines(Arc<Mutex<LinesState>>);

#[derive(Default)]
struct LinesState {
    lines: Vec<String>,
    handed: usize,
    last: Option<std::time::Instant>,
    live: Option<(LiveLog, Vec<String>)>,
}

impl Lines {
    /// A logger whose lines also go to `live`, each redacted of `secrets`.
    pub fn live(live: LiveLog, secrets: Vec<String>) -> Self {
        Lines(Arc::new(Mutex::new(LinesState {
            live: Some((live, secrets)),
            ..LinesState::default()
        })))
    }

    /// The lines not yet handed to the live log (all of them without one).
    pub fn rest(&self) -> Vec<String> {
        let state = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.lines[state.handed..].to_vec()
    }
}

impl Logger for Lines {
    fn log(&mut self, line: RStr<'_>) {
        let mut state = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.lines.push(line.to_string());
        let due = state.last.is_none_or(|t| t.elapsed() >= LIVE_LOG_EVERY);
        if due && let Some((live, secrets)) = &state.live {
            let new: Vec<String> = state.lines[state.handed..]
                .iter()
                .map(|l| redact(l, secrets))
                .collect();
            if live(&new) {
                state.handed = state.lines.len();
            }
            state.last = Some(std::time::Instant::now());
        }
    }
}

/// What running an action gave.
#[derive(Debug)]
pub struct Ran {
    /// Rows read, written, updated; `Err` with the message when it failed.
    pub outcome: Result<RunOutcome, String>,
    /// The log lines of the plugin (with a live log, those it was not handed).
    pub log: Vec<String>,
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
    pub unmarked: &'a dyn Fn(&[i64]) -> Result<(), String>,
    /// Where the action's log lines go while it runs; those not handed there come back in
    /// [`Ran::log`].
    pub live_log: Option<LiveLog>,
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
    // Secrets from the key file never reach a log or an error.
    let secrets = keys.secrets();
    let lines = match marking.and_then(|m| m.live_log.clone()) {
        Some(live) => Lines::live(live, secrets.clone()),
        None => Lines::default(),
    };
    let outcome = run_inner(registry, keys, plan, variables, marking, &lines);
    let log = lines.rest();
    let log = log.iter().map(|l| redact(l, &secrets)).collect();
    let outcome = outcome.map_err(|e| redact(&e, &secrets));
    Ran { outcome, log }
}

fn run_inner(
    registry: &Registry,
    keys: &KeyFile,
    plan: &ActionPlan,
    variables: &[(String, String)],
    marking: Option<&Marking<'_>>,
    lines: &Lines,
) -> Result<RunOutcome, String> {
    let module = registry
        .module(&plan.module)
        .ok_or_else(|| format!("action {}: module `{}` is not loaded", plan.id, plan.module))?;
    let text = match &plan.text {
        Some(t) => substitute(t, variables)
            .map_err(|name| format!("action {}: variable `{name}` is not set", plan.id))?,
        None => String::new(),
    };
    // The statement as run, first in the action's log.
    let mut logger = lines.clone();
    Logger::log(
        &mut logger,
        format!(
            "{} action {} `{}`: {}",
            plan.module,
            plan.id,
            plan.name,
            text.trim()
        )
        .as_str()
        .into(),
    );
    let mut ids: Vec<i64> = plan
        .sources
        .iter()
        .chain(&plan.targets)
        .map(|(o, _)| o.connection_id)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut connections = RVec::new();
    for id in &ids {
        let entry = keys.get(&id.to_string()).ok_or_else(|| {
            format!(
                "action {}: the key file has no entry for connection {id}",
                plan.id
            )
        })?;
        let connection =
            connect::open(entry, registry).map_err(|e| format!("action {}: {e}", plan.id))?;
        connections.push(ConnectionSlot {
            id: *id,
            connection,
        });
    }
    // One transaction on each connection the action writes: its targets', or, for an action
    // without targets (a Sql action on its source's connection), the connection it runs on.
    let target_ids = written_connections(plan);
    let mut ctx = RunContext {
        action_id: plan.id,
        action_name: plan.name.as_str().into(),
        action: text.into(),
        attributes: plan.sdk_attributes(registry.module(&plan.module).map(|m| &m.info)),
        sources: plan.source_refs(),
        targets: plan.target_refs(),
        connections,
        variables: variables
            .iter()
            .map(|(k, v)| Tuple2(RString::from(k.as_str()), RString::from(v.as_str())))
            .collect(),
        log: Logger_TO::from_value(lines.clone(), TD_Opaque),
    };
    // The connections whose transaction carries the run's commit marker.
    let mut marked: Vec<i64> = Vec::new();
    if let Some(marking) = marking {
        let run = marking.run;
        for id in &target_ids {
            let allowed = keys.get(&id.to_string()).is_some_and(marker::enabled);
            let prepared = if allowed {
                // Twice: two actions creating the table at once may make one of them fail.
                let mut tried = ctx
                    .connection(*id)
                    .map_err(|e| e.to_string())
                    .and_then(marker::prepare);
                if tried.is_err() {
                    tried = ctx
                        .connection(*id)
                        .map_err(|e| e.to_string())
                        .and_then(marker::prepare);
                }
                tried
            } else {
                Err(format!("the key file entry sets {}=off", marker::OPTION))
            };
            match prepared {
                Ok(()) => marked.push(*id),
                Err(e) => Logger::log(
                    &mut logger,
                    format!(
                        "connection {id}: no commit marker ({e}); if the server stops between this action's commit and its record, a restart runs it again (at-least-once; run {})",
                        run.token()
                    )
                    .as_str()
                    .into(),
                ),
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
    }
    for id in &target_ids {
        ctx.connection(*id)
            .and_then(|c| c.begin().into_result())
            .map_err(|e| format!("action {}: {e}", plan.id))?;
    }
    let mut result = module.module.run(&mut ctx).into_result();
    if let (Ok(_), Some(marking)) = (&result, marking) {
        for id in &marked {
            let written = ctx
                .connection(*id)
                .map_err(|e| e.to_string())
                .and_then(|c| marker::write(c, marking.run));
            if let Err(e) = written {
                result = Err(weft_sdk::PluginError::new(format!(
                    "connection {id}: the commit marker could not be written: {e}"
                )));
                break;
            }
        }
    }
    if result.is_ok() {
        crate::fault::hit(crate::fault::BEFORE_TARGET_COMMIT);
    }
    for id in &target_ids {
        let Ok(c) = ctx.connection(*id) else { continue };
        let end = if result.is_ok() {
            c.commit()
        } else {
            c.rollback()
        };
        if let (Ok(_), Err(e)) = (&result, end.into_result()) {
            return Err(format!("action {}: commit failed: {e}", plan.id));
        }
        if result.is_ok() {
            crate::fault::hit(crate::fault::AFTER_TARGET_COMMIT);
        }
    }
    result.map_err(|e| format!("action {} ({}): {e}", plan.id, plan.module))
}

/// The connections an action writes, each in one transaction: its targets', or, for an
/// action without targets (a Sql action on its source's connection), the one it runs on.
pub fn written_connections(plan: &ActionPlan) -> Vec<i64> {
    let mut ids: Vec<i64> = plan.targets.iter().map(|(o, _)| o.connection_id).collect();
    if ids.is_empty() {
        ids.extend(plan.sources.first().map(|(o, _)| o.connection_id));
    }
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Whether the run's commit markers are in every connection `plan` writes: `Ok(true)` when
/// all are, `Ok(false)` when none is, `Err` with what is known otherwise (some are, or a
/// connection could not be asked).
///
/// # Errors
///
/// A description of a partial commit, or of why it cannot be told.
pub fn committed(
    registry: &Registry,
    keys: &KeyFile,
    plan: &ActionPlan,
    run: &marker::Run,
) -> Result<bool, String> {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for id in written_connections(plan) {
        let entry = keys
            .get(&id.to_string())
            .ok_or_else(|| format!("the key file has no entry for connection {id}"))?;
        if !marker::enabled(entry) {
            return Err(format!(
                "connection {id} keeps no commit marker ({}=off)",
                marker::OPTION
            ));
        }
        let mut conn = connect::open(entry, registry).map_err(|e| {
            format!("connection {id} cannot be opened to look for the commit marker: {e}")
        })?;
        match marker::committed(&mut conn, run) {
            Ok(true) => found.push(id),
            Ok(false) => missing.push(id),
            Err(e) => {
                return Err(format!(
                    "connection {id}: the commit marker cannot be read: {e}"
                ));
            }
        }
    }
    match (found.is_empty(), missing.is_empty()) {
        (_, true) => Ok(true),
        (true, false) => Ok(false),
        (false, false) => Err(format!(
            "committed on connection(s) {found:?} but not on {missing:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_variables_and_escapes() {
        let vars = vec![
            ("since".to_owned(), "2026-01-01".to_owned()),
            ("n".to_owned(), "5".to_owned()),
        ];
        assert_eq!(
            substitute(
                "a >= '${since}' AND b > ${n} AND c = '$${since}' AND $x",
                &vars
            ),
            Ok("a >= '2026-01-01' AND b > 5 AND c = '${since}' AND $x".to_owned())
        );
        assert_eq!(
            substitute("x = ${missing}", &vars),
            Err("missing".to_owned())
        );
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
