//! One PostgreSQL connection, taken from the bridge's pool, as weft's
//! [`DatabaseConnection`]: statements with `?` parameters (numbered for PostgreSQL), queries
//! streamed in batches, multi-row inserts, `describe` from the catalog, transactions as
//! `BEGIN`/savepoints, and a halt that sends the server a cancel request.

use crate::placeholders::numbered;
use crate::values::{Param, Raw, decode};
use postgres::fallible_iterator::FallibleIterator;
use postgres::{CancelToken, SimpleQueryMessage};
use tokio_postgres_rustls::MakeRustlsConnect;
use weft_sdk::{
    ColumnInfo, DatabaseConnection, Dialect, ErrorKind, Interrupter, PluginError, PluginResult,
    Row, RowSink, TableInfo, Value,
};

/// Parameters a statement may bind (PostgreSQL's limit is 65,535).
const MAX_PARAMETERS: usize = 60_000;

/// A connection as an action uses it.
pub struct PgConnection {
    pub(crate) client: Option<postgres::Client>,
    /// Where it goes back when the action is done.
    pub(crate) pool: crate::pool::Slot,
    /// The connection's key, for messages.
    pub(crate) key: String,
    /// How a cancel request reaches the server.
    pub(crate) tls: MakeRustlsConnect,
    depth: u32,
}

impl PgConnection {
    /// A connection of entry `key`, which goes back to `pool` when dropped.
    pub fn new(
        client: postgres::Client,
        pool: crate::pool::Slot,
        key: &str,
        tls: MakeRustlsConnect,
    ) -> Self {
        PgConnection {
            client: Some(client),
            pool,
            key: key.to_owned(),
            tls,
            depth: 0,
        }
    }

    fn c(&mut self) -> &mut postgres::Client {
        // `client` is only taken by `drop`.
        self.client
            .as_mut()
            .expect("a PostgreSQL connection is present until it is dropped")
    }

    fn fail(&self, e: &postgres::Error, sql: &str) -> PluginError {
        let shown: String = sql.chars().take(300).collect();
        let kind = match e.code() {
            Some(c) if *c == postgres::error::SqlState::QUERY_CANCELED => ErrorKind::Halted,
            _ if e.is_closed() => ErrorKind::Connection,
            _ => ErrorKind::Failed,
        };
        PluginError::of(
            kind,
            format!(
                "PostgreSQL (connection {}): {}; in `{shown}`",
                self.key,
                crate::describe_error(e)
            ),
        )
    }
}

impl Drop for PgConnection {
    fn drop(&mut self) {
        let Some(mut client) = self.client.take() else {
            return;
        };
        // A connection goes back to the pool outside any transaction.
        if self.depth > 0 && client.batch_execute("ROLLBACK").is_err() {
            return;
        }
        crate::pool::give_back(std::mem::take(&mut self.pool), client);
    }
}

/// The parameter (`$n`, from 1) a server error is about, from its context ("unnamed portal
/// parameter $3 = '...'").
fn parameter_of(e: &postgres::Error) -> Option<usize> {
    let context = e.as_db_error()?.where_()?;
    let at = context.find("parameter $")? + "parameter $".len();
    let digits: String = context[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok().filter(|n| *n > 0)
}

fn params(values: &[Value]) -> Vec<Param<'_>> {
    values.iter().map(Param).collect()
}

impl DatabaseConnection for PgConnection {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute_batch(&mut self, sql: &str) -> PluginResult<u64> {
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
        let text = if values.is_empty() {
            sql.to_owned()
        } else {
            numbered(sql)
        };
        let ps = params(values);
        let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = ps
            .iter()
            .map(|p| p as &(dyn postgres::types::ToSql + Sync))
            .collect();
        self.c()
            .execute(text.as_str(), &refs)
            .map_err(|e| self.fail(&e, sql))
    }

