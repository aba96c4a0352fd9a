//! The Connection interface the host gives to plugins, and the sink a query streams into.

use crate::error::PluginError;
use crate::halt::InterruptBox;
use crate::value::{Dialect, Row, TableInfo, Value};
use abi_stable::sabi_trait;
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::sabi_types::RMut;
use abi_stable::std_types::{RBox, ROption, RResult, RSlice, RStr, RString, RVec};

/// A connection to a database, opened by the host (native SQLite) or by a bridge plugin.
///
/// Methods added in later sdk versions go below the field marked `last_prefix_field`, so that
/// plugins built against an older sdk keep loading.
#[sabi_trait]
pub trait Connection: Send {
    /// The SQL dialect, which decides how statements are written and how SQL is validated.
    fn dialect(&self) -> Dialect;

    /// Runs one or several statements without parameters; returns the rows they changed.
    fn execute_batch(&mut self, sql: RStr<'_>) -> RResult<u64, PluginError>;

    /// Runs one statement with positional parameters (`?`); returns the rows it changed.
    fn execute(&mut self, sql: RStr<'_>, params: RSlice<'_, Value>) -> RResult<u64, PluginError>;

    /// Runs a query and hands the column names, then the rows in batches of at most
    /// `batch_rows`, to `sink`. Returns the number of rows read. An error from the sink stops
    /// the query and is returned.
    fn query(
        &mut self,
        sql: RStr<'_>,
        params: RSlice<'_, Value>,
        batch_rows: u32,
        sink: RowSink_TO<'_, RMut<'_, ()>>,
    ) -> RResult<u64, PluginError>;

    /// Inserts `rows` into `schema.table` (`columns` name the values of each row); returns the
    /// number of rows inserted.
    fn insert_batch(
        &mut self,
        schema: ROption<RStr<'_>>,
        table: RStr<'_>,
        columns: RSlice<'_, RString>,
        rows: RSlice<'_, Row>,
    ) -> RResult<u64, PluginError>;

    /// Columns, types and primary key of `schema.table`.
    fn describe(
        &mut self,
        schema: ROption<RStr<'_>>,
        table: RStr<'_>,
    ) -> RResult<TableInfo, PluginError>;

    /// Starts a transaction (nested calls nest, as savepoints).
    fn begin(&mut self) -> RResult<(), PluginError>;

    /// Commits the innermost transaction.
    fn commit(&mut self) -> RResult<(), PluginError>;

    /// Rolls the innermost transaction back.
    fn rollback(&mut self) -> RResult<(), PluginError>;

    /// What interrupts this connection's running statement from another thread, when a
    /// batch instance is halted; `RNone` (the default) for a connection that cannot be
    /// interrupted, whose statements then run to their end.
    #[sabi(last_prefix_field)]
    fn interrupter(&self) -> ROption<InterruptBox> {
        ROption::RNone
    }
}

/// An owned connection, as it crosses the boundary.
pub type ConnectionBox = Connection_TO<'static, RBox<()>>;

/// Where a query's rows go.
#[sabi_trait]
pub trait RowSink {
    /// The result's column names, once, before any row.
    fn columns(&mut self, names: RSlice<'_, RString>) -> RResult<(), PluginError>;

    /// A batch of rows.
    #[sabi(last_prefix_field)]
    fn rows(&mut self, batch: RVec<Row>) -> RResult<(), PluginError>;
}

/// A [`RowSink`] made of two closures; panics in them become errors.
pub struct FnSink<C, R> {
    on_columns: C,
    on_rows: R,
}

impl<C, R> FnSink<C, R>
where
    C: FnMut(&[RString]) -> Result<(), PluginError>,
    R: FnMut(RVec<Row>) -> Result<(), PluginError>,
{
    /// A sink calling `on_columns` once and `on_rows` for every batch.
    pub fn new(on_columns: C, on_rows: R) -> Self {
        FnSink {
            on_columns,
            on_rows,
        }
    }

    /// The sink as the trait object [`Connection::query`] takes.
    pub fn as_sink(&mut self) -> RowSink_TO<'_, RMut<'_, ()>> {
        RowSink_TO::from_ptr(RMut::new(self), TD_Opaque)
    }
}

impl<C, R> RowSink for FnSink<C, R>
where
    C: FnMut(&[RString]) -> Result<(), PluginError>,
    R: FnMut(RVec<Row>) -> Result<(), PluginError>,
{
    fn columns(&mut self, names: RSlice<'_, RString>) -> RResult<(), PluginError> {
        crate::error::catch(|| (self.on_columns)(names.as_slice()))
    }

    fn rows(&mut self, batch: RVec<Row>) -> RResult<(), PluginError> {
        crate::error::catch(|| (self.on_rows)(batch))
    }
}

/// Runs `sql` on `conn` and collects every row, with the column names. For small results.
///
/// # Errors
///
/// The connection's error.
pub fn query_all(
    conn: &mut ConnectionBox,
    sql: &str,
    params: &[Value],
) -> Result<(Vec<RString>, Vec<Row>), PluginError> {
    let mut columns = Vec::new();
    let mut rows = Vec::new();
    let mut sink = FnSink::new(
        |names: &[RString]| {
            columns = names.to_vec();
            Ok(())
        },
        |batch: RVec<Row>| {
            rows.extend(batch);
            Ok(())
        },
    );
    conn.query(sql.into(), params.into(), 1024, sink.as_sink())
        .into_result()?;
    Ok((columns, rows))
}
