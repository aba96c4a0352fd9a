//! Values between PostgreSQL and weft: a column read in PostgreSQL's binary format becomes a
//! [`Value`] by its type (the table in docs/postgresql.md), and a parameter goes to the server
//! as text, which the server reads as the type it expects (so `'2026-11-24'` binds to a `date`
//! and `12.50` to a `numeric` without the client knowing either), bytes as bytes.

use chrono::{Duration, NaiveDate, NaiveTime};
use std::error::Error;
use tokio_postgres::types::{Format, FromSql, IsNull, ToSql, Type};
use weft_sdk::{Datum, Value};

type BoxError = Box<dyn Error + Sync + Send>;

/// A column's raw bytes, whatever its type (NULL is `None` around it).
pub struct Raw<'a>(pub &'a [u8]);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_ty: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        Ok(Raw(raw))
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

fn be<const N: usize>(raw: &[u8]) -> Result<[u8; N], String> {
    raw.try_into()
        .map_err(|_| format!("{} bytes where {N} were expected", raw.len()))
}

/// 2000-01-01, PostgreSQL's epoch.
fn epoch() -> NaiveDate {
    NaiveDate::from_ymd_opt(2000, 1, 1).unwrap_or_default()
}

/// A value of type `ty` from its binary form; `Err` names what is wrong (the caller adds the
/// column).
pub fn decode(ty: &Type, raw: &[u8]) -> Result<Value, String> {
    Ok(match *ty {
        Type::BOOL => Value::bool(raw.first().is_some_and(|b| *b != 0)),
        Type::INT2 => Value::int(i64::from(i16::from_be_bytes(be(raw)?))),
        Type::INT4 => Value::int(i64::from(i32::from_be_bytes(be(raw)?))),
        Type::INT8 => Value::int(i64::from_be_bytes(be(raw)?)),
        Type::OID => Value::int(i64::from(u32::from_be_bytes(be(raw)?))),
        Type::FLOAT4 => Value::float(f64::from(f32::from_be_bytes(be(raw)?))),
        Type::FLOAT8 => Value::float(f64::from_be_bytes(be(raw)?)),
        Type::NUMERIC => Value::decimal(numeric_text(raw)?),
        Type::TEXT
        | Type::VARCHAR
        | Type::BPCHAR
        | Type::NAME
        | Type::CHAR
        | Type::UNKNOWN
        | Type::JSON
        | Type::XML => Value::text(utf8(raw)?),
        Type::JSONB => Value::text(utf8(raw.get(1..).unwrap_or_default())?),
        Type::BYTEA => Value::bytes(raw),
        Type::UUID => Value::text(uuid_text(&be::<16>(raw)?)),
        Type::DATE => Value::date(date_text(i32::from_be_bytes(be(raw)?))),
        Type::TIME => Value::time(time_text(i64::from_be_bytes(be(raw)?))),
        Type::TIMESTAMP => Value::timestamp(timestamp_text(i64::from_be_bytes(be(raw)?), " ")),
        Type::TIMESTAMPTZ => {
            let t = timestamp_text(i64::from_be_bytes(be(raw)?), "T");
            Value::timestamp_tz(if t.ends_with("infinity") {
                t
            } else {
                t + "+00:00"
            })
        }
        _ => return Err(format!("weft does not read values of type {}", ty.name())),
    })
}

fn utf8(raw: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(raw).map_err(|e| format!("text that is not UTF-8: {e}"))
}

