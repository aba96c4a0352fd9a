//! The executor of batch instances, by job: this file holds the [`Executor`] itself (what a
//! host runs now, its settings, its bell) and what the jobs share; `exec::start` starts,
//! halts and restarts instances; `exec::worker` claims ready actions and runs them;
//! `exec::ends` records how they ended and settles the ones a stopped server or host left;
//! `exec::cluster` keeps the host among the hosts of a shared repository; an action's
//! variables are `exec::variables`'.
//!
//! Order: action X waits for action Y when a source of X and a target of Y are the same
//! object (by the object type's identity: connection, schema, name), across sheets; objects
//! whose `dependency` is not `Y` do not order actions, and an action never waits for itself.
//! After an error the actions that depend on it are skipped and the independent ones go on.
//!
//! The repository decides, the hosts run ([`weft_repo::work`]). A host's worker thread
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
//!
//! # Batch runs
//!
//! The detail behind docs/ARCHITECTURE.md's map.
//!
//! `exec::batch::Executor` runs instances; the repository decides (`repo::work`), so that
//! several hosts can share one repository (PostgreSQL; see `docs/scale-out.md`).
//! `start` (`exec::start`) expands the elements of `RunElements`
//! (sheets, actions, folders by path) into the plans the repository stores with each
//! deployed sheet (`SheetStore::plans`: `plan::ActionPlan`s, the one plan type, made once by
//! the deploy from the typed sheet, so a run reads no definition and no HJSON again; the
//! dialect of each object comes from the key file), orders them (`dependencies`: an action
//! waits for the actions whose targets are its sources, by the object type plugin's identity; a
//! cycle is refused, naming actions and objects), and stores the instance `waiting` with the
//! version of each sheet's plans it runs (`instance_sheets`: the plans themselves are stored
//! once per version by the deploy, `sheet_plans`, and kept while an instance runs them; a
//! start that a deploy overtook reads them again), each action's dependencies as rows (`instance_action_deps`) and the count of those it
//! still waits for (`waits_for`), in one transaction (`InstanceStore::create_instance`), which
//! also refuses (`Created::Busy`, 429, nothing stored) when `max_waiting_instances` instances
//! wait already (on PostgreSQL under an advisory lock, so hosts counting at once never pass the
//! limit together). Then it rings the worker.
//!
//! Each executor (one per host) has one worker thread (`exec::worker`). A round of it: halts asked on other
//! hosts reach the actions running here (`halts_asked`), then the free slots
//! (`max_parallel_actions` per host; a running action holds an `exec::worker::Slot`, which
//! gives the slot back when dropped, whatever ended the action) are filled by
//! `InstanceStore::claim`: ready (`W`) actions become `R` on this host, oldest instance first,
//! in one transaction (PostgreSQL: a materialized `FOR UPDATE SKIP LOCKED` pick, so two hosts
//! never claim one action; the instances of what was claimed become `running` in a second
//! transaction). Every other decision about an instance (an end, a settlement, a halt, a
//! restart) first locks the instance's row (`FOR UPDATE` on PostgreSQL): two ends recorded at
//! once on two hosts would otherwise each see the other's action still running, as each
//! statement reads what was committed when it began, and neither would end the instance; the
//! claim locks no instance row, so the two never wait for each other in a circle. Each claimed
//! action runs on a thread of its own with its plan made runnable (the dialects from the key
//! file, each connection's `schema` as deployed) and its variables from `InstanceInfo`. Its end
//! is recorded by `InstanceStore::end_action`, fenced by host and attempt (`WHERE host = ? AND
//! attempt = ?`: a host that lost the action to a takeover records nothing), and the same
//! transaction decides what follows (`work::follow`): its dependents count down and those that
//! wait for nothing more become `W` (or `H` after a halt), or after a failure every action that
//! depends on it is skipped, transitively; when nothing of the instance waits or runs, it ends
//! (`halted`, `failed` or `finished`). So an end touches only its dependents, and a batch costs
//! time linear in its actions and dependencies. The same transaction claims a ready action for
//! the slot the ended one gives back (unless the host is paused or stopping), and the action's
//! thread runs it next (`exec::worker::Slot::pass`): a batch goes from action to action without
//! a round of the worker, a claim's transaction of its own or a hand-over between threads; when
//! nothing was claimed the slot is given back and rings the worker. A failing repository is tried again (pauses up
//! to 2 s) until the end is recorded, the slot held meanwhile; after `repository_retry_seconds`
//! each failure is an error in the log. The worker is rung by a start, a restart, every end that
//! gives its slot back, and every end that made more actions ready than it claimed, and looks
//! every `poll` (250 ms on PostgreSQL, 1 s alone on SQLite) for what other hosts made ready. Halt (`work::halt`, one transaction) halts what waits and marks the instance; the
//! running actions stop: each instance running here has an `exec::halt::Halt`, whose
//! `HaltSignal` (the sdk's, an atomic flag) every `RunContext` of the instance carries, and with
//! which each running action registers the `Interrupt`s of its connections until it ends
//! (before they go back to their pool); raising it calls them. Native SQLite connections add two
//! things `sqlite3_interrupt` lacks: a progress handler and the busy handler look at the halt
//! signal of the action their thread runs (`connect::sqlite::halt_on_this_thread`), so that a
//! statement started after the halt and a wait for a lock stop too. An action that ends with an
//! error after the halt, or returns `Ok` after it but before its commit, is rolled back and
//! recorded `H`. The decisions are unit-tested on an in-memory SQLite repository without
//! threads (`repo::work::tests`: dependency order, the claim's limit, error skipping, halt,
//! restart, fenced ends, takeover). Restart (`work::restart`, one transaction: two restarts on any hosts start one
//! run) makes what failed, was skipped or halted wait again. Native SQLite connections are
//! pooled per file, since opening a database parses its whole schema; a connection goes back to
//! the pool only as it was opened, and is used again only while its path names the file it
//! opened (device and inode compared). The pool is bounded (8 per file, 64 in all or an eighth of
//! the descriptor limit, the oldest closed first), a thread closes what has been idle for 30 s,
//! and `close_idle` empties it when accept runs out of descriptors. Actions that write the same
//! SQLite file take turns on a per-file lock (`exec::slots::FileLocks`: all of an action's
//! files taken at once, given back when its `FilesHeld` is dropped), as SQLite admits one
//! writer at a time.
//!
//! Every claim of an action counts its `attempt` up; `exec::run_marked` writes the run's
//! commit marker (`connect::marker`: repository identity, instance and its start, action, attempt)
//! into the table `weft_commit_marker` of each connection the action writes, inside the
//! action's transaction there, so the marker exists exactly when the writes committed; a
//! connection that cannot carry one is recorded (`instance_actions.unmarked`) before the action
//! begins. Actions whose host stopped are settled by their markers (`Executor::settle`, opening
//! their connections; `work::settled` records the outcome, fenced like an end): at the start
//! of a server alone on SQLite (`Executor::recover`: every running action is taken over,
//! `F` where its marker is found, else `E` "interrupted by a server stop", then
//! `InstanceStore::recover` interrupts the instances); at the start of a host of a shared
//! repository, for what its last process left (`Executor::resume_own`, the host id kept in
//! `HOME/host-id`); and when another host's lease expired (`Executor::take_over`, from the
//! heartbeat thread of `Executor::join_cluster`): `F` where committed, `W` again where nothing
//! committed (its transaction died with the host's connections), `E` "may have committed" where
//! that cannot be told (an action that writes no connection has no marker to look at: `E` "may
//! have run"); the instance goes on. A host whose heartbeat cannot be recorded for
//! half a lease stops its own actions (they wait again), so that two hosts run one action at
//! once for at most that window, and right before an action's targets commit the host checks
//! its lease by the boot clock and an epoch taken before the claim (`Executor::lease_lapsed`,
//! the `Marking::lease` hook of `exec::run_marked`), rolling back after a pause.
//! `exec::identity` judges who holds a host id (`hosts.process`: boot id, pid, start) before a
//! host settles anything under it: a copy of a live host's HOME is refused, a killed host's own
//! restart goes on at once. `exec::leftovers` kills at start what a killed server's actions left
//! running (every child carries `WEFT_SERVER_HOME`; `server` holds `HOME/server.lock`, one
//! server per HOME). `fault` has named points (`WEFT_FAULT=after_target_commit`,
//! `before_target_commit`) where the process aborts, for the end-to-end tests of a kill at the
//! exact moment; they exist only in test builds (unit tests, and the host's feature
//! `fault-injection`, which `weft_tests` turns on): `install.sh` builds without them.

