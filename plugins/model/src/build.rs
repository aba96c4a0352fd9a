//! A model built in its dialect: what stands under the table's name looked at first (a
//! table, a view, nothing), then the statements of its materialization, all in the
//! action's transaction.

use crate::{Materialize, Options};
use weft_sdk::{
    Connection, Datum, Dialect, ObjectRef, PluginResult, RunContext, RunOutcome, Value,
};
use weft_sql_support::{qualified, quote};

/// What stands under a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standing {
    Nothing,
    Table,
    View,
}

fn standing(
    c: &mut Connection,
    dialect: Dialect,
    schema: Option<&str>,
    name: &str,
) -> PluginResult<Standing> {
    let kind = match dialect {
        Dialect::Postgres => {
            let (_, rows) = c.query_all(
                "SELECT c.relkind::text FROM pg_class c WHERE c.oid = to_regclass(?)",
                &[Value::text(qualified(dialect, schema, name))],
            )?;
            first_text(&rows)
        }
        Dialect::Sqlite => {
            let master = match schema {
                Some(s) => format!("{}.sqlite_master", quote(dialect, s)),
                None => "sqlite_master".to_owned(),
            };
            let (_, rows) = c.query_all(
                &format!("SELECT type FROM {master} WHERE name = ? COLLATE NOCASE AND type IN ('table', 'view')"),
                &[Value::text(name)],
            )?;
            first_text(&rows)
        }
        // Elsewhere: a table when it can be described.
        _ => c.describe(schema, name).ok().map(|_| "table".to_owned()),
    };
    Ok(match kind.as_deref() {
        None => Standing::Nothing,
        Some("v" | "view" | "m") => Standing::View,
        Some(_) => Standing::Table,
    })
}

fn first_text(rows: &[weft_sdk::Row]) -> Option<String> {
    rows.first()
        .and_then(|r| r.first())
        .and_then(|v| match v.get() {
            Datum::Text(t) => Some(t.to_owned()),
            _ => None,
        })
}

/// `DROP TABLE` or `DROP VIEW` of what stands, with what depends on it on PostgreSQL.
fn drop(dialect: Dialect, what: Standing, name: &str) -> Option<String> {
    let cascade = if dialect == Dialect::Postgres {
        " CASCADE"
    } else {
        ""
    };
    match what {
        Standing::Nothing => None,
        Standing::Table => Some(format!("DROP TABLE {name}{cascade}")),
        Standing::View => Some(format!("DROP VIEW {name}{cascade}")),
    }
}

/// How many rows a table holds.
fn count(c: &mut Connection, table: &str) -> PluginResult<u64> {
    let (_, rows) = c.query_all(&format!("SELECT COUNT(*) FROM {table}"), &[])?;
    Ok(weft_sql_support::count_of(rows.first().and_then(|r| r.first())).unwrap_or(0))
}

