//! The statement layer both repository backends share: a [`Session`] runs one SQL text with
//! numbered parameters (`?1`, `?2`, ...) and hands back rows of plain [`Value`]s, so that the
//! repository's statements (deploy writes, instances, schedules) are written once, in the
//! SQL that SQLite and PostgreSQL both read, and each backend only says how to run them.
//! What differs between the two (schema DDL, ids, dumps) stays in the backend's module.

use super::error::{Error, Result};
use std::borrow::Cow;

/// A parameter of a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Param<'a> {
    /// NULL.
    Null,
    /// An integer.
    Int(i64),
    /// Text.
    Text(Cow<'a, str>),
}

impl Param<'_> {
    /// The same parameter, owning its text.
    pub fn to_owned_param(&self) -> Param<'static> {
        match self {
            Param::Null => Param::Null,
            Param::Int(i) => Param::Int(*i),
            Param::Text(t) => Param::Text(Cow::Owned(t.to_string())),
        }
    }
}

/// What can be a statement's parameter (the numbers and text the repository stores, and
/// `Option`s of them for NULL).
pub trait ToParam {
    /// The parameter, borrowing text.
    fn to_param(&self) -> Param<'_>;
}

impl ToParam for i64 {
    fn to_param(&self) -> Param<'_> {
        Param::Int(*self)
    }
}

impl ToParam for i32 {
    fn to_param(&self) -> Param<'_> {
        Param::Int(i64::from(*self))
    }
}

impl ToParam for u32 {
    fn to_param(&self) -> Param<'_> {
        Param::Int(i64::from(*self))
    }
}

impl ToParam for bool {
    fn to_param(&self) -> Param<'_> {
        Param::Int(i64::from(*self))
    }
}

impl ToParam for str {
    fn to_param(&self) -> Param<'_> {
        Param::Text(Cow::Borrowed(self))
    }
}

impl ToParam for String {
    fn to_param(&self) -> Param<'_> {
        Param::Text(Cow::Borrowed(self))
    }
}

impl<T: ToParam + ?Sized> ToParam for &T {
    fn to_param(&self) -> Param<'_> {
        (**self).to_param()
    }
}

impl<T: ToParam> ToParam for Option<T> {
    fn to_param(&self) -> Param<'_> {
        self.as_ref().map_or(Param::Null, ToParam::to_param)
    }
}

/// The parameters of a statement, in order: `args![id, name]` (each borrowed).
macro_rules! args {
    ($($p:expr),* $(,)?) => {
        &[$($crate::sql::ToParam::to_param(&$p)),*][..]
    };
}
pub(crate) use args;

/// A value read from a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// NULL.
    Null,
    /// An integer (PostgreSQL's integer types and booleans).
    Int(i64),
    /// A floating-point number.
    Real(f64),
    /// Text.
    Text(String),
    /// Bytes.
    Bytes(Vec<u8>),
}

/// A value feeds a hash by its kind and content (a real by its bits), without being
/// formatted: the fingerprint of an instance hashes every action's row.
impl std::hash::Hash for Value {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        match self {
            Value::Null => h.write_u8(0),
            Value::Int(i) => {
                h.write_u8(1);
                h.write_i64(*i);
            }
            Value::Real(r) => {
                h.write_u8(2);
                h.write_u64(r.to_bits());
            }
            Value::Text(t) => {
                h.write_u8(3);
                t.hash(h);
            }
            Value::Bytes(b) => {
                h.write_u8(4);
                b.hash(h);
            }
        }
    }
}

/// One row of a result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row(pub Vec<Value>);

/// What a column's value can be read as.
pub trait FromValue: Sized {
    /// What is expected, for the message when the value is something else.
    const EXPECTED: &'static str;
    /// The value as `Self`, if it is one.
    fn from_value(v: &Value) -> Option<Self>;
}

impl FromValue for i64 {
    const EXPECTED: &'static str = "an integer";
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }
}

impl FromValue for bool {
    const EXPECTED: &'static str = "a boolean (0 or 1)";
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Int(i) => Some(*i != 0),
            _ => None,
        }
    }
}

impl FromValue for String {
    const EXPECTED: &'static str = "text";
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Text(t) => Some(t.clone()),
            _ => None,
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    const EXPECTED: &'static str = T::EXPECTED;
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Null => Some(None),
            v => T::from_value(v).map(Some),
        }
    }
}

impl Row {
    /// Column `i` as `T`.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] when the row has no such column or its value is not a `T`.
    pub fn get<T: FromValue>(&self, i: usize) -> Result<T> {
        let v = self
            .0
            .get(i)
            .ok_or_else(|| Error::Corrupt(format!("a result has no column {i}")))?;
        T::from_value(v).ok_or_else(|| {
            Error::Corrupt(format!(
                "column {i} of a result holds {v:?}, not {}",
                T::EXPECTED
            ))
        })
    }
}

/// Which database a [`Session`] speaks to, for the few statements whose SQL differs
/// (row locks that skip locked rows, the database's clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite (one writer: what it writes is never contended).
    Sqlite,
    /// PostgreSQL (many hosts: `FOR UPDATE SKIP LOCKED`).
    Postgres,
}

