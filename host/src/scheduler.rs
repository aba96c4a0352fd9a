//! The scheduler: starts batches when their planned start comes.
//!
//! Every tick (about a second) it reads `service_batch_next_run`, so that an `UPDATE` made
//! by a sheet (the DST procedure of SPEC 4.7) is honoured at once. A batch whose planned
//! start is due runs through the same path as `RunElements` (its name as `batchName`, user
//! `scheduler`), and its next planned start, computed from the schedule and the previous
//! planned start, is written in the same transaction that records the new instance: a kill
//! between the two can neither lose nor repeat a start. The write checks that `start_dt` is
//! still what was read; if a sheet changed it meanwhile, nothing happens and the next tick
//! decides again.
//!
//! A start missed while the server was down runs once, late (recorded on the instance), and
//! the next planned start is the first one after now. A disabled batch's planned starts pass
//! without running; so do those of a batch whose previous run is still going when its
//! `ifRunning` is `skip` (with `wait` it starts, late, when that run ends).

use crate::clock::{self, wall};
use crate::exec::batch::{Element, Executor, RunRequest};
use crate::repo::{self, Repository, instances};
use crate::schedule::{GapPolicy, OverlapPolicy, Planned, Schedule};
use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use rusqlite::{OptionalExtension, params};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The user scheduled instances run as.
pub const USER: &str = "scheduler";

pub use crate::repo::instances::LATE_AFTER_SECONDS;

/// A scheduled batch as the scheduler reads it.
#[derive(Debug, Clone)]
pub struct Due {
    /// Batch id.
    pub batch_id: i64,
    /// Batch name.
    pub name: String,
    /// Its schedule with its policies.
    pub schedule: Schedule,
    /// `skip` or `wait`.
    pub if_running: String,
    /// Whether it runs.
    pub enabled: bool,
    /// What it runs.
    pub elements: Vec<Element>,
    /// Its variables.
    pub variables: Vec<(String, String)>,
    /// `start_dt` as read.
    pub start_dt: String,
    /// The planned start it means.
    pub planned: Planned,
}

/// What one tick did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tick {
    /// Batches started, with their instance ids.
    pub started: Vec<(i64, i64)>,
    /// Batches whose planned start passed without a run (disabled, skipped gap, still running).
    pub passed: Vec<i64>,
    /// Batches waiting for their previous run to end.
    pub waiting: Vec<i64>,
    /// Planned starts looked at.
    pub looked_at: usize,
}

/// Reads the batches whose planned start is at most three hours ahead of `local_now`:
/// wall-clock text compares as time, and a start can be due while its wall-clock time is
/// still ahead of now's only by the hour (rarely two) that the clocks go back in autumn.
///
/// # Errors
///
/// A repository error; a batch whose stored schedule cannot be read is logged and left out.
pub fn candidates(conn: &rusqlite::Connection, local_now: &str) -> repo::Result<Vec<Due>> {
    // `start_dt` as text whatever was written into it (an UPDATE can leave a number).
    let sql = "SELECT b.id, b.name, b.schedule, b.spring_gap, b.autumn_overlap, b.if_running, b.enabled, b.elements, b.variables, b.second_of, CAST(n.start_dt AS TEXT) \
               FROM service_batch_next_run n JOIN batches b ON b.id = n.batch_id \
               WHERE replace(n.start_dt, 'T', ' ') <= datetime(?1, '+3 hours') ORDER BY n.start_dt, b.id";
    let mut st = conn
        .prepare_cached(sql)
        .map_err(|e| repo::Error::with_sql(e, sql))?;
    type Row = (
        i64,
        String,
        String,
        String,
        String,
        String,
        bool,
        String,
        String,
        Option<String>,
        String,
    );
    let rows: Vec<Row> = st
        .query_map([local_now], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
                r.get(8)?,
                r.get(9)?,
                r.get(10)?,
            ))
        })
        .and_then(|rows| rows.collect())
        .map_err(|e| repo::Error::with_sql(e, sql))?;
    let mut out = Vec::with_capacity(rows.len());
    for (
        id,
        name,
        when,
        gap,
        overlap,
        if_running,
        enabled,
        elements,
        variables,
        second_of,
        start_dt,
    ) in rows
    {
        let read = || -> Result<Due, String> {
            let repeat = crate::schedule::parse(&when).map_err(|e| e.message)?;
            let local = clock::parse_wall(&start_dt)
                .ok_or_else(|| format!("start_dt `{start_dt}` is not YYYY-MM-DD HH:MM:SS"))?;
            Ok(Due {
                batch_id: id,
                name: name.clone(),
                schedule: Schedule {
                    repeat,
                    gap: GapPolicy::parse(&gap).unwrap_or_default(),
                    overlap: OverlapPolicy::parse(&overlap).unwrap_or_default(),
                },
                if_running: if_running.clone(),
                enabled,
                elements: serde_json::from_str(&elements).map_err(|e| e.to_string())?,
                variables: serde_json::from_str(&variables).map_err(|e| e.to_string())?,
                planned: Planned {
                    local,
                    second: second_of.as_deref() == Some(start_dt.as_str()),
                },
                start_dt: start_dt.clone(),
            })
        };
        match read() {
            Ok(d) => out.push(d),
            Err(e) => warn_once(id, &start_dt, &e),
        }
    }
    Ok(out)
}

