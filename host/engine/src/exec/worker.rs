//! The worker of a host: a thread that, whenever rung and at least every poll, brings the
//! halts asked on other hosts to the actions running here, claims ready actions for the
//! free slots (`max_parallel_actions`), and runs each on a thread of the host's pool
//! (`exec::pool`: plugin calls block, so each running action has a thread) with its
//! variables, its commit marker, its live log and the lease check before its commit;
//! whatever happens there, its end is recorded (`exec::ends`), and the end's transaction
//! claims the next ready action for the slot, which the same thread runs; when it claimed
//! none, the slot is given back.

use super::action::{Ran, run_marked};
use super::batch::{Attempt, Executor, Local, Wake, attempt_of};
use super::error::{Stopped, Unrunnable};
use super::halt::Halt;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use weft_core::plan::ActionPlan;
use weft_core::plugins::Registry;
use weft_repo::InstanceStore as _;
use weft_repo::work::{Claimed, InstanceInfo};

impl Executor {
    /// Registers the host and starts claiming work: the worker thread starts.
    ///
    /// # Errors
    ///
    /// The thread cannot be started.
    pub fn open(self: &Arc<Self>) -> std::io::Result<()> {
        if let Err(e) = self.register() {
            tracing::warn!(message = "This host cannot register in the repository now; it runs all the same.", host = %self.host, error = %e);
        }
        let start = {
            let mut l = self.local();
            l.open = true;
            !std::mem::replace(&mut l.worker, true)
        };
        if start {
            let (weak, wake) = (Arc::downgrade(self), Arc::clone(&self.wake));
            let spawned = std::thread::Builder::new()
                .name("weft-worker".to_owned())
                .spawn(move || worker(&weak, &wake));
            if let Err(e) = spawned {
                self.local().worker = false;
                return Err(e);
            }
        }
        self.wake.ring();
        Ok(())
    }

    /// Stops claiming work (what runs goes on to its end); [`Executor::open`] claims again.
    pub fn pause(&self) {
        self.local().open = false;
    }

