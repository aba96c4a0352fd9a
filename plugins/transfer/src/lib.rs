//! The `Transfer` action module: the action's query runs on the sources' connection and its
//! rows are streamed, in batches, into the target table on another connection. The query's
//! column names (use aliases) are matched to the target's columns, ignoring case. Several
//! sources (on one connection), one target. Between two SQLite files on this host the rows
//! do not cross the host: the source's file is attached to the target connection and one
//! `INSERT ... SELECT` copies them (`copy_by_attach`).

// `export_plugin!` expands to abi_stable's export code, which is unsafe; this crate writes
// no unsafe code of its own.
#![allow(unsafe_code)]

use weft_sdk::{
    ActionModule, AttributeKind, AttributeSpec, AttributeValue, Dialect, ModuleInfo, ObjectRef,
    PluginError, PluginResult, Problem, Rows, RunContext, RunOutcome, ValidateInput,
    ValidateOutput, Value, export_plugin,
};
use weft_sql_support::{
    column_probe, describe_object, described_table, match_columns, quote, schema_of,
};

/// The `Transfer` module.
#[derive(Debug, Default)]
pub struct Transfer;

/// The largest `batchRows`.
pub const MAX_BATCH_ROWS: i64 = 1_000_000;

/// Rows per batch unless the attribute `batchRows` says otherwise.
pub const DEFAULT_BATCH_ROWS: i64 = 10_000;

impl ActionModule for Transfer {
    fn info(&self) -> ModuleInfo {
        ModuleInfo::new("Transfer", "Streams the rows of a query on the sources' connection into the target table on another connection.")
            .sources(1, u32::MAX)
            .targets(1, 1)
            .attribute(AttributeSpec::new("batchRows", AttributeKind::Integer, Some("10000"), "rows per batch"))
            .attribute(weft_sql_support::truncate_before_attribute())
            .with_attributes(weft_sql_support::sql_attributes())
    }

    fn validate(&self, input: &ValidateInput) -> ValidateOutput {
        let dialect = input
            .sources()
            .first()
            .map_or(weft_sdk::Dialect::Unknown, |s| s.dialect());
        let mut out = weft_sql_support::check(input, dialect);
        if let Some(p) = weft_sql_support::sources_on_one_connection(input, "Transfer") {
            out.push(p);
        }
        if let Some(n) = input
            .attribute("batchRows")
            .and_then(AttributeValue::as_integer)
            && !(1..=MAX_BATCH_ROWS).contains(&n)
        {
            out.push(
                Problem::error(
                    "module.attribute",
                    format!("`batchRows` must be from 1 to {MAX_BATCH_ROWS}, found {n}"),
                    None,
                )
                .on_attribute("batchRows"),
            );
        }
        out
    }

    fn run(&self, ctx: &mut RunContext) -> PluginResult<RunOutcome> {
        let target = ctx
            .targets()
            .first()
            .cloned()
            .ok_or_else(|| PluginError::new("Transfer needs one target table"))?;
        let source = ctx
            .sources()
            .first()
            .cloned()
            .ok_or_else(|| PluginError::new("Transfer needs at least one source"))?;
        let batch_rows = match ctx
            .attribute("batchRows")
            .and_then(AttributeValue::as_integer)
        {
            Some(n) if n > 0 => {
                u32::try_from(n.min(MAX_BATCH_ROWS)).unwrap_or(DEFAULT_BATCH_ROWS as u32)
            }
            _ => DEFAULT_BATCH_ROWS as u32,
        };
        let query = ctx.action().trim().trim_end_matches(';').to_owned();
        let removed = if ctx.flag("truncateBefore", false) {
            let (conn, log) = ctx.connection_and_log(target.connection_id())?;
            let info = describe_object(conn, &target)?;
            weft_sql_support::empty_before(conn, log, &described_table(conn.dialect(), &info))?
        } else {
            0
        };
        let mut outcome = if source.connection_id() == target.connection_id() {
            // One connection: the database copies the rows itself.
            let conn = ctx.connection(target.connection_id())?;
            let dialect = conn.dialect();
            let info = describe_object(conn, &target)?;
            let (names, _) = conn.query_all(&column_probe(dialect, &query), &[])?;
            let columns = match_columns(&names, &info)?;
            let sql = insert_select(dialect, &info, &columns, &names, &query);
            let n = conn.execute(&sql, &[])?;
            RunOutcome {
                rows_read: n,
                rows_written: n,
                rows_updated: 0,
                rows_deleted: 0,
            }
        } else if let Some(outcome) = copy_by_attach(ctx, &source, &target, &query)? {
            outcome
        } else {
            let (src, dst) = ctx.two_connections(source.connection_id(), target.connection_id())?;
            let info = describe_object(dst, &target)?;
            let schema = schema_of(&target).map(str::to_owned);
            let table = target.name().to_owned();
            // Reading and writing overlap: the query streams batches into a queue of four, and
            // a second thread inserts them on the target connection.
            let (tx, rx) = std::sync::mpsc::sync_channel::<(Vec<String>, Rows)>(4);
            std::thread::scope(|scope| {
                let writer = scope.spawn(move || -> PluginResult<u64> {
                    let mut written = 0u64;
                    for (columns, batch) in rx {
                        written += dst.insert_batch(schema.as_deref(), &table, &columns, &batch)?;
                    }
                    Ok(written)
                });
                // Both closures see the columns: the first sets them, the second sends them.
                let columns: std::cell::RefCell<Vec<String>> = std::cell::RefCell::new(Vec::new());
                let read = src.query(
                    &query,
                    &[],
                    batch_rows,
                    |names| {
                        *columns.borrow_mut() = match_columns(names, &info)?;
                        Ok(())
                    },
                    |batch| {
                        if batch.is_empty() {
                            return Ok(());
                        }
                        // A closed queue means the writer failed; its error is reported below.
                        tx.send((columns.borrow().clone(), batch))
                            .map_err(|_| PluginError::new("the target stopped taking rows"))
                    },
                );
                drop(tx);
                let written = writer.join().map_err(|p| {
                    PluginError::new(format!(
                        "the writer panicked: {}",
                        weft_sdk::panic_message(p.as_ref())
                    ))
                })?;
                match (read, written) {
                    (_, Err(e)) => Err(e),
                    (Err(e), Ok(_)) => Err(e),
                    (Ok(read), Ok(written)) => Ok((read, written)),
                }
            })
            .map(|(read, written)| RunOutcome {
                rows_read: read,
                rows_written: written,
                rows_updated: 0,
                rows_deleted: 0,
            })?
        };
        outcome.rows_deleted = removed;
        ctx.log(&format!(
            "Transferred {} row(s) from connection {} into {} on connection {}.",
            outcome.rows_written,
            source.connection_id(),
            target.name(),
            target.connection_id()
        ));
        Ok(outcome)
    }
}

