//! One PostgreSQL connection, taken from the bridge's pool, as weft's
//! [`DatabaseConnection`]: statements with `?` parameters (numbered for PostgreSQL), queries
//! streamed in batches, multi-row inserts, `describe` from the catalog, transactions as
//! `BEGIN`/savepoints, and a halt that sends the server a cancel request.

use crate::clock::{self, ServiceClock};
use crate::placeholders::numbered;
use crate::session::{Driver, Session};
use crate::values::{Param, Raw, decode};
use crate::values::{SessionZone, copyable, encode};
use futures_util::{SinkExt, StreamExt};
use std::pin::Pin;
use tokio_postgres::SimpleQueryMessage;
use tokio_postgres::binary_copy::BinaryCopyOutStream;
use tokio_postgres::types::Type;
use tokio_postgres_rustls::MakeRustlsConnect;
use weft_sdk::{
    ColumnInfo, DatabaseConnection, Dialect, ErrorKind, Interrupter, PluginError, PluginResult,
    Row, RowSink, TableInfo, Value,
};

/// Parameters a statement may bind (PostgreSQL's limit is 65,535).
const MAX_PARAMETERS: usize = 60_000;

/// A `COPY ... FROM STDIN` kept open across the batches of one table.
struct OpenCopy {
    /// Its statement: a batch for another table or other columns ends it.
    sql: String,
    /// The table, for messages.
    target: String,
    /// Rows inserted into the table in this transaction before it began.
    first: u64,
    sink: std::pin::Pin<Box<tokio_postgres::CopyInSink<bytes::Bytes>>>,
    /// The session's `TimeZone` when it began, for `timestamptz` texts without an offset.
    zone: SessionZone,
}

/// A connection as an action uses it.
pub struct PgConnection {
    pub(crate) session: Option<Session>,
    /// Where it goes back when the action is done.
    pub(crate) pool: crate::pool::Slot,
    /// The connection's key, for messages.
    pub(crate) key: String,
    /// How a cancel request reaches the server.
    pub(crate) tls: MakeRustlsConnect,
    /// How to open another connection to the same database (the clock functions are created
    /// on one of their own).
    config: tokio_postgres::Config,
    /// The service clock, for the clock functions.
    clock: Option<ServiceClock>,
    /// How long it is kept idle in the pool after the action.
    idle: std::time::Duration,
    depth: u32,
    /// Rows inserted into each table since the outermost transaction began: the row numbers
    /// an error names count from there (a Transfer's rows, across its batches).
    inserted: std::collections::HashMap<String, u64>,
    /// The column types of each `table (columns)` an insert named, asked once.
    column_types: std::collections::HashMap<String, Vec<Type>>,
    /// The COPY the last batches went into, still open.
    open_copy: Option<OpenCopy>,
    /// Whether the session ran anything but the bridge's catalog reads (then it is reset
    /// before it goes back to the pool).
    used: bool,
}

impl PgConnection {
    /// A connection of entry `key`, which goes back to `pool` when dropped.
    pub fn new(
        session: Session,
        pool: crate::pool::Slot,
        key: &str,
        tls: MakeRustlsConnect,
        config: tokio_postgres::Config,
        clock: Option<ServiceClock>,
        idle: std::time::Duration,
    ) -> Self {
        PgConnection {
            session: Some(session),
            pool,
            key: key.to_owned(),
            tls,
            config,
            clock,
            idle,
            depth: 0,
            inserted: std::collections::HashMap::new(),
            column_types: std::collections::HashMap::new(),
            open_copy: None,
            used: false,
        }
    }

    /// The session, for anything that may change its state (marked used).
    fn c(&mut self) -> &mut Session {
        self.used = true;
        self.catalog()
    }

    /// The session, for the bridge's own catalog reads, which leave its state as it was.
    fn catalog(&mut self) -> &mut Session {
        // `session` is only taken by `drop`.
        self.session
            .as_mut()
            .expect("a PostgreSQL connection is present until it is dropped")
    }

