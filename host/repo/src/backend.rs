//! What a backend of the repository is to [`Repository`](super::Repository): sessions and
//! transactions on which the shared statements run, where it is, and the change feed of one
//! that several hosts share. SQLite (a file in HOME) and PostgreSQL implement it here; the
//! statements themselves are the backends' common SQL ([`super::sql::Session`]).

use super::error::Result;
use super::postgres::Postgres;
use super::postgres::changes::{Feed, Listener};
use super::sql::Session;
use super::sqlite::Sqlite;
use std::sync::Arc;

/// A backend of the repository. Closures are passed as `&mut dyn FnMut` so that the trait
/// can be a trait object; [`Repository`](super::Repository) gives its callers the typed
/// forms.
pub(super) trait Backend: std::fmt::Debug + Send + Sync {
    /// Runs `f` on a session outside any explicit transaction (each statement its own).
    fn session(&self, f: &mut dyn FnMut(&dyn Session) -> Result<()>) -> Result<()>;

    /// Runs `f` in one transaction, committed when it returns `Ok(true)` and rolled back
    /// otherwise. `lock`, on a backend several hosts share, is an advisory lock taken first
    /// (no other transaction holding it runs beside); SQLite's one writer is that lock.
    fn transaction(
        &self,
        lock: Option<i64>,
        f: &mut dyn FnMut(&dyn Session) -> Result<bool>,
    ) -> Result<()>;

    /// Whether a transaction that lost a deadlock or could not be serialized is worth
    /// running again from its start (where other writers run beside).
    fn runs_conflicts_again(&self) -> bool;

    /// Where it is, for messages: the file, or the server's `host:port`.
    fn location(&self) -> String;

    /// The feed of every host's changes to instances, on a backend several hosts share.
    fn change_feed(&self, listener: Arc<dyn Listener>) -> Option<std::io::Result<Feed>>;

    /// The SQLite repository, for what only it has (its file, its checkpoints, the faults
    /// the tests give it).
    fn sqlite(&self) -> Option<&Sqlite>;

    /// The whole repository as text, in a stable order.
    fn dump(&self) -> Result<String>;
}

impl Backend for Sqlite {
    fn session(&self, f: &mut dyn FnMut(&dyn Session) -> Result<()>) -> Result<()> {
        self.with(|c| f(c))
    }

    fn transaction(
        &self,
        _lock: Option<i64>,
        f: &mut dyn FnMut(&dyn Session) -> Result<bool>,
    ) -> Result<()> {
        self.tx_if(|c| f(c).map(|commit| ((), commit)))
    }

    fn runs_conflicts_again(&self) -> bool {
        false
    }

    fn location(&self) -> String {
        self.path().display().to_string()
    }

    fn change_feed(&self, _listener: Arc<dyn Listener>) -> Option<std::io::Result<Feed>> {
        // One host alone changes it: its own changes are all there are.
        None
    }

    fn sqlite(&self) -> Option<&Sqlite> {
        Some(self)
    }

    fn dump(&self) -> Result<String> {
        self.with(super::sqlite::dump)
    }
}

impl Backend for Postgres {
    fn session(&self, f: &mut dyn FnMut(&dyn Session) -> Result<()>) -> Result<()> {
        self.with(f)
    }

    fn transaction(
        &self,
        lock: Option<i64>,
        f: &mut dyn FnMut(&dyn Session) -> Result<bool>,
    ) -> Result<()> {
        self.tx_if(lock, |s| f(s).map(|commit| ((), commit)))
    }

    fn runs_conflicts_again(&self) -> bool {
        true
    }

    fn location(&self) -> String {
        format!("postgresql at {}", self.place())
    }

    fn change_feed(&self, listener: Arc<dyn Listener>) -> Option<std::io::Result<Feed>> {
        Some(self.listen(listener))
    }

    fn sqlite(&self) -> Option<&Sqlite> {
        None
    }

    fn dump(&self) -> Result<String> {
        Postgres::dump(self)
    }
}