/// Builds `query` into `target` as `opts` say.
///
/// # Errors
///
/// The database's error; the host rolls the action's transaction back.
pub fn build(
    ctx: &mut RunContext,
    target: &ObjectRef,
    opts: &Options,
    query: &str,
) -> PluginResult<RunOutcome> {
    let schema = target.schema().filter(|s| !s.is_empty()).map(str::to_owned);
    let name = target.name().to_owned();
    let (c, log) = ctx.connection_and_log(target.connection_id())?;
    let dialect = c.dialect();
    let table = qualified(dialect, schema.as_deref(), &name);
    let now = standing(c, dialect, schema.as_deref(), &name)?;
    let temp_name = temp_name_of(&name);
    let temp = qualified(dialect, schema.as_deref(), &temp_name);
    // A leftover of a build that was killed between its statements cannot stand in the way
    // (the transaction was rolled back, but a database without transactional DDL keeps it).
    let clear_temp = |c: &mut Connection| -> PluginResult<()> {
        if let Some(d) = drop(
            dialect,
            standing(c, dialect, schema.as_deref(), &temp_name)?,
            &temp,
        ) {
            c.execute_batch(&d)?;
        }
        Ok(())
    };
    let incremental = opts.materialize == Materialize::Incremental && now == Standing::Table;
    let rows = match opts.materialize {
        Materialize::View => {
            if let Some(d) = drop(dialect, now, &table) {
                c.execute_batch(&d)?;
            }
            c.execute_batch(&format!("CREATE VIEW {table} AS\n{query}\n"))?;
            log.log(&format!("{table}: view made again."));
            0
        }
        Materialize::Table | Materialize::Incremental if !incremental => {
            clear_temp(c)?;
            c.execute_batch(&format!("CREATE TABLE {temp} AS\n{query}\n"))?;
            let rows = count(c, &temp)?;
            if let Some(d) = drop(dialect, now, &table) {
                c.execute_batch(&d)?;
            }
            rename(c, dialect, &temp, &name)?;
            log.log(&format!(
                "{table}: built under a temporary name and swapped in ({rows} rows{}).",
                if opts.materialize == Materialize::Incremental {
                    "; the first build of an incremental model"
                } else {
                    ""
                }
            ));
            rows
        }
        _ => {
            clear_temp(c)?;
            let kept = match &opts.filter {
                Some(f) => format!(
                    "SELECT * FROM (\n{query}\n) weft_q WHERE {}",
                    f.replace("{{this}}", &table).replace("{{ this }}", &table)
                ),
                None => query.to_owned(),
            };
            c.execute_batch(&format!("CREATE TABLE {temp} AS\n{kept}\n"))?;
            let columns: Vec<String> = c
                .describe(schema.as_deref(), &temp_name)?
                .columns()
                .iter()
                .map(|col| quote(dialect, col.name()))
                .collect();
            let list = columns.join(", ");
            let mut replaced = 0;
            if !opts.unique_key.is_empty() {
                let keys: Vec<String> = opts.unique_key.iter().map(|k| quote(dialect, k)).collect();
                let matches = keys
                    .iter()
                    .map(|k| format!("n.{k} = {table}.{k}"))
                    .collect::<Vec<_>>()
                    .join(" AND ");
                replaced = c.execute(
                    &format!(
                        "DELETE FROM {table} WHERE EXISTS (SELECT 1 FROM {temp} n WHERE {matches})"
                    ),
                    &[],
                )?;
            }
            let added = c.execute(
                &format!("INSERT INTO {table} ({list}) SELECT {list} FROM {temp}"),
                &[],
            )?;
            c.execute_batch(&format!("DROP TABLE {temp}"))?;
            log.log(&format!(
                "{table}: {added} rows put in incrementally ({replaced} replaced by key)."
            ));
            added
        }
    };
    Ok(RunOutcome {
        rows_read: 0,
        rows_written: rows,
        rows_updated: 0,
        rows_deleted: 0,
    })
}

/// The temporary name a table is built under: `name__weft_new`, or, where that would pass
/// the 63 bytes PostgreSQL keeps of a name (and be cut back to the name itself), one made
/// from the name.
pub fn temp_name_of(name: &str) -> String {
    let plain = format!("{name}__weft_new");
    if plain.len() <= 63 {
        return plain;
    }
    // FNV-1a: the same in every build, so that a leftover is found again.
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("weft_new_{hash:016x}")
}

/// Renames table `from` (qualified) to `to` (a bare name, in the same schema).
fn rename(c: &mut Connection, dialect: Dialect, from: &str, to: &str) -> PluginResult<()> {
    let to = quote(dialect, to);
    match dialect {
        // SQLite checks every view of the schema at a rename; views on the table being
        // replaced name a table that is gone for the moment. The legacy rename does not.
        Dialect::Sqlite => {
            c.execute_batch("PRAGMA legacy_alter_table = ON")?;
            let renamed = c.execute_batch(&format!("ALTER TABLE {from} RENAME TO {to}"));
            c.execute_batch("PRAGMA legacy_alter_table = OFF")?;
            renamed.map(|_| ())
        }
        Dialect::MsSql => c
            .execute_batch(&format!(
                "EXEC sp_rename '{}', '{}'",
                from.replace('\'', "''"),
                to.trim_matches(['[', ']'])
                    .replace("]]", "]")
                    .replace('\'', "''")
            ))
            .map(|_| ()),
        _ => c
            .execute_batch(&format!("ALTER TABLE {from} RENAME TO {to}"))
            .map(|_| ()),
    }
}