fn uuid_text(b: &[u8; 16]) -> String {
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// `YYYY-MM-DD` of `d` (written directly: chrono's `format` reads its pattern every call,
/// which a million dates pay for).
fn ymd(d: NaiveDate, out: &mut String) {
    use chrono::Datelike as _;
    let year = d.year();
    if (0..=9999).contains(&year) {
        push4(out, year as u16);
        out.push('-');
        push2(out, d.month());
        out.push('-');
        push2(out, d.day());
    } else {
        use std::fmt::Write as _;
        let _ = write!(out, "{year:04}-{:02}-{:02}", d.month(), d.day());
    }
}

/// Two decimal digits of `d` (0 to 99).
fn push2(s: &mut String, d: u32) {
    s.push(char::from(b'0' + (d / 10 % 10) as u8));
    s.push(char::from(b'0' + (d % 10) as u8));
}

fn date_text(days: i32) -> String {
    match days {
        i32::MAX => "infinity".to_owned(),
        i32::MIN => "-infinity".to_owned(),
        d => {
            let mut s = String::with_capacity(10);
            ymd(epoch() + Duration::days(i64::from(d)), &mut s);
            s
        }
    }
}

fn fraction(micros: i64) -> String {
    match micros.rem_euclid(1_000_000) {
        0 => String::new(),
        f => format!(".{f:06}").trim_end_matches('0').to_owned(),
    }
}

/// `HH:MM:SS[.ffffff]` of a time of day in microseconds.
fn hms(micros: i64, out: &mut String) {
    let secs = micros.div_euclid(1_000_000).rem_euclid(86_400) as u32;
    push2(out, secs / 3600);
    out.push(':');
    push2(out, secs / 60 % 60);
    out.push(':');
    push2(out, secs % 60);
    if micros.rem_euclid(1_000_000) != 0 {
        out.push_str(&fraction(micros));
    }
}

fn time_text(micros: i64) -> String {
    let mut s = String::with_capacity(15);
    hms(micros, &mut s);
    s
}

/// Microseconds since 2000-01-01 as `YYYY-MM-DD{sep}HH:MM:SS[.ffffff]`.
fn timestamp_text(micros: i64, sep: &str) -> String {
    match micros {
        i64::MAX => return "infinity".to_owned(),
        i64::MIN => return "-infinity".to_owned(),
        _ => {}
    }
    let day = micros.div_euclid(86_400_000_000);
    let mut s = String::with_capacity(26);
    ymd(epoch() + Duration::days(day), &mut s);
    s.push_str(sep);
    hms(micros.rem_euclid(86_400_000_000), &mut s);
    s
}

/// Four decimal digits of `d` (0 to 9,999), with leading zeros.
fn push4(s: &mut String, d: u16) {
    for div in [1000, 100, 10, 1] {
        s.push(char::from(b'0' + (d / div % 10) as u8));
    }
}

/// The text of a `numeric` in PostgreSQL's binary form: `ndigits`, `weight`, `sign` and
/// `dscale` (16 bits each), then `ndigits` base-10,000 digits.
pub fn numeric_text(raw: &[u8]) -> Result<String, String> {
    let word = |i: usize| -> Result<u16, String> {
        raw.get(i * 2..i * 2 + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "a numeric cut short".to_owned())
    };
    let ndigits = usize::from(word(0)?);
    let weight = i32::from(word(1)? as i16);
    let sign = word(2)?;
    let dscale = usize::from(word(3)?);
    match sign {
        0xC000 => return Ok("NaN".to_owned()),
        0xD000 => return Ok("Infinity".to_owned()),
        0xF000 => return Ok("-Infinity".to_owned()),
        _ => {}
    }
    if raw.len() < 8 + ndigits * 2 {
        return Err("a numeric cut short".to_owned());
    }
    // The digit group of weight `w` (0 beyond the groups sent).
    let group = |w: i32| -> u16 {
        let idx = weight - w;
        if idx >= 0 && (idx as usize) < ndigits {
            word(4 + idx as usize).unwrap_or(0)
        } else {
            0
        }
    };
    let mut out = String::with_capacity(4 * (weight.max(0) as usize + 1) + dscale + 2);
    if sign == 0x4000 {
        out.push('-');
    }
    // The integer part: the groups of weight >= 0, the first without leading zeros.
    let mut started = false;
    for w in (0..=weight.max(0)).rev() {
        let d = group(w);
        if started {
            push4(&mut out, d);
        } else if d != 0 || w == 0 {
            started = true;
            let mut digits = [0u8; 4];
            let mut n = 0;
            let mut v = d;
            loop {
                digits[n] = b'0' + (v % 10) as u8;
                n += 1;
                v /= 10;
                if v == 0 {
                    break;
                }
            }
            out.extend(digits[..n].iter().rev().map(|b| char::from(*b)));
        }
    }
    if dscale > 0 {
        out.push('.');
        let start = out.len();
        let mut w = -1;
        while out.len() - start < dscale {
            push4(&mut out, group(w));
            w -= 1;
        }
        out.truncate(start + dscale);
    }
    Ok(out)
}

/// A parameter: sent as text (the server reads it as the type the statement needs), bytes
/// into a `bytea` as bytes.
#[derive(Debug)]
pub struct Param<'a>(pub &'a Value);

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut tokio_postgres::types::private::BytesMut,
    ) -> Result<IsNull, BoxError> {
        let text = match self.0.get() {
            Datum::Null => return Ok(IsNull::Yes),
            Datum::Bool(b) => if b { "true" } else { "false" }.to_owned(),
            Datum::Int(i) => i.to_string(),
            Datum::Float(f) if f.is_nan() => "NaN".to_owned(),
            Datum::Float(f) if f.is_infinite() => {
                if f > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
            }
            Datum::Float(f) => format!("{f:?}"),
            Datum::Bytes(b) if *ty == Type::BYTEA => {
                out.extend_from_slice(b);
                return Ok(IsNull::No);
            }
            Datum::Bytes(b) => format!(
                "\\x{}",
                b.iter().map(|x| format!("{x:02x}")).collect::<String>()
            ),
            Datum::Decimal(s)
            | Datum::Text(s)
            | Datum::Date(s)
            | Datum::Time(s)
            | Datum::Timestamp(s)
            | Datum::TimestampTz(s) => {
                if *ty == Type::BYTEA {
                    out.extend_from_slice(s.as_bytes());
                    return Ok(IsNull::No);
                }
                s.to_owned()
            }
            other => return Err(format!("a value of kind {other:?} cannot be sent").into()),
        };
        out.extend_from_slice(text.as_bytes());
        Ok(IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn encode_format(&self, ty: &Type) -> Format {
        if *ty == Type::BYTEA {
            Format::Binary
        } else {
            Format::Text
        }
    }

    tokio_postgres::types::to_sql_checked!();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric(ndigits: u16, weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut v = Vec::new();
        for w in [ndigits, weight as u16, sign, dscale] {
            v.extend(w.to_be_bytes());
        }
        for d in digits {
            v.extend(d.to_be_bytes());
        }
        v
    }

    #[test]
    fn numerics_read_as_their_text() {
        // 12345.67: digits 1, 2345, 6700; weight 1; dscale 2.
        assert_eq!(
            numeric_text(&numeric(3, 1, 0, 2, &[1, 2345, 6700])).expect("n"),
            "12345.67"
        );
        assert_eq!(
            numeric_text(&numeric(1, -1, 0x4000, 4, &[50])).expect("n"),
            "-0.0050"
        );
        assert_eq!(numeric_text(&numeric(0, 0, 0, 0, &[])).expect("n"), "0");
        assert_eq!(
            numeric_text(&numeric(1, 2, 0, 0, &[7])).expect("n"),
            "700000000"
        );
        assert_eq!(
            numeric_text(&numeric(0, 0, 0xC000, 0, &[])).expect("n"),
            "NaN"
        );
        assert!(numeric_text(&[0, 1]).is_err());
    }

    #[test]
    fn dates_and_times_read_as_iso_text() {
        assert_eq!(date_text(0), "2000-01-01");
        assert_eq!(date_text(-1), "1999-12-31");
        assert_eq!(date_text(i32::MAX), "infinity");
        assert_eq!(time_text(3_600_000_000 + 500_000), "01:00:00.5");
        assert_eq!(
            timestamp_text(86_400_000_000 + 1, " "),
            "2000-01-02 00:00:00.000001"
        );
        assert_eq!(timestamp_text(-1_000_000, " "), "1999-12-31 23:59:59");
        assert_eq!(
            uuid_text(&[0x12; 16]),
            "12121212-1212-1212-1212-121212121212"
        );
    }
}

/// Whether values of type `ty` can be written in binary COPY ([`encode`]); a table with a
/// column of another type is loaded with INSERT instead.
pub fn copyable(ty: &Type) -> bool {
    matches!(
        *ty,
        Type::BOOL
            | Type::INT2
            | Type::INT4
            | Type::INT8
            | Type::FLOAT4
            | Type::FLOAT8
            | Type::NUMERIC
            | Type::TEXT
            | Type::VARCHAR
            | Type::BPCHAR
            | Type::NAME
            | Type::JSON
            | Type::XML
            | Type::JSONB
            | Type::BYTEA
            | Type::UUID
            | Type::DATE
            | Type::TIME
            | Type::TIMESTAMP
            | Type::TIMESTAMPTZ
    )
}

/// The text of a value for a text column: text kinds as they are, numbers and booleans as
/// they print.
/// A value's text: borrowed for the kinds that are text, written for numbers and booleans.
fn as_text(v: &Value) -> Option<std::borrow::Cow<'_, str>> {
    use std::borrow::Cow;
    Some(match v.get() {
        Datum::Bool(b) => Cow::Owned(b.to_string()),
        Datum::Int(i) => Cow::Owned(i.to_string()),
        Datum::Float(f) => Cow::Owned(f.to_string()),
        Datum::Decimal(s)
        | Datum::Text(s)
        | Datum::Date(s)
        | Datum::Time(s)
        | Datum::Timestamp(s)
        | Datum::TimestampTz(s) => Cow::Borrowed(s),
        _ => return None,
    })
}

