//! The values that cross the plugin boundary, and what a table looks like.

use abi_stable::StableAbi;
use abi_stable::std_types::{ROption, RString, RVec};

/// One value of a row or a statement parameter.
///
/// Decimals travel as text so that no digit is lost; dates and times as ISO 8601 text
/// (`2026-11-22`, `22:00:00`, `2026-11-22 22:00:00`, `2026-11-22T22:00:00+01:00`).
#[repr(C, u8)]
#[derive(StableAbi, Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A boolean.
    Bool(bool),
    /// A 64-bit integer.
    Int(i64),
    /// A double.
    Float(f64),
    /// An exact decimal, as text.
    Decimal(RString),
    /// Text.
    Text(RString),
    /// Bytes.
    Bytes(RVec<u8>),
    /// A date, `YYYY-MM-DD`.
    Date(RString),
    /// A time of day, `HH:MM:SS[.fff]`.
    Time(RString),
    /// A timestamp without zone, `YYYY-MM-DD HH:MM:SS[.fff]`.
    Timestamp(RString),
    /// A timestamp with zone, RFC 3339.
    TimestampTz(RString),
}

impl Value {
    /// Text for a `&str`.
    pub fn text(s: impl Into<String>) -> Self {
        Value::Text(RString::from(s.into()))
    }
}

/// A row: one value per column.
pub type Row = RVec<Value>;

/// A column of a table.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct ColumnInfo {
    /// Column name as the database spells it.
    pub name: RString,
    /// Declared type as the database spells it.
    pub type_name: RString,
    /// Whether NULL is allowed.
    pub nullable: bool,
    /// Position in the primary key, from 1; 0 when not part of it.
    pub primary_key: u32,
}

/// What `describe` tells of a table.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    /// Schema, where the database has schemas.
    pub schema: ROption<RString>,
    /// Table name.
    pub name: RString,
    /// Columns in table order.
    pub columns: RVec<ColumnInfo>,
}

impl TableInfo {
    /// The primary key's columns, in key order.
    pub fn primary_key(&self) -> Vec<&str> {
        let mut key: Vec<&ColumnInfo> = self.columns.iter().filter(|c| c.primary_key > 0).collect();
        key.sort_by_key(|c| c.primary_key);
        key.into_iter().map(|c| c.name.as_str()).collect()
    }
}

/// The SQL dialect of a connection, as `sqlparser` names the families.
#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite.
    Sqlite,
    /// PostgreSQL.
    Postgres,
    /// MySQL and MariaDB.
    MySql,
    /// Microsoft SQL Server.
    MsSql,
    /// H2.
    H2,
    /// HSQLDB.
    Hsqldb,
    /// Anything else: parse errors are only warnings.
    Generic,
}

impl Dialect {
    /// Whether a parse failure in this dialect rejects a deploy (else it is a warning).
    pub fn parse_errors_are_errors(self) -> bool {
        matches!(
            self,
            Dialect::Sqlite | Dialect::Postgres | Dialect::MySql | Dialect::MsSql
        )
    }

    /// Whether `INSERT ... ON CONFLICT (...) DO UPDATE` is understood.
    pub fn has_on_conflict(self) -> bool {
        matches!(self, Dialect::Sqlite | Dialect::Postgres)
    }

    /// The dialect a JDBC URL names (`jdbc:postgresql:...` is PostgreSQL); [`Dialect::Generic`]
    /// when the URL names no database weft knows.
    pub fn of_jdbc_url(url: &str) -> Self {
        let u = url.trim_start().to_ascii_lowercase();
        let Some(rest) = u.strip_prefix("jdbc:") else {
            return Dialect::Generic;
        };
        let sub = rest.split(':').next().unwrap_or_default();
        match sub {
            "postgresql" | "pgsql" => Dialect::Postgres,
            "mysql" | "mariadb" => Dialect::MySql,
            "sqlserver" | "jtds" => Dialect::MsSql,
            "sqlite" => Dialect::Sqlite,
            "h2" => Dialect::H2,
            "hsqldb" => Dialect::Hsqldb,
            _ => Dialect::Generic,
        }
    }

    /// The dialect's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Sqlite => "SQLite",
            Dialect::Postgres => "PostgreSQL",
            Dialect::MySql => "MySQL",
            Dialect::MsSql => "MS SQL",
            Dialect::H2 => "H2",
            Dialect::Hsqldb => "HSQLDB",
            Dialect::Generic => "generic SQL",
        }
    }
}
