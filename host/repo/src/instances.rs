//! Batch instances and their actions in the repository (both backends): created when a run starts
//! (with the plan of every action, so that a deploy during the run changes nothing of it),
//! updated as states change, read by the monitoring commands, and repaired after a crash.

use crate::error::{Error, Result, now_utc};
use crate::model::{
    ActionRow, ActionState, InstanceFilter, InstanceRow, InstanceState, InstanceSummary,
    LATE_AFTER_SECONDS, NewInstance, SheetPlans,
};
use crate::sql::{Param, Row, Session, ToParam as _, args, insert_rows};

/// `YYYY-MM-DD HH:MM:SS` (UTC) to ISO 8601 with a `Z`.
pub fn iso(t: &str) -> String {
    format!("{}Z", t.replacen(' ', "T", 1))
}

/// What the repository stores as JSON text: elements, variables, plans, dependencies.
fn json(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::Corrupt(e.to_string()))
}

/// Creates an instance with its actions (state `D` for those that wait, `W` for the others);
/// `waiting` until a host claims one of them, or `finished` at once when it has none.
///
/// # Errors
///
/// A repository error.
pub fn create(conn: &dyn Session, new: &NewInstance, batch_id: Option<i64>) -> Result<i64> {
    // The batch's default retry, for the actions that say nothing of their own.
    let default: weft_core::plan::RetryPlan = match batch_id {
        Some(b) => {
            match conn.value::<String>("SELECT retry FROM batches WHERE id = ?1", args![b])? {
                Some(text) => serde_json::from_str(&text)
                    .map_err(|e| Error::Corrupt(format!("the retry of batch {b}: {e}")))?,
                None => weft_core::plan::RetryPlan::default(),
            }
        }
        None => weft_core::plan::RetryPlan::default(),
    };
    let now = now_utc();
    let elements = json(&new.elements)?;
    let variables = json(&new.variables)?;
    let (state, ended) = if new.actions.is_empty() {
        (InstanceState::Finished, Some(now.as_str()))
    } else if new.actions.iter().all(|a| a.held) {
        // Nothing to run until a restart: it ends halted at once.
        (InstanceState::Halted, Some(now.as_str()))
    } else {
        (InstanceState::Waiting, None)
    };
    let id: i64 = conn
        .value(
            "INSERT INTO batch_instances (batch_name, user_name, state, started_at, elements, variables, ended_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
            args![new.batch_name, new.user, state.word(), now, elements, variables, ended],
        )?
        .ok_or_else(|| Error::Corrupt("a new batch instance got no id".to_owned()))?;
    // Every action and every dependency in a few multi-row statements (sql::insert_rows):
    // a run of 10,000 actions is stored in about 80 statements, not 20,000.
    let mut texts: Vec<(String, usize)> = Vec::with_capacity(new.actions.len());
    let mut all_deps: Vec<(i64, i64)> = Vec::new();
    // The version of each sheet's plans the instance runs (one per sheet).
    let mut versions: std::collections::BTreeMap<i64, i64> = std::collections::BTreeMap::new();
    for a in &new.actions {
        let mut depends_on = a.depends_on.clone();
        depends_on.sort_unstable();
        depends_on.dedup();
        all_deps.extend(depends_on.iter().map(|d| (a.action_id, *d)));
        texts.push((json(&depends_on)?, depends_on.len()));
        if *versions.entry(a.sheet_id).or_insert(a.plan_version) != a.plan_version {
            return Err(Error::Corrupt(format!(
                "a new batch instance names two versions of sheet {}'s plans",
                a.sheet_id
            )));
        }
    }
    let retry_ons: Vec<String> = new
        .actions
        .iter()
        .map(|a| {
            a.retry
                .on
                .clone()
                .or_else(|| default.on.clone())
                .unwrap_or_else(|| "connection".to_owned())
        })
        .collect();
    let mut rows = Vec::with_capacity(new.actions.len() * 13);
    for ((a, (deps, waits)), retry_on) in new.actions.iter().zip(&texts).zip(&retry_ons) {
        let state = if a.held {
            ActionState::Halted
        } else if *waits == 0 {
            ActionState::Waiting
        } else {
            ActionState::Defined
        };
        rows.extend([
            Param::Int(id),
            Param::Int(a.action_id),
            Param::Int(a.sheet_id),
            a.name.to_param(),
            a.module.to_param(),
            deps.to_param(),
            state.code().to_param(),
            Param::Int(*waits as i64),
            if a.held {
                crate::model::HELD.to_param()
            } else {
                Param::Null
            },
            Param::Int(a.priority),
            Param::Int(a.retry.retries.or(default.retries).unwrap_or(0)),
            Param::Int(
                a.retry
                    .delay_seconds
                    .or(default.delay_seconds)
                    .unwrap_or(DEFAULT_RETRY_DELAY),
            ),
            retry_on.to_param(),
        ]);
    }
    insert_rows(
        conn,
        "INSERT INTO instance_actions (instance_id, action_id, sheet_id, name, module, depends_on, state, waits_for, error, priority, retries, retry_delay_seconds, retry_on)",
        13,
        rows,
    )?;
    let mut rows = Vec::with_capacity(all_deps.len() * 3);
    for (action, dep) in &all_deps {
        rows.extend([Param::Int(id), Param::Int(*action), Param::Int(*dep)]);
    }
    insert_rows(
        conn,
        "INSERT INTO instance_action_deps (instance_id, action_id, depends_on)",
        3,
        rows,
    )?;
    let rows = versions
        .iter()
        .flat_map(|(sheet, version)| [Param::Int(*sheet), Param::Int(id), Param::Int(*version)])
        .collect();
    insert_rows(
        conn,
        "INSERT INTO instance_sheets (sheet_id, instance_id, version)",
        3,
        rows,
    )?;
    // The plans it runs are still kept: a deploy since they were read keeps only the
    // plans some instance runs (the caller reads them again and starts once more).
    let gone: Option<i64> = conn.value(
        "SELECT i.sheet_id FROM instance_sheets i WHERE i.instance_id = ?1 AND NOT EXISTS (
             SELECT 1 FROM sheet_plans p WHERE p.sheet_id = i.sheet_id AND p.version = i.version)
         LIMIT 1",
        args![id],
    )?;
    if let Some(sheet) = gone {
        return Err(Error::Redeployed(sheet));
    }
    Ok(id)
}

