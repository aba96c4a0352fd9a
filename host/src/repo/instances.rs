//! Batch instances and their actions in the repository: created when a run starts (with the
//! plan of every action, so that a deploy during the run changes nothing of it), updated as
//! states change, read by the monitoring commands, and repaired after a crash.

use super::{Error, Result, now_utc};
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

/// A scheduled start this much later than planned is recorded as late.
pub const LATE_AFTER_SECONDS: i64 = 60;

/// Instance states.
pub mod state {
    /// Actions are running or waiting for each other or a slot.
    pub const RUNNING: &str = "running";
    /// Stored, waiting for a coordinator (more instances run than `max_parallel_actions`).
    pub const WAITING: &str = "waiting";
    /// Every action finished.
    pub const FINISHED: &str = "finished";
    /// Some action failed or was skipped.
    pub const FAILED: &str = "failed";
    /// Halted on request.
    pub const HALTED: &str = "halted";
    /// The server stopped during the run.
    pub const INTERRUPTED: &str = "interrupted";
}

/// The state of one action of an instance; stored and answered as its one-letter code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActionState {
    /// `D`: defined, waiting for the actions it depends on.
    Defined,
    /// `W`: ready, waiting for a slot.
    Waiting,
    /// `R`: running.
    Running,
    /// `F`: finished.
    Finished,
    /// `E`: failed.
    Error,
    /// `S`: skipped, because an action it depends on failed or was skipped.
    Skipped,
    /// `H`: halted before it started.
    Halted,
}

impl ActionState {
    /// The one-letter code stored in the repository and answered by the API.
    pub fn code(self) -> &'static str {
        match self {
            ActionState::Defined => "D",
            ActionState::Waiting => "W",
            ActionState::Running => "R",
            ActionState::Finished => "F",
            ActionState::Error => "E",
            ActionState::Skipped => "S",
            ActionState::Halted => "H",
        }
    }

    /// The state of a one-letter code, if it is one.
    pub fn from_code(code: &str) -> Option<Self> {
        Some(match code {
            "D" => ActionState::Defined,
            "W" => ActionState::Waiting,
            "R" => ActionState::Running,
            "F" => ActionState::Finished,
            "E" => ActionState::Error,
            "S" => ActionState::Skipped,
            "H" => ActionState::Halted,
            _ => return None,
        })
    }

    /// Whether the action has not started yet (`D` or `W`).
    pub fn is_pending(self) -> bool {
        matches!(self, ActionState::Defined | ActionState::Waiting)
    }

    /// Whether the action failed or was skipped, so that what depends on it is skipped.
    pub fn is_failure(self) -> bool {
        matches!(self, ActionState::Error | ActionState::Skipped)
    }
}

impl std::fmt::Display for ActionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

/// One action of a new instance.
#[derive(Debug, Clone)]
pub struct NewAction {
    /// The action node id.
    pub action_id: i64,
    /// Its sheet.
    pub sheet_id: i64,
    /// Its name.
    pub name: String,
    /// Its module.
    pub module: String,
    /// The plan as JSON (module, text, attributes, objects).
    pub plan: String,
    /// The actions it waits for.
    pub depends_on: Vec<i64>,
}

/// A new instance.
#[derive(Debug, Clone)]
pub struct NewInstance {
    /// Whether it waits for a coordinator (state `waiting`) rather than starts at once.
    pub waiting: bool,
    /// `batchName`.
    pub batch_name: String,
    /// `user`.
    pub user: String,
    /// The elements as JSON.
    pub elements: String,
    /// The variables as JSON.
    pub variables: String,
    /// Its actions.
    pub actions: Vec<NewAction>,
}

/// An action as monitoring shows it (the shape of DESIGN.md section 1).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ActionRow {
    /// Action id.
    pub action_id: i64,
    /// Sheet id.
    pub sheet_id: i64,
    /// Name.
    pub name: String,
    /// Module.
    pub module: String,
    /// State letter: D W R F E S H.
    pub state: String,
    /// Start, UTC ISO 8601.
    pub start: Option<String>,
    /// End, UTC ISO 8601.
    pub end: Option<String>,
    /// Rows read.
    pub rows_read: i64,
    /// Rows written.
    pub rows_written: i64,
    /// Rows updated.
    pub rows_updated: i64,
    /// Error message.
    pub error: Option<String>,
    /// Log lines.
    pub log: Vec<String>,
    /// The actions it waits for.
    #[serde(skip)]
    pub depends_on: Vec<i64>,
    /// The plan JSON.
    #[serde(skip)]
    pub plan: String,
    /// How many times it was started (the commit marker names the attempt).
    #[serde(skip)]
    pub attempt: i64,
    /// The connections its current attempt writes without a commit marker.
    #[serde(skip)]
    pub unmarked: Vec<i64>,
}

