//! Batch instances: `RunElements` expanded into actions, ordered by the data they share,
//! stored with their plans, and run in the background by an [`Executor`] that keeps every
//! state in the repository as it changes.
//!
//! Order: action X waits for action Y when a source of X and a target of Y are the same
//! object (by the object type's identity: connection, schema, name), across sheets; objects
//! whose `dependency` is not `Y` do not order actions, and an action never waits for itself.
//! Independent actions run in parallel, at most `max_parallel_actions` at once over all
//! instances, each on a thread of its own (plugin calls block). After an error the actions
//! that depend on it are skipped and the independent ones go on.

use super::coordinator::{Change, Coordinator, Outcome};
use super::expand::{describe_cycle, expand};
use super::halt::Halt;
use super::slots::{FileLocks, Permit, Slots};
use super::{ActionPlan, run_marked};
use crate::keys::KeyStore;
pub use crate::plan::Element;
use crate::plan::{StoredPlan, dependencies, dependency_cycle};
use crate::plugins::Registry;
use crate::repo::model::{
    ActionEnd, ActionState, InstanceRow, InstanceState, NewAction, NewInstance, Restarted,
};
use crate::repo::{self, InstanceStore, Repository, SheetStore};
use crate::sched::scheduler::ScheduledStart;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use weft_sdk::Dialect;

/// A request to run elements.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// `batchName`.
    pub batch_name: String,
    /// `user`.
    pub user: String,
    /// What to run.
    pub elements: Vec<Element>,
    /// `variableList`: name and value.
    pub variables: Vec<(String, String)>,
}

/// Why a run did not start (nothing was stored).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// An element does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The actions wait for each other in a circle.
    #[error("{0}")]
    Cycle(String),
    /// The instance cannot be halted or restarted in its state.
    #[error("{0}")]
    Conflict(String),
    /// A stored sheet could not be read back.
    #[error("{0}")]
    Invalid(String),
    /// Too many instances wait already (setting `max_waiting_instances`); nothing was
    /// stored.
    #[error("{0}")]
    Busy(String),
    /// The repository failed.
    #[error(transparent)]
    Repo(#[from] repo::Error),
}

/// The identity of an object for ordering: the object type's, or connection, lower-case
/// schema and name when no loaded type serves it.
/// Runs batch instances in the background.
pub struct Executor {
    repo: Arc<Repository>,
    registry: Arc<Registry>,
    keys: Option<Arc<KeyStore>>,
    limit: usize,
    /// The action slots: `limit` of them over all instances.
    slots: Arc<Slots>,
    /// The instances this executor owns, waiting or being coordinated, with their halt
    /// flags. An instance the repository calls running or waiting that is not here has
    /// lost its coordinator (a repository write failed for good): halt and restart settle
    /// it.
    halts: Mutex<HashMap<i64, Arc<Halt>>>,
    /// Instances waiting for a coordinator, and how many coordinator threads there are (at
    /// most `limit`).
    queue: Mutex<Queue>,
    /// How many instances may wait; one more is refused ([`StartError::Busy`]).
    max_waiting: std::sync::atomic::AtomicUsize,
    /// How long a coordinator tries again to record a state before it gives up, in ms.
    write_patience_ms: std::sync::atomic::AtomicU64,
    /// The repository's identity, part of every commit marker.
    repository_id: String,
    /// The SQLite files running actions write, one action at a time per file.
    file_locks: FileLocks,
}

#[derive(Debug, Default)]
struct Queue {
    waiting: std::collections::VecDeque<i64>,
    coordinators: usize,
}

/// How an action whose end the last server did not record ended.
const SERVER_STOP: &str = "interrupted by a server stop";
/// How an action whose end a failing repository did not record ended.
const NOT_RECORDED: &str = "its end could not be recorded in the repository";

pub use crate::settings::DEFAULT_MAX_WAITING;

