//! Values between PostgreSQL and weft: a column read in PostgreSQL's binary format becomes a
//! [`Value`] by its type (the table in docs/postgresql.md), and a parameter goes to the server
//! as text, which the server reads as the type it expects (so `'2026-11-24'` binds to a `date`
//! and `12.50` to a `numeric` without the client knowing either), bytes as bytes.

use chrono::{Duration, NaiveDate, NaiveTime};
use postgres::types::{Format, FromSql, IsNull, ToSql, Type};
use std::error::Error;
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

fn date_text(days: i32) -> String {
    match days {
        i32::MAX => "infinity".to_owned(),
        i32::MIN => "-infinity".to_owned(),
        d => (epoch() + Duration::days(i64::from(d)))
            .format("%Y-%m-%d")
            .to_string(),
    }
}

fn fraction(micros: i64) -> String {
    match micros.rem_euclid(1_000_000) {
        0 => String::new(),
        f => format!(".{f:06}").trim_end_matches('0').to_owned(),
    }
}

fn time_text(micros: i64) -> String {
    let secs = micros.div_euclid(1_000_000);
    let t = NaiveTime::from_num_seconds_from_midnight_opt(secs as u32, 0).unwrap_or_default();
    format!("{}{}", t.format("%H:%M:%S"), fraction(micros))
}

/// Microseconds since 2000-01-01 as `YYYY-MM-DD{sep}HH:MM:SS[.ffffff]`.
fn timestamp_text(micros: i64, sep: &str) -> String {
    match micros {
        i64::MAX => return "infinity".to_owned(),
        i64::MIN => return "-infinity".to_owned(),
        _ => {}
    }
    let t = epoch().and_time(NaiveTime::MIN)
        + Duration::microseconds(micros.div_euclid(1_000_000) * 1_000_000);
    format!(
        "{}{sep}{}{}",
        t.format("%Y-%m-%d"),
        t.format("%H:%M:%S"),
        fraction(micros)
    )
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
    let digits: Vec<u16> = (0..ndigits)
        .map(|i| word(4 + i))
        .collect::<Result<_, _>>()?;
    // The integer part: the digit groups of weight >= 0.
    let mut int = String::new();
    for w in (0..=weight.max(-1)).rev() {
        let idx = (weight - w) as usize;
        let d = digits.get(idx).copied().unwrap_or(0);
        if int.is_empty() {
            if d != 0 || w == 0 {
                int = d.to_string();
            }
        } else {
            int.push_str(&format!("{d:04}"));
        }
    }
    if int.is_empty() {
        int.push('0');
    }
    let mut frac = String::new();
    let mut w = -1;
    while frac.len() < dscale {
        let idx = weight - w;
        let d = if idx >= 0 {
            digits.get(idx as usize).copied().unwrap_or(0)
        } else {
            0
        };
        frac.push_str(&format!("{d:04}"));
        w -= 1;
    }
    frac.truncate(dscale);
    let sign = if sign == 0x4000 { "-" } else { "" };
    Ok(if dscale > 0 {
        format!("{sign}{int}.{frac}")
    } else {
        format!("{sign}{int}")
    })
}

/// A parameter: sent as text (the server reads it as the type the statement needs), bytes
/// into a `bytea` as bytes.
#[derive(Debug)]
pub struct Param<'a>(pub &'a Value);

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
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

    postgres::types::to_sql_checked!();
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