/// An instance as monitoring shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct InstanceRow {
    /// Id.
    pub batch_instance_id: i64,
    /// Name.
    pub batch_name: String,
    /// User.
    pub user: String,
    /// State word.
    pub state: String,
    /// Start, UTC ISO 8601.
    pub start: String,
    /// End, UTC ISO 8601.
    pub end: Option<String>,
    /// The elements asked for.
    pub elements: serde_json::Value,
    /// The actions.
    pub actions: Vec<ActionRow>,
    /// The scheduled batch that started it, if the scheduler did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_id: Option<i64>,
    /// The planned start it was started for (wall-clock time in the service time zone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned_start: Option<String>,
    /// How many seconds after its planned start it started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_seconds: Option<i64>,
    /// Whether it started late (more than a minute after its planned start, e.g. after a
    /// downtime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late: Option<bool>,
    /// Whether a halt was asked for.
    #[serde(skip)]
    pub halt_requested: bool,
    /// The variables, JSON.
    #[serde(skip)]
    pub variables: String,
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) to ISO 8601 with a `Z`.
pub fn iso(t: &str) -> String {
    format!("{}Z", t.replacen(' ', "T", 1))
}

/// Creates an instance with its actions (state `D` for those that wait, `W` for the others).
///
/// # Errors
///
/// A repository error.
pub fn create(conn: &Connection, new: &NewInstance) -> Result<i64> {
    let now = now_utc();
    conn.execute(
        "INSERT INTO batch_instances (batch_name, user_name, state, started_at, elements, variables) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![new.batch_name, new.user, if new.waiting { state::WAITING } else { state::RUNNING }, now, new.elements, new.variables],
    )?;
    let id = conn.last_insert_rowid();
    let mut st = conn.prepare_cached(
        "INSERT INTO instance_actions (instance_id, action_id, sheet_id, name, module, plan, depends_on, state) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for a in &new.actions {
        let deps =
            serde_json::to_string(&a.depends_on).map_err(|e| Error::Corrupt(e.to_string()))?;
        let st_letter = if a.depends_on.is_empty() {
            ActionState::Waiting
        } else {
            ActionState::Defined
        }
        .code();
        st.execute(params![
            id,
            a.action_id,
            a.sheet_id,
            a.name,
            a.module,
            a.plan,
            deps,
            st_letter
        ])?;
    }
    Ok(id)
}

/// Sets an action's state, with its start or end.
///
/// # Errors
///
/// A repository error.
pub fn set_action(conn: &Connection, instance: i64, action: i64, state: ActionState) -> Result<()> {
    let now = now_utc();
    let sql = match state {
        ActionState::Running => {
            "UPDATE instance_actions SET state = ?3, started_at = ?4, ended_at = NULL, error = NULL, attempt = attempt + 1, unmarked = NULL WHERE instance_id = ?1 AND action_id = ?2"
        }
        ActionState::Skipped | ActionState::Halted | ActionState::Error => {
            "UPDATE instance_actions SET state = ?3, ended_at = ?4 WHERE instance_id = ?1 AND action_id = ?2"
        }
        _ => {
            "UPDATE instance_actions SET state = ?3 WHERE instance_id = ?1 AND action_id = ?2 AND ?4 IS NOT NULL"
        }
    };
    conn.prepare_cached(sql)?
        .execute(params![instance, action, state.code(), now])?;
    Ok(())
}

/// The state of an instance, if it exists (cheap, for waiting).
///
/// # Errors
///
/// A repository error.
pub fn state_of(conn: &Connection, instance: i64) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT state FROM batch_instances WHERE id = ?1")?
        .query_row([instance], |r| r.get(0))
        .optional()?)
}

