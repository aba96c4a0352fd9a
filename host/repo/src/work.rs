//! How the repository hands out work and decides what follows, so that any host can run any
//! action and each decision that must happen once is one transaction (schema version 8):
//!
//! - [`claim`]: ready actions (`W`) become running (`R`) on one host, oldest instance first;
//!   on PostgreSQL the rows are locked with `FOR UPDATE SKIP LOCKED`, so two hosts never
//!   claim one action, and on SQLite the one writer makes the claim whole;
//! - [`end`]: an action's end, fenced by its host and attempt (a host that lost an action to
//!   a takeover cannot record over it), and what follows: its dependents count down and the
//!   ones that wait for nothing more become ready, or, after a failure, every action that
//!   depends on it is skipped; when nothing waits or runs any more, the instance ends;
//! - [`halt`] and [`restart`];
//! - the hosts: each registers, beats its heart ([`heartbeat`]), and the running actions of
//!   a host whose heartbeat stopped are taken over ([`take_over`]) and then settled by their
//!   commit markers ([`settled`]).
//!
//! Dependencies are rows (`instance_action_deps`) keyed by the action depended on,
//! and each waiting action counts what it still waits for (`waits_for`), so an action's end
//! touches its dependents only, whatever the size of the instance.

use crate::error::{Error, Result, now_utc};
use crate::model::{ActionEnd, ActionState, InstanceState};
use crate::sql::{Dialect, Row, Session, args};
use weft_core::plan::ActionPlan;

/// An action a host claimed.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// Its instance.
    pub instance: i64,
    /// The action.
    pub action: i64,
    /// Which run of it this is (the commit marker names it).
    pub attempt: i64,
    /// Its plan, as its instance runs it, or why it cannot be read.
    pub plan: std::result::Result<ActionPlan, String>,
    /// The connections it wrote without a commit marker (known for one taken over).
    pub unmarked: Vec<i64>,
}

/// A claimed action as its row names its plan: by its sheet and the version of the sheet's
/// plans its instance runs (the repository reads the plan from them, `sheet_plans`).
#[derive(Debug, Clone)]
pub struct Pinned {
    /// Its instance.
    pub instance: i64,
    /// The action.
    pub action: i64,
    /// Which run of it this is.
    pub attempt: i64,
    /// Its sheet.
    pub sheet: i64,
    /// The version of the sheet's plans its instance runs (none: the instance's row of the
    /// sheet is missing).
    pub version: Option<i64>,
    /// The connections it wrote without a commit marker.
    pub unmarked: Vec<i64>,
}

/// The objects running actions write now, with their instance (`busy`, a few rows: the
/// running actions' targets by the data graph as deployed, `data_flow`), made once per claim
/// from the running actions, each looked up by its key: on PostgreSQL as a lateral lookup, as
/// a plain join there read the whole data graph into a hash. Only while more than one
/// instance runs or waits (a look at the instances' state index): else no action can wait
/// for another run, and the running actions are not read at all, as on PostgreSQL their
/// index holds an entry of each action that ran until it is vacuumed (0.4 ms a claim after
/// a thousand actions).
fn busy(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => {
            "busy AS MATERIALIZED (
                 SELECT fb.connection_id, fb.schema_name, fb.object_name, b.instance_id
                 FROM instance_actions b
                 CROSS JOIN LATERAL (
                     SELECT f.connection_id, f.schema_name, f.object_name FROM data_flow f
                     WHERE f.action_id = b.action_id AND f.writes = 1 OFFSET 0) fb
                 WHERE b.state = 'R' AND (SELECT COUNT(*) FROM (
                     SELECT 1 FROM batch_instances WHERE state IN ('running', 'waiting') LIMIT 2) x) > 1)"
        }
        Dialect::Sqlite => {
            "busy AS MATERIALIZED (
                 SELECT fb.connection_id, fb.schema_name, fb.object_name, b.instance_id
                 FROM instance_actions b
                 JOIN data_flow fb ON fb.action_id = b.action_id AND fb.writes = 1
                 WHERE b.state = 'R' AND (SELECT COUNT(*) FROM (
                     SELECT 1 FROM batch_instances WHERE state IN ('running', 'waiting') LIMIT 2)) > 1)"
        }
    }
}

/// Whether waiting action `w` (a name or alias of `instance_actions`) writes an object that
/// a running action of another instance writes ([`busy`]): then it waits for it.
fn written_by_another_run(w: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM busy
             JOIN data_flow fa ON fa.action_id = {w}.action_id AND fa.writes = 1
                 AND fa.connection_id = busy.connection_id AND fa.schema_name = busy.schema_name
                 AND fa.object_name = busy.object_name
             WHERE busy.instance_id <> {w}.instance_id)"
    )
}

/// The columns [`pinned_row`] reads, of `instance_actions` as `table` (a name or alias).
fn pinned_columns(table: &str) -> String {
    format!(
        "{table}.instance_id, {table}.action_id, {table}.attempt, {table}.sheet_id,
         (SELECT v.version FROM instance_sheets v
          WHERE v.sheet_id = {table}.sheet_id AND v.instance_id = {table}.instance_id),
         {table}.unmarked"
    )
}

/// What a run needs of its instance besides its actions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceInfo {
    /// `batchName`.
    pub batch_name: String,
    /// `user`.
    pub user: String,
    /// When it started, UTC ISO 8601.
    pub start: String,
    /// The planned start of a scheduled run.
    pub planned_start: Option<String>,
    /// The variables, name and value.
    pub variables: Vec<(String, String)>,
    /// Whether a halt was asked for.
    pub halt_requested: bool,
}