    /// Multi-row INSERTs of at most 1,000 rows and 60,000 parameters.
    fn insert_rows(
        &mut self,
        target: &str,
        columns: &[&str],
        rows: &[Row],
        before: u64,
    ) -> PluginResult<u64> {
        let ncols = columns.len().max(1);
        let q = |s: &str| weft_sql_support::quote(Dialect::Postgres, s);
        let cols: Vec<String> = columns.iter().map(|c| q(c)).collect();
        let per = (MAX_PARAMETERS / ncols).clamp(1, 1000);
        let mut inserted = 0u64;
        for (c, chunk) in rows.chunks(per).enumerate() {
            let mut sql = format!("INSERT INTO {target} ({}) VALUES ", cols.join(", "));
            let mut n = 0;
            for (r, row) in chunk.iter().enumerate() {
                if row.len() != columns.len() {
                    return Err(PluginError::new(format!(
                        "row {}: {} values for {} columns",
                        before as usize + c * per + r + 1,
                        row.len(),
                        columns.len()
                    )));
                }
                sql.push_str(if r == 0 { "(" } else { ", (" });
                for i in 0..row.len() {
                    n += 1;
                    sql.push_str(&format!("{}${n}", if i == 0 { "" } else { ", " }));
                }
                sql.push(')');
            }
            let values: Vec<Param<'_>> = chunk.iter().flat_map(|r| r.iter().map(Param)).collect();
            let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = values
                .iter()
                .map(|p| p as &(dyn tokio_postgres::types::ToSql + Sync))
                .collect();
            inserted += self.c().execute(sql.as_str(), &refs).map_err(|e| {
                let first = before as usize + c * per + 1;
                // A value the column cannot take: the server names the parameter ($n).
                let place = parameter_of(&e).map_or_else(
                    || format!("rows {first} to {}", first + chunk.len() - 1),
                    |n| {
                        format!(
                            "row {}, column {}",
                            first + (n - 1) / ncols,
                            columns.get((n - 1) % ncols).copied().unwrap_or("?")
                        )
                    },
                );
                PluginError::of(
                    ErrorKind::Failed,
                    format!(
                        "PostgreSQL (connection {}): {place} of {target}: {}",
                        self.key,
                        crate::describe_error(&e)
                    ),
                )
            })?;
        }
        Ok(inserted)
    }

    /// The session's `TimeZone` setting.
    fn session_zone(&mut self) -> PluginResult<SessionZone> {
        let sql = "SELECT current_setting('TimeZone')";
        let messages = self.c().simple_query(sql).map_err(|e| self.fail(&e, sql))?;
        let setting = messages.iter().find_map(|m| match m {
            SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
            _ => None,
        });
        Ok(SessionZone::of(setting.as_deref().unwrap_or("UTC")))
    }

    /// The types of `columns` of `target`, as the server sees them.
    fn types_of(&mut self, target: &str, columns: &[&str]) -> PluginResult<Vec<Type>> {
        let cols: Vec<String> = columns
            .iter()
            .map(|c| weft_sql_support::quote(Dialect::Postgres, c))
            .collect();
        let key = format!("{target} ({})", cols.join(", "));
        if let Some(t) = self.column_types.get(&key) {
            return Ok(t.clone());
        }
        self.finish_copy()?;
        let sql = format!("SELECT {} FROM {target} LIMIT 0", cols.join(", "));
        let types: Vec<Type> = self
            .c()
            .prepare(&sql)
            .map_err(|e| self.fail(&e, &sql))?
            .columns()
            .iter()
            .map(|c| c.type_().clone())
            .collect();
        self.column_types.insert(key, types.clone());
        Ok(types)
    }

