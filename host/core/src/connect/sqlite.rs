//! The native SQLite connection type `sqlite` (key file URL = the database file), opened by
//! the host's own rusqlite: one SQLite in the process, so no plugin links SQLite.

use rusqlite::config::DbConfig;
use rusqlite::types::{ToSqlOutput, ValueRef};
use std::cell::RefCell;
use weft_sdk::{
    ColumnInfo, Connection, DatabaseConnection, Dialect, ErrorKind, HaltSignal, Interrupter,
    PluginError, PluginResult, Row, RowSink, TableInfo, Value, ValueKind,
};

/// Bound parameters per statement, well below SQLite's limit of 32766.
const MAX_VARIABLES: usize = 4096;

/// Idle connections kept for reuse: opening a database parses its schema, which costs far
/// more than a small action when the database has many tables. The pool is bounded: at most
/// [`POOL_PER_FILE`] per file and [`max_idle`] in all (the oldest is closed first), and a
/// connection idle for [`IDLE_FOR`] is closed, so that a run over hundreds of files does
/// not keep hundreds of descriptors open.
static POOL: std::sync::OnceLock<std::sync::Mutex<Pool>> = std::sync::OnceLock::new();

/// Idle connections kept per file.
const POOL_PER_FILE: usize = 8;

/// How long an idle connection is kept.
const IDLE_FOR: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Default)]
struct Pool {
    /// Idle connections by file, oldest first, with the moment each went idle.
    idle: std::collections::HashMap<
        String,
        std::collections::VecDeque<(std::time::Instant, rusqlite::Connection, FileId)>,
    >,
    /// How many connections `idle` holds.
    count: usize,
    /// Whether the sweeping thread runs.
    sweeping: bool,
}

impl Pool {
    /// Takes out what has been idle longer than `older` (`Duration::ZERO`: all), for the
    /// caller to close after letting go of the pool's lock (closing may checkpoint).
    fn sweep(&mut self, older: std::time::Duration) -> Vec<rusqlite::Connection> {
        let now = std::time::Instant::now();
        let mut out = Vec::new();
        for conns in self.idle.values_mut() {
            while conns
                .front()
                .is_some_and(|(since, _, _)| now.duration_since(*since) >= older)
            {
                if let Some((_, c, _)) = conns.pop_front() {
                    out.push(c);
                }
            }
        }
        self.idle.retain(|_, conns| !conns.is_empty());
        self.count -= out.len();
        out
    }

    /// Takes out the connection idle the longest.
    fn take_oldest(&mut self) -> Option<rusqlite::Connection> {
        let oldest = self
            .idle
            .iter()
            .filter_map(|(path, conns)| conns.front().map(|(since, _, _)| (*since, path.clone())))
            .min();
        let (_, path) = oldest?;
        let conns = self.idle.get_mut(&path)?;
        let taken = conns.pop_front().map(|(_, c, _)| c);
        if taken.is_some() {
            self.count -= 1;
        }
        if conns.is_empty() {
            self.idle.remove(&path);
        }
        taken
    }
}

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    POOL.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Idle connections kept in all: 64, or an eighth of the process's descriptor limit when
/// that is less (each connection holds one to three descriptors).
fn max_idle() -> usize {
    static MAX: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| {
        let limit = std::fs::read_to_string("/proc/self/limits")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|l| l.starts_with("Max open files"))
                    .and_then(|l| l.split_whitespace().nth(3))
                    .and_then(|n| n.parse::<usize>().ok())
            });
        limit.map_or(64, |n| (n / 8).clamp(1, 64))
    })
}

/// Closes every idle pooled connection (when descriptors run out).
pub fn close_idle() {
    let closing = pool().sweep(std::time::Duration::ZERO);
    drop(closing);
}

/// How many idle connections the pool holds.
pub fn idle_count() -> usize {
    pool().count
}