/// Records how an action ended: `F` with its counts, or `E` with the error.
///
/// # Errors
///
/// A repository error.
#[allow(clippy::too_many_arguments)]
pub fn end_action(
    conn: &Connection,
    instance: i64,
    action: i64,
    error: Option<&str>,
    read: u64,
    written: u64,
    updated: u64,
    log: &[String],
) -> Result<()> {
    let state = if error.is_some() { "E" } else { "F" };
    conn.prepare_cached(
        "UPDATE instance_actions SET state = ?3, ended_at = ?4, rows_read = ?5, rows_written = ?6, rows_updated = ?7, error = ?8, log = log || ?9 WHERE instance_id = ?1 AND action_id = ?2",
    )?
    .execute(params![instance, action, state, now_utc(), read as i64, written as i64, updated as i64, error, log.iter().map(|l| format!("{l}\n")).collect::<String>()],
    )?;
    Ok(())
}

/// Sets an instance's state; a final state records the end.
///
/// # Errors
///
/// A repository error.
pub fn set_instance(conn: &Connection, instance: i64, state: &str) -> Result<()> {
    if state == state::RUNNING {
        conn.execute(
            "UPDATE batch_instances SET state = ?2, ended_at = NULL, halt_requested = 0 WHERE id = ?1",
            params![instance, state],
        )?;
    } else {
        conn.execute(
            "UPDATE batch_instances SET state = ?2, ended_at = ?3 WHERE id = ?1",
            params![instance, state, now_utc()],
        )?;
    }
    Ok(())
}

/// Marks a halt request.
///
/// # Errors
///
/// A repository error.
pub fn request_halt(conn: &Connection, instance: i64) -> Result<()> {
    conn.execute(
        "UPDATE batch_instances SET halt_requested = 1 WHERE id = ?1",
        [instance],
    )?;
    Ok(())
}