/// What recording an action's end did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    /// Whether the end was recorded: `false` when the action no longer runs on this host
    /// in this attempt (another host took it over), and nothing was changed.
    pub recorded: bool,
    /// How many actions became ready.
    pub ready: usize,
    /// The instance's final state, when this was its last action.
    pub instance: Option<InstanceState>,
}

impl Ended {
    /// Nothing recorded: the action is no longer this host's in this attempt.
    pub const NOT_RECORDED: Ended = Ended {
        recorded: false,
        ready: 0,
        instance: None,
    };
    /// Recorded, and nothing else decided.
    pub const RECORDED_ALONE: Ended = Ended {
        recorded: true,
        ready: 0,
        instance: None,
    };
}

/// What a halt did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Halted {
    /// There is no such instance.
    NotFound,
    /// It had ended already, in this state.
    NotRunning(InstanceState),
    /// Asked: what waited is halted; `running` actions stop on their hosts, and the
    /// instance ends halted with the last of them (at once when none runs).
    Asked {
        /// How many of its actions are running.
        running: usize,
    },
}

/// A host as the repository knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRow {
    /// Its id.
    pub id: String,
    /// The URL it serves.
    pub url: String,
    /// Its `max_parallel_actions`.
    pub slots: i64,
    /// When it started, UTC.
    pub started_at: String,
    /// Milliseconds since its last heartbeat, by the repository's clock.
    pub silent_ms: i64,
    /// How many actions it runs.
    pub running: i64,
}

/// The repository's clock in milliseconds since 1970, as an SQL expression: one clock for
/// every host's heartbeat and every judgement of it, whatever the hosts' own clocks say.
fn now_ms(d: Dialect) -> &'static str {
    match d {
        Dialect::Postgres => "(extract(epoch FROM clock_timestamp()) * 1000)::bigint",
        Dialect::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
    }
}

/// A ready action may be claimed now: it waits for no retry's pause (`?2` is now).
const DUE: &str = "(w.ready_at IS NULL OR w.ready_at <= ?2)";

/// The claim of up to `limit` ready actions for `host`, oldest instance first (their
/// instances start running by [`mark_running`]).
///
/// # Errors
///
/// A repository error.
pub fn claim(conn: &dyn Session, host: &str, limit: usize) -> Result<Vec<Pinned>> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    // The deploy whose plans the attempt runs: the version of its sheet's plans that its
    // instance runs (an upgrade's own versions, below 1, are no deploy's).
    let set = |t: &str| {
        format!(
            "state = 'R', host = ?1, started_at = ?2, ended_at = NULL, error = NULL,
             attempt = attempt + 1, unmarked = NULL, ready_at = NULL,
             deploy_id = (SELECT CASE WHEN v.version > 0 THEN v.version END FROM instance_sheets v
                          WHERE v.sheet_id = {t}.sheet_id AND v.instance_id = {t}.instance_id)"
        )
    };
    // One action a statement (below); the limit written into it, as a bound one made SQLite
    // prepare it again at every claim.
    let sql = match conn.dialect() {
        // The rows picked are locked, and rows another host locked are skipped. The pick is
        // a materialized CTE: as `IN (subquery)` PostgreSQL may run the subquery again for
        // each row it updates, and each run may pick (and lock) other rows, past the limit.
        // A ready action of a priority above 0 first (its own small index), else the first
        // ready one in order.
        Dialect::Postgres => format!(
            "WITH {busy}, urgent AS MATERIALIZED (
                 SELECT instance_id, action_id FROM instance_actions w
                 WHERE state = 'W' AND priority > 0 AND NOT {written} AND {due}
                 ORDER BY priority DESC, instance_id, action_id LIMIT 1 FOR UPDATE SKIP LOCKED),
             plain AS MATERIALIZED (
                 SELECT instance_id, action_id FROM instance_actions w
                 WHERE state = 'W' AND NOT EXISTS (SELECT 1 FROM urgent) AND NOT {written} AND {due}
                 ORDER BY instance_id, action_id LIMIT 1 FOR UPDATE SKIP LOCKED),
             picked AS (SELECT instance_id, action_id FROM urgent
                        UNION ALL SELECT instance_id, action_id FROM plain)
             UPDATE instance_actions a SET {set}
             FROM picked WHERE a.instance_id = picked.instance_id AND a.action_id = picked.action_id
             RETURNING {columns}",
            busy = busy(Dialect::Postgres),
            written = written_by_another_run("w"),
            set = set("a"),
            columns = pinned_columns("a"),
            due = DUE,
        ),
        // One writer: nothing to skip.
        // SQLite is told to take the small index of the urgent ones: else it walks every
        // ready action by the index of ready ones (a fan-out of 10,000 paid twice its cost).
        Dialect::Sqlite => format!(
            "WITH {busy} UPDATE instance_actions SET {set}
             WHERE state = 'W' AND (instance_id, action_id) IN (
                 SELECT instance_id, action_id FROM (
                     SELECT 0 AS k, instance_id, action_id FROM (
                         SELECT instance_id, action_id FROM instance_actions w
                             INDEXED BY instance_actions_urgent
                         WHERE state = 'W' AND priority > 0 AND NOT {written} AND {due}
                         ORDER BY priority DESC, instance_id, action_id LIMIT 1)
                     UNION ALL
                     SELECT 1 AS k, instance_id, action_id FROM (
                         SELECT instance_id, action_id FROM instance_actions w
                         WHERE state = 'W' AND NOT {written} AND {due}
                         ORDER BY instance_id, action_id LIMIT 1))
                 ORDER BY k LIMIT 1)
             RETURNING {columns}",
            busy = busy(Dialect::Sqlite),
            set = set("instance_actions"),
            written = written_by_another_run("w"),
            columns = pinned_columns("instance_actions"),
            due = DUE,
        ),
    };
    // One claim at a time over all hosts (SQLite's one writer is that already): two at once
    // would each see the other's action still waiting, and start two writers of one table.
    if conn.dialect() == Dialect::Postgres {
        conn.execute(
            "SELECT pg_advisory_xact_lock(?1)",
            args![super::postgres::CLAIM_LOCK],
        )?;
    }
    // One action a statement: the next statement of the transaction sees the action the
    // one before made running, so two actions of different runs that write one table are
    // never claimed together (a statement reads the running actions once, at its start).
    let now = now_utc();
    let mut claimed = Vec::with_capacity(limit);
    for _ in 0..limit {
        let one = conn.rows(&sql, args![host, now], pinned_row)?;
        if one.is_empty() {
            break;
        }
        claimed.extend(one);
    }
    claimed.sort_by_key(|c| (c.instance, c.action));
    Ok(claimed)
}