/// Starts the thread that closes idle connections every few seconds, once.
fn start_sweeping(pool: &mut Pool) {
    if pool.sweeping {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("weft-sqlite-pool".to_owned())
        .spawn(|| {
            loop {
                std::thread::sleep(IDLE_FOR / 4);
                let closing = self::pool().sweep(IDLE_FOR);
                drop(closing);
            }
        });
    // Without the thread, idle connections are still closed at every pool use.
    pool.sweeping = spawned.is_ok();
}

/// A native SQLite connection. When dropped it goes back to the pool for its file, outside
/// any transaction.
pub struct SqliteConnection {
    conn: Option<rusqlite::Connection>,
    path: String,
    name: String,
    depth: u32,
    /// The file it opened.
    file: FileId,
    /// Schema names of files attached for the current transaction
    /// ([`DatabaseConnection::attach_read_only`]), detached when it ends.
    attached: Vec<String>,
}

/// Which file a path named when a connection opened it (device and inode), so that a file
/// replaced under the same name (`mv new.db data.db`) is noticed: a pooled connection would
/// go on reading the old one. `None` where the path names no file (`:memory:`, a URI).
type FileId = Option<(u64, u64)>;

/// The file `path` names now.
fn file_id(path: &str) -> FileId {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl Drop for SqliteConnection {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        if self.depth > 0 || !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        detach(&conn, &mut self.attached);
        // Only a connection as it was opened goes back: no TEMP objects, nothing attached,
        // the settings weft gives it. Anything else is closed. The looks touch neither the
        // file nor its lock: the attached schemas are asked of the C interface (index 2 is
        // the first after `main` and `temp`), the rest with two statements prepared once
        // per connection that read only the in-memory `temp` schema and a flag (the flag by
        // the pragma's table form: SQLite prepares `PRAGMA query_only` again at every run).
        let clean = conn.is_autocommit()
            && conn.db_name(2).is_err()
            && one_number(&conn, "SELECT COUNT(*) FROM temp.sqlite_master") == Some(0)
            && one_number(&conn, "SELECT query_only FROM pragma_query_only") == Some(0);
        if clean {
            // Closed after the pool's lock is let go: closing may checkpoint.
            let closing = {
                let mut pool = pool();
                let mut closing = pool.sweep(IDLE_FOR);
                let full = pool
                    .idle
                    .get(&self.path)
                    .map_or(0, std::collections::VecDeque::len)
                    >= POOL_PER_FILE;
                if full {
                    closing.push(conn);
                } else {
                    if pool.count >= max_idle() {
                        closing.extend(pool.take_oldest());
                    }
                    pool.idle.entry(self.path.clone()).or_default().push_back((
                        std::time::Instant::now(),
                        conn,
                        self.file,
                    ));
                    pool.count += 1;
                    start_sweeping(&mut pool);
                }
                closing
            };
            drop(closing);
        }
    }
}

/// The one number a statement without parameters answers, prepared once per connection;
/// `None` when it fails.
fn one_number(conn: &rusqlite::Connection, sql: &str) -> Option<i64> {
    conn.prepare_cached(sql)
        .and_then(|mut st| st.query_row([], |r| r.get::<_, i64>(0)))
        .ok()
}

impl std::fmt::Debug for SqliteConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteConnection")
            .field("name", &self.name)
            .finish()
    }
}

/// How a data connection waits for another connection's lock on its file: SQLite's own busy
/// timeout sleeps in steps that grow to 100 ms, so a reader that meets a writer's commit
/// often waits far longer than the commit takes (deploys that check their objects waited up
/// to 1.4 s under load). This handler looks again every millisecond for the first 200 ms,
/// then every 10 ms, and gives up after about 30 s (`SQLITE_BUSY`).
/// A thread's halt signal stops its lock waits ([`halt_on_this_thread`]).
fn wait_while_busy(attempts: i32) -> bool {
    let (fine, coarse) = (200, 2_980);
    if halted_on_this_thread() {
        false
    } else if attempts < fine {
        std::thread::sleep(std::time::Duration::from_millis(1));
        true
    } else if attempts < fine + coarse {
        std::thread::sleep(std::time::Duration::from_millis(10));
        true
    } else {
        false
    }
}

thread_local! {
    /// The halt signal of the action this thread runs, if any.
    static HALT_OF_THIS_THREAD: RefCell<Option<HaltSignal>> = const { RefCell::new(None) };
}

/// Whether the action this thread runs was asked to halt.
fn halted_on_this_thread() -> bool {
    HALT_OF_THIS_THREAD.with(|h| h.borrow().as_ref().is_some_and(HaltSignal::is_raised))
}

/// How many SQLite virtual machine steps run between two looks at the halt signal (a look
/// costs a few nanoseconds; 10,000 steps take tens of microseconds or more).
const STEPS_BETWEEN_LOOKS: i32 = 10_000;

