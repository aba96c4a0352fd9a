//! Backfills: a batch run once per planned start of its schedule over a range of dates, each
//! instance with that planned start (so its `${schedule_date}` and `${planned_start}` are
//! that day's), started in order, at most `parallel` at a time.
//!
//! [`Executor::backfill`] computes the planned starts and records them in the repository;
//! nothing runs yet. Every host's backfill thread ([`Executor::drive_backfills`], woken at
//! each change to instances and once a second) starts the next ones whenever a backfill
//! has a place free; the transaction that stores an instance claims its start, so a start
//! begins once whichever host gets there and whatever is killed when. A start that can
//! never begin (its elements are gone) keeps why, and the backfill goes on.

use super::batch::{Executor, RunRequest, StartError};
use chrono::{NaiveDate, NaiveTime};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use weft_core::sched::clock;
use weft_core::sched::scheduler::{PlannedStarts as _, schedule_of};
use weft_repo::{self as repo, InstanceStore as _, SheetStore as _};

/// The most planned starts one backfill holds.
pub const MAX_STARTS: usize = 10_000;

/// The most instances of one backfill at a time.
pub const MAX_PARALLEL: i64 = 64;

/// A batch named by id or name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchRef {
    /// Its id.
    Id(i64),
    /// Its name.
    Name(String),
}

/// A backfill asked for.
#[derive(Debug, Clone)]
pub struct Backfill {
    /// The batch.
    pub batch: BatchRef,
    /// The first day (service zone).
    pub from: NaiveDate,
    /// The last day, included.
    pub to: NaiveDate,
    /// Instances at a time.
    pub parallel: i64,
    /// Who asked.
    pub user: String,
}

/// A backfill recorded.
#[derive(Debug, Clone)]
pub struct Backfilled {
    /// Its id.
    pub backfill_id: i64,
    /// The batch.
    pub batch_id: i64,
    /// The batch's name (its instances' `batchName`).
    pub batch_name: String,
    /// The planned starts, wall-clock text in the service zone, in the order they run.
    pub planned: Vec<String>,
}