    /// Waits until no action runs here, for at most `within`; answers how many still run.
    pub fn wait_idle(&self, within: Duration) -> usize {
        let deadline = Instant::now() + within;
        loop {
            let (running, claiming) = {
                let l = self.local();
                (l.running, l.claiming)
            };
            if (running == 0 && !claiming) || Instant::now() >= deadline {
                return running + usize::from(claiming);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// One round of the worker: halts asked elsewhere reach the actions running here, and
    /// ready actions are claimed for the free slots and started.
    pub(super) fn work(self: &Arc<Self>) {
        self.look_for_halts();
        self.settle_strays();
        let free = {
            let mut l = self.local();
            if !l.open || l.stopped {
                return;
            }
            let free = self.limit.saturating_sub(l.running);
            l.claiming = free > 0;
            free
        };
        if free == 0 {
            return;
        }
        // Taken before the claim: a loss of the lease after this point stops these actions.
        let epoch = self.lease_epoch.load(Ordering::SeqCst);
        let claimed = match self.repo.claim(&self.host, free) {
            Ok(c) => c,
            Err(e) => {
                let mut l = self.local();
                l.claiming = false;
                // It may have committed all the same.
                l.claim_lost();
                drop(l);
                tracing::warn!(message = "Ready actions cannot be claimed from the repository now; trying again.", error = %e);
                return;
            }
        };
        if claimed.is_empty() {
            self.local().claiming = false;
            return;
        }
        self.changed();
        let schemas = self.schemas();
        let mut infos: HashMap<i64, Result<InstanceInfo, Unrunnable>> = HashMap::new();
        for c in &claimed {
            infos
                .entry(c.instance)
                .or_insert_with(|| self.info_of(c.instance));
        }
        // Each claimed action holds its slot before the host counts as idle again.
        let slots: Vec<(Slot, Arc<Halt>)> = claimed.iter().map(|c| Slot::take(self, c)).collect();
        self.local().claiming = false;
        for (c, (slot, halt)) in claimed.into_iter().zip(slots) {
            let info = infos
                .get(&c.instance)
                .cloned()
                .unwrap_or(Err(Unrunnable::InstanceGone));
            if info.as_ref().is_ok_and(|i| i.halt_requested) {
                halt.raise();
            }
            let plan = self.plan_of(&c, &schemas);
            self.launch(c, info, plan, slot, halt, epoch);
        }
    }

    /// What a run needs of instance `id` besides its actions.
    fn info_of(&self, id: i64) -> Result<InstanceInfo, Unrunnable> {
        match self.repo.instance_info(id) {
            Ok(Some(info)) => Ok(info),
            Ok(None) => Err(Unrunnable::InstanceGone),
            Err(e) => Err(Unrunnable::InstanceUnreadable(Arc::new(e))),
        }
    }

    /// Raises the halt of each instance running here whose halt was asked on another host.
    fn look_for_halts(&self) {
        let ids: Vec<i64> = self
            .local()
            .instances
            .iter()
            .filter(|(_, (h, _))| !h.is_raised())
            .map(|(id, _)| *id)
            .collect();
        if ids.is_empty() {
            return;
        }
        match self.repo.halts_asked(&ids) {
            Ok(asked) => {
                let l = self.local();
                for id in asked {
                    if let Some((h, _)) = l.instances.get(&id) {
                        h.raise();
                    }
                }
            }
            Err(e) => {
                tracing::warn!(message = "Halts asked cannot be read from the repository now.", error = %e);
            }
        }
    }

    /// Starts one claimed action on a thread of the pool (`exec::pool`); whatever happens
    /// there (a panic in the host included), its end is recorded and its slot given back.
    /// The end's transaction claims the next ready action for the slot, which then runs on
    /// the same thread: a batch's actions go from one to the next without a round of the
    /// worker, a transaction of their own or a hand-over between threads.
    fn launch(
        self: &Arc<Self>,
        c: Claimed,
        info: Result<InstanceInfo, Unrunnable>,
        plan: Result<Arc<ActionPlan>, Unrunnable>,
        slot: Slot,
        halt: Arc<Halt>,
        epoch: u64,
    ) {
        let fallback = c.clone();
        let me = Arc::clone(self);
        let spawned = self.threads.run(Box::new(move || {
            let (mut c, mut info, mut slot, mut halt, mut epoch) = (c, info, slot, halt, epoch);
            let mut plan = Some(plan);
            // The instance of the action before (a chained one is made ready to run here).
            let mut before: Option<i64> = None;
            loop {
                let action = c.action;
                let started = Instant::now();
                // Inside the guard: a panic while a claimed action is made ready to run fails
                // that action (its end is recorded), it does not leave it running.
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    if let Some(instance) = before {
                        // Read again for another instance, and after a failed read.
                        if c.instance != instance || info.is_err() {
                            info = me.info_of(c.instance);
                        }
                        if info.as_ref().is_ok_and(|i| i.halt_requested) {
                            halt.raise();
                        }
                        plan = Some(me.runnable_plan(&c));
                    }
                    let plan = plan
                        .take()
                        .unwrap_or_else(|| Err(Unrunnable::Plan("no plan was made".to_owned())));
                    match &info {
                        Ok(info) => me.run_one(&c, info, plan, &halt, epoch),
                        Err(e) => Ran::failed(format!("action {action}: {e}")),
                    }
                }))
                .unwrap_or_else(|p| {
                    Ran::failed(format!(
                        "action {action}: the host failed while running it: {}",
                        weft_sdk::panic_message(p.as_ref())
                    ))
                });
                count(&me.registry, &c, &ran, started.elapsed());
                // The slot goes back (and rings the worker) when nothing was claimed for it.
                let Some((next, next_epoch)) = me.finished(&c, &ran, true) else {
                    return;
                };
                halt = slot.pass(&next);
                before = Some(c.instance);
                (c, epoch) = (next, next_epoch);
            }
        }));
        if let Err(e) = spawned {
            // The closure is gone with its slot; the action failed without running.
            tracing::error!(message = "Cannot start the action's thread.", batch_instance_id = fallback.instance, action_id = fallback.action, error = %e);
            self.finished(
                &fallback,
                &Ran::failed(format!(
                    "action {}: cannot start a thread for it: {e}",
                    fallback.action
                )),
                false,
            );
        }
    }

