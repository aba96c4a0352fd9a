//! Connections: [`Connection`], the handle a module works through, and
//! [`DatabaseConnection`], what a bridge implements for one open connection. Both speak plain
//! Rust (`&str`, slices, `Option`, `Result`); the boundary form ([`ConnectionFfi`]) and the
//! conversions stay inside the sdk.

use crate::error::{PluginError, PluginResult, catch};
use crate::halt::{InterruptBox, Interrupter};
use crate::value::{Dialect, Row, TableInfo, Value};
use abi_stable::StableAbi;
use abi_stable::sabi_trait;
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::sabi_types::RMut;
use abi_stable::std_types::{RBox, ROption, RResult, RSlice, RStr, RString, RVec};

/// A batch of rows, as a query hands them on: a vector (it derefs to a slice of [`Row`]s and
/// can be iterated by value).
pub type Rows = RVec<Row>;

/// An open connection to a database, as a module gets it from its [`RunContext`]
/// (native SQLite, or one a bridge opened).
///
/// [`RunContext`]: crate::RunContext
#[repr(transparent)]
#[derive(StableAbi)]
pub struct Connection {
    inner: ConnectionBox,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("dialect", &self.dialect())
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// A connection a bridge opened, ready to cross the boundary; every call into it is
    /// guarded, so that a panic in the driver becomes an error.
    pub fn new<T: DatabaseConnection>(connection: T) -> Self {
        Connection {
            inner: ConnectionFfi_TO::from_value(Adapter(connection), TD_Opaque),
        }
    }

    /// The SQL dialect, which decides how statements are written and how SQL is validated.
    pub fn dialect(&self) -> Dialect {
        self.inner.dialect()
    }

    /// Runs one or several statements without parameters; the rows they changed.
    ///
    /// # Errors
    ///
    /// The database's error, naming the connection and the statement.
    pub fn execute_batch(&mut self, sql: &str) -> PluginResult<u64> {
        self.inner.execute_batch(sql.into()).into_result()
    }

    /// Runs one statement with positional parameters (`?`); the rows it changed.
    ///
    /// # Errors
    ///
    /// The database's error.
    pub fn execute(&mut self, sql: &str, params: &[Value]) -> PluginResult<u64> {
        self.inner.execute(sql.into(), params.into()).into_result()
    }

    /// Runs a query: `on_columns` gets the column names once, then `on_rows` the rows in
    /// batches of at most `batch_rows`. Returns the number of rows read. An error from either
    /// closure stops the query and is returned; a panic in them becomes an error.
    ///
    /// # Errors
    ///
    /// The database's error, or the closures'.
    pub fn query(
        &mut self,
        sql: &str,
        params: &[Value],
        batch_rows: u32,
        mut on_columns: impl FnMut(&[String]) -> PluginResult<()>,
        mut on_rows: impl FnMut(Rows) -> PluginResult<()>,
    ) -> PluginResult<u64> {
        let mut sink = FnSink {
            on_columns: |names: &[RString]| {
                let names: Vec<String> = names.iter().map(|n| n.as_str().to_owned()).collect();
                on_columns(&names)
            },
            on_rows: &mut on_rows,
        };
        let sink = RowSinkFfi_TO::from_ptr(RMut::new(&mut sink), TD_Opaque);
        self.inner
            .query(sql.into(), params.into(), batch_rows, sink)
            .into_result()
    }

    /// Runs `sql` and collects every row, with the column names. For small results.
    ///
    /// # Errors
    ///
    /// The database's error.
    pub fn query_all(
        &mut self,
        sql: &str,
        params: &[Value],
    ) -> PluginResult<(Vec<String>, Vec<Row>)> {
        let mut columns = Vec::new();
        let mut rows = Vec::new();
        self.query(
            sql,
            params,
            1024,
            |names| {
                columns = names.to_vec();
                Ok(())
            },
            |batch| {
                rows.extend(batch);
                Ok(())
            },
        )?;
        Ok((columns, rows))
    }

