//! The repository's error, its kinds of fault, its result type and the UTC time text it
//! stores: what every part of the repository shares (so that none of them imports its
//! parent module for it).

use std::path::PathBuf;

/// A repository error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The database file could not be opened or prepared.
    #[error("cannot open the repository {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// A statement failed.
    #[error("repository statement failed: {source}{}", sql_suffix(.sql))]
    Sql {
        /// The statement, where known.
        sql: String,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// The file's schema is newer than this program's.
    #[error(
        "the repository schema is at version {found}, newer than this weft knows (version {latest}); \
         it was written by a newer weft: run that version, or restore a backup of the repository \
         (a downgrade is not possible)"
    )]
    TooNew {
        /// The file's schema version.
        found: i64,
        /// This program's latest version.
        latest: i64,
    },
    /// A migration failed; nothing of the upgrade was applied.
    #[error(
        "upgrading the repository schema to version {version} failed, nothing was changed: {source}"
    )]
    Migration {
        /// The version the failing migration leads to.
        version: i64,
        /// What the database said.
        source: Box<Error>,
    },
    /// The PostgreSQL repository cannot be reached or refuses the connection.
    #[error("cannot connect to the PostgreSQL repository at {place}: {message}")]
    PostgresOpen {
        /// `host:port`.
        place: String,
        /// What went wrong (never the password).
        message: String,
    },
    /// A statement failed on the PostgreSQL repository.
    #[error("repository statement failed: {message}{}", sql_suffix(.sql))]
    Postgres {
        /// The statement.
        sql: String,
        /// PostgreSQL's SQLSTATE, when the server answered.
        code: Option<String>,
        /// What PostgreSQL said.
        message: String,
    },
    /// Stored content could not be read back.
    #[error("the repository holds content that cannot be read: {0}")]
    Corrupt(String),
    /// A row changed between reading and writing it (the transaction was rolled back).
    #[error("changed meanwhile: {0}")]
    Conflict(String),
    /// A new instance would run plans of this sheet that a deploy replaced (and no instance
    /// kept) since they were read: the instance was not stored; read the plans again.
    #[error("sheet {0} was deployed again while a run of it started")]
    Redeployed(i64),
    /// A backend did not run the work it was given exactly once: a bug of weft's, named as
    /// such rather than hidden.
    #[error("the repository backend did not run {0}")]
    NotRun(&'static str),
}

fn sql_suffix(sql: &str) -> String {
    if sql.is_empty() {
        String::new()
    } else {
        format!(" (in `{sql}`)")
    }
}

/// What kind of fault a repository error is, for what a client is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The disk (or the database's size limit) is full.
    Full,
    /// Reading or writing the file failed (an I/O error, a read-only or vanished file).
    Io,
    /// Another writer held the database longer than the busy timeout.
    Busy,
    /// Anything else (a bug, a corrupt row).
    Other,
}

impl Error {
    /// Whether PostgreSQL ended the transaction because it met another one: chosen as a
    /// deadlock's victim (`40P01`) or not serializable (`40001`). Run again, it may pass.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Postgres { code: Some(c), .. } if c == "40P01" || c == "40001")
    }

    /// The kind of fault, from SQLite's result code or PostgreSQL's SQLSTATE.
    pub fn fault(&self) -> Fault {
        use rusqlite::ErrorCode;
        let source = match self {
            Error::Open { source, .. } | Error::Sql { source, .. } => source,
            Error::Migration { source, .. } => return source.fault(),
            Error::PostgresOpen { .. } => return Fault::Io,
            Error::Postgres { code, .. } => {
                return match code.as_deref() {
                    // disk_full, insufficient_resources, out_of_memory
                    Some("53100" | "53000" | "53200") => Fault::Full,
                    // lock_not_available, deadlock_detected, serialization_failure
                    Some("55P03" | "40P01" | "40001") => Fault::Busy,
                    // no answer (the connection broke), or a connection exception
                    None => Fault::Io,
                    Some(c) if c.starts_with("08") || c.starts_with("57P") => Fault::Io,
                    Some(_) => Fault::Other,
                };
            }
            _ => return Fault::Other,
        };
        match source.sqlite_error_code() {
            Some(ErrorCode::DiskFull) => Fault::Full,
            Some(
                ErrorCode::SystemIoFailure
                | ErrorCode::CannotOpen
                | ErrorCode::ReadOnly
                | ErrorCode::FileLockingProtocolFailed
                | ErrorCode::NotADatabase
                | ErrorCode::DatabaseCorrupt,
            ) => Fault::Io,
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Fault::Busy,
            _ => Fault::Other,
        }
    }

    /// Attaches the statement that failed.
    pub fn with_sql(source: rusqlite::Error, sql: &str) -> Self {
        Error::Sql {
            sql: sql.to_owned(),
            source,
        }
    }
}

impl From<rusqlite::Error> for Error {
    fn from(source: rusqlite::Error) -> Self {
        Error::Sql {
            sql: String::new(),
            source,
        }
    }
}

/// A repository result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The service clock's now (the one clock of the service: `--fake-now` and
/// `--stepped-clock` move it too) in UTC as the repository stores it, to the millisecond:
/// `YYYY-MM-DD HH:MM:SS.mmm` (rows written before kept whole seconds; both sort as text).
pub fn now_utc() -> String {
    stored_time(weft_core::sched::clock::current().clock.now())
}

/// A time as the repository stores it (see [`now_utc`]), whole seconds or milliseconds, as
/// UTC; `None` for text that is not one.
pub fn parse_stored_time(t: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f")
        .ok()
        .map(|t| t.and_utc())
}

/// `t` as the repository stores it (see [`now_utc`]): written field by field, as chrono's
/// `format` reads its pattern again at every call (each action's end writes the time).
pub fn stored_time(t: chrono::DateTime<chrono::Utc>) -> String {
    use chrono::{Datelike as _, Timelike as _};
    use std::fmt::Write as _;
    // Years of other widths and leap seconds (never the clock's), as chrono writes them.
    if !(0..=9999).contains(&t.year()) || t.nanosecond() >= 1_000_000_000 {
        return t.format("%Y-%m-%d %H:%M:%S%.3f").to_string();
    }
    let mut s = String::with_capacity(23);
    // Writing into a String does not fail.
    let _ = write!(
        s,
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03}",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.nanosecond() / 1_000_000
    );
    s
}

#[cfg(test)]
mod tests {
    use super::stored_time;
    use chrono::{TimeZone as _, Utc};

    #[test]
    fn stored_time_is_what_chrono_formats() {
        for t in [
            Utc.with_ymd_and_hms(2026, 3, 29, 1, 2, 3)
                .single()
                .expect("a time"),
            Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0)
                .single()
                .expect("a time"),
            Utc.with_ymd_and_hms(9999, 12, 31, 23, 59, 59)
                .single()
                .expect("a time")
                + chrono::Duration::milliseconds(987),
            Utc.with_ymd_and_hms(2026, 11, 27, 13, 0, 0)
                .single()
                .expect("a time")
                + chrono::Duration::nanoseconds(1_999_999),
        ] {
            assert_eq!(
                stored_time(t),
                t.format("%Y-%m-%d %H:%M:%S%.3f").to_string()
            );
        }
    }
}
