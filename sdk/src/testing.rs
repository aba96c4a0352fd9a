//! Fakes for a plugin's own unit tests (feature `testing`; use it in `[dev-dependencies]`
//! only, as it links SQLite, which a plugin library must not): a [`Connection`] to an
//! in-memory SQLite database, a log that records its lines, and builders of the
//! [`RunContext`] and [`ValidateInput`] the host would give.
//!
//! ```
//! use weft_sdk::testing::{self, Run};
//! use weft_sdk::{AttributeValue, Datum};
//!
//! let mut db = testing::sqlite("CREATE TABLE t (x); INSERT INTO t VALUES (1), (2);").unwrap();
//! let (_, rows) = db.query_all("SELECT COUNT(*) FROM t", &[]).unwrap();
//! assert_eq!(rows[0][0].get(), Datum::Int(2));
//!
//! let (mut ctx, log) = Run::new("SELECT x FROM t")
//!     .source(testing::table(10, 1, "t"))
//!     .connection(1, db)
//!     .attribute("minRows", AttributeValue::integer(3))
//!     .build();
//! ctx.log("counted");
//! assert_eq!(log.lines(), ["counted"]);
//! assert_eq!(ctx.integer("minRows"), Some(3));
//! ```

use crate::connection::{Connection, DatabaseConnection, RowSink};
use crate::error::{ErrorKind, PluginError, PluginResult};
use crate::halt::{HaltSignal, Interrupter};
use crate::module::{AttributeValue, Log, ObjectRef, RunContext, RunParts, ValidateInput};
use crate::value::{ColumnInfo, Datum, Dialect, Row, TableInfo, Value};
use std::sync::{Arc, Mutex, PoisonError};

/// A connection to a fresh in-memory SQLite database, after running `setup` on it (tables
/// and rows for the test; may be empty).
///
/// # Errors
///
/// SQLite's, for `setup`.
pub fn sqlite(setup: &str) -> PluginResult<Connection> {
    let conn = rusqlite::Connection::open_in_memory().map_err(fail)?;
    conn.execute_batch(setup).map_err(fail)?;
    Ok(Connection::new(Sqlite { conn, depth: 0 }))
}

/// A connection to the SQLite database file at `path` (made when missing), after running
/// `setup` on it: for a test that runs a module several times on the same data, each run
/// with a connection of its own.
///
/// # Errors
///
/// SQLite's, for opening the file or for `setup`.
pub fn sqlite_file(path: &std::path::Path, setup: &str) -> PluginResult<Connection> {
    let conn = rusqlite::Connection::open(path).map_err(fail)?;
    conn.execute_batch(setup).map_err(fail)?;
    Ok(Connection::new(Sqlite { conn, depth: 0 }))
}

/// Table `name` (object type 1, no schema) on connection `connection`, as node `node`, on a
/// SQLite connection.
pub fn table(node: i64, connection: i64, name: &str) -> ObjectRef {
    ObjectRef::new(node, 1, connection, name, None, Dialect::Sqlite)
}

/// A log that keeps its lines for the test to look at. Clones share the lines.
#[derive(Debug, Clone, Default)]
pub struct RecordedLog {
    lines: Arc<Mutex<Vec<String>>>,
}

impl RecordedLog {
    /// An empty record.
    pub fn new() -> Self {
        RecordedLog::default()
    }

    /// A [`Log`] whose lines go into this record.
    pub fn log(&self) -> Log {
        let lines = Arc::clone(&self.lines);
        Log::new(move |line| {
            lines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(line.to_owned());
        })
    }