    /// Rows into `COPY target (columns) FROM STDIN (FORMAT binary)`, each value encoded for
    /// its column's type here. The COPY stays open for the next batch of the same table and
    /// columns, so that the server loads one batch while the next is read and encoded (a
    /// COPY per batch made the two take turns); it ends before any other statement, at
    /// commit ([`Self::finish_copy`]), and is abandoned (nothing of it lands) when a value
    /// does not fit, at rollback and when the connection is dropped.
    fn copy_in(
        &mut self,
        target: &str,
        columns: &[&str],
        types: &[Type],
        rows: &[Row],
        before: u64,
    ) -> PluginResult<u64> {
        let cols: Vec<String> = columns
            .iter()
            .map(|c| weft_sql_support::quote(Dialect::Postgres, c))
            .collect();
        let sql = format!(
            "COPY {target} ({}) FROM STDIN (FORMAT binary)",
            cols.join(", ")
        );
        if self.open_copy.as_ref().is_some_and(|o| o.sql != sql) {
            self.finish_copy()?;
        }
        let key = self.key.clone();
        let place = |row: usize, column: &str| {
            format!(
                "PostgreSQL (connection {key}): row {}, column {column} of {target}",
                before as usize + row
            )
        };
        // PostgreSQL's binary COPY format: a header, then each row as its field count and
        // each field as its length (-1 for NULL) and bytes, then -1 at the end. Sent in
        // pieces of about 1 MiB.
        let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
        if self.open_copy.is_none() {
            // Asked before the COPY begins (no other statement can run during it), and only
            // where a column needs it.
            let zone = if types.contains(&Type::TIMESTAMPTZ) {
                self.session_zone()?
            } else {
                SessionZone::Known(chrono_tz::UTC)
            };
            let (client, mut driver) = self.c().parts();
            let sink = driver
                .block_on(client.copy_in::<_, bytes::Bytes>(sql.as_str()))
                .map_err(|e| {
                    PluginError::new(format!(
                        "PostgreSQL (connection {key}): {}; in `{sql}`",
                        crate::describe_error(&e)
                    ))
                })?;
            self.open_copy = Some(OpenCopy {
                sql: sql.clone(),
                target: target.to_owned(),
                first: before,
                sink: Box::pin(sink),
                zone,
            });
            buf.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
            buf.extend_from_slice(&0i32.to_be_bytes());
            buf.extend_from_slice(&0i32.to_be_bytes());
        }
        let fields = i16::try_from(columns.len())
            .map_err(|_| PluginError::new(format!("{target}: too many columns")))?;
        let lost = |e: tokio_postgres::Error| {
            PluginError::of(
                ErrorKind::Connection,
                format!(
                    "PostgreSQL (connection {key}): the COPY into {target} broke off: {}",
                    crate::describe_error(&e)
                ),
            )
        };
        let Some(open) = self.open_copy.as_mut() else {
            return Err(PluginError::new("the COPY was not opened"));
        };
        let session = self
            .session
            .as_mut()
            .expect("a PostgreSQL connection is present until it is dropped");
        let (_, mut driver) = session.parts();
        let mut send = |buf: &mut Vec<u8>| {
            let piece = bytes::Bytes::from(std::mem::replace(buf, Vec::with_capacity(1 << 20)));
            driver.block_on(open.sink.send(piece)).map_err(lost)
        };
        let written = (|| {
            for (r, row) in rows.iter().enumerate() {
                if row.len() != columns.len() {
                    return Err(PluginError::new(format!(
                        "{}: {} values for {} columns",
                        place(r + 1, "-"),
                        row.len(),
                        columns.len()
                    )));
                }
                buf.extend_from_slice(&fields.to_be_bytes());
                for (i, (v, ty)) in row.iter().zip(types).enumerate() {
                    if v.is_null() {
                        buf.extend_from_slice(&(-1i32).to_be_bytes());
                        continue;
                    }
                    let at = buf.len();
                    buf.extend_from_slice(&0i32.to_be_bytes());
                    encode(v, ty, &open.zone, &mut buf).map_err(|m| {
                        PluginError::new(format!("{}: {m}", place(r + 1, columns[i])))
                    })?;
                    let len = i32::try_from(buf.len() - at - 4).map_err(|_| {
                        PluginError::new(format!(
                            "{}: a value over 2 GiB",
                            place(r + 1, columns[i])
                        ))
                    })?;
                    buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
                }
                if buf.len() >= 1 << 20 {
                    send(&mut buf)?;
                }
            }
            if !buf.is_empty() {
                send(&mut buf)?;
            }
            Ok(rows.len() as u64)
        })();
        if written.is_err() {
            // Dropping the sink aborts the COPY: nothing of it lands.
            self.open_copy = None;
        }
        written
    }

