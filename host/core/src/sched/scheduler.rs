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

use crate::plan::Element;
use crate::sched::clock::{self, wall};
use crate::sched::schedule::{GapPolicy, OverlapPolicy, Planned, Schedule};
use chrono::{DateTime, Duration, NaiveDateTime, Utc};
use chrono_tz::Tz;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The user scheduled instances run as.
pub const USER: &str = "scheduler";

/// A scheduled start this much later than planned is recorded as late.
pub const LATE_AFTER_SECONDS: i64 = 60;

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
    /// Whether an operator paused it (its starts pass, kept as missed).
    pub paused: bool,
    /// What it runs.
    pub elements: Vec<Element>,
    /// The elements among them that start halted.
    pub held: Vec<Element>,
    /// Its variables.
    pub variables: Vec<(String, String)>,
    /// `start_dt` as read.
    pub start_dt: String,
    /// The planned start it means.
    pub planned: Planned,
    /// The batches whose runs of the same schedule date it waits for.
    pub after: Vec<i64>,
    /// How many minutes past its planned start it waits for them at most.
    pub after_timeout_minutes: i64,
    /// `skip` or `start`, when they have not finished by then.
    pub after_timeout: String,
    /// Whether its runs exclude manual runs of their actions.
    pub exclusive: bool,
}

/// A new instance that the scheduler starts: recorded with the batch and its planned start,
/// and the batch's next planned start written in the same transaction, only if its planned
/// start is still `from` (else nothing is stored: the repository's conflict error).
#[derive(Debug, Clone)]
pub struct ScheduledStart {
    /// The batch.
    pub batch_id: i64,
    /// Its planned start as read (`start_dt`).
    pub from: String,
    /// Whether `from` meant the second occurrence of an ambiguous wall-clock time (both
    /// occurrences are the same text; the repository compares this too).
    pub from_second: bool,
    /// Its next planned start; `None` when there is none.
    pub next: Option<Planned>,
    /// How many seconds after its planned start it starts.
    pub late_seconds: i64,
}

/// A batch's planned start as stored, for the scheduler (which reads its schedule text).
#[derive(Debug, Clone)]
pub struct StoredStart {
    /// Batch id.
    pub batch_id: i64,
    /// Batch name.
    pub name: String,
    /// Its schedule's text, spring-gap and autumn-overlap policies.
    pub schedule: String,
    /// `springGap`.
    pub spring_gap: String,
    /// `autumnOverlap`.
    pub autumn_overlap: String,
    /// `ifRunning`: `skip` or `wait`.
    pub if_running: String,
    /// Whether it runs.
    pub enabled: bool,
    /// What it runs (its elements but those it skips now); `Err` when the stored elements
    /// cannot be read.
    pub elements: Result<Vec<Element>, String>,
    /// The elements among them that start halted.
    pub held: Vec<Element>,
    /// Its variables; `Err` when they cannot be read.
    pub variables: Result<Vec<(String, String)>, String>,
    /// The planned start as stored (`start_dt`, as text whatever was written into it);
    /// `None` for a batch without one (only [`PlannedStarts::batch_schedule`]).
    pub start_dt: Option<String>,
    /// Whether `start_dt` means the second occurrence of an ambiguous wall-clock time.
    pub second: bool,
    /// The batches whose runs of the same schedule date it waits for (`after`); `Err` when
    /// they cannot be read.
    pub after: Result<Vec<i64>, String>,
    /// `afterTimeoutMinutes`.
    pub after_timeout_minutes: i64,
    /// `afterTimeout`: `skip` or `start`.
    pub after_timeout: String,
    /// Whether its runs exclude manual runs of their actions (`manualRuns: exclude`).
    pub exclusive: bool,
    /// Whether an operator paused it (`PauseBatch`).
    pub paused: bool,
}

/// What the scheduler needs of the repository (`repo::Repository` implements it), so that
/// the scheduler does not depend on the repository.
pub trait PlannedStarts {
    /// The repository's error.
    type Error: std::fmt::Display;
    /// The planned starts at or before `until` (wall-clock text in the service zone),
    /// earliest first.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn due_starts(&self, until: &str) -> Result<Vec<StoredStart>, Self::Error>;
    /// A batch with its planned start, if the batch exists.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn batch_schedule(&self, batch_id: i64) -> Result<Option<StoredStart>, Self::Error>;
    /// Moves a planned start from `from` (as read; `from_second` when it meant the second
    /// occurrence of an ambiguous wall-clock time) to `next` (none: removed), recording
    /// the start as missed, with why, when `missed` says (in the same transaction, so that
    /// it is recorded once across hosts); `false`, with nothing written, when it changed
    /// meanwhile.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn advance_start(
        &self,
        batch_id: i64,
        from: &str,
        from_second: bool,
        next: Option<&Planned>,
        missed: Option<&Missed>,
    ) -> Result<bool, Self::Error>;
    /// Whether an instance of batch `batch_id` is running or waiting.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn batch_is_running(&self, batch_id: i64) -> Result<bool, Self::Error>;
    /// Whether batch `batch_id` has a finished run planned on `day` (`YYYY-MM-DD`).
    ///
    /// # Errors
    ///
    /// A repository error.
    fn finished_on(&self, batch_id: i64, day: &str) -> Result<bool, Self::Error>;
}