/// Logs that batch `id` cannot run, once per stored `start_dt` value (the scheduler looks
/// every second; the log says it once, and again when the value changes).
fn warn_once(id: i64, start_dt: &str, why: &str) {
    static WARNED: std::sync::Mutex<Option<std::collections::HashMap<i64, String>>> =
        std::sync::Mutex::new(None);
    let mut warned = WARNED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let map = warned.get_or_insert_with(Default::default);
    if map.get(&id).map(String::as_str) != Some(start_dt) {
        map.insert(id, start_dt.to_owned());
        tracing::error!(
            message = "A scheduled batch cannot be read; it does not run until this is fixed.",
            batch_id = id,
            start_dt,
            error = %why,
            fix = %fix_for(id)
        );
    }
}

/// How to write a planned start by hand.
fn fix_for(id: i64) -> String {
    format!(
        "write the planned start as wall-clock text YYYY-MM-DD HH:MM:SS in the service time zone, e.g. UPDATE service_batch_next_run SET start_dt = '2026-11-21 22:00:00' WHERE batch_id = {id} (SQLite's datetime(start_dt, '+1 day') keeps that form; start_dt + 1 does not)"
    )
}

/// Moves a batch's planned start from `from` (as read) to `next`; `false` when `start_dt`
/// changed meanwhile (then nothing is written).
///
/// # Errors
///
/// A repository error.
pub fn advance(
    conn: &rusqlite::Connection,
    batch_id: i64,
    from: &str,
    next: Option<Planned>,
) -> repo::Result<bool> {
    let changed = match next {
        Some(n) => {
            let text = wall(n.local);
            let changed = conn.execute(
                "UPDATE service_batch_next_run SET start_dt = ?3 WHERE batch_id = ?1 AND start_dt = ?2",
                params![batch_id, from, text],
            )?;
            conn.execute(
                "UPDATE batches SET second_of = ?2 WHERE id = ?1",
                params![batch_id, n.second.then_some(text)],
            )?;
            changed
        }
        None => conn.execute(
            "DELETE FROM service_batch_next_run WHERE batch_id = ?1 AND start_dt = ?2",
            params![batch_id, from],
        )?,
    };
    Ok(changed == 1)
}

fn is_running(conn: &rusqlite::Connection, batch_id: i64) -> repo::Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM batch_instances WHERE batch_id = ?1 AND state IN (?2, ?3) LIMIT 1",
            params![
                batch_id,
                instances::state::RUNNING,
                instances::state::WAITING
            ],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// One pass: starts every batch that is due at `now`.
