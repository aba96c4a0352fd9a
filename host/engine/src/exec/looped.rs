//! The loop the host runs an action in when it has the attribute `loopQuery` (any SQL
//! module: docs/modules/loop-query.md). The query runs first, inside the action's
//! transaction, on the connection the action runs on; then the module runs once per row,
//! its action text substituted again with the row's columns as variables (`${column}`) and
//! `${iteration}` (from 1). Each iteration runs in a savepoint on every connection the action
//! writes: a failing one is undone alone, and then fails the action (whose transaction is
//! rolled back) or, with `loopContinueOnError`, is logged and passed over. Each iteration's
//! start, counts and error go to the action's log; the counts add up in its result.

use weft_core::plan::{ActionPlan, Attr};
use weft_sdk::{Datum, PluginError, PluginResult, RunContext, RunOutcome, Value};

/// The attribute that asks for the loop (the SQL modules declare it with the others of the
/// loop: `weft_sql_support::sql_attributes`).
pub const LOOP_QUERY: &str = "loopQuery";

/// The most iterations one action runs: a loop query that returns more fails the action.
pub const MAX_ITERATIONS: usize = 100_000;

/// The loop an action asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loop {
    /// The query whose rows the action runs for.
    pub query: String,
    /// Fail when it returns no row.
    pub error_if_empty: bool,
    /// Go on after a failing iteration.
    pub continue_on_error: bool,
}

impl Loop {
    /// The loop `plan` asks for with a non-empty `loopQuery`, if any.
    pub fn of(plan: &ActionPlan) -> Option<Loop> {
        let query = plan
            .attribute(LOOP_QUERY)
            .and_then(Attr::as_str)
            .map(str::trim)
            .filter(|q| !q.is_empty())?;
        let flag = |name: &str| {
            plan.attribute(name)
                .and_then(Attr::as_bool)
                .unwrap_or(false)
        };
        Some(Loop {
            query: query.trim_end_matches(';').to_owned(),
            error_if_empty: flag("errorIfLoopEmpty"),
            continue_on_error: flag("loopContinueOnError"),
        })
    }
}

/// A value of a loop row as the text a variable holds: NULL is empty, bytes are hex.
fn as_text(v: &Value) -> String {
    match v.get() {
        Datum::Null => String::new(),
        Datum::Bool(b) => b.to_string(),
        Datum::Int(i) => i.to_string(),
        Datum::Float(f) => f.to_string(),
        Datum::Bytes(b) => b.iter().map(|c| format!("{c:02x}")).collect(),
        Datum::Text(t)
        | Datum::Decimal(t)
        | Datum::Date(t)
        | Datum::Time(t)
        | Datum::Timestamp(t)
        | Datum::TimestampTz(t) => t.to_owned(),
        other => format!("{other:?}"),
    }
}

/// What a run of the module is: the host's call into the plugin.
pub type RunModule<'a> = dyn FnMut(&mut RunContext) -> PluginResult<RunOutcome> + 'a;