/// A number that changes whenever anything a page shows of instance `instance` does (its
/// state, end and halt; each action's state, attempt, times, host, row counts and the
/// lengths of its log and error), read without the logs, plans and errors themselves, with
/// the instance's state; `None` when there is no such instance. Stable within one build of
/// weft.
///
/// # Errors
///
/// A repository error.
pub fn fingerprint(conn: &dyn Session, instance: i64) -> Result<Option<(InstanceState, u64)>> {
    use std::hash::{Hash as _, Hasher as _};
    let head: Option<(String, Vec<crate::sql::Value>)> = conn.row(
        "SELECT state, ended_at, halt_requested FROM batch_instances WHERE id = ?1",
        args![instance],
        |r| Ok((r.get(0)?, r.0.clone())),
    )?;
    let Some((state, head)) = head else {
        return Ok(None);
    };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    head.hash(&mut h);
    conn.query(
        "SELECT action_id, state, attempt, started_at, ended_at, host, rows_read, rows_written, rows_updated, rows_deleted, length(log), length(error)
         FROM instance_actions WHERE instance_id = ?1 ORDER BY action_id",
        args![instance],
        &mut |r| {
            r.0.hash(&mut h);
            Ok(())
        },
    )?;
    Ok(Some((instance_state(&state)?, h.finish())))
}

/// The state of an instance, if it exists (cheap, for waiting).
///
/// # Errors
///
/// A repository error.
pub fn state_of(conn: &dyn Session, instance: i64) -> Result<Option<InstanceState>> {
    let word: Option<String> = conn.value(
        "SELECT state FROM batch_instances WHERE id = ?1",
        args![instance],
    )?;
    word.map(|w| instance_state(&w)).transpose()
}

fn instance_state(word: &str) -> Result<InstanceState> {
    InstanceState::from_word(word)
        .ok_or_else(|| Error::Corrupt(format!("`{word}` is not a batch instance state")))
}

fn action_state(code: &str) -> Result<ActionState> {
    ActionState::from_code(code)
        .ok_or_else(|| Error::Corrupt(format!("`{code}` is not an action state")))
}