fn parse<T: std::str::FromStr>(v: &Value, what: &str) -> Result<T, String> {
    let text = as_text(v).ok_or_else(|| format!("{v:?} is no {what}"))?;
    text.trim()
        .parse()
        .map_err(|_| format!("`{text}` is no {what}"))
}

/// The session's `TimeZone`, in which PostgreSQL reads a `timestamptz` text without an
/// offset, and so does [`encode`].
#[derive(Debug, Clone, PartialEq)]
pub enum SessionZone {
    /// An IANA zone (or UTC).
    Known(chrono_tz::Tz),
    /// A setting weft cannot read as one (a POSIX zone string): a text without an offset
    /// is refused, naming it.
    Unknown(String),
}

impl SessionZone {
    /// The zone of a `TimeZone` setting.
    pub fn of(setting: &str) -> Self {
        setting.parse().map_or_else(
            |_| SessionZone::Unknown(setting.to_owned()),
            SessionZone::Known,
        )
    }
}

/// Writes `v` in the binary form of `ty` (one of [`copyable`]), without its length; `Err` says
/// why it does not fit (the caller adds the row and column). A `timestamptz` text without an
/// offset is read in `zone`.
pub fn encode(v: &Value, ty: &Type, zone: &SessionZone, out: &mut Vec<u8>) -> Result<(), String> {
    match *ty {
        Type::BOOL => {
            let b = match v.get() {
                Datum::Bool(b) => b,
                Datum::Int(i) => i != 0,
                _ => match as_text(v).as_deref().map(str::trim) {
                    Some("t" | "true" | "TRUE" | "True" | "1" | "yes" | "on") => true,
                    Some("f" | "false" | "FALSE" | "False" | "0" | "no" | "off") => false,
                    _ => return Err(format!("{v:?} is no boolean")),
                },
            };
            out.push(u8::from(b));
        }
        Type::INT2 | Type::INT4 | Type::INT8 => {
            let i: i64 = match v.get() {
                Datum::Int(i) => i,
                Datum::Bool(b) => i64::from(b),
                Datum::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => f as i64,
                _ => parse(v, "whole number")?,
            };
            let range = || format!("{i} is out of range for {}", ty.name());
            match *ty {
                Type::INT2 => out.extend(i16::try_from(i).map_err(|_| range())?.to_be_bytes()),
                Type::INT4 => out.extend(i32::try_from(i).map_err(|_| range())?.to_be_bytes()),
                _ => out.extend(i.to_be_bytes()),
            }
        }
        Type::FLOAT4 | Type::FLOAT8 => {
            let f: f64 = match v.get() {
                Datum::Float(f) => f,
                Datum::Int(i) => i as f64,
                _ => parse(v, "number")?,
            };
            if *ty == Type::FLOAT4 {
                out.extend((f as f32).to_be_bytes());
            } else {
                out.extend(f.to_be_bytes());
            }
        }
        Type::NUMERIC => {
            let text = match v.get() {
                Datum::Float(f) if f.is_nan() => std::borrow::Cow::Borrowed("NaN"),
                _ => as_text(v).ok_or_else(|| format!("{v:?} is no number"))?,
            };
            numeric_binary(text.trim(), out)?;
        }
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::JSON | Type::XML => {
            match v.get() {
                Datum::Bytes(b) => out.extend_from_slice(utf8(b)?.as_bytes()),
                _ => out.extend_from_slice(
                    as_text(v)
                        .ok_or_else(|| format!("{v:?} is no text"))?
                        .as_bytes(),
                ),
            }
        }
        Type::JSONB => {
            out.push(1);
            out.extend_from_slice(
                as_text(v)
                    .ok_or_else(|| format!("{v:?} is no JSON text"))?
                    .as_bytes(),
            );
        }
        Type::BYTEA => match v.get() {
            Datum::Bytes(b) => out.extend_from_slice(b),
            _ => out.extend_from_slice(
                as_text(v)
                    .ok_or_else(|| format!("{v:?} is no bytes"))?
                    .as_bytes(),
            ),
        },
        Type::UUID => {
            let text = as_text(v).ok_or_else(|| format!("{v:?} is no uuid"))?;
            let hex: String = text.chars().filter(|c| *c != '-').collect();
            if hex.len() != 32 {
                return Err(format!("`{text}` is no uuid"));
            }
            for i in 0..16 {
                let b = u8::from_str_radix(&hex[i * 2..i * 2 + 2], 16)
                    .map_err(|_| format!("`{text}` is no uuid"))?;
                out.push(b);
            }
        }
        Type::DATE => {
            let text = as_text(v).ok_or_else(|| format!("{v:?} is no date"))?;
            let days = match text.trim() {
                "infinity" => i32::MAX,
                "-infinity" => i32::MIN,
                t => {
                    let d = parse_ymd(t.get(..10).unwrap_or(t))
                        .ok_or_else(|| format!("`{text}` is no date (YYYY-MM-DD)"))?;
                    (d - epoch()).num_days() as i32
                }
            };
            out.extend(days.to_be_bytes());
        }
        Type::TIME => {
            let text = as_text(v).ok_or_else(|| format!("{v:?} is no time"))?;
            let t = NaiveTime::parse_from_str(text.trim(), "%H:%M:%S%.f")
                .map_err(|_| format!("`{text}` is no time (HH:MM:SS)"))?;
            let micros = (t - NaiveTime::MIN).num_microseconds().unwrap_or(0);
            out.extend(micros.to_be_bytes());
        }
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            let text = as_text(v).ok_or_else(|| format!("{v:?} is no timestamp"))?;
            let micros = match text.trim() {
                "infinity" => i64::MAX,
                "-infinity" => i64::MIN,
                t if *ty == Type::TIMESTAMPTZ => timestamptz_micros(t, zone)?,
                t => timestamp_micros(t)
                    .ok_or_else(|| format!("`{text}` is no timestamp (YYYY-MM-DD HH:MM:SS)"))?,
            };
            out.extend(micros.to_be_bytes());
        }
        _ => return Err(format!("weft does not write {} in binary", ty.name())),
    }
    Ok(())
}