/// The waiting ones of `instances` start running (after a claim of their actions, in a
/// transaction of its own: the claim locks action rows and then no instance row, as every
/// other decision locks the instance row first, so the two never wait for each other).
///
/// # Errors
///
/// A repository error.
pub fn mark_running(conn: &dyn Session, instances: &[i64]) -> Result<()> {
    for id in instances {
        conn.execute(
            "UPDATE batch_instances SET state = 'running' WHERE id = ?1 AND state = 'waiting'",
            args![id],
        )?;
    }
    Ok(())
}

/// A running action as the columns of [`pinned_columns`] read it.
fn pinned_row(r: &Row) -> Result<Pinned> {
    Ok(Pinned {
        instance: r.get(0)?,
        action: r.get(1)?,
        attempt: r.get(2)?,
        sheet: r.get(3)?,
        version: r.get(4)?,
        unmarked: unmarked_of(r, 5)?,
    })
}

/// The connections an attempt wrote without a commit marker (a JSON list, or none). What
/// cannot be read counts as a write to an unknown connection, so that no marker is trusted.
fn unmarked_of(r: &Row, column: usize) -> Result<Vec<i64>> {
    Ok(match r.get::<Option<String>>(column)? {
        None => Vec::new(),
        Some(t) => serde_json::from_str(&t).unwrap_or_else(|_| vec![-1]),
    })
}

/// Locks instance `id`'s row for the caller's transaction (PostgreSQL; SQLite's one writer is
/// that lock already). Every decision about an instance takes it first: two ends recorded at
/// once on two hosts would otherwise each see the other's action still running (each
/// statement reads what was committed when it began), and neither would end the instance.
fn lock_instance(conn: &dyn Session, id: i64) -> Result<()> {
    if conn.dialect() == Dialect::Postgres {
        conn.rows(
            "SELECT id FROM batch_instances WHERE id = ?1 FOR UPDATE",
            args![id],
            |r| r.get::<i64>(0),
        )?;
    }
    Ok(())
}

/// What a run needs of instance `id` besides its actions.
///
/// # Errors
///
/// A repository error.
pub fn info(conn: &dyn Session, id: i64) -> Result<Option<InstanceInfo>> {
    let row = conn.row(
        "SELECT batch_name, user_name, started_at, planned_start, variables, halt_requested
         FROM batch_instances WHERE id = ?1",
        args![id],
        |r| {
            Ok((
                r.get::<String>(0)?,
                r.get::<String>(1)?,
                r.get::<String>(2)?,
                r.get::<Option<String>>(3)?,
                r.get::<String>(4)?,
                r.get::<i64>(5)?,
            ))
        },
    )?;
    row.map(
        |(batch_name, user, start, planned_start, variables, halt)| {
            Ok(InstanceInfo {
                batch_name,
                user,
                start: super::instances::iso(&start),
                planned_start,
                variables: serde_json::from_str(&variables).map_err(|e| {
                    Error::Corrupt(format!("the variables of batch instance {id}: {e}"))
                })?,
                halt_requested: halt != 0,
            })
        },
    )
    .transpose()
}

/// Records how attempt `attempt` of `action` ended on `host`, and what follows, in the
/// caller's transaction.
///
/// # Errors
///
/// A repository error.
pub fn end(
    conn: &dyn Session,
    host: &str,
    instance: i64,
    action: i64,
    attempt: i64,
    end: &ActionEnd<'_>,
) -> Result<Ended> {
    let state = if end.halted {
        ActionState::Halted
    } else if end.error.is_some() {
        ActionState::Error
    } else {
        ActionState::Finished
    };
    lock_instance(conn, instance)?;
    let now = now_utc();
    let log: String = end.log.iter().map(|l| format!("{l}\n")).collect();
    if let (ActionState::Error, Some(error)) = (state, end.error)
        && let Some(ended) = retry(
            conn,
            (host, instance, action, attempt),
            end,
            (error, &log),
            &now,
        )?
    {
        return Ok(ended);
    }
    let changed = conn.execute(
        "UPDATE instance_actions SET state = ?5, ended_at = ?6, rows_read = ?7, rows_written = ?8,
             rows_updated = ?9, rows_deleted = ?10, error = ?11, log = log || ?12
         WHERE instance_id = ?1 AND action_id = ?2 AND state = 'R' AND host = ?3 AND attempt = ?4",
        args![
            instance,
            action,
            host,
            attempt,
            state.code(),
            now,
            end.rows_read as i64,
            end.rows_written as i64,
            end.rows_updated as i64,
            end.rows_deleted as i64,
            end.error,
            log
        ],
    )?;
    if changed == 0 {
        return Ok(Ended::NOT_RECORDED);
    }
    if let (ActionState::Error, Some(error)) = (state, end.error) {
        crate::notifications::record(
            conn,
            &crate::notifications::Event::ActionFailed {
                instance,
                action,
                error,
            },
            &now,
        )?;
    }
    follow(conn, instance, action, state, &now)
}

