//! Why the executor could not do something, as types: an element that names nothing
//! ([`NoSuchElement`]), a host id another process holds ([`IdTaken`]), an action that cannot
//! run ([`Unrunnable`]), and an action whose end cannot be settled by its commit markers
//! ([`Unsettled`]). Each says what it is about in its message, as the log and the stored
//! error of an action show it.

use std::sync::Arc;
use std::time::Duration;
use weft_repo as repo;

/// An element of a run that names nothing to run (nothing is stored).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoSuchElement {
    /// `S` names no sheet.
    #[error("element S {0}: sheet {0} does not exist")]
    Sheet(i64),
    /// `A` names an object node.
    #[error("element A {0}: node {0} is an object, not an action")]
    NotAnAction(i64),
    /// `A` names no node.
    #[error("element A {0}: action {0} does not exist")]
    Action(i64),
    /// `F` names no folder.
    #[error("element F {0}: folder {0} does not exist")]
    Folder(i64),
    /// Not `S`, `A` or `F`.
    #[error("element type `{0}` is not known; use S (sheet), A (action) or F (folder)")]
    Kind(char),
}

/// Why this host may not settle anything under its id now.
#[derive(Debug, thiserror::Error)]
pub enum IdTaken {
    /// The repository could not be asked.
    #[error("the repository cannot say who holds host id {host}: {source}")]
    Unreadable {
        /// The host id.
        host: String,
        /// The repository's error.
        #[source]
        source: repo::Error,
    },
    /// A live process holds it.
    #[error(
        "host id {host} (HOME/host-id) is in use: {why}. A copy of a host's HOME must get an id of its own: delete host-id in the copy's HOME before its first start"
    )]
    InUse {
        /// The host id.
        host: String,
        /// Who holds it and how that is known.
        why: String,
    },
    /// Its heartbeat neither aged nor moved for longer than a lease can explain.
    #[error(
        "host id {host} (HOME/host-id): its heartbeat neither aged past the lease nor moved in {waited:?}"
    )]
    Stuck {
        /// The host id.
        host: String,
        /// How long this host waited.
        waited: Duration,
    },
}

/// Why a claimed action cannot run: it fails with this without running.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unrunnable {
    /// Its instance was deleted meanwhile.
    #[error("its batch instance is gone")]
    InstanceGone,
    /// Its instance cannot be read.
    #[error("its batch instance cannot be read: {0}")]
    InstanceUnreadable(Arc<repo::Error>),
    /// The default schemas of the connections cannot be read.
    #[error("the schemas of its connections cannot be read from the repository: {0}")]
    Schemas(Arc<repo::Error>),
    /// Its stored plan cannot be read (the repository's message).
    #[error("{0}")]
    Plan(String),
}

/// Why an action whose end was not recorded cannot be settled by its commit markers.
#[derive(Debug, thiserror::Error)]
pub enum Unsettled {
    /// It wrote connections where no marker could be written.
    #[error("it wrote connection(s) {0:?} without a commit marker")]
    Unmarked(Vec<i64>),
    /// What it would run with cannot be had.
    #[error(transparent)]
    Unrunnable(#[from] Unrunnable),
    /// The key file cannot be read.
    #[error("the key file cannot be read: {0}")]
    KeyFile(weft_core::keys::Error),
    /// There is no key file.
    #[error("there is no key file")]
    NoKeyFile,
    /// What its targets' markers could not tell.
    #[error(transparent)]
    Markers(#[from] Untold),
}

/// Why the commit markers cannot tell whether an action committed
/// (`exec::action::committed`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Untold {
    /// It writes no connection, so it leaves no marker anywhere.
    #[error("it writes no connection, so no commit marker can tell whether it ran to its end")]
    NoMarkerPlace,
    /// The key file has no entry for a connection it writes.
    #[error("the key file has no entry for connection {0}")]
    NoEntry(i64),
    /// A connection it writes keeps no markers.
    #[error("connection {connection} keeps no commit marker ({option}=off)")]
    MarkerOff {
        /// The connection.
        connection: i64,
        /// The key file option that turned them off.
        option: &'static str,
    },
    /// A connection it writes cannot be opened.
    #[error("connection {connection} cannot be opened to look for the commit marker: {error}")]
    CannotOpen {
        /// The connection.
        connection: i64,
        /// What the bridge said.
        error: String,
    },
    /// The marker table of a connection cannot be read.
    #[error("connection {connection}: the commit marker cannot be read: {error}")]
    CannotRead {
        /// The connection.
        connection: i64,
        /// What the database said.
        error: String,
    },
    /// Its marker is on some connections and not on others.
    #[error("committed on connection(s) {found:?} but not on {missing:?}")]
    Partly {
        /// Where the marker is.
        found: Vec<i64>,
        /// Where it is not.
        missing: Vec<i64>,
    },
}

/// Why an action did not finish: the `Err` of its outcome (`exec::action::Ran`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Stopped {
    /// It failed: before it ran, in its module, or at a commit. Its transactions were rolled
    /// back, but a process module (which commits itself) may have written `partial`.
    #[error("{message}")]
    Failed {
        /// What went wrong, naming the action (secrets redacted).
        message: String,
        /// The rows it said it handled before it failed (zero unless a process module's
        /// `failed` answer gave them).
        partial: weft_sdk::RunOutcome,
    },
    /// Its instance was halted before it committed; its transactions were rolled back
    /// (`partial` as for a failure).
    #[error("halted on request: {message}")]
    Halted {
        /// How it stopped.
        message: String,
        /// The rows it said it handled before it stopped.
        partial: weft_sdk::RunOutcome,
    },
}

impl Stopped {
    /// A failure with `message` and no rows handled.
    pub fn failed(message: impl Into<String>) -> Self {
        Stopped::Failed {
            message: message.into(),
            partial: weft_sdk::RunOutcome::default(),
        }
    }
}
