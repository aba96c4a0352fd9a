//! The SQLite repository: one file (`HOME/repository.db`) in WAL mode, its versioned schema
//! ([`migrations`]), a full logical [`dump()`], and the store traits of [`super::store`] over
//! it: the statements shared with the other backend (`super::writer`, `super::instances`,
//! `super::schedules`) run here on a SQLite connection (`session`).
//!
//! Every connection gets `synchronous=NORMAL`, a busy timeout and foreign keys. Writes go
//! through one writer connection behind a mutex, each in a `BEGIN IMMEDIATE` transaction, so
//! that concurrent deploys neither fail with `SQLITE_BUSY` nor interleave. A write that is
//! not committed changes nothing: a rejected deploy or a dry run rolls back.

pub mod backup;
pub mod dump;
pub use dump::dump;
pub mod migrations;
mod session;

use crate::error::{Error, Result};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

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
    // A page cache of up to 16 MiB (SQLite's default is 2 MiB): the start of a run of
    // 10,000 actions writes some 6 MiB of rows and index pages in one transaction, which
    // with the default spills to the WAL before its commit. Pages are taken as used.
    conn.pragma_update(None, "cache_size", -16_384)
        .map_err(open)?;
    // Statements kept prepared, by text: the repository's run path alone uses some twenty
    // (an action's end, what follows it and the next claim, in one transaction), more than
    // rusqlite's default of 16, which made it prepare them again at every action.
    conn.set_prepared_statement_cache_capacity(STATEMENTS_KEPT);
    // Plans that never look at bound values (the query planner's stability guarantee): else
    // SQLite prepares a join with a bound `column = ?` again at every execution, to
    // propagate the value (the end of each action, each cycle check of a deploy), and kept
    // statements save nothing. The repository's values are keys; no plan depends on them.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(open)?;
    weft_core::connect::sqlite::register_clock_functions(&conn).map_err(open)?;
    Ok(conn)
}

/// How many statements a repository connection keeps prepared (the least recently used
/// goes first).
const STATEMENTS_KEPT: usize = 256;

