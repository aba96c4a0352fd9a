//! The byte format between this crate and its Java class (`java/weft/jdbc/Bridge.java`).
//!
//! A batch of values crosses JNI as one `byte[]` instead of one call per value. Integers are
//! little-endian. A value is a tag byte and its payload: nothing for NULL, one byte for a
//! boolean, eight for an integer or a double (its bits), and for everything else a 4-byte
//! length and UTF-8 text (or raw bytes). Both sides must change together.

use weft_sdk::{ColumnInfo, Row, Rows, TableInfo};
use weft_sdk::{Datum, Value};

const NULL: u8 = 0;
const BOOL: u8 = 1;
const INT: u8 = 2;
const FLOAT: u8 = 3;
const DECIMAL: u8 = 4;
const TEXT: u8 = 5;
const BYTES: u8 = 6;
const DATE: u8 = 7;
const TIME: u8 = 8;
const TIMESTAMP: u8 = 9;
const TIMESTAMPTZ: u8 = 10;

/// Appends `v` to `out`. The tags are the sdk's value kind codes.
///
/// # Errors
///
/// A value of a kind this bridge does not know (from a newer host).
pub fn put_value(out: &mut Vec<u8>, v: &Value) -> Result<()> {
    let text = |out: &mut Vec<u8>, tag: u8, s: &[u8]| {
        out.push(tag);
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        out.extend_from_slice(s);
    };
    match v.get() {
        Datum::Null => out.push(NULL),
        Datum::Bool(b) => {
            out.push(BOOL);
            out.push(u8::from(b));
        }
        Datum::Int(i) => {
            out.push(INT);
            out.extend_from_slice(&i.to_le_bytes());
        }
        Datum::Float(f) => {
            out.push(FLOAT);
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Datum::Decimal(s) => text(out, DECIMAL, s.as_bytes()),
        Datum::Text(s) => text(out, TEXT, s.as_bytes()),
        Datum::Bytes(b) => text(out, BYTES, b),
        Datum::Date(s) => text(out, DATE, s.as_bytes()),
        Datum::Time(s) => text(out, TIME, s.as_bytes()),
        Datum::Timestamp(s) => text(out, TIMESTAMP, s.as_bytes()),
        Datum::TimestampTz(s) => text(out, TIMESTAMPTZ, s.as_bytes()),
        other => {
            return Err(format!(
                "the JDBC bridge cannot pass a value of kind {other:?} (a kind newer than the bridge)"
            ));
        }
    }
    Ok(())
}

/// Statement parameters: a count, then the values.
///
/// # Errors
///
/// See [`put_value`].
pub fn params(values: &[Value]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(4 + values.len() * 9);
    out.extend_from_slice(&(values.len() as u32).to_le_bytes());
    for v in values {
        put_value(&mut out, v)?;
    }
    Ok(out)
}

/// Rows to insert: the values one after another (the count travels beside them).
///
/// # Errors
///
/// See [`put_value`].
pub fn rows(rows: &[Row]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(rows.len() * rows.first().map_or(0, |r| r.len()) * 12);
    for r in rows {
        for v in r.iter() {
            put_value(&mut out, v)?;
        }
    }
    Ok(out)
}

/// A reader over a byte array from Java; every read checks its bounds, so that a format
/// mismatch is an error and never a panic.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// What goes wrong reading: the format does not match (a bug, reported as such).
pub type Result<T> = std::result::Result<T, String>;

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            return Err(format!(
                "the Java side's answer is cut short at byte {} of {}",
                self.pos,
                self.buf.len()
            ));
        };
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    /// A 4-byte count.
    pub fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn i64(&mut self) -> Result<i64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_le_bytes(a))
    }

    fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    /// A length-prefixed UTF-8 string.
    pub fn string(&mut self) -> Result<String> {
        self.text()
    }

    fn text(&mut self) -> Result<String> {
        Ok(String::from_utf8_lossy(self.bytes()?).into_owned())
    }

    /// One tagged value.
    pub fn value(&mut self) -> Result<Value> {
        let tag = self.u8()?;
        Ok(match tag {
            NULL => Value::NULL,
            BOOL => Value::bool(self.u8()? != 0),
            INT => Value::int(self.i64()?),
            FLOAT => Value::float(f64::from_bits(self.i64()? as u64)),
            DECIMAL => Value::decimal(self.text()?),
            TEXT => Value::text(self.text()?),
            BYTES => Value::bytes(self.bytes()?),
            DATE => Value::date(self.text()?),
            TIME => Value::time(self.text()?),
            TIMESTAMP => Value::timestamp(self.text()?),
            TIMESTAMPTZ => Value::timestamp_tz(self.text()?),
            other => return Err(format!("unknown value tag {other} from the Java side")),
        })
    }

    /// Whether everything was read.
    pub fn at_end(&self) -> bool {
        self.pos == self.buf.len()
    }
}

