//! The waits of `WaitBatchInstance`, bounded and shared. Waiting requests hold connections,
//! so at most a quarter of `max_connections` wait at once (one more is answered 429
//! `run.too_many_waits`), and the other commands, a halt among them, always find a
//! connection. However many wait for one instance, one watcher reads it: its fingerprint
//! at first and while a waiter follows its changes (`changedFrom`), else only its state (a
//! wait for the end needs no more, and the state costs one row where the fingerprint reads
//! every action's); and only when the count of changes ([`Executor::changes`]) moved: at once when this host
//! records a change, and on PostgreSQL when any host does (the repository's change feed);
//! while the feed is down, also once a second. Never sooner than [`GAP`] (or four times the
//! last read's time, for a large instance) after its last read, so a run's followers cost
//! the repository a bounded number of reads however many they are, and none while nothing
//! changes (`weft_wait_reads_total` on `/metrics` counts them). It wakes the waiters when
//! what it read differs.

use super::error::ApiError;
use super::protocol::Instance;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use weft_engine::exec::batch::Executor;
use weft_repo::InstanceStore;
use weft_repo::model::InstanceState;

/// The least time between two reads of one instance.
const GAP: Duration = Duration::from_millis(20);

/// How often a watcher reads the repository without a change seen here.
const UNPROMPTED: Duration = Duration::from_secs(1);

/// What a watcher last read of an instance: its state and version (fingerprint in hex; empty
/// when only the state was read), or that it does not exist.
pub type Seen = Option<(InstanceState, String)>;

/// A read of an instance and the count of changes ([`Executor::changes`]) taken just before
/// it: the read holds every change up to that count. A waiter takes only a read at least as
/// new as the count when it came, never one the watcher made before a change it already
/// knows of (a restart it asked for, say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// The count of changes before the read.
    pub changes: u64,
    /// What was read.
    pub seen: Seen,
}

/// A watched instance: what its watcher read, and how many of its waiters follow its
/// changes (the watcher reads its version while there is one).
#[derive(Debug)]
struct Watched {
    tx: watch::Sender<Option<Read>>,
    following: Arc<AtomicUsize>,
}

/// A waiter that follows an instance's changes: while one is held, its watcher reads the
/// instance's version, not only its state.
#[derive(Debug)]
pub struct Following(Arc<AtomicUsize>);

impl Drop for Following {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The waits in flight.
#[derive(Debug)]
pub struct Waits {
    permits: Arc<Semaphore>,
    most: usize,
    watchers: Mutex<HashMap<i64, Watched>>,
    /// The last whole instance answered for each watched instance, with its version: the
    /// waiters that end at one version (a time-out of many at once, a change that wakes them
    /// all) share one read of it.
    answers: Mutex<HashMap<i64, (String, Arc<Instance>)>>,
}

impl Waits {
    /// At most `most` waits at once.
    pub fn new(most: usize) -> Self {
        let most = most.max(1);
        Waits {
            permits: Arc::new(Semaphore::new(most)),
            most,
            watchers: Mutex::new(HashMap::new()),
            answers: Mutex::new(HashMap::new()),
        }
    }

    /// The whole instance `id` as last read at `version`, if it was.
    pub fn answer(&self, id: i64, version: &str) -> Option<Arc<Instance>> {
        self.answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
            .filter(|(v, _)| v == version)
            .map(|(_, i)| Arc::clone(i))
    }

    /// Keeps the whole instance `id` read at `version` for the other waiters.
    pub fn remember(&self, id: i64, version: &str, instance: Arc<Instance>) {
        if !version.is_empty()
            && self
                .watchers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains_key(&id)
        {
            self.answers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(id, (version.to_owned(), instance));
        }
    }

    /// A place among the waits, held while the request waits.
    ///
    /// # Errors
    ///
    /// [`ApiError::TooManyWaits`] when all are taken.
    pub fn enter(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        Arc::clone(&self.permits)
            .try_acquire_owned()
            .map_err(|_| ApiError::TooManyWaits(self.most))
    }

    /// What is read of instance `id`, updated by its one watcher (started when none runs);
    /// with `follow`, the watcher reads its version too while the answer's guard is held.
    pub fn watch(
        self: &Arc<Self>,
        executor: &Arc<Executor>,
        id: i64,
        follow: bool,
    ) -> (watch::Receiver<Option<Read>>, Option<Following>) {
        let mut watchers = self.watchers.lock().unwrap_or_else(PoisonError::into_inner);
        let following = |w: &Watched| {
            follow.then(|| {
                w.following.fetch_add(1, Ordering::SeqCst);
                Following(Arc::clone(&w.following))
            })
        };
        if let Some(w) = watchers.get(&id) {
            return (w.tx.subscribe(), following(w));
        }
        let (tx, rx) = watch::channel(None);
        let w = Watched {
            tx: tx.clone(),
            following: Arc::new(AtomicUsize::new(0)),
        };
        let guard = following(&w);
        let count = Arc::clone(&w.following);
        watchers.insert(id, w);
        drop(watchers);
        tokio::spawn(watcher(
            Arc::clone(self),
            Arc::clone(executor),
            id,
            tx,
            count,
        ));
        (rx, guard)
    }

