//! The `Upsert` action module: update-else-insert of the query's rows into the target, by
//! key (attribute `keys`, comma-separated, else the target's primary key). Rows missing from
//! the source are not deleted.
//!
//! On one connection it is set-based SQL: `INSERT ... ON CONFLICT DO UPDATE` on PostgreSQL
//! (whose key columns need a unique constraint), and where the dialect has it and the key is
//! the primary key; `UPDATE` then `INSERT ... WHERE NOT EXISTS` elsewhere. When the source's connection differs from the target's, the rows are streamed
//! across and each is updated, else inserted.

// `export_plugin!` expands to abi_stable's export code, which is unsafe; this crate writes
// no unsafe code of its own.
#![allow(unsafe_code)]

use weft_sdk::{
    ActionModule, AttributeKind, AttributeSpec, AttributeValue, Connection, ModuleInfo,
    PluginError, PluginResult, Problem, RunContext, RunOutcome, ValidateInput, ValidateOutput,
    Value, export_plugin,
};
use weft_sql_support::{
    column_probe, count_of, describe_object, described_table, match_columns, quote,
};

/// The `Upsert` module.
#[derive(Debug, Default)]
pub struct Upsert;

fn keys_attribute(a: Option<&AttributeValue>) -> Vec<String> {
    a.and_then(AttributeValue::as_str)
        .map(|s| {
            weft_sql_support::names_with_offsets(s)
                .into_iter()
                .map(|(k, _)| k)
                .collect()
        })
        .unwrap_or_default()
}

fn scalar(conn: &mut Connection, sql: &str) -> PluginResult<u64> {
    let (_, rows) = conn.query_all(sql, &[])?;
    let first = rows.first().and_then(|r| r.first());
    count_of(first).ok_or_else(|| PluginError::new(format!("expected a count, got {first:?}")))
}

impl ActionModule for Upsert {
    fn info(&self) -> ModuleInfo {
        ModuleInfo::new("Upsert", "Updates the target's rows that match the query's by key and inserts the others; deletes nothing.")
            .targets(1, 1)
            .attribute(AttributeSpec::new("keys", AttributeKind::String, None, "key columns, comma-separated; default: the target's primary key"))
            .attribute(weft_sql_support::truncate_before_attribute())
            .with_attributes(weft_sql_support::sql_attributes())
    }

    fn validate(&self, input: &ValidateInput) -> ValidateOutput {
        // The query runs where the sources are; on the target's connection without sources.
        let dialect = input
            .sources()
            .first()
            .or_else(|| input.targets().first())
            .map_or(weft_sdk::Dialect::Unknown, |o| o.dialect());
        let mut out = weft_sql_support::check(input, dialect);
        if let Some(p) = weft_sql_support::sources_on_one_connection(input, "Upsert") {
            out.push(p);
        }
        let Some(keys) = input.attribute("keys").and_then(AttributeValue::as_str) else {
            return out;
        };
        if keys_attribute(input.attribute("keys")).is_empty() {
            out.push(
                Problem::error(
                    "module.attribute",
                    "`keys` names no column; write them comma-separated, e.g. `id, day`",
                    None,
                )
                .on_attribute("keys"),
            );
            return out;
        }
        // Each key must be a column the query returns, when the query names them all.
        let columns = input
            .action()
            .and_then(|sql| weft_sql_support::parse(sql, dialect).ok())
            .and_then(|statements| weft_sql_support::output_columns(&statements));
        if let Some(columns) = columns {
            for (key, offset) in weft_sql_support::names_with_offsets(keys) {
                if !columns.iter().any(|c| c.eq_ignore_ascii_case(&key)) {
                    out.push(
                        Problem::error(
                            "keys",
                            format!(
                                "key `{key}` is not a column of the query, which returns {}",
                                columns.join(", ")
                            ),
                            Some(offset as u32),
                        )
                        .on_attribute("keys"),
                    );
                }
            }
        }
        out
    }

