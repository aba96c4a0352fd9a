//! The audit in the repository (issue 28): who did what, when, from where, on which host,
//! and how it ended, one row each, appended (nothing here changes a row; retention removes
//! the old ones as it removes old runs). Every host writes into the one table, so the trail
//! of a repository shared by several hosts is one.

use crate::error::Result;
use crate::sql::{Session, args};
use weft_protocol::commands::AuditEntry;

/// An entry to append (its number and time are the repository's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The host that answered.
    pub host: String,
    /// Who: a user's name, `keyfile` (the key file's token), `loopback` (no token asked) or
    /// `scheduler`.
    pub user: String,
    /// How they were known: `token ID`, `keyfile`, `loopback`, `scheduler`, or `none` for a
    /// refused attempt without a right token.
    pub via: String,
    /// From where: the client's address.
    pub client: String,
    /// The command.
    pub command: String,
    /// `done`, `failed` or `refused`.
    pub outcome: String,
    /// What it touched or why it was refused, in a line.
    pub what: String,
}

/// What to list; each `None` is no limit.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this user's.
    pub user: Option<String>,
    /// Only this command's.
    pub command: Option<String>,
    /// Only this outcome.
    pub outcome: Option<String>,
    /// At or after (stored UTC text).
    pub since: Option<String>,
    /// Before (stored UTC text).
    pub until: Option<String>,
    /// Entries older than this number (paging back).
    pub before_id: Option<i64>,
    /// The most to answer.
    pub limit: i64,
}

/// Appends `entry`.
///
/// # Errors
///
/// A repository error.
pub fn append(tx: &dyn Session, entry: &Entry) -> Result<()> {
    tx.execute(
        "INSERT INTO audit (at, host, user_name, via, client, command, outcome, what)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        args![
            crate::error::now_utc(),
            entry.host,
            entry.user,
            entry.via,
            entry.client,
            entry.command,
            entry.outcome,
            entry.what
        ],
    )?;
    Ok(())
}

/// The entries `filter` asks for, newest first.
///
/// # Errors
///
/// A repository error.
pub fn list(c: &dyn Session, filter: &Filter) -> Result<Vec<AuditEntry>> {
    c.rows(
        "SELECT id, at, host, user_name, via, client, command, outcome, what FROM audit
          WHERE (CAST(?1 AS TEXT) IS NULL OR user_name = ?1)
            AND (CAST(?2 AS TEXT) IS NULL OR command = ?2)
            AND (CAST(?3 AS TEXT) IS NULL OR outcome = ?3)
            AND (CAST(?4 AS TEXT) IS NULL OR at >= ?4)
            AND (CAST(?5 AS TEXT) IS NULL OR at < ?5)
            AND (CAST(?6 AS BIGINT) IS NULL OR id < ?6)
          ORDER BY id DESC LIMIT ?7",
        args![
            filter.user,
            filter.command,
            filter.outcome,
            filter.since,
            filter.until,
            filter.before_id,
            filter.limit
        ],
        |r| {
            Ok(AuditEntry {
                id: r.get(0)?,
                at: crate::instances::iso(&r.get::<String>(1)?),
                host: r.get(2)?,
                user: r.get(3)?,
                via: r.get(4)?,
                client: r.get(5)?,
                command: r.get(6)?,
                outcome: r.get(7)?,
                what: r.get(8)?,
            })
        },
    )
}

/// Deletes (at most [`crate::retention::ROUND`]) entries written before `before`.
///
/// # Errors
///
/// A repository error.
pub fn prune(tx: &dyn Session, before: &str) -> Result<usize> {
    tx.execute(
        &format!(
            "DELETE FROM audit WHERE id IN (
                 SELECT id FROM audit WHERE at < ?1 ORDER BY id LIMIT {})",
            crate::retention::ROUND
        ),
        args![before],
    )
}