/// The longest pause before a retry: an hour.
pub const MAX_RETRY_PAUSE: i64 = 3600;

/// The pause before try `retried + 1` again of an action whose first pause is `delay`
/// seconds: doubled at each try, at most [`MAX_RETRY_PAUSE`] (or `delay`, when longer).
pub fn retry_pause(delay: i64, retried: i64) -> i64 {
    delay
        .saturating_mul(1i64 << retried.clamp(0, 30))
        .min(MAX_RETRY_PAUSE.max(delay))
}

/// Puts the failed `action` back to be tried again when its policy says so (a failure of
/// the kind its `retryOn` names, tries left), in the caller's transaction: ready again after
/// its pause (doubled at each try, at most [`MAX_RETRY_PAUSE`]), the failed try kept in
/// `action_attempts`, a `retried` notification recorded. A connection failure before it did
/// anything is tried again at once without counting, once for each counted try. `None`:
/// not tried again.
fn retry(
    conn: &dyn Session,
    (host, instance, action, attempt): (&str, i64, i64, i64),
    end: &ActionEnd<'_>,
    (error, log): (&str, &str),
    now: &str,
) -> Result<Option<Ended>> {
    use crate::model::FailureClass;
    type Policy = (i64, i64, String, i64, i64, Option<String>);
    let policy: Option<Policy> = conn.row(
        "SELECT retries, retry_delay_seconds, retry_on, retried, free_retried, started_at FROM instance_actions
          WHERE instance_id = ?1 AND action_id = ?2 AND state = 'R' AND host = ?3 AND attempt = ?4",
        args![instance, action, host, attempt],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
    )?;
    let Some((retries, delay, on, retried, free_retried, started_at)) = policy else {
        return Ok(None);
    };
    let free = end.untouched && end.class == FailureClass::Connection && free_retried <= retried;
    let kind_retries = match (on.as_str(), end.class) {
        (_, FailureClass::Commit) | ("none", _) => false,
        ("all", _) => true,
        (_, class) => class != FailureClass::Other,
    };
    let counted = kind_retries && retried < retries;
    if !(free || counted) {
        return Ok(None);
    }
    let pause = if free { 0 } else { retry_pause(delay, retried) };
    let ready_at = (pause > 0).then(|| {
        let at = weft_core::sched::clock::current().clock.now() + chrono::Duration::seconds(pause);
        crate::error::stored_time(at)
    });
    conn.execute(
        "UPDATE instance_actions SET state = 'W', ready_at = ?5, error = ?6, log = log || ?7,
             retried = retried + ?8, free_retried = free_retried + ?9
         WHERE instance_id = ?1 AND action_id = ?2 AND state = 'R' AND host = ?3 AND attempt = ?4",
        args![
            instance,
            action,
            host,
            attempt,
            ready_at.clone(),
            error,
            log,
            i64::from(!free),
            i64::from(free)
        ],
    )?;
    let retry_at = ready_at.clone().unwrap_or_else(|| now.to_owned());
    conn.execute(
        "INSERT INTO action_attempts (instance_id, action_id, attempt, host, started_at, ended_at, error, counted, retry_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT (instance_id, action_id, attempt) DO NOTHING",
        args![instance, action, attempt, host, started_at, now, error, i64::from(!free), retry_at],
    )?;
    if !free {
        crate::notifications::record(
            conn,
            &crate::notifications::Event::Retried {
                instance,
                action,
                error,
                retry_at: &retry_at,
            },
            now,
        )?;
    }
    tracing::warn!(message = "An action failed and is tried again.", batch_instance_id = instance, action_id = action, attempt, counted = !free, retry_at = %retry_at, error = %error);
    Ok(Some(Ended {
        recorded: true,
        ready: usize::from(pause == 0),
        instance: None,
    }))
}