/// While the guard lives, the SQLite data connections used on this thread stop once
/// `signal` is raised: a statement running or started then fails (`SQLITE_INTERRUPT`, through
/// the progress handler every data connection has), and a wait for another connection's lock
/// gives up (`SQLITE_BUSY`) instead of waiting out its 30 s. This closes what
/// [`Connection::interrupter`] leaves open: `sqlite3_interrupt` reaches only the statement
/// running at that moment, not the next one.
pub fn halt_on_this_thread(signal: HaltSignal) -> HaltOnThisThread {
    let before = HALT_OF_THIS_THREAD.with(|h| h.replace(Some(signal)));
    HaltOnThisThread { before }
}

/// See [`halt_on_this_thread`]; dropping it restores what the thread had before.
#[must_use = "the connections stop on the signal only while the guard lives"]
pub struct HaltOnThisThread {
    before: Option<HaltSignal>,
}

impl Drop for HaltOnThisThread {
    fn drop(&mut self) {
        let before = self.before.take();
        HALT_OF_THIS_THREAD.with(|h| *h.borrow_mut() = before);
    }
}

/// How a connection that only looks (a deploy checking its objects) waits for a writer: a
/// millisecond at a time, for at most 10 ms, so that a deploy hardly waits on the data
/// database's writers; when that is not enough the check says the connection was busy.
fn wait_briefly(attempts: i32) -> bool {
    std::thread::sleep(std::time::Duration::from_millis(1));
    attempts < 10
}

impl SqliteConnection {
    /// This connection waits at most about 10 ms for another connection's lock (until it
    /// goes back to the pool).
    pub fn briefly(mut self) -> Self {
        if let Some(c) = self.conn.as_mut() {
            let _ = c.busy_handler(Some(wait_briefly));
        }
        self
    }
}

/// Opens the SQLite database file `path` for connection `name` (its key).
///
/// # Errors
///
/// When the file cannot be opened.
pub fn open(name: &str, path: &str) -> Result<SqliteConnection, PluginError> {
    let now = file_id(path);
    let (reused, stale) = {
        let mut pool = pool();
        let mut stale = Vec::new();
        let mut conn = None;
        while let Some((_, c, file)) = pool
            .idle
            .get_mut(path)
            .and_then(std::collections::VecDeque::pop_back)
        {
            pool.count -= 1;
            // A connection to a file since replaced (or removed) under this name is closed.
            if file == now {
                conn = Some(c);
                break;
            }
            stale.push(c);
        }
        if pool
            .idle
            .get(path)
            .is_some_and(std::collections::VecDeque::is_empty)
        {
            pool.idle.remove(path);
        }
        (conn, stale)
    };
    drop(stale);
    if let Some(mut conn) = reused {
        // Settings an action may have changed are set again: through the C interface, as
        // `PRAGMA foreign_keys` expires every statement the connection keeps prepared (its
        // BEGIN, COMMIT and marker would be prepared again at every action); this one
        // expires them only when the setting changes.
        let _ = conn.busy_handler(Some(wait_while_busy));
        let _ = conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_FKEY, false);
        return Ok(SqliteConnection {
            conn: Some(conn),
            path: path.to_owned(),
            name: name.to_owned(),
            depth: 0,
            file: now,
            attached: Vec::new(),
        });
    }
    let mut conn = rusqlite::Connection::open(path).map_err(|e| {
        // Out of descriptors shows here first: say so in the log, not only in the action.
        tracing::warn!(message = "Cannot open a SQLite data file.", connection = name, path, error = %e, idle_pooled = idle_count());
        PluginError::of(
            ErrorKind::Connection,
            format!("connection {name}: cannot open SQLite database {path}: {e}"),
        )
    })?;
    conn.busy_handler(Some(wait_while_busy))
        .map_err(|e| PluginError::of(ErrorKind::Connection, format!("connection {name}: {e}")))?;
    conn.progress_handler(STEPS_BETWEEN_LOOKS, Some(halted_on_this_thread))
        .map_err(|e| PluginError::of(ErrorKind::Connection, format!("connection {name}: {e}")))?;
    // Foreign keys as the sqlite3 tool has them (off), whether the connection is new or
    // pooled (the SQLite built into weft would enforce them on a new one only).
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_FKEY, false)
        .map_err(|e| PluginError::of(ErrorKind::Connection, format!("connection {name}: {e}")))?;
    register_clock_functions(&conn)
        .map_err(|e| PluginError::of(ErrorKind::Connection, format!("connection {name}: {e}")))?;
    Ok(SqliteConnection {
        conn: Some(conn),
        path: path.to_owned(),
        name: name.to_owned(),
        depth: 0,
        // As opened: a file made by the open itself is named now.
        file: file_id(path),
        attached: Vec::new(),
    })
}

