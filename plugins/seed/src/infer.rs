//! Column types as dbt infers a seed's: each column takes the first of integer, number,
//! date, timestamp, boolean and text that reads every value of it (agate's type tester, in
//! dbt's order); `""` and `null` (any case) are NULL in every type, and a column with no
//! value at all is integer, as dbt makes it. A value becomes the [`Value`] its type writes.

use weft_sdk::{Dialect, Value};

/// A column's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Whole numbers within 32 bits.
    Integer,
    /// Whole numbers beyond 32 bits.
    BigInt,
    /// Numbers with a fraction or an exponent.
    Number,
    /// `YYYY-MM-DD`.
    Date,
    /// `YYYY-MM-DD HH:MM:SS[.fraction]` (or with `T`), without a zone.
    Timestamp,
    /// `true` or `false`, any case.
    Boolean,
    /// Anything else.
    Text,
}

impl Kind {
    /// The type a table of `dialect` declares for it (`longest`: the longest text, in
    /// characters, for dialects whose text type needs a length).
    pub fn sql(self, dialect: Dialect, longest: usize) -> String {
        let pg = dialect == Dialect::Postgres;
        let lite = dialect == Dialect::Sqlite;
        match self {
            Kind::Integer if lite => "INTEGER".into(),
            Kind::Integer => "integer".into(),
            Kind::BigInt if lite => "INTEGER".into(),
            Kind::BigInt => "bigint".into(),
            Kind::Number if lite => "REAL".into(),
            Kind::Number => "double precision".into(),
            Kind::Date if lite => "DATE".into(),
            Kind::Date => "date".into(),
            Kind::Timestamp if lite => "TIMESTAMP".into(),
            Kind::Timestamp if pg => "timestamp without time zone".into(),
            Kind::Timestamp => "timestamp".into(),
            Kind::Boolean if lite => "BOOLEAN".into(),
            Kind::Boolean => "boolean".into(),
            Kind::Text if lite => "TEXT".into(),
            Kind::Text if pg => "text".into(),
            Kind::Text => format!("varchar({})", longest.max(1)),
        }
    }
}

