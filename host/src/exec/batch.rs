//! Batch instances: `RunElements` expanded into actions, ordered by the data they share,
//! stored with their plans and dependencies, and run by the [`Executor`] of every host on
//! the repository.
//!
//! Order: action X waits for action Y when a source of X and a target of Y are the same
//! object (by the object type's identity: connection, schema, name), across sheets; objects
//! whose `dependency` is not `Y` do not order actions, and an action never waits for itself.
//! After an error the actions that depend on it are skipped and the independent ones go on.
//!
//! The repository decides, the hosts run ([`crate::repo::work`]). A host's worker thread
//! claims ready actions while the host has free slots (`max_parallel_actions` per host),
//! runs each on a thread of its own (plugin calls block), and records its end, fenced by
//! host and attempt; the transaction that records an end also decides what follows (the
//! dependents that became ready, those skipped, the instance's end). So any host may run
//! any action, and a host knows of an instance only the actions it runs now. A halt reaches
//! a host's running actions at once when it is asked on that host, else at the host's next
//! look at the repository (every `poll`). With the repository on PostgreSQL the hosts keep
//! leases ([`Cluster`]): the running actions of a host whose heartbeat stopped for a lease
//! are taken over and settled by their commit markers (finished where the target
//! committed, run again where nothing did).

use super::action::{Ran, run_marked};
use super::changes::Changes;
use super::expand::{describe_cycle, expand};
use super::halt::Halt;
use super::identity;
use super::slots::FileLocks;
use crate::keys::KeyStore;
use crate::plan::ActionPlan;
pub use crate::plan::Element;
use crate::plan::{StoredPlan, dependencies, dependency_cycle};
use crate::plugins::Registry;
use crate::repo::model::{ActionEnd, NewAction, NewInstance, Restarted};
use crate::repo::store::Created;
use crate::repo::work::{Beat, Claimed, Ended, Halted, InstanceInfo, Settle};
use crate::repo::{self, InstanceStore, Repository, SheetStore};
use crate::sched::scheduler::ScheduledStart;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};
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

/// Why a run, a halt or a restart did not happen (nothing was stored).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// An element or the instance does not exist.
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

/// How the hosts on a shared repository watch each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cluster {
    /// How long a host may be silent before the others take over its running actions; it
    /// beats every quarter of it, and stops its own actions when it could not beat for half
    /// of it.
    pub lease: Duration,
    /// How often the host looks for ready actions and halts asked on other hosts.
    pub poll: Duration,
    /// Whether other hosts share the repository: only then are silent hosts taken over, and
    /// a host that cannot beat stops its actions (alone, it only beats, for `weft hosts`).
    pub shared: bool,
}

impl Default for Cluster {
    fn default() -> Self {
        Cluster {
            lease: Duration::from_secs(10),
            poll: Duration::from_millis(250),
            shared: true,
        }
    }
}

/// How an action whose end the last server did not record ended.
const SERVER_STOP: &str = "interrupted by a server stop";
/// How an action whose host stopped while it ran ended, when it cannot run again.
const HOST_STOP: &str = "its host stopped while it ran";

pub use crate::settings::DEFAULT_MAX_WAITING;

/// The default time the end of an action is tried again before each failure is an error.
const DEFAULT_WRITE_PATIENCE: Duration = Duration::from_secs(60);

/// How often a host alone on its repository looks at it when nothing wakes it: what it
/// does not start itself (a restart, a scheduled start) wakes it.
const LOCAL_POLL: Duration = Duration::from_secs(1);

/// The bell of the worker: rung when something may have become ready or a slot came free.
#[derive(Debug, Default)]
struct Wake {
    rung: Mutex<bool>,
    bell: Condvar,
}

impl Wake {
    fn ring(&self) {
        *self.rung.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.bell.notify_all();
    }

    /// Waits until rung or `timeout` passed.
    fn wait(&self, timeout: Duration) {
        let rung = self.rung.lock().unwrap_or_else(PoisonError::into_inner);
        let (mut rung, _) = self
            .bell
            .wait_timeout_while(rung, timeout, |r| !*r)
            .unwrap_or_else(PoisonError::into_inner);
        *rung = false;
    }
}

/// What this host runs now.
#[derive(Debug, Default)]
struct Local {
    /// The instances with actions running here: their halt and how many run.
    instances: HashMap<i64, (Arc<Halt>, usize)>,
    /// Actions running here (each on a slot).
    running: usize,
    /// The instances whose actions here were stopped because this host lost its lease: a
    /// halted one of them waits again rather than counting as halted.
    abandoned: std::collections::HashSet<i64>,
    /// Whether the worker claims work (after the start's recovery).
    open: bool,
    /// Whether the worker is between its claim and the slots of what it claimed: the
    /// repository may already show those actions running, so the host is not idle.
    claiming: bool,
    /// Whether the worker was started.
    worker: bool,
    /// Whether the executor is gone: threads end, ends are no longer retried.
    stopped: bool,
}