    /// Ends the open COPY, if any: its rows land (in the transaction), or the server's error
    /// names the row (counted over the whole Transfer) and the column.
    fn finish_copy(&mut self) -> PluginResult<()> {
        let Some(mut open) = self.open_copy.take() else {
            return Ok(());
        };
        let key = self.key.clone();
        let (_, mut driver) = self.c().parts();
        let end = bytes::Bytes::from_static(&[0xff, 0xff]); // -1 as i16: no more rows
        driver
            .block_on(async {
                open.sink.send(end).await?;
                open.sink.as_mut().finish().await
            })
            .map(|_| ())
            .map_err(|e| {
                // The server names the line (the row of this COPY) and the column.
                let target = &open.target;
                let at = e
                    .as_db_error()
                    .and_then(|d| d.where_())
                    .and_then(copy_line)
                    .map(|(line, column)| {
                        format!(
                            "PostgreSQL (connection {key}): row {}, column {column} of {target}",
                            open.first as usize + line
                        )
                    })
                    .unwrap_or_else(|| format!("PostgreSQL (connection {key}): {target}"));
                PluginError::of(kind_of(&e), format!("{at}: {}", crate::describe_error(&e)))
            })
    }

    /// The rows of `sql` through `COPY (sql) TO STDOUT (FORMAT binary)`: the server's fastest
    /// way out, read in the binary format of each column's type.
    fn copy_out(
        &mut self,
        sql: &str,
        columns: &[(String, Type)],
        batch_rows: u32,
        sink: &mut RowSink<'_>,
    ) -> PluginResult<u64> {
        let query = sql.trim().trim_end_matches(';');
        let copy = format!("COPY ({query}\n) TO STDOUT (FORMAT binary)");
        let key = self.key.clone();
        let failed = |e: &tokio_postgres::Error| {
            let kind = kind_of(e);
            PluginError::of(
                kind,
                format!(
                    "PostgreSQL (connection {key}): {}",
                    crate::describe_error(e)
                ),
            )
        };
        let types: Vec<Type> = columns.iter().map(|(_, t)| t.clone()).collect();
        let (client, mut driver) = self.c().parts();
        let drained = driver
            .block_on(client.copy_out(copy.as_str()))
            .and_then(|stream| {
                let rows = Box::pin(BinaryCopyOutStream::new(stream, &types));
                drain(
                    &mut driver,
                    rows,
                    columns,
                    &key,
                    batch_rows,
                    sink,
                    |r, i| r.try_get(i),
                )
            });
        drained.map_err(|e| failed(&e))?
    }

    /// Before a statement that names a clock function: makes sure the database has the
    /// current functions (created once, on a connection of their own), and hands this
    /// session the service clock and zone.
    fn prepare_clock(&mut self, sql: &str) -> PluginResult<()> {
        if !clock::names_clock_function(sql) {
            return Ok(());
        }
        let Some(service) = self.clock.clone() else {
            return Ok(());
        };
        if !clock::known_current(&self.pool) {
            let installed = self
                .c()
                .query(clock::INSTALLED_VERSION, &[])
                .map_err(|e| self.fail(&e, clock::INSTALLED_VERSION))?
                .first()
                .and_then(|r| r.try_get::<_, String>(0).ok())
                .and_then(|src| clock::version_of(&src));
            if installed.is_none_or(|v| v < clock::VERSION) {
                self.create_clock_functions()?;
            }
            clock::mark_current(&self.pool);
        }
        let stepped = if service.stepped() { "on" } else { "off" };
        self.c()
            .execute(
                clock::SESSION,
                &[&service.zone(), &service.now_text(), &stepped],
            )
            .map_err(|e| self.fail(&e, clock::SESSION))?;
        Ok(())
    }