/// A query's header: the column names.
pub fn header(buf: &[u8]) -> Result<Vec<String>> {
    let mut r = Reader::new(buf);
    let n = r.u32()? as usize;
    let mut names = Vec::with_capacity(n.min(4096));
    for _ in 0..n {
        names.push(r.string()?);
        let _kind = r.u8()?;
    }
    Ok(names)
}

/// A batch of rows of `columns` values each.
pub fn batch(buf: &[u8], columns: usize) -> Result<Rows> {
    let mut r = Reader::new(buf);
    let n = r.u32()? as usize;
    let mut rows = Rows::with_capacity(n.min(1 << 20));
    for _ in 0..n {
        let mut row = Row::with_capacity(columns);
        for _ in 0..columns {
            row.push(r.value()?);
        }
        rows.push(row);
    }
    if !r.at_end() {
        return Err("the Java side's batch has bytes after its last row".to_owned());
    }
    Ok(rows)
}

/// A table's description.
pub fn table(buf: &[u8]) -> Result<TableInfo> {
    let mut r = Reader::new(buf);
    let schema = r.string()?;
    let name = r.string()?;
    let n = r.u32()? as usize;
    let mut columns = Vec::with_capacity(n.min(4096));
    for _ in 0..n {
        let name = r.string()?;
        let type_name = r.string()?;
        let nullable = r.u8()? != 0;
        let primary_key = r.u32()?;
        columns.push(ColumnInfo::new(&name, &type_name, nullable, primary_key));
    }
    Ok(TableInfo::new(
        Some(schema.as_str()).filter(|s| !s.is_empty()),
        &name,
        columns,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_kinds() -> Vec<Value> {
        vec![
            Value::NULL,
            Value::bool(true),
            Value::int(i64::MIN),
            Value::float(-0.1),
            Value::decimal("12345678901234567890.000000001"),
            Value::text("ä; 'x'"),
            Value::bytes(vec![0u8, 255, 7]),
            Value::date("2026-10-25"),
            Value::time("02:30:00.5"),
            Value::timestamp("2026-03-29 02:30:00"),
            Value::timestamp_tz("2026-10-25T02:30:00+01:00"),
        ]
    }

    #[test]
    fn values_read_back_as_written() {
        let values = all_kinds();
        let mut buf = (2u32).to_le_bytes().to_vec();
        buf.extend(
            rows(&[Row::from(values.clone()), Row::from(values.clone())]).expect("known kinds"),
        );
        let back = batch(&buf, values.len()).expect("decodes");
        assert_eq!(back.len(), 2);
        assert_eq!(back[1].as_slice(), values.as_slice());
        let p = params(&values).expect("known kinds");
        let mut r = Reader::new(&p);
        assert_eq!(r.u32().expect("decodes") as usize, values.len());
        for v in &values {
            assert_eq!(&r.value().expect("decodes"), v);
        }
        assert!(r.at_end());
    }

    #[test]
    fn a_cut_or_foreign_answer_is_an_error_not_a_panic() {
        let values = all_kinds();
        let mut buf = (1u32).to_le_bytes().to_vec();
        buf.extend(rows(&[Row::from(values.clone())]).expect("known kinds"));
        for cut in 0..buf.len() {
            assert!(batch(&buf[..cut], values.len()).is_err(), "cut at {cut}");
        }
        let e = batch(&[1, 0, 0, 0, 99], 1).expect_err("an error");
        assert!(e.contains("unknown value tag 99"), "{e}");
        assert!(header(&[5, 0, 0, 0]).is_err());
    }

    #[test]
    fn a_value_of_a_kind_newer_than_the_bridge_is_refused_by_name() {
        let newer = Value::from_parts(weft_sdk::ValueKind::from_code(42), 7, b"x".to_vec());
        let e = params(&[Value::int(1), newer]).expect_err("refused");
        assert!(e.contains("ValueKind(42)"), "{e}");
    }
}