    /// The lines logged so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Builds the [`RunContext`] the host would give `run`: the action text, attributes,
/// variables, objects and open connections the test names, and a [`RecordedLog`].
pub struct Run {
    parts: RunParts,
    log: RecordedLog,
}

impl Run {
    /// Action 1, named `test`, with the action text `action` (variables already
    /// substituted, as `run` gets it).
    pub fn new(action: &str) -> Self {
        let log = RecordedLog::new();
        Run {
            parts: RunParts {
                action_id: 1,
                action_name: "test".to_owned(),
                action: action.to_owned(),
                attributes: Vec::new(),
                sources: Vec::new(),
                targets: Vec::new(),
                connections: Vec::new(),
                variables: Vec::new(),
                log: log.log(),
                halt: HaltSignal::new(),
            },
            log,
        }
    }

    /// With attribute `name` (give the defaults your module declares too: the host does).
    #[must_use]
    pub fn attribute(mut self, name: &str, value: AttributeValue) -> Self {
        self.parts.attributes.push((name.to_owned(), value));
        self
    }

    /// With variable `name`.
    #[must_use]
    pub fn variable(mut self, name: &str, value: &str) -> Self {
        self.parts
            .variables
            .push((name.to_owned(), value.to_owned()));
        self
    }

    /// With a source object.
    #[must_use]
    pub fn source(mut self, object: ObjectRef) -> Self {
        self.parts.sources.push(object);
        self
    }

    /// With a target object.
    #[must_use]
    pub fn target(mut self, object: ObjectRef) -> Self {
        self.parts.targets.push(object);
        self
    }

    /// With connection number `id` open.
    #[must_use]
    pub fn connection(mut self, id: i64, connection: Connection) -> Self {
        self.parts.connections.push((id, connection));
        self
    }

    /// With the halt signal `halt` (raise it to test how the module stops).
    #[must_use]
    pub fn halt(mut self, halt: HaltSignal) -> Self {
        self.parts.halt = halt;
        self
    }

    /// The context, and the record of what it logs.
    pub fn build(self) -> (RunContext, RecordedLog) {
        (RunContext::new(self.parts), self.log)
    }
}

/// Builds the [`ValidateInput`] the host would give `validate`.
pub struct Validate {
    action: Option<String>,
    attributes: Vec<(String, AttributeValue)>,
    sources: Vec<ObjectRef>,
    targets: Vec<ObjectRef>,
}

impl Validate {
    /// Action 1 with the action text `action` (`None`: the action has none).
    pub fn new(action: Option<&str>) -> Self {
        Validate {
            action: action.map(str::to_owned),
            attributes: Vec::new(),
            sources: Vec::new(),
            targets: Vec::new(),
        }
    }

    /// With attribute `name`.
    #[must_use]
    pub fn attribute(mut self, name: &str, value: AttributeValue) -> Self {
        self.attributes.push((name.to_owned(), value));
        self
    }

    /// With a source object.
    #[must_use]
    pub fn source(mut self, object: ObjectRef) -> Self {
        self.sources.push(object);
        self
    }

    /// With a target object.
    #[must_use]
    pub fn target(mut self, object: ObjectRef) -> Self {
        self.targets.push(object);
        self
    }

    /// The input.
    pub fn build(self) -> ValidateInput {
        ValidateInput::new(
            1,
            self.action.as_deref(),
            self.attributes,
            self.sources,
            self.targets,
        )
    }
}

/// The fake connection: SQLite in memory, one statement at a time (no pooling, no batching:
/// the host's own SQLite connection is what runs in production).
struct Sqlite {
    conn: rusqlite::Connection,
    depth: u32,
}

fn fail(e: rusqlite::Error) -> PluginError {
    let kind = if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) {
        ErrorKind::Halted
    } else {
        ErrorKind::Failed
    };
    PluginError::of(kind, format!("SQLite (test): {e}"))
}

struct Param<'a>(&'a Value);

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self.0.get() {
            Datum::Null => ValueRef::Null,
            Datum::Bool(b) => ValueRef::Integer(i64::from(b)),
            Datum::Int(i) => ValueRef::Integer(i),
            Datum::Float(f) => ValueRef::Real(f),
            Datum::Bytes(b) => ValueRef::Blob(b),
            Datum::Decimal(s)
            | Datum::Text(s)
            | Datum::Date(s)
            | Datum::Time(s)
            | Datum::Timestamp(s)
            | Datum::TimestampTz(s) => ValueRef::Text(s.as_bytes()),
            other => {
                return Err(rusqlite::Error::ToSqlConversionFailure(
                    format!("the test SQLite cannot store {other:?}").into(),
                ));
            }
        }))
    }
}

