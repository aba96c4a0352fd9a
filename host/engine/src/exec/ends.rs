//! Recording how actions ended, and settling the ones whose end was never recorded: an
//! end is tried again while the repository fails (it must not be lost); an action a stopped
//! server or host left running is settled by its commit markers (finished where its target
//! committed, run again where nothing did, failed where that cannot be told).

use super::action::Ran;
use super::batch::{Executor, HOST_STOP, SERVER_STOP, StartError, attempt_of};
use super::error::{Stopped, Unrunnable, Unsettled, Untold};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use weft_repo::InstanceStore as _;
use weft_repo::model::ActionEnd;
use weft_repo::work::{Claimed, Ended, Settle};

impl Executor {
    /// Records how a claimed action ended (trying again while the repository fails: the
    /// end is known and must not be lost; its slot is held meanwhile). With `next`, the
    /// slot it held is taken again in the same transaction: a ready action is claimed for
    /// it, and answered with the lease epoch taken before the claim (a loss of the lease
    /// after it stops the action), unless the host is paused or stopping (asked again at
    /// each attempt). When the end made more actions ready than it claimed, the worker is
    /// rung for the free slots.
    pub(super) fn finished(&self, c: &Claimed, ran: &Ran, next: bool) -> Option<(Claimed, u64)> {
        let error = ran.outcome.as_ref().err().map(ToString::to_string);
        let (o, halted) = match &ran.outcome {
            Ok(o) => (*o, false),
            // What a failed process module said it handled before it failed.
            Err(Stopped::Failed { message, partial }) => {
                // Its batch, read for the log alone: failures are few.
                let info = self.repo.instance_info(c.instance).ok().flatten();
                let batch = info.as_ref().map_or("", |i| i.batch_name.as_str());
                let action = c.plan.as_ref().map_or("", |p| p.name.as_str());
                tracing::warn!(message = "An action failed.", batch = batch, batch_instance_id = c.instance, action_id = c.action, action = action, attempt = c.attempt, error = %message);
                (*partial, false)
            }
            Err(e @ Stopped::Halted { partial, .. }) => {
                tracing::info!(message = "An action was halted.", batch_instance_id = c.instance, action_id = c.action, error = %e);
                (*partial, true)
            }
        };
        let abandoned = halted && self.local().abandoned.contains(&c.instance);
        // Whether the slot is taken again: asked at each attempt, as the host may be paused
        // while the repository fails. An attempt that may claim counts as passing until its
        // answer (the worker's look for strays waits for none under way).
        let claim = || {
            let mut l = self.local();
            let ask = next && !abandoned && l.open && !l.stopped && l.running <= self.limit;
            l.passing += usize::from(ask);
            usize::from(ask)
        };
        let mut epoch = 0;
        let end = ActionEnd {
            error: error.as_deref(),
            halted,
            rows_read: o.rows_read,
            rows_written: o.rows_written,
            rows_updated: o.rows_updated,
            rows_deleted: o.rows_deleted,
            log: &ran.log,
            class: ran.class,
            untouched: ran.untouched,
        };
        let patience = Duration::from_millis(self.write_patience_ms.load(Ordering::SeqCst));
        let since = Instant::now();
        let mut pause = Duration::from_millis(20);
        // Whether an attempt failed: it may have been recorded all the same.
        let mut answer_lost = false;
        let ended = loop {
            let recorded = if abandoned {
                self.repo
                    .settled(
                        &self.host,
                        c,
                        &Settle::Rerun,
                        "stopped: its host lost its lease; it runs again",
                        true,
                    )
                    .map(|ended| (ended, Vec::new()))
            } else {
                // Taken before the claim: a loss of the lease after it stops what it claims.
                epoch = self.lease_epoch.load(Ordering::SeqCst);
                let asked = claim();
                // A panic on the way still ends the passing (the pool catches it).
                let recorded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    self.repo
                        .end_action(&self.host, c.instance, c.action, c.attempt, &end, asked)
                }))
                .unwrap_or_else(|p| {
                    if asked > 0 {
                        let mut l = self.local();
                        l.passing -= 1;
                        l.claim_lost();
                    }
                    std::panic::resume_unwind(p)
                })
                .and_then(|(ended, claimed)| {
                    if !claimed.is_empty() && crate::fault::once(crate::fault::END_ANSWER_LOST) {
                        return Err(weft_repo::Error::Corrupt(format!(
                            "fault {}: the answer of the end's commit was lost",
                            crate::fault::END_ANSWER_LOST
                        )));
                    }
                    Ok((ended, claimed))
                });
                if asked > 0 {
                    let mut l = self.local();
                    l.passing -= 1;
                    match &recorded {
                        // Held from now on: its slot is this one.
                        Ok((_, claimed)) => {
                            l.held.extend(claimed.iter().map(attempt_of));
                        }
                        // It may have committed, claiming an action that nothing runs.
                        Err(_) => l.claim_lost(),
                    }
                }
                recorded
            };
            match recorded {
                Ok((ended, claimed)) => {
                    self.changed();
                    break Some((ended, claimed));
                }
                Err(e) if self.local().stopped => {
                    tracing::error!(message = "The end of an action cannot be recorded and the executor stops; the next start settles it by its commit marker.", batch_instance_id = c.instance, action_id = c.action, error = %e);
                    break None;
                }
                Err(e) => {
                    answer_lost = true;
                    if since.elapsed() < patience {
                        tracing::warn!(message = "Recording the end of an action failed; trying again.", batch_instance_id = c.instance, action_id = c.action, error = %e, pause_ms = pause.as_millis() as u64);
                    } else {
                        tracing::error!(message = "Recording the end of an action still fails; trying again until it is recorded.", batch_instance_id = c.instance, action_id = c.action, error = %e, pause_ms = pause.as_millis() as u64);
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
            }
        };
        let (ended, claimed) = ended.unzip();
        let claimed = claimed.unwrap_or_default();
        // Ready actions this end did not take: the worker fills the free slots with them (the
        // slot given back rings it too, when nothing was claimed).
        if ended.is_some_and(|e| e.ready > claimed.len()) {
            self.wake.ring();
        }
        match ended {
            Some(Ended {
                recorded: false, ..
            }) if answer_lost => {
                tracing::info!(
                    message = "The end of an action was found recorded by an earlier attempt whose answer was lost (or its action was taken over by another host meanwhile).",
                    batch_instance_id = c.instance,
                    action_id = c.action,
                    attempt = c.attempt
                );
            }
            Some(Ended {
                recorded: false, ..
            }) => {
                tracing::warn!(
                    message = "An action ended on a host that no longer owned it (another host took it over); its end here was not recorded.",
                    batch_instance_id = c.instance,
                    action_id = c.action,
                    attempt = c.attempt
                );
            }
            Some(Ended {
                instance: Some(state),
                ..
            }) => {
                // Its batch and how long it took, for the log and the per-batch series.
                let info = self.repo.instance_info(c.instance).ok().flatten();
                let batch = info.as_ref().map_or("", |i| i.batch_name.as_str());
                let seconds = info
                    .as_ref()
                    .and_then(|i| chrono::DateTime::parse_from_rfc3339(&i.start).ok())
                    .map_or(0.0, |t| {
                        let now = weft_core::sched::clock::current().clock.now();
                        (now - t.with_timezone(&chrono::Utc)).num_milliseconds() as f64 / 1e3
                    });
                weft_core::metrics::instance_ended(batch, state.word(), seconds);
                if state == weft_repo::model::InstanceState::Finished {
                    tracing::info!(message = "Batch instance ended.", batch = batch, batch_instance_id = c.instance, state = %state, seconds);
                } else {
                    tracing::warn!(message = "Batch instance ended without finishing.", batch = batch, batch_instance_id = c.instance, state = %state, seconds);
                }
            }
            _ => {}
        }
        // At most one: the claim asked for one.
        claimed.into_iter().next().map(|next| (next, epoch))
    }

    /// At the start of a server alone on its repository (SQLite): what the last server left
    /// running or waiting. Running actions are settled by their commit markers; the rest of
    /// such an instance is halted and the instance is interrupted (finished when every
    /// action turned out to have finished). Returns the ids of the instances. Call it before
    /// [`Executor::open`].
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn recover(&self) -> Result<Vec<i64>, StartError> {
        let taken = self.repo.take_over(&self.host, 0)?;
        for c in &taken {
            self.settle(c, false, |verdict| match verdict {
                Ok(true) => Settle::Committed,
                Ok(false) => Settle::Failed(format!("{SERVER_STOP} before it committed")),
                Err(m) => Settle::Failed(format!("{SERVER_STOP}; {}", may_have(&m))),
            })?;
        }
        Ok(self.repo.recover()?)
    }

    /// At the start of a host of a shared repository: the actions its last process left
    /// running are settled by their commit markers (finished where the target committed,
    /// run again where nothing did), and their instances go on. Answers how many there were.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn resume_own(&self) -> Result<usize, StartError> {
        let mine = self.repo.running_on(&self.host)?;
        for c in &mine {
            self.settle(c, true, after_a_host_stop)?;
        }
        Ok(mine.len())
    }

    /// Takes over the running actions of the hosts silent for `lease` and settles them by
    /// their commit markers (finished, run again, or failed when that cannot be told).
    /// Answers how many were taken over.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn take_over(&self, lease: Duration) -> Result<usize, StartError> {
        let taken = self.repo.take_over(&self.host, lease.as_millis() as i64)?;
        for c in &taken {
            self.settle(c, true, after_a_host_stop)?;
        }
        if !taken.is_empty() {
            tracing::warn!(message = "Took over the running actions of hosts whose lease expired.", host = %self.host, actions = taken.len());
            self.wake.ring();
        }
        Ok(taken.len())
    }

    /// Settles the actions the repository shows running here that no slot holds: a claim
    /// whose transaction committed but answered an error (the connection broke at the
    /// commit) leaves one. An attempt unheld at two looks of the worker, with no end's claim
    /// under way at either (a claim takes its slot in the same step as its transaction's
    /// answer), is one; it is settled by its commit markers as a stopped host's would be,
    /// ready again where it did not commit. The worker looks only after such an error,
    /// until a look finds none and no claim's answer was lost meanwhile. A host busy with
    /// chained claims may put the look off while they go on.
    pub(super) fn settle_strays(&self) {
        let (last, lost) = {
            let l = self.local();
            match &l.strays {
                // An end's claim under way: its action may be running and not held yet.
                Some(_) if l.passing > 0 => return,
                Some(last) => (last.clone(), l.lost),
                None => return,
            }
        };
        let running = match self.repo.running_on(&self.host) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(message = "The actions running here cannot be read from the repository now; looking again later.", error = %e);
                return;
            }
        };
        let unheld: Vec<Claimed> = {
            let l = self.local();
            // A claim under way since the first look: what it claimed may be read running
            // and not be held yet.
            if l.passing > 0 {
                return;
            }
            running
                .into_iter()
                .filter(|c| !l.held.contains(&attempt_of(c)))
                .collect()
        };
        let mut seen = std::collections::HashSet::new();
        let mut settled = false;
        for c in unheld {
            let key = attempt_of(&c);
            if !last.contains(&key) {
                seen.insert(key);
                continue;
            }
            tracing::warn!(
                message = "An action claimed here was running on no slot (its claim's answer was lost); it is settled by its commit markers.",
                batch_instance_id = c.instance,
                action_id = c.action,
                attempt = c.attempt
            );
            match self.settle(&c, true, after_a_host_stop) {
                Ok(_) => settled = true,
                Err(e) => {
                    tracing::warn!(message = "An action running on no slot cannot be settled now; trying again.", batch_instance_id = c.instance, action_id = c.action, error = %e);
                    seen.insert(key);
                }
            }
        }
        // Looked for again while a look finds any, or a claim's answer was lost since this
        // look began; a look that finds none, with none lost since, ends the search.
        let mut l = self.local();
        l.strays = if seen.is_empty() && l.lost == lost {
            None
        } else {
            Some(seen)
        };
        drop(l);
        if settled {
            self.changed();
        }
    }

    /// Settles one action this host took over: by its commit markers, `outcome` decides.
    fn settle(
        &self,
        c: &Claimed,
        follow: bool,
        outcome: impl Fn(Result<bool, Unsettled>) -> Settle,
    ) -> Result<Ended, StartError> {
        let verdict = self.verdict(c);
        let note = match &verdict {
            Ok(true) => "committed before its end was recorded: its commit marker was found in its target; row counts are not known".to_owned(),
            Ok(false) => "not committed: no commit marker in its target".to_owned(),
            Err(why) => why.to_string(),
        };
        let outcome = outcome(verdict);
        tracing::warn!(message = "An action whose end was not recorded was settled.", batch_instance_id = c.instance, action_id = c.action, outcome = ?outcome, note = %note);
        Ok(self.repo.settled(&self.host, c, &outcome, &note, follow)?)
    }

    /// Whether the attempt `c` committed: `Ok(true)` when its marker is in every
    /// connection it writes, `Ok(false)` when in none, else what is known.
    fn verdict(&self, c: &Claimed) -> Result<bool, Unsettled> {
        if !c.unmarked.is_empty() {
            return Err(Unsettled::Unmarked(c.unmarked.clone()));
        }
        let info = match self.repo.instance_info(c.instance) {
            Ok(Some(info)) => info,
            Ok(None) => return Err(Unrunnable::InstanceGone.into()),
            Err(e) => return Err(Unrunnable::InstanceUnreadable(Arc::new(e)).into()),
        };
        let keys = match self.keys.as_ref().map(|k| k.current()) {
            Some(Ok(keys)) => keys,
            Some(Err(e)) => return Err(Unsettled::KeyFile(e)),
            None => return Err(Unsettled::NoKeyFile),
        };
        let plan = self.runnable_plan(c)?;
        super::action::committed(&self.registry, &keys, &plan, &self.run_of(c, &info))
            .map_err(Unsettled::Markers)
    }
}

/// How an action this host took over from a stopped host is settled: finished where it
/// committed, run again where nothing did, failed where that cannot be told.
fn after_a_host_stop(verdict: Result<bool, Unsettled>) -> Settle {
    match verdict {
        Ok(true) => Settle::Committed,
        Ok(false) => Settle::Rerun,
        Err(m) => Settle::Failed(format!("{HOST_STOP}; {}", may_have(&m))),
    }
}

/// What an action settled without a verdict may have done: committed, where it writes
/// connections, or run, where it writes none.
fn may_have(why: &Unsettled) -> String {
    if matches!(why, Unsettled::Markers(Untold::NoMarkerPlace)) {
        format!("{why}: it may have run")
    } else {
        format!("{why}; it may have committed")
    }
}