/// One connection of a backend, inside a transaction or not: runs statements whose
/// parameters are `?1`, `?2`, ... (each backend caches what it prepares).
pub trait Session {
    /// The database it speaks to.
    fn dialect(&self) -> Dialect;

    /// Runs one statement; the rows it changed.
    ///
    /// # Errors
    ///
    /// What the database says, with the statement.
    fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<usize>;

    /// Runs one query, handing each row to `each` in order.
    ///
    /// # Errors
    ///
    /// What the database says, with the statement, or what `each` returns.
    fn query(
        &self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut dyn FnMut(&Row) -> Result<()>,
    ) -> Result<()>;

    /// Runs statements without parameters, separated by `;`.
    ///
    /// # Errors
    ///
    /// What the database says.
    fn execute_batch(&self, sql: &str) -> Result<()>;

    /// Writes whose answers the caller does not wait for, in the transaction: a backend over
    /// the network sends them with what comes next (the commit, at the latest: an error of
    /// theirs fails it), SQLite runs them now ([`Session::execute_all`]).
    ///
    /// # Errors
    ///
    /// What the database says, now or at the commit.
    fn defer_all(&self, statements: &[Statement<'_>]) -> Result<()> {
        self.execute_all(statements).map(|_| ())
    }

    /// Runs statements one after the other, as [`Session::execute`] each; a backend over
    /// the network sends them all before it waits for the first answer (one round trip).
    /// Answers the rows each changed.
    ///
    /// # Errors
    ///
    /// The first statement's error, with its statement; what follows it did not count (in
    /// a transaction, the caller rolls back).
    fn execute_all(&self, statements: &[Statement<'_>]) -> Result<Vec<usize>> {
        statements
            .iter()
            .map(|(sql, params)| self.execute(sql, params))
            .collect()
    }

    /// The first column of the first row of each query (`None` where it has no row or a
    /// NULL there), the queries sent together as by [`Session::execute_all`].
    ///
    /// # Errors
    ///
    /// The first query's error, with its statement.
    fn first_values(&self, queries: &[Statement<'_>]) -> Result<Vec<Option<Value>>> {
        queries
            .iter()
            .map(|(sql, params)| {
                let mut first = None;
                self.query(sql, params, &mut |r| {
                    if first.is_none() {
                        first = r.0.first().cloned().filter(|v| *v != Value::Null);
                    }
                    Ok(())
                })?;
                Ok(first)
            })
            .collect()
    }
}

/// A statement with its parameters, as [`Session::execute_all`] takes them.
pub type Statement<'a> = (&'a str, Vec<Param<'a>>);

/// The row counts multi-row inserts are cut into, largest first: few statement texts, so
/// that the statement caches of both backends hold them all.
const INSERT_CHUNKS: [usize; 3] = [256, 16, 1];

/// Inserts rows of `columns` parameters each (`params`, row after row) with multi-row
/// statements `head VALUES (?1, ?2, ...), (...)`, cut into statements of 256, 16 and 1 rows, all sent at
/// once with [`Session::execute_all`] (one round trip on PostgreSQL): a thousand rows cost
/// a handful of statements instead of a thousand.
///
/// # Errors
///
/// The first statement's error; `params` not a whole number of rows is
/// [`Error::Corrupt`] (a mistake of the caller's).
pub fn insert_rows(
    conn: &dyn Session,
    head: &str,
    columns: usize,
    params: Vec<Param<'_>>,
) -> Result<()> {
    if columns == 0 || !params.len().is_multiple_of(columns) {
        return Err(Error::Corrupt(format!(
            "{} parameters are not rows of {columns} for `{head}`",
            params.len()
        )));
    }
    let mut rows = params.len() / columns;
    let mut texts: Vec<(usize, String)> = Vec::new();
    let mut cuts: Vec<usize> = Vec::new();
    for size in INSERT_CHUNKS {
        while rows >= size {
            cuts.push(size);
            rows -= size;
        }
    }
    for &size in &cuts {
        if !texts.iter().any(|(n, _)| *n == size) {
            texts.push((size, values_text(head, columns, size)));
        }
    }
    let mut params = params.into_iter();
    let statements: Vec<Statement<'_>> = cuts
        .iter()
        .map(|&size| {
            let text = texts
                .iter()
                .find(|(n, _)| *n == size)
                .map_or("", |(_, t)| t.as_str());
            (text, params.by_ref().take(size * columns).collect())
        })
        .collect();
    conn.execute_all(&statements)?;
    Ok(())
}

/// `head VALUES (?1, ..., ?columns), ...` for `rows` rows.
fn values_text(head: &str, columns: usize, rows: usize) -> String {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(head.len() + 8 + rows * columns * 7);
    text.push_str(head);
    text.push_str(" VALUES ");
    for r in 0..rows {
        text.push_str(if r == 0 { "(" } else { ", (" });
        for c in 0..columns {
            let sep = if c == 0 { "" } else { ", " };
            let _ = write!(text, "{sep}?{}", r * columns + c + 1);
        }
        text.push(')');
    }
    text
}

impl dyn Session + '_ {
    /// Every row of a query, each read by `f`.
    ///
    /// # Errors
    ///
    /// As [`Session::query`], or what `f` returns.
    pub fn rows<T>(
        &self,
        sql: &str,
        params: &[Param<'_>],
        mut f: impl FnMut(&Row) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        self.query(sql, params, &mut |r| {
            out.push(f(r)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// The first row of a query, read by `f`; `None` when there is none.
    ///
    /// # Errors
    ///
    /// As [`Session::query`], or what `f` returns.
    pub fn row<T>(
        &self,
        sql: &str,
        params: &[Param<'_>],
        f: impl FnOnce(&Row) -> Result<T>,
    ) -> Result<Option<T>> {
        let mut first = None;
        self.query(sql, params, &mut |r| {
            if first.is_none() {
                first = Some(r.clone());
            }
            Ok(())
        })?;
        first.as_ref().map(f).transpose()
    }

    /// The first column of the first row of a query; `None` when there is no row.
    ///
    /// # Errors
    ///
    /// As the method `row` above.
    pub fn value<T: FromValue>(&self, sql: &str, params: &[Param<'_>]) -> Result<Option<T>> {
        self.row(sql, params, |r| r.get(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn parameters_come_from_what_the_repository_stores() {
        let name = String::from("n");
        let none: Option<String> = None;
        assert_eq!(
            args![1i64, "a", name, none, Some(2i64), true, String::from("o")],
            &[
                Param::Int(1),
                Param::Text("a".into()),
                Param::Text("n".into()),
                Param::Null,
                Param::Int(2),
                Param::Int(1),
                Param::Text("o".into())
            ][..]
        );
    }

    #[test]
    fn a_value_of_another_kind_is_an_error_naming_the_column() {
        let r = Row(vec![Value::Int(3), Value::Null, Value::Text("x".into())]);
        assert_eq!(r.get::<i64>(0).expect("int"), 3);
        assert_eq!(r.get::<Option<String>>(1).expect("null"), None);
        assert!(r.get::<bool>(0).expect("bool"));
        let e = r.get::<i64>(2).expect_err("text").to_string();
        assert!(e.contains("column 2") && e.contains("integer"), "{e}");
        assert!(r.get::<String>(5).is_err());
    }

    /// A SQLite connection that counts the statements sent through it.
    struct Counted {
        conn: rusqlite::Connection,
        statements: Cell<usize>,
    }

    impl Session for Counted {
        fn dialect(&self) -> Dialect {
            Dialect::Sqlite
        }
        fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<usize> {
            self.statements.set(self.statements.get() + 1);
            Session::execute(&self.conn, sql, params)
        }
        fn query(
            &self,
            sql: &str,
            params: &[Param<'_>],
            each: &mut dyn FnMut(&Row) -> Result<()>,
        ) -> Result<()> {
            Session::query(&self.conn, sql, params, each)
        }
        fn execute_batch(&self, sql: &str) -> Result<()> {
            Session::execute_batch(&self.conn, sql)
        }
    }

    #[test]
    fn rows_are_inserted_whole_and_in_order_in_few_statements_whatever_their_number() {
        let s = Counted {
            conn: rusqlite::Connection::open_in_memory().expect("memory"),
            statements: Cell::new(0),
        };
        Session::execute_batch(&s, "CREATE TABLE t (a INTEGER, b TEXT)").expect("table");
        for (n, statements) in [
            (0, 0),
            (1, 1),
            (15, 15),
            (16, 1),
            (17, 2),
            (256, 1),
            (273, 3),
            (1000, 3 + 14 + 8),
        ] {
            Session::execute_batch(&s, "DELETE FROM t").expect("empty");
            s.statements.set(0);
            let texts: Vec<String> = (0..n).map(|i| format!("row {i}")).collect();
            let mut params = Vec::new();
            for (i, t) in texts.iter().enumerate() {
                params.push(Param::Int(i as i64));
                params.push(if i % 7 == 3 {
                    Param::Null
                } else {
                    t.to_param()
                });
            }
            insert_rows(&s, "INSERT INTO t (a, b)", 2, params).expect("insert");
            assert_eq!(s.statements.get(), statements, "{n} rows");
            let rows: Vec<(i64, Option<String>)> = (&s as &dyn Session)
                .rows("SELECT a, b FROM t ORDER BY rowid", &[], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .expect("read");
            let expected: Vec<(i64, Option<String>)> = (0..n)
                .map(|i| (i as i64, (i % 7 != 3).then(|| format!("row {i}"))))
                .collect();
            assert_eq!(rows, expected, "{n} rows");
        }
        let wrong = insert_rows(&s, "INSERT INTO t (a, b)", 2, vec![Param::Int(1)])
            .expect_err("half a row");
        assert!(
            wrong
                .to_string()
                .contains("1 parameters are not rows of 2 for `INSERT INTO t (a, b)`"),
            "{wrong}"
        );
    }
}