/// What follows from `action` reaching `state`: its dependents count down and become ready
/// (or halted, when a halt was asked), or, after a failure, are skipped with everything that
/// depends on them; then the instance ends if nothing waits or runs.
fn follow(
    conn: &dyn Session,
    instance: i64,
    action: i64,
    state: ActionState,
    now: &str,
) -> Result<Ended> {
    let mut ready = 0;
    if state == ActionState::Finished {
        // The dependents, and whether a halt was asked (which matters only when there are
        // some), in one statement. Not a join of the instance's row: SQLite carries `b.id =
        // ?1` over to the dependencies' key only by looking at the bound value, and so
        // prepared such a statement again at every end (8 % of an action's thread).
        let rows: Vec<(i64, i64)> = conn.rows(
            "SELECT d.action_id, (SELECT b.halt_requested FROM batch_instances b WHERE b.id = ?1)
             FROM instance_action_deps d WHERE d.instance_id = ?1 AND d.depends_on = ?2",
            args![instance, action],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let halted = rows.first().is_some_and(|(_, h)| *h != 0);
        let (to, ended_at) = if halted {
            ("H", Some(now))
        } else {
            ("W", None)
        };
        // One dependent at a time, by its key: a statement that filtered the instance's
        // waiting actions instead would read all of them at every end (a long chain's
        // waiting actions are most of it), and a batch would cost its square.
        for (d, _) in rows {
            let became: Option<String> = conn.value(
                "UPDATE instance_actions SET waits_for = waits_for - 1,
                     state = CASE WHEN waits_for <= 1 THEN ?3 ELSE state END,
                     ended_at = CASE WHEN waits_for <= 1 THEN ?4 ELSE ended_at END
                 WHERE instance_id = ?1 AND action_id = ?2 AND state = 'D'
                 RETURNING state",
                args![instance, d, to, ended_at],
            )?;
            ready += usize::from(became.as_deref() == Some("W"));
        }
    } else if state.is_failure() {
        skip_dependents(conn, instance, action, now)?;
    }
    Ok(Ended {
        recorded: true,
        ready,
        // An action that just became ready keeps the instance going.
        instance: if ready > 0 {
            None
        } else {
            end_if_done(conn, instance, now)?
        },
    })
}

/// The actions of `instance` that depend on `action` directly.
fn dependents(conn: &dyn Session, instance: i64, action: i64) -> Result<Vec<i64>> {
    conn.rows(
        "SELECT action_id FROM instance_action_deps WHERE instance_id = ?1 AND depends_on = ?2",
        args![instance, action],
        |r| r.get(0),
    )
}

/// Skips every waiting action that depends on `action`, directly or through others.
fn skip_dependents(conn: &dyn Session, instance: i64, action: i64, now: &str) -> Result<()> {
    let mut frontier = vec![action];
    while let Some(a) = frontier.pop() {
        for d in dependents(conn, instance, a)? {
            let skipped: Option<i64> = conn.value(
                "UPDATE instance_actions SET state = 'S', ended_at = ?3
                 WHERE instance_id = ?1 AND action_id = ?2 AND state IN ('D', 'W')
                 RETURNING action_id",
                args![instance, d, now],
            )?;
            frontier.extend(skipped);
        }
    }
    Ok(())
}

fn halt_requested(conn: &dyn Session, instance: i64) -> Result<bool> {
    Ok(conn
        .value::<i64>(
            "SELECT halt_requested FROM batch_instances WHERE id = ?1",
            args![instance],
        )?
        .unwrap_or(0)
        != 0)
}

/// Ends the instance when none of its actions waits or runs: `halted` when a halt was
/// asked and kept something from running, `failed` when an action failed, was skipped or
/// halted, else `finished` (a halt that came after every action had ended changes nothing).
fn end_if_done(conn: &dyn Session, instance: i64, now: &str) -> Result<Option<InstanceState>> {
    let open: Option<i64> = conn.value(
        "SELECT 1 FROM instance_actions WHERE instance_id = ?1 AND state IN ('D', 'W', 'R') LIMIT 1",
        args![instance],
    )?;
    if open.is_some() {
        return Ok(None);
    }
    let failed: Option<i64> = conn.value(
        "SELECT 1 FROM instance_actions WHERE instance_id = ?1 AND state IN ('E', 'S', 'H') LIMIT 1",
        args![instance],
    )?;
    let halted: Option<i64> = conn.value(
        "SELECT 1 FROM instance_actions WHERE instance_id = ?1 AND state = 'H' LIMIT 1",
        args![instance],
    )?;
    // Actions that started halted (a batch element's option) end it halted too.
    let held: Option<i64> = conn.value(
        "SELECT 1 FROM instance_actions WHERE instance_id = ?1 AND state = 'H' AND error = ?2 LIMIT 1",
        args![instance, crate::model::HELD],
    )?;
    let state = if halted.is_some() && (held.is_some() || halt_requested(conn, instance)?) {
        InstanceState::Halted
    } else if failed.is_some() {
        InstanceState::Failed
    } else {
        InstanceState::Finished
    };
    let ended = conn.execute(
        "UPDATE batch_instances SET state = ?2, ended_at = ?3 WHERE id = ?1 AND state IN ('running', 'waiting')",
        args![instance, state.word(), now],
    )?;
    if ended == 1 {
        crate::notifications::record(
            conn,
            &crate::notifications::Event::Ended { instance, state },
            now,
        )?;
    }
    Ok(Some(state))
}

/// Asks instance `id` to halt, in the caller's transaction: what waits is halted at once,
/// and the instance ends halted when nothing of it runs.
///
/// # Errors
///
/// A repository error.
pub fn halt(conn: &dyn Session, id: i64) -> Result<Halted> {
    lock_instance(conn, id)?;
    let Some(state) = super::instances::state_of(conn, id)? else {
        return Ok(Halted::NotFound);
    };
    if !state.is_ongoing() {
        return Ok(Halted::NotRunning(state));
    }
    let now = now_utc();
    conn.execute(
        "UPDATE batch_instances SET halt_requested = 1 WHERE id = ?1",
        args![id],
    )?;
    conn.execute(
        "UPDATE instance_actions SET state = 'H', ended_at = ?2 WHERE instance_id = ?1 AND state IN ('D', 'W')",
        args![id, now],
    )?;
    let running: i64 = conn
        .value(
            "SELECT count(*) FROM instance_actions WHERE instance_id = ?1 AND state = 'R'",
            args![id],
        )?
        .unwrap_or(0);
    end_if_done(conn, id, &now)?;
    Ok(Halted::Asked {
        running: running as usize,
    })
}

/// Which of `instances` have a halt asked for.
///
/// # Errors
///
/// A repository error.
pub fn halts_asked(conn: &dyn Session, instances: &[i64]) -> Result<Vec<i64>> {
    let mut out = Vec::new();
    for chunk in instances.chunks(500) {
        let list: Vec<String> = chunk.iter().map(i64::to_string).collect();
        out.extend(conn.rows(
            &format!(
                "SELECT id FROM batch_instances WHERE halt_requested = 1 AND id IN ({})",
                list.join(", ")
            ),
            args![],
            |r| r.get::<i64>(0),
        )?);
    }
    Ok(out)
}

/// Why instance `id` cannot restart (it does not exist, finished or still runs), or `None`
/// when it can; locks its row first (PostgreSQL), as every decision about an instance does.
///
/// # Errors
///
/// A repository error.
pub fn not_restartable(conn: &dyn Session, id: i64) -> Result<Option<crate::model::Restarted>> {
    use crate::model::Restarted;
    lock_instance(conn, id)?;
    Ok(match super::instances::state_of(conn, id)? {
        None => Some(Restarted::NotFound),
        Some(InstanceState::Finished) => Some(Restarted::Finished),
        Some(s) if s.is_ongoing() => Some(Restarted::Running),
        Some(_) => None,
    })
}

/// The actions of one sheet that a restart runs again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SheetToRun {
    /// The sheet.
    pub sheet: i64,
    /// The version of its plans deployed now (none: it is no longer deployed).
    pub current: Option<i64>,
    /// The actions of it to run again.
    pub actions: Vec<i64>,
}

