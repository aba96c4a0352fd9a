//! The error that crosses the plugin boundary.

use abi_stable::StableAbi;
use abi_stable::std_types::RString;
use std::fmt;

/// What went wrong inside a plugin or a connection: a kind and a message that names the
/// thing and the place.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct PluginError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// The message, for people.
    pub message: RString,
}

/// Kinds of [`PluginError`].
#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The plugin or the database said no (bad SQL, a constraint, a missing table).
    Failed,
    /// The plugin panicked; the panic was caught at the boundary.
    Panicked,
    /// A connection could not be opened or was lost.
    Connection,
    /// The input is not what the plugin accepts (attributes, sources, targets).
    Invalid,
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

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PluginError {}

/// The result of a plugin call on the Rust side.
pub type PluginResult<T> = Result<T, PluginError>;
