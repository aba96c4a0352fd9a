//! The error that crosses the plugin boundary, and [`catch`], which turns a panic into one.

use abi_stable::StableAbi;
use abi_stable::std_types::{RResult, RString};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What went wrong inside a plugin or a connection: a kind and a message that names the
/// thing and the place.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct PluginError {
    kind: ErrorKind,
    message: RString,
}

open_enum! {
    /// Kinds of [`PluginError`]. Later sdk versions may add kinds.
    pub struct ErrorKind {
        /// The plugin or the database said no (bad SQL, a constraint, a missing table).
        Failed = 0,
        /// The plugin panicked; the panic was caught at the boundary.
        Panicked = 1,
        /// A connection could not be opened or was lost.
        Connection = 2,
        /// The input is not what the plugin accepts (attributes, sources, targets).
        Invalid = 3,
        /// The action was halted on request (see [`HaltSignal`](crate::HaltSignal)).
        Halted = 4,
    }
}

impl PluginError {
    /// A failure with a message.
    pub fn new(message: impl Into<String>) -> Self {
        PluginError {
            kind: ErrorKind::Failed,
            message: RString::from(message.into()),
        }
    }

    /// An error of a given kind.
    pub fn of(kind: ErrorKind, message: impl Into<String>) -> Self {
        PluginError {
            kind,
            message: RString::from(message.into()),
        }
    }
}

impl PluginError {
    /// What kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, for people.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PluginError {}

/// The result of a plugin call on the Rust side.
pub type PluginResult<T> = Result<T, PluginError>;

/// The text of a caught panic.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

std::thread_local! {
    /// Where the last panic on this thread happened, as `file:line`.
    static PANICKED_AT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Records where each panic happens (for [`catch`]'s message), then does what the hook
/// before did. Each plugin library has its own copy of the standard library and so its own
/// hook: this sees the panics of the library it is compiled into.
fn record_panic_places() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some(at) = info.location() {
                let place = format!("{}:{}", at.file(), at.line());
                PANICKED_AT.with(|p| *p.borrow_mut() = Some(place));
            }
            before(info);
        }));
    });
}

/// Runs `f`, turning a panic into a `Panicked` error that names where it happened.
pub fn catch<T>(f: impl FnOnce() -> Result<T, PluginError>) -> RResult<T, PluginError> {
    record_panic_places();
    PANICKED_AT.with(|p| p.borrow_mut().take());
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.into(),
        Err(panic) => {
            let at = PANICKED_AT
                .with(|p| p.borrow_mut().take())
                .map(|place| format!(" at {place}"))
                .unwrap_or_default();
            RResult::RErr(PluginError::of(
                ErrorKind::Panicked,
                format!("the plugin panicked{at}: {}", panic_message(panic.as_ref())),
            ))
        }
    }
}
