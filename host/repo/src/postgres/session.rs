//! The repository's statement layer ([`Session`]) on a PostgreSQL connection: `?1` becomes
//! `$1`, each statement is prepared once per connection, a parameter is sent as the type
//! the server inferred for it (an integer into an `integer` column, text into `text`), and a
//! column is read by its type into a plain [`Value`].

use crate::error::{Error, Result};
use crate::sql::{Param, Row, Session, Value};
use bytes::BytesMut;
use std::cell::RefCell;
use std::collections::HashMap;
use weft_pg_client::tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use weft_pg_client::tokio_postgres::{self, Statement};

/// A connection of the repository with the statements prepared on it.
pub struct Conn {
    pub(super) session: weft_pg_client::Session,
    statements: HashMap<String, Statement>,
    /// The message that begins the transaction the connection is in, not sent yet: it goes
    /// in the round trip of the transaction's first statements.
    begin: Option<String>,
    /// Whether the connection is in a transaction ([`Conn::begin_later`] to [`Conn::end`]).
    in_tx: bool,
    /// Writes of the transaction whose answers nobody waits for ([`Session::defer_all`]),
    /// sent in the round trip of what comes next: the commit, at the latest.
    deferred: Vec<(String, Vec<Param<'static>>)>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("prepared", &self.statements.len())
            .finish_non_exhaustive()
    }
}

/// The most statements one connection keeps prepared (the repository has a few dozen).
const MAX_PREPARED: usize = 256;

impl Conn {
    /// A connection over `session`.
    pub fn new(session: weft_pg_client::Session) -> Self {
        Conn {
            session,
            statements: HashMap::new(),
            begin: None,
            in_tx: false,
            deferred: Vec::new(),
        }
    }

    /// Begins a transaction with `begin` (`BEGIN`, and a lock to take): the message is sent
    /// with the transaction's first statements, one round trip less.
    pub fn begin_later(&mut self, begin: String) {
        self.begin = Some(begin);
        self.in_tx = true;
        self.deferred.clear();
    }

    /// Ends the transaction: with `commit`, the writes still waiting and `COMMIT` go in one
    /// round trip; else `ROLLBACK` (the writes waiting are dropped). A transaction that
    /// sent nothing sends nothing.
    ///
    /// # Errors
    ///
    /// What the server says (a write that failed at the commit, named, and the
    /// transaction rolled back).
    pub fn end(&mut self, commit: bool) -> Result<()> {
        self.in_tx = false;
        if !commit {
            self.deferred.clear();
            if self.begin.take().is_some() {
                return Ok(());
            }
            return self.batch("ROLLBACK");
        }
        if self.begin.is_some() && self.deferred.is_empty() {
            self.begin = None;
            return Ok(());
        }
        let sent =
            PgSession::new(self).pipelined::<()>(&[], async |_, _, _, _| Ok(()), Some("COMMIT"));
        if sent.is_err() {
            // A write that failed left the transaction aborted (its COMMIT rolled it back);
            // whatever else went wrong, nothing of it stays.
            let _ = self.batch("ROLLBACK");
        }
        sent.map(|_| ())
    }

    /// Whether the connection is gone (the server restarted, the network broke).
    pub fn is_closed(&self) -> bool {
        self.session.is_closed()
    }

    fn prepared(&mut self, sql: &str) -> Result<Statement> {
        if let Some(st) = self.statements.get(sql) {
            return Ok(st.clone());
        }
        let st = self
            .session
            .prepare(&numbered(sql))
            .map_err(|e| failed(&e, sql))?;
        if self.statements.len() >= MAX_PREPARED {
            self.statements.clear();
        }
        self.statements.insert(sql.to_owned(), st.clone());
        Ok(st)
    }