impl SqliteConnection {
    /// The connection as plugins get it.
    pub fn boxed(self) -> Connection {
        Connection::new(self)
    }

    fn c(&self) -> &rusqlite::Connection {
        // `conn` is only taken by `drop`.
        self.conn
            .as_ref()
            .expect("a SQLite connection is present until it is dropped")
    }

    fn fail(&self, e: rusqlite::Error, sql: &str) -> PluginError {
        let kind = if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) {
            ErrorKind::Halted
        } else {
            ErrorKind::Failed
        };
        // A statement SQLite could not read: its place in the whole text of the action (SQLite
        // counts from the start of the failing statement, which in a script of several is not
        // the text's start), and that statement alone, quoted with the offset in it.
        if let rusqlite::Error::SqlInputError {
            msg,
            sql: tail,
            offset,
            ..
        } = &e
            && let Ok(offset) = usize::try_from(*offset)
        {
            let start = if sql.ends_with(tail.as_str()) {
                sql.len() - tail.len()
            } else {
                0
            };
            let at = (start + offset).min(sql.len());
            let before = &sql[..sql.floor_char_boundary(at)];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            let offset = tail.floor_char_boundary(offset.min(tail.len()));
            let keep = tail.ceil_char_boundary((offset + 300).min(tail.len()));
            // The statement from its first word (the tail starts where the last one ended),
            // at most 300 bytes before the place.
            let lead = (tail.len() - tail.trim_start().len())
                .max(tail.floor_char_boundary(offset.saturating_sub(300)))
                .min(offset);
            let statement = tail[lead..keep].trim_end();
            // In characters, as the page counts them.
            let within = tail[lead..offset].chars().count();
            return PluginError::of(
                kind,
                format!(
                    "SQLite (connection {}): {msg} at line {line}, column {column} of the action; at offset {within} in `{statement}`",
                    self.name
                ),
            );
        }
        let shown: String = sql.chars().take(300).collect();
        PluginError::of(
            kind,
            format!("SQLite (connection {}): {e}; in `{shown}`", self.name),
        )
    }
}

struct Param<'a>(&'a Value);

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        // The parts, not the checked view: the text is passed on as the bytes it is, without
        // checking its UTF-8 again for every value of a large transfer.
        let (kind, number, data) = self.0.parts();
        Ok(match kind {
            ValueKind::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            ValueKind::Bool | ValueKind::Int => ToSqlOutput::Borrowed(ValueRef::Integer(number)),
            ValueKind::Float => {
                ToSqlOutput::Borrowed(ValueRef::Real(f64::from_bits(number as u64)))
            }
            ValueKind::Bytes => ToSqlOutput::Borrowed(ValueRef::Blob(data)),
            ValueKind::Decimal
            | ValueKind::Text
            | ValueKind::Date
            | ValueKind::Time
            | ValueKind::Timestamp
            | ValueKind::TimestampTz => ToSqlOutput::Borrowed(ValueRef::Text(data)),
            other => {
                return Err(rusqlite::Error::ToSqlConversionFailure(
                    format!("SQLite cannot store a value of kind {other:?}").into(),
                ));
            }
        })
    }
}

fn value(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::NULL,
        ValueRef::Integer(i) => Value::int(i),
        ValueRef::Real(f) => Value::float(f),
        ValueRef::Text(t) => Value::text(String::from_utf8_lossy(t)),
        ValueRef::Blob(b) => Value::bytes(b),
    }
}

fn qualified(schema: Option<&str>, table: &str) -> String {
    let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    match schema.filter(|s| !s.is_empty()) {
        Some(s) => format!("{}.{}", q(s), q(table)),
        None => q(table),
    }
}

impl DatabaseConnection for SqliteConnection {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute_batch(&mut self, sql: &str) -> PluginResult<u64> {
        let before = self.c().total_changes();
        self.c()
            .execute_batch(sql)
            .map(|()| self.c().total_changes().saturating_sub(before))
            .map_err(|e| self.fail(e, sql))
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> PluginResult<u64> {
        self.c()
            .prepare_cached(sql)
            .and_then(|mut st| {
                let params: Vec<Param<'_>> = params.iter().map(Param).collect();
                st.execute(rusqlite::params_from_iter(params.iter()))
            })
            .map(|n| n as u64)
            .map_err(|e| self.fail(e, sql))
    }