    /// Inserts `rows` into `schema.table` (`columns` name the values of each row); the number
    /// of rows inserted.
    ///
    /// # Errors
    ///
    /// The database's error, naming the row where it can.
    pub fn insert_batch<S: AsRef<str>>(
        &mut self,
        schema: Option<&str>,
        table: &str,
        columns: &[S],
        rows: &[Row],
    ) -> PluginResult<u64> {
        let columns: Vec<RString> = columns.iter().map(|c| c.as_ref().into()).collect();
        self.inner
            .insert_batch(
                schema.map(RStr::from).into(),
                table.into(),
                columns.as_slice().into(),
                rows.into(),
            )
            .into_result()
    }

    /// Columns, types and primary key of `schema.table`.
    ///
    /// # Errors
    ///
    /// When the table does not exist or cannot be described.
    pub fn describe(&mut self, schema: Option<&str>, table: &str) -> PluginResult<TableInfo> {
        self.inner
            .describe(schema.map(RStr::from).into(), table.into())
            .into_result()
    }

    /// Starts a transaction (nested calls nest, as savepoints).
    ///
    /// # Errors
    ///
    /// The database's error.
    pub fn begin(&mut self) -> PluginResult<()> {
        self.inner.begin().into_result()
    }

    /// Commits the innermost transaction.
    ///
    /// # Errors
    ///
    /// The database's error.
    pub fn commit(&mut self) -> PluginResult<()> {
        self.inner.commit().into_result()
    }

    /// Rolls the innermost transaction back.
    ///
    /// # Errors
    ///
    /// The database's error.
    pub fn rollback(&mut self) -> PluginResult<()> {
        self.inner.rollback().into_result()
    }

    /// Runs `work` in a transaction of its own (a savepoint inside the action's):
    /// committed when it returns `Ok`, rolled back when it returns an error.
    ///
    /// # Errors
    ///
    /// `work`'s error, or the database's.
    pub fn transaction<T>(
        &mut self,
        work: impl FnOnce(&mut Connection) -> PluginResult<T>,
    ) -> PluginResult<T> {
        self.begin()?;
        match work(self) {
            Ok(v) => {
                self.commit()?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.rollback();
                Err(e)
            }
        }
    }

    /// What stops this connection's running statement from another thread, if it can be
    /// stopped (the host calls it when the action's instance is halted).
    pub fn interrupter(&self) -> Option<Interrupter> {
        self.inner
            .interrupter()
            .into_option()
            .map(Interrupter::from_ffi)
    }

    /// The database file, when this connection is a SQLite file on this host that another
    /// SQLite connection can attach ([`Connection::attach_read_only`]); `None` otherwise.
    pub fn local_file(&self) -> Option<String> {
        self.inner.local_file().into_option().map(String::from)
    }

    /// Makes the SQLite database `file` readable on this connection, read only, under the
    /// schema name this returns, until its outermost transaction ends (or, outside a
    /// transaction, until it goes back to the host). A module copies between two SQLite files
    /// with one `INSERT ... SELECT` this way, as the `sqlite3` tool does.
    ///
    /// # Errors
    ///
    /// When the connection cannot attach files (every connection but a native SQLite one),
    /// when `file` is this connection's own, or SQLite's error.
    pub fn attach_read_only(&mut self, file: &str) -> PluginResult<String> {
        self.inner
            .attach_read_only(file.into())
            .into_result()
            .map(String::from)
    }
}