/// The states a restart runs again: failed, skipped, halted, and running (interrupted).
const TO_RUN_AGAIN: &str = "('E', 'S', 'H', 'R')";

/// A restart of the actions `only` of instance `?1` (all when empty): the recursive table
/// `again(action_id)` of those named and of what was skipped or halted because of them,
/// and the condition on `instance_actions` (as `t`) that keeps them.
fn selection(only: &[i64], t: &str) -> (String, String) {
    if only.is_empty() {
        return (String::new(), "1 = 1".to_owned());
    }
    let list = only
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    (
        format!(
            "WITH RECURSIVE again(action_id) AS (
                 SELECT action_id FROM instance_actions WHERE instance_id = ?1 AND action_id IN ({list})
                 UNION
                 SELECT d.action_id FROM again g
                 JOIN instance_action_deps d ON d.instance_id = ?1 AND d.depends_on = g.action_id
                 JOIN instance_actions x ON x.instance_id = ?1 AND x.action_id = d.action_id
                     AND x.state IN ('S', 'H')) "
        ),
        format!("{t}.action_id IN (SELECT action_id FROM again)"),
    )
}

/// Which of the actions `only` of instance `id` a restart cannot run again: they did not
/// fail, were not skipped, halted or interrupted, or are none of its actions.
///
/// # Errors
///
/// A repository error.
pub fn not_to_run_again(conn: &dyn Session, id: i64, only: &[i64]) -> Result<Vec<i64>> {
    let list = only
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let can: Vec<i64> = conn.rows(
        &format!(
            "SELECT action_id FROM instance_actions
             WHERE instance_id = ?1 AND action_id IN ({list}) AND state IN {TO_RUN_AGAIN}"
        ),
        args![id],
        |r| r.get(0),
    )?;
    let mut not: Vec<i64> = only.iter().copied().filter(|a| !can.contains(a)).collect();
    not.sort_unstable();
    not.dedup();
    Ok(not)
}

