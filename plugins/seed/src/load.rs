//! A seed loaded into its table, in the action's transaction: the digest of what the table
//! was loaded from looked at first (the same: nothing to do), the columns surveyed, the
//! table emptied or made again, the rows inserted in batches (binary `COPY` on PostgreSQL)
//! while the next batch is read on a second thread, and the new digest recorded.

use crate::infer::Kind;
use crate::options::Options;
use crate::read::{self, Mistake};
use sha2::{Digest, Sha256};
use weft_sdk::{
    Connection, Datum, Dialect, ObjectRef, PluginError, PluginResult, Row, RunContext, RunOutcome,
    Value,
};

/// Rows a batch.
const BATCH: usize = 10_000;

/// What marks a table as loaded from data of a digest.
const MARK: &str = "weft seed sha256:";

/// The digest of `data` as `opts` read it.
pub fn digest(opts: &Options, data: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"weft seed 1\0");
    h.update(opts.reading.as_bytes());
    h.update(b"\0");
    h.update(data.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

impl From<Mistake> for PluginError {
    fn from(m: Mistake) -> Self {
        PluginError::new(format!("line {}: {}", m.line, m.message))
    }
}

/// The table as it stands: whether it exists, and the digest it was loaded from.
struct Standing {
    exists: bool,
    digest: Option<String>,
}

fn first_text(rows: &[Row], column: usize) -> Option<String> {
    rows.first()
        .and_then(|r| r.get(column))
        .and_then(|v| match v.get() {
            Datum::Text(t) => Some(t.to_owned()),
            _ => None,
        })
}

/// Where the table stands, on the dialects that can carry a digest; `None` elsewhere.
fn standing(
    c: &mut Connection,
    dialect: Dialect,
    schema: Option<&str>,
    name: &str,
    qualified: &str,
) -> PluginResult<Option<Standing>> {
    let marked = |text: Option<String>| {
        text.and_then(|t| {
            let at = t.find(MARK)?;
            let hex: String = t[at + MARK.len()..]
                .chars()
                .take_while(char::is_ascii_hexdigit)
                .collect();
            Some(hex)
        })
    };
    match dialect {
        Dialect::Postgres => {
            let (_, rows) = c.query_all(
                "SELECT to_regclass(?) IS NOT NULL, obj_description(to_regclass(?), 'pg_class')",
                &[Value::text(qualified), Value::text(qualified)],
            )?;
            let exists = matches!(
                rows.first().and_then(|r| r.first()).map(Value::get),
                Some(Datum::Bool(true))
            );
            Ok(Some(Standing {
                exists,
                digest: marked(first_text(&rows, 1)),
            }))
        }
        Dialect::Sqlite => {
            let master = match schema {
                Some(s) => format!("{}.sqlite_master", weft_sql_support::quote(dialect, s)),
                None => "sqlite_master".to_owned(),
            };
            let (_, rows) = c.query_all(
                &format!(
                    "SELECT sql FROM {master} WHERE type = 'table' AND name = ? COLLATE NOCASE"
                ),
                &[Value::text(name)],
            )?;
            Ok(Some(Standing {
                exists: !rows.is_empty(),
                digest: marked(first_text(&rows, 0)),
            }))
        }
        _ => Ok(None),
    }
}

/// A column as the table declares it.
struct Column {
    name: String,
    /// The inferred kind; `None` where declared.
    kind: Option<Kind>,
    sql: String,
}

/// Loads `data` (read from `from`) into `target`, unless the table was loaded from the same.
///
/// # Errors
///
/// A mistake in the data (its line), or the database's error.
pub fn load(
    ctx: &mut RunContext,
    target: &ObjectRef,
    opts: &Options,
    data: &str,
    from: &str,
) -> PluginResult<RunOutcome> {
    let schema = target.schema().filter(|s| !s.is_empty()).map(str::to_owned);
    let name = target.name().to_owned();
    let digest = digest(opts, data);
    let (c, log) = ctx.connection_and_log(target.connection_id())?;
    let dialect = c.dialect();
    let qualified = weft_sql_support::qualified(dialect, schema.as_deref(), &name);
    let now = standing(c, dialect, schema.as_deref(), &name, &qualified)?;
    if let Some(s) = &now
        && s.exists
        && s.digest.as_deref() == Some(digest.as_str())
    {
        log.log(&format!(
            "{qualified} was loaded from the same data ({from}, sha256 {}); not loaded again.",
            &digest[..12]
        ));
        return Ok(RunOutcome::default());
    }
    let survey = read::survey(data, opts.format)
        .map_err(|m| PluginError::new(format!("{from}, line {}: {}", m.line, m.message)))?;
    let columns: Vec<Column> = survey
        .columns
        .iter()
        .zip(&survey.testers)
        .map(|(c, t)| match opts.declared_type(c) {
            Some(ty) => Column {
                name: c.clone(),
                kind: None,
                sql: ty.to_owned(),
            },
            None => Column {
                name: c.clone(),
                kind: Some(t.kind()),
                sql: t.kind().sql(dialect, t.longest),
            },
        })
        .collect();
    let list = columns
        .iter()
        .map(|col| {
            format!(
                "{} {}",
                weft_sql_support::quote(dialect, &col.name),
                col.sql
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    // Emptied where the columns stay (PostgreSQL: views on it stay too), else made again.
    let same_columns = now.as_ref().is_none_or(|s| s.exists)
        && dialect != Dialect::Sqlite
        && c.describe(schema.as_deref(), &name).is_ok_and(|info| {
            info.columns().len() == columns.len()
                && info.columns().iter().zip(&columns).all(|(have, want)| {
                    have.name().eq_ignore_ascii_case(&want.name)
                        && same_type(have.type_name(), &want.sql)
                })
        });
    let how = if same_columns {
        let empty = if dialect == Dialect::Postgres {
            format!("TRUNCATE TABLE {qualified}")
        } else {
            format!("DELETE FROM {qualified}")
        };
        c.execute_batch(&empty)?;
        "emptied and loaded again"
    } else {
        let existed = now.as_ref().is_none_or(|s| s.exists);
        let drop = match dialect {
            Dialect::Postgres => format!("DROP TABLE IF EXISTS {qualified} CASCADE"),
            Dialect::Sqlite => format!("DROP TABLE IF EXISTS {qualified}"),
            _ if existed => format!("DROP TABLE {qualified}"),
            _ => String::new(),
        };
        if !drop.is_empty() {
            // Elsewhere, a table that is not there answers an error, which is no matter.
            let dropped = c.execute_batch(&drop);
            if now.is_some() {
                dropped?;
            }
        }
        let create = if dialect == Dialect::Sqlite {
            format!("CREATE TABLE {qualified} (/* {MARK}{digest} */ {list})")
        } else {
            format!("CREATE TABLE {qualified} ({list})")
        };
        c.execute_batch(&create)?;
        if now.as_ref().is_some_and(|s| s.exists) || (now.is_none() && existed) {
            "made again (its columns changed) and loaded"
        } else {
            "made and loaded"
        }
    };
    let names: Vec<&str> = columns.iter().map(|col| col.name.as_str()).collect();
    let kinds: Vec<Option<Kind>> = columns.iter().map(|col| col.kind).collect();
    // The rows are read on a second thread while the first inserts the batch before.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Row>>(2);
    let mut written = 0u64;
    let inserted: PluginResult<()> = std::thread::scope(|scope| {
        let (kinds, read_columns) = (&kinds, &survey.columns);
        let reader = scope.spawn(move || {
            read::rows::<PluginError>(data, opts.format, read_columns, kinds, BATCH, |b| {
                // The inserting side stopped (an error): stop reading.
                tx.send(b).map_err(|_| PluginError::new("the load stopped"))
            })
        });
        let mut failed = None;
        for batch in rx.iter() {
            match c.insert_batch(schema.as_deref(), &name, &names, &batch) {
                Ok(_) => written += batch.len() as u64,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        // Dropped, so that a reader still sending stops.
        drop(rx);
        let read = reader
            .join()
            .map_err(|_| PluginError::new("the seed's reader panicked"))?;
        match failed {
            Some(e) => Err(e),
            None => read.map_err(|e| PluginError::new(format!("{from}: {e}"))),
        }
    });
    inserted?;
    if dialect == Dialect::Postgres {
        c.execute_batch(&format!(
            "COMMENT ON TABLE {qualified} IS '{MARK}{digest} ({})'",
            from.replace('\'', "''")
        ))?;
    }
    let described = columns
        .iter()
        .map(|col| format!("{} {}", col.name, col.sql))
        .collect::<Vec<_>>()
        .join(", ");
    log.log(&format!(
        "{qualified} {how}: {written} rows from {from} (sha256 {}); columns: {described}.",
        &digest[..12]
    ));
    Ok(RunOutcome {
        rows_read: written,
        rows_written: written,
        rows_updated: 0,
        rows_deleted: 0,
    })
}

/// Whether two type names are one type, as PostgreSQL names it (`format_type`): `int` is
/// `integer`, `varchar(20)` is `character varying(20)`, `numeric(10, 2)` is `numeric(10,2)`.
pub fn same_type(a: &str, b: &str) -> bool {
    fn normal(t: &str) -> String {
        let t = t.trim().to_ascii_lowercase();
        let (base, args) = match t.split_once('(') {
            Some((b, rest)) => (b.trim().to_owned(), format!("({}", rest.replace(' ', ""))),
            None => (t.clone(), String::new()),
        };
        let base = match base.as_str() {
            "int" | "int4" => "integer",
            "int8" => "bigint",
            "int2" => "smallint",
            "float8" | "double" => "double precision",
            "float4" => "real",
            "bool" => "boolean",
            "varchar" => "character varying",
            "char" | "bpchar" => "character",
            "decimal" => "numeric",
            "timestamp" => "timestamp without time zone",
            "timestamptz" => "timestamp with time zone",
            "time" => "time without time zone",
            "timetz" => "time with time zone",
            other => other,
        };
        format!("{base}{args}")
    }
    normal(a) == normal(b)
}

#[cfg(test)]
mod tests;