    fn query(
        &mut self,
        sql: &str,
        params: &[Value],
        batch_rows: u32,
        sink: &mut RowSink<'_>,
    ) -> PluginResult<u64> {
        let mut st = self.c().prepare(sql).map_err(|e| self.fail(e, sql))?;
        let names: Vec<String> = st.column_names().map(str::to_owned).collect();
        sink.columns(&names)?;
        let n = names.len();
        let ps: Vec<Param<'_>> = params.iter().map(Param).collect();
        let mut rows = st
            .query(rusqlite::params_from_iter(ps.iter()))
            .map_err(|e| self.fail(e, sql))?;
        let mut batch = sink.batched(batch_rows);
        let mut count = 0u64;
        while let Some(row) = rows.next().map_err(|e| self.fail(e, sql))? {
            let mut r = Row::with_capacity(n);
            for i in 0..n {
                r.push(value(row.get_ref(i).map_err(|e| self.fail(e, sql))?));
            }
            batch.push(r)?;
            count += 1;
        }
        batch.finish()?;
        Ok(count)
    }

    fn insert_batch(
        &mut self,
        schema: Option<&str>,
        table: &str,
        columns: &[&str],
        rows: &[Row],
    ) -> PluginResult<u64> {
        let ncols = columns.len().max(1);
        let cols: Vec<String> = columns
            .iter()
            .map(|c| format!("\"{}\"", c.replace('"', "\"\"")))
            .collect();
        let head = format!(
            "INSERT INTO {} ({}) VALUES ",
            qualified(schema, table),
            cols.join(", ")
        );
        let one = format!("({})", vec!["?"; ncols].join(", "));
        // Many rows a statement: far fewer statement executions than one row each.
        let per = (MAX_VARIABLES / ncols).clamp(1, 256);
        let statement = |n: usize| format!("{head}{}", vec![one.as_str(); n].join(", "));
        let mut inserted = 0u64;
        for chunk in rows.chunks(per) {
            let sql = statement(chunk.len());
            let result = (|| {
                let mut st = self.c().prepare_cached(&sql)?;
                let mut i = 1;
                for row in chunk {
                    if row.len() != columns.len() {
                        return Err(rusqlite::Error::InvalidParameterCount(
                            row.len(),
                            columns.len(),
                        ));
                    }
                    for v in row.iter() {
                        st.raw_bind_parameter(i, Param(v))?;
                        i += 1;
                    }
                }
                st.raw_execute()
            })();
            inserted += result.map_err(|e| self.fail(e, &sql))? as u64;
        }
        Ok(inserted)
    }