/// Why `new` may not be stored now ([`Exclusion`](crate::model::Exclusion)): a running or
/// waiting run that shares an action with it and excludes it; `None` when nothing does.
///
/// # Errors
///
/// A repository error.
pub fn excluded(conn: &dyn Session, new: &NewInstance) -> Result<Option<String>> {
    use crate::model::Exclusion;
    let others = match new.exclusion {
        Exclusion::None => return Ok(None),
        // Runs of batches that exclude manual runs: most of the time there are none.
        Exclusion::Manual => "i.batch_id IN (SELECT id FROM batches WHERE manual_runs = 'exclude')",
        Exclusion::Batch => "i.batch_id IS NULL",
    };
    let going: Option<i64> = conn.value(
        &format!(
            "SELECT 1 FROM batch_instances i WHERE i.state IN ('running', 'waiting') AND {others} LIMIT 1"
        ),
        args![],
    )?;
    if going.is_none() {
        return Ok(None);
    }
    let ids: Vec<i64> = new.actions.iter().map(|a| a.action_id).collect();
    for chunk in ids.chunks(500) {
        let list = chunk
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let hit: Option<(i64, String, i64)> = conn.row(
            &format!(
                "SELECT i.id, i.batch_name, a.action_id FROM instance_actions a
                   JOIN batch_instances i ON i.id = a.instance_id
                  WHERE i.state IN ('running', 'waiting') AND {others}
                    AND a.action_id IN ({list})
                  ORDER BY i.id, a.action_id LIMIT 1"
            ),
            args![],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        if let Some((id, name, action)) = hit {
            return Ok(Some(match new.exclusion {
                Exclusion::Manual => format!(
                    "batch instance {id} ({name}) runs action {action}, and its batch excludes manual runs of its actions while it runs (manualRuns: exclude); try again when it has ended"
                ),
                _ => format!(
                    "manual run {id} ({name}) runs action {action} of this batch, which excludes manual runs (manualRuns: exclude)"
                ),
            }));
        }
    }
    Ok(None)
}

/// Whether an instance of batch `batch_id` is running or waiting.
///
/// # Errors
///
/// A repository error.
pub fn batch_is_running(conn: &dyn Session, batch_id: i64) -> Result<bool> {
    Ok(conn
        .value::<i64>(
            "SELECT 1 FROM batch_instances WHERE batch_id = ?1 AND state IN (?2, ?3) LIMIT 1",
            args![
                batch_id,
                InstanceState::Running.word(),
                InstanceState::Waiting.word()
            ],
        )?
        .is_some())
}

/// Reads an instance with its actions.
///
/// # Errors
///
/// A repository error.
pub fn get(conn: &dyn Session, instance: i64) -> Result<Option<InstanceRow>> {
    let sql = format!(
        "SELECT {SUMMARY}, elements, halt_requested, variables FROM batch_instances WHERE id = ?1"
    );
    let row = conn.row(&sql, args![instance], |r| {
        Ok((
            summary(r)?,
            r.get::<String>(10)?,
            r.get::<i64>(11)?,
            r.get::<String>(12)?,
        ))
    })?;
    let Some(((word, summary), elements, halt_requested, variables)) = row else {
        return Ok(None);
    };
    let mut row = InstanceRow {
        summary: with_state(summary, &word)?,
        elements: serde_json::from_str(&elements).map_err(|e| {
            Error::Corrupt(format!("the elements of batch instance {instance}: {e}"))
        })?,
        actions: Vec::new(),
        halt_requested: halt_requested != 0,
        variables: serde_json::from_str(&variables).map_err(|e| {
            Error::Corrupt(format!("the variables of batch instance {instance}: {e}"))
        })?,
    };
    let actions = conn.rows(
        "SELECT action_id, sheet_id, name, module, state, started_at, ended_at, rows_read, rows_written, rows_updated, error, log, depends_on, attempt, unmarked, rows_deleted, host, deploy_id, ready_at, retried + free_retried
         FROM instance_actions WHERE instance_id = ?1 ORDER BY action_id",
        args![instance],
        |r| {
            Ok((
                r.get::<String>(4)?,
                ActionRow {
                    action_id: r.get(0)?,
                    sheet_id: r.get(1)?,
                    name: r.get(2)?,
                    module: r.get(3)?,
                    state: ActionState::Defined,
                    start: r.get::<Option<String>>(5)?.map(|t| iso(&t)),
                    end: r.get::<Option<String>>(6)?.map(|t| iso(&t)),
                    rows_read: r.get(7)?,
                    rows_written: r.get(8)?,
                    rows_updated: r.get(9)?,
                    rows_deleted: r.get(15)?,
                    error: r.get(10)?,
                    log: r.get::<String>(11)?.lines().map(str::to_owned).collect(),
                    depends_on: serde_json::from_str(&r.get::<String>(12)?).unwrap_or_default(),
                    attempt: r.get(13)?,
                    host: r.get(16)?,
                    deploy_id: r.get(17)?,
                    waiting_for: None,
                    retry_at: r.get::<Option<String>>(18)?.map(|t| iso(&t)),
                    tries: Vec::with_capacity(r.get::<i64>(19)?.clamp(0, 64) as usize),
                    unmarked: r
                        .get::<Option<String>>(14)?
                        .and_then(|t| serde_json::from_str(&t).ok())
                        .unwrap_or_default(),
                },
            ))
        },
    )?;
    row.actions = actions
        .into_iter()
        .map(|(code, mut a)| {
            a.state = action_state(&code)?;
            Ok(a)
        })
        .collect::<Result<_>>()?;
    // The failed tries of the actions that were tried again.
    if row.actions.iter().any(|a| a.tries.capacity() > 0) {
        let tries = conn.rows(
            "SELECT action_id, attempt, host, started_at, ended_at, error, counted, retry_at
               FROM action_attempts WHERE instance_id = ?1 ORDER BY action_id, attempt",
            args![instance],
            |r| {
                Ok((
                    r.get::<i64>(0)?,
                    weft_protocol::instances::Try {
                        attempt: r.get(1)?,
                        host: r.get(2)?,
                        start: r.get::<Option<String>>(3)?.map(|t| iso(&t)),
                        end: iso(&r.get::<String>(4)?),
                        error: r.get(5)?,
                        counted: r.get::<i64>(6)? != 0,
                        retry_at: iso(&r.get::<String>(7)?),
                    },
                ))
            },
        )?;
        for (action, t) in tries {
            if let Some(a) = row.actions.iter_mut().find(|a| a.action_id == action) {
                a.tries.push(t);
            }
        }
    }
    // Ready actions that wait for an object another run writes now, with what holds it.
    if row.actions.iter().any(|a| a.state == ActionState::Waiting) {
        for (action, waiting) in waits_for_objects(conn, instance)? {
            if let Some(a) = row.actions.iter_mut().find(|a| a.action_id == action) {
                a.waiting_for.get_or_insert(waiting);
            }
        }
    }
    // A claim marks its instance running in a transaction of its own, just after: an action
    // that began means a running instance, whatever the instance's word still says.
    if row.summary.state == InstanceState::Waiting
        && row
            .actions
            .iter()
            .any(|a| !matches!(a.state, ActionState::Waiting | ActionState::Defined))
    {
        row.summary.state = InstanceState::Running;
    }
    Ok(Some(row))
}

/// The ready actions of `instance` that a running action of another instance keeps waiting
/// (it writes an object they write; `work::claim` passes them by), with the object and that
/// action.
fn waits_for_objects(
    conn: &dyn Session,
    instance: i64,
) -> Result<Vec<(i64, weft_protocol::instances::WaitingFor)>> {
    conn.rows(
        "WITH busy AS MATERIALIZED (
             SELECT fb.connection_id, fb.schema_name, fb.object_name, b.instance_id, b.action_id
             FROM instance_actions b
             JOIN data_flow fb ON fb.action_id = b.action_id AND fb.writes = 1
             WHERE b.state = 'R' AND b.instance_id <> ?1)
         SELECT w.action_id, busy.connection_id, busy.schema_name, busy.object_name,
                busy.instance_id, busy.action_id
         FROM instance_actions w
         JOIN data_flow fa ON fa.action_id = w.action_id AND fa.writes = 1
         JOIN busy ON busy.connection_id = fa.connection_id AND busy.schema_name = fa.schema_name
             AND busy.object_name = fa.object_name
         WHERE w.instance_id = ?1 AND w.state = 'W'
         ORDER BY w.action_id, busy.instance_id, busy.action_id",
        args![instance],
        |r| {
            Ok((
                r.get(0)?,
                weft_protocol::instances::WaitingFor {
                    connection_id: r.get(1)?,
                    schema: r.get(2)?,
                    object: r.get(3)?,
                    batch_instance_id: r.get(4)?,
                    action_id: r.get(5)?,
                },
            ))
        },
    )
}