    /// Tells the watcher of `id` what a waiter read itself, fresher than what the watcher
    /// last read (a waiter that answered version V must not be woken again by the watcher's
    /// older value).
    pub fn saw(&self, id: i64, read: Read) {
        if let Some(w) = self
            .watchers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
        {
            w.tx.send_if_modified(|now| newer(now, read));
        }
    }

    /// Forgets the watcher of `id` when nobody waits on it any more; whether it did.
    fn leave(&self, id: i64, tx: &watch::Sender<Option<Read>>) -> bool {
        let mut watchers = self.watchers.lock().unwrap_or_else(PoisonError::into_inner);
        if tx.receiver_count() == 0 {
            watchers.remove(&id);
            self.answers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id);
            true
        } else {
            false
        }
    }
}

/// Keeps `read` in `now` unless `now` is newer; whether the waiters are to look again: when
/// what was read differs, or it is the same but of a later count (a waiter that came after
/// a change waits for a read that holds it).
fn newer(now: &mut Option<Read>, read: Read) -> bool {
    match now {
        Some(old) if old.changes > read.changes => false,
        Some(old) if *old == read => false,
        _ => {
            *now = Some(read);
            true
        }
    }
}

/// Reads instance `id` for its waiters until none is left: its fingerprint while one of
/// them follows its changes (`following`), else its state.
async fn watcher(
    waits: Arc<Waits>,
    executor: Arc<Executor>,
    id: i64,
    tx: watch::Sender<Option<Read>>,
    following: Arc<AtomicUsize>,
) {
    let bell = Arc::clone(executor.changes().bell());
    let mut seen_changes = None;
    let mut read_at = Instant::now();
    let mut gap = GAP;
    loop {
        if waits.leave(id, &tx) {
            return;
        }
        // Listening before the count is looked at: a change after the look still wakes it.
        let rung = bell.notified();
        tokio::pin!(rung);
        rung.as_mut().enable();
        let changes = executor.changes().count();
        // Other hosts' changes move the count only while the repository's feed is up;
        // while it is not, a look of its own now and then.
        let blind = !executor.changes().complete() && read_at.elapsed() >= UNPROMPTED;
        if seen_changes != Some(changes) || blind {
            // The first read has the version too: a wait that times out before any change
            // answers it without a read of its own.
            let versions = seen_changes.is_none() || following.load(Ordering::SeqCst) > 0;
            seen_changes = Some(changes);
            read_at = Instant::now();
            let repo = Arc::clone(executor.repo());
            weft_core::metrics::wait_read();
            match tokio::task::spawn_blocking(move || {
                if versions {
                    repo.instance_fingerprint(id)
                        .map(|r| r.map(|(s, f)| (s, format!("{f:016x}"))))
                } else {
                    repo.instance_state(id)
                        .map(|r| r.map(|s| (s, String::new())))
                }
            })
            .await
            {
                Ok(Ok(seen)) => {
                    let read = Read { changes, seen };
                    tx.send_if_modified(|now| newer(now, read));
                }
                Ok(Err(e)) => {
                    tracing::warn!(message = "A waited-for instance cannot be read now; trying again.", batch_instance_id = id, error = %e);
                }
                Err(e) => {
                    tracing::warn!(message = "A waited-for instance's read failed.", batch_instance_id = id, error = %e);
                }
            }
            gap = GAP.max(read_at.elapsed() * 4);
            tokio::time::sleep(gap).await;
            continue;
        }
        // Nothing new here: the bell, or a look whether anyone still waits (and, while the
        // count does not see other hosts' changes, whether a second has passed).
        let _ = tokio::time::timeout(UNPROMPTED.min(gap * 10), rung).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_past_the_most_is_refused_and_its_place_comes_back() {
        let waits = Waits::new(2);
        let a = waits.enter().expect("first");
        let _b = waits.enter().expect("second");
        assert!(matches!(waits.enter(), Err(ApiError::TooManyWaits(2))));
        drop(a);
        assert!(waits.enter().is_ok());
    }

    #[test]
    fn a_read_older_than_the_one_kept_never_replaces_it_and_a_later_count_wakes_the_waiters() {
        let halted = |changes| Read {
            changes,
            seen: Some((InstanceState::Halted, "a".to_owned())),
        };
        let running = |changes| Read {
            changes,
            seen: Some((InstanceState::Running, "b".to_owned())),
        };
        let mut now = None;
        assert!(newer(&mut now, halted(3)), "the first read");
        assert!(!newer(&mut now, halted(3)), "the same read again");
        assert!(newer(&mut now, halted(4)), "the same at a later count");
        assert_eq!(now, Some(halted(4)));
        assert!(!newer(&mut now, running(2)), "an older read");
        assert_eq!(now, Some(halted(4)));
        assert!(newer(&mut now, running(5)), "a change");
        assert_eq!(now, Some(running(5)));
    }
}