    /// Runs the clock functions' script on a connection of its own (committed at once, so
    /// that this connection's transaction sees them and does not hold them back).
    fn create_clock_functions(&mut self) -> PluginResult<()> {
        let key = self.key.clone();
        let mut other = Session::connect(&self.config, self.tls.clone()).map_err(|e| {
            PluginError::new(format!(
                "PostgreSQL (connection {key}): cannot connect to create the clock functions: {}",
                e
            ))
        })?;
        other.batch_execute(clock::SQL).map_err(|e| {
            let denied = e.code() == Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE);
            PluginError::new(format!(
                "PostgreSQL (connection {key}): the clock functions (current_local_timestamp, \
                 is_dst_change_tonight) are not in schema weft_clock of this database{}: {}",
                if denied {
                    ", and this user may not create them: let an owner of the database run \
                     docs/sql/postgresql-clock.sql once (docs/postgresql.md)"
                } else {
                    ", and creating them failed"
                },
                crate::describe_error(&e)
            ))
        })
    }

    fn fail(&self, e: &tokio_postgres::Error, sql: &str) -> PluginError {
        let kind = kind_of(e);
        let described = crate::describe_error(e);
        // The server's position counts characters from the start of the text it was sent,
        // the action's whole text: said as a line and column of it, with the lines around it
        // quoted and the offset in them, as the native SQLite connection says it.
        let position = e.as_db_error().and_then(|d| match d.position() {
            Some(tokio_postgres::error::ErrorPosition::Original(p)) => Some(*p as usize),
            _ => None,
        });
        if let Some(p) = position.filter(|p| (1..=sql.chars().count()).contains(p)) {
            let at = sql.char_indices().nth(p - 1).map_or(sql.len(), |(i, _)| i);
            let before = &sql[..at];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            // From the start of the line before it (at most 300 bytes back) to some way past.
            let from = before[..before.rfind('\n').unwrap_or(0)]
                .rfind('\n')
                .map_or(0, |i| i + 1)
                .max(sql.floor_char_boundary(at.saturating_sub(300)));
            let to = sql.ceil_char_boundary((at + 300).min(sql.len()));
            let message = described
                .rsplit_once("; at character ")
                .map_or(described.as_str(), |(m, _)| m);
            return PluginError::of(
                kind,
                format!(
                    "PostgreSQL (connection {}): {message} at line {line}, column {column} of the action; at offset {} in `{}`",
                    self.key,
                    // In characters, as the page counts them.
                    sql[from..at].chars().count(),
                    &sql[from..to]
                ),
            );
        }
        let shown: String = sql.chars().take(300).collect();
        PluginError::of(
            kind,
            format!(
                "PostgreSQL (connection {}): {described}; in `{shown}`",
                self.key
            ),
        )
    }
}

impl Drop for PgConnection {
    fn drop(&mut self) {
        // An open COPY is abandoned: its rows never land.
        self.open_copy = None;
        let Some(mut client) = self.session.take() else {
            return;
        };
        // A connection goes back to the pool outside any transaction.
        if self.depth > 0 && client.batch_execute("ROLLBACK").is_err() {
            return;
        }
        crate::pool::give_back(std::mem::take(&mut self.pool), client, self.idle, self.used);
    }
}

/// The parameter (`$n`, from 1) a server error is about, from its context ("unnamed portal
/// parameter $3 = '...'").
fn parameter_of(e: &tokio_postgres::Error) -> Option<usize> {
    let context = e.as_db_error()?.where_()?;
    let at = context.find("parameter $")? + "parameter $".len();
    let digits: String = context[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok().filter(|n| *n > 0)
}

/// What kind of failure a PostgreSQL error is: a cancelled statement is a halt, a closed
/// connection a lost connection.
fn kind_of(e: &tokio_postgres::Error) -> ErrorKind {
    match e.code() {
        Some(c) if *c == tokio_postgres::error::SqlState::QUERY_CANCELED => ErrorKind::Halted,
        _ if e.is_closed() => ErrorKind::Connection,
        _ => ErrorKind::Failed,
    }
}

/// Hands the rows of a result to `sink` in batches of `batch_rows`: each batch is read in
/// one wait (the socket read whenever the rows at hand are used up) and handed over after
/// it, outside the session's runtime, so that the sink may use another PostgreSQL session
/// on this thread (an Upsert from one connection into another writes there). The count,
/// or (inside `Ok`) the first error of a row or of the sink.
fn drain<R, S>(
    driver: &mut Driver<'_>,
    mut rows: Pin<Box<S>>,
    columns: &[(String, Type)],
    key: &str,
    batch_rows: u32,
    sink: &mut RowSink<'_>,
    get: impl for<'r> Fn(&'r R, usize) -> Result<Option<Raw<'r>>, tokio_postgres::Error>,
) -> Result<PluginResult<u64>, tokio_postgres::Error>
where
    S: futures_util::Stream<Item = Result<R, tokio_postgres::Error>>,
{
    let mut batch = sink.batched(batch_rows);
    let mut count = 0u64;
    let per_wait = usize::try_from(batch_rows.max(1)).unwrap_or(usize::MAX);
    loop {
        let read = driver.block_on(async {
            let mut got = Vec::with_capacity(per_wait.min(4096));
            while got.len() < per_wait {
                let Some(row) = rows.next().await else {
                    return Ok(Ok((got, true)));
                };
                let row = row?;
                count += 1;
                match row_of(columns, key, count, |i| get(&row, i)) {
                    Ok(r) => got.push(r),
                    Err(e) => return Ok(Err(e)),
                }
            }
            Ok(Ok((got, false)))
        })?;
        let (got, done) = match read {
            Ok(read) => read,
            Err(e) => return Ok(Err(e)),
        };
        for r in got {
            if let Err(e) = batch.push(r) {
                return Ok(Err(e));
            }
        }
        if done {
            return Ok(batch.finish().map(|()| count));
        }
    }
}