/// One open connection to a database, as a bridge implements it (the host's native SQLite
/// connection is one too). Wrap it in [`Connection::new`] to hand it over.
pub trait DatabaseConnection: Send + 'static {
    /// The SQL dialect.
    fn dialect(&self) -> Dialect;

    /// Runs one or several statements without parameters; the rows they changed.
    ///
    /// # Errors
    ///
    /// The database's error, naming the connection (never its password) and the statement.
    fn execute_batch(&mut self, sql: &str) -> PluginResult<u64>;

    /// Runs one statement with positional parameters (`?`); the rows it changed.
    ///
    /// # Errors
    ///
    /// The database's error.
    fn execute(&mut self, sql: &str, params: &[Value]) -> PluginResult<u64>;

    /// Runs a query, handing the column names and then the rows, in batches of at most
    /// `batch_rows`, to `sink`; the number of rows read. An error from the sink stops the
    /// query and is returned.
    ///
    /// # Errors
    ///
    /// The database's error, or the sink's.
    fn query(
        &mut self,
        sql: &str,
        params: &[Value],
        batch_rows: u32,
        sink: &mut RowSink<'_>,
    ) -> PluginResult<u64>;

    /// Inserts `rows` into `schema.table`, `columns` naming the values of each row; the
    /// number of rows inserted.
    ///
    /// # Errors
    ///
    /// The database's error.
    fn insert_batch(
        &mut self,
        schema: Option<&str>,
        table: &str,
        columns: &[&str],
        rows: &[Row],
    ) -> PluginResult<u64>;

    /// Columns, types and primary key of `schema.table`.
    ///
    /// # Errors
    ///
    /// When the table does not exist or cannot be described.
    fn describe(&mut self, schema: Option<&str>, table: &str) -> PluginResult<TableInfo>;

    /// Starts a transaction (nested calls nest, as savepoints).
    ///
    /// # Errors
    ///
    /// The database's error.
    fn begin(&mut self) -> PluginResult<()>;

    /// Commits the innermost transaction.
    ///
    /// # Errors
    ///
    /// The database's error.
    fn commit(&mut self) -> PluginResult<()>;

    /// Rolls the innermost transaction back.
    ///
    /// # Errors
    ///
    /// The database's error.
    fn rollback(&mut self) -> PluginResult<()>;

    /// What stops this connection's running statement from another thread, when a batch
    /// instance is halted; `None` (the default) when it cannot be stopped: the statement
    /// then runs to its end, and the host rolls the action back afterwards.
    fn interrupter(&self) -> Option<Interrupter> {
        None
    }

    /// See [`Connection::local_file`]; `None` by default.
    fn local_file(&self) -> Option<String> {
        None
    }

    /// See [`Connection::attach_read_only`]; refused by default.
    ///
    /// # Errors
    ///
    /// By default always: the connection cannot attach files.
    fn attach_read_only(&mut self, file: &str) -> PluginResult<String> {
        Err(cannot_attach(file))
    }
}

/// The refusal of a connection that cannot attach `file`.
fn cannot_attach(file: &str) -> PluginError {
    PluginError::of(
        crate::error::ErrorKind::Invalid,
        format!("this connection cannot attach the database file {file}"),
    )
}

/// Where a [`DatabaseConnection::query`] hands its rows.
pub struct RowSink<'a> {
    inner: &'a mut dyn SinkTarget,
}

/// What a [`RowSink`] hands on to: the boundary form of the receiver.
trait SinkTarget {
    fn columns(&mut self, names: RSlice<'_, RString>) -> RResult<(), PluginError>;
    fn rows(&mut self, batch: RVec<Row>) -> RResult<(), PluginError>;
}

impl SinkTarget for RowSinkFfi_TO<'_, RMut<'_, ()>> {
    fn columns(&mut self, names: RSlice<'_, RString>) -> RResult<(), PluginError> {
        RowSinkFfi::columns(self, names)
    }

    fn rows(&mut self, batch: RVec<Row>) -> RResult<(), PluginError> {
        RowSinkFfi::rows(self, batch)
    }
}

impl<'a> RowSink<'a> {
    /// The result's column names, once, before any row.
    ///
    /// # Errors
    ///
    /// The receiver's: stop the query and return it.
    pub fn columns<S: AsRef<str>>(&mut self, names: &[S]) -> PluginResult<()> {
        let names: Vec<RString> = names.iter().map(|n| n.as_ref().into()).collect();
        self.inner.columns(names.as_slice().into()).into_result()
    }

    /// A batch of rows.
    ///
    /// # Errors
    ///
    /// The receiver's: stop the query and return it.
    pub fn rows(&mut self, batch: Rows) -> PluginResult<()> {
        self.inner.rows(batch).into_result()
    }