/// The SQLite backend of a running server's repository (`crate::Repository`).
#[derive(Debug)]
pub struct Sqlite {
    path: PathBuf,
    writer: Mutex<Connection>,
    checkpointer: Checkpointer,
    /// Tests only: every use of the writer connection fails as on a full disk.
    #[cfg(any(test, feature = "testing"))]
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

impl Sqlite {
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
        Ok(Sqlite {
            path: path.to_owned(),
            writer: Mutex::new(conn),
            checkpointer: Checkpointer::start(path)?,
            #[cfg(any(test, feature = "testing"))]
            full: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Tests only: makes every use of the writer connection fail with SQLite's "database
    /// or disk is full" (`true`), or work again (`false`).
    #[cfg(any(test, feature = "testing"))]
    pub fn fill_disk(&self, full: bool) {
        self.full.store(full, std::sync::atomic::Ordering::SeqCst);
    }

    /// Tests only: how long the writer connection waits for another writer's lock before it
    /// says the repository is busy (10 seconds otherwise), so that a test of a busy
    /// repository need not wait that long.
    #[cfg(any(test, feature = "testing"))]
    pub fn set_busy_timeout(&self, patience: Duration) {
        let conn = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        conn.busy_timeout(patience).expect("busy timeout");
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Connection>> {
        #[cfg(any(test, feature = "testing"))]
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
    pub(super) fn with<R>(&self, f: impl FnOnce(&Connection) -> Result<R>) -> Result<R> {
        let conn = self.lock()?;
        f(&conn)
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction on the writer connection, committed
    /// when `f` returns `Ok((value, true))` and rolled back otherwise (a rejected or dry-run
    /// deploy changes nothing).
    ///
    /// # Errors
    ///
    /// What `f` returns, or a failure to begin, commit or roll back.
    pub(super) fn tx_if<R>(&self, f: impl FnOnce(&Connection) -> Result<(R, bool)>) -> Result<R> {
        // A panic while holding the lock cannot leave a half-done transaction behind (the
        // transaction rolls back when dropped), so a poisoned lock is safe to take over.
        let mut conn = self.lock()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| Error::with_sql(e, "BEGIN IMMEDIATE"))?;
        let (value, commit) = f(&tx)?;
        if commit {
            tx.commit().map_err(|e| Error::with_sql(e, "COMMIT"))?;
        } else {
            tx.rollback().map_err(|e| Error::with_sql(e, "ROLLBACK"))?;
        }
        Ok(value)
    }
}

/// The schema version of the repository file at `path`, read without changing anything
/// (read-only, without the settings of [`connect`]).
///
/// # Errors
///
/// When the file cannot be opened or read.
pub fn schema_version(path: &Path) -> Result<i64> {
    let conn =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(|source| {
            Error::Open {
                path: path.to_owned(),
                source,
            }
        })?;
    migrations::version(&conn)
}

/// Brings the repository file at `path` (created when missing) to the current schema.
///
/// # Errors
///
/// As [`migrations::to_latest`].
pub fn upgrade(path: &Path) -> Result<migrations::Upgrade> {
    let mut conn = connect(path)?;
    migrations::to_latest(&mut conn)
}

/// Tests only: what tests of other modules need of the SQLite repository (writing the
/// repository's tables as a sheet or a person would, reading them back, failures of
/// SQLite), so that no other module names SQLite.
#[cfg(any(test, feature = "testing"))]
pub mod testing {
    use crate::repository::Repository;
    use crate::sql::{Value, args};
    pub use rusqlite::ffi::{
        SQLITE_BUSY, SQLITE_CONSTRAINT, SQLITE_FULL, SQLITE_IOERR, SQLITE_READONLY,
    };

    /// Runs `sql` (one or more statements) in one transaction on the repository.
    pub fn execute(repo: &Repository, sql: &str) {
        repo.tx(|c| c.execute_batch(sql))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// The rows of a query on the repository, each its columns' text joined by `|` (NULL
    /// as `NULL`).
    pub fn rows(repo: &Repository, sql: &str) -> Vec<String> {
        repo.with(|c| {
            c.rows(sql, args![], |r| {
                Ok(r.0
                    .iter()
                    .map(|v| match v {
                        Value::Null => "NULL".to_owned(),
                        Value::Int(i) => i.to_string(),
                        Value::Real(f) => f.to_string(),
                        Value::Text(t) => t.clone(),
                        Value::Bytes(b) => format!("{b:?}"),
                    })
                    .collect::<Vec<_>>()
                    .join("|"))
            })
        })
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// A repository error as SQLite's result `code` gives it, from statement `sql`.
    pub fn failure(code: i32, sql: &str) -> crate::error::Error {
        crate::error::Error::with_sql(
            rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None),
            sql,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::StatementStatus;

    /// A kept statement that joins two tables on a bound key runs again without being
    /// prepared again (SQLite does so at every new value unless the planner's stability
    /// guarantee is on): the shape of the cycle check's and an action end's statements.
    #[test]
    fn a_kept_join_is_not_prepared_again_for_new_values() {
        let dir = tempfile::tempdir().expect("temp dir");
        let conn = connect(&dir.path().join("r.db")).expect("connect");
        conn.execute_batch(
            "CREATE TABLE f (a INTEGER, w INTEGER, o TEXT, PRIMARY KEY (a, w, o)) WITHOUT ROWID;
             CREATE INDEX f_o ON f(o, w);
             INSERT INTO f VALUES (1, 1, 't1'), (2, 0, 't1'), (2, 1, 't2'), (3, 0, 't2');",
        )
        .expect("schema");
        let sql = "SELECT o.a FROM f a JOIN f o ON o.o = a.o AND o.w = ?3
                   WHERE a.a = ?1 AND a.w = ?2 AND o.a <> ?1";
        let mut readers = Vec::new();
        for action in 1..=3_i64 {
            let mut st = conn.prepare_cached(sql).expect("prepare");
            let rows: Vec<i64> = st
                .query_map(rusqlite::params![action, 1, 0], |r| r.get(0))
                .expect("query")
                .collect::<std::result::Result<_, _>>()
                .expect("rows");
            readers.push(rows);
            assert_eq!(
                st.get_status(StatementStatus::RePrepare),
                0,
                "action {action}"
            );
        }
        assert_eq!(readers, vec![vec![2], vec![3], vec![]]);
    }
}