///
/// # Errors
///
/// A repository error (the tick stops; the next one tries again).
pub fn tick(exec: &Arc<Executor>, zone: Tz, now: DateTime<Utc>) -> repo::Result<Tick> {
    // One tick at a time: the scheduler's thread and `AdvanceClock` both tick, and a
    // tick's report must hold every start it made.
    static TICKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = TICKING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let repo: &Arc<Repository> = exec.repo();
    let local_now = wall(now.with_timezone(&zone).naive_local());
    let due = repo.with(|c| candidates(c, &local_now))?;
    let mut report = Tick {
        looked_at: due.len(),
        ..Tick::default()
    };
    for d in due {
        let batch_id = d.batch_id;
        // One batch's stored data that no code foresaw must not keep the others from
        // starting: a panic is logged and the tick goes on with the next batch.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            one(exec, repo, zone, now, d, &mut report)
        })) {
            Ok(result) => result?,
            Err(_) => {
                tracing::error!(
                    message =
                        "Deciding on a scheduled batch panicked; it is passed over in this tick.",
                    batch_id
                );
            }
        }
    }
    Ok(report)
}

/// Decides on one candidate of a tick.
fn one(
    exec: &Arc<Executor>,
    repo: &Arc<Repository>,
    zone: Tz,
    now: DateTime<Utc>,
    d: Due,
    report: &mut Tick,
) -> repo::Result<()> {
    let when = d.schedule.due(zone, &d.planned);
    if when.is_some_and(|w| w > now) {
        return Ok(());
    }
    let next = d.schedule.next(zone, &d.planned, now);
    let Some(when) = when else {
        // A planned time the clocks skip, whose policy is to skip it.
        if repo.tx(|c| advance(c, d.batch_id, &d.start_dt, next))? {
            tracing::info!(message = "A planned start the clocks skip passed (springGap skip).", batch_id = d.batch_id, planned = %d.planned);
            report.passed.push(d.batch_id);
        }
        return Ok(());
    };
    if !d.enabled {
        if repo.tx(|c| advance(c, d.batch_id, &d.start_dt, next))? {
            report.passed.push(d.batch_id);
        }
        return Ok(());
    }
    if repo.with(|c| is_running(c, d.batch_id))? {
        if d.if_running == "wait" {
            report.waiting.push(d.batch_id);
        } else if repo.tx(|c| advance(c, d.batch_id, &d.start_dt, next))? {
            tracing::warn!(message = "A scheduled start passed: the batch's previous run has not finished (ifRunning skip).", batch_id = d.batch_id, planned = %d.planned);
            report.passed.push(d.batch_id);
        }
        return Ok(());
    }
    let late = (now - when).num_seconds().max(0);
    let req = RunRequest {
        batch_name: d.name.clone(),
        user: USER.to_owned(),
        elements: d.elements.clone(),
        variables: d.variables.clone(),
    };
    let planned_text = d.planned.to_string();
    let started = exec.start_with(req, |c, id| {
        if !advance(c, d.batch_id, &d.start_dt, next)? {
            return Err(repo::Error::Conflict(format!(
                "the planned start of batch {} changed while it was being started",
                d.batch_id
            )));
        }
        c.execute(
            "UPDATE batch_instances SET batch_id = ?2, planned_start = ?3, late_seconds = ?4 WHERE id = ?1",
            params![id, d.batch_id, d.start_dt, late],
        )?;
        Ok(())
    });
    match started {
        Ok(id) => {
            if late > LATE_AFTER_SECONDS {
                tracing::warn!(message = "A scheduled batch started late.", batch_id = d.batch_id, batch_instance_id = id, planned = %planned_text, late_seconds = late);
            } else {
                tracing::info!(message = "A scheduled batch started.", batch_id = d.batch_id, batch_instance_id = id, planned = %planned_text);
            }
            report.started.push((d.batch_id, id));
        }
        Err(crate::exec::batch::StartError::Repo(repo::Error::Conflict(_))) => {}
        Err(
            e @ (crate::exec::batch::StartError::Repo(_) | crate::exec::batch::StartError::Busy(_)),
        ) => {
            // The repository was busy or failed, or too many instances wait: the start
            // stays, the next tick retries.
            tracing::warn!(message = "A scheduled batch could not start yet; the next tick tries again.", batch_id = d.batch_id, planned = %planned_text, error = %e);
        }
        Err(e) => {
            // The elements no longer exist, or form a cycle: the start passes, with the
            // reason in the log, so that one broken batch does not block the others.
            tracing::error!(message = "A scheduled batch could not start; its planned start passes.", batch_id = d.batch_id, planned = %planned_text, error = %e);
            if repo.tx(|c| advance(c, d.batch_id, &d.start_dt, next))? {
                report.passed.push(d.batch_id);
            }
        }
    }
    Ok(())
}