/// Runs batch instances: claims ready actions from the repository and runs them.
pub struct Executor {
    repo: Arc<Repository>,
    registry: Arc<Registry>,
    keys: Option<Arc<KeyStore>>,
    limit: usize,
    /// This host's id in the repository.
    host: String,
    /// The URL this host serves, as the list of hosts shows it.
    url: Mutex<String>,
    local: Mutex<Local>,
    wake: Arc<Wake>,
    /// How many instances may wait; one more is refused ([`StartError::Busy`]).
    max_waiting: AtomicUsize,
    /// How long an end is tried again before each failure to record it is an error, in ms.
    write_patience_ms: AtomicU64,
    /// How often the worker looks at the repository unwoken, in ms.
    poll_ms: AtomicU64,
    /// The repository's identity, part of every commit marker.
    repository_id: String,
    /// The SQLite files running actions write, one action at a time per file.
    file_locks: FileLocks,
    /// This process, as it holds the host id in the repository.
    process: String,
    /// The boot clock's milliseconds ([`identity::boot_ms`]) when the last heartbeat that
    /// was recorded was sent (or the host registered).
    beat_ok_ms: AtomicI64,
    /// The lease of a host of a shared repository, in ms; 0 alone (no lease to lose).
    lease_ms: AtomicI64,
    /// How many times this host lost its lease (and stopped what it ran): an action claimed
    /// before a loss commits nothing, even once the host has registered again.
    lease_epoch: AtomicU64,
    /// The changes to instances this host knows of: a waiter looks at the repository again
    /// when their count moved.
    changes: Arc<Changes>,
    /// The repository's feed of every host's changes, once the host joined its cluster.
    feed: Mutex<Option<crate::repo::postgres::changes::Feed>>,
    /// Whether a thread takes over from stopped hosts now (one at a time).
    taking_over: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("host", &self.host)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        self.local().stopped = true;
        self.wake.ring();
    }
}

/// A new host id: the machine's name and random digits, unique among the hosts of a
/// repository.
pub fn new_host_id() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|n| {
            n.trim()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.')
                .take(40)
                .collect::<String>()
        })
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "host".to_owned());
    let mut b = [0u8; 4];
    let _ = getrandom::fill(&mut b);
    let digits: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{name}-{digits}")
}

impl Executor {
    /// An executor running at most `limit` actions at once, under a new host id, claiming
    /// work at once.
    pub fn new(
        repo: Arc<Repository>,
        registry: Arc<Registry>,
        keys: Option<Arc<KeyStore>>,
        limit: usize,
    ) -> Arc<Self> {
        let exec = Executor::paused(repo, registry, keys, limit, new_host_id());
        if let Err(e) = exec.open() {
            tracing::error!(message = "The executor cannot start its worker thread.", error = %e);
        }
        exec
    }