/// Row number `count` of a result as weft values, its column `i` got with `get`.
fn row_of<'r>(
    columns: &[(String, Type)],
    key: &str,
    count: u64,
    get: impl Fn(usize) -> Result<Option<Raw<'r>>, tokio_postgres::Error>,
) -> PluginResult<Row> {
    let mut r = Row::with_capacity(columns.len());
    for (i, (name, ty)) in columns.iter().enumerate() {
        let at = || format!("PostgreSQL (connection {key}): row {count}, column {name}");
        let raw = get(i)
            .map_err(|e| PluginError::new(format!("{}: {}", at(), crate::describe_error(&e))))?;
        r.push(match raw {
            None => Value::NULL,
            Some(Raw(bytes)) => {
                decode(ty, bytes).map_err(|m| PluginError::new(format!("{}: {m}", at())))?
            }
        });
    }
    Ok(r)
}

/// Whether `sql` is one query that `COPY (...) TO STDOUT` takes: it starts with SELECT,
/// WITH, VALUES or TABLE (after white space and comments) and holds no `;` but at its end.
fn copies_out(sql: &str) -> bool {
    let mut rest = sql.trim_start();
    loop {
        if let Some(r) = rest.strip_prefix("--") {
            rest = r.split_once('\n').map_or("", |(_, r)| r).trim_start();
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map_or("", |(_, r)| r).trim_start();
        } else {
            break;
        }
    }
    let first: String = rest
        .chars()
        .take_while(char::is_ascii_alphabetic)
        .collect::<String>()
        .to_ascii_uppercase();
    matches!(first.as_str(), "SELECT" | "WITH" | "VALUES" | "TABLE")
        && !rest.trim_end().trim_end_matches(';').contains(';')
}