    /// Hands rows on in batches of `batch_rows` (at least 1) as they are pushed; `finish`
    /// hands on the last, shorter one.
    pub fn batched(&mut self, batch_rows: u32) -> Batcher<'_, 'a> {
        let size = batch_rows.max(1) as usize;
        Batcher {
            sink: self,
            // Room for at most 10,000 rows up front; a larger batch grows as rows come.
            batch: Rows::with_capacity(size.min(10_000)),
            size,
        }
    }
}

/// Rows on their way to a [`RowSink`], a batch at a time (see [`RowSink::batched`]).
pub struct Batcher<'s, 'a> {
    sink: &'s mut RowSink<'a>,
    batch: Rows,
    size: usize,
}

impl Batcher<'_, '_> {
    /// Adds a row; hands the batch on when it is full.
    ///
    /// # Errors
    ///
    /// The receiver's: stop the query and return it.
    pub fn push(&mut self, row: Row) -> PluginResult<()> {
        self.batch.push(row);
        if self.batch.len() >= self.size {
            let full =
                std::mem::replace(&mut self.batch, Rows::with_capacity(self.size.min(10_000)));
            self.sink.rows(full)?;
        }
        Ok(())
    }

    /// Hands on what is left.
    ///
    /// # Errors
    ///
    /// The receiver's.
    pub fn finish(self) -> PluginResult<()> {
        if self.batch.is_empty() {
            Ok(())
        } else {
            self.sink.rows(self.batch)
        }
    }
}

/// The boundary form of a connection: what crosses between a plugin and the host. Authors
/// use [`Connection`] and implement [`DatabaseConnection`].
///
/// Methods added in later sdk versions go below the one marked `last_prefix_field`, so that
/// plugins built against an older sdk keep loading.
#[sabi_trait]
pub trait ConnectionFfi: Send {
    /// See [`Connection::dialect`].
    fn dialect(&self) -> Dialect;

    /// See [`Connection::execute_batch`].
    fn execute_batch(&mut self, sql: RStr<'_>) -> RResult<u64, PluginError>;

    /// See [`Connection::execute`].
    fn execute(&mut self, sql: RStr<'_>, params: RSlice<'_, Value>) -> RResult<u64, PluginError>;

    /// See [`Connection::query`].
    fn query(
        &mut self,
        sql: RStr<'_>,
        params: RSlice<'_, Value>,
        batch_rows: u32,
        sink: RowSinkFfi_TO<'_, RMut<'_, ()>>,
    ) -> RResult<u64, PluginError>;

    /// See [`Connection::insert_batch`].
    fn insert_batch(
        &mut self,
        schema: ROption<RStr<'_>>,
        table: RStr<'_>,
        columns: RSlice<'_, RString>,
        rows: RSlice<'_, Row>,
    ) -> RResult<u64, PluginError>;

    /// See [`Connection::describe`].
    fn describe(
        &mut self,
        schema: ROption<RStr<'_>>,
        table: RStr<'_>,
    ) -> RResult<TableInfo, PluginError>;

    /// See [`Connection::begin`].
    fn begin(&mut self) -> RResult<(), PluginError>;

    /// See [`Connection::commit`].
    fn commit(&mut self) -> RResult<(), PluginError>;

    /// See [`Connection::rollback`].
    fn rollback(&mut self) -> RResult<(), PluginError>;

    /// See [`Connection::interrupter`].
    #[sabi(last_prefix_field)]
    fn interrupter(&self) -> ROption<InterruptBox>;

    /// See [`Connection::local_file`]. Added in sdk 0.3.1 (after the prefix: a connection from
    /// a plugin built before answers `None`).
    fn local_file(&self) -> ROption<RString> {
        ROption::RNone
    }

    /// See [`Connection::attach_read_only`]. Added in sdk 0.3.1 (after the prefix: a
    /// connection from a plugin built before refuses).
    fn attach_read_only(&mut self, file: RStr<'_>) -> RResult<RString, PluginError> {
        RResult::RErr(cannot_attach(file.as_str()))
    }
}

/// An owned connection in its boundary form.
pub type ConnectionBox = ConnectionFfi_TO<'static, RBox<()>>;

/// The boundary form of a [`RowSink`].
#[sabi_trait]
pub trait RowSinkFfi {
    /// The result's column names, once, before any row.
    fn columns(&mut self, names: RSlice<'_, RString>) -> RResult<(), PluginError>;

    /// A batch of rows.
    #[sabi(last_prefix_field)]
    fn rows(&mut self, batch: RVec<Row>) -> RResult<(), PluginError>;
}

/// A sink of two closures; panics in them become errors.
struct FnSink<C, R> {
    on_columns: C,
    on_rows: R,
}

impl<C, R> RowSinkFfi for FnSink<C, R>
where
    C: FnMut(&[RString]) -> PluginResult<()>,
    R: FnMut(Rows) -> PluginResult<()>,
{
    fn columns(&mut self, names: RSlice<'_, RString>) -> RResult<(), PluginError> {
        catch(|| (self.on_columns)(names.as_slice()))
    }

    fn rows(&mut self, batch: RVec<Row>) -> RResult<(), PluginError> {
        catch(|| (self.on_rows)(batch))
    }
}

/// A [`DatabaseConnection`] in its boundary form, every call guarded against panics.
struct Adapter<T>(T);

impl<T: DatabaseConnection> ConnectionFfi for Adapter<T> {
    fn dialect(&self) -> Dialect {
        catch(|| Ok(self.0.dialect()))
            .into_result()
            .unwrap_or(Dialect::Unknown)
    }