/// The columns of [`summary`].
const SUMMARY: &str = "id, batch_name, user_name, state, started_at, ended_at, batch_id, planned_start, late_seconds, backfill_id";

/// An instance's summary from the columns [`SUMMARY`] (first in the row), with its stored
/// state word, which [`with_state`] reads.
fn summary(r: &Row) -> Result<(String, InstanceSummary)> {
    let batch_id: Option<i64> = r.get(6)?;
    // Scheduled runs say which planned start, and whether late.
    let late_seconds = batch_id
        .map(|_| r.get::<Option<i64>>(8).map(Option::unwrap_or_default))
        .transpose()?;
    let planned: Option<String> = r.get(7)?;
    let started: String = r.get(4)?;
    let backfill_id: Option<i64> = r.get(9)?;
    Ok((
        r.get(3)?,
        InstanceSummary {
            batch_instance_id: r.get(0)?,
            batch_name: r.get(1)?,
            user: r.get(2)?,
            state: InstanceState::Running,
            start: iso(&started),
            end: r.get::<Option<String>>(5)?.map(|t| iso(&t)),
            batch_id,
            // A backfill's runs start long after their planned day: their lateness does not
            // tell the occurrence.
            planned_second: match (batch_id, &planned, late_seconds, backfill_id) {
                (Some(_), Some(p), Some(late), None) => second_occurrence(p, &started, late),
                _ => false,
            },
            planned_start: batch_id.and(planned),
            late_seconds,
            late: late_seconds.map(|s| s > LATE_AFTER_SECONDS),
            running_on: Vec::new(),
            backfill_id,
        },
    ))
}

