//! Action slots: at most `max_parallel_actions` actions run at once over all instances. A
//! slot is a [`Permit`] that gives itself back when dropped, so no path (an error, a panic,
//! a thread that cannot start) can forget to release it. A waiter sleeps until a permit is
//! dropped or [`Slots::wake`] is called (a halt), without polling.
//!
//! Beside them, [`FileLocks`]: SQLite lets one writer into a file at a time, so actions that
//! write the same SQLite file take turns here (a [`FilesHeld`] for all of an action's files
//! at once, given back when dropped) instead of failing with SQLITE_BUSY when one of them
//! runs longer than the busy timeout.

use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// The slots of one executor.
#[derive(Debug)]
pub struct Slots {
    limit: usize,
    used: Mutex<usize>,
    freed: Condvar,
}

/// One slot, held while an action runs; dropping it frees the slot.
#[derive(Debug)]
pub struct Permit {
    slots: Arc<Slots>,
}

impl Slots {
    /// `limit` slots (at least one).
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Slots {
            limit: limit.max(1),
            used: Mutex::new(0),
            freed: Condvar::new(),
        })
    }

    fn used(&self) -> MutexGuard<'_, usize> {
        self.used.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot if one is free now.
    pub fn try_acquire(self: &Arc<Self>) -> Option<Permit> {
        let mut used = self.used();
        (*used < self.limit).then(|| {
            *used += 1;
            Permit {
                slots: Arc::clone(self),
            }
        })
    }

    /// A slot, waiting until one is free; `None` once `give_up` says so (asked whenever
    /// the waiter wakes: a permit dropped, or [`Slots::wake`]).
    pub fn acquire(self: &Arc<Self>, give_up: impl Fn() -> bool) -> Option<Permit> {
        let mut used = self.used();
        loop {
            if give_up() {
                return None;
            }
            if *used < self.limit {
                *used += 1;
                return Some(Permit {
                    slots: Arc::clone(self),
                });
            }
            used = self
                .freed
                .wait(used)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Wakes every waiter, so that one whose `give_up` was set returns. The caller sets the
    /// flag first.
    pub fn wake(&self) {
        // Taking the lock orders this after a waiter's check of its flag.
        drop(self.used());
        self.freed.notify_all();
    }

    /// How many slots are taken.
    pub fn in_use(&self) -> usize {
        *self.used()
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut used = self.slots.used();
        *used = used.saturating_sub(1);
        drop(used);
        self.slots.freed.notify_all();
    }
}

/// The SQLite files that running actions write, each held by one action at a time.
#[derive(Debug, Default)]
pub struct FileLocks {
    held: Mutex<HashSet<String>>,
    freed: Condvar,
}

/// The files one action holds; dropping it gives them back.
#[derive(Debug)]
pub struct FilesHeld<'a> {
    locks: &'a FileLocks,
    files: Vec<String>,
}

impl FileLocks {
    fn held(&self) -> MutexGuard<'_, HashSet<String>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds every one of `files`, waiting until none is held by another action. All are
    /// taken at once, so two actions that each need two files never hold one each.
    pub fn hold(&self, mut files: Vec<String>) -> FilesHeld<'_> {
        files.sort();
        files.dedup();
        let mut held = self.held();
        while files.iter().any(|f| held.contains(f)) {
            held = self
                .freed
                .wait(held)
                .unwrap_or_else(PoisonError::into_inner);
        }
        held.extend(files.iter().cloned());
        FilesHeld { locks: self, files }
    }

    /// How many files are held.
    pub fn in_use(&self) -> usize {
        self.held().len()
    }
}

impl Drop for FilesHeld<'_> {
    fn drop(&mut self) {
        if self.files.is_empty() {
            return;
        }
        let mut held = self.locks.held();
        for f in &self.files {
            held.remove(f);
        }
        drop(held);
        self.locks.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn permits_are_bounded_and_free_their_slot_when_dropped() {
        let slots = Slots::new(2);
        let a = slots.try_acquire().expect("first");
        let b = slots.try_acquire().expect("second");
        assert!(slots.try_acquire().is_none(), "only two");
        assert_eq!(slots.in_use(), 2);
        drop(a);
        assert_eq!(slots.in_use(), 1);
        let c = slots.try_acquire().expect("a freed slot");
        drop((b, c));
        assert_eq!(slots.in_use(), 0);
        assert_eq!(
            Slots::new(0).try_acquire().map(|_| ()),
            Some(()),
            "at least one"
        );
    }

    #[test]
    fn a_waiter_gets_the_slot_a_dropped_permit_frees() {
        let slots = Slots::new(1);
        let held = slots.try_acquire().expect("the slot");
        let never = AtomicBool::new(false);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| slots.acquire(|| never.load(Ordering::SeqCst)).map(|_| ()));
            // The waiter sleeps on the condvar until the permit goes.
            drop(held);
            assert_eq!(waiter.join().expect("waiter"), Some(()));
        });
        assert_eq!(slots.in_use(), 0);
    }

    #[test]
    fn a_waiter_gives_up_when_its_flag_is_set_and_it_is_woken() {
        let slots = Slots::new(1);
        let _held = slots.try_acquire().expect("the slot");
        let halt = AtomicBool::new(false);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| slots.acquire(|| halt.load(Ordering::SeqCst)).map(|_| ()));
            halt.store(true, Ordering::SeqCst);
            slots.wake();
            assert_eq!(waiter.join().expect("waiter"), None);
        });
        assert_eq!(slots.in_use(), 1, "the held slot stays held");
    }

    #[test]
    fn actions_writing_one_file_take_turns_and_others_do_not_wait() {
        let locks = FileLocks::default();
        let a = locks.hold(vec!["/d/a.db".into(), "/d/b.db".into(), "/d/a.db".into()]);
        assert_eq!(locks.in_use(), 2, "each file once");
        // Another file is free at once; an action with no SQLite file holds nothing.
        let c = locks.hold(vec!["/d/c.db".into()]);
        drop(locks.hold(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                // Needs b (held by `a`) and c (held by `c`): waits for both.
                let held = locks.hold(vec!["/d/c.db".into(), "/d/b.db".into()]);
                tx.send(()).expect("send");
                drop(held);
            });
            drop(c);
            assert!(
                rx.try_recv().is_err(),
                "the waiter must not run while `a` holds b"
            );
            drop(a);
            rx.recv().expect("the waiter ran once both were free");
            waiter.join().expect("waiter");
        });
        assert_eq!(locks.in_use(), 0);
    }
}