/// Reads an instance with its actions.
///
/// # Errors
///
/// A repository error.
pub fn get(conn: &Connection, instance: i64) -> Result<Option<InstanceRow>> {
    let row = conn
        .query_row(
            "SELECT id, batch_name, user_name, state, started_at, ended_at, elements, halt_requested, variables, batch_id, planned_start, late_seconds FROM batch_instances WHERE id = ?1",
            [instance],
            |r| {
                Ok(InstanceRow {
                    batch_instance_id: r.get(0)?,
                    batch_name: r.get(1)?,
                    user: r.get(2)?,
                    state: r.get(3)?,
                    start: iso(&r.get::<_, String>(4)?),
                    end: r.get::<_, Option<String>>(5)?.map(|t| iso(&t)),
                    elements: serde_json::from_str(&r.get::<_, String>(6)?).unwrap_or(serde_json::Value::Null),
                    actions: Vec::new(),
                    halt_requested: r.get::<_, i64>(7)? != 0,
                    variables: r.get(8)?,
                    batch_id: r.get(9)?,
                    planned_start: r.get(10)?,
                    late_seconds: r.get(11)?,
                    late: r
                        .get::<_, Option<i64>>(11)?
                        .map(|s| s > LATE_AFTER_SECONDS),
                })
            },
        )
        .optional()?;
    let Some(mut row) = row else { return Ok(None) };
    let mut st = conn.prepare_cached(
        "SELECT action_id, sheet_id, name, module, state, started_at, ended_at, rows_read, rows_written, rows_updated, error, log, depends_on, plan, attempt, unmarked
         FROM instance_actions WHERE instance_id = ?1 ORDER BY action_id",
    )?;
    row.actions = st
        .query_map([instance], |r| {
            Ok(ActionRow {
                action_id: r.get(0)?,
                sheet_id: r.get(1)?,
                name: r.get(2)?,
                module: r.get(3)?,
                state: r.get(4)?,
                start: r.get::<_, Option<String>>(5)?.map(|t| iso(&t)),
                end: r.get::<_, Option<String>>(6)?.map(|t| iso(&t)),
                rows_read: r.get(7)?,
                rows_written: r.get(8)?,
                rows_updated: r.get(9)?,
                error: r.get(10)?,
                log: r.get::<_, String>(11)?.lines().map(str::to_owned).collect(),
                depends_on: serde_json::from_str(&r.get::<_, String>(12)?).unwrap_or_default(),
                plan: r.get(13)?,
                attempt: r.get(14)?,
                unmarked: r
                    .get::<_, Option<String>>(15)?
                    .and_then(|t| serde_json::from_str(&t).ok())
                    .unwrap_or_default(),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(Some(row))
}

/// The most recent instances, newest first: id, name, user, state, start, end.
///
/// # Errors
///
/// A repository error.
pub fn list(conn: &Connection, limit: i64) -> Result<Vec<serde_json::Value>> {
    let mut st = conn.prepare_cached(
        "SELECT id, batch_name, user_name, state, started_at, ended_at, batch_id, planned_start, late_seconds FROM batch_instances ORDER BY id DESC LIMIT ?1",
    )?;
    let rows = st
        .query_map([limit], |r| {
            let mut row = serde_json::json!({
                "batchInstanceId": r.get::<_, i64>(0)?,
                "batchName": r.get::<_, String>(1)?,
                "user": r.get::<_, String>(2)?,
                "state": r.get::<_, String>(3)?,
                "start": iso(&r.get::<_, String>(4)?),
                "end": r.get::<_, Option<String>>(5)?.map(|t| iso(&t)),
            });
            // Scheduled runs say which batch and which planned start, and whether late.
            if let Some(batch) = r.get::<_, Option<i64>>(6)? {
                row["batchId"] = batch.into();
                row["plannedStart"] = r.get::<_, Option<String>>(7)?.into();
                let late = r.get::<_, Option<i64>>(8)?.unwrap_or(0);
                row["lateSeconds"] = late.into();
                row["late"] = (late > LATE_AFTER_SECONDS).into();
            }
            Ok(row)
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Records that the current attempt of an action writes `connections` without a commit
/// marker (before it begins), so that after a kill it is known that it may have committed.
///
/// # Errors
///
/// A repository error.
pub fn set_unmarked(
    conn: &Connection,
    instance: i64,
    action: i64,
    connections: &[i64],
) -> Result<()> {
    let list = serde_json::to_string(connections).map_err(|e| Error::Corrupt(e.to_string()))?;
    conn.prepare_cached(
        "UPDATE instance_actions SET unmarked = ?3 WHERE instance_id = ?1 AND action_id = ?2",
    )?
    .execute(params![instance, action, list])?;
    Ok(())
}

/// The instances the repository calls running or waiting.
///
/// # Errors
///
/// A repository error.
pub fn unfinished(conn: &Connection) -> Result<Vec<i64>> {
    Ok(conn
        .prepare_cached(
            "SELECT id FROM batch_instances WHERE state IN ('running', 'waiting') ORDER BY id",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}

/// The repository's random identity (schema version 5).
///
/// # Errors
///
/// A repository error.
pub fn repository_id(conn: &Connection) -> Result<String> {
    Ok(conn.query_row("SELECT id FROM repository_identity", [], |r| r.get(0))?)
}

/// A waiting instance starts: `running` (nothing else changes).
///
/// # Errors
///
/// A repository error.
pub fn mark_running(conn: &Connection, instance: i64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE batch_instances SET state = 'running' WHERE id = ?1 AND state = 'waiting'",
    )?
    .execute([instance])?;
    Ok(())
}

/// What waits (`D`, `W`) in an instance is halted.
fn halt_waiting(conn: &Connection, instance: i64, now: &str) -> Result<()> {
    conn.execute(
        "UPDATE instance_actions SET state = 'H', ended_at = ?2 WHERE instance_id = ?1 AND state IN ('D', 'W')",
        params![instance, now],
    )?;
    Ok(())
}

/// Ends an instance: `finished` when every action finished, else `otherwise`.
fn end_as(conn: &Connection, instance: i64, now: &str, otherwise: &str) -> Result<()> {
    conn.execute(
        "UPDATE batch_instances SET ended_at = ?2, state = CASE WHEN EXISTS
             (SELECT 1 FROM instance_actions WHERE instance_id = ?1 AND state <> 'F')
             THEN ?3 ELSE 'finished' END WHERE id = ?1",
        params![instance, now, otherwise],
    )?;
    Ok(())
}

/// Halts an instance that no coordinator runs: what waits is halted, the instance too.
///
/// # Errors
///
/// A repository error.
pub fn halt_now(conn: &Connection, instance: i64) -> Result<()> {
    let now = now_utc();
    halt_waiting(conn, instance, &now)?;
    conn.execute(
        "UPDATE batch_instances SET state = 'halted', halt_requested = 1, ended_at = ?2 WHERE id = ?1",
        params![instance, now],
    )?;
    Ok(())
}

/// Ends an instance whose coordinator failed (its running actions settled before): what
/// waits or still runs is halted with `why`; the instance is finished when every action
/// finished, else failed.
///
/// # Errors
///
/// A repository error.
pub fn end_failed(conn: &Connection, instance: i64, why: &str) -> Result<()> {
    let now = now_utc();
    let tx = conn.unchecked_transaction()?;
    tx.execute(
        "UPDATE instance_actions SET state = 'H', ended_at = ?2, error = ?3 WHERE instance_id = ?1 AND state IN ('D', 'W', 'R')",
        params![instance, now, why],
    )?;
    end_as(&tx, instance, &now, state::FAILED)?;
    tx.commit()?;
    Ok(())
}

/// After a crash: every instance still `running` or `waiting` becomes `interrupted` (or
/// `finished`, when every action of it finished), its running actions errors
/// ("interrupted by a server stop") and its waiting ones halted. Returns the ids.
///
/// # Errors
///
/// A repository error.
pub fn recover(conn: &Connection) -> Result<Vec<i64>> {
    let ids = unfinished(conn)?;
    let now = now_utc();
    for id in &ids {
        conn.execute(
            "UPDATE instance_actions SET state = 'E', ended_at = ?2, error = 'interrupted by a server stop' WHERE instance_id = ?1 AND state = 'R'",
            params![id, now],
        )?;
        halt_waiting(conn, *id, &now)?;
        end_as(conn, *id, &now, state::INTERRUPTED)?;
    }
    Ok(ids)
}

/// For a restart: every action in `E`, `S` or `H` waits again (`D` when it depends on
/// something, else `W`); finished actions stay finished.
///
/// # Errors
///
/// A repository error.
pub fn reset_for_restart(conn: &Connection, instance: i64, waiting: bool) -> Result<usize> {
    let n = conn.execute(
        "UPDATE instance_actions SET state = CASE WHEN depends_on = '[]' THEN 'W' ELSE 'D' END, started_at = NULL, ended_at = NULL, error = NULL,
             log = log || '-- restarted\n'
         WHERE instance_id = ?1 AND state IN ('E', 'S', 'H', 'R')",
        [instance],
    )?;
    set_instance(conn, instance, state::RUNNING)?;
    if waiting {
        conn.execute(
            "UPDATE batch_instances SET state = 'waiting' WHERE id = ?1",
            [instance],
        )?;
    }
    Ok(n)
}

/// The id of the sheet a node belongs to, and the node's type.
///
/// # Errors
///
/// A repository error.
pub fn node(conn: &Connection, id: i64) -> Result<Option<(i64, i64)>> {
    Ok(conn
        .query_row(
            "SELECT sheet_id, type FROM nodes WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?)
}

/// The stored definition of a sheet.
///
/// # Errors
///
/// A repository error.
pub fn sheet_definition(conn: &Connection, id: i64) -> Result<Option<String>> {
    Ok(conn
        .query_row("SELECT definition FROM sheets WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .optional()?)
}

/// The sheets in folder `id` and every folder below it, by order key.
///
/// # Errors
///
/// A repository error.
pub fn sheets_below(conn: &Connection, folder: i64) -> Result<Option<Vec<i64>>> {
    let path: Option<String> = conn
        .query_row("SELECT path FROM folders WHERE id = ?1", [folder], |r| {
            r.get(0)
        })
        .optional()?;
    let Some(path) = path else { return Ok(None) };
    let prefix = if path == "/" {
        "/".to_owned()
    } else {
        format!("{path}/")
    };
    let ids = conn
        .prepare(
            "SELECT s.id FROM sheets s JOIN folders f ON f.id = s.folder_id
             WHERE f.id = ?1 OR substr(f.path, 1, length(?2)) = ?2 ORDER BY s.order_key, s.id",
        )?
        .query_map(params![folder, prefix], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(Some(ids))
}