/// Whether planned start `planned` (wall-clock text in the service time zone) was the second
/// occurrence of a time the autumn clock change repeats, told from when the run started
/// (stored time `started`) and how many seconds late it was: the planned instant is the
/// occurrence nearer to its start less its lateness.
fn second_occurrence(planned: &str, started: &str, late: i64) -> bool {
    use chrono::TimeZone as _;
    let Some(wall) = weft_core::sched::clock::parse_wall(planned) else {
        return false;
    };
    let zone = weft_core::sched::clock::current().zone;
    let chrono::LocalResult::Ambiguous(first, second) = zone.from_local_datetime(&wall) else {
        return false;
    };
    let Some(start) = crate::error::parse_stored_time(started) else {
        return false;
    };
    let at = start - chrono::Duration::seconds(late);
    let off = |t: chrono::DateTime<chrono::Utc>| (at - t).num_seconds().abs();
    off(second.with_timezone(&chrono::Utc)) < off(first.with_timezone(&chrono::Utc))
}

fn with_state(mut summary: InstanceSummary, word: &str) -> Result<InstanceSummary> {
    summary.state = instance_state(word)?;
    Ok(summary)
}

/// The most recent instances, newest first.
///
/// # Errors
///
/// A repository error.
/// How many instances are in each state (by state word), and how many actions of unfinished
/// instances wait for what they depend on (`D`), are ready (`W`) and run (`R`): what
/// `/metrics` shows of the repository. Both read indexes only.
pub fn counts(conn: &dyn Session) -> Result<crate::model::StateCounts> {
    let instances = conn.rows(
        "SELECT state, count(*) FROM batch_instances GROUP BY state ORDER BY state",
        args![],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let actions = conn.rows(
        "SELECT state, count(*) FROM instance_actions WHERE state IN ('D', 'W', 'R') GROUP BY state ORDER BY state",
        args![],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let last_success = conn.rows(
        &format!(
            "SELECT batch_name, MAX(ended_at) FROM batch_instances
              WHERE state = 'finished' AND batch_id IS NOT NULL AND ended_at IS NOT NULL
              GROUP BY batch_name ORDER BY 2 DESC LIMIT {LAST_SUCCESS_SHOWN}"
        ),
        args![],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    // Unfinished instances are few (the state index finds them).
    let running_since = conn.rows(
        &format!(
            "SELECT batch_name, MIN(started_at) FROM batch_instances
              WHERE state IN ('waiting', 'running') AND batch_id IS NOT NULL
              GROUP BY batch_name ORDER BY 2 LIMIT {LAST_SUCCESS_SHOWN}"
        ),
        args![],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(crate::model::StateCounts {
        instances,
        actions,
        last_success,
        running_since,
    })
}

/// How many batches `/metrics` shows the last success of: the most recent.
pub const LAST_SUCCESS_SHOWN: i64 = 100;

/// The newest `limit` instances that ran (or run) actions of sheet `sheet`, newest first,
/// found through the sheets each instance ran (`instance_sheets`, schema version 13), so
/// that a sheet run long ago costs no more than one run lately.
pub fn of_sheet(conn: &dyn Session, sheet: i64, limit: i64) -> Result<Vec<InstanceSummary>> {
    // The limit written in (a number): bound, the bundled SQLite prepares the statement
    // again at every call.
    let sql = format!(
        "SELECT {SUMMARY} FROM batch_instances b
         WHERE b.id IN (SELECT s.instance_id FROM instance_sheets s WHERE s.sheet_id = ?1
                        ORDER BY s.instance_id DESC LIMIT {limit})
         ORDER BY b.id DESC"
    );
    conn.rows(&sql, args![sheet], summary)?
        .into_iter()
        .map(|(word, row)| with_state(row, &word))
        .collect()
}

/// A batch name's text as a LIKE pattern that finds it anywhere, in any case (LIKE's
/// wildcards in it escaped).
fn name_pattern(name: Option<&String>) -> Option<String> {
    name.map(|n| {
        let escaped = n
            .to_lowercase()
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        format!("%{escaped}%")
    })
}

/// The condition of `filter` on `batch_instances` (parameters ?1 to ?6, [`filter_args`]).
const FILTERED: &str = "(CAST(?1 AS TEXT) IS NULL OR state = ?1)
           AND (CAST(?2 AS TEXT) IS NULL OR lower(batch_name) LIKE ?2 ESCAPE '\\')
           AND (CAST(?3 AS BIGINT) IS NULL OR id < ?3)
           AND (CAST(?4 AS BIGINT) IS NULL OR batch_id = ?4)
           AND (CAST(?5 AS BIGINT) IS NULL OR backfill_id = ?5)
           AND (CAST(?6 AS TEXT) IS NULL OR started_at < ?6)";

/// The parameters of [`FILTERED`].
fn filter_args(filter: &InstanceFilter) -> Vec<Param<'static>> {
    args![
        filter.state.map(InstanceState::word),
        name_pattern(filter.name.as_ref()),
        filter.before,
        filter.batch_id,
        filter.backfill_id,
        filter.started_before
    ]
    .iter()
    .map(Param::to_owned_param)
    .collect()
}

/// How many instances `filter` matches in all (its limit and offset aside).
pub fn count(conn: &dyn Session, filter: &InstanceFilter) -> Result<i64> {
    let sql = format!("SELECT COUNT(*) FROM batch_instances WHERE {FILTERED}");
    Ok(conn
        .value::<i64>(&sql, &filter_args(filter))?
        .unwrap_or_default())
}

/// A row of [`run_days`]: batch, day, runs, failed, and the newest run's id, state, start and
/// end.
type DayRow = (i64, String, i64, i64, i64, String, String, Option<String>);

/// Each scheduled batch's runs on each schedule date from `from` to before `until` (days,
/// `YYYY-MM-DD`): the date of the planned start (wall-clock text in the service time zone),
/// how many ran and failed that day, and the newest of them; by batch id and day.
///
/// # Errors
///
/// A repository error.
pub fn run_days(
    conn: &dyn Session,
    from: &str,
    until: &str,
    batch_id: Option<i64>,
) -> Result<Vec<(i64, weft_protocol::commands::RunDay)>> {
    let rows: Vec<DayRow> = conn.rows(
        "SELECT g.batch_id, g.day, g.runs, g.failed, b.id, b.state, b.started_at, b.ended_at
         FROM (SELECT batch_id, substr(planned_start, 1, 10) AS day, COUNT(*) AS runs,
                      SUM(CASE WHEN state = 'failed' THEN 1 ELSE 0 END) AS failed,
                      MAX(id) AS last
               FROM batch_instances
               WHERE batch_id IS NOT NULL AND planned_start >= ?1 AND planned_start < ?2
                 AND (CAST(?3 AS BIGINT) IS NULL OR batch_id = ?3)
               GROUP BY batch_id, substr(planned_start, 1, 10)) g
         JOIN batch_instances b ON b.id = g.last
         ORDER BY g.batch_id, g.day",
        args![from, until, batch_id],
        |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
            ))
        },
    )?;
    let now = crate::error::parse_stored_time(&now_utc());
    rows.into_iter()
        .map(|(batch, day, runs, failed, id, state, start, end)| {
            let state = instance_state(&state)?;
            let began = crate::error::parse_stored_time(&start);
            let ended = match end {
                Some(e) => crate::error::parse_stored_time(&e),
                None if matches!(state, InstanceState::Running | InstanceState::Waiting) => now,
                None => None,
            };
            let seconds = began
                .zip(ended)
                .map(|(a, b)| (b - a).num_milliseconds().max(0) as f64 / 1000.0);
            Ok((
                batch,
                weft_protocol::commands::RunDay {
                    day,
                    runs,
                    failed,
                    batch_instance_id: id,
                    state,
                    seconds,
                },
            ))
        })
        .collect()
}