/// The scheduler's thread; stops when dropped.
#[derive(Debug)]
pub struct Handle {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts the scheduler on its own thread, ticking every `period` on the service clock.
///
/// # Errors
///
/// When the thread cannot be started.
pub fn spawn(exec: Arc<Executor>, period: std::time::Duration) -> std::io::Result<Handle> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("weft-scheduler".to_owned())
        .spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                let t = clock::current();
                // A panic in one tick (a bug, or stored data no code foresaw) must not end
                // scheduling for good: it is logged, and the next tick tries again.
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    tick(&exec, t.zone, t.clock.now())
                })) {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => {
                        tracing::error!(message = "A scheduler tick failed; the next one tries again.", error = %e);
                    }
                    Err(panic) => {
                        let what = weft_sdk::panic_message(panic.as_ref());
                        tracing::error!(message = "A scheduler tick panicked; the next one tries again.", panic = %what);
                    }
                }
                // Sleep in short steps, so that a stop is quick.
                let mut slept = std::time::Duration::ZERO;
                while slept < period && !flag.load(Ordering::SeqCst) {
                    let step = (period - slept).min(std::time::Duration::from_millis(100));
                    std::thread::sleep(step);
                    slept += step;
                }
            }
        })?;
    Ok(Handle {
        stop,
        thread: Some(thread),
    })
}

/// The next `count` planned starts of batch `id` (from its current planned start), for
/// `NextRuns`: `None` when the batch does not exist.
///
/// # Errors
///
/// A repository error.
pub fn next_runs(
    conn: &rusqlite::Connection,
    id: i64,
    count: usize,
    zone: Tz,
) -> repo::Result<Option<serde_json::Value>> {
    type Row = (
        String,
        String,
        String,
        String,
        bool,
        Option<String>,
        Option<String>,
    );
    let row: Option<Row> = conn
        .query_row(
            "SELECT b.name, b.schedule, b.spring_gap, b.autumn_overlap, b.enabled, b.second_of, CAST(n.start_dt AS TEXT) FROM batches b LEFT JOIN service_batch_next_run n ON n.batch_id = b.id WHERE b.id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)),
        )
        .optional()?;
    let Some((name, when, gap, overlap, enabled, second_of, start_dt)) = row else {
        return Ok(None);
    };
    let schedule = Schedule {
        repeat: crate::schedule::parse(&when).map_err(|e| repo::Error::Corrupt(e.message))?,
        gap: GapPolicy::parse(&gap).unwrap_or_default(),
        overlap: OverlapPolicy::parse(&overlap).unwrap_or_default(),
    };
    let starts: Vec<serde_json::Value> = match start_dt.as_deref().and_then(clock::parse_wall) {
        Some(local) => {
            let first = Planned {
                local,
                second: second_of.is_some() && second_of == start_dt,
            };
            schedule
                .upcoming(zone, &first, count)
                .into_iter()
                .map(|u| {
                    let offset = Duration::seconds(i64::from(u.offset_seconds));
                    serde_json::json!({
                        "planned": wall(u.planned.local),
                        "secondOccurrence": u.planned.second,
                        "local": (u.due + offset).naive_utc().format("%Y-%m-%d %H:%M:%S").to_string(),
                        "utc": u.due.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                        "utcOffset": chrono::FixedOffset::east_opt(u.offset_seconds).map(|o| o.to_string()),
                        "clockChange": u.clock_change,
                    })
                })
                .collect()
        }
        None => Vec::new(),
    };
    let mut answer = serde_json::json!({
        "batchId": id,
        "name": name,
        "schedule": when,
        "springGap": gap,
        "autumnOverlap": overlap,
        "enabled": enabled,
        "timeZone": zone.name(),
        "starts": starts,
    });
    // A planned start that is not one: say which value and what to write instead.
    if let Some(bad) = start_dt.filter(|t| clock::parse_wall(t).is_none()) {
        answer["problem"] = format!(
            "start_dt `{bad}` is not a planned start, so the batch does not run; {}",
            fix_for(id)
        )
        .into();
    }
    Ok(Some(answer))
}

#[cfg(test)]
mod tests;