/// `YYYY-MM-DD` read directly (chrono's `parse_from_str` reads its pattern every call).
fn parse_ymd(t: &str) -> Option<NaiveDate> {
    let b = t.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| t.get(r)?.parse::<u32>().ok();
    NaiveDate::from_ymd_opt(num(0..4)? as i32, num(5..7)?, num(8..10)?)
}

/// Microseconds since 2000-01-01 UTC of a `timestamptz` text: with an offset (`Z`, `+01`,
/// `+0130`, `+01:30`, as PostgreSQL writes them), that instant; without one, the wall-clock
/// time in `zone`, as PostgreSQL reads it (in a clock change's repeated hour the later
/// instant, in a skipped hour the offset before the change).
fn timestamptz_micros(text: &str, zone: &SessionZone) -> Result<i64, String> {
    let start = epoch().and_time(NaiveTime::MIN);
    let bad =
        || format!("`{text}` is no timestamp (YYYY-MM-DD HH:MM:SS, with or without an offset)");
    if let Some(rfc) = with_offset(text) {
        let t = chrono::DateTime::parse_from_rfc3339(&rfc).map_err(|_| bad())?;
        return (t.naive_utc() - start).num_microseconds().ok_or_else(bad);
    }
    let naive = naive_timestamp(text).ok_or_else(bad)?;
    let utc = match zone {
        SessionZone::Known(tz) => {
            use chrono::{LocalResult, Offset, TimeZone};
            match tz.from_local_datetime(&naive) {
                LocalResult::Single(t) => t.naive_utc(),
                LocalResult::Ambiguous(_, later) => later.naive_utc(),
                LocalResult::None => {
                    let before = tz
                        .offset_from_utc_datetime(&(naive - chrono::Duration::hours(3)))
                        .fix();
                    naive - before
                }
            }
        }
        SessionZone::Unknown(name) => {
            return Err(format!(
                "`{text}` has no UTC offset, and the session's TimeZone `{name}` is no zone weft knows to read it in; write the offset, or set TimeZone to an IANA zone"
            ));
        }
    };
    (utc - start).num_microseconds().ok_or_else(bad)
}

