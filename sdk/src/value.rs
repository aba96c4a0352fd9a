//! The values that cross the plugin boundary, and what a table looks like.

use abi_stable::StableAbi;
use abi_stable::std_types::{ROption, RString, RVec};

open_enum! {
    /// What kind of value a [`Value`] holds. Later sdk versions may add kinds; a plugin meets
    /// one it does not know as [`Datum::Other`].
    pub struct ValueKind {
        /// SQL NULL.
        Null = 0,
        /// A boolean.
        Bool = 1,
        /// A 64-bit integer.
        Int = 2,
        /// A double.
        Float = 3,
        /// An exact decimal, as text.
        Decimal = 4,
        /// Text.
        Text = 5,
        /// Bytes.
        Bytes = 6,
        /// A date, `YYYY-MM-DD`.
        Date = 7,
        /// A time of day, `HH:MM:SS[.fff]`.
        Time = 8,
        /// A timestamp without zone, `YYYY-MM-DD HH:MM:SS[.fff]`.
        Timestamp = 9,
        /// A timestamp with zone, RFC 3339.
        TimestampTz = 10,
    }
}

/// One value of a row or a statement parameter, as it crosses the boundary: a kind, a number
/// (booleans, integers, the bits of a double) and bytes (the UTF-8 of the text kinds, or the
/// bytes). Read it with [`Value::get`]; make one with the constructors ([`Value::int`],
/// [`Value::text`], ...).
///
/// Decimals travel as text so that no digit is lost; dates and times as ISO 8601 text
/// (`2026-11-22`, `22:00:00`, `2026-11-22 22:00:00`, `2026-11-22T22:00:00+01:00`). Being a
/// struct rather than an enum, a value of a kind added in a later sdk still crosses to a
/// plugin built before it, which can pass it on untouched. Two values are equal when kind,
/// number and bytes are (so a NaN equals itself).
#[repr(C)]
#[derive(StableAbi, Clone)]
pub struct Value {
    kind: ValueKind,
    number: i64,
    /// `RNone` for the kinds without bytes: an `RVec` is freed through its vtable even when
    /// empty, which a million numbers would pay for.
    data: ROption<RVec<u8>>,
}

