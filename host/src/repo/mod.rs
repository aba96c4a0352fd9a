//! The repository: one SQLite file (`HOME/repository.db`) in WAL mode, its versioned schema
//! ([`migrations`]), the writes of a deploy ([`Writer`]) and a full logical [`dump()`].
//!
//! Every connection gets `synchronous=NORMAL`, a busy timeout and foreign keys. Writes go
//! through one writer connection behind a mutex, each in a `BEGIN IMMEDIATE` transaction, so
//! that concurrent deploys neither fail with `SQLITE_BUSY` nor interleave. A write that is
//! not committed changes nothing: a rejected deploy or a dry run rolls back.
//! This module knows nothing of HTTP; callers bring a parsed and validated document.

pub mod dump;
mod facts;
pub mod instances;
pub mod migrations;
mod writer;

pub use dump::dump;
pub use facts::Facts;
pub use writer::{Change, ChangeKind, IdTable, Writer};

use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

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
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// Stored content could not be read back.
    #[error("the repository holds content that cannot be read: {0}")]
    Corrupt(String),
    /// A row changed between reading and writing it (the transaction was rolled back).
    #[error("changed meanwhile: {0}")]
    Conflict(String),
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
    /// The kind of fault, from SQLite's result code.
    pub fn fault(&self) -> Fault {
        use rusqlite::ErrorCode;
        let source = match self {
            Error::Open { source, .. }
            | Error::Sql { source, .. }
            | Error::Migration { source, .. } => source,
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

/// The current UTC time as the repository stores it: `YYYY-MM-DD HH:MM:SS`.
pub fn now_utc() -> String {
    chrono::Utc::now().format("%Y-%m-%d %H:%M:%S").to_string()
}

/// Opens a connection to the repository file with the settings every connection needs.
///
/// # Errors
///
/// [`Error::Open`] when the file cannot be opened or configured.
pub fn connect(path: &Path) -> Result<Connection> {
    let open = |e| Error::Open {
        path: path.to_owned(),
        source: e,
    };
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(open)?;
    conn.busy_timeout(Duration::from_secs(10)).map_err(open)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(open)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(open)?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(open)?;
    crate::clock::register_sql_functions(&conn).map_err(open)?;
    Ok(conn)
}

/// The repository of a running server.
#[derive(Debug)]
pub struct Repository {
    path: PathBuf,
    writer: Mutex<Connection>,
    checkpointer: Checkpointer,
    /// Tests only: every use of the writer connection fails as on a full disk.
    #[cfg(test)]
    full: std::sync::atomic::AtomicBool,
}

/// How often the background checkpointer copies the WAL into the database file.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(500);

/// Copies the write-ahead log into the database file on a thread of its own (a `PASSIVE`
/// checkpoint, which never blocks writers), so that no committing request pays for it: the
/// writer connection's automatic checkpoint is off. Stops when dropped.
#[derive(Debug)]
struct Checkpointer {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    done: std::sync::Arc<std::sync::atomic::AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Checkpointer {
    fn start(path: &Path) -> Result<Self> {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let conn = connect(path)?;
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let done = std::sync::Arc::new(AtomicU64::new(0));
        let (flag, count) = (std::sync::Arc::clone(&stop), std::sync::Arc::clone(&done));
        let thread = std::thread::Builder::new()
            .name("weft-checkpoint".to_owned())
            .spawn(move || {
                while !flag.load(Ordering::SeqCst) {
                    std::thread::sleep(CHECKPOINT_EVERY);
                    // (busy, frames in the log, frames copied); a failure is tried again
                    // at the next round, and SQLite's own checkpoint at close remains.
                    match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                        Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
                    }) {
                        Ok((log, copied)) if log > 0 && copied > 0 => {
                            count.fetch_add(1, Ordering::SeqCst);
                        }
                        Ok(_) => {}
                        Err(e) => tracing::debug!(message = "A background checkpoint failed; the next one tries again.", error = %e),
                    }
                }
            })
            .map_err(|e| Error::Corrupt(format!("cannot start the checkpoint thread: {e}")))?;
        Ok(Checkpointer {
            stop,
            done,
            thread: Some(thread),
        })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Repository {
    /// Opens (creating if needed) the repository at `path` and brings its schema to the
    /// current version.
    ///
    /// # Errors
    ///
    /// When the file cannot be opened, or its schema is newer than this program's, or a
    /// migration fails.
    pub fn open(path: &Path) -> Result<Self> {
        let mut conn = connect(path)?;
        migrations::to_latest(&mut conn)?;
        // The checkpointer copies the log in the background; commits do not wait for it.
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(|e| Error::with_sql(e, "PRAGMA wal_autocheckpoint = 0"))?;
        Ok(Repository {
            path: path.to_owned(),
            writer: Mutex::new(conn),
            checkpointer: Checkpointer::start(path)?,
            #[cfg(test)]
            full: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Tests only: makes every use of the writer connection fail with SQLite's "database
    /// or disk is full" (`true`), or work again (`false`).
    #[cfg(test)]
    pub fn fill_disk(&self, full: bool) {
        self.full.store(full, std::sync::atomic::Ordering::SeqCst);
    }

    /// Tests only: how long the writer connection waits for another writer's lock before it
    /// says the repository is busy (10 seconds otherwise), so that a test of a busy
    /// repository need not wait that long.
    #[cfg(test)]
    pub fn set_busy_timeout(&self, patience: Duration) {
        let conn = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        conn.busy_timeout(patience).expect("busy timeout");
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Connection>> {
        #[cfg(test)]
        if self.full.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Error::with_sql(
                rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
                    Some("database or disk is full (injected by a test)".to_owned()),
                ),
                "",
            ));
        }
        Ok(self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// How many background checkpoints copied something so far.
    pub fn checkpoints(&self) -> u64 {
        self.checkpointer
            .done
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the writer connection outside any explicit transaction (reads, and single
    /// statements, each its own transaction).
    ///
    /// # Errors
    ///
    /// What `f` returns.
    pub fn with<R>(&self, f: impl FnOnce(&Connection) -> Result<R>) -> Result<R> {
        let conn = self.lock()?;
        f(&conn)
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction, committed when `f` succeeds.
    ///
    /// # Errors
    ///
    /// What `f` returns, or a failure to begin or commit.
    pub fn tx<R>(&self, f: impl FnOnce(&Connection) -> Result<R>) -> Result<R> {
        let mut conn = self.lock()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| Error::with_sql(e, "BEGIN IMMEDIATE"))?;
        let value = f(&tx)?;
        tx.commit().map_err(|e| Error::with_sql(e, "COMMIT"))?;
        Ok(value)
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction on the writer connection. The
    /// transaction commits when `f` returns `Ok((value, true))` and rolls back otherwise, so a
    /// rejected or dry-run deploy changes nothing.
    ///
    /// # Errors
    ///
    /// A repository error from `f`, or from beginning or committing the transaction.
    pub fn write<R>(&self, f: impl FnOnce(&Writer<'_>) -> Result<(R, bool)>) -> Result<R> {
        // A panic while holding the lock cannot leave a half-done transaction behind (the
        // transaction rolls back when dropped), so a poisoned lock is safe to take over.
        let mut conn = self.lock()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| Error::with_sql(e, "BEGIN IMMEDIATE"))?;
        let writer = Writer::new(&tx);
        let (value, commit) = f(&writer)?;
        if commit {
            tx.commit().map_err(|e| Error::with_sql(e, "COMMIT"))?;
        } else {
            tx.rollback().map_err(|e| Error::with_sql(e, "ROLLBACK"))?;
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests;