fn value_of(v: rusqlite::types::ValueRef<'_>) -> Value {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => Value::NULL,
        ValueRef::Integer(i) => Value::int(i),
        ValueRef::Real(f) => Value::float(f),
        ValueRef::Text(t) => Value::text(String::from_utf8_lossy(t)),
        ValueRef::Blob(b) => Value::bytes(b),
    }
}

fn quoted(schema: Option<&str>, table: &str) -> String {
    let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    match schema {
        Some(s) => format!("{}.{}", q(s), q(table)),
        None => q(table),
    }
}

impl DatabaseConnection for Sqlite {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute_batch(&mut self, sql: &str) -> PluginResult<u64> {
        let before = self.conn.total_changes();
        self.conn.execute_batch(sql).map_err(fail)?;
        Ok(self.conn.total_changes().saturating_sub(before))
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> PluginResult<u64> {
        let params: Vec<Param<'_>> = params.iter().map(Param).collect();
        self.conn
            .execute(sql, rusqlite::params_from_iter(params.iter()))
            .map(|n| n as u64)
            .map_err(fail)
    }

    fn query(
        &mut self,
        sql: &str,
        params: &[Value],
        batch_rows: u32,
        sink: &mut RowSink<'_>,
    ) -> PluginResult<u64> {
        let mut st = self.conn.prepare(sql).map_err(fail)?;
        let names: Vec<String> = st.column_names().map(str::to_owned).collect();
        sink.columns(&names)?;
        let params: Vec<Param<'_>> = params.iter().map(Param).collect();
        let mut rows = st
            .query(rusqlite::params_from_iter(params.iter()))
            .map_err(fail)?;
        let (mut batch, mut count) = (sink.batched(batch_rows), 0u64);
        while let Some(row) = rows.next().map_err(fail)? {
            let mut r = Row::new();
            for i in 0..names.len() {
                r.push(value_of(row.get_ref(i).map_err(fail)?));
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
        let cols: Vec<String> = columns.iter().map(|c| quoted(None, c)).collect();
        let sql = format!(
            "INSERT INTO {} ({}) VALUES ({})",
            quoted(schema, table),
            cols.join(", "),
            vec!["?"; columns.len()].join(", ")
        );
        let mut n = 0;
        for row in rows {
            n += self.execute(&sql, row)?;
        }
        Ok(n)
    }

    fn describe(&mut self, schema: Option<&str>, table: &str) -> PluginResult<TableInfo> {
        let mut st = self
            .conn
            .prepare("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1, ?2)")
            .map_err(fail)?;
        let columns = st
            .query_map(rusqlite::params![table, schema.unwrap_or("main")], |r| {
                Ok(ColumnInfo::new(
                    &r.get::<_, String>(0)?,
                    &r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)? == 0,
                    r.get(3)?,
                ))
            })
            .map_err(fail)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(fail)?;
        if columns.is_empty() {
            return Err(PluginError::new(format!(
                "SQLite (test): table {} does not exist",
                quoted(schema, table)
            )));
        }
        Ok(TableInfo::new(schema, table, columns))
    }

    fn begin(&mut self) -> PluginResult<()> {
        let sql = match self.depth {
            0 => "BEGIN".to_owned(),
            d => format!("SAVEPOINT weft_{d}"),
        };
        self.conn.execute_batch(&sql).map_err(fail)?;
        self.depth += 1;
        Ok(())
    }

    fn commit(&mut self) -> PluginResult<()> {
        let sql = match self.depth {
            0 => return Err(PluginError::new("commit without a transaction")),
            1 => "COMMIT".to_owned(),
            d => format!("RELEASE weft_{}", d - 1),
        };
        self.conn.execute_batch(&sql).map_err(fail)?;
        self.depth -= 1;
        Ok(())
    }

    fn rollback(&mut self) -> PluginResult<()> {
        let sql = match self.depth {
            0 => return Err(PluginError::new("rollback without a transaction")),
            1 => "ROLLBACK".to_owned(),
            d => format!("ROLLBACK TO weft_{n}; RELEASE weft_{n}", n = d - 1),
        };
        self.depth -= 1;
        self.conn.execute_batch(&sql).map_err(fail)
    }

    fn interrupter(&self) -> Option<Interrupter> {
        let handle = self.conn.get_interrupt_handle();
        Some(Interrupter::new(move || handle.interrupt()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fake_connection_does_what_a_module_asks() {
        let mut db = sqlite("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);").expect("db");
        assert_eq!(db.dialect(), Dialect::Sqlite);
        db.begin().expect("begin");
        let n = db
            .insert_batch(
                None,
                "t",
                &["id", "v"],
                &[
                    Row::from(vec![Value::int(1), Value::text("a")]),
                    Row::from(vec![Value::int(2), Value::NULL]),
                ],
            )
            .expect("insert");
        assert_eq!(n, 2);
        db.transaction(|c| {
            c.execute("DELETE FROM t WHERE id = ?", &[Value::int(1)])?;
            Err::<(), _>(PluginError::new("changed my mind"))
        })
        .expect_err("rolled back");
        db.commit().expect("commit");
        let (columns, rows) = db
            .query_all("SELECT id, v FROM t ORDER BY id", &[])
            .expect("rows");
        assert_eq!(columns, ["id", "v"]);
        assert_eq!(rows.len(), 2, "the inner transaction was rolled back");
        assert_eq!(rows[1][1].get(), Datum::Null);
        let info = db.describe(None, "t").expect("describe");
        assert_eq!(info.primary_key(), ["id"]);
        let e = db.describe(None, "nope").expect_err("no table");
        assert!(e.message().contains("nope"), "{e}");
    }

    #[test]
    fn rows_come_in_batches_of_the_size_asked_for() {
        let mut db = sqlite("CREATE TABLE t (x); INSERT INTO t VALUES (1), (2), (3), (4), (5);")
            .expect("db");
        let mut sizes = Vec::new();
        let read = db
            .query(
                "SELECT x FROM t",
                &[],
                2,
                |_| Ok(()),
                |batch| {
                    sizes.push(batch.len());
                    Ok(())
                },
            )
            .expect("query");
        assert_eq!((read, sizes), (5, vec![2, 2, 1]));
    }

    #[test]
    fn a_run_context_lends_its_connection_and_records_its_log() {
        let halt = HaltSignal::new();
        let (mut ctx, log) = Run::new("SELECT 1")
            .target(table(2, 1, "t"))
            .connection(1, sqlite("CREATE TABLE t (x)").expect("db"))
            .variable("day", "2026-11-24")
            .halt(halt.clone())
            .build();
        let (conn, l) = ctx.connection_and_log(1).expect("open");
        conn.execute_batch("INSERT INTO t VALUES (1)")
            .expect("insert");
        l.log("inserted");
        assert_eq!(log.lines(), ["inserted"]);
        assert_eq!(ctx.variable("day"), Some("2026-11-24"));
        assert!(ctx.stop_if_halted().is_ok());
        halt.raise();
        assert_eq!(
            ctx.stop_if_halted().expect_err("halted").kind(),
            ErrorKind::Halted
        );
        let input = Validate::new(Some("SELECT 1"))
            .attribute("keys", AttributeValue::string("id"))
            .source(table(1, 1, "s"))
            .build();
        assert_eq!(input.text("keys"), Some("id"));
        assert_eq!(input.sources()[0].name(), "s");
    }
}
