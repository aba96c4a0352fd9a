//! Action slots: at most `max_parallel_actions` actions run at once over all instances. A
//! slot is a [`Permit`] that gives itself back when dropped, so no path (an error, a panic,
//! a thread that cannot start) can forget to release it. A waiter sleeps until a permit is
//! dropped or [`Slots::wake`] is called (a halt), without polling.

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
}