/// Runs `run` once per row of `lp`'s query on connection `on`, each time with `template`
/// substituted with `variables` and the row's; `written` are the connections whose
/// savepoint frames each iteration. `log` takes the loop's lines.
///
/// # Errors
///
/// The loop query's, a variable that is not set, an empty loop with `errorIfLoopEmpty`,
/// too many rows, or the first failing iteration's (without `loopContinueOnError`).
#[allow(clippy::too_many_arguments)]
pub fn run(
    lp: &Loop,
    run: &mut RunModule<'_>,
    ctx: &mut RunContext,
    template: &str,
    variables: &[(String, String)],
    on: i64,
    written: &[i64],
    log: &dyn Fn(&str),
) -> PluginResult<RunOutcome> {
    let query = super::variables::substitute(&lp.query, variables)
        .map_err(|unset| PluginError::new(format!("loopQuery: {unset}")))?;
    // Read as a stream, stopping at one row past the bound.
    let mut columns: Vec<String> = Vec::new();
    let mut rows: Vec<Vec<Value>> = Vec::new();
    ctx.connection(on)?
        .query(
            &query,
            &[],
            1000,
            |names| {
                columns = names.to_vec();
                Ok(())
            },
            |batch| {
                for row in batch {
                    if rows.len() == MAX_ITERATIONS {
                        return Err(PluginError::new(format!(
                            "loopQuery returned more than {MAX_ITERATIONS} rows; a loop runs at most {MAX_ITERATIONS} iterations"
                        )));
                    }
                    rows.push(row.iter().cloned().collect());
                }
                Ok(())
            },
        )
        .map_err(|e| PluginError::new(format!("loopQuery failed: {}", e.message())))?;
    log(&format!(
        "loopQuery returned {} row(s) (columns {}): the action runs once for each.",
        rows.len(),
        columns.join(", ")
    ));
    if rows.is_empty() {
        if lp.error_if_empty {
            return Err(PluginError::new(
                "loopQuery returned no row (errorIfLoopEmpty is true)",
            ));
        }
        return Ok(RunOutcome::default());
    }
    let mut total = RunOutcome::default();
    let mut failed = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        ctx.stop_if_halted()?;
        let n = i + 1;
        let mut vars = variables.to_vec();
        let named: Vec<(String, String)> = columns
            .iter()
            .zip(row.iter())
            .map(|(c, v)| (c.clone(), as_text(v)))
            .collect();
        vars.extend(named.iter().cloned());
        vars.push(("iteration".to_owned(), n.to_string()));
        let shown = named
            .iter()
            .map(|(c, v)| format!("{c}={v}"))
            .collect::<Vec<_>>()
            .join(", ");
        let text = super::variables::substitute(template, &vars)
            .map_err(|unset| PluginError::new(format!("iteration {n} ({shown}): {unset}")))?;
        log(&format!("iteration {n} ({shown}): {}", text.trim()));
        ctx.next_iteration(text, vars);
        // A savepoint on each written connection; those opened are undone on any error.
        let mut opened = Vec::with_capacity(written.len());
        let mut framed = Ok(());
        for id in written {
            match ctx.connection(*id).and_then(|c| c.begin()) {
                Ok(()) => opened.push(*id),
                Err(e) => {
                    framed = Err(e);
                    break;
                }
            }
        }
        let result = framed.and_then(|()| run(ctx)).and_then(|o| {
            let mut released = Vec::with_capacity(opened.len());
            for id in &opened {
                if let Err(e) = ctx.connection(*id).and_then(|c| c.commit()) {
                    // Those not released yet (this one too) are rolled back below.
                    opened.retain(|o| !released.contains(o));
                    return Err(e);
                }
                released.push(*id);
            }
            opened.clear();
            Ok(o)
        });
        match result {
            Ok(o) => {
                log(&format!(
                    "iteration {n}: {} read, {} written, {} updated, {} deleted",
                    o.rows_read, o.rows_written, o.rows_updated, o.rows_deleted
                ));
                total.rows_read += o.rows_read;
                total.rows_written += o.rows_written;
                total.rows_updated += o.rows_updated;
                total.rows_deleted += o.rows_deleted;
            }
            Err(e) => {
                for id in &opened {
                    // The savepoint's rollback; the action's own transaction stays.
                    let _ = ctx.connection(*id).and_then(|c| c.rollback());
                }
                log(&format!("iteration {n} failed: {}", e.message()));
                if !lp.continue_on_error || ctx.halted() {
                    return Err(PluginError::of(
                        e.kind(),
                        format!("iteration {n} ({shown}): {}", e.message()),
                    ));
                }
                failed.push(n);
            }
        }
    }
    log(&format!(
        "loop: {} iteration(s), {} failed{}",
        rows.len(),
        failed.len(),
        if failed.is_empty() {
            String::new()
        } else {
            format!(
                " ({}; loopContinueOnError, their work undone)",
                failed
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    ));
    Ok(total)
}