/// What a [`Value`] holds, borrowed: the view plugin code matches on.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Datum<'a> {
    /// SQL NULL.
    Null,
    /// A boolean.
    Bool(bool),
    /// A 64-bit integer.
    Int(i64),
    /// A double.
    Float(f64),
    /// An exact decimal, as text.
    Decimal(&'a str),
    /// Text.
    Text(&'a str),
    /// Bytes.
    Bytes(&'a [u8]),
    /// A date, `YYYY-MM-DD`.
    Date(&'a str),
    /// A time of day.
    Time(&'a str),
    /// A timestamp without zone.
    Timestamp(&'a str),
    /// A timestamp with zone.
    TimestampTz(&'a str),
    /// A kind this sdk does not know (from a newer host or plugin): its kind, number and
    /// bytes as they came.
    Other(ValueKind, i64, &'a [u8]),
}

impl Value {
    /// SQL NULL.
    pub const NULL: Value = Value {
        kind: ValueKind::Null,
        number: 0,
        data: ROption::RNone,
    };

    fn with_number(kind: ValueKind, number: i64) -> Self {
        Value {
            kind,
            number,
            data: ROption::RNone,
        }
    }

    fn with_text(kind: ValueKind, text: impl Into<String>) -> Self {
        Value {
            kind,
            number: 0,
            data: ROption::RSome(RVec::from(text.into().into_bytes())),
        }
    }

    /// SQL NULL.
    pub fn null() -> Self {
        Value::NULL
    }

    /// A boolean.
    pub fn bool(b: bool) -> Self {
        Value::with_number(ValueKind::Bool, i64::from(b))
    }

    /// An integer.
    pub fn int(i: i64) -> Self {
        Value::with_number(ValueKind::Int, i)
    }

    /// A double.
    pub fn float(f: f64) -> Self {
        Value::with_number(ValueKind::Float, f.to_bits() as i64)
    }

    /// An exact decimal, as text.
    pub fn decimal(text: impl Into<String>) -> Self {
        Value::with_text(ValueKind::Decimal, text)
    }

    /// Text.
    pub fn text(text: impl Into<String>) -> Self {
        Value::with_text(ValueKind::Text, text)
    }

    /// Bytes.
    pub fn bytes(bytes: impl Into<Vec<u8>>) -> Self {
        Value {
            kind: ValueKind::Bytes,
            number: 0,
            data: ROption::RSome(RVec::from(bytes.into())),
        }
    }

    /// A date, `YYYY-MM-DD`.
    pub fn date(text: impl Into<String>) -> Self {
        Value::with_text(ValueKind::Date, text)
    }

    /// A time of day, `HH:MM:SS[.fff]`.
    pub fn time(text: impl Into<String>) -> Self {
        Value::with_text(ValueKind::Time, text)
    }

    /// A timestamp without zone, `YYYY-MM-DD HH:MM:SS[.fff]`.
    pub fn timestamp(text: impl Into<String>) -> Self {
        Value::with_text(ValueKind::Timestamp, text)
    }

    /// A timestamp with zone, RFC 3339.
    pub fn timestamp_tz(text: impl Into<String>) -> Self {
        Value::with_text(ValueKind::TimestampTz, text)
    }

    /// A value from its parts as they cross the boundary: for passing on a value of a kind
    /// this sdk does not know (see [`Datum::Other`]), and for tests. Text kinds whose bytes
    /// are not UTF-8 read as [`Datum::Other`].
    pub fn from_parts(kind: ValueKind, number: i64, data: Vec<u8>) -> Self {
        Value {
            kind,
            number,
            data: ROption::RSome(RVec::from(data)),
        }
    }

    /// Its parts as they cross the boundary, without checking anything: the kind; the
    /// number (a boolean as 0 or 1, an integer, a double's bits); the bytes (the UTF-8 of a
    /// text kind, not checked here, or the bytes). For code that moves many values and only
    /// passes the bytes on, such as a connection binding parameters; [`Value::get`] is the
    /// checked view.
    pub fn parts(&self) -> (ValueKind, i64, &[u8]) {
        (self.kind, self.number, self.data())
    }

    fn data(&self) -> &[u8] {
        match &self.data {
            ROption::RSome(d) => d.as_slice(),
            ROption::RNone => &[],
        }
    }

    /// Its kind.
    pub fn kind(&self) -> ValueKind {
        self.kind
    }

    /// Whether it is SQL NULL.
    pub fn is_null(&self) -> bool {
        self.kind == ValueKind::Null
    }

    /// What it holds.
    pub fn get(&self) -> Datum<'_> {
        let data = self.data();
        let text = || std::str::from_utf8(data).ok();
        let datum = match self.kind {
            ValueKind::Null => Some(Datum::Null),
            ValueKind::Bool => Some(Datum::Bool(self.number != 0)),
            ValueKind::Int => Some(Datum::Int(self.number)),
            ValueKind::Float => Some(Datum::Float(f64::from_bits(self.number as u64))),
            ValueKind::Decimal => text().map(Datum::Decimal),
            ValueKind::Text => text().map(Datum::Text),
            ValueKind::Bytes => Some(Datum::Bytes(data)),
            ValueKind::Date => text().map(Datum::Date),
            ValueKind::Time => text().map(Datum::Time),
            ValueKind::Timestamp => text().map(Datum::Timestamp),
            ValueKind::TimestampTz => text().map(Datum::TimestampTz),
            _ => None,
        };
        datum.unwrap_or(Datum::Other(self.kind, self.number, data))
    }

    /// The text of a text kind (text, decimal, date, time, timestamps), else `None`.
    pub fn as_str(&self) -> Option<&str> {
        match self.get() {
            Datum::Decimal(s)
            | Datum::Text(s)
            | Datum::Date(s)
            | Datum::Time(s)
            | Datum::Timestamp(s)
            | Datum::TimestampTz(s) => Some(s),
            _ => None,
        }
    }
}

/// Equal when kind, number and bytes are.
impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.get(), f)
    }
}

/// A row: one value per column.
pub type Row = RVec<Value>;

/// A column of a table.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct ColumnInfo {
    name: RString,
    type_name: RString,
    nullable: bool,
    primary_key: u32,
}

impl ColumnInfo {
    /// A column: its name and declared type as the database spells them, whether NULL is
    /// allowed, and its position in the primary key from 1 (0 when not part of it).
    pub fn new(name: &str, type_name: &str, nullable: bool, primary_key: u32) -> Self {
        ColumnInfo {
            name: name.into(),
            type_name: type_name.into(),
            nullable,
            primary_key,
        }
    }

    /// Its name as the database spells it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its declared type as the database spells it.
    pub fn type_name(&self) -> &str {
        &self.type_name
    }

    /// Whether NULL is allowed.
    pub fn nullable(&self) -> bool {
        self.nullable
    }

    /// Its position in the primary key, from 1; 0 when not part of it.
    pub fn primary_key(&self) -> u32 {
        self.primary_key
    }
}

/// What `describe` tells of a table.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    schema: ROption<RString>,
    name: RString,
    columns: RVec<ColumnInfo>,
}

impl TableInfo {
    /// A table: its schema (where the database has schemas), name, and columns in table
    /// order.
    pub fn new(schema: Option<&str>, name: &str, columns: Vec<ColumnInfo>) -> Self {
        TableInfo {
            schema: schema.map(RString::from).into(),
            name: name.into(),
            columns: columns.into(),
        }
    }

    /// Its schema, where the database has schemas.
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_ref().into_option().map(RString::as_str)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its columns in table order.
    pub fn columns(&self) -> &[ColumnInfo] {
        &self.columns
    }

    /// The primary key's columns, in key order.
    pub fn primary_key(&self) -> Vec<&str> {
        let mut key: Vec<&ColumnInfo> = self.columns.iter().filter(|c| c.primary_key > 0).collect();
        key.sort_by_key(|c| c.primary_key);
        key.into_iter().map(|c| c.name.as_str()).collect()
    }
}

open_enum! {
    /// The SQL dialect of a connection, as `sqlparser` names the families. Later sdk versions
    /// may add dialects; code matching on one has a `_` arm for those it does not know.
    pub struct Dialect {
        /// SQLite.
        Sqlite = 0,
        /// PostgreSQL.
        Postgres = 1,
        /// MySQL and MariaDB.
        MySql = 2,
        /// Microsoft SQL Server.
        MsSql = 3,
        /// H2.
        H2 = 4,
        /// HSQLDB.
        Hsqldb = 5,
        /// Another database, one weft has no dialect for (a JDBC URL it does not know):
        /// parse errors are only warnings.
        Generic = 6,
        /// Not known where the SQL is looked at: the key file of the deploying server has no
        /// entry for the connection, whose type does not say its database (a `jdbc`
        /// connection). Parse errors are only warnings, and the deploy warns once per
        /// connection; a run needs the entry.
        Unknown = 7,
    }
}

impl Dialect {
    /// Whether a syntax error in this dialect can reject a deploy: where weft has the
    /// database's own parser to confirm it (SQLite, PostgreSQL; `weft_sql_support`). Elsewhere
    /// what weft's parser cannot read is a warning, "not checked": a statement the database
    /// accepts is never refused.
    pub fn parse_errors_are_errors(self) -> bool {
        matches!(self, Dialect::Sqlite | Dialect::Postgres)
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
            Dialect::Unknown => "SQL of an unknown database",
            _ => "a dialect this plugin does not know",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_as_made() {
        let cases = [
            (Value::NULL, Datum::Null),
            (Value::bool(true), Datum::Bool(true)),
            (Value::int(i64::MIN), Datum::Int(i64::MIN)),
            (Value::float(-0.5), Datum::Float(-0.5)),
            (Value::decimal("1.10"), Datum::Decimal("1.10")),
            (Value::text("ä"), Datum::Text("ä")),
            (Value::bytes(vec![0, 255]), Datum::Bytes(&[0, 255])),
            (Value::date("2026-11-23"), Datum::Date("2026-11-23")),
            (Value::time("02:30:00"), Datum::Time("02:30:00")),
            (
                Value::timestamp("2026-11-23 02:30"),
                Datum::Timestamp("2026-11-23 02:30"),
            ),
            (
                Value::timestamp_tz("2026-11-23T02:30:00Z"),
                Datum::TimestampTz("2026-11-23T02:30:00Z"),
            ),
        ];
        for (value, datum) in &cases {
            assert_eq!(value.get(), *datum);
            assert!(value.kind().is_known());
        }
        assert_eq!(
            cases.iter().map(|(v, _)| v.kind()).collect::<Vec<_>>(),
            ValueKind::KNOWN
        );
        assert_eq!(Value::decimal("1.10").as_str(), Some("1.10"));
        assert_eq!(Value::int(1).as_str(), None);
        assert!(Value::null().is_null());
        assert_eq!(format!("{:?}", Value::text("x")), r#"Text("x")"#);
    }

    #[test]
    fn a_kind_this_sdk_does_not_know_is_kept_as_it_came() {
        let kind = ValueKind::from_code(200);
        assert!(!kind.is_known());
        assert_eq!(format!("{kind:?}"), "ValueKind(200)");
        let v = Value::from_parts(kind, 9, b"raw".to_vec());
        assert_eq!(v.get(), Datum::Other(kind, 9, b"raw"));
        assert_eq!(v.clone(), v);
        // Text that is not UTF-8 is not handed out as text.
        let bad = Value::from_parts(ValueKind::Text, 0, vec![0xff]);
        assert_eq!(bad.get(), Datum::Other(ValueKind::Text, 0, &[0xff]));
        assert_eq!(bad.as_str(), None);
    }

    #[test]
    fn a_dialect_this_sdk_does_not_know_has_a_name_and_no_special_rules() {
        let newer = Dialect::from_code(99);
        assert_eq!(newer.known_name(), None);
        assert_eq!(newer.name(), "a dialect this plugin does not know");
        assert!(!newer.parse_errors_are_errors() && !newer.has_on_conflict());
        assert_eq!(Dialect::of_jdbc_url("jdbc:h2:mem:x"), Dialect::H2);
        assert_eq!(format!("{:?}", Dialect::MsSql), "MsSql");
        assert_eq!(Dialect::KNOWN.len(), 8);
        assert_eq!(Dialect::Unknown.name(), "SQL of an unknown database");
        assert!(!Dialect::Unknown.parse_errors_are_errors());
    }
}