/// What starts a scheduled batch: the executor, which the server hands to the scheduler
/// (so that the scheduler does not depend on it).
pub trait Starter {
    /// The repository the planned starts are kept in.
    type Store: PlannedStarts;

    /// The repository whose planned starts the scheduler reads and moves.
    fn store(&self) -> &Self::Store;

    /// Starts `due`'s elements with its variables, as batch `due.name` and user [`USER`],
    /// recording `scheduled` with the new instance in one transaction; the instance id.
    ///
    /// # Errors
    ///
    /// Why it did not start; nothing was stored.
    /// Takes itself in its `Arc`, as the executor starts threads that keep it.
    fn start_scheduled(
        self: &Arc<Self>,
        due: &Due,
        scheduled: &ScheduledStart,
    ) -> Result<i64, NotStarted>;
}

/// Why a scheduled start did not happen (nothing was stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotStarted {
    /// The planned start changed meanwhile (a sheet moved it): the next tick decides again.
    Changed,
    /// Not now (the repository was busy or failed, or too many instances wait): the start
    /// stays, the next tick tries again.
    Later(String),
    /// Never (its elements no longer exist, or wait for each other in a cycle): the planned
    /// start passes, so that one broken batch does not block the others.
    Never(String),
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
pub fn candidates<S: PlannedStarts>(
    store: &S,
    local_now: NaiveDateTime,
) -> Result<Vec<Due>, S::Error> {
    let until = wall(local_now + Duration::hours(3));
    let mut out = Vec::new();
    for stored in store.due_starts(&until)? {
        let (id, start_dt) = (stored.batch_id, stored.start_dt.clone().unwrap_or_default());
        match due_of(stored) {
            Ok(d) => out.push(d),
            Err(e) => warn_once(id, &start_dt, &e),
        }
    }
    Ok(out)
}

/// The schedule of a stored planned start, or why it cannot be read.
pub fn schedule_of(s: &StoredStart) -> Result<Schedule, String> {
    Ok(Schedule {
        repeat: crate::sched::schedule::parse(&s.schedule).map_err(|e| e.message)?,
        gap: GapPolicy::parse(&s.spring_gap).unwrap_or_default(),
        overlap: OverlapPolicy::parse(&s.autumn_overlap).unwrap_or_default(),
    })
}