    /// Each of `statements` prepared (as [`Conn::prepared`]), in order.
    fn prepared_all(&mut self, statements: &[crate::sql::Statement<'_>]) -> Result<Vec<Statement>> {
        statements
            .iter()
            .map(|(sql, _)| self.prepared(sql))
            .collect()
    }

    /// Runs statements without parameters.
    ///
    /// # Errors
    ///
    /// What the server says.
    pub fn batch(&mut self, sql: &str) -> Result<()> {
        self.session.batch_execute(sql).map_err(|e| failed(&e, sql))
    }
}

/// A repository error from a PostgreSQL error in `sql`.
pub fn failed(e: &tokio_postgres::Error, sql: &str) -> Error {
    Error::Postgres {
        sql: sql.to_owned(),
        code: e.code().map(|c| c.code().to_owned()),
        message: weft_pg_client::describe_error(e),
    }
}

/// `?1`, `?2`, ... as PostgreSQL numbers parameters (`$1`, ...), outside quoted text.
pub fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quote: Option<char> = None;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                out.push(c);
            }
            (Some(q), c) if c == q => {
                quote = None;
                out.push(c);
            }
            (None, '?') if chars.peek().is_some_and(char::is_ascii_digit) => out.push('$'),
            _ => out.push(c),
        }
    }
    out
}

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Param::Null => Ok(IsNull::Yes),
            Param::Int(i) => match *ty {
                Type::INT8 => i.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
                Type::BOOL => (*i != 0).to_sql(ty, out),
                Type::FLOAT8 => (*i as f64).to_sql(ty, out),
                _ => i.to_string().as_str().to_sql(ty, out),
            },
            Param::Text(t) => match *ty {
                Type::INT8 => t.trim().parse::<i64>()?.to_sql(ty, out),
                Type::INT4 => t.trim().parse::<i32>()?.to_sql(ty, out),
                _ => t.as_ref().to_sql(ty, out),
            },
        }
    }

    fn accepts(_: &Type) -> bool {
        // Each value is converted to the type the server inferred, or refused then.
        true
    }

    to_sql_checked!();
}

fn value(row: &tokio_postgres::Row, i: usize) -> std::result::Result<Value, String> {
    let ty = row.columns()[i].type_();
    let got = match *ty {
        Type::INT8 => row.try_get::<_, Option<i64>>(i).map(|v| v.map(Value::Int)),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(i)
            .map(|v| v.map(|v| Value::Int(v.into()))),
        Type::INT2 => row
            .try_get::<_, Option<i16>>(i)
            .map(|v| v.map(|v| Value::Int(v.into()))),
        Type::BOOL => row
            .try_get::<_, Option<bool>>(i)
            .map(|v| v.map(|v| Value::Int(v.into()))),
        Type::FLOAT8 => row.try_get::<_, Option<f64>>(i).map(|v| v.map(Value::Real)),
        Type::FLOAT4 => row
            .try_get::<_, Option<f32>>(i)
            .map(|v| v.map(|v| Value::Real(v.into()))),
        Type::BYTEA => row
            .try_get::<_, Option<Vec<u8>>>(i)
            .map(|v| v.map(Value::Bytes)),
        _ => row
            .try_get::<_, Option<String>>(i)
            .map(|v| v.map(Value::Text)),
    };
    got.map(|v| v.unwrap_or(Value::Null))
        .map_err(|e| format!("column {i} ({ty}): {e}"))
}

/// A [`Session`] on one repository connection (in a transaction or not).
pub struct PgSession<'a> {
    conn: RefCell<&'a mut Conn>,
}

impl<'a> PgSession<'a> {
    /// A session on `conn`.
    pub fn new(conn: &'a mut Conn) -> Self {
        PgSession {
            conn: RefCell::new(conn),
        }
    }
}

/// The first of `statements`, to name where a connection that broke under them broke.
fn first_sql<'a>(statements: &[crate::sql::Statement<'a>]) -> &'a str {
    statements.first().map_or("", |(sql, _)| sql)
}

