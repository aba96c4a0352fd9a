//! Halting a running action: the signal a module polls, and the interrupt the host sends to
//! the statements running on the action's connections.
//!
//! When a batch instance is halted (`HaltBatchInstance`), the host raises the [`HaltSignal`]
//! of its running actions and interrupts each of their connections that can be interrupted
//! ([`DatabaseConnection::interrupter`](crate::DatabaseConnection::interrupter)): the running statement fails,
//! the module returns its error, and the host rolls the action's transaction back and records
//! the action as halted. A module that works between statements (a loop over rows, a sleep)
//! polls [`RunContext::halted`](crate::RunContext::halted) or returns early with
//! [`RunContext::stop_if_halted`](crate::RunContext::stop_if_halted).

use crate::error::{ErrorKind, PluginError, PluginResult};
use abi_stable::StableAbi;
use abi_stable::sabi_trait;
use abi_stable::sabi_trait::TD_Opaque;
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

/// Stops what runs on one connection, from another thread: the running statement fails. A
/// connection hands one out through [`DatabaseConnection::interrupter`]; the host calls it
/// when the action's instance is halted.
///
/// [`DatabaseConnection::interrupter`]: crate::DatabaseConnection::interrupter
#[repr(transparent)]
#[derive(StableAbi)]
pub struct Interrupter {
    inner: InterruptBox,
}

impl std::fmt::Debug for Interrupter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Interrupter")
    }
}

impl Interrupter {
    /// An interrupter that calls `stop`; a panic in it is caught.
    pub fn new(stop: impl Fn() + Send + Sync + 'static) -> Self {
        Interrupter {
            inner: InterruptFfi_TO::from_value(FnInterrupt(stop), TD_Opaque),
        }
    }

    /// Stops the connection's running statement; harmless when none runs.
    pub fn interrupt(&self) {
        self.inner.interrupt();
    }

    pub(crate) fn from_ffi(inner: InterruptBox) -> Self {
        Interrupter { inner }
    }

    pub(crate) fn into_ffi(self) -> InterruptBox {
        self.inner
    }
}

struct FnInterrupt<F>(F);

impl<F: Fn() + Send + Sync> InterruptFfi for FnInterrupt<F> {
    fn interrupt(&self) {
        let _ = crate::error::catch(|| {
            (self.0)();
            Ok(())
        });
    }
}

/// The boundary form of an [`Interrupter`].
#[sabi_trait]
pub trait InterruptFfi: Send + Sync {
    /// See [`Interrupter::interrupt`].
    #[sabi(last_prefix_field)]
    fn interrupt(&self);
}

/// An owned [`InterruptFfi`], as it crosses the boundary.
pub type InterruptBox = InterruptFfi_TO<'static, RBox<()>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupter_calls_its_closure_and_survives_its_panic() {
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = std::sync::Arc::clone(&calls);
        let i = Interrupter::new(move || {
            if seen.fetch_add(1, Ordering::SeqCst) == 1 {
                panic!("the second interrupt panics");
            }
        });
        i.interrupt();
        i.interrupt();
        i.interrupt();
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_raised_signal_stays_raised_in_every_clone() {
        let signal = HaltSignal::new();
        let seen_by_module = signal.clone();
        assert!(seen_by_module.check().is_ok());
        signal.raise();
        assert!(seen_by_module.is_raised());
        let e = seen_by_module.check().expect_err("raised");
        assert_eq!(e.kind(), ErrorKind::Halted);
    }
}