/// Between two SQLite files on this host: the source's file attached (read only) to the
/// target connection, inside the action's transaction, and the rows copied with one
/// `INSERT ... SELECT`, the query's tables moved into the attached schema. `None` (and nothing
/// written) where that cannot be done with certainty: another dialect, a source that is no
/// file, a query [`weft_sql_support::requalify`] refuses, a CTE named like one of the target's
/// tables, or a query the attached file cannot answer (a missing table, a `temp` one); the rows
/// are then streamed.
fn copy_by_attach(
    ctx: &mut RunContext,
    source: &ObjectRef,
    target: &ObjectRef,
    query: &str,
) -> PluginResult<Option<RunOutcome>> {
    let file = {
        let src = ctx.connection(source.connection_id())?;
        if src.dialect() != Dialect::Sqlite {
            return Ok(None);
        }
        match src.local_file() {
            Some(file) => file,
            None => return Ok(None),
        }
    };
    let dst = ctx.connection(target.connection_id())?;
    if dst.dialect() != Dialect::Sqlite {
        return Ok(None);
    }
    let Some(moved) = weft_sql_support::requalify(query) else {
        return Ok(None);
    };
    for cte in moved.ctes() {
        let (_, rows) = dst.query_all(
            "SELECT 1 FROM main.sqlite_master WHERE name = ?1 COLLATE NOCASE \
             UNION ALL SELECT 1 FROM temp.sqlite_master WHERE name = ?1 COLLATE NOCASE",
            &[Value::text(cte)],
        )?;
        if !rows.is_empty() {
            return Ok(None);
        }
    }
    let Ok(schema) = dst.attach_read_only(&file) else {
        return Ok(None);
    };
    let query = moved.render(&schema);
    let info = describe_object(dst, target)?;
    // A query the attached file cannot answer fails here, before anything is written.
    let Ok((names, _)) = dst.query_all(&column_probe(Dialect::Sqlite, &query), &[]) else {
        return Ok(None);
    };
    let columns = match_columns(&names, &info)?;
    let sql = insert_select(Dialect::Sqlite, &info, &columns, &names, &query);
    let n = dst.execute(&sql, &[])?;
    ctx.log("Copied inside SQLite: the source's file attached to the target connection.");
    Ok(Some(RunOutcome {
        rows_read: n,
        rows_written: n,
        rows_updated: 0,
        rows_deleted: 0,
    }))
}

/// `INSERT INTO target (columns) SELECT names FROM (query) AS weft_q`: the rows copied by
/// the database itself, the query's columns `names` into the target's `columns`.
fn insert_select(
    dialect: Dialect,
    target: &weft_sdk::TableInfo,
    columns: &[String],
    names: &[String],
    query: &str,
) -> String {
    let list = |items: &[String], prefix: &str| {
        items
            .iter()
            .map(|c| format!("{prefix}{}", quote(dialect, c)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "INSERT INTO {} ({}) SELECT {} FROM ({query}\n) AS weft_q",
        described_table(dialect, target),
        list(columns, ""),
        list(names, "weft_q.")
    )
}

export_plugin! {
    modules: [Transfer],
    object_types: [],
    bridges: [],
}
