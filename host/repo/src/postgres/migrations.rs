//! The schema migrations of the PostgreSQL repository: the steps of [`crate::schema`]
//! as [`postgres_ddl`] translates them, applied in one transaction under an advisory lock
//! (hosts starting together upgrade once), the version kept in `weft_schema_version`. A
//! failing step leaves the database as it was (PostgreSQL's DDL is transactional).

use super::session::{Conn, PgSession};
use crate::error::Result;
use crate::schema::{Upgrade, latest, postgres_ddl, run_steps};
use crate::sql::{Session, args};

/// The advisory lock a schema upgrade holds (one per database): `weft` in ASCII.
const UPGRADE_LOCK: i64 = 0x7765_6674;

/// The version table, created by the first upgrade.
const VERSION_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS weft_schema_version (version BIGINT NOT NULL)";

/// The schema version (0 for a database weft never wrote).
///
/// # Errors
///
/// When the version cannot be read.
pub fn version(s: &dyn Session) -> Result<i64> {
    let exists: Option<Option<String>> = s.value(
        "SELECT CAST(to_regclass('weft_schema_version') AS TEXT)",
        args![],
    )?;
    if exists.flatten().is_none() {
        return Ok(0);
    }
    Ok(s.value("SELECT version FROM weft_schema_version", args![])?
        .unwrap_or(0))
}

/// Brings the repository to schema version `target` (at most the latest) in one transaction.
///
/// # Errors
///
/// [`crate::error::Error::TooNew`] when the database is newer (nothing is changed), or
/// [`crate::error::Error::Migration`] when a step fails (nothing is changed).
pub fn to_version(conn: &mut Conn, target: i64) -> Result<Upgrade> {
    conn.batch("BEGIN")?;
    let done = {
        let s = PgSession::new(conn);
        steps(&s, target)
    };
    match done {
        Ok(up) => {
            conn.batch("COMMIT")?;
            Ok(up)
        }
        Err(e) => {
            let _ = conn.batch("ROLLBACK");
            Err(e)
        }
    }
}

/// [`to_version`] for the latest version.
///
/// # Errors
///
/// As [`to_version`].
pub fn to_latest(conn: &mut Conn) -> Result<Upgrade> {
    to_version(conn, latest())
}

fn steps(s: &dyn Session, target: i64) -> Result<Upgrade> {
    s.execute("SELECT pg_advisory_xact_lock(?1)", args![UPGRADE_LOCK])?;
    s.execute_batch(VERSION_TABLE)?;
    let from = version(s)?;
    let to = run_steps(s, from, target, postgres_ddl, |_| Ok(()))?;
    s.execute("DELETE FROM weft_schema_version", args![])?;
    s.execute(
        "INSERT INTO weft_schema_version (version) VALUES (?1)",
        args![to],
    )?;
    Ok(Upgrade { from, to })
}
