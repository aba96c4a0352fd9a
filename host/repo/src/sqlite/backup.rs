//! Backup and restore of a SQLite repository file. A backup is `VACUUM INTO` a new file: a
//! consistent copy of one moment, taken in a read transaction, so a running server goes on
//! reading and writing meanwhile (its writes after that moment are not in the copy), and
//! checked (`PRAGMA integrity_check`, its schema version) before it is called done. A restore
//! checks the file the same way and puts it in place of the repository by a rename, the
//! old file's write-ahead log removed, so that a server started on it finds one or the other,
//! never half of both.

use crate::error::{Error, Result};
use rusqlite::{Connection, OpenFlags};
use std::path::Path;

/// What a checked repository file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// Its schema version.
    pub schema_version: i64,
    /// Its size in bytes.
    pub bytes: u64,
}

/// Copies the repository at `repository` to `dest` (which must not exist) and checks the
/// copy.
///
/// # Errors
///
/// [`Error::Corrupt`] when `dest` exists or the copy fails its check; a SQLite error.
pub fn backup(repository: &Path, dest: &Path) -> Result<Checked> {
    if dest.exists() {
        return Err(Error::Corrupt(format!(
            "{} exists already; a backup is written to a new file",
            dest.display()
        )));
    }
    let conn = Connection::open_with_flags(repository, OpenFlags::SQLITE_OPEN_READ_WRITE).map_err(
        |source| Error::Open {
            path: repository.to_owned(),
            source,
        },
    )?;
    conn.busy_timeout(std::time::Duration::from_secs(30))?;
    let target = dest.to_string_lossy().into_owned();
    conn.execute("VACUUM INTO ?1", [&target])?;
    check(dest)
}

/// Checks that `file` is a whole weft repository: SQLite's integrity check passes and its
/// schema version is one this weft reads.
///
/// # Errors
///
/// [`Error::Corrupt`] naming what is wrong; a SQLite error.
pub fn check(file: &Path) -> Result<Checked> {
    let conn =
        Connection::open_with_flags(file, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(|source| {
            Error::Open {
                path: file.to_owned(),
                source,
            }
        })?;
    let verdict: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    if verdict != "ok" {
        return Err(Error::Corrupt(format!(
            "{} fails SQLite's integrity check: {verdict}",
            file.display()
        )));
    }
    let schema_version = super::migrations::version(&conn)?;
    let latest = i64::try_from(crate::schema::MIGRATIONS.len()).unwrap_or(i64::MAX);
    if schema_version < 1 || schema_version > latest {
        return Err(Error::Corrupt(format!(
            "{} is no weft repository this weft reads (schema version {schema_version}, this weft reads 1 to {latest})",
            file.display()
        )));
    }
    let bytes = std::fs::metadata(file).map(|m| m.len()).unwrap_or_default();
    Ok(Checked {
        schema_version,
        bytes,
    })
}

/// Puts the checked backup `from` in place of the repository file `repository`: the old
/// file's log checkpointed into it, the backup copied beside it, the old log and shared
/// memory removed, then the copy renamed over it.
/// The caller makes sure no server has the repository open.
///
/// # Errors
///
/// As [`check`]; a file that cannot be copied or renamed.
pub fn restore(from: &Path, repository: &Path) -> Result<Checked> {
    let checked = check(from)?;
    let io = |what: &str, e: std::io::Error| Error::Corrupt(format!("{what}: {e}"));
    // What the old file's log holds goes into it first, so that whatever fails below
    // leaves it whole.
    if repository.exists() {
        let old = Connection::open(repository).map_err(|source| Error::Open {
            path: repository.to_owned(),
            source,
        })?;
        old.busy_timeout(std::time::Duration::from_secs(30))?;
        old.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    }
    let beside = repository.with_extension("db.restoring");
    std::fs::copy(from, &beside).map_err(|e| {
        io(
            &format!("copying {} to {}", from.display(), beside.display()),
            e,
        )
    })?;
    for extra in ["db-wal", "db-shm"] {
        let f = repository.with_extension(extra);
        match std::fs::remove_file(&f) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(&format!("removing {}", f.display()), e)),
        }
    }
    std::fs::rename(&beside, repository).map_err(|e| {
        io(
            &format!("renaming {} to {}", beside.display(), repository.display()),
            e,
        )
    })?;
    Ok(checked)
}

/// The processes the hosts of the repository at `file` name (`hosts.process`): a server
/// that stopped cleanly left none; one that runs (or crashed) left its own.
///
/// # Errors
///
/// A SQLite error.
pub fn holders(file: &Path) -> Result<Vec<String>> {
    let conn =
        Connection::open_with_flags(file, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(|source| {
            Error::Open {
                path: file.to_owned(),
                source,
            }
        })?;
    let mut st = conn.prepare("SELECT process FROM hosts WHERE process IS NOT NULL")?;
    let rows = st.query_map([], |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<std::result::Result<Vec<_>, _>>()?)
}