    fn run_one(
        &self,
        c: &Claimed,
        info: &InstanceInfo,
        plan: Result<Arc<ActionPlan>, Unrunnable>,
        halt: &Halt,
        epoch: u64,
    ) -> Ran {
        let action = c.action;
        let run = &self.run_of(c, info);
        let plan = match plan {
            Ok(plan) => plan,
            Err(e) => return Ran::failed(format!("action {action}: {e}")),
        };
        let vars = match super::variables::of_action(info, c.instance, action) {
            Ok(vars) => vars,
            Err(e) => return Ran::failed(format!("action {action}: {e}")),
        };
        let keys = match self.keys.as_ref().map(|k| k.current()) {
            Some(Ok(keys)) => keys,
            Some(Err(e)) => {
                return Ran::failed(format!("action {action}: the key file cannot be read: {e}"));
            }
            None => return Ran::failed(format!("action {action}: no key file")),
        };
        // The SQLite files this action writes, held while it runs.
        let _files = self.file_locks.hold(
            plan.written_connections()
                .iter()
                .filter_map(|id| keys.get(&id.to_string()))
                .filter(|e| e.kind == weft_core::connect::SQLITE)
                .map(|e| e.url.clone())
                .collect(),
        );
        let unmarked = |ids: &[i64]| self.repo.set_unmarked(run.instance, action, ids);
        // Log lines reach the repository while the action runs; lines that cannot be stored
        // now are stored later, at the latest with its end.
        let repo = Arc::clone(&self.repo);
        let changes = Arc::clone(&self.changes);
        let (instance, action_id) = (run.instance, action);
        let live: super::action::LiveLog = Arc::new(move |lines: &[String]| {
            match repo.append_log(instance, action_id, lines) {
                Ok(stored) => {
                    changes.changed();
                    stored
                }
                Err(e) => {
                    tracing::warn!(message = "A running action's log lines could not be stored now.", batch_instance_id = instance, action_id, error = %e);
                    false
                }
            }
        });
        // Just before its commit: a host whose lease lapsed (paused past half a lease, say)
        // commits nothing, stops what it runs, and leaves it to run again.
        let lease = || {
            let lapsed = self.lease_lapsed(epoch);
            // A lease out of date now stops everything here; an action of an earlier lease
            // (the host has registered again since) gives up alone.
            if lapsed.is_some() && self.lease_aged().is_some() {
                self.abandon_all_here();
            }
            lapsed
        };
        let marking = super::action::Marking {
            run,
            unmarked: &unmarked,
            live_log: Some(live),
            halt: Some(halt),
            lease: Some(&lease),
        };
        let lineage = self.lineage();
        let emit = |kind: &str, error: Option<&str>| {
            if let Some(l) = &lineage {
                let event = super::lineage::event(
                    kind,
                    run,
                    &info.batch_name,
                    &plan,
                    &keys,
                    &l.namespace,
                    error,
                );
                l.emitter.emit(event.to_string());
            }
        };
        emit("START", None);
        let ran = run_marked(&self.registry, &keys, &plan, &vars, Some(&marking));
        match &ran.outcome {
            Ok(_) => emit("COMPLETE", None),
            Err(Stopped::Halted { message, .. }) => emit("ABORT", Some(message)),
            Err(Stopped::Failed { message, .. }) => emit("FAIL", Some(message)),
        }
        ran
    }
}