use super::changes::Changes;
use super::error::Unrunnable;
use super::halt::Halt;
use super::identity;
use super::slots::FileLocks;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;
use weft_core::keys::KeyStore;
use weft_core::plan::ActionPlan;
pub use weft_core::plan::Element;
use weft_core::plugins::Registry;
use weft_repo::work::{Claimed, InstanceInfo};
use weft_repo::{self as repo, InstanceStore as _, Repository};
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
    /// What the data graph adds to the elements' actions.
    pub select: weft_protocol::Selection,
    /// Elements (among `elements`) whose actions start halted, with every action that
    /// depends on them: a batch's elements with `halted`.
    pub held: Vec<Element>,
    /// Which other runs of its actions keep it from starting (`manualRuns: exclude`).
    pub exclusion: weft_repo::model::Exclusion,
}

/// Why a run, a halt or a restart did not happen (nothing was stored).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// An element or the instance does not exist.
    #[error("{0}")]
    NotFound(String),
    /// Another run of some of its actions excludes it (`manualRuns: exclude`): 409; a
    /// scheduled start waits.
    #[error("{0}")]
    Excluded(String),
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
pub(super) const SERVER_STOP: &str = "interrupted by a server stop";
/// How an action whose host stopped while it ran ended, when it cannot run again.
pub(super) const HOST_STOP: &str = "its host stopped while it ran";