/// The default time a coordinator tries again to record a state.
const DEFAULT_WRITE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl Executor {
    /// An executor running at most `limit` actions at once.
    pub fn new(
        repo: Arc<Repository>,
        registry: Arc<Registry>,
        keys: Option<Arc<KeyStore>>,
        limit: usize,
    ) -> Arc<Self> {
        let repository_id = repo.repository_id().unwrap_or_else(|e| {
            // A random identity matches no marker: after a kill this server's runs count as
            // "may have committed" rather than matching another repository's markers.
            let mut b = [0u8; 8];
            let _ = getrandom::fill(&mut b);
            let id: String = b.iter().map(|x| format!("{x:02x}")).collect();
            tracing::error!(message = "The repository's identity cannot be read; commit markers use a random one.", error = %e, identity = %id);
            id
        });
        Arc::new(Executor {
            repo,
            registry,
            keys,
            limit: limit.max(1),
            slots: Slots::new(limit),
            halts: Mutex::new(HashMap::new()),
            queue: Mutex::new(Queue::default()),
            max_waiting: std::sync::atomic::AtomicUsize::new(DEFAULT_MAX_WAITING),
            write_patience_ms: std::sync::atomic::AtomicU64::new(
                DEFAULT_WRITE_PATIENCE.as_millis() as u64,
            ),
            repository_id,
            file_locks: FileLocks::default(),
        })
    }

    /// Sets how many instances may wait for a coordinator (the setting
    /// `max_waiting_instances`).
    pub fn set_max_waiting(&self, n: usize) {
        self.max_waiting.store(n, Ordering::SeqCst);
    }

    /// Sets how long a coordinator tries again to record a state in the repository before
    /// it gives up on the instance.
    pub fn set_write_patience(&self, patience: std::time::Duration) {
        self.write_patience_ms
            .store(patience.as_millis() as u64, Ordering::SeqCst);
    }

    /// Instances waiting for a coordinator, and coordinator threads alive.
    pub fn load(&self) -> (usize, usize) {
        let q = self
            .queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (q.waiting.len(), q.coordinators)
    }

    /// [`StartError::Busy`] when a new instance would have to wait and the queue is full.
    fn busy_now(&self) -> Option<StartError> {
        let q = self
            .queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let would_wait = !q.waiting.is_empty() || q.coordinators >= self.limit;
        if would_wait {
            self.busy(q.waiting.len())
        } else {
            None
        }
    }

    fn busy(&self, waiting: usize) -> Option<StartError> {
        let max = self.max_waiting.load(Ordering::SeqCst);
        (waiting >= max).then(|| {
            StartError::Busy(format!(
                "{waiting} batch instances wait for a free slot already (setting max_waiting_instances = {max}); try again later"
            ))
        })
    }

    /// Runs `f` on the repository, trying again with growing pauses while it fails, for up
    /// to the write patience: a full disk or a failing device may recover.
    fn record<R>(&self, id: i64, f: impl Fn(&Repository) -> repo::Result<R>) -> repo::Result<R> {
        let patience =
            std::time::Duration::from_millis(self.write_patience_ms.load(Ordering::SeqCst));
        let deadline = std::time::Instant::now() + patience;
        let mut pause = std::time::Duration::from_millis(20);
        loop {
            match f(&self.repo) {
                Ok(v) => return Ok(v),
                Err(e) if std::time::Instant::now() + pause < deadline => {
                    tracing::warn!(message = "Recording a state in the repository failed; trying again.", batch_instance_id = id, error = %e, pause_ms = pause.as_millis() as u64);
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(std::time::Duration::from_secs(2));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The repository.
    pub fn repo(&self) -> &Arc<Repository> {
        &self.repo
    }

    /// The stored plans of an instance's actions as they run, made once for the instance:
    /// each object with the dialect of its connection (from the key file), each connection
    /// with its default schema (from the repository, as deployed when the instance's
    /// coordinator begins). An action whose plan cannot be made has why instead.
    fn runnable(&self, row: &InstanceRow) -> HashMap<i64, Result<Arc<ActionPlan>, String>> {
        let dialect = self.dialect_fn();
        let schemas = self.repo.connection_schemas().map_err(|e| {
            format!("the schemas of its connections cannot be read from the repository: {e}")
        });
        row.actions
            .iter()
            .map(|a| {
                let plan = match (&a.plan, &schemas) {
                    (Ok(p), Ok(schemas)) => {
                        let mut plan = p.to_plan(&dialect);
                        plan.schemas = schemas.clone();
                        Ok(Arc::new(plan))
                    }
                    (Err(e), _) | (_, Err(e)) => Err(e.clone()),
                };
                (a.action_id, plan)
            })
            .collect()
    }

    fn dialect_fn(&self) -> impl Fn(i64) -> Dialect + use<> {
        let keys = self.keys.as_ref().and_then(|k| k.current().ok());
        move |id| match keys.as_ref().and_then(|k| k.get(&id.to_string())) {
            Some(e) => crate::connect::dialect_of(&e.kind, &e.url),
            None => Dialect::Unknown,
        }
    }

    /// Expands `req` into actions, orders them, stores the instance and starts it. Answers
    /// with the instance id at once; the run goes on in the background.
    ///
    /// # Errors
    ///
    /// [`StartError::NotFound`] naming a missing element, [`StartError::Cycle`] naming the
    /// actions and objects of a cycle; nothing is stored then.
    pub fn start(self: &Arc<Self>, req: RunRequest) -> Result<i64, StartError> {
        self.start_scheduled(req, None)
    }

    /// [`Executor::start`] for a scheduled start: the instance records its batch and planned
    /// start, and the batch's next planned start is written in the same transaction, so
    /// that a kill between the two can neither lose nor repeat a start.
    ///
    /// # Errors
    ///
    /// As [`Executor::start`]; [`repo::Error::Conflict`] (nothing started) when the planned
    /// start changed meanwhile.
    pub fn start_scheduled(
        self: &Arc<Self>,
        req: RunRequest,
        scheduled: Option<&ScheduledStart>,
    ) -> Result<i64, StartError> {
        if let Some(busy) = self.busy_now() {
            return Err(busy);
        }
        let dialect = self.dialect_fn();
        let plans = expand(&*self.repo, &req.elements, &dialect)?.map_err(StartError::NotFound)?;
        let deps = dependencies(&self.registry, &plans);
        if let Some(c) = dependency_cycle(&deps) {
            return Err(StartError::Cycle(describe_cycle(
                &self.registry,
                &plans,
                &c,
            )));
        }
        let mut sheet_of: HashMap<i64, i64> = HashMap::new();
        for p in &plans {
            if let Some((sheet, _)) = self.repo.node(p.id)? {
                sheet_of.insert(p.id, sheet);
            }
        }
        let mut new = NewInstance {
            waiting: false,
            batch_name: req.batch_name.clone(),
            user: req.user.clone(),
            elements: req.elements.clone(),
            variables: req.variables.clone(),
            actions: plans
                .iter()
                .map(|p| NewAction {
                    action_id: p.id,
                    sheet_id: sheet_of.get(&p.id).copied().unwrap_or(0),
                    name: p.name.clone(),
                    module: p.module.clone(),
                    plan: StoredPlan::from_plan(p),
                    depends_on: deps.get(&p.id).cloned().unwrap_or_default(),
                })
                .collect(),
        };
        // Stored and queued under the lock of the owned instances, so that no halt or
        // restart sees the new instance in the repository before this executor owns it.
        let mut halts = self
            .halts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        {
            let q = self
                .queue
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            new.waiting = !q.waiting.is_empty() || q.coordinators >= self.limit;
            if new.waiting
                && let Some(busy) = self.busy(q.waiting.len())
            {
                return Err(busy);
            }
        }
        let id = self.repo.create_instance(&new, scheduled)?;
        tracing::info!(message = "Batch instance started.", batch_instance_id = id, batch_name = %req.batch_name, actions = plans.len(), waiting = new.waiting);
        self.enqueue_locked(id, &mut halts);
        Ok(id)
    }

    /// Registers the instance's halt flag (under the `halts` lock held by the caller) and
    /// queues it for a coordinator.
    fn enqueue_locked(self: &Arc<Self>, id: i64, halts: &mut HashMap<i64, Arc<Halt>>) {
        halts.insert(id, Halt::new());
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .waiting
            .push_back(id);
        self.ensure_coordinator();
    }

    /// Starts a coordinator thread when instances wait and fewer than `limit` run.
    fn ensure_coordinator(self: &Arc<Self>) {
        let mut q = self
            .queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if q.waiting.is_empty() || q.coordinators >= self.limit {
            return;
        }
        q.coordinators += 1;
        drop(q);
        let me = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("weft-coordinator".to_owned())
            .spawn(move || me.coordinator());
        if let Err(e) = spawned {
            // The instance stays queued; the next start or a running coordinator takes it.
            tracing::error!(message = "Cannot start a coordinator thread.", error = %e);
            let mut q = self
                .queue
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            q.coordinators -= 1;
        }
    }

    /// A coordinator thread: runs queued instances one after another until none waits.
    fn coordinator(self: Arc<Self>) {
        loop {
            let id = {
                let mut q = self
                    .queue
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                match q.waiting.pop_front() {
                    Some(id) => id,
                    None => {
                        q.coordinators -= 1;
                        return;
                    }
                }
            };
            let halt = self
                .halts
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(&id)
                .cloned();
            // Halted while it waited: already settled by `halt`.
            let Some(halt) = halt else { continue };
            let me = Arc::clone(&self);
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                me.run_instance(id, &halt)
            }));
            if let Err(p) = outcome {
                tracing::error!(message = "A coordinator panicked; the instance is left to halt or restart.", batch_instance_id = id, error = %weft_sdk::panic_message(p.as_ref()));
            }
            self.halts
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(&id);
        }
    }

    /// Coordinates one instance to its end; when the repository cannot record its states
    /// for good, marks it failed if it still can, and else leaves it to halt or restart.
    fn run_instance(self: &Arc<Self>, id: i64, halt: &Arc<Halt>) {
        if let Err(e) = self.record(id, |r| r.mark_running(id)) {
            tracing::error!(message = "A waiting batch instance cannot be recorded as running; it is left to halt or restart.", batch_instance_id = id, error = %e);
            return;
        }
        if let Err(e) = self.coordinate(id, halt) {
            tracing::error!(message = "Batch instance failed in the executor.", batch_instance_id = id, error = %e);
            // What ran is settled by its commit markers (an action that committed is
            // finished, whatever could not be recorded), what waits is halted.
            let settled = self
                .settle(id, NOT_RECORDED)
                .map_err(|e| e.to_string())
                .and_then(|()| {
                    self.record(id, |r| {
                        r.end_failed(id, &format!("the executor failed: {e}"))
                    })
                    .map_err(|e| e.to_string())
                });
            if let Err(e) = settled {
                tracing::error!(message = "The failed batch instance cannot be recorded either; HaltBatchInstance or RestartBatchInstance settles it.", batch_instance_id = id, error = %e);
            }
        }
    }

    /// Asks a running instance to halt: nothing new starts, and its running actions stop (their
    /// running statements interrupted where the connection allows it, their modules told
    /// through the halt signal), are rolled back and recorded halted; one that commits first
    /// is recorded finished. A
    /// waiting instance is halted at once; one that lost its coordinator is settled (its
    /// running actions by their commit markers) and halted.
    ///
    /// # Errors
    ///
    /// [`StartError::NotFound`] or [`StartError::Conflict`] when it is not running.
    pub fn halt(self: &Arc<Self>, id: i64) -> Result<(), StartError> {
        let mut halts = self
            .halts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let current = self
            .repo
            .instance_state(id)?
            .ok_or_else(|| StartError::NotFound(format!("batch instance {id} does not exist")))?;
        if !current.is_ongoing() {
            return Err(StartError::Conflict(format!(
                "batch instance {id} is {current}, not running"
            )));
        }
        let Some(flag) = halts.get(&id).cloned() else {
            // No coordinator has it: claim it, settle it without the lock (that opens its
            // connections), and halt it.
            halts.insert(id, Halt::raised());
            drop(halts);
            let settled = self
                .settle(id, NOT_RECORDED)
                .and_then(|()| Ok(self.repo.halt_now(id)?));
            self.unclaim(id);
            settled?;
            tracing::info!(
                message = "A batch instance without a coordinator was halted.",
                batch_instance_id = id
            );
            return Ok(());
        };
        let queued = {
            let mut q = self
                .queue
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let before = q.waiting.len();
            q.waiting.retain(|w| *w != id);
            q.waiting.len() != before
        };
        if queued {
            // Nothing of it ran: halted at once, and no longer owned.
            if let Err(e) = self.repo.halt_now(id) {
                self.queue
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .waiting
                    .push_front(id);
                drop(halts);
                self.ensure_coordinator();
                return Err(e.into());
            }
            halts.remove(&id);
            return Ok(());
        }
        self.repo.request_halt(id)?;
        flag.raise();
        // A coordinator waiting for a slot wakes and sees the flag.
        self.slots.wake();
        Ok(())
    }

    /// Gives up a claim on an instance (taken to settle it without holding the lock).
    fn unclaim(&self, id: i64) {
        self.halts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&id);
    }

    /// Records how the running actions of an instance without a coordinator ended, from
    /// their commit markers: `F` where the run's marker is in every connection it writes,
    /// `E` otherwise (saying whether it may have committed).
    fn settle(&self, id: i64, why: &str) -> Result<(), StartError> {
        let Some(row) = self.repo.instance(id)? else {
            return Err(StartError::NotFound(format!(
                "batch instance {id} does not exist"
            )));
        };
        let keys = self.keys.as_ref().map(|k| k.current());
        let plans = self.runnable(&row);
        for a in row
            .actions
            .iter()
            .filter(|a| a.state == ActionState::Running)
        {
            let run = crate::connect::marker::Run {
                repository: self.repository_id.clone(),
                instance: id,
                started: digits(&row.summary.start),
                action: a.action_id,
                attempt: a.attempt,
            };
            let plan = plans
                .get(&a.action_id)
                .cloned()
                .unwrap_or_else(|| Err("it has no plan".to_owned()));
            let verdict = match (&keys, plan) {
                _ if !a.unmarked.is_empty() => Err(format!(
                    "it wrote connection(s) {:?} without a commit marker",
                    a.unmarked
                )),
                (Some(Ok(keys)), Ok(plan)) => super::committed(&self.registry, keys, &plan, &run),
                (Some(Err(e)), _) => Err(format!("the key file cannot be read: {e}")),
                (None, _) => Err("there is no key file".to_owned()),
                (_, Err(e)) => Err(e),
            };
            let (error, note) = match verdict {
                Ok(true) => (None, "committed before its end was recorded: its commit marker was found in its target; row counts are not known".to_owned()),
                Ok(false) => (Some(format!("{why} before it committed")), "not committed: no commit marker in its target".to_owned()),
                Err(m) => (Some(format!("{why}; {m}; it may have committed")), m),
            };
            tracing::warn!(message = "An action whose end was not recorded was settled.", batch_instance_id = id, action_id = a.action_id, committed = error.is_none(), note = %note);
            let end = ActionEnd {
                error: error.as_deref(),
                halted: false,
                rows_read: 0,
                rows_written: 0,
                rows_updated: 0,
                rows_deleted: 0,
                log: &[format!("-- {note}")],
            };
            self.repo.end_action(id, a.action_id, &end, &[])?;
        }
        Ok(())
    }

    /// At the server's start: what the last server left running or waiting. Running
    /// actions are settled by their commit markers; the rest of such an instance is
    /// halted and the instance is interrupted (finished when every action turned out to
    /// have finished). Returns the ids of the instances.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn recover(&self) -> Result<Vec<i64>, StartError> {
        let ids = self.repo.unfinished()?;
        for id in &ids {
            self.settle(*id, SERVER_STOP)?;
        }
        Ok(self.repo.recover()?)
    }

    /// Runs again what failed, was skipped or halted in an instance that has ended; never
    /// what finished. Returns how many actions run again. The check and the reset are one
    /// step: two restarts at once start one run. An instance that lost its coordinator is
    /// settled first (its running actions by their commit markers).
    ///
    /// # Errors
    ///
    /// [`StartError::NotFound`], or [`StartError::Conflict`] for a running or finished one.
    pub fn restart(self: &Arc<Self>, id: i64) -> Result<usize, StartError> {
        {
            // Claimed while it is settled without the lock: a second restart or a halt
            // meanwhile sees it running.
            let mut halts = self
                .halts
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if halts.contains_key(&id) {
                return Err(StartError::Conflict(format!(
                    "batch instance {id} is still running"
                )));
            }
            halts.insert(id, Halt::new());
        }
        let prepared = self
            .repo
            .instance_state(id)
            .map_err(StartError::from)
            .and_then(|current| {
                if current.is_some_and(InstanceState::is_ongoing) {
                    self.settle(id, NOT_RECORDED)
                } else {
                    Ok(())
                }
            });
        let mut halts = self
            .halts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        halts.remove(&id);
        prepared?;
        let waiting = {
            let q = self
                .queue
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            !q.waiting.is_empty() || q.coordinators >= self.limit
        };
        let outcome = match self.repo.restart(id, waiting)? {
            Restarted::NotFound => {
                return Err(StartError::NotFound(format!(
                    "batch instance {id} does not exist"
                )));
            }
            Restarted::Finished => {
                return Err(StartError::Conflict(format!(
                    "batch instance {id} finished; there is nothing to run again"
                )));
            }
            Restarted::Reset(n) => n,
        };
        tracing::info!(
            message = "Batch instance restarted.",
            batch_instance_id = id,
            actions = outcome,
            waiting
        );
        self.enqueue_locked(id, &mut halts);
        Ok(outcome)
    }

    /// Takes a slot of the global limit, waiting while all are taken; gives up (false) when
    /// the instance is asked to halt meanwhile.
    /// Records the state changes the coordinator decided, in one transaction.
    fn record_changes(&self, id: i64, changes: &[Change]) -> repo::Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let changes: Vec<(i64, ActionState)> = changes.iter().map(|c| (c.action, c.to)).collect();
        self.record(id, |r| r.set_actions(id, &changes))
    }

    /// The loop of one instance: start what is ready, record what ended, until nothing is
    /// left; then the instance's final state. When a repository write fails, it waits for
    /// every action it started before it gives up, so that none keeps running unrecorded.
    fn coordinate(self: &Arc<Self>, id: i64, halt: &Arc<Halt>) -> Result<(), StartError> {
        let row = self
            .repo
            .instance(id)?
            .ok_or_else(|| StartError::NotFound(format!("batch instance {id} vanished")))?;
        if row.halt_requested {
            halt.raise();
        }
        let (tx, rx) = std::sync::mpsc::channel::<(i64, super::Ran)>();
        let mut running: HashSet<i64> = HashSet::new();
        // A panic here must not let the instance go while its actions still run: they are
        // waited for like after an error.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.coordinate_loop(id, &row, halt, &tx, &rx, &mut running)
        }))
        .unwrap_or_else(|p| {
            Err(StartError::Invalid(format!(
                "the coordinator panicked: {}",
                weft_sdk::panic_message(p.as_ref())
            )))
        });
        if result.is_err() {
            for _ in 0..running.len() {
                if rx.recv().is_err() {
                    break;
                }
            }
        }
        result
    }

    fn coordinate_loop(
        self: &Arc<Self>,
        id: i64,
        row: &InstanceRow,
        halt: &Arc<Halt>,
        tx: &std::sync::mpsc::Sender<(i64, super::Ran)>,
        rx: &std::sync::mpsc::Receiver<(i64, super::Ran)>,
        running: &mut HashSet<i64>,
    ) -> Result<(), StartError> {
        let schedule_date = schedule_date(row);
        let actions = self.resume(id, row)?;
        let mut coordinator = Coordinator::new(&actions);
        // Each launch of an action counts one attempt up (`set_action` to `R` does the same
        // in the repository); the commit marker names it.
        let attempts: HashMap<i64, i64> = row
            .actions
            .iter()
            .map(|a| (a.action_id, a.attempt))
            .collect();
        let plans = self.runnable(row);
        let settled = coordinator.settle();
        self.record_changes(id, &settled)?;
        loop {
            if halt.is_raised() {
                let halted = coordinator.halt();
                self.record_changes(id, &halted)?;
            }
            // Start ready actions while there is room.
            while let Some(a) = coordinator.next_ready() {
                // With nothing of its own running, the coordinator waits for a slot; else it
                // takes a free one or goes back to waiting for its actions.
                let permit = if coordinator.running() == 0 {
                    self.slots.acquire(|| halt.is_raised())
                } else {
                    self.slots.try_acquire()
                };
                let Some(permit) = permit else { break };
                if halt.is_raised() {
                    break;
                }
                self.record(id, |r| r.set_actions(id, &[(a, ActionState::Running)]))?;
                coordinator.start(a);
                running.insert(a);
                let attempt = attempts.get(&a).copied().unwrap_or(0) + 1;
                self.launch(
                    permit,
                    Arc::clone(halt),
                    id,
                    a,
                    attempt,
                    plans
                        .get(&a)
                        .cloned()
                        .unwrap_or_else(|| Err("it has no plan".to_owned())),
                    row,
                    &schedule_date,
                    tx.clone(),
                );
            }
            if coordinator.running() == 0 {
                if halt.is_raised() && !coordinator.is_halted() {
                    continue;
                }
                if coordinator.is_over() {
                    // Nothing runs and nothing is ready: what still waits can never start.
                    let blocked = coordinator.skip_blocked();
                    self.record_changes(id, &blocked)?;
                    break;
                }
                continue;
            }
            // Wait for an action to end.
            let Ok((a, ran)) = rx.recv() else { break };
            running.remove(&a);
            self.ended(id, a, &ran, &mut coordinator)?;
        }
        let final_state = match coordinator.outcome() {
            Outcome::Halted => InstanceState::Halted,
            Outcome::Failed => InstanceState::Failed,
            Outcome::Finished => InstanceState::Finished,
        };
        self.repo.set_instance_state(id, final_state)?;
        tracing::info!(
            message = "Batch instance ended.",
            batch_instance_id = id,
            state = %final_state
        );
        Ok(())
    }

    /// The states an instance's coordinator begins from: as stored, but an `R` left by an
    /// executor that failed is not running now and is recorded as an error.
    fn resume(
        &self,
        id: i64,
        row: &InstanceRow,
    ) -> Result<Vec<(i64, ActionState, Vec<i64>)>, StartError> {
        let mut actions = Vec::with_capacity(row.actions.len());
        for a in &row.actions {
            let state = match a.state {
                ActionState::Running => {
                    let end = ActionEnd {
                        error: Some("interrupted"),
                        halted: false,
                        rows_read: 0,
                        rows_written: 0,
                        rows_updated: 0,
                        rows_deleted: 0,
                        log: &[],
                    };
                    self.record(id, |r| r.end_action(id, a.action_id, &end, &[]))?;
                    ActionState::Error
                }
                s => s,
            };
            actions.push((a.action_id, state, a.depends_on.clone()));
        }
        Ok(actions)
    }

    /// Records how action `a` ran: its own end with its counts and log, and what follows
    /// from it for the actions that wait for it, in one transaction.
    fn ended(
        &self,
        id: i64,
        a: i64,
        ran: &super::Ran,
        coordinator: &mut Coordinator,
    ) -> Result<(), StartError> {
        let (error, o) = match &ran.outcome {
            Ok(o) => (None, *o),
            Err(e) => (Some(e.as_str()), weft_sdk::RunOutcome::default()),
        };
        let follows = if ran.halted {
            coordinator.stopped(a)
        } else {
            coordinator.ended(a, error.is_none())
        };
        let end = ActionEnd {
            error,
            halted: ran.halted,
            rows_read: o.rows_read,
            rows_written: o.rows_written,
            rows_updated: o.rows_updated,
            rows_deleted: o.rows_deleted,
            log: &ran.log,
        };
        let then: Vec<(i64, ActionState)> = follows
            .iter()
            .filter(|ch| ch.action != a)
            .map(|ch| (ch.action, ch.to))
            .collect();
        self.record(id, |r| r.end_action(id, a, &end, &then))?;
        Ok(())
    }

    /// Starts one action on a thread of its own; whatever happens there (a panic in the host
    /// included), the coordinator hears of it on `done`.
    #[allow(clippy::too_many_arguments)]
    fn launch(
        self: &Arc<Self>,
        permit: Permit,
        halt: Arc<Halt>,
        id: i64,
        action: i64,
        attempt: i64,
        plan: Result<Arc<ActionPlan>, String>,
        row: &InstanceRow,
        schedule_date: &str,
        done: std::sync::mpsc::Sender<(i64, super::Ran)>,
    ) {
        let me = Arc::clone(self);
        let mut vars = row.variables.clone();
        let now = chrono::Utc::now();
        // Built-ins come last, so that they win over a variable of the same name.
        vars.extend([
            ("batch_instance_id".to_owned(), id.to_string()),
            ("action_id".to_owned(), action.to_string()),
            ("batch_name".to_owned(), row.summary.batch_name.clone()),
            ("user".to_owned(), row.summary.user.clone()),
            ("schedule_date".to_owned(), schedule_date.to_owned()),
            (
                "action_start_utc".to_owned(),
                now.format("%Y-%m-%d %H:%M:%S").to_string(),
            ),
            (
                "action_start_local".to_owned(),
                now.with_timezone(&crate::sched::clock::current().zone)
                    .format("%Y-%m-%d %H:%M:%S")
                    .to_string(),
            ),
        ]);
        let done_on_failure = done.clone();
        let run = crate::connect::marker::Run {
            repository: self.repository_id.clone(),
            instance: id,
            started: digits(&row.summary.start),
            action,
            attempt,
        };
        let spawned = std::thread::Builder::new()
            .name(format!("weft-action-{action}"))
            .spawn(move || {
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    me.run_one(action, plan, &vars, &run, &halt)
                }))
                .unwrap_or_else(|p| {
                    super::Ran::failed(format!(
                        "action {action}: the host failed while running it: {}",
                        weft_sdk::panic_message(p.as_ref())
                    ))
                });
                // The slot is free before the coordinator hears of the end.
                drop(permit);
                let _ = done.send((action, ran));
            });
        // A thread that cannot start took its permit with it (dropped with the closure).
        if let Err(e) = spawned {
            tracing::error!(message = "Cannot start the action's thread.", action_id = action, error = %e);
            let _ = done_on_failure.send((
                action,
                super::Ran::failed(format!(
                    "action {action}: cannot start a thread for it: {e}"
                )),
            ));
        }
    }

    fn run_one(
        &self,
        action: i64,
        plan: Result<Arc<ActionPlan>, String>,
        vars: &[(String, String)],
        run: &crate::connect::marker::Run,
        halt: &Halt,
    ) -> super::Ran {
        let plan = match plan {
            Ok(plan) => plan,
            Err(e) => return super::Ran::failed(format!("action {action}: {e}")),
        };
        let keys = match self.keys.as_ref().map(|k| k.current()) {
            Some(Ok(keys)) => keys,
            Some(Err(e)) => {
                return super::Ran::failed(format!(
                    "action {action}: the key file cannot be read: {e}"
                ));
            }
            None => return super::Ran::failed(format!("action {action}: no key file")),
        };
        // The SQLite files this action writes, held while it runs.
        let _files = self.file_locks.hold(
            plan.written_connections()
                .iter()
                .filter_map(|id| keys.get(&id.to_string()))
                .filter(|e| e.kind == crate::connect::SQLITE)
                .map(|e| e.url.clone())
                .collect(),
        );
        let unmarked = |ids: &[i64]| {
            self.repo
                .set_unmarked(run.instance, action, ids)
                .map_err(|e| e.to_string())
        };
        // Log lines reach the repository while the action runs; lines that cannot be stored
        // now are stored later, at the latest with its end.
        let repo = Arc::clone(&self.repo);
        let (instance, action_id) = (run.instance, action);
        let live: super::LiveLog = Arc::new(move |lines: &[String]| {
            match repo.append_log(instance, action_id, lines) {
                Ok(stored) => stored,
                Err(e) => {
                    tracing::warn!(message = "A running action's log lines could not be stored now.", batch_instance_id = instance, action_id, error = %e);
                    false
                }
            }
        });
        let marking = super::Marking {
            run,
            unmarked: &unmarked,
            live_log: Some(live),
            halt: Some(halt),
        };
        run_marked(&self.registry, &keys, &plan, vars, Some(&marking))
    }
}