/// The actions of instance `id` that a restart (of `only`, when not empty) runs again, by
/// sheet.
///
/// # Errors
///
/// A repository error.
pub fn to_run_again(conn: &dyn Session, id: i64, only: &[i64]) -> Result<Vec<SheetToRun>> {
    let (again, selected) = selection(only, "a");
    let rows: Vec<(i64, Option<i64>, i64)> = conn.rows(
        &format!(
            "{again}SELECT a.sheet_id,
                    (SELECT v.version FROM plans_versions v WHERE v.sheet_id = a.sheet_id),
                    a.action_id
             FROM instance_actions a
             WHERE a.instance_id = ?1 AND a.state IN {TO_RUN_AGAIN} AND {selected}
             ORDER BY a.sheet_id, a.action_id"
        ),
        args![id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let mut by_sheet: Vec<SheetToRun> = Vec::new();
    for (sheet, current, action) in rows {
        match by_sheet.last_mut() {
            Some(last) if last.sheet == sheet => last.actions.push(action),
            _ => by_sheet.push(SheetToRun {
                sheet,
                current,
                actions: vec![action],
            }),
        }
    }
    Ok(by_sheet)
}

/// Resets instance `id` (which [`not_restartable`] let through) for a restart: what failed,
/// was skipped, halted or interrupted waits again, in the caller's transaction. With
/// [`Definitions::Current`](crate::model::Definitions), each sheet it ran runs its plans
/// deployed now.
///
/// # Errors
///
/// A repository error.
pub fn restart(
    conn: &dyn Session,
    id: i64,
    definitions: crate::model::Definitions,
    only: &[i64],
) -> Result<crate::model::Restarted> {
    use crate::model::{Definitions, Restarted};
    if let Some(refused) = not_restartable(conn, id)? {
        return Ok(refused);
    }
    let (again, selected) = selection(only, "a");
    if definitions == Definitions::Current {
        // The sheets of the actions that run again run their plans deployed now.
        conn.execute(
            &format!(
                "{again}UPDATE instance_sheets SET version =
                     (SELECT v.version FROM plans_versions v WHERE v.sheet_id = instance_sheets.sheet_id)
                 WHERE instance_id = ?1
                   AND EXISTS (SELECT 1 FROM plans_versions v WHERE v.sheet_id = instance_sheets.sheet_id)
                   AND sheet_id IN (SELECT a.sheet_id FROM instance_actions a
                                    WHERE a.instance_id = ?1 AND a.state IN {TO_RUN_AGAIN} AND {selected})"
            ),
            args![id],
        )?;
    }
    let (again, selected) = selection(only, "instance_actions");
    let n = conn.execute(
        &format!(
            "{again}UPDATE instance_actions SET state = 'D', started_at = NULL, ended_at = NULL,
                 error = NULL, host = NULL, log = log || '-- restarted\n',
                 retried = 0, free_retried = 0, ready_at = NULL
             WHERE instance_id = ?1 AND state IN {TO_RUN_AGAIN} AND {selected}"
        ),
        args![id],
    )?;
    // What each action waits for, counted in one pass over the instance's dependencies
    // (they are keyed by the action depended on, not by the one that waits).
    conn.execute(
        "UPDATE instance_actions SET waits_for = 0 WHERE instance_id = ?1 AND state = 'D'",
        args![id],
    )?;
    conn.execute(
        "UPDATE instance_actions SET waits_for = c.n
         FROM (SELECT d.action_id, count(*) AS n FROM instance_action_deps d
                 JOIN instance_actions x ON x.instance_id = d.instance_id AND x.action_id = d.depends_on
                 WHERE d.instance_id = ?1 AND x.state <> 'F'
                 GROUP BY d.action_id) AS c
         WHERE instance_actions.instance_id = ?1 AND instance_actions.action_id = c.action_id
           AND instance_actions.state = 'D'",
        args![id],
    )?;
    conn.execute(
        "UPDATE instance_actions SET state = 'W' WHERE instance_id = ?1 AND state = 'D' AND waits_for <= 0",
        args![id],
    )?;
    conn.execute(
        "UPDATE batch_instances SET state = 'waiting', ended_at = NULL, halt_requested = 0 WHERE id = ?1",
        args![id],
    )?;
    Ok(Restarted::Reset(n))
}

/// How many instances wait for their first action to be claimed.
///
/// # Errors
///
/// A repository error.
pub fn waiting(conn: &dyn Session) -> Result<i64> {
    Ok(conn
        .value(
            "SELECT count(*) FROM batch_instances WHERE state = 'waiting'",
            args![],
        )?
        .unwrap_or(0))
}

/// Registers host `id` (or registers it again after a restart), serving `url` with `slots`,
/// held by `process` (`exec::identity::Process::text`).
///
/// # Errors
///
/// A repository error.
pub fn register(
    conn: &dyn Session,
    id: &str,
    url: &str,
    slots: usize,
    process: &str,
) -> Result<()> {
    let sql = format!(
        "INSERT INTO hosts (id, url, slots, started_at, heartbeat_ms, process) VALUES (?1, ?2, ?3, ?4, {now}, ?5)
         ON CONFLICT (id) DO UPDATE SET url = excluded.url, slots = excluded.slots,
             started_at = excluded.started_at, heartbeat_ms = excluded.heartbeat_ms,
             process = excluded.process",
        now = now_ms(conn.dialect())
    );
    conn.execute(&sql, args![id, url, slots as i64, now_utc(), process])?;
    Ok(())
}

/// What a host's heartbeat found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Beat {
    /// Recorded.
    Alive,
    /// Its row is gone: another host took over from it after its heartbeat had stopped for
    /// a lease, and it must give up what it runs.
    Gone,
    /// Another process (this one) registered the id since: two processes have one id.
    Displaced(String),
}

/// Host `id`, held by `process`, is alive.
///
/// # Errors
///
/// A repository error.
pub fn heartbeat(conn: &dyn Session, id: &str, process: &str) -> Result<Beat> {
    let sql = format!(
        "UPDATE hosts SET heartbeat_ms = {} WHERE id = ?1 AND (process = ?2 OR process IS NULL)",
        now_ms(conn.dialect())
    );
    if conn.execute(&sql, args![id, process])? > 0 {
        return Ok(Beat::Alive);
    }
    let holder: Option<Option<String>> =
        conn.row("SELECT process FROM hosts WHERE id = ?1", args![id], |r| {
            r.get(0)
        })?;
    Ok(match holder {
        None => Beat::Gone,
        Some(other) => Beat::Displaced(other.unwrap_or_default()),
    })
}

/// What a starting host finds in the repository for its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The process that registered it, as stored (`None` before schema version 10).
    pub process: Option<String>,
    /// Its last heartbeat, milliseconds on the repository's clock.
    pub heartbeat_ms: i64,
    /// Milliseconds since that heartbeat, by the repository's clock.
    pub silent_ms: i64,
}

/// The row of host `id`, as a starting host judges it: who holds it and how fresh.
///
/// # Errors
///
/// A repository error.
pub fn holder(conn: &dyn Session, id: &str) -> Result<Option<Holder>> {
    let sql = format!(
        "SELECT process, heartbeat_ms, {now} - heartbeat_ms FROM hosts WHERE id = ?1",
        now = now_ms(conn.dialect())
    );
    conn.row(&sql, args![id], |r| {
        Ok(Holder {
            process: r.get(0)?,
            heartbeat_ms: r.get(1)?,
            silent_ms: r.get(2)?,
        })
    })
}