    fn execute_batch(&mut self, sql: RStr<'_>) -> RResult<u64, PluginError> {
        catch(|| self.0.execute_batch(sql.as_str()))
    }

    fn execute(&mut self, sql: RStr<'_>, params: RSlice<'_, Value>) -> RResult<u64, PluginError> {
        catch(|| self.0.execute(sql.as_str(), params.as_slice()))
    }

    fn query(
        &mut self,
        sql: RStr<'_>,
        params: RSlice<'_, Value>,
        batch_rows: u32,
        sink: RowSinkFfi_TO<'_, RMut<'_, ()>>,
    ) -> RResult<u64, PluginError> {
        let mut target = sink;
        let mut sink = RowSink { inner: &mut target };
        catch(|| {
            self.0
                .query(sql.as_str(), params.as_slice(), batch_rows, &mut sink)
        })
    }

    fn insert_batch(
        &mut self,
        schema: ROption<RStr<'_>>,
        table: RStr<'_>,
        columns: RSlice<'_, RString>,
        rows: RSlice<'_, Row>,
    ) -> RResult<u64, PluginError> {
        let columns: Vec<&str> = columns.iter().map(RString::as_str).collect();
        catch(|| {
            self.0.insert_batch(
                schema.into_option().map(|s| s.as_str()),
                table.as_str(),
                &columns,
                rows.as_slice(),
            )
        })
    }

    fn describe(
        &mut self,
        schema: ROption<RStr<'_>>,
        table: RStr<'_>,
    ) -> RResult<TableInfo, PluginError> {
        catch(|| {
            self.0
                .describe(schema.into_option().map(|s| s.as_str()), table.as_str())
        })
    }

    fn begin(&mut self) -> RResult<(), PluginError> {
        catch(|| self.0.begin())
    }

    fn commit(&mut self) -> RResult<(), PluginError> {
        catch(|| self.0.commit())
    }

    fn rollback(&mut self) -> RResult<(), PluginError> {
        catch(|| self.0.rollback())
    }

    fn interrupter(&self) -> ROption<InterruptBox> {
        catch(|| Ok(self.0.interrupter().map(Interrupter::into_ffi)))
            .into_result()
            .ok()
            .flatten()
            .into()
    }

    fn local_file(&self) -> ROption<RString> {
        catch(|| Ok(self.0.local_file().map(RString::from)))
            .into_result()
            .ok()
            .flatten()
            .into()
    }

    fn attach_read_only(&mut self, file: RStr<'_>) -> RResult<RString, PluginError> {
        catch(|| self.0.attach_read_only(file.as_str()).map(RString::from))
    }
}