/// `text` in RFC 3339 form when it ends in an offset (`Z`, `+HH`, `+HHMM`, `+HH:MM`), with
/// `T` between date and time; `None` when it has none.
fn with_offset(text: &str) -> Option<String> {
    let t = text.replacen(' ', "T", 1);
    if t.len() < 11 {
        return None;
    }
    if t.ends_with('Z') || t.ends_with('z') {
        return Some(t);
    }
    // The offset's sign stands after the time (past the date's own dashes).
    let at = t[10..].rfind(['+', '-']).map(|i| i + 10)?;
    let digits: String = t[at + 1..].chars().filter(|c| *c != ':').collect();
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m) = match digits.len() {
        2 => (&digits[..2], "00"),
        4 => (&digits[..2], &digits[2..]),
        _ => return None,
    };
    Some(format!("{}{}{h}:{m}", &t[..at], &t[at..=at]))
}

/// Microseconds since 2000-01-01 of a `timestamp` text (wall-clock time, no zone).
fn timestamp_micros(text: &str) -> Option<i64> {
    let start = epoch().and_time(NaiveTime::MIN);
    (naive_timestamp(text)? - start).num_microseconds()
}

/// A timestamp's text without an offset: `YYYY-MM-DD HH:MM:SS[.f]`, with `T`, or a date.
fn naive_timestamp(text: &str) -> Option<chrono::NaiveDateTime> {
    ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d"]
        .iter()
        .find_map(|f| {
            chrono::NaiveDateTime::parse_from_str(text, f)
                .ok()
                .or_else(|| {
                    NaiveDate::parse_from_str(text, f)
                        .ok()
                        .map(|d| d.and_time(NaiveTime::MIN))
                })
        })
}

