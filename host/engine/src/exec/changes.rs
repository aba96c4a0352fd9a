//! The changes to instances a host knows of: those it records itself (a start, a claim, a
//! log line, an end, a halt, a restart), counted and rung at once, and on a PostgreSQL
//! repository those every host records, said by the repository's change feed
//! (`repo::postgres::changes`). Waits read the repository again only when the count moved,
//! so a waiting client costs no reads while nothing changes, as long as
//! [`Changes::complete`] says the count sees every change.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use weft_repo::postgres::changes::Listener;

/// The count of changes and its bell.
#[derive(Debug)]
pub struct Changes {
    count: AtomicU64,
    bell: Arc<tokio::sync::Notify>,
    /// Whether the count sees the changes of every host: true alone on SQLite, and on
    /// PostgreSQL while the change feed is up.
    complete: AtomicBool,
    /// The bell for plain threads ([`Changes::wait_past`]).
    plain: (std::sync::Mutex<()>, std::sync::Condvar),
}

impl Changes {
    /// A count at 0; `complete` when this host's changes are all there are.
    pub fn new(complete: bool) -> Self {
        Changes {
            count: AtomicU64::new(0),
            bell: Arc::new(tokio::sync::Notify::new()),
            complete: AtomicBool::new(complete),
            plain: (std::sync::Mutex::new(()), std::sync::Condvar::new()),
        }
    }

    /// On a plain thread: waits until the count is past `seen`, or `patience` passed; the
    /// count then.
    pub fn wait_past(&self, seen: u64, patience: std::time::Duration) -> u64 {
        let (lock, bell) = &self.plain;
        let guard = lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = bell
            .wait_timeout_while(guard, patience, |()| self.count() <= seen)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.count()
    }

    /// Counts a change and rings the bell.
    pub fn changed(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.bell.notify_waiters();
        // Taken, so that a plain waiter between its look at the count and its wait hears it.
        drop(
            self.plain
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        self.plain.1.notify_all();
    }

    /// How many changes were counted: when it moves, something an instance shows changed.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }

    /// Rung at every change counted.
    pub fn bell(&self) -> &Arc<tokio::sync::Notify> {
        &self.bell
    }

    /// Whether the count sees every host's changes now; when not, a waiter also looks for
    /// itself now and then.
    pub fn complete(&self) -> bool {
        self.complete.load(Ordering::SeqCst)
    }
}

impl Listener for Changes {
    fn changed(&self) {
        Changes::changed(self);
    }

    fn up(&self, up: bool) {
        self.complete.store(up, Ordering::SeqCst);
        weft_core::metrics::change_feed(up);
    }
}