/// The runs `filter` leaves (its state and name), grouped by batch name: the group of the
/// newest run first, at most `filter.limit` groups.
///
/// # Errors
///
/// A repository error.
pub fn run_groups(
    conn: &dyn Session,
    filter: &InstanceFilter,
) -> Result<Vec<weft_protocol::commands::RunGroup>> {
    let sql = format!(
        "SELECT batch_name, COUNT(*),
                SUM(CASE WHEN state = 'failed' THEN 1 ELSE 0 END),
                SUM(CASE WHEN state IN ('waiting', 'running') THEN 1 ELSE 0 END),
                MAX(id)
         FROM batch_instances WHERE {FILTERED}
         GROUP BY batch_name ORDER BY MAX(id) DESC LIMIT {}",
        filter.limit
    );
    let groups: Vec<(String, i64, i64, i64, i64)> = conn.rows(&sql, &filter_args(filter), |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
    })?;
    if groups.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<String> = groups.iter().map(|g| g.4.to_string()).collect();
    let last: std::collections::HashMap<i64, InstanceSummary> = conn
        .rows(
            &format!(
                "SELECT {SUMMARY} FROM batch_instances WHERE id IN ({})",
                ids.join(", ")
            ),
            args![],
            summary,
        )?
        .into_iter()
        .map(|(word, row)| with_state(row, &word).map(|s| (s.batch_instance_id, s)))
        .collect::<Result<_>>()?;
    Ok(groups
        .into_iter()
        .filter_map(|(batch_name, runs, failed, ongoing, id)| {
            last.get(&id)
                .cloned()
                .map(|last| weft_protocol::commands::RunGroup {
                    batch_name,
                    runs,
                    failed,
                    ongoing,
                    last,
                })
        })
        .collect())
}