/// Counts an action this host ran for `/metrics`.
fn count(registry: &Registry, c: &Claimed, ran: &Ran, took: Duration) {
    use weft_core::metrics::{Ended, Rows};
    let (ended, rows) = match &ran.outcome {
        Err(Stopped::Halted { .. }) => (Ended::Halted, Rows::default()),
        Ok(o) => (
            Ended::Finished,
            Rows {
                read: o.rows_read,
                written: o.rows_written,
                updated: o.rows_updated,
                deleted: o.rows_deleted,
            },
        ),
        Err(Stopped::Failed { .. }) => (Ended::Failed, Rows::default()),
    };
    // Labels from a closed set: a module this server loaded, else `unknown` (an action
    // deployed with validate=false may name anything).
    let module = (ended == Ended::Failed)
        .then(|| c.plan.as_ref().ok().map(|p| p.module.as_str()))
        .flatten()
        .map(|m| {
            if registry.module(m).is_some() {
                m
            } else {
                "unknown"
            }
        });
    weft_core::metrics::action_ended(ended, took.as_secs_f64(), rows, module);
}

/// One of a host's `max_parallel_actions` slots, held by a running action: dropping it gives
/// the slot back (and the action's share of its instance's halt) and rings the worker,
/// whatever ended the action, a panic or a thread that could not start included.
struct Slot {
    exec: Arc<Executor>,
    /// The attempt the slot holds.
    held: Attempt,
}

impl Slot {
    /// Takes a slot for the claimed attempt `c`, with its instance's halt.
    pub(super) fn take(exec: &Arc<Executor>, c: &Claimed) -> (Slot, Arc<Halt>) {
        let held = attempt_of(c);
        let halt = {
            let mut l = exec.local();
            l.running += 1;
            l.held.insert(held);
            join(&mut l, c.instance)
        };
        (
            Slot {
                exec: Arc::clone(exec),
                held,
            },
            halt,
        )
    }

    /// The slot passes to an action of `instance` (the next its thread runs) without being
    /// given back: the host's count of running actions stays, and the worker is not rung.
    /// Answers the instance's halt.
    fn pass(&mut self, next: &Claimed) -> Arc<Halt> {
        let mut l = self.exec.local();
        let halt = join(&mut l, next.instance);
        leave(&mut l, self.held.0);
        l.held.remove(&self.held);
        self.held = attempt_of(next);
        l.held.insert(self.held);
        halt
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        {
            let mut l = self.exec.local();
            l.running = l.running.saturating_sub(1);
            l.held.remove(&self.held);
            leave(&mut l, self.held.0);
        }
        self.exec.wake.ring();
    }
}

/// One more action of `instance` runs here: answers the instance's halt (made for its first).
fn join(l: &mut Local, instance: i64) -> Arc<Halt> {
    let entry = l
        .instances
        .entry(instance)
        .or_insert_with(|| (Halt::new(), 0));
    entry.1 += 1;
    Arc::clone(&entry.0)
}

/// One action of `instance` less runs here: the instance is forgotten with its last.
fn leave(l: &mut Local, instance: i64) {
    if let Some(entry) = l.instances.get_mut(&instance) {
        entry.1 = entry.1.saturating_sub(1);
        if entry.1 == 0 {
            l.instances.remove(&instance);
            l.abandoned.remove(&instance);
        }
    }
}

/// The worker of one executor: a round of [`Executor::work`] whenever rung, at least every
/// poll, until the executor is gone.
fn worker(exec: &Weak<Executor>, wake: &Wake) {
    loop {
        let poll = {
            let Some(me) = exec.upgrade() else { return };
            if me.local().stopped {
                return;
            }
            me.work();
            Duration::from_millis(me.poll_ms.load(Ordering::SeqCst))
        };
        wake.wait(poll);
    }
}