pub use weft_core::settings::DEFAULT_MAX_WAITING;

/// The default time the end of an action is tried again before each failure is an error.
const DEFAULT_WRITE_PATIENCE: Duration = Duration::from_secs(60);

/// How often a host alone on its repository looks at it when nothing wakes it: what it
/// does not start itself (a restart, a scheduled start) wakes it.
const LOCAL_POLL: Duration = Duration::from_secs(1);

/// The bell of the worker: rung when something may have become ready or a slot came free.
#[derive(Debug, Default)]
pub(super) struct Wake {
    rung: Mutex<bool>,
    bell: Condvar,
}

impl Wake {
    pub(super) fn ring(&self) {
        *self.rung.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.bell.notify_all();
    }

    /// Waits until rung or `timeout` passed.
    pub(super) fn wait(&self, timeout: Duration) {
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
pub(super) struct Local {
    /// The instances with actions running here: their halt and how many run.
    pub(super) instances: HashMap<i64, (Arc<Halt>, usize)>,
    /// Actions running here (each on a slot).
    pub(super) running: usize,
    /// The instances whose actions here were stopped because this host lost its lease: a
    /// halted one of them waits again rather than counting as halted.
    pub(super) abandoned: std::collections::HashSet<i64>,
    /// Whether the worker claims work (after the start's recovery).
    pub(super) open: bool,
    /// Whether the worker is between its claim and the slots of what it claimed: the
    /// repository may already show those actions running, so the host is not idle.
    pub(super) claiming: bool,
    /// Whether the worker was started.
    pub(super) worker: bool,
    /// Whether the executor is gone: threads end, ends are no longer retried.
    pub(super) stopped: bool,
    /// The attempts the slots here hold.
    pub(super) held: std::collections::HashSet<Attempt>,
    /// Ends' transactions under way that may claim an action for their slot.
    pub(super) passing: usize,
    /// How many claims answered an error (each may have committed, leaving an action
    /// running here that no slot holds).
    pub(super) lost: u64,
    /// After such a claim: the attempts running here unheld at the worker's last look
    /// (`Executor::settle_strays`); `None` when there is nothing to look for.
    pub(super) strays: Option<std::collections::HashSet<Attempt>>,
}

/// An attempt at an action: instance, action, attempt.
pub(super) type Attempt = (i64, i64, i64);

/// The attempt a claim is of.
pub(super) fn attempt_of(c: &Claimed) -> Attempt {
    (c.instance, c.action, c.attempt)
}

impl Local {
    /// A claim answered an error: it may have committed.
    pub(super) fn claim_lost(&mut self) {
        self.lost += 1;
        self.strays.get_or_insert_default();
    }
}

/// Runs batch instances: claims ready actions from the repository and runs them.
pub struct Executor {
    pub(super) repo: Arc<Repository>,
    pub(super) registry: Arc<Registry>,
    pub(super) keys: Option<Arc<KeyStore>>,
    pub(super) limit: usize,
    /// This host's id in the repository.
    pub(super) host: String,
    /// The URL this host serves, as the list of hosts shows it.
    pub(super) url: Mutex<String>,
    pub(super) local: Mutex<Local>,
    pub(super) wake: Arc<Wake>,
    /// How many instances may wait; one more is refused ([`StartError::Busy`]).
    pub(super) max_waiting: AtomicUsize,
    /// How long an end is tried again before each failure to record it is an error, in ms.
    pub(super) write_patience_ms: AtomicU64,
    /// How often the worker looks at the repository unwoken, in ms.
    pub(super) poll_ms: AtomicU64,
    /// The repository's identity, part of every commit marker.
    pub(super) repository_id: String,
    /// The SQLite files running actions write, one action at a time per file.
    pub(super) file_locks: FileLocks,
    /// This process, as it holds the host id in the repository.
    pub(super) process: String,
    /// The boot clock's milliseconds ([`identity::boot_ms`]) when the last heartbeat that
    /// was recorded was sent (or the host registered).
    pub(super) beat_ok_ms: AtomicI64,
    /// The lease of a host of a shared repository, in ms; 0 alone (no lease to lose).
    pub(super) lease_ms: AtomicI64,
    /// How many times this host lost its lease (and stopped what it ran): an action claimed
    /// before a loss commits nothing, even once the host has registered again.
    pub(super) lease_epoch: AtomicU64,
    /// The changes to instances this host knows of: a waiter looks at the repository again
    /// when their count moved.
    pub(super) changes: Arc<Changes>,
    /// The repository's feed of every host's changes, once the host joined its cluster.
    pub(super) feed: Mutex<Option<weft_repo::postgres::changes::Feed>>,
    /// Whether a thread takes over from stopped hosts now (one at a time).
    pub(super) taking_over: std::sync::atomic::AtomicBool,
    /// Whether backfills may have starts to begin: set when one is recorded here and while
    /// the last look found some; else the backfill thread looks once a second.
    pub(super) backfills_due: std::sync::atomic::AtomicBool,
    /// The threads the actions run on.
    pub(super) threads: super::pool::Pool,
    /// Where the actions' OpenLineage events go, when the setting asks for them.
    pub(super) lineage: Mutex<Option<Arc<super::lineage::Lineage>>>,
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
            threads: super::pool::Pool::new(limit.max(1) + 1),
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
            backfills_due: std::sync::atomic::AtomicBool::new(true),
            lineage: Mutex::new(None),
        })
    }

    /// Sends each action's OpenLineage events to `lineage` from now on.
    pub fn set_lineage(&self, lineage: super::lineage::Lineage) {
        *self.lineage.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(lineage));
    }

    /// Where the actions' OpenLineage events go, if anywhere.
    pub(super) fn lineage(&self) -> Option<Arc<super::lineage::Lineage>> {
        self.lineage
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(super) fn local(&self) -> std::sync::MutexGuard<'_, Local> {
        self.local.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// This host's id in the repository.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Whether this host has stopped (left, or its executor is being dropped): its threads
    /// end.
    pub fn stopped(&self) -> bool {
        self.local().stopped
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

    /// The changes to instances, shared, for a thread that outlives a borrow of the
    /// executor.
    pub fn changes_handle(&self) -> Arc<Changes> {
        Arc::clone(&self.changes)
    }

    /// The changes to instances this host knows of: its own, and on PostgreSQL every
    /// host's while the repository's change feed is up.
    pub fn changes(&self) -> &Changes {
        &self.changes
    }

    pub(super) fn changed(&self) {
        self.changes.changed();
    }

    /// The actions running on this host now.
    pub fn running(&self) -> usize {
        self.local().running
    }

    /// The plugins this host runs actions with.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The repository.
    pub fn repo(&self) -> &Arc<Repository> {
        &self.repo
    }

    pub(super) fn dialect_fn(&self) -> impl Fn(i64) -> Dialect + use<> {
        let keys = self.keys.as_ref().and_then(|k| k.current().ok());
        move |id| match keys.as_ref().and_then(|k| k.get(&id.to_string())) {
            Some(e) => weft_core::connect::dialect_of(&e.kind, &e.url),
            None => Dialect::Unknown,
        }
    }

    /// The run a commit marker names.
    pub(super) fn run_of(
        &self,
        c: &Claimed,
        info: &InstanceInfo,
    ) -> weft_core::connect::marker::Run {
        weft_core::connect::marker::Run {
            repository: self.repository_id.clone(),
            instance: c.instance,
            started: digits(&info.start),
            action: c.action,
            attempt: c.attempt,
        }
    }

    /// The plan of a claimed action as it runs: each object with the dialect of its
    /// connection (from the key file), each connection with its default schema.
    pub(super) fn plan_of(
        &self,
        c: &Claimed,
        schemas: &Result<Arc<std::collections::BTreeMap<i64, String>>, Unrunnable>,
    ) -> Result<Arc<ActionPlan>, Unrunnable> {
        let stored = c.plan.as_ref().map_err(|e| Unrunnable::Plan(e.clone()))?;
        let schemas = schemas.as_ref().map_err(Clone::clone)?;
        let mut plan = stored.clone();
        plan.set_dialects(&self.dialect_fn());
        plan.schemas = (**schemas).clone();
        Ok(Arc::new(plan))
    }

    /// The connections' default schemas as deployed, for [`Executor::plan_of`].
    pub(super) fn schemas(
        &self,
    ) -> Result<Arc<std::collections::BTreeMap<i64, String>>, Unrunnable> {
        use weft_repo::SheetStore as _;
        self.repo
            .connection_schemas()
            .map_err(|e| Unrunnable::Schemas(Arc::new(e)))
    }

    /// [`Executor::plan_of`] with the schemas read now, for one claimed action.
    pub(super) fn runnable_plan(&self, c: &Claimed) -> Result<Arc<ActionPlan>, Unrunnable> {
        self.plan_of(c, &self.schemas())
    }
}

/// The digits of a timestamp (`2026-11-23T07:56:10Z` to `20261123075610`).
fn digits(t: &str) -> String {
    t.chars().filter(char::is_ascii_digit).collect()
}

#[cfg(test)]
mod tests;