fn bound<'p>(params: &'p [Param<'_>]) -> Vec<&'p (dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

impl Session for PgSession<'_> {
    fn dialect(&self) -> crate::sql::Dialect {
        crate::sql::Dialect::Postgres
    }

    fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<usize> {
        Ok(self
            .execute_all(&[(sql, params.to_vec())])?
            .pop()
            .unwrap_or(0))
    }

    fn query(
        &self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut dyn FnMut(&Row) -> Result<()>,
    ) -> Result<()> {
        let rows = self
            .pipelined(
                &[(sql, params.to_vec())],
                async |client, st, sql, params| {
                    client
                        .query(st, &bound(params))
                        .await
                        .map_err(|e| failed(&e, sql))
                },
                None,
            )?
            .pop()
            .unwrap_or_default();
        let mut row = Row::default();
        for r in &rows {
            row.0.clear();
            for i in 0..r.len() {
                row.0
                    .push(value(r, i).map_err(|m| Error::Corrupt(format!("{m} in `{sql}`")))?);
            }
            each(&row)?;
        }
        Ok(())
    }

    fn execute_batch(&self, sql: &str) -> Result<()> {
        let waiting = {
            let conn = self.conn.borrow();
            conn.begin.is_some() || !conn.deferred.is_empty()
        };
        if waiting {
            self.pipelined::<()>(&[], async |_, _, _, _| Ok(()), Some(sql))
                .map(|_| ())
        } else {
            self.conn.borrow_mut().batch(sql)
        }
    }

    fn defer_all(&self, statements: &[crate::sql::Statement<'_>]) -> Result<()> {
        let mut conn = self.conn.borrow_mut();
        if !conn.in_tx {
            drop(conn);
            return self.execute_all(statements).map(|_| ());
        }
        conn.deferred.extend(statements.iter().map(|(sql, params)| {
            (
                (*sql).to_owned(),
                params.iter().map(Param::to_owned_param).collect(),
            )
        }));
        Ok(())
    }

    fn execute_all(&self, statements: &[crate::sql::Statement<'_>]) -> Result<Vec<usize>> {
        self.pipelined(
            statements,
            async |client, st, sql, params| {
                client
                    .execute(st, &bound(params))
                    .await
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
                    .map_err(|e| failed(&e, sql))
            },
            None,
        )
    }

    fn first_values(&self, queries: &[crate::sql::Statement<'_>]) -> Result<Vec<Option<Value>>> {
        self.pipelined(
            queries,
            async |client, st, sql, params| {
                let rows = client
                    .query(st, &bound(params))
                    .await
                    .map_err(|e| failed(&e, sql))?;
                match rows.first() {
                    Some(r) if !r.is_empty() => value(r, 0)
                        .map(|v| Some(v).filter(|v| *v != Value::Null))
                        .map_err(|m| Error::Corrupt(format!("{m} in `{sql}`"))),
                    _ => Ok(None),
                }
            },
            None,
        )
    }
}

impl PgSession<'_> {
    /// Sends every statement at once (each prepared once per connection) and answers what
    /// `each` makes of each, in order: one round trip for all. The transaction's beginning
    /// and its writes waiting, when there are any, go first, and `then` (a message without
    /// parameters: `COMMIT`, say) last.
    fn pipelined<T>(
        &self,
        statements: &[crate::sql::Statement<'_>],
        each: impl AsyncFn(&tokio_postgres::Client, &Statement, &str, &[Param<'_>]) -> Result<T>,
        then: Option<&str>,
    ) -> Result<Vec<T>> {
        let mut conn = self.conn.borrow_mut();
        let prepared = conn.prepared_all(statements)?;
        let deferred = std::mem::take(&mut conn.deferred);
        let deferred_prepared = deferred
            .iter()
            .map(|(sql, _)| conn.prepared(sql))
            .collect::<Result<Vec<_>>>()?;
        let begin = conn.begin.take();
        let (client, mut driver) = conn.session.parts();
        let simple = async |sql: Option<&str>| match sql {
            Some(sql) => client.batch_execute(sql).await.map_err(|e| failed(&e, sql)),
            None => Ok(()),
        };
        let began = simple(begin.as_deref());
        let waited =
            futures_util::future::try_join_all(deferred.iter().zip(&deferred_prepared).map(
                |((sql, params), st)| async move {
                    client
                        .execute(st, &bound(params))
                        .await
                        .map(|_| ())
                        .map_err(|e| failed(&e, sql))
                },
            ));
        let sent = futures_util::future::try_join_all(
            statements
                .iter()
                .zip(&prepared)
                .map(|((sql, params), st)| each(client, st, sql, params)),
        );
        let last = simple(then);
        let all = futures_util::future::try_join4(began, waited, sent, last);
        driver
            .block_on(async { Ok(all.await) })
            .map_err(|e| failed(&e, first_sql(statements)))?
            .map(|(_, _, out, _)| out)
    }
}

#[cfg(test)]
mod tests {
    use super::numbered;

    #[test]
    fn numbered_parameters_become_dollars_outside_quotes() {
        assert_eq!(
            numbered("UPDATE t SET a = ?2, b = '?1' WHERE id = ?1 AND c = \"?3\" AND d = ?"),
            "UPDATE t SET a = $2, b = '?1' WHERE id = $1 AND c = \"?3\" AND d = ?"
        );
    }
}
