//! The halt of one batch instance as its running actions see it: a [`HaltSignal`] their
//! modules poll, and the interrupters of the connections they run on, which a halt calls so
//! that a running statement stops instead of running to its end.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use weft_sdk::{HaltSignal, Interrupter};

/// One instance's halt.
#[derive(Default)]
pub struct Halt {
    signal: HaltSignal,
    /// The interrupters of the running actions' connections, by registration.
    interrupters: Mutex<Vec<(u64, Vec<Interrupter>)>>,
    next: AtomicU64,
}

impl std::fmt::Debug for Halt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Halt")
            .field("raised", &self.is_raised())
            .finish_non_exhaustive()
    }
}

/// The interrupters of one action's connections, registered while it runs; dropping it
/// takes them back (before the connections go back to their pool, where an interrupt must
/// not reach their next user).
pub struct Registration<'a> {
    halt: &'a Halt,
    id: u64,
}

impl Halt {
    /// A halt not asked for.
    pub fn new() -> Arc<Self> {
        Arc::new(Halt::default())
    }

    /// A halt asked for already.
    pub fn raised() -> Arc<Self> {
        let halt = Halt::new();
        halt.raise();
        halt
    }

    /// What the instance's modules poll.
    pub fn signal(&self) -> HaltSignal {
        self.signal.clone()
    }

    /// Whether the halt was asked for.
    pub fn is_raised(&self) -> bool {
        self.signal.is_raised()
    }

    /// Asks for the halt: raises the signal and interrupts every registered connection.
    pub fn raise(&self) {
        let interrupters = self.lock();
        self.signal.raise();
        for (_, list) in interrupters.iter() {
            for i in list {
                i.interrupt();
            }
        }
    }

    /// Registers the interrupters of an action's connections until the registration is
    /// dropped; interrupts them at once when the halt was asked for already.
    pub fn register(&self, interrupters: Vec<Interrupter>) -> Registration<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut all = self.lock();
        if self.signal.is_raised() {
            for i in &interrupters {
                i.interrupt();
            }
        }
        all.push((id, interrupters));
        Registration { halt: self, id }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Vec<Interrupter>)>> {
        self.interrupters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.halt.lock().retain(|(id, _)| *id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn counting(n: &Arc<AtomicUsize>) -> Interrupter {
        let n = Arc::clone(n);
        Interrupter::new(move || {
            n.fetch_add(1, Ordering::SeqCst);
        })
    }

    #[test]
    fn a_halt_interrupts_what_is_registered_and_nothing_given_back() {
        let halt = Halt::new();
        let (running, ended) = (Arc::default(), Arc::default());
        let _running = halt.register(vec![counting(&running), counting(&running)]);
        drop(halt.register(vec![counting(&ended)]));
        let signal = halt.signal();
        assert!(!signal.is_raised());
        halt.raise();
        assert!(signal.is_raised());
        assert_eq!(running.load(Ordering::SeqCst), 2);
        assert_eq!(ended.load(Ordering::SeqCst), 0, "its action had ended");
    }

    #[test]
    fn registering_after_the_halt_interrupts_at_once() {
        let halt = Halt::raised();
        let late = Arc::default();
        let _r = halt.register(vec![counting(&late)]);
        assert_eq!(late.load(Ordering::SeqCst), 1);
    }
}