    fn describe(&mut self, schema: Option<&str>, table: &str) -> PluginResult<TableInfo> {
        let schema = schema.filter(|s| !s.is_empty());
        let sql = "SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1, ?2) ORDER BY cid";
        let cols = (|| {
            let mut st = self.c().prepare(sql)?;
            st.query_map(rusqlite::params![table, schema.unwrap_or("main")], |r| {
                Ok(ColumnInfo::new(
                    &r.get::<_, String>(0)?,
                    &r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)? == 0,
                    r.get::<_, u32>(3)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()
        })()
        .map_err(|e| self.fail(e, sql))?;
        if cols.is_empty() {
            return Err(PluginError::new(format!(
                "SQLite (connection {}): table {} does not exist",
                self.name,
                qualified(schema, table)
            )));
        }
        Ok(TableInfo::new(schema, table, cols))
    }

    /// The outermost transaction is `BEGIN IMMEDIATE` (it takes the write lock at once, so a
    /// busy database is waited for instead of failing on the first write); nested ones are
    /// savepoints.
    fn begin(&mut self) -> PluginResult<()> {
        let sql = if self.depth == 0 {
            "BEGIN IMMEDIATE".to_owned()
        } else {
            format!("SAVEPOINT weft_{}", self.depth)
        };
        self.run_cached(&sql).map_err(|e| self.fail(e, &sql))?;
        self.depth += 1;
        Ok(())
    }

    fn commit(&mut self) -> PluginResult<()> {
        let sql = match self.depth {
            0 => return Err(PluginError::new("commit without a transaction")),
            1 => "COMMIT".to_owned(),
            d => format!("RELEASE weft_{}", d - 1),
        };
        self.run_cached(&sql).map_err(|e| self.fail(e, &sql))?;
        self.depth -= 1;
        self.transaction_ended();
        Ok(())
    }

    fn rollback(&mut self) -> PluginResult<()> {
        let sql = match self.depth {
            0 => return Err(PluginError::new("rollback without a transaction")),
            1 => "ROLLBACK".to_owned(),
            d => format!("ROLLBACK TO weft_{n}; RELEASE weft_{n}", n = d - 1),
        };
        let r = if self.depth == 1 {
            self.run_cached(&sql)
        } else {
            self.c().execute_batch(&sql)
        };
        self.depth -= 1;
        self.transaction_ended();
        r.map_err(|e| self.fail(e, &sql))
    }

    /// `sqlite3_interrupt`; harmless once the connection is closed.
    fn interrupter(&self) -> Option<Interrupter> {
        let handle = self.conn.as_ref()?.get_interrupt_handle();
        Some(Interrupter::new(move || handle.interrupt()))
    }

    /// The file, as SQLite resolved it; `None` for an in-memory or temporary database.
    fn local_file(&self) -> Option<String> {
        self.c().path().filter(|p| !p.is_empty()).map(str::to_owned)
    }

    /// `ATTACH` of the file as a read-only URI (`mode=ro`) under `weft_attached_N`. SQLite
    /// detaches nothing inside a transaction, so the names are detached when the outermost
    /// transaction ends (`transaction_ended`) or the connection goes back
    /// to the pool. The connection's own file is refused: two pagers of one file in one
    /// connection would wait on each other's locks at the commit.
    fn attach_read_only(&mut self, file: &str) -> PluginResult<String> {
        if file_id(file).is_some() && file_id(file) == self.file {
            return Err(PluginError::of(
                ErrorKind::Invalid,
                format!(
                    "connection {}: {file} is this connection's own database file",
                    self.name
                ),
            ));
        }
        let name = format!("weft_attached_{}", self.attached.len() + 1);
        let uri = format!("file:{}?mode=ro", uri_path(file));
        let sql = format!("ATTACH DATABASE ?1 AS {name}");
        self.c()
            .execute(&sql, [&uri])
            .map_err(|e| self.fail(e, &sql))?;
        self.attached.push(name.clone());
        Ok(name)
    }
}

impl SqliteConnection {
    /// Runs one statement without parameters, prepared once per connection (`BEGIN
    /// IMMEDIATE`, `COMMIT`: parsed again at every action, they cost more than a small
    /// action's own statement).
    fn run_cached(&self, sql: &str) -> rusqlite::Result<()> {
        self.c().prepare_cached(sql)?.raw_execute().map(|_| ())
    }

    /// After the outermost transaction: the files attached for it are detached.
    fn transaction_ended(&mut self) {
        if self.depth == 0
            && let Some(conn) = self.conn.as_ref()
        {
            detach(conn, &mut self.attached);
        }
    }
}

/// Detaches `names` (errors are left: a connection with a file still attached is closed
/// rather than pooled).
fn detach(conn: &rusqlite::Connection, names: &mut Vec<String>) {
    for name in names.drain(..) {
        let _ = conn.execute_batch(&format!("DETACH DATABASE {name}"));
    }
}

/// `path` written for a `file:` URI: the characters a URI gives a meaning (`%`, `?`, `#`)
/// percent-encoded, nothing else changed.
fn uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

/// Registers `current_local_timestamp()` and `is_dst_change_tonight([local_now])` on a
/// connection (the repository's and native data connections); both read the service
/// time ([`crate::sched::clock`]) when called.
///
/// # Errors
///
/// SQLite's, when a function cannot be registered.
pub fn register_clock_functions(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    use crate::sched::clock;
    use rusqlite::functions::FunctionFlags;
    let flags = FunctionFlags::SQLITE_UTF8;
    conn.create_scalar_function("current_local_timestamp", 0, flags, |_| {
        Ok(clock::wall(clock::current().local_now()))
    })?;
    conn.create_scalar_function("is_dst_change_tonight", 0, flags, |_| {
        let t = clock::current();
        Ok(clock::dst_change_before_morning(t.zone, t.clock.now()))
    })?;
    conn.create_scalar_function("is_dst_change_tonight", 1, flags, |ctx| {
        let t = clock::current();
        let text: String = ctx.get(0)?;
        clock::is_dst_change_tonight_at(t.zone, &text).map_err(|e| {
            rusqlite::Error::UserFunctionError(format!("is_dst_change_tonight: {e}").into())
        })
    })?;
    Ok(())
}

/// Tests only: reading SQLite files and holding their locks, for the tests of other modules
/// (so that no other module names SQLite).
#[cfg(any(test, feature = "testing"))]
pub mod testing {
    use rusqlite::types::ValueRef;
    use std::path::Path;

    /// The rows of `sql` on `conn`, each its columns' text joined by `|` (NULL as `NULL`).
    pub fn rows_of(conn: &rusqlite::Connection, sql: &str) -> Vec<String> {
        let mut st = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        let n = st.column_count();
        st.query_map([], |r| {
            let cells: Vec<String> = (0..n)
                .map(|i| match r.get_ref(i) {
                    Ok(ValueRef::Null) | Err(_) => "NULL".to_owned(),
                    Ok(ValueRef::Integer(v)) => v.to_string(),
                    Ok(ValueRef::Real(v)) => v.to_string(),
                    Ok(ValueRef::Text(t)) => String::from_utf8_lossy(t).into_owned(),
                    Ok(ValueRef::Blob(b)) => format!("{b:?}"),
                })
                .collect();
            Ok(cells.join("|"))
        })
        .and_then(Iterator::collect)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// The rows of `sql` on the SQLite file `path`.
    pub fn rows(path: &Path, sql: &str) -> Vec<String> {
        let conn = rusqlite::Connection::open(path).expect("open the SQLite file");
        rows_of(&conn, sql)
    }

    /// Runs `sql` (one or more statements) on the SQLite file `path`.
    pub fn execute(path: &Path, sql: &str) {
        rusqlite::Connection::open(path)
            .and_then(|c| c.execute_batch(sql))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// Holds the write lock of an SQLite file (`BEGIN IMMEDIATE`) until dropped.
    pub struct WriteLock(rusqlite::Connection);

    impl WriteLock {
        /// Takes the write lock of the file at `path`.
        pub fn take(path: &Path) -> Self {
            let conn = rusqlite::Connection::open(path).expect("open the SQLite file");
            conn.execute_batch("BEGIN IMMEDIATE").expect("write lock");
            WriteLock(conn)
        }
    }

    impl Drop for WriteLock {
        fn drop(&mut self) {
            let _ = self.0.execute_batch("ROLLBACK");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_that_does_not_read_is_placed_in_the_whole_text_of_the_action() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("d.db");
        let mut conn = open("1", &path.to_string_lossy()).expect("open");
        let text = "DROP TABLE IF EXISTS t;\nCREATE TABLE t AS\n  SELECT 1 AS x\n  FORM other;";
        let e = conn.execute_batch(text).expect_err("a typo").to_string();
        // SQLite names the token it stumbled on: `near "T": syntax error`.
        let token = e
            .split("near \"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .expect("the token");
        // Its line and column in the whole text, not in the failing statement.
        let at = text.rfind(token).expect("in the text");
        let line = text[..at].matches('\n').count() + 1;
        let column = at - text[..at].rfind('\n').map_or(0, |i| i + 1) + 1;
        assert!(line == 4, "{token} at {line}: {e}");
        assert!(
            e.contains(&format!("at line {line}, column {column} of the action")),
            "{e}"
        );
        // The failing statement alone, with the offset in it at that token.
        let quoted = e
            .split_once("in `")
            .map(|(_, q)| q.trim_end_matches('`'))
            .expect("quoted");
        assert!(quoted.starts_with("CREATE TABLE t AS"), "{e}");
        let offset: usize = e
            .split("at offset ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .expect("an offset");
        assert!(quoted[offset..].starts_with(token), "{offset} in {quoted}");
    }

    #[test]
    fn a_file_replaced_under_its_name_is_read_at_once_not_through_a_pooled_connection() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("src.db");
        let name = path.to_string_lossy().into_owned();
        let make = |at: &std::path::Path, v: &str| {
            rusqlite::Connection::open(at)
                .expect("file")
                .execute_batch(&format!(
                    "CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('{v}');"
                ))
                .expect("table");
        };
        make(&path, "old");
        let read = || -> String {
            let conn = open("1", &name).expect("open");
            conn.c()
                .query_row("SELECT v FROM t", [], |r| r.get(0))
                .expect("read")
        };
        assert_eq!(read(), "old");
        // Back in the pool; then a new file goes into its place, as `mv new.db src.db` does.
        let new = dir.path().join("new.db");
        make(&new, "new");
        std::fs::rename(&new, &path).expect("mv");
        assert_eq!(
            read(),
            "new",
            "the pooled connection to the old file is not used"
        );
        assert_eq!(read(), "new");
    }

    #[test]
    fn a_connection_an_action_changed_never_comes_back_from_the_pool_and_an_attached_file_goes_at_the_commit()
     {
        let dir = tempfile::tempdir().expect("dir");
        let name = dir.path().join("data.db").to_string_lossy().into_owned();
        let other = dir.path().join("other.db");
        rusqlite::Connection::open(&other)
            .expect("file")
            .execute_batch("CREATE TABLE o (x INTEGER); INSERT INTO o VALUES (7);")
            .expect("table");
        let other = other.to_string_lossy().into_owned();
        // What an action may leave behind: a TEMP table, a file attached, a read-only switch,
        // foreign keys enforced.
        let looks = |conn: &SqliteConnection| -> (i64, i64, i64, i64) {
            conn.c()
                .query_row(
                    "SELECT (SELECT COUNT(*) FROM temp.sqlite_master),
                            (SELECT COUNT(*) FROM pragma_database_list WHERE name NOT IN ('main', 'temp')),
                            (SELECT query_only FROM pragma_query_only),
                            (SELECT foreign_keys FROM pragma_foreign_keys)",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )
                .expect("looks")
        };
        for change in [
            "CREATE TEMP TABLE scratch (x)".to_owned(),
            format!("ATTACH DATABASE '{other}' AS other"),
            "PRAGMA query_only = 1".to_owned(),
            "PRAGMA foreign_keys = ON".to_owned(),
        ] {
            let mut conn = open("1", &name).expect("open");
            conn.execute_batch(&change).expect(&change);
            drop(conn);
            assert_eq!(
                looks(&open("1", &name).expect("open")),
                (0, 0, 0, 0),
                "after {change}"
            );
        }
        // A file attached for a transaction is readable in it and detached at its end.
        let mut conn = open("1", &name).expect("open");
        conn.begin().expect("begin");
        let schema = conn.attach_read_only(&other).expect("attach");
        let x: i64 = conn
            .c()
            .query_row(&format!("SELECT x FROM {schema}.o"), [], |r| r.get(0))
            .expect("read");
        assert_eq!(x, 7);
        assert!(
            conn.attach_read_only(&name).is_err(),
            "the connection's own file is refused"
        );
        conn.commit().expect("commit");
        assert_eq!(looks(&conn), (0, 0, 0, 0), "detached at the commit");
    }

    #[test]
    fn a_pooled_connection_keeps_its_prepared_statements_for_the_next_action() {
        use rusqlite::StatementStatus::RePrepare;
        let dir = tempfile::tempdir().expect("dir");
        let name = dir.path().join("data.db").to_string_lossy().into_owned();
        let reprepared = |conn: &SqliteConnection| {
            conn.c()
                .prepare_cached("BEGIN IMMEDIATE")
                .expect("cached")
                .get_status(RePrepare)
        };
        // Two actions on one pooled connection: the second's BEGIN is the first's,
        // not prepared again (settings restored at the reuse expire nothing unchanged).
        for _ in 0..2 {
            let mut conn = open("1", &name).expect("open");
            conn.begin().expect("begin");
            conn.execute_batch("CREATE TABLE IF NOT EXISTS t (x)")
                .expect("statement");
            conn.commit().expect("commit");
            assert_eq!(reprepared(&conn), 0);
        }
    }

    const ENDLESS: &str = "SELECT COUNT(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10000000000) SELECT x FROM c)";

    #[test]
    fn a_statement_started_after_the_halt_stops_at_once() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("d.db");
        let mut conn = open("1", &path.to_string_lossy()).expect("open");
        let signal = HaltSignal::new();
        let guard = halt_on_this_thread(signal.clone());
        // Raised while no statement runs: `sqlite3_interrupt` would not reach the next one;
        // the progress handler does.
        signal.raise();
        let e = conn.execute_batch(ENDLESS).expect_err("stopped");
        assert_eq!(e.kind(), ErrorKind::Halted, "{e}");
        // Without the guard the thread's statements run again.
        drop(guard);
        assert_eq!(conn.execute_batch("SELECT 1").expect("runs"), 0);
    }

    #[test]
    fn the_interrupter_stops_a_running_statement_from_another_thread() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("d.db");
        let mut conn = open("1", &path.to_string_lossy()).expect("open");
        let interrupter = conn.interrupter().expect("an interrupter");
        let (started_tx, started) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            let runner = s.spawn(move || {
                started_tx.send(()).expect("started");
                conn.execute_batch(ENDLESS)
            });
            started.recv().expect("the runner started");
            // Until the statement runs, an interrupt is lost: interrupt until it ends.
            while !runner.is_finished() {
                interrupter.interrupt();
                std::thread::yield_now();
            }
            let e = runner.join().expect("runner").expect_err("interrupted");
            assert_eq!(e.kind(), ErrorKind::Halted, "{e}");
        });
    }
}