/// The line and column a COPY error's context names ("COPY t, line 3, column amount: ...").
fn copy_line(context: &str) -> Option<(usize, String)> {
    let at = context.find(", line ")? + ", line ".len();
    let rest = &context[at..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let line = digits.parse().ok()?;
    let column = rest
        .find(", column ")
        .map(|c| {
            rest[c + ", column ".len()..]
                .split(':')
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .unwrap_or_else(|| "-".to_owned());
    Some((line, column))
}

fn params(values: &[Value]) -> Vec<Param<'_>> {
    values.iter().map(Param).collect()
}

impl DatabaseConnection for PgConnection {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute_batch(&mut self, sql: &str) -> PluginResult<u64> {
        self.finish_copy()?;
        self.prepare_clock(sql)?;
        let messages = self.c().simple_query(sql).map_err(|e| self.fail(&e, sql))?;
        Ok(messages
            .iter()
            .map(|m| match m {
                SimpleQueryMessage::CommandComplete(n) => *n,
                _ => 0,
            })
            .sum())
    }

    fn execute(&mut self, sql: &str, values: &[Value]) -> PluginResult<u64> {
        self.finish_copy()?;
        self.prepare_clock(sql)?;
        let text = if values.is_empty() {
            sql.to_owned()
        } else {
            numbered(sql)
        };
        let ps = params(values);
        let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = ps
            .iter()
            .map(|p| p as &(dyn tokio_postgres::types::ToSql + Sync))
            .collect();
        self.c()
            .execute(text.as_str(), &refs)
            .map_err(|e| self.fail(&e, &text))
    }

    fn query(
        &mut self,
        sql: &str,
        values: &[Value],
        batch_rows: u32,
        sink: &mut RowSink<'_>,
    ) -> PluginResult<u64> {
        self.finish_copy()?;
        self.prepare_clock(sql)?;
        let text = if values.is_empty() {
            sql.to_owned()
        } else {
            numbered(sql)
        };
        let key = self.key.clone();
        let statement = self.c().prepare(&text).map_err(|e| self.fail(&e, &text))?;
        let columns: Vec<(String, tokio_postgres::types::Type)> = statement
            .columns()
            .iter()
            .map(|c| (c.name().to_owned(), c.type_().clone()))
            .collect();
        let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
        sink.columns(&names)?;
        if values.is_empty() && copies_out(sql) {
            return self.copy_out(sql, &columns, batch_rows, sink);
        }
        let ps = params(values);
        let (client, mut driver) = self.c().parts();
        driver
            .block_on(client.query_raw(&statement, ps.iter()))
            .and_then(|rows| {
                drain(
                    &mut driver,
                    Box::pin(rows),
                    &columns,
                    &key,
                    batch_rows,
                    sink,
                    |r, i| r.try_get(i),
                )
            })
            .map_err(|e| {
                PluginError::of(
                    kind_of(&e),
                    format!(
                        "PostgreSQL (connection {key}): {}",
                        crate::describe_error(&e)
                    ),
                )
            })?
    }

    /// Binary `COPY ... FROM STDIN` when every column's type can be written in binary, else
    /// multi-row INSERTs; either way, an error names the row (counted from the first row
    /// inserted into the table in this transaction) and, where it can, the column.
    fn insert_batch(
        &mut self,
        schema: Option<&str>,
        table: &str,
        columns: &[&str],
        rows: &[Row],
    ) -> PluginResult<u64> {
        if rows.is_empty() {
            return Ok(0);
        }
        let target = weft_sql_support::qualified(Dialect::Postgres, schema, table);
        let types = self.types_of(&target, columns)?;
        let before = self.inserted.get(&target).copied().unwrap_or(0);
        let n = if types.iter().all(copyable) {
            self.copy_in(&target, columns, &types, rows, before)?
        } else {
            self.finish_copy()?;
            self.insert_rows(&target, columns, rows, before)?
        };
        *self.inserted.entry(target).or_default() += rows.len() as u64;
        Ok(n)
    }

    fn describe(&mut self, schema: Option<&str>, table: &str) -> PluginResult<TableInfo> {
        self.finish_copy()?;
        // A column's place in the primary key counts from 1 (0: not in it); `indkey` is an
        // int2vector, whose array counts from 0. The table is found as PostgreSQL resolves
        // a name (`to_regclass`: in the schema, else the first on the search path), which
        // plans in a fifth of the time a join on names and `pg_table_is_visible` took (it
        // runs at every deploy's object check). `OFFSET 0` keeps the planner from seeing the
        // name: its plan for the names given then costs what its plan for any name does, so
        // the kept statement's plan is made once instead of at every call (0.2 ms each).
        let sql = "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull,
                COALESCE(array_position(i.indkey::int2[], a.attnum)
                    - array_lower(i.indkey::int2[], 1) + 1, 0)::int4,
                n.nspname::text
            FROM (SELECT to_regclass(CASE WHEN $2::text IS NULL THEN quote_ident($1::text)
                    ELSE quote_ident($2::text) || '.' || quote_ident($1::text) END)::oid AS oid
                OFFSET 0) r
            JOIN pg_class c ON c.oid = r.oid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.oid
            LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
            WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
              AND a.attnum > 0 AND NOT a.attisdropped
            ORDER BY a.attnum";
        let schema = schema.filter(|s| !s.is_empty());
        // As written first; an unquoted name is stored in lower case.
        let attempts = [
            (table.to_owned(), schema.map(str::to_owned)),
            (table.to_lowercase(), schema.map(str::to_lowercase)),
        ];
        // A session that ran only catalog reads keeps the statement prepared (a deploy's
        // object checks, one after the other on a pooled session); one that ran its user's
        // statements may have deallocated it, so it is sent as it is.
        let kept = if self.used {
            None
        } else {
            Some(self.catalog().kept(sql).map_err(|e| self.fail(&e, sql))?)
        };
        let mut found = Vec::new();
        for (name, schema) in &attempts {
            let s = self.catalog();
            found = match &kept {
                Some(st) => s.query_prepared(st, &[name, schema]),
                None => s.query(sql, &[name, schema]),
            }
            .map_err(|e| self.fail(&e, sql))?;
            if !found.is_empty() {
                break;
            }
        }
        if found.is_empty() {
            return Err(PluginError::new(format!(
                "PostgreSQL (connection {}): table {} does not exist",
                self.key,
                weft_sql_support::qualified(Dialect::Postgres, schema, table)
            )));
        }
        let columns = found
            .iter()
            .map(|r| {
                ColumnInfo::new(
                    r.get::<_, String>(0).as_str(),
                    r.get::<_, String>(1).as_str(),
                    r.get(2),
                    r.get::<_, i32>(3).max(0) as u32,
                )
            })
            .collect();
        let real_schema: String = found[0].get(4);
        Ok(TableInfo::new(Some(&real_schema), table, columns))
    }

    fn begin(&mut self) -> PluginResult<()> {
        self.finish_copy()?;
        let sql = if self.depth == 0 {
            "BEGIN".to_owned()
        } else {
            format!("SAVEPOINT weft_{}", self.depth)
        };
        self.c()
            .batch_execute(&sql)
            .map_err(|e| self.fail(&e, &sql))?;
        if self.depth == 0 {
            self.inserted.clear();
        }
        self.depth += 1;
        Ok(())
    }

    fn commit(&mut self) -> PluginResult<()> {
        self.finish_copy()?;
        let sql = match self.depth {
            0 => return Err(PluginError::new("commit without a transaction")),
            1 => "COMMIT".to_owned(),
            d => format!("RELEASE SAVEPOINT weft_{}", d - 1),
        };
        self.c()
            .batch_execute(&sql)
            .map_err(|e| self.fail(&e, &sql))?;
        self.depth -= 1;
        Ok(())
    }

    fn rollback(&mut self) -> PluginResult<()> {
        // What the open COPY holds is abandoned with the transaction.
        self.open_copy = None;
        let sql = match self.depth {
            0 => return Err(PluginError::new("rollback without a transaction")),
            1 => "ROLLBACK".to_owned(),
            d => format!(
                "ROLLBACK TO SAVEPOINT weft_{n}; RELEASE SAVEPOINT weft_{n}",
                n = d - 1
            ),
        };
        let r = self.c().batch_execute(&sql);
        self.depth -= 1;
        r.map_err(|e| self.fail(&e, &sql))
    }

    /// A cancel request on a connection of its own (sent from a thread of its own, so that a
    /// halt never waits on the network).
    fn interrupter(&self) -> Option<Interrupter> {
        let token = self.session.as_ref()?.cancel_token()?;
        let tls = self.tls.clone();
        Some(Interrupter::new(move || {
            let (token, tls) = (token.clone(), tls.clone());
            let _ = std::thread::Builder::new()
                .name("weft-pg-cancel".to_owned())
                .spawn(move || {
                    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    else {
                        return;
                    };
                    let _ = runtime.block_on(token.cancel_query(tls));
                });
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::{copies_out, copy_line};

    #[test]
    fn one_query_goes_out_through_copy_and_anything_else_not() {
        for sql in [
            "SELECT * FROM t",
            "  -- the rows\n/* all */ select 1;",
            "WITH x AS (SELECT 1) SELECT * FROM x",
            "VALUES (1), (2)",
            "TABLE t",
        ] {
            assert!(copies_out(sql), "{sql}");
        }
        for sql in [
            "INSERT INTO t VALUES (1)",
            "SELECT 1; SELECT 2",
            "SHOW search_path",
            "",
        ] {
            assert!(!copies_out(sql), "{sql}");
        }
    }

    #[test]
    fn a_copy_errors_context_names_line_and_column() {
        assert_eq!(
            copy_line("COPY t, line 3, column amount: \"x\""),
            Some((3, "amount".to_owned()))
        );
        assert_eq!(copy_line("COPY t, line 12"), Some((12, "-".to_owned())));
        assert_eq!(copy_line("SQL function"), None);
    }
}
