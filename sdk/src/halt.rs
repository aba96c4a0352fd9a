//! Halting a running action: the signal a module polls, and the interrupt the host sends to
//! the statements running on the action's connections.
//!
//! When a batch instance is halted (`HaltBatchInstance`), the host raises the [`HaltSignal`]
//! of its running actions and interrupts each of their connections that can be interrupted
//! ([`Connection::interrupter`](crate::Connection::interrupter)): the running statement fails,
//! the module returns its error, and the host rolls the action's transaction back and records
//! the action as halted. A module that works between statements (a loop over rows, a sleep)
//! polls [`RunContext::halted`](crate::RunContext::halted) or returns early with
//! [`RunContext::stop_if_halted`](crate::RunContext::stop_if_halted).

use crate::error::{ErrorKind, PluginError, PluginResult};
use abi_stable::StableAbi;
use abi_stable::sabi_trait;
use abi_stable::std_types::{RArc, RBox};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the action was asked to halt. Cheap to poll (one atomic load); clones share the
/// flag.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default)]
pub struct HaltSignal {
    raised: RArc<AtomicBool>,
}

impl HaltSignal {
    /// A signal that is not raised.
    pub fn new() -> Self {
        HaltSignal::default()
    }

    /// Raises it (the host does, on a halt); it stays raised.
    pub fn raise(&self) {
        self.raised.store(true, Ordering::SeqCst);
    }

    /// Whether it was raised.
    pub fn is_raised(&self) -> bool {
        self.raised.load(Ordering::SeqCst)
    }

    /// `Err` of kind [`ErrorKind::Halted`] once raised, for `?` between steps of work.
    ///
    /// # Errors
    ///
    /// When the signal was raised.
    pub fn check(&self) -> PluginResult<()> {
        if self.is_raised() {
            Err(PluginError::of(ErrorKind::Halted, "halted on request"))
        } else {
            Ok(())
        }
    }
}

/// Interrupts what runs on one connection, from another thread: the running statement (and,
/// where the database allows, the next one) fails. A connection hands one out through
/// [`Connection::interrupter`](crate::Connection::interrupter).
#[sabi_trait]
pub trait Interrupt: Send + Sync {
    /// Interrupts the connection's running statement; harmless when none runs.
    #[sabi(last_prefix_field)]
    fn interrupt(&self);
}

/// An owned [`Interrupt`], as it crosses the boundary.
pub type InterruptBox = Interrupt_TO<'static, RBox<()>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raised_signal_stays_raised_in_every_clone() {
        let signal = HaltSignal::new();
        let seen_by_module = signal.clone();
        assert!(seen_by_module.check().is_ok());
        signal.raise();
        assert!(seen_by_module.is_raised());
        let e = seen_by_module.check().expect_err("raised");
        assert_eq!(e.kind, ErrorKind::Halted);
    }
}