/// A decimal's text (`-12.50`, `NaN`, `Infinity`) in `numeric`'s binary form.
pub fn numeric_binary(text: &str, out: &mut Vec<u8>) -> Result<(), String> {
    let word = |out: &mut Vec<u8>, w: u16| out.extend(w.to_be_bytes());
    let special = match text {
        "NaN" | "nan" => Some(0xC000),
        "Infinity" | "inf" | "+Infinity" => Some(0xD000),
        "-Infinity" | "-inf" => Some(0xF000),
        _ => None,
    };
    if let Some(sign) = special {
        for w in [0, 0, sign, 0] {
            word(out, w);
        }
        return Ok(());
    }
    let bad = || format!("`{text}` is no number");
    let (negative, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let int = int.trim_start_matches('0').as_bytes();
    let frac = frac.as_bytes();
    let dscale = u16::try_from(frac.len()).map_err(|_| bad())?;
    // Base-10,000 groups of the digits, the integer part padded on the left to a multiple of
    // four and the fraction on the right; leading and trailing zero groups are not sent.
    let int_pad = (4 - int.len() % 4) % 4;
    let int_width = int.len() + int_pad;
    let groups = (int_width + frac.len()).div_ceil(4);
    let digit = |at: usize| -> u16 {
        let b = if at < int_pad {
            b'0'
        } else if at < int_width {
            int[at - int_pad]
        } else {
            frac.get(at - int_width).copied().unwrap_or(b'0')
        };
        u16::from(b - b'0')
    };
    let header = out.len();
    out.extend_from_slice(&[0; 8]);
    let mut weight = (int_width / 4) as i32 - 1;
    let (mut sent, mut kept, mut kept_len) = (0usize, 0usize, out.len());
    for g in 0..groups {
        let value = (0..4).fold(0u16, |acc, k| acc * 10 + digit(g * 4 + k));
        if sent == 0 && value == 0 {
            weight -= 1;
            continue;
        }
        out.extend_from_slice(&value.to_be_bytes());
        sent += 1;
        if value != 0 {
            (kept, kept_len) = (sent, out.len());
        }
    }
    out.truncate(kept_len);
    if kept == 0 {
        weight = 0;
    }
    let ndigits = u16::try_from(kept).map_err(|_| bad())?;
    let weight = i16::try_from(weight).map_err(|_| bad())?;
    let sign: u16 = if negative && kept > 0 { 0x4000 } else { 0 };
    for (i, w) in [ndigits, weight as u16, sign, dscale]
        .into_iter()
        .enumerate()
    {
        out[header + 2 * i..header + 2 * i + 2].copy_from_slice(&w.to_be_bytes());
    }
    Ok(())
}

#[cfg(test)]
mod encode_tests {
    use super::*;

    #[test]
    fn numerics_go_to_binary_and_back() {
        for text in [
            "12345.67",
            "-0.0050",
            "0",
            "700000000",
            "0.5",
            "-12.50",
            "1",
            "99999999.9999",
            "0.0001",
            "123456789012.3456",
            "NaN",
            "Infinity",
            "-Infinity",
            "10000",
            "0.00",
        ] {
            let mut raw = Vec::new();
            numeric_binary(text, &mut raw).expect(text);
            assert_eq!(numeric_text(&raw).expect(text), text, "{text}");
        }
        assert_eq!(
            {
                let mut raw = Vec::new();
                numeric_binary("+007.10", &mut raw).expect("n");
                numeric_text(&raw).expect("n")
            },
            "7.10"
        );
        for bad in ["", ".", "1e5", "abc", "1.2.3", "--1"] {
            assert!(numeric_binary(bad, &mut Vec::new()).is_err(), "{bad}");
        }
    }

    #[test]
    fn timestamptz_texts_are_read_as_postgresql_reads_them() {
        let berlin = SessionZone::of("Europe/Berlin");
        let utc_of = |text: &str, zone: &SessionZone| {
            timestamptz_micros(text, zone).map(|m| {
                (epoch().and_time(NaiveTime::MIN) + chrono::Duration::microseconds(m))
                    .format("%Y-%m-%d %H:%M:%S")
                    .to_string()
            })
        };
        // With an offset, in every form PostgreSQL writes, the instant it names.
        for text in [
            "2026-07-01 12:00:00+02",
            "2026-07-01T12:00:00+0200",
            "2026-07-01 12:00:00+02:00",
            "2026-07-01 10:00:00Z",
            "2026-07-01 05:00:00-05",
        ] {
            assert_eq!(
                utc_of(text, &berlin),
                Ok("2026-07-01 10:00:00".to_owned()),
                "{text}"
            );
        }
        // Without one, the wall-clock time in the session's zone (the answers of
        // PostgreSQL 15 for `SET TimeZone = 'Europe/Berlin'`): summer, the repeated autumn
        // hour (the later instant) and the skipped spring hour (the offset before).
        for (text, utc) in [
            ("2026-07-01 12:00:00", "2026-07-01 10:00:00"),
            ("2026-10-25 02:30:00", "2026-10-25 01:30:00"),
            ("2026-03-29 02:30:00", "2026-03-29 01:30:00"),
            ("2026-01-05", "2026-01-04 23:00:00"),
        ] {
            assert_eq!(utc_of(text, &berlin), Ok(utc.to_owned()), "{text}");
        }
        assert_eq!(
            utc_of("2026-07-01 12:00:00", &SessionZone::of("UTC")),
            Ok("2026-07-01 12:00:00".to_owned())
        );
        let posix = SessionZone::of("<+03>-03");
        assert!(
            utc_of("2026-07-01 12:00:00", &posix)
                .expect_err("no zone")
                .contains("TimeZone `<+03>-03`")
        );
        assert_eq!(
            utc_of("2026-07-01 12:00:00+03", &posix),
            Ok("2026-07-01 09:00:00".to_owned()),
            "an offset needs no zone"
        );
        for bad in ["2026-07-01 12:00:00+2", "yesterday", "2026-13-01 00:00:00"] {
            assert!(utc_of(bad, &berlin).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_go_to_binary_by_the_column_type_or_say_why_not() {
        let enc = |v: Value, ty: Type| {
            let mut out = Vec::new();
            encode(&v, &ty, &SessionZone::Known(chrono_tz::UTC), &mut out).map(|()| out)
        };
        assert_eq!(
            enc(Value::text("42"), Type::INT4),
            Ok(42i32.to_be_bytes().to_vec())
        );
        assert!(
            enc(Value::int(1 << 40), Type::INT4)
                .expect_err("range")
                .contains("out of range")
        );
        assert!(
            enc(Value::text("x"), Type::INT8)
                .expect_err("no")
                .contains("`x`")
        );
        assert_eq!(enc(Value::int(1), Type::BOOL), Ok(vec![1]));
        let d = enc(Value::date("2000-01-02"), Type::DATE).expect("date");
        assert_eq!(decode(&Type::DATE, &d), Ok(Value::date("2000-01-02")));
        let t = enc(Value::timestamp("2026-03-29 02:30:00.25"), Type::TIMESTAMP).expect("ts");
        assert_eq!(
            decode(&Type::TIMESTAMP, &t),
            Ok(Value::timestamp("2026-03-29 02:30:00.25"))
        );
        let tz = enc(
            Value::timestamp_tz("2026-10-25T02:30:00+01:00"),
            Type::TIMESTAMPTZ,
        )
        .expect("tz");
        assert_eq!(
            decode(&Type::TIMESTAMPTZ, &tz),
            Ok(Value::timestamp_tz("2026-10-25T01:30:00+00:00"))
        );
        let u = enc(
            Value::text("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
            Type::UUID,
        )
        .expect("uuid");
        assert_eq!(
            decode(&Type::UUID, &u),
            Ok(Value::text("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"))
        );
        assert_eq!(enc(Value::text("{}"), Type::JSONB), Ok(b"\x01{}".to_vec()));
    }

    proptest::proptest! {
        #[test]
        fn any_decimal_goes_to_binary_and_back_in_its_plain_form(
            negative in proptest::bool::ANY,
            int in "[0-9]{0,40}",
            frac in "[0-9]{0,30}",
        ) {
            proptest::prop_assume!(!(int.is_empty() && frac.is_empty()));
            let text = format!("{}{int}{}{frac}", if negative { "-" } else { "" }, if frac.is_empty() { "" } else { "." });
            let mut raw = Vec::new();
            numeric_binary(&text, &mut raw).expect("a number");
            let whole = int.trim_start_matches('0');
            let zero = whole.is_empty() && frac.bytes().all(|b| b == b'0');
            let plain = format!(
                "{}{}{}{frac}",
                if negative && !zero { "-" } else { "" },
                if whole.is_empty() { "0" } else { whole },
                if frac.is_empty() { "" } else { "." },
            );
            proptest::prop_assert_eq!(numeric_text(&raw), Ok(plain));
        }

        #[test]
        fn any_date_goes_to_days_and_back(days in -700_000i32..2_900_000) {
            let text = date_text(days);
            let mut raw = Vec::new();
            encode(&Value::date(text.as_str()), &Type::DATE, &SessionZone::Known(chrono_tz::UTC), &mut raw).expect(&text);
            proptest::prop_assert_eq!(i32::from_be_bytes(be(&raw).expect("4 bytes")), days, "{}", text);
        }
    }
}