impl Executor {
    /// The id of the batch `batch` names (an id as it is: whether it exists is the caller's
    /// to find); `to` says what the caller does with it, for the message when a name is
    /// several batches'.
    ///
    /// # Errors
    ///
    /// [`StartError::NotFound`] for a name no batch has, [`StartError::Conflict`] for a name
    /// several batches have.
    pub fn batch_id(&self, batch: &BatchRef, to: &str) -> Result<i64, StartError> {
        let name = match batch {
            BatchRef::Id(id) => return Ok(*id),
            BatchRef::Name(name) => name,
        };
        let found: Vec<i64> = self
            .repo
            .batches()?
            .into_iter()
            .filter(|x| x.name == *name)
            .map(|x| x.batch_id)
            .collect();
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(StartError::NotFound(format!("no batch is named `{name}`"))),
            many => Err(StartError::Conflict(format!(
                "{} batches are named `{name}` (ids {many:?}); name the one to {to} by its id",
                many.len()
            ))),
        }
    }

    /// Records a backfill of `b.batch` over the days `b.from` to `b.to`: one instance per
    /// planned start of its schedule on those days, started in order, `b.parallel` at a
    /// time, by whichever host has a place. Answers at once.
    ///
    /// # Errors
    ///
    /// [`StartError::NotFound`] for a batch that does not exist, [`StartError::Conflict`]
    /// for a name several batches have, a schedule that cannot be read, no planned start in
    /// the range, or more than [`MAX_STARTS`].
    pub fn backfill(&self, b: &Backfill) -> Result<Backfilled, StartError> {
        let id = self.batch_id(&b.batch, "backfill")?;
        let stored = self
            .repo
            .batch_schedule(id)?
            .ok_or_else(|| StartError::NotFound(format!("batch {id} does not exist")))?;
        let schedule = schedule_of(&stored).map_err(|e| {
            StartError::Conflict(format!("the schedule of batch {id} cannot be read: {e}"))
        })?;
        let time = clock::current();
        let zone = time.zone;
        // From the first instant of `from` (in the service zone), every planned start whose
        // day is at most `to`.
        let first = b
            .from
            .and_time(NaiveTime::MIN)
            .and_local_timezone(zone)
            .earliest()
            .map(|t| t.with_timezone(&chrono::Utc) - chrono::Duration::seconds(1))
            .ok_or_else(|| StartError::Conflict(format!("{} has no start in {zone}", b.from)))?;
        let mut planned = Vec::new();
        let mut after = first;
        while let Some(p) = schedule.first_after(zone, after) {
            if p.local.date() > b.to {
                break;
            }
            if planned.len() == MAX_STARTS {
                return Err(StartError::Conflict(format!(
                    "the range holds more than {MAX_STARTS} planned starts of batch {id} ({}); backfill a shorter range",
                    stored.schedule
                )));
            }
            planned.push(clock::wall(p.local));
            match schedule.due(zone, &p) {
                Some(due) if due > after => after = due,
                _ => break,
            }
        }
        if planned.is_empty() {
            return Err(StartError::Conflict(format!(
                "batch {id} ({}) has no planned start from {} to {}",
                stored.schedule, b.from, b.to
            )));
        }
        let parallel = b.parallel.clamp(1, MAX_PARALLEL);
        let backfill_id =
            self.repo
                .create_backfill((id, &stored.name), &b.user, parallel, &planned)?;
        tracing::info!(
            message = "Backfill recorded.",
            backfill = backfill_id,
            batch = id,
            starts = planned.len(),
            parallel
        );
        self.backfills_due.store(true, Ordering::SeqCst);
        self.changes.changed();
        Ok(Backfilled {
            backfill_id,
            batch_id: id,
            batch_name: stored.name,
            planned,
        })
    }

    /// Starts the starts of backfills that may begin now; what cannot start now stays for
    /// the next round.
    pub fn drive_backfills(&self) {
        let pending = match self.repo.backfill_pending() {
            Ok((p, left)) => {
                self.backfills_due.store(left, Ordering::SeqCst);
                p
            }
            Err(e) => {
                tracing::warn!(message = "Reading the backfills failed; trying again.", error = %e);
                return;
            }
        };
        for p in pending {
            let batch = match self.repo.batch_schedule(p.start.batch_id) {
                Ok(Some(b)) => b,
                Ok(None) => {
                    self.backfill_never(&p.start, "its batch no longer exists");
                    continue;
                }
                Err(e) => {
                    tracing::warn!(message = "Reading a backfill's batch failed; trying again.", error = %e);
                    return;
                }
            };
            let (Ok(elements), Ok(variables)) = (batch.elements, batch.variables) else {
                self.backfill_never(&p.start, "its batch's elements or variables cannot be read");
                continue;
            };
            let req = RunRequest {
                batch_name: p.batch_name.clone(),
                user: p.user.clone(),
                elements,
                variables,
                select: weft_protocol::Selection::Named,
                held: batch.held,
                exclusion: if batch.exclusive {
                    weft_repo::model::Exclusion::Batch
                } else {
                    weft_repo::model::Exclusion::None
                },
            };
            match self.start_once(&req, None, Some(&p.start)) {
                Ok(id) => {
                    crate::fault::hit(crate::fault::AFTER_BACKFILL_START);
                    tracing::info!(
                        message = "Backfill start began.",
                        backfill = p.start.backfill_id,
                        planned_start = %p.start.planned_start,
                        batch_instance_id = id
                    );
                }
                // Begun elsewhere, or no place free any more: the next round decides.
                Err(StartError::Repo(repo::Error::Conflict(_) | repo::Error::Redeployed(_))) => {}
                Err(e @ (StartError::Busy(_) | StartError::Repo(_) | StartError::Excluded(_))) => {
                    tracing::debug!(message = "A backfill start waits.", error = %e);
                    return;
                }
                Err(e) => self.backfill_never(&p.start, &e.to_string()),
            }
        }
    }

    fn backfill_never(&self, start: &weft_repo::model::BackfillStart, why: &str) {
        tracing::warn!(
            message = "A backfill start cannot begin; the backfill goes on with the next.",
            backfill = start.backfill_id,
            planned_start = %start.planned_start,
            error = why
        );
        if let Err(e) = self.repo.backfill_failed(start, why) {
            tracing::warn!(message = "Recording why a backfill start cannot begin failed.", error = %e);
        }
    }

    /// The thread that starts backfills' instances on this host, until the executor stops.
    ///
    /// # Errors
    ///
    /// The thread could not be made.
    pub(super) fn spawn_backfills(self: &Arc<Self>) -> std::io::Result<()> {
        let weak = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("weft-backfills".to_owned())
            .spawn(move || backfills(&weak))?;
        Ok(())
    }
}

/// Drives the backfills: at each change to instances this host knows of while backfills
/// have starts waiting for a place (an instance that ends frees one), else once a second
/// (another host's new backfill on a shared repository).
fn backfills(exec: &Weak<Executor>) {
    let mut seen;
    let mut last = std::time::Instant::now();
    loop {
        let (changes, due) = {
            let Some(me) = exec.upgrade() else { return };
            if me.local().stopped {
                return;
            }
            seen = me.changes.count();
            if me.backfills_due.load(Ordering::SeqCst) || last.elapsed().as_secs() >= 1 {
                last = std::time::Instant::now();
                me.drive_backfills();
            }
            (
                Arc::clone(&me.changes),
                me.backfills_due.load(Ordering::SeqCst),
            )
        };
        let patience = if due {
            std::time::Duration::from_secs(1)
        } else {
            std::time::Duration::from_millis(1000).saturating_sub(last.elapsed())
        };
        changes.wait_past(seen, patience.max(std::time::Duration::from_millis(10)));
    }
}