/// The instances `filter` asks for, newest first, at most its limit.
pub fn list(conn: &dyn Session, filter: &InstanceFilter) -> Result<Vec<InstanceSummary>> {
    let sql = format!(
        "SELECT {SUMMARY} FROM batch_instances WHERE {FILTERED}
         ORDER BY id DESC LIMIT {} OFFSET {}",
        filter.limit,
        filter.offset.max(0)
    );
    let rows = conn.rows(&sql, &filter_args(filter), summary)?;
    let mut list = rows
        .into_iter()
        .map(|(word, row)| with_state(row, &word))
        .collect::<Result<Vec<_>>>()?;
    // The hosts of the running ones' actions, in one more statement.
    let running: Vec<String> = list
        .iter()
        .filter(|s| s.state == InstanceState::Running)
        .map(|s| s.batch_instance_id.to_string())
        .collect();
    if !running.is_empty() {
        let hosts: Vec<(i64, String)> = conn.rows(
            &format!(
                "SELECT DISTINCT instance_id, host FROM instance_actions
                 WHERE state = 'R' AND host IS NOT NULL AND instance_id IN ({})
                 ORDER BY instance_id, host",
                running.join(", ")
            ),
            args![],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        for (id, host) in hosts {
            if let Some(s) = list.iter_mut().find(|s| s.batch_instance_id == id) {
                s.running_on.push(host);
            }
        }
    }
    Ok(list)
}

/// Records that the current attempt of an action writes `connections` without a commit
/// marker (before it begins), so that after a kill it is known that it may have committed.
///
/// # Errors
///
/// A repository error.
pub fn set_unmarked(
    conn: &dyn Session,
    instance: i64,
    action: i64,
    connections: &[i64],
) -> Result<()> {
    let list = serde_json::to_string(connections).map_err(|e| Error::Corrupt(e.to_string()))?;
    conn.execute(
        "UPDATE instance_actions SET unmarked = ?3 WHERE instance_id = ?1 AND action_id = ?2",
        args![instance, action, list],
    )?;
    Ok(())
}

/// Adds `lines` to the log of a running action; `false` when it is not running.
///
/// # Errors
///
/// A repository error.
pub fn append_log(
    conn: &dyn Session,
    instance: i64,
    action: i64,
    lines: &[String],
) -> Result<bool> {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let changed = conn.execute(
        "UPDATE instance_actions SET log = log || ?3 WHERE instance_id = ?1 AND action_id = ?2 AND state = 'R'",
        args![instance, action, text],
    )?;
    Ok(changed > 0)
}

/// The instances the repository calls running or waiting.
///
/// # Errors
///
/// A repository error.
pub fn unfinished(conn: &dyn Session) -> Result<Vec<i64>> {
    conn.rows(
        "SELECT id FROM batch_instances WHERE state IN ('running', 'waiting') ORDER BY id",
        args![],
        |r| r.get(0),
    )
}

/// The repository's random identity (schema version 5).
///
/// # Errors
///
/// A repository error.
pub fn repository_id(conn: &dyn Session) -> Result<String> {
    conn.value("SELECT id FROM repository_identity", args![])?
        .ok_or_else(|| Error::Corrupt("the repository has no identity".to_owned()))
}

/// What waits (`D`, `W`) in an instance is halted.
fn halt_waiting(conn: &dyn Session, instance: i64, now: &str) -> Result<()> {
    conn.execute(
        "UPDATE instance_actions SET state = 'H', ended_at = ?2 WHERE instance_id = ?1 AND state IN ('D', 'W')",
        args![instance, now],
    )?;
    Ok(())
}

/// Ends an instance: `finished` when every action finished, else `otherwise`.
fn end_as(conn: &dyn Session, instance: i64, now: &str, otherwise: &str) -> Result<()> {
    let state: Option<String> = conn.value(
        "UPDATE batch_instances SET ended_at = ?2, state = CASE WHEN EXISTS
             (SELECT 1 FROM instance_actions WHERE instance_id = ?1
                 AND state IN ('D', 'W', 'R', 'E', 'S', 'H'))
             THEN ?3 ELSE 'finished' END WHERE id = ?1 RETURNING state",
        args![instance, now, otherwise],
    )?;
    if let Some(state) = state {
        crate::notifications::record(
            conn,
            &crate::notifications::Event::Ended {
                instance,
                state: instance_state(&state)?,
            },
            now,
        )?;
    }
    Ok(())
}

/// The first pause before an action is tried again, when neither it nor its batch says.
pub const DEFAULT_RETRY_DELAY: i64 = 60;

/// After a crash: every instance still `running` or `waiting` becomes `interrupted` (or
/// `finished`, when every action of it finished), its running actions errors
/// ("interrupted by a server stop") and its waiting ones halted. Returns the ids.
///
/// # Errors
///
/// A repository error.
pub fn recover(conn: &dyn Session) -> Result<Vec<i64>> {
    let ids = unfinished(conn)?;
    let now = now_utc();
    for id in &ids {
        conn.execute(
            "UPDATE instance_actions SET state = 'E', ended_at = ?2, error = 'interrupted by a server stop' WHERE instance_id = ?1 AND state = 'R'",
            args![id, now],
        )?;
        halt_waiting(conn, *id, &now)?;
        end_as(conn, *id, &now, InstanceState::Interrupted.word())?;
    }
    Ok(ids)
}

/// The id of the sheet a node belongs to, and the node's type.
///
/// # Errors
///
/// A repository error.
pub fn node(conn: &dyn Session, id: i64) -> Result<Option<(i64, i64)>> {
    conn.row(
        "SELECT sheet_id, type FROM nodes WHERE id = ?1",
        args![id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// The default schema of each connection that names one.
///
/// # Errors
///
/// A repository error.
pub fn connection_schemas(conn: &dyn Session) -> Result<std::collections::BTreeMap<i64, String>> {
    Ok(conn
        .rows(
            "SELECT id, schema_name FROM connections WHERE schema_name IS NOT NULL AND schema_name <> ''",
            args![],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?
        .into_iter()
        .collect())
}

/// Sheet `id`'s current plans: their version (the number of the deploy that stored them),
/// and their text unless that version is `known`; `None` when there is no such sheet.
///
/// # Errors
///
/// A repository error; [`Error::Corrupt`] when the sheet has none (stored by an older weft
/// from a definition the upgrade could not read).
pub fn plans_text(
    conn: &dyn Session,
    id: i64,
    known: Option<i64>,
) -> Result<Option<(i64, Option<String>)>> {
    // Deploy numbers start at 1 (0 names plans stored before schema version 13): -1 is no
    // version. The plans are not touched when the version is known.
    let row = conn.row(
        "SELECT v.version, CASE WHEN v.version = ?2 THEN NULL ELSE p.plans END,
                CASE WHEN v.version = ?2 THEN 0 WHEN p.plans IS NULL THEN 1 ELSE 0 END
         FROM sheets s LEFT JOIN plans_versions v ON v.sheet_id = s.id
         LEFT JOIN sheet_plans p ON p.sheet_id = s.id AND p.version = v.version
         WHERE s.id = ?1",
        args![id, known.unwrap_or(-1)],
        |r| {
            Ok((
                r.get::<Option<i64>>(0)?,
                r.get::<Option<String>>(1)?,
                r.get::<i64>(2)? == 1,
            ))
        },
    )?;
    match row {
        None => Ok(None),
        Some((Some(version), text, false)) => Ok(Some((version, text))),
        Some(_) => Err(Error::Corrupt(format!(
            "sheet {id} was stored by an older weft and its definition could not be read when the repository was upgraded; deploy it again"
        ))),
    }
}

/// The text of sheet `id`'s plans at `version`, if they are kept (the current version, and
/// every version an instance runs, are).
///
/// # Errors
///
/// A repository error.
pub fn plans_at(conn: &dyn Session, id: i64, version: i64) -> Result<Option<String>> {
    conn.value(
        "SELECT plans FROM sheet_plans WHERE sheet_id = ?1 AND version = ?2",
        args![id, version],
    )
}

/// Sheet `id`'s plans read from their stored `text`.
///
/// # Errors
///
/// [`Error::Corrupt`] when they cannot be read.
pub fn parse_plans(id: i64, text: &str) -> Result<SheetPlans> {
    serde_json::from_str(text)
        .map(SheetPlans::new)
        .map_err(|e| Error::Corrupt(format!("sheet {id}: its stored plans cannot be read: {e}")))
}

/// The sheets in folder `id` and every folder below it, by order key.
///
/// # Errors
///
/// A repository error.
pub fn sheets_below(conn: &dyn Session, folder: i64) -> Result<Option<Vec<i64>>> {
    let path: Option<String> =
        conn.value("SELECT path FROM folders WHERE id = ?1", args![folder])?;
    let Some(path) = path else { return Ok(None) };
    let prefix = if path == "/" {
        "/".to_owned()
    } else {
        format!("{path}/")
    };
    let ids = conn.rows(
        "SELECT s.id FROM sheets s JOIN folders f ON f.id = s.folder_id
         WHERE f.id = ?1 OR substr(f.path, 1, length(?2)) = ?2 ORDER BY s.order_key, s.id",
        args![folder, prefix],
        |r| r.get(0),
    )?;
    Ok(Some(ids))
}