    fn query(
        &mut self,
        sql: &str,
        values: &[Value],
        batch_rows: u32,
        sink: &mut RowSink<'_>,
    ) -> PluginResult<u64> {
        let text = if values.is_empty() {
            sql.to_owned()
        } else {
            numbered(sql)
        };
        let key = self.key.clone();
        let statement = self.c().prepare(&text).map_err(|e| self.fail(&e, sql))?;
        let columns: Vec<(String, postgres::types::Type)> = statement
            .columns()
            .iter()
            .map(|c| (c.name().to_owned(), c.type_().clone()))
            .collect();
        let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
        sink.columns(&names)?;
        let ps = params(values);
        let mut rows = self.c().query_raw(&statement, ps.iter()).map_err(|e| {
            PluginError::new(format!(
                "PostgreSQL (connection {key}): {}",
                crate::describe_error(&e)
            ))
        })?;
        let mut batch = sink.batched(batch_rows);
        let mut count = 0u64;
        loop {
            let next = rows.next().map_err(|e| {
                let kind = match e.code() {
                    Some(c) if *c == postgres::error::SqlState::QUERY_CANCELED => ErrorKind::Halted,
                    _ => ErrorKind::Failed,
                };
                PluginError::of(
                    kind,
                    format!(
                        "PostgreSQL (connection {key}): {}",
                        crate::describe_error(&e)
                    ),
                )
            })?;
            let Some(row) = next else { break };
            count += 1;
            let mut r = Row::with_capacity(columns.len());
            for (i, (name, ty)) in columns.iter().enumerate() {
                let raw: Option<Raw<'_>> = row.try_get(i).map_err(|e| {
                    PluginError::new(format!(
                        "row {count}, column {name}: {}",
                        crate::describe_error(&e)
                    ))
                })?;
                r.push(match raw {
                    None => Value::NULL,
                    Some(Raw(bytes)) => decode(ty, bytes).map_err(|m| {
                        PluginError::new(format!(
                            "PostgreSQL (connection {key}): row {count}, column {name}: {m}"
                        ))
                    })?,
                });
            }
            batch.push(r)?;
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
        if rows.is_empty() {
            return Ok(0);
        }
        let ncols = columns.len().max(1);
        let q = |s: &str| weft_sql_support::quote(Dialect::Postgres, s);
        let target = weft_sql_support::qualified(Dialect::Postgres, schema, table);
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
                        c * per + r + 1,
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
            let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = values
                .iter()
                .map(|p| p as &(dyn postgres::types::ToSql + Sync))
                .collect();
            inserted += self.c().execute(sql.as_str(), &refs).map_err(|e| {
                let first = c * per + 1;
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

    fn describe(&mut self, schema: Option<&str>, table: &str) -> PluginResult<TableInfo> {
        let sql = "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull,
                COALESCE(array_position(i.indkey::int2[], a.attnum), 0)::int4, n.nspname::text
            FROM pg_attribute a
            JOIN pg_class c ON c.oid = a.attrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
            WHERE c.relname = $1 AND n.nspname = COALESCE($2::text, current_schema())
              AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
              AND a.attnum > 0 AND NOT a.attisdropped
            ORDER BY a.attnum";
        let schema = schema.filter(|s| !s.is_empty());
        // As written first; an unquoted name is stored in lower case.
        let attempts = [
            (table.to_owned(), schema.map(str::to_owned)),
            (table.to_lowercase(), schema.map(str::to_lowercase)),
        ];
        let mut found = Vec::new();
        for (name, schema) in &attempts {
            found = self
                .c()
                .query(sql, &[name, schema])
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
        let sql = if self.depth == 0 {
            "BEGIN".to_owned()
        } else {
            format!("SAVEPOINT weft_{}", self.depth)
        };
        self.c()
            .batch_execute(&sql)
            .map_err(|e| self.fail(&e, &sql))?;
        self.depth += 1;
        Ok(())
    }

    fn commit(&mut self) -> PluginResult<()> {
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
        let token: CancelToken = self.client.as_ref()?.cancel_token();
        let tls = self.tls.clone();
        Some(Interrupter::new(move || {
            let (token, tls) = (token.clone(), tls.clone());
            let _ = std::thread::Builder::new()
                .name("weft-pg-cancel".to_owned())
                .spawn(move || token.cancel_query(tls));
        }))
    }
}
