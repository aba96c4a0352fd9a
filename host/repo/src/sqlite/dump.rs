//! A full logical dump of a repository: schema version, every table's definition and every
//! row, in a stable order. Tests compare dumps taken before and after a request to prove
//! that a rejected deploy or a dry run changed nothing. The rows of `hosts` are left out:
//! they say which hosts are alive, and change with every heartbeat and start.

use crate::error::{Error, Result};
use rusqlite::Connection;
use rusqlite::types::ValueRef;
use std::fmt::Write as _;

/// The table whose rows a dump leaves out.
pub const LIVENESS: &str = "hosts";

/// Dumps the repository behind `conn` as text.
///
/// # Errors
///
/// A repository error while reading.
pub fn dump(conn: &Connection) -> Result<String> {
    let mut out = String::new();
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let _ = writeln!(out, "user_version {version}");
    let sql =
        "SELECT name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name";
    let mut st = conn.prepare(sql).map_err(|e| Error::with_sql(e, sql))?;
    let objects: Vec<(String, Option<String>)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|rows| rows.collect())
        .map_err(|e| Error::with_sql(e, sql))?;
    for (name, def) in &objects {
        let _ = writeln!(out, "{}", def.as_deref().unwrap_or(name));
    }
    let tables = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name";
    let mut st = conn
        .prepare(tables)
        .map_err(|e| Error::with_sql(e, tables))?;
    let names: Vec<String> = st
        .query_map([], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .map_err(|e| Error::with_sql(e, tables))?;
    for table in names {
        let _ = writeln!(out, "-- {table}");
        if table == LIVENESS {
            continue;
        }
        let q = format!(
            "SELECT * FROM \"{}\" ORDER BY 1",
            table.replace('"', "\"\"")
        );
        let mut st = conn.prepare(&q).map_err(|e| Error::with_sql(e, &q))?;
        let n = st.column_count();
        let mut rows = st.query([]).map_err(|e| Error::with_sql(e, &q))?;
        while let Some(row) = rows.next().map_err(|e| Error::with_sql(e, &q))? {
            let mut line = String::new();
            for i in 0..n {
                if i > 0 {
                    line.push('|');
                }
                match row.get_ref(i).map_err(|e| Error::with_sql(e, &q))? {
                    ValueRef::Null => line.push_str("NULL"),
                    ValueRef::Integer(v) => {
                        let _ = write!(line, "{v}");
                    }
                    ValueRef::Real(v) => {
                        let _ = write!(line, "{v:?}");
                    }
                    ValueRef::Text(t) => {
                        let _ = write!(line, "{:?}", String::from_utf8_lossy(t));
                    }
                    ValueRef::Blob(b) => {
                        let _ = write!(
                            line,
                            "x'{}'",
                            b.iter().map(|c| format!("{c:02x}")).collect::<String>()
                        );
                    }
                }
            }
            out.push_str(&line);
            out.push('\n');
        }
    }
    Ok(out)
}
