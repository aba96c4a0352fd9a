//! The schema migrations of the SQLite repository (what `weft schema` and
//! `bin/deploySchema.sh` run, and the server runs on start): the steps of
//! [`crate::schema`], applied in one transaction, the version kept as
//! `PRAGMA user_version`. A repository of any earlier version is brought to the latest in one
//! transaction: a failing step leaves it as it was.

use crate::error::{Error, Result};
pub use crate::schema::{MIGRATIONS, Migration, Upgrade, latest};
use rusqlite::{Connection, TransactionBehavior};

/// The schema version of the open repository (0 for an empty file).
///
/// # Errors
///
/// When the pragma cannot be read.
pub fn version(conn: &Connection) -> Result<i64> {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|e| Error::with_sql(e, "PRAGMA user_version"))
}

/// Brings the repository to the latest schema version in one transaction.
///
/// # Errors
///
/// [`Error::TooNew`] when the file is newer than this program (nothing is changed), or
/// [`Error::Migration`] when a step fails (nothing is changed).
pub fn to_latest(conn: &mut Connection) -> Result<Upgrade> {
    to_version(conn, latest())
}

/// Brings the repository to schema version `target` (at most the latest). Tests use it to
/// make fixtures of earlier versions.
///
/// # Errors
///
/// As [`to_latest`]; also when `target` is below the file's version.
pub fn to_version(conn: &mut Connection, target: i64) -> Result<Upgrade> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| Error::with_sql(e, "BEGIN IMMEDIATE"))?;
    let from = version(&tx)?;
    crate::schema::run_steps(&*tx, from, target, str::to_owned, |to| {
        tx.pragma_update(None, "user_version", to)
            .map_err(|e| Error::with_sql(e, "PRAGMA user_version"))
    })?;
    let to = version(&tx)?;
    tx.commit().map_err(|e| Error::with_sql(e, "COMMIT"))?;
    Ok(Upgrade { from, to })
}