    fn run(&self, ctx: &mut RunContext) -> PluginResult<RunOutcome> {
        let target = ctx
            .targets()
            .first()
            .cloned()
            .ok_or_else(|| PluginError::new("Upsert needs one target table"))?;
        let source_conn = ctx
            .sources()
            .first()
            .map_or(target.connection_id(), |s| s.connection_id());
        let query = ctx.action().trim().trim_end_matches(';').to_owned();
        let wanted_keys = keys_attribute(ctx.attribute("keys"));
        let (info, dialect) = {
            let conn = ctx.connection(target.connection_id())?;
            let info = describe_object(conn, &target)?;
            (info, conn.dialect())
        };
        let primary: Vec<String> = info.primary_key().iter().map(|s| (*s).to_owned()).collect();
        let keys = if wanted_keys.is_empty() {
            primary.clone()
        } else {
            wanted_keys
        };
        if keys.is_empty() {
            return Err(PluginError::new(format!(
                "Upsert into {} needs a key: the table has no primary key; give attribute `keys`",
                target.name()
            )));
        }
        let table = described_table(dialect, &info);
        // Emptied first, every row is new: the upsert then only inserts (a reload that keeps
        // the key checks and the ON CONFLICT path for a query returning a key twice).
        let removed = if ctx.flag("truncateBefore", false) {
            let (conn, log) = ctx.connection_and_log(target.connection_id())?;
            weft_sql_support::empty_before(conn, log, &table)?
        } else {
            0
        };
        let mut outcome = if source_conn == target.connection_id() {
            let conn = ctx.connection(target.connection_id())?;
            same_connection(conn, &table, &info, &keys, &primary, &query)?
        } else {
            let (src, dst) = ctx.two_connections(source_conn, target.connection_id())?;
            if dialect == weft_sdk::Dialect::Postgres {
                staged(src, dst, &table, &info, &keys, &primary, &query)?
            } else {
                across(src, dst, &table, &info, &keys, &query)?
            }
        };
        outcome.rows_deleted = removed;
        ctx.log(&format!(
            "Upsert into {table} by ({}): {} row(s) read, {} inserted, {} updated.",
            keys.join(", "),
            outcome.rows_read,
            outcome.rows_written,
            outcome.rows_updated
        ));
        Ok(outcome)
    }
}

fn key_check<'a>(keys: &'a [String], columns: &[String]) -> PluginResult<Vec<&'a str>> {
    keys.iter()
        .map(|k| {
            columns
                .iter()
                .find(|c| c.eq_ignore_ascii_case(k))
                .map(|_| k.as_str())
                .ok_or_else(|| {
                    PluginError::new(format!(
                        "key column `{k}` is not a column of the query (its columns: {})",
                        columns.join(", ")
                    ))
                })
        })
        .collect()
}

/// The error of an `ON CONFLICT` whose key columns have no unique constraint (SQLSTATE
/// 42P10), said so that the user knows what to add.
fn no_unique_key(e: &PluginError, table: &str, keys: &[&str]) -> Option<PluginError> {
    let m = e.message();
    (m.contains("42P10") || m.contains("no unique or exclusion constraint matching")).then(|| {
        PluginError::new(format!(
            "Upsert into {table} by ({keys}): the table has no primary key or unique constraint \
             on exactly ({keys}), which ON CONFLICT needs: add one (ALTER TABLE {table} ADD \
             UNIQUE ({keys})) or name the key columns it has in `keys`",
            keys = keys.join(", ")
        ))
    })
}

