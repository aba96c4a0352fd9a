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
        &[$($crate::repo::sql::ToParam::to_param(&$p)),*][..]
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
}
