//! The repository's statement layer ([`Session`]) on a SQLite connection: statements are
//! prepared once per connection (rusqlite's statement cache) and values map one to one.

use crate::error::{Error, Result};
use crate::sql::{Param, Row, Session, Value};
use rusqlite::Connection;
use rusqlite::types::{ToSqlOutput, ValueRef};

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Param::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Param::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            Param::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
        })
    }
}

fn value(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Bytes(b.to_vec()),
    }
}

impl Session for Connection {
    fn dialect(&self) -> crate::sql::Dialect {
        crate::sql::Dialect::Sqlite
    }

    fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<usize> {
        let mut st = self
            .prepare_cached(sql)
            .map_err(|e| Error::with_sql(e, sql))?;
        st.execute(rusqlite::params_from_iter(params))
            .map_err(|e| Error::with_sql(e, sql))
    }

    fn query(
        &self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut dyn FnMut(&Row) -> Result<()>,
    ) -> Result<()> {
        let mut st = self
            .prepare_cached(sql)
            .map_err(|e| Error::with_sql(e, sql))?;
        let n = st.column_count();
        let mut rows = st
            .query(rusqlite::params_from_iter(params))
            .map_err(|e| Error::with_sql(e, sql))?;
        let mut row = Row(Vec::with_capacity(n));
        while let Some(r) = rows.next().map_err(|e| Error::with_sql(e, sql))? {
            row.0.clear();
            for i in 0..n {
                row.0
                    .push(value(r.get_ref(i).map_err(|e| Error::with_sql(e, sql))?));
            }
            each(&row)?;
        }
        Ok(())
    }

    fn execute_batch(&self, sql: &str) -> Result<()> {
        Connection::execute_batch(self, sql).map_err(|e| Error::with_sql(e, sql))
    }
}

#[cfg(test)]
mod tests {
    use crate::sql::{Param, Session, Value, args};

    #[test]
    fn statements_given_together_run_in_order_and_stop_at_the_first_error() {
        let c = rusqlite::Connection::open_in_memory().expect("db");
        let s: &dyn Session = &c;
        s.execute_batch("CREATE TABLE p (id INTEGER PRIMARY KEY, name TEXT)")
            .expect("table");
        let insert = "INSERT INTO p (id, name) VALUES (?1, ?2)";
        let row =
            |id: i64, name: &'static str| (insert, vec![Param::Int(id), Param::Text(name.into())]);
        assert_eq!(
            s.execute_all(&[row(1, "a"), row(2, "b")]).expect("two"),
            vec![1, 1]
        );
        let e = s
            .execute_all(&[row(3, "c"), row(1, "again"), row(4, "d")])
            .expect_err("a repeated key")
            .to_string();
        assert!(e.contains("UNIQUE") && e.contains("INSERT INTO p"), "{e}");
        assert_eq!(
            s.value::<i64>("SELECT count(*) FROM p WHERE id = 4", args![])
                .expect("count"),
            Some(0),
            "nothing after the failing statement ran"
        );
        s.execute("INSERT INTO p (id) VALUES (5)", args![])
            .expect("null name");
        let q = "SELECT name FROM p WHERE id = ?1";
        assert_eq!(
            s.first_values(&[
                (q, vec![Param::Int(2)]),
                (q, vec![Param::Int(9)]),
                (q, vec![Param::Int(5)])
            ])
            .expect("values"),
            vec![Some(Value::Text("b".to_owned())), None, None]
        );
    }

    #[test]
    fn statements_run_with_numbered_parameters_and_read_back_plain_values() {
        let c = rusqlite::Connection::open_in_memory().expect("db");
        let s: &dyn Session = &c;
        s.execute_batch("CREATE TABLE t (id INTEGER, name TEXT, f REAL)")
            .expect("table");
        let none: Option<String> = None;
        assert_eq!(
            s.execute(
                "INSERT INTO t VALUES (?1, ?2, 1.5), (?3, ?4, NULL)",
                args![1i64, "a", 2i64, none]
            )
            .expect("insert"),
            2
        );
        let rows = s
            .rows("SELECT id, name FROM t ORDER BY id", args![], |r| {
                Ok((r.get::<i64>(0)?, r.get::<Option<String>>(1)?))
            })
            .expect("rows");
        assert_eq!(rows, vec![(1, Some("a".to_owned())), (2, None)]);
        assert_eq!(
            s.value::<i64>("SELECT count(*) FROM t WHERE id > ?1", args![5i64])
                .expect("count"),
            Some(0)
        );
        assert_eq!(
            s.value::<i64>("SELECT id FROM t WHERE id > ?1", args![5i64])
                .expect("none"),
            None
        );
        let e = s
            .execute("INSERT INTO nowhere VALUES (1)", args![])
            .expect_err("no table")
            .to_string();
        assert!(e.contains("nowhere"), "{e}");
    }
}