fn same_connection(
    conn: &mut Connection,
    table: &str,
    info: &weft_sdk::TableInfo,
    keys: &[String],
    primary: &[String],
    query: &str,
) -> PluginResult<RunOutcome> {
    let dialect = conn.dialect();
    let (names, _) = conn.query_all(&column_probe(dialect, query), &[])?;
    let columns = match_columns(&names, info)?;
    let keys = key_check(keys, &columns)?;
    let q = |c: &str| quote(dialect, c);
    let key_match = |a: &str, b: &str| {
        keys.iter()
            .map(|k| format!("{a}.{} = {b}.{}", q(k), q(k)))
            .collect::<Vec<_>>()
            .join(" AND ")
    };
    let total = scalar(conn, &format!("SELECT COUNT(*) FROM ({query}\n) AS weft_q"))?;

    let cols: Vec<String> = columns.iter().map(|c| q(c)).collect();
    let src_cols: Vec<String> = names
        .iter()
        .map(|c: &String| format!("weft_q.{}", q(c)))
        .collect();
    let non_keys: Vec<&String> = columns
        .iter()
        .filter(|c| !keys.iter().any(|k| k.eq_ignore_ascii_case(c)))
        .collect();
    let is_primary = keys.len() == primary.len()
        && keys
            .iter()
            .all(|k| primary.iter().any(|p| p.eq_ignore_ascii_case(k)));
    // PostgreSQL: ON CONFLICT on the key columns always (the server needs a primary key or
    // unique constraint on exactly them); elsewhere only on the primary key.
    let postgres = dialect == weft_sdk::Dialect::Postgres;
    if dialect.has_on_conflict() && (is_primary || postgres) {
        let action = if non_keys.is_empty() {
            "DO NOTHING".to_owned()
        } else {
            format!(
                "DO UPDATE SET {}",
                non_keys
                    .iter()
                    .map(|c| format!("{} = excluded.{}", q(c), q(c)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let key_cols: Vec<String> = keys.iter().map(|k| q(k)).collect();
        // `WHERE true` keeps SQLite from reading ON CONFLICT as part of a join.
        let sql = format!(
            "INSERT INTO {table} ({}) SELECT {} FROM ({query}\n) AS weft_q WHERE true ON CONFLICT ({}) {action}",
            cols.join(", "),
            src_cols.join(", "),
            key_cols.join(", ")
        );
        if postgres {
            // A row the statement inserted has no deleting transaction (xmax 0); an updated
            // one has: counted from what it returns, not by counting the table twice.
            let counted = format!(
                "WITH weft_w AS ({sql} RETURNING (xmax = 0) AS weft_inserted)
                 SELECT count(*) FILTER (WHERE weft_inserted), count(*) FILTER (WHERE NOT weft_inserted) FROM weft_w"
            );
            let (_, rows) = conn
                .query_all(&counted, &[])
                .map_err(|e| no_unique_key(&e, table, &keys).unwrap_or(e))?;
            let row = rows.first();
            let count = |i: usize| count_of(row.and_then(|r| r.get(i))).unwrap_or(0);
            return Ok(RunOutcome {
                rows_read: total,
                rows_written: count(0),
                rows_updated: count(1),
                rows_deleted: 0,
            });
        }
        // Upsert deletes nothing: what the table gained was inserted; the rest of the rows
        // the statement changed were updated.
        let before = scalar(conn, &format!("SELECT COUNT(*) FROM {table}"))?;
        let changed = conn.execute(&sql, &[])?;
        let inserted =
            scalar(conn, &format!("SELECT COUNT(*) FROM {table}"))?.saturating_sub(before);
        return Ok(RunOutcome {
            rows_read: total,
            rows_written: inserted,
            rows_updated: changed.saturating_sub(inserted),
            rows_deleted: 0,
        });
    }
    let mut updated = 0;
    {
        // Elsewhere: update the rows whose key exists, then insert the others.
        if !non_keys.is_empty() {
            let sets: Vec<String> = non_keys
                .iter()
                .map(|c| {
                    let src = names
                        .iter()
                        .find(|n| n.eq_ignore_ascii_case(c))
                        .map_or(c.to_string(), |n| n.to_string());
                    format!(
                        "{} = (SELECT weft_q.{} FROM ({query}\n) AS weft_q WHERE {})",
                        q(c),
                        q(&src),
                        key_match("weft_q", table)
                    )
                })
                .collect();
            let sql = format!(
                "UPDATE {table} SET {} WHERE EXISTS (SELECT 1 FROM ({query}\n) AS weft_q WHERE {})",
                sets.join(", "),
                key_match("weft_q", table)
            );
            updated = conn.execute(&sql, &[])?;
        }
        let sql = format!(
            "INSERT INTO {table} ({}) SELECT {} FROM ({query}\n) AS weft_q WHERE NOT EXISTS (SELECT 1 FROM {table} AS weft_t WHERE {})",
            cols.join(", "),
            src_cols.join(", "),
            key_match("weft_t", "weft_q")
        );
        let inserted = conn.execute(&sql, &[])?;
        Ok(RunOutcome {
            rows_read: total,
            rows_written: inserted,
            rows_updated: updated,
            rows_deleted: 0,
        })
    }
}

/// Across connections into PostgreSQL: the source's rows are loaded into a temporary table on
/// the target's connection (a COPY, through `insert_batch`), which then upserts them into the
/// target on that one connection: one `INSERT ... ON CONFLICT` for all rows, as on one
/// connection, instead of two statements a row. The temporary table has the matched columns
/// of the target, with their types, and lives in the action's transaction.
fn staged(
    src: &mut Connection,
    dst: &mut Connection,
    table: &str,
    info: &weft_sdk::TableInfo,
    keys: &[String],
    primary: &[String],
    query: &str,
) -> PluginResult<RunOutcome> {
    let dialect = dst.dialect();
    let q = |c: &str| quote(dialect, c);
    let stage = "weft_upsert_stage";
    let columns: std::cell::RefCell<Vec<String>> = std::cell::RefCell::new(Vec::new());
    dst.execute_batch(&format!("DROP TABLE IF EXISTS pg_temp.{stage}"))?;
    // Both of the query's callbacks write to the target's connection, one after the other.
    let target = std::cell::RefCell::new(&mut *dst);
    src.query(
        query,
        &[],
        10_000,
        |names| {
            let matched = match_columns(names, info)?;
            key_check(keys, &matched)?;
            let cols: Vec<String> = matched.iter().map(|c| q(c)).collect();
            target.borrow_mut().execute_batch(&format!(
                "CREATE TEMPORARY TABLE {stage} ON COMMIT DROP AS SELECT {} FROM {table} LIMIT 0",
                cols.join(", ")
            ))?;
            *columns.borrow_mut() = matched;
            Ok(())
        },
        |batch| {
            let cols = columns.borrow();
            let names: Vec<&str> = cols.iter().map(String::as_str).collect();
            target
                .borrow_mut()
                .insert_batch(None, stage, &names, &batch)?;
            Ok(())
        },
    )?;
    let cols = columns.into_inner();
    if cols.is_empty() {
        // No rows and no columns came (the query returned nothing at all).
        return Ok(RunOutcome::default());
    }
    let select = format!(
        "SELECT {} FROM {stage}",
        cols.iter().map(|c| q(c)).collect::<Vec<_>>().join(", ")
    );
    let outcome = same_connection(dst, table, info, keys, primary, &select)?;
    dst.execute_batch(&format!("DROP TABLE {stage}"))?;
    Ok(outcome)
}

/// The statements of a row-by-row upsert across connections.
struct Plan {
    update: String,
    insert: String,
    exists: String,
    key_idx: Vec<usize>,
    other_idx: Vec<usize>,
}

fn across(
    src: &mut Connection,
    dst: &mut Connection,
    table: &str,
    info: &weft_sdk::TableInfo,
    keys: &[String],
    query: &str,
) -> PluginResult<RunOutcome> {
    let dialect = dst.dialect();
    let q = |c: &str| quote(dialect, c);
    let mut outcome = RunOutcome::default();
    let plan: std::cell::RefCell<Option<Plan>> = std::cell::RefCell::new(None);
    src.query(
        query,
        &[],
        1000,
        |names| {
            let columns = match_columns(names, info)?;
            let keys = key_check(keys, &columns)?;
            let key_idx: Vec<usize> = keys
                .iter()
                .filter_map(|k| columns.iter().position(|c| c.eq_ignore_ascii_case(k)))
                .collect();
            let other_idx: Vec<usize> = (0..columns.len())
                .filter(|i| !key_idx.contains(i))
                .collect();
            let where_keys = key_idx
                .iter()
                .map(|&i| format!("{} = ?", q(&columns[i])))
                .collect::<Vec<_>>()
                .join(" AND ");
            *plan.borrow_mut() = Some(Plan {
                update: format!(
                    "UPDATE {table} SET {} WHERE {where_keys}",
                    other_idx
                        .iter()
                        .map(|&i| format!("{} = ?", q(&columns[i])))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                insert: format!(
                    "INSERT INTO {table} ({}) VALUES ({})",
                    columns.iter().map(|c| q(c)).collect::<Vec<_>>().join(", "),
                    vec!["?"; columns.len()].join(", ")
                ),
                exists: format!("SELECT COUNT(*) FROM {table} WHERE {where_keys}"),
                key_idx,
                other_idx,
            });
            Ok(())
        },
        |batch| {
            let plan = plan.borrow();
            let Some(p) = plan.as_ref() else {
                return Err(PluginError::new("rows came before their columns"));
            };
            for row in batch {
                outcome.rows_read += 1;
                let key_params: Vec<Value> = p.key_idx.iter().map(|&i| row[i].clone()).collect();
                let exists = if p.other_idx.is_empty() {
                    // Only key columns: nothing to update; insert when absent.
                    let (_, rows) = dst.query_all(&p.exists, &key_params)?;
                    count_of(rows.first().and_then(|r| r.first())).is_some_and(|n| n > 0)
                } else {
                    let params: Vec<Value> = p
                        .other_idx
                        .iter()
                        .map(|&i| row[i].clone())
                        .chain(key_params)
                        .collect();
                    dst.execute(&p.update, &params)? > 0
                };
                if exists {
                    outcome.rows_updated += u64::from(!p.other_idx.is_empty());
                } else {
                    outcome.rows_written += dst.execute(&p.insert, &row)?;
                }
            }
            Ok(())
        },
    )?;
    Ok(outcome)
}

export_plugin! {
    modules: [Upsert],
    object_types: [],
    bridges: [],
}