/// Host `id`, held by `process`, leaves (a clean stop with nothing running): its next start
/// need not wait for its lease.
///
/// # Errors
///
/// A repository error.
pub fn leave(conn: &dyn Session, id: &str, process: &str) -> Result<()> {
    conn.execute(
        "DELETE FROM hosts WHERE id = ?1 AND process = ?2 AND NOT EXISTS (SELECT 1 FROM instance_actions a WHERE a.state = 'R' AND a.host = ?1)",
        args![id, process],
    )?;
    Ok(())
}

/// The hosts with how long they have been silent and what they run, oldest first.
///
/// # Errors
///
/// A repository error.
pub fn hosts(conn: &dyn Session) -> Result<Vec<HostRow>> {
    let sql = format!(
        "SELECT h.id, h.url, h.slots, h.started_at, {now} - h.heartbeat_ms,
             (SELECT count(*) FROM instance_actions a WHERE a.state = 'R' AND a.host = h.id)
         FROM hosts h ORDER BY h.started_at, h.id",
        now = now_ms(conn.dialect())
    );
    conn.rows(&sql, args![], |r| {
        Ok(HostRow {
            id: r.get(0)?,
            url: r.get(1)?,
            slots: r.get(2)?,
            started_at: r.get(3)?,
            silent_ms: r.get(4)?,
            running: r.get(5)?,
        })
    })
}

/// In the caller's transaction: the hosts silent for `lease_ms` or more are forgotten and
/// their running actions (and those of no known host) become `host`'s, still running; the
/// actions so taken over, which the caller settles by their commit markers ([`settled`]).
///
/// # Errors
///
/// A repository error.
pub fn take_over(conn: &dyn Session, host: &str, lease_ms: i64) -> Result<Vec<Pinned>> {
    let lock = match conn.dialect() {
        Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
        Dialect::Sqlite => "",
    };
    let dead: Vec<String> = conn.rows(
        &format!(
            "SELECT id FROM hosts WHERE id <> ?1 AND heartbeat_ms < {} - ?2{lock}",
            now_ms(conn.dialect())
        ),
        args![host, lease_ms],
        |r| r.get(0),
    )?;
    for d in &dead {
        conn.execute("DELETE FROM hosts WHERE id = ?1", args![d])?;
    }
    let mut taken = conn.rows(
        &format!(
            "UPDATE instance_actions SET host = ?1
             WHERE state = 'R' AND (host IS NULL OR host NOT IN (SELECT id FROM hosts))
             RETURNING {}",
            pinned_columns("instance_actions")
        ),
        args![host],
        pinned_row,
    )?;
    taken.sort_by_key(|c| (c.instance, c.action));
    Ok(taken)
}

/// How a taken-over action ended, by its commit markers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settle {
    /// Its marker was found: it committed, and is finished.
    Committed,
    /// No marker: nothing of it committed, and it runs again.
    Rerun,
    /// It failed, with this error (it may have committed: it wrote without a marker, or
    /// its marker could not be read).
    Failed(String),
}

/// In the caller's transaction: how taken-over `claimed` ended ([`Settle`]), with `note` in
/// its log. With `follow`, what follows from it is decided as after an end ([`end`]);
/// without, nothing else changes (the caller ends the instance itself).
///
/// # Errors
///
/// A repository error.
pub fn settled(
    conn: &dyn Session,
    host: &str,
    claimed: &Claimed,
    outcome: &Settle,
    note: &str,
    follow_on: bool,
) -> Result<Ended> {
    lock_instance(conn, claimed.instance)?;
    let now = now_utc();
    let (state, err) = match outcome {
        Settle::Committed => (ActionState::Finished, None),
        Settle::Rerun => (ActionState::Waiting, None),
        Settle::Failed(e) => (ActionState::Error, Some(e.as_str())),
    };
    let ended_at = (state != ActionState::Waiting).then_some(now.as_str());
    let changed = conn.execute(
        "UPDATE instance_actions SET state = ?5, host = NULL, error = ?6, log = log || ?7,
             ended_at = ?8
         WHERE instance_id = ?1 AND action_id = ?2 AND state = 'R' AND host = ?3 AND attempt = ?4",
        args![
            claimed.instance,
            claimed.action,
            host,
            claimed.attempt,
            state.code(),
            err,
            format!("-- {note}\n"),
            ended_at
        ],
    )?;
    if changed == 0 {
        return Ok(Ended::NOT_RECORDED);
    }
    if !follow_on {
        return Ok(Ended::RECORDED_ALONE);
    }
    if state == ActionState::Waiting {
        let halted = halt_requested(conn, claimed.instance)?;
        if halted {
            conn.execute(
                "UPDATE instance_actions SET state = 'H', ended_at = ?3 WHERE instance_id = ?1 AND action_id = ?2",
                args![claimed.instance, claimed.action, now],
            )?;
        }
        return Ok(Ended {
            recorded: true,
            ready: usize::from(!halted),
            instance: end_if_done(conn, claimed.instance, &now)?,
        });
    }
    follow(conn, claimed.instance, claimed.action, state, &now)
}

/// The actions running on `host` (left by its last process, when it starts again).
///
/// # Errors
///
/// A repository error.
pub fn running_on(conn: &dyn Session, host: &str) -> Result<Vec<Pinned>> {
    conn.rows(
        &format!(
            "SELECT {} FROM instance_actions a
             WHERE a.state = 'R' AND a.host = ?1 ORDER BY a.instance_id, a.action_id",
            pinned_columns("a")
        ),
        args![host],
        pinned_row,
    )
}

#[cfg(test)]
mod tests;
