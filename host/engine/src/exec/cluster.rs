//! A host among the hosts of a shared repository: its registration and id, its heartbeat
//! every quarter of the lease, the take-over of hosts silent for a lease, and the lease
//! check that stops this host's own actions once it may have lost them.

use super::batch::{Cluster, Executor};
use super::error::IdTaken;
use super::identity;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError, Weak};
use std::time::{Duration, Instant};
use weft_repo::work::Beat;
use weft_repo::{self as repo, InstanceStore as _};

impl Executor {
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
    pub fn claim_id(&self, lease: Duration) -> Result<Duration, IdTaken> {
        let me = identity::Process::this();
        let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
        let began = Instant::now();
        // A heartbeat that neither moves nor ages is impossible; past this, give up.
        let deadline = began + lease * 2 + Duration::from_secs(5);
        let mut first: Option<identity::Holder> = None;
        loop {
            let seen = self
                .repo
                .host_holder(&self.host)
                .map_err(|source| IdTaken::Unreadable {
                    host: self.host.clone(),
                    source,
                })?;
            match identity::judge(&me, seen.as_ref(), first.as_ref(), lease_ms, |p| {
                p.is_alive_here()
            }) {
                identity::Verdict::Free => return Ok(began.elapsed()),
                identity::Verdict::Refuse(why) => {
                    return Err(IdTaken::InUse {
                        host: self.host.clone(),
                        why,
                    });
                }
                identity::Verdict::Wait if Instant::now() >= deadline => {
                    return Err(IdTaken::Stuck {
                        host: self.host.clone(),
                        waited: began.elapsed(),
                    });
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
    pub(super) fn lease_aged(&self) -> Option<String> {
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
        self.spawn_backfills()
    }

    /// Stops every action running here, to run again (this host lost its lease: others
    /// may run them).
    pub(super) fn abandon_all_here(&self) {
        self.lease_epoch.fetch_add(1, Ordering::SeqCst);
        let mut l = self.local();
        let ids: Vec<i64> = l.instances.keys().copied().collect();
        l.abandoned.extend(ids);
        for (h, _) in l.instances.values() {
            h.raise();
        }
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