/// The day of `schedule_date`: the planned start's day for a scheduled run, else the day the
/// run started, both in the service time zone.
fn schedule_date(row: &InstanceRow) -> String {
    match &row.summary.planned_start {
        Some(p) => p.get(..10).unwrap_or_default().to_owned(),
        None => chrono::DateTime::parse_from_rfc3339(&row.summary.start)
            .map(|t| {
                t.with_timezone(&crate::sched::clock::current().zone)
                    .format("%Y-%m-%d")
                    .to_string()
            })
            .unwrap_or_else(|_| row.summary.start.get(..10).unwrap_or_default().to_owned()),
    }
}

/// The scheduler starts its batches through the executor.
impl crate::sched::scheduler::Starter for Arc<Executor> {
    type Store = Repository;

    fn store(&self) -> &Repository {
        &self.repo
    }

    fn start_scheduled(
        &self,
        due: &crate::sched::scheduler::Due,
        scheduled: &ScheduledStart,
    ) -> Result<i64, crate::sched::scheduler::NotStarted> {
        use crate::sched::scheduler::{NotStarted, USER};
        let req = RunRequest {
            batch_name: due.name.clone(),
            user: USER.to_owned(),
            elements: due.elements.clone(),
            variables: due.variables.clone(),
        };
        Executor::start_scheduled(self, req, Some(scheduled)).map_err(|e| match e {
            StartError::Repo(repo::Error::Conflict(_)) => NotStarted::Changed,
            e @ (StartError::Repo(_) | StartError::Busy(_)) => NotStarted::Later(e.to_string()),
            e => NotStarted::Never(e.to_string()),
        })
    }
}

/// The digits of a timestamp (`2026-11-23T07:56:10Z` to `20261123075610`).
fn digits(t: &str) -> String {
    t.chars().filter(char::is_ascii_digit).collect()
}

#[cfg(test)]
mod tests;