/// A stored planned start as the scheduler decides on it, or why it cannot be read.
fn due_of(s: StoredStart) -> Result<Due, String> {
    let schedule = schedule_of(&s)?;
    let start_dt = s.start_dt.unwrap_or_default();
    let local = clock::parse_wall(&start_dt)
        .ok_or_else(|| format!("start_dt `{start_dt}` is not YYYY-MM-DD HH:MM:SS"))?;
    Ok(Due {
        batch_id: s.batch_id,
        name: s.name,
        schedule,
        if_running: s.if_running,
        enabled: s.enabled,
        paused: s.paused,
        elements: s.elements?,
        held: s.held,
        variables: s.variables?,
        after: s.after?,
        after_timeout_minutes: s.after_timeout_minutes,
        after_timeout: s.after_timeout,
        exclusive: s.exclusive,
        planned: Planned {
            local,
            second: s.second,
        },
        start_dt,
    })
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

/// One pass: starts every batch that is due at `now`.
///
/// # Errors
///
/// A repository error (the tick stops; the next one tries again).
pub fn tick<S: Starter>(
    starter: &Arc<S>,
    zone: Tz,
    now: DateTime<Utc>,
) -> Result<Tick, <S::Store as PlannedStarts>::Error> {
    // One tick at a time: the scheduler's thread and `AdvanceClock` both tick, and a
    // tick's report must hold every start it made.
    static TICKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = TICKING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let repo = starter.store();
    let due = candidates(repo, now.with_timezone(&zone).naive_local())?;
    let mut report = Tick {
        looked_at: due.len(),
        ..Tick::default()
    };
    for d in due {
        let batch_id = d.batch_id;
        // One batch's stored data that no code foresaw must not keep the others from
        // starting: a panic is logged and the tick goes on with the next batch.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            one(starter, repo, zone, now, d, &mut report)
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
fn one<S: Starter>(
    starter: &Arc<S>,
    repo: &S::Store,
    zone: Tz,
    now: DateTime<Utc>,
    d: Due,
    report: &mut Tick,
) -> Result<(), <S::Store as PlannedStarts>::Error> {
    let when = d.schedule.due(zone, &d.planned);
    if when.is_some_and(|w| w > now) {
        return Ok(());
    }
    let next = d.schedule.next(zone, &d.planned, now);
    // The planned start moves on to the next without a run, kept as missed for `reason`
    // (none: unrecorded); whether this tick moved it.
    let pass = |reason: Option<MissedReason>| {
        let missed = reason.map(|reason| Missed {
            planned: d.planned.to_string(),
            reason,
            at: now,
        });
        repo.advance_start(
            d.batch_id,
            &d.start_dt,
            d.planned.second,
            next.as_ref(),
            missed.as_ref(),
        )
    };
    let Some(when) = when else {
        // A planned time the clocks skip, whose policy is to skip it. A disabled batch's
        // starts pass unrecorded, this one too.
        if pass(Some(MissedReason::ClockGap).filter(|_| d.enabled))? {
            tracing::info!(message = "A planned start the clocks skip passed (springGap skip).", batch_id = d.batch_id, planned = %d.planned);
            report.passed.push(d.batch_id);
        }
        return Ok(());
    };
    if !d.enabled {
        if pass(None)? {
            report.passed.push(d.batch_id);
        }
        return Ok(());
    }
    if d.paused {
        // Paused by an operator: the start passes, kept as missed, until resumed.
        if pass(Some(MissedReason::Paused))? {
            tracing::info!(message = "A scheduled start passed: the batch is paused.", batch_id = d.batch_id, planned = %d.planned);
            report.passed.push(d.batch_id);
        }
        return Ok(());
    }
    if !d.after.is_empty() {
        // The batches it runs after, by their runs of this start's day.
        let day = d.planned.local.date().to_string();
        let mut open = Vec::new();
        for b in &d.after {
            if !repo.finished_on(*b, &day)? {
                open.push(*b);
            }
        }
        if !open.is_empty() {
            let waited = (now - when).num_minutes();
            if waited < d.after_timeout_minutes {
                report.waiting.push(d.batch_id);
                return Ok(());
            }
            let why = format!(
                "batches {open:?} had not finished their runs of {day} within {} minutes",
                d.after_timeout_minutes
            );
            if d.after_timeout != "start" {
                if pass(Some(MissedReason::After(why.clone())))? {
                    tracing::warn!(message = "A scheduled start passed: the batches it runs after had not finished (afterTimeout skip).", batch_id = d.batch_id, planned = %d.planned, why = %why);
                    crate::metrics::scheduled_start_missed();
                    report.passed.push(d.batch_id);
                }
                return Ok(());
            }
            tracing::warn!(message = "A scheduled batch starts without the batches it runs after (afterTimeout start).", batch_id = d.batch_id, planned = %d.planned, why = %why);
        }
    }
    if repo.batch_is_running(d.batch_id)? {
        if d.if_running == "wait" {
            report.waiting.push(d.batch_id);
        } else if pass(Some(MissedReason::Running))? {
            tracing::warn!(message = "A scheduled start passed: the batch's previous run has not finished (ifRunning skip).", batch_id = d.batch_id, planned = %d.planned);
            crate::metrics::scheduled_start_missed();
            report.passed.push(d.batch_id);
        }
        return Ok(());
    }
    let late = (now - when).num_seconds().max(0);
    let planned_text = d.planned.to_string();
    let scheduled = ScheduledStart {
        batch_id: d.batch_id,
        from: d.start_dt.clone(),
        from_second: d.planned.second,
        next,
        late_seconds: late,
    };
    let started = starter.start_scheduled(&d, &scheduled);
    match started {
        Ok(id) => {
            crate::metrics::scheduled_start((now - when).num_milliseconds().max(0) as f64 / 1000.0);
            if late > LATE_AFTER_SECONDS {
                tracing::warn!(message = "A scheduled batch started late.", batch_id = d.batch_id, batch_instance_id = id, planned = %planned_text, late_seconds = late);
            } else {
                tracing::info!(message = "A scheduled batch started.", batch_id = d.batch_id, batch_instance_id = id, planned = %planned_text);
            }
            report.started.push((d.batch_id, id));
        }
        Err(NotStarted::Changed) => {}
        Err(NotStarted::Later(e)) => {
            // The repository was busy or failed, or too many instances wait: the start
            // stays, the next tick retries.
            tracing::warn!(message = "A scheduled batch could not start yet; the next tick tries again.", batch_id = d.batch_id, planned = %planned_text, error = %e);
        }
        Err(NotStarted::Never(e)) => {
            // The elements no longer exist, or form a cycle: the start passes, with the
            // reason in the log, so that one broken batch does not block the others.
            tracing::error!(message = "A scheduled batch could not start; its planned start passes.", batch_id = d.batch_id, planned = %planned_text, error = %e);
            if pass(Some(MissedReason::CannotStart(e.to_string())))? {
                report.passed.push(d.batch_id);
            }
        }
    }
    Ok(())
}

/// A planned start that passed without a run, as the repository keeps it for the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missed {
    /// The planned start, wall-clock text in the service zone.
    pub planned: String,
    /// Why it passed.
    pub reason: MissedReason,
    /// When it was passed, on the service clock.
    pub at: DateTime<Utc>,
}

/// Why a planned start passed without a run (a disabled batch's starts are not kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MissedReason {
    /// The batch's previous run had not finished (`ifRunning: skip`).
    Running,
    /// The clocks skip the planned time (`springGap: skip`).
    ClockGap,
    /// The batch could not start: its elements are gone or form a cycle.
    CannotStart(String),
    /// The batches it runs after had not finished their runs of its day in time
    /// (`afterTimeout: skip`).
    After(String),
    /// An operator paused the batch (`PauseBatch`).
    Paused,
}

impl std::fmt::Display for MissedReason {
    /// As stored: `running`, `clockGap`, `paused`, `after: ` and why, or `cannotStart: `
    /// and the error.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MissedReason::Running => f.write_str("running"),
            MissedReason::ClockGap => f.write_str("clockGap"),
            MissedReason::CannotStart(e) => write!(f, "cannotStart: {e}"),
            MissedReason::After(e) => write!(f, "after: {e}"),
            MissedReason::Paused => f.write_str("paused"),
        }
    }
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
pub fn spawn(
    starter: Arc<impl Starter + Send + Sync + 'static>,
    period: std::time::Duration,
) -> std::io::Result<Handle> {
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
                    tick(&starter, t.zone, t.clock.now())
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

/// A batch's next planned starts, as `NextRuns` answers them.
pub use weft_protocol::schedules::{NextRuns, NextStart};

/// The next `count` planned starts of batch `id` (from its current planned start), for
/// `NextRuns`: `None` when the batch does not exist.
///
/// # Errors
///
/// A repository error (a schedule or planned start that cannot be read is a `problem`).
pub fn next_runs<S: PlannedStarts>(
    store: &S,
    id: i64,
    count: usize,
    zone: Tz,
) -> Result<Option<NextRuns>, S::Error> {
    let Some(stored) = store.batch_schedule(id)? else {
        return Ok(None);
    };
    let (starts, problem) = match (
        schedule_of(&stored),
        stored
            .start_dt
            .as_deref()
            .map(|t| (t, clock::parse_wall(t))),
    ) {
        // A schedule or a planned start that cannot be read: say which, and what to do.
        (Err(e), _) => (
            Vec::new(),
            Some(format!(
                "the stored schedule `{}` cannot be read, so the batch does not run: {e}; deploy the batch again",
                stored.schedule
            )),
        ),
        (Ok(_), Some((bad, None))) => (
            Vec::new(),
            Some(format!(
                "start_dt `{bad}` is not a planned start, so the batch does not run; {}",
                fix_for(id)
            )),
        ),
        (Ok(_), None) => (Vec::new(), None),
        (Ok(schedule), Some((_, Some(local)))) => {
            let first = Planned {
                local,
                second: stored.second,
            };
            let starts = schedule
                .upcoming(zone, &first, count)
                .into_iter()
                .map(|u| {
                    let offset = Duration::seconds(i64::from(u.offset_seconds));
                    NextStart {
                        planned: wall(u.planned.local),
                        second_occurrence: u.planned.second,
                        local: (u.due + offset)
                            .naive_utc()
                            .format("%Y-%m-%d %H:%M:%S")
                            .to_string(),
                        utc: u.due.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                        utc_offset: chrono::FixedOffset::east_opt(u.offset_seconds)
                            .map(|o| o.to_string()),
                        clock_change: u.clock_change,
                    }
                })
                .collect();
            (starts, None)
        }
    };
    Ok(Some(NextRuns {
        batch_id: id,
        name: stored.name,
        schedule: stored.schedule,
        spring_gap: stored.spring_gap,
        autumn_overlap: stored.autumn_overlap,
        enabled: stored.enabled,
        paused: stored.paused,
        time_zone: zone.name().to_owned(),
        starts,
        problem,
    }))
}