    /// An executor as host `host` that claims nothing until [`Executor::open`]: the start
    /// settles first what the last server left.
    pub fn paused(
        repo: Arc<Repository>,
        registry: Arc<Registry>,
        keys: Option<Arc<KeyStore>>,
        limit: usize,
        host: String,
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
        let shared = repo.path().is_none();
        Arc::new(Executor {
            repo,
            registry,
            keys,
            limit: limit.max(1),
            host,
            url: Mutex::new(String::new()),
            local: Mutex::new(Local::default()),
            wake: Arc::new(Wake::default()),
            max_waiting: AtomicUsize::new(DEFAULT_MAX_WAITING),
            write_patience_ms: AtomicU64::new(DEFAULT_WRITE_PATIENCE.as_millis() as u64),
            poll_ms: AtomicU64::new(if shared {
                Cluster::default().poll.as_millis() as u64
            } else {
                LOCAL_POLL.as_millis() as u64
            }),
            repository_id,
            file_locks: FileLocks::default(),
            process: identity::Process::this().text(),
            beat_ok_ms: AtomicI64::new(identity::boot_ms()),
            lease_ms: AtomicI64::new(0),
            lease_epoch: AtomicU64::new(0),
            changes: Arc::new(Changes::new(!shared)),
            feed: Mutex::new(None),
            taking_over: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn local(&self) -> std::sync::MutexGuard<'_, Local> {
        self.local.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// This host's id in the repository.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Sets the URL this host serves (shown in the list of hosts).
    pub fn set_url(&self, url: &str) {
        *self.url.lock().unwrap_or_else(PoisonError::into_inner) = url.to_owned();
    }

    /// Sets how many instances may wait for a slot (the setting `max_waiting_instances`).
    pub fn set_max_waiting(&self, n: usize) {
        self.max_waiting.store(n, Ordering::SeqCst);
    }

    /// Sets how long the end of an action is tried again before each failure to record it
    /// is logged as an error (it is tried again until it is recorded).
    pub fn set_write_patience(&self, patience: Duration) {
        self.write_patience_ms
            .store(patience.as_millis() as u64, Ordering::SeqCst);
    }

    /// The changes to instances this host knows of: its own, and on PostgreSQL every
    /// host's while the repository's change feed is up.
    pub fn changes(&self) -> &Changes {
        &self.changes
    }

    fn changed(&self) {
        self.changes.changed();
    }

    /// The actions running on this host now.
    pub fn running(&self) -> usize {
        self.local().running
    }

    /// The repository.
    pub fn repo(&self) -> &Arc<Repository> {
        &self.repo
    }

    /// Registers this host in the repository.
    ///
    /// # Errors
    ///
    /// A repository error.
    pub fn register(&self) -> repo::Result<()> {
        let url = self
            .url
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let sent = identity::boot_ms();
        self.repo
            .register_host(&self.host, &url, self.limit, &self.process)?;
        self.beat_ok_ms.store(sent, Ordering::SeqCst);
        Ok(())
    }

    /// Before a host of a shared repository settles anything under its id: waits while
    /// another process may hold the id (a heartbeat younger than `lease` from another
    /// machine, or from a process of an older weft), and refuses when a live process does
    /// (one of this machine that still runs, or a heartbeat that goes on meanwhile). A row
    /// left by a dead process of this machine (this host's own last process, killed) is
    /// free at once. Answers how long it waited.
    ///
    /// # Errors
    ///
    /// Why the id is taken, or a repository error.
    pub fn claim_id(&self, lease: Duration) -> Result<Duration, String> {
        let me = identity::Process::this();
        let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
        let began = Instant::now();
        // A heartbeat that neither moves nor ages is impossible; past this, give up.
        let deadline = began + lease * 2 + Duration::from_secs(5);
        let mut first: Option<identity::Holder> = None;
        loop {
            let seen = self.repo.host_holder(&self.host).map_err(|e| {
                format!(
                    "the repository cannot say who holds host id {}: {e}",
                    self.host
                )
            })?;
            match identity::judge(&me, seen.as_ref(), first.as_ref(), lease_ms, |p| {
                p.is_alive_here()
            }) {
                identity::Verdict::Free => return Ok(began.elapsed()),
                identity::Verdict::Refuse(why) => {
                    return Err(format!(
                        "host id {} (HOME/host-id) is in use: {why}. A copy of a host's HOME must get an id of its own: delete host-id in the copy's HOME before its first start",
                        self.host
                    ));
                }
                identity::Verdict::Wait if Instant::now() >= deadline => {
                    return Err(format!(
                        "host id {} (HOME/host-id): its heartbeat neither aged past the lease nor moved in {:?}",
                        self.host,
                        began.elapsed()
                    ));
                }
                identity::Verdict::Wait => {
                    if first.is_none() {
                        tracing::warn!(
                            message = "This host's id has a recent heartbeat from another process (this host's own last one on another machine, or a copy of this HOME): waiting up to the lease to see whether it goes on.",
                            host = %self.host,
                            holder = seen.as_ref().and_then(|h| h.process.as_deref()).unwrap_or("unknown"),
                            silent_ms = seen.as_ref().map_or(0, |h| h.silent_ms),
                            lease_ms
                        );
                        first = seen;
                    }
                    std::thread::sleep(
                        (lease / 8).clamp(Duration::from_millis(20), Duration::from_millis(500)),
                    );
                }
            }
        }
    }

    /// After a clean stop with nothing running: this host leaves the repository's list of
    /// hosts, so that its next start need not wait for its lease. Its threads end.
    pub fn leave(&self) {
        self.local().stopped = true;
        self.wake.ring();
        if let Err(e) = self.repo.leave(&self.host, &self.process) {
            tracing::warn!(message = "This host could not leave the list of hosts; its next start may wait for its lease.", host = %self.host, error = %e);
        }
    }

    /// Why this host may no longer commit what it runs: its last recorded heartbeat is half
    /// a lease old or older by the boot clock (it was paused, or cut off), so another host
    /// may take its actions over. `None` while its lease holds, and always on a repository
    /// of its own.
    pub fn lease_lapsed(&self, epoch: u64) -> Option<String> {
        if self.lease_epoch.load(Ordering::SeqCst) != epoch {
            return Some(
                "this host lost its lease after the action was claimed (another host may have taken it over), so it commits nothing".to_owned(),
            );
        }
        self.lease_aged()
    }

    /// Why this host's lease is out of date by the boot clock now (its last recorded
    /// heartbeat half a lease old or older), if it is.
    fn lease_aged(&self) -> Option<String> {
        let lease = self.lease_ms.load(Ordering::SeqCst);
        if lease <= 0 {
            return None;
        }
        let age = identity::boot_ms() - self.beat_ok_ms.load(Ordering::SeqCst);
        (age >= lease / 2).then(|| {
            format!(
                "this host's last recorded heartbeat is {age} ms old, past half its lease ({} ms): it was paused or cut off, and another host may have taken its actions over, so it commits nothing",
                lease / 2
            )
        })
    }

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

    /// Joins the hosts of a shared repository: a thread beats this host's heart every
    /// quarter of the lease and, once the host has been healthy for a whole lease, takes
    /// over the running actions of hosts silent for longer; the worker looks at the
    /// repository every `poll`.
    ///
    /// # Errors
    ///
    /// The thread cannot be started.
    pub fn join_cluster(self: &Arc<Self>, cluster: Cluster) -> std::io::Result<()> {
        self.poll_ms
            .store(cluster.poll.as_millis().max(1) as u64, Ordering::SeqCst);
        if cluster.shared {
            self.lease_ms.store(
                i64::try_from(cluster.lease.as_millis()).unwrap_or(i64::MAX),
                Ordering::SeqCst,
            );
        }
        if cluster.shared
            && let Some(feed) = self.repo.change_feed(Arc::clone(&self.changes) as _)
        {
            *self.feed.lock().unwrap_or_else(PoisonError::into_inner) = Some(feed?);
        }
        let weak = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("weft-heartbeat".to_owned())
            .spawn(move || heartbeat(&weak, cluster))?;
        Ok(())
    }

    fn dialect_fn(&self) -> impl Fn(i64) -> Dialect + use<> {
        let keys = self.keys.as_ref().and_then(|k| k.current().ok());
        move |id| match keys.as_ref().and_then(|k| k.get(&id.to_string())) {
            Some(e) => crate::connect::dialect_of(&e.kind, &e.url),
            None => Dialect::Unknown,
        }
    }

    /// Expands `req` into actions, orders them, stores the instance, and wakes the worker.
    /// Answers with the instance id at once; the run goes on in the background, on
    /// whichever host has a free slot.
    ///
    /// # Errors
    ///
    /// [`StartError::NotFound`] naming a missing element, [`StartError::Cycle`] naming the
    /// actions and objects of a cycle, [`StartError::Busy`]; nothing is stored then.
    pub fn start(&self, req: RunRequest) -> Result<i64, StartError> {
        self.start_scheduled(req, None)
    }

    /// [`Executor::start`] for a scheduled start: the instance records its batch and planned
    /// start, and the batch's next planned start is written in the same transaction, so
    /// that a kill between the two can neither lose nor repeat a start, and of several
    /// hosts one starts it.
    ///
    /// # Errors
    ///
    /// As [`Executor::start`]; [`repo::Error::Conflict`] (nothing started) when the planned
    /// start changed meanwhile.
    pub fn start_scheduled(
        &self,
        req: RunRequest,
        scheduled: Option<&ScheduledStart>,
    ) -> Result<i64, StartError> {
        let dialect = self.dialect_fn();
        let expanded =
            expand(&*self.repo, &req.elements, &dialect)?.map_err(StartError::NotFound)?;
        let plans = &expanded.plans;
        let deps = dependencies(&self.registry, plans);
        if let Some(c) = dependency_cycle(&deps) {
            return Err(StartError::Cycle(describe_cycle(&self.registry, plans, &c)));
        }
        let new = NewInstance {
            batch_name: req.batch_name.clone(),
            user: req.user.clone(),
            elements: req.elements.clone(),
            variables: req.variables.clone(),
            actions: plans
                .iter()
                .zip(expanded.stored)
                .zip(&expanded.sheets)
                .map(|((p, stored), sheet)| NewAction {
                    action_id: p.id,
                    sheet_id: *sheet,
                    name: p.name.clone(),
                    module: p.module.clone(),
                    plan: stored,
                    depends_on: deps.get(&p.id).cloned().unwrap_or_default(),
                })
                .collect(),
        };
        let max = self.max_waiting.load(Ordering::SeqCst);
        match self.repo.create_instance(&new, scheduled, max)? {
            Created::Stored(id) => {
                self.changed();
                tracing::info!(message = "Batch instance started.", batch_instance_id = id, batch_name = %req.batch_name, actions = plans.len());
                self.wake.ring();
                Ok(id)
            }
            Created::Busy(waiting) => Err(StartError::Busy(format!(
                "{waiting} batch instances wait for a free slot already (setting max_waiting_instances = {max}); try again later"
            ))),
        }
    }

    /// Asks an instance to halt: what waits is halted at once, nothing new starts, and its
    /// running actions stop (their running statements interrupted where the connection
    /// allows it, their modules told through the halt signal), are rolled back and recorded
    /// halted; one that commits first is recorded finished. The instance ends halted with
    /// the last of them. Actions running on another host stop at its next look at the
    /// repository.
    ///
    /// # Errors
    ///
    /// [`StartError::NotFound`] or [`StartError::Conflict`] when it is not running.
    pub fn halt(&self, id: i64) -> Result<(), StartError> {
        match self.repo.halt(id)? {
            Halted::NotFound => Err(StartError::NotFound(format!(
                "batch instance {id} does not exist"
            ))),
            Halted::NotRunning(state) => Err(StartError::Conflict(format!(
                "batch instance {id} is {state}, not running"
            ))),
            Halted::Asked { running } => {
                self.changed();
                let halt = self.local().instances.get(&id).map(|(h, _)| Arc::clone(h));
                if let Some(h) = halt {
                    h.raise();
                }
                tracing::info!(
                    message = "Batch instance asked to halt.",
                    batch_instance_id = id,
                    running_actions = running
                );
                Ok(())
            }
        }
    }

    /// Runs again what failed, was skipped or halted in an instance that has ended; never
    /// what finished. Returns how many actions run again. The check and the reset are one
    /// transaction: two restarts at once, on any hosts, start one run.
    ///
    /// # Errors
    ///
    /// [`StartError::NotFound`], or [`StartError::Conflict`] for a running or finished one.
    pub fn restart(&self, id: i64) -> Result<usize, StartError> {
        match self.repo.restart(id)? {
            Restarted::NotFound => Err(StartError::NotFound(format!(
                "batch instance {id} does not exist"
            ))),
            Restarted::Finished => Err(StartError::Conflict(format!(
                "batch instance {id} finished; there is nothing to run again"
            ))),
            Restarted::Running => Err(StartError::Conflict(format!(
                "batch instance {id} is still running"
            ))),
            Restarted::Reset(n) => {
                self.changed();
                tracing::info!(
                    message = "Batch instance restarted.",
                    batch_instance_id = id,
                    actions = n
                );
                self.wake.ring();
                Ok(n)
            }
        }
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

    /// Settles one action this host took over: by its commit markers, `outcome` decides.
    fn settle(
        &self,
        c: &Claimed,
        follow: bool,
        outcome: impl Fn(Result<bool, String>) -> Settle,
    ) -> Result<Ended, StartError> {
        let verdict = self.verdict(c);
        let note = match &verdict {
            Ok(true) => "committed before its end was recorded: its commit marker was found in its target; row counts are not known".to_owned(),
            Ok(false) => "not committed: no commit marker in its target".to_owned(),
            Err(m) => m.clone(),
        };
        let outcome = outcome(verdict);
        tracing::warn!(message = "An action whose end was not recorded was settled.", batch_instance_id = c.instance, action_id = c.action, outcome = ?outcome, note = %note);
        Ok(self.repo.settled(&self.host, c, &outcome, &note, follow)?)
    }

    /// Whether the attempt `c` committed: `Ok(true)` when its marker is in every
    /// connection it writes, `Ok(false)` when in none, else what is known.
    fn verdict(&self, c: &Claimed) -> Result<bool, String> {
        if !c.unmarked.is_empty() {
            return Err(format!(
                "it wrote connection(s) {:?} without a commit marker",
                c.unmarked
            ));
        }
        let info = match self.repo.instance_info(c.instance) {
            Ok(Some(info)) => info,
            Ok(None) => return Err("its batch instance is gone".to_owned()),
            Err(e) => return Err(format!("its batch instance cannot be read: {e}")),
        };
        let keys = match self.keys.as_ref().map(|k| k.current()) {
            Some(Ok(keys)) => keys,
            Some(Err(e)) => return Err(format!("the key file cannot be read: {e}")),
            None => return Err("there is no key file".to_owned()),
        };
        let schemas = self.repo.connection_schemas().map_err(|e| {
            format!("the schemas of its connections cannot be read from the repository: {e}")
        })?;
        let plan = self.plan_of(c, &Ok(schemas))?;
        super::action::committed(&self.registry, &keys, &plan, &self.run_of(c, &info))
    }

    /// The run a commit marker names.
    fn run_of(&self, c: &Claimed, info: &InstanceInfo) -> crate::connect::marker::Run {
        crate::connect::marker::Run {
            repository: self.repository_id.clone(),
            instance: c.instance,
            started: digits(&info.start),
            action: c.action,
            attempt: c.attempt,
        }
    }

    /// The plan of a claimed action as it runs: each object with the dialect of its
    /// connection (from the key file), each connection with its default schema.
    fn plan_of(
        &self,
        c: &Claimed,
        schemas: &Result<std::collections::BTreeMap<i64, String>, String>,
    ) -> Result<Arc<ActionPlan>, String> {
        let stored = c.plan.as_ref().map_err(Clone::clone)?;
        let schemas = schemas.as_ref().map_err(Clone::clone)?;
        let mut plan = stored.to_plan(&self.dialect_fn());
        plan.schemas = schemas.clone();
        Ok(Arc::new(plan))
    }

    /// One round of the worker: halts asked elsewhere reach the actions running here, and
    /// ready actions are claimed for the free slots and started.
    fn work(self: &Arc<Self>) {
        self.look_for_halts();
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
                self.local().claiming = false;
                tracing::warn!(message = "Ready actions cannot be claimed from the repository now; trying again.", error = %e);
                return;
            }
        };
        if claimed.is_empty() {
            self.local().claiming = false;
            return;
        }
        self.changed();
        let schemas = self.repo.connection_schemas().map_err(|e| {
            format!("the schemas of its connections cannot be read from the repository: {e}")
        });
        let mut infos: HashMap<i64, Result<InstanceInfo, String>> = HashMap::new();
        for c in &claimed {
            infos
                .entry(c.instance)
                .or_insert_with(|| match self.repo.instance_info(c.instance) {
                    Ok(Some(info)) => Ok(info),
                    Ok(None) => Err("its batch instance is gone".to_owned()),
                    Err(e) => Err(format!("its batch instance cannot be read: {e}")),
                });
        }
        // Each claimed action holds its slot before the host counts as idle again.
        let slots: Vec<(Slot, Arc<Halt>)> = claimed
            .iter()
            .map(|c| Slot::take(self, c.instance))
            .collect();
        self.local().claiming = false;
        for (c, (slot, halt)) in claimed.into_iter().zip(slots) {
            let info = infos
                .get(&c.instance)
                .cloned()
                .unwrap_or_else(|| Err("its batch instance is gone".to_owned()));
            if info.as_ref().is_ok_and(|i| i.halt_requested) {
                halt.raise();
            }
            let plan = self.plan_of(&c, &schemas);
            self.launch(c, info, plan, slot, halt, epoch);
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

    /// Starts one claimed action on a thread of its own; whatever happens there (a panic in
    /// the host included), its end is recorded and its slot given back.
    fn launch(
        self: &Arc<Self>,
        c: Claimed,
        info: Result<InstanceInfo, String>,
        plan: Result<Arc<ActionPlan>, String>,
        slot: Slot,
        halt: Arc<Halt>,
        epoch: u64,
    ) {
        let fallback = c.clone();
        let me = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name(format!("weft-action-{}", c.action))
            .spawn(move || {
                let _slot = slot;
                let action = c.action;
                let started = Instant::now();
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &info {
                    Ok(info) => me.run_one(&c, info, plan, &halt, epoch),
                    Err(e) => Ran::failed(format!("action {action}: {e}")),
                }))
                .unwrap_or_else(|p| {
                    Ran::failed(format!(
                        "action {action}: the host failed while running it: {}",
                        weft_sdk::panic_message(p.as_ref())
                    ))
                });
                count(&me.registry, &c, &ran, started.elapsed());
                me.finished(&c, &ran);
            });
        if let Err(e) = spawned {
            // The closure is gone with its slot; the action failed without running.
            tracing::error!(message = "Cannot start the action's thread.", batch_instance_id = fallback.instance, action_id = fallback.action, error = %e);
            self.finished(
                &fallback,
                &Ran::failed(format!(
                    "action {}: cannot start a thread for it: {e}",
                    fallback.action
                )),
            );
        }
    }

    /// Records how a claimed action ended (trying again while the repository fails: the
    /// end is known and must not be lost; its slot is held meanwhile).
    fn finished(&self, c: &Claimed, ran: &Ran) {
        let (error, o) = match &ran.outcome {
            Ok(o) => (None, *o),
            // What a failed process module said it handled before it failed.
            Err(e) => (Some(e.as_str()), ran.partial),
        };
        if let Some(e) = error {
            if ran.halted {
                tracing::info!(message = "An action was halted.", batch_instance_id = c.instance, action_id = c.action, error = %e);
            } else {
                tracing::warn!(message = "An action failed.", batch_instance_id = c.instance, action_id = c.action, attempt = c.attempt, error = %e);
            }
        }
        let abandoned = ran.halted && self.local().abandoned.contains(&c.instance);
        let end = ActionEnd {
            error,
            halted: ran.halted,
            rows_read: o.rows_read,
            rows_written: o.rows_written,
            rows_updated: o.rows_updated,
            rows_deleted: o.rows_deleted,
            log: &ran.log,
        };
        let patience = Duration::from_millis(self.write_patience_ms.load(Ordering::SeqCst));
        let since = Instant::now();
        let mut pause = Duration::from_millis(20);
        let ended = loop {
            let recorded = if abandoned {
                self.repo.settled(
                    &self.host,
                    c,
                    &Settle::Rerun,
                    "stopped: its host lost its lease; it runs again",
                    true,
                )
            } else {
                self.repo
                    .end_action(&self.host, c.instance, c.action, c.attempt, &end)
            };
            match recorded {
                Ok(ended) => {
                    self.changed();
                    break Some(ended);
                }
                Err(e) if self.local().stopped => {
                    tracing::error!(message = "The end of an action cannot be recorded and the executor stops; the next start settles it by its commit marker.", batch_instance_id = c.instance, action_id = c.action, error = %e);
                    break None;
                }
                Err(e) => {
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
        match ended {
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
                if state == crate::repo::model::InstanceState::Finished {
                    tracing::info!(message = "Batch instance ended.", batch_instance_id = c.instance, state = %state);
                } else {
                    tracing::warn!(message = "Batch instance ended without finishing.", batch_instance_id = c.instance, state = %state);
                }
            }
            _ => {}
        }
    }

    /// Stops every action running here, to run again (this host lost its lease: others
    /// may run them).
    fn abandon_all_here(&self) {
        self.lease_epoch.fetch_add(1, Ordering::SeqCst);
        let mut l = self.local();
        let ids: Vec<i64> = l.instances.keys().copied().collect();
        l.abandoned.extend(ids);
        for (h, _) in l.instances.values() {
            h.raise();
        }
    }

    /// The variables of one action: the instance's, then the built-ins (which win over a
    /// variable of the same name).
    fn variables(info: &InstanceInfo, instance: i64, action: i64) -> Vec<(String, String)> {
        let mut vars = info.variables.clone();
        // The service clock, as the scheduler and the SQL clock functions read it.
        let now = crate::sched::clock::current().clock.now();
        vars.extend([
            ("batch_instance_id".to_owned(), instance.to_string()),
            ("action_id".to_owned(), action.to_string()),
            ("batch_name".to_owned(), info.batch_name.clone()),
            ("user".to_owned(), info.user.clone()),
            ("schedule_date".to_owned(), schedule_date(info)),
            (
                "planned_start".to_owned(),
                info.planned_start.clone().unwrap_or_default(),
            ),
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
        vars
    }

    fn run_one(
        &self,
        c: &Claimed,
        info: &InstanceInfo,
        plan: Result<Arc<ActionPlan>, String>,
        halt: &Halt,
        epoch: u64,
    ) -> Ran {
        let action = c.action;
        let vars = Self::variables(info, c.instance, action);
        let run = &self.run_of(c, info);
        let plan = match plan {
            Ok(plan) => plan,
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
        run_marked(&self.registry, &keys, &plan, &vars, Some(&marking))
    }
}

/// Counts an action this host ran for `/metrics`.
fn count(registry: &Registry, c: &Claimed, ran: &Ran, took: Duration) {
    use crate::metrics::{Ended, Rows};
    let (ended, rows) = match &ran.outcome {
        _ if ran.halted => (Ended::Halted, Rows::default()),
        Ok(o) => (
            Ended::Finished,
            Rows {
                read: o.rows_read,
                written: o.rows_written,
                updated: o.rows_updated,
                deleted: o.rows_deleted,
            },
        ),
        Err(_) => (Ended::Failed, Rows::default()),
    };
    // Labels from a closed set: a module this server loaded, else `unknown` (an action
    // deployed with validate=false may name anything).
    let module = (ended == Ended::Failed)
        .then(|| c.plan.as_ref().ok().map(StoredPlan::module))
        .flatten()
        .map(|m| {
            if registry.module(m).is_some() {
                m
            } else {
                "unknown"
            }
        });
    crate::metrics::action_ended(ended, took.as_secs_f64(), rows, module);
}

/// How an action this host took over from a stopped host is settled: finished where it
/// committed, run again where nothing did, failed where that cannot be told.
fn after_a_host_stop(verdict: Result<bool, String>) -> Settle {
    match verdict {
        Ok(true) => Settle::Committed,
        Ok(false) => Settle::Rerun,
        Err(m) => Settle::Failed(format!("{HOST_STOP}; {}", may_have(&m))),
    }
}

/// What an action settled without a verdict may have done: committed, where it writes
/// connections, or run, where it writes none.
fn may_have(why: &str) -> String {
    if why == super::action::NO_MARKER_PLACE {
        format!("{why}: it may have run")
    } else {
        format!("{why}; it may have committed")
    }
}

/// One of a host's `max_parallel_actions` slots, held by a running action: dropping it gives
/// the slot back (and the action's share of its instance's halt) and rings the worker,
/// whatever ended the action, a panic or a thread that could not start included.
struct Slot {
    exec: Arc<Executor>,
    instance: i64,
}

impl Slot {
    /// Takes a slot for an action of `instance`, with the instance's halt.
    fn take(exec: &Arc<Executor>, instance: i64) -> (Slot, Arc<Halt>) {
        let mut l = exec.local();
        l.running += 1;
        let entry = l
            .instances
            .entry(instance)
            .or_insert_with(|| (Halt::new(), 0));
        entry.1 += 1;
        let halt = Arc::clone(&entry.0);
        drop(l);
        (
            Slot {
                exec: Arc::clone(exec),
                instance,
            },
            halt,
        )
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        {
            let mut l = self.exec.local();
            l.running = l.running.saturating_sub(1);
            if let Some(entry) = l.instances.get_mut(&self.instance) {
                entry.1 = entry.1.saturating_sub(1);
                if entry.1 == 0 {
                    l.instances.remove(&self.instance);
                    l.abandoned.remove(&self.instance);
                }
            }
        }
        self.exec.wake.ring();
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

/// The heartbeat of a host of a shared repository, until the executor is gone.
fn heartbeat(exec: &Weak<Executor>, cluster: Cluster) {
    let beat = (cluster.lease / 4).max(Duration::from_millis(10));
    let mut healthy_since: Option<Instant> = None;
    let mut last_beat = Instant::now();
    loop {
        {
            let Some(me) = exec.upgrade() else { return };
            if me.local().stopped {
                return;
            }
            let sent = identity::boot_ms();
            match me.repo.heartbeat(&me.host, &me.process) {
                Ok(Beat::Alive) => {
                    me.beat_ok_ms.store(sent, Ordering::SeqCst);
                    last_beat = Instant::now();
                    let since = *healthy_since.get_or_insert_with(Instant::now);
                    // Only a host that has been beating for a whole lease judges others: a
                    // host back from a pause must first be seen alive itself.
                    // On a thread of its own: settling what it takes over opens connections,
                    // which must not hold up this host's own beats (and so its lease).
                    if cluster.shared
                        && since.elapsed() >= cluster.lease
                        && !me.taking_over.swap(true, Ordering::SeqCst)
                    {
                        let (taker, lease) = (Arc::clone(&me), cluster.lease);
                        let spawned = std::thread::Builder::new()
                            .name("weft-take-over".to_owned())
                            .spawn(move || {
                                if let Err(e) = taker.take_over(lease) {
                                    tracing::warn!(message = "Taking over from stopped hosts failed; trying again at the next beat.", error = %e);
                                }
                                taker.taking_over.store(false, Ordering::SeqCst);
                            });
                        if spawned.is_err() {
                            me.taking_over.store(false, Ordering::SeqCst);
                        }
                    }
                }
                Ok(Beat::Gone) if !cluster.shared => {
                    if let Err(e) = me.register() {
                        tracing::warn!(message = "This host cannot register now.", error = %e);
                    }
                }
                Ok(Beat::Displaced(other))
                    if other.is_empty()
                        || identity::Process::parse(&other)
                            .is_some_and(|p| p.is_of_this_machine() && !p.is_alive_here()) =>
                {
                    // The row names a process of this machine that is gone (the last one, when
                    // this host could not register at its start): this one takes its id.
                    if let Err(e) = me.register() {
                        tracing::warn!(message = "This host cannot register now.", error = %e);
                    }
                }
                Ok(Beat::Displaced(other)) => {
                    // Two processes with one id must not both run actions: this one (whose
                    // lease had lapsed, or it would have been refused) gives way.
                    tracing::error!(message = "Another process registered this host's id (a copy of this HOME started after this host's lease had lapsed); this host stops its actions and claims no more work. Give the copy an id of its own (delete host-id in its HOME) and restart this one.", host = %me.host, other = %other);
                    me.abandon_all_here();
                    me.pause();
                    return;
                }
                Ok(Beat::Gone) if me.local().stopped => return,
                Ok(Beat::Gone) => {
                    tracing::error!(message = "This host's lease had expired and its running actions were taken over by another host; they stop here, and the host registers again.", host = %me.host);
                    me.abandon_all_here();
                    healthy_since = None;
                    if let Err(e) = me.register() {
                        tracing::warn!(message = "This host cannot register again now.", error = %e);
                    }
                }
                Err(e) => {
                    healthy_since = None;
                    tracing::warn!(message = "This host's heartbeat cannot be recorded.", host = %me.host, error = %e);
                    if cluster.shared && last_beat.elapsed() >= cluster.lease / 2 {
                        // Before the others may take them over, the actions here stop: two
                        // hosts never run one action's attempt at once for longer than
                        // half a lease.
                        me.abandon_all_here();
                    }
                }
            }
        }
        std::thread::sleep(beat);
    }
}

/// The day of `schedule_date`: the planned start's day for a scheduled run, else the day the
/// run started, both in the service time zone.
fn schedule_date(info: &InstanceInfo) -> String {
    match &info.planned_start {
        Some(p) => p.get(..10).unwrap_or_default().to_owned(),
        None => chrono::DateTime::parse_from_rfc3339(&info.start)
            .map(|t| {
                t.with_timezone(&crate::sched::clock::current().zone)
                    .format("%Y-%m-%d")
                    .to_string()
            })
            .unwrap_or_else(|_| info.start.get(..10).unwrap_or_default().to_owned()),
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