/// One value as read: CSV fields are all text; JSON values keep their JSON kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'a> {
    /// A CSV field, or a JSON string.
    Text(&'a str),
    /// A JSON number, as written.
    Number(&'a str),
    /// A JSON boolean.
    Bool(bool),
    /// A JSON null (or a key a line leaves out).
    Null,
    /// A JSON object or array, as JSON text.
    Json(&'a str),
}

/// Whether a text is NULL: empty, or `null` in any case.
pub fn is_null(text: &str) -> bool {
    text.is_empty() || text.eq_ignore_ascii_case("null")
}

/// A whole number as dbt reads one: an optional sign and digits.
fn integer(t: &str) -> Option<i64> {
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// A number: digits with an optional fraction and exponent (no `inf` or `nan`).
fn number(t: &str) -> Option<f64> {
    let body = t.strip_prefix(['-', '+']).unwrap_or(t);
    if !body.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        || !body
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
    {
        return None;
    }
    t.parse::<f64>().ok().filter(|f| f.is_finite())
}

fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
}

/// `YYYY-MM-DD`, a real day.
pub fn date(t: &str) -> bool {
    let b = t.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(y), Some(m), Some(d)) = (digits(&b[..4]), digits(&b[5..7]), digits(&b[8..])) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// `YYYY-MM-DD HH:MM:SS` or with `T`, with an optional fraction of up to 6 digits.
pub fn timestamp(t: &str) -> bool {
    let b = t.as_bytes();
    if b.len() < 19 || !t.get(..10).is_some_and(date) || !matches!(b[10], b' ' | b'T') {
        return false;
    }
    let (Some(h), Some(mi), Some(s)) = (digits(&b[11..13]), digits(&b[14..16]), digits(&b[17..19]))
    else {
        return false;
    };
    if b[13] != b':' || b[16] != b':' || h > 23 || mi > 59 || s > 59 {
        return false;
    }
    match &b[19..] {
        [] => true,
        [b'.', frac @ ..] => (1..=6).contains(&frac.len()) && digits(frac).is_some(),
        _ => false,
    }
}

fn boolean(t: &str) -> Option<bool> {
    if t.eq_ignore_ascii_case("true") {
        Some(true)
    } else if t.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// What a column's values allow so far.
#[derive(Debug, Clone)]
pub struct Tester {
    /// The kinds still possible, in dbt's order: integer, number, date, timestamp, boolean.
    /// Text is always possible.
    possible: [bool; 5],
    big: bool,
    /// The longest text, in characters.
    pub longest: usize,
}

impl Default for Tester {
    fn default() -> Self {
        Tester {
            possible: [true; 5],
            big: false,
            longest: 0,
        }
    }
}

impl Tester {
    /// Takes one more value into account.
    pub fn see(&mut self, cell: Cell<'_>) {
        let [int, num, day, stamp, truth] = &mut self.possible;
        match cell {
            Cell::Null => {}
            Cell::Text(t) if is_null(t) => {}
            Cell::Text(t) => {
                self.longest = self.longest.max(t.chars().count());
                if *int {
                    match integer(t) {
                        Some(i) => self.big |= i32::try_from(i).is_err(),
                        None => *int = false,
                    }
                }
                *num = *num && number(t).is_some();
                *day = *day && date(t);
                *stamp = *stamp && timestamp(t);
                *truth = *truth && boolean(t).is_some();
            }
            Cell::Number(n) => {
                self.longest = self.longest.max(n.len());
                if *int {
                    match integer(n) {
                        Some(i) => self.big |= i32::try_from(i).is_err(),
                        None => *int = false,
                    }
                }
                *num = *num && number(n).is_some();
                (*day, *stamp, *truth) = (false, false, false);
            }
            Cell::Bool(_) => {
                self.longest = self.longest.max(5);
                (*int, *num, *day, *stamp) = (false, false, false, false);
            }
            Cell::Json(j) => {
                self.longest = self.longest.max(j.chars().count());
                self.possible = [false; 5];
            }
        }
    }

    /// The column's type: the first kind every value allowed.
    pub fn kind(&self) -> Kind {
        match self.possible.iter().position(|p| *p) {
            Some(0) if self.big => Kind::BigInt,
            Some(0) => Kind::Integer,
            Some(1) => Kind::Number,
            Some(2) => Kind::Date,
            Some(3) => Kind::Timestamp,
            Some(4) => Kind::Boolean,
            _ => Kind::Text,
        }
    }
}

/// A value of a column of type `kind` (`None`: declared, written as text for the database
/// to read); `None` when the cell is not of that kind (a declared column the database
/// reads, or a mistake the inference rules out).
pub fn value(cell: Cell<'_>, kind: Option<Kind>) -> Value {
    let text = match cell {
        Cell::Null => return Value::null(),
        Cell::Bool(b) => {
            return match kind {
                Some(Kind::Text) | None => Value::text(if b { "true" } else { "false" }),
                _ => Value::bool(b),
            };
        }
        Cell::Text(t) if is_null(t) => return Value::null(),
        Cell::Text(t) | Cell::Number(t) | Cell::Json(t) => t,
    };
    match kind {
        Some(Kind::Integer | Kind::BigInt) => {
            integer(text).map_or_else(|| Value::text(text), Value::int)
        }
        Some(Kind::Number) => number(text).map_or_else(|| Value::text(text), Value::float),
        Some(Kind::Date) => Value::date(text),
        Some(Kind::Timestamp) => Value::timestamp(text.replacen('T', " ", 1)),
        Some(Kind::Boolean) => boolean(text).map_or_else(|| Value::text(text), Value::bool),
        Some(Kind::Text) | None => Value::text(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind_of(values: &[&str]) -> Kind {
        let mut t = Tester::default();
        for v in values {
            t.see(Cell::Text(v));
        }
        t.kind()
    }

    #[test]
    fn kinds_are_tried_in_dbts_order() {
        assert_eq!(kind_of(&["1", "-2", "+3"]), Kind::Integer);
        assert_eq!(kind_of(&["1", "3000000000"]), Kind::BigInt);
        assert_eq!(kind_of(&["1", "2.5", "1e3"]), Kind::Number);
        assert_eq!(kind_of(&["2018-01-01", "2020-02-29"]), Kind::Date);
        assert_eq!(kind_of(&["2019-02-29"]), Kind::Text, "not a real day");
        assert_eq!(
            kind_of(&["2018-01-01 10:00:00", "2018-01-01T23:59:59.123456"]),
            Kind::Timestamp
        );
        assert_eq!(kind_of(&["2018-01-01", "2018-01-01 10:00:00"]), Kind::Text);
        assert_eq!(kind_of(&["true", "FALSE", "True"]), Kind::Boolean);
        assert_eq!(
            kind_of(&["yes", "no"]),
            Kind::Text,
            "dbt takes true and false only"
        );
        assert_eq!(kind_of(&["1", "x"]), Kind::Text);
        assert_eq!(kind_of(&["nan"]), Kind::Text);
        assert_eq!(kind_of(&["inf", "1"]), Kind::Text);
        // A character across byte 10 of a long text is no timestamp, and no panic.
        assert_eq!(kind_of(&["Müller-Lüdenscheid GmbH"]), Kind::Text);
    }

    #[test]
    fn nulls_fit_every_kind_and_an_empty_column_is_integer() {
        assert_eq!(kind_of(&["", "NULL", "7"]), Kind::Integer);
        assert_eq!(kind_of(&["", "null"]), Kind::Integer);
        assert_eq!(kind_of(&[]), Kind::Integer);
        assert_eq!(kind_of(&["", "2018-01-01"]), Kind::Date);
    }

    #[test]
    fn json_values_keep_their_kind() {
        let mut t = Tester::default();
        t.see(Cell::Number("1"));
        t.see(Cell::Null);
        assert_eq!(t.kind(), Kind::Integer);
        t.see(Cell::Number("1.5"));
        assert_eq!(t.kind(), Kind::Number);
        let mut b = Tester::default();
        b.see(Cell::Bool(true));
        assert_eq!(b.kind(), Kind::Boolean);
        b.see(Cell::Text("x"));
        assert_eq!(b.kind(), Kind::Text);
        let mut j = Tester::default();
        j.see(Cell::Json("{\"a\":1}"));
        assert_eq!(j.kind(), Kind::Text);
    }

    #[test]
    fn values_are_written_in_their_kind() {
        assert_eq!(value(Cell::Text("12"), Some(Kind::Integer)), Value::int(12));
        assert_eq!(value(Cell::Text(""), Some(Kind::Integer)), Value::null());
        assert_eq!(value(Cell::Text("Null"), Some(Kind::Text)), Value::null());
        assert_eq!(
            value(Cell::Text("2.5"), Some(Kind::Number)),
            Value::float(2.5)
        );
        assert_eq!(
            value(Cell::Text("2018-01-01T10:00:00"), Some(Kind::Timestamp)),
            Value::timestamp("2018-01-01 10:00:00")
        );
        assert_eq!(
            value(Cell::Text("TRUE"), Some(Kind::Boolean)),
            Value::bool(true)
        );
        assert_eq!(value(Cell::Text("12.50"), None), Value::text("12.50"));
        assert_eq!(
            value(Cell::Bool(false), Some(Kind::Text)),
            Value::text("false")
        );
    }

    #[test]
    fn types_by_dialect() {
        assert_eq!(
            Kind::Timestamp.sql(Dialect::Postgres, 0),
            "timestamp without time zone"
        );
        assert_eq!(Kind::Number.sql(Dialect::Sqlite, 0), "REAL");
        assert_eq!(Kind::Text.sql(Dialect::MySql, 12), "varchar(12)");
        assert_eq!(Kind::Text.sql(Dialect::MySql, 0), "varchar(1)");
    }
}
