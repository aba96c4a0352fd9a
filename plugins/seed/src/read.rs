//! A seed's data read: CSV (a header line of column names, then records; RFC 4180 quoting)
//! or JSON lines (an object a line, its keys the columns in order of first appearance).
//! The data is read twice: once to learn the columns and their types ([`survey`]), once to
//! hand the rows on ([`rows`]); every mistake names its line and the byte it starts at.

use crate::infer::{Cell, Kind, Tester, value};
use weft_sdk::{Row, Value};

/// The most columns a seed may have.
pub const MAX_COLUMNS: usize = 1600;

/// How a seed's data is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Comma-separated values (or another one-byte delimiter), with a header line.
    Csv(u8),
    /// One JSON object a line.
    JsonLines,
}

/// A mistake in the data, at its line (from 1) and byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mistake {
    /// What is wrong.
    pub message: String,
    /// The line it is on.
    pub line: u64,
    /// The byte it starts at.
    pub offset: u64,
}

/// What [`survey`] learnt: the columns, each with what its values allow, and the rows.
#[derive(Debug, Clone)]
pub struct Survey {
    /// The columns, in order.
    pub columns: Vec<String>,
    /// What each column's values allow.
    pub testers: Vec<Tester>,
    /// How many rows.
    pub rows: u64,
}

fn csv_reader(data: &str, delimiter: u8) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .has_headers(false)
        .flexible(false)
        .from_reader(data.as_bytes())
}

fn csv_mistake(e: &csv::Error) -> Mistake {
    let (line, offset) = e.position().map_or((0, 0), |p| (p.line(), p.byte()));
    let message = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("this record has {len} fields; the header has {expected_len}"),
        _ => e.to_string(),
    };
    Mistake {
        message,
        line,
        offset,
    }
}

/// A byte record's fields as text (the data is UTF-8, and fields end at ASCII bytes).
fn field(record: &csv::ByteRecord, i: usize) -> &str {
    std::str::from_utf8(record.get(i).unwrap_or_default()).unwrap_or_default()
}

/// Reads `data` once: its columns and what their values allow.
///
/// # Errors
///
/// The first mistake: no header, an empty or repeated column name, a record with another
/// number of fields, a line that is not a JSON object, more than [`MAX_COLUMNS`] columns.
pub fn survey(data: &str, format: Format) -> Result<Survey, Mistake> {
    let (data, skipped) = without_bom(data);
    match format {
        Format::Csv(d) => survey_csv(data, d),
        Format::JsonLines => survey_jsonl(data),
    }
    .map_err(|mut m| {
        m.offset += skipped;
        m
    })
}

/// The data without a leading byte order mark (a spreadsheet's "CSV UTF-8"), and how many
/// bytes that was.
fn without_bom(data: &str) -> (&str, u64) {
    match data.strip_prefix('\u{feff}') {
        Some(rest) => (rest, 3),
        None => (data, 0),
    }
}

fn survey_csv(data: &str, delimiter: u8) -> Result<Survey, Mistake> {
    let mut reader = csv_reader(data, delimiter);
    let mut record = csv::ByteRecord::new();
    if !reader
        .read_byte_record(&mut record)
        .map_err(|e| csv_mistake(&e))?
    {
        return Err(Mistake {
            message: "the file is empty: a CSV seed starts with a header line naming its columns"
                .into(),
            line: 1,
            offset: 0,
        });
    }
    let at = record.position().map_or((1, 0), |p| (p.line(), p.byte()));
    let mut columns = Vec::with_capacity(record.len());
    for i in 0..record.len() {
        columns.push(field(&record, i).trim().to_owned());
    }
    check_columns(&columns, at.0, at.1)?;
    let mut testers = vec![Tester::default(); columns.len()];
    let mut rows = 0;
    while reader
        .read_byte_record(&mut record)
        .map_err(|e| csv_mistake(&e))?
    {
        for (i, t) in testers.iter_mut().enumerate() {
            t.see(Cell::Text(field(&record, i)));
        }
        rows += 1;
    }
    Ok(Survey {
        columns,
        testers,
        rows,
    })
}

fn check_columns(columns: &[String], line: u64, offset: u64) -> Result<(), Mistake> {
    let mistake = |message: String| Mistake {
        message,
        line,
        offset,
    };
    if columns.len() > MAX_COLUMNS {
        return Err(mistake(format!(
            "{} columns; a seed has at most {MAX_COLUMNS}",
            columns.len()
        )));
    }
    for (i, c) in columns.iter().enumerate() {
        if c.is_empty() {
            return Err(mistake(format!(
                "column {} of the header has no name",
                i + 1
            )));
        }
        if columns[..i].iter().any(|o| o.eq_ignore_ascii_case(c)) {
            return Err(mistake(format!("the header names column `{c}` twice")));
        }
    }
    Ok(())
}

/// The lines of JSON lines data, each with its number and first byte; blank lines skipped.
fn json_lines(data: &str) -> impl Iterator<Item = (u64, u64, &str)> {
    let mut offset = 0u64;
    data.split('\n').enumerate().filter_map(move |(i, line)| {
        let at = offset;
        offset += line.len() as u64 + 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        (!line.trim().is_empty()).then_some((i as u64 + 1, at, line))
    })
}

fn json_object(
    line: &str,
    n: u64,
    at: u64,
) -> Result<serde_json::Map<String, serde_json::Value>, Mistake> {
    match serde_json::from_str::<serde_json::Value>(line) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        Ok(_) => Err(Mistake {
            message: "this line is not a JSON object: each line of a JSON lines seed is one row, an object".into(),
            line: n,
            offset: at,
        }),
        Err(e) => Err(Mistake {
            message: format!("this line is not JSON: {e}"),
            line: n,
            offset: at + e.column().saturating_sub(1) as u64,
        }),
    }
}

/// A JSON value as a cell; objects and arrays as their JSON text (in `buf`).
fn json_cell<'a>(v: &'a serde_json::Value, buf: &'a mut String) -> Cell<'a> {
    match v {
        serde_json::Value::Null => Cell::Null,
        serde_json::Value::Bool(b) => Cell::Bool(*b),
        serde_json::Value::Number(_) => {
            *buf = v.to_string();
            Cell::Number(buf)
        }
        serde_json::Value::String(s) => Cell::Text(s),
        serde_json::Value::Array(_) | serde_json::Value::Object(_) => {
            *buf = v.to_string();
            Cell::Json(buf)
        }
    }
}

fn survey_jsonl(data: &str) -> Result<Survey, Mistake> {
    let mut columns: Vec<String> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut lower: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut testers: Vec<Tester> = Vec::new();
    let mut rows = 0;
    let mut buf = String::new();
    for (n, at, line) in json_lines(data) {
        let object = json_object(line, n, at)?;
        for (key, v) in &object {
            let i = match index.get(key) {
                Some(i) => *i,
                None => {
                    let mistake = |message: String| Mistake {
                        message,
                        line: n,
                        offset: at,
                    };
                    if key.is_empty() {
                        return Err(mistake("a key of this line is empty".into()));
                    }
                    if !lower.insert(key.to_lowercase()) {
                        return Err(mistake(format!(
                            "key `{key}` differs only in case from another: two columns of one name"
                        )));
                    }
                    if columns.len() == MAX_COLUMNS {
                        return Err(mistake(format!(
                            "more than {MAX_COLUMNS} keys; a seed has at most {MAX_COLUMNS} columns"
                        )));
                    }
                    columns.push(key.clone());
                    index.insert(key.clone(), columns.len() - 1);
                    // Lines before this one did not have it: NULL there.
                    testers.push(Tester::default());
                    columns.len() - 1
                }
            };
            testers[i].see(json_cell(v, &mut buf));
        }
        rows += 1;
    }
    if columns.is_empty() {
        return Err(Mistake {
            message: "the file holds no row with a key: a JSON lines seed is an object a line"
                .into(),
            line: 1,
            offset: 0,
        });
    }
    Ok(Survey {
        columns,
        testers,
        rows,
    })
}

/// Reads `data` again, handing its rows on in batches of `batch` rows, each value in its
/// column's kind (`None`: declared, as text). `columns` are the survey's.
///
/// # Errors
///
/// A mistake in the data (as [`survey`] found none, only if the data changed), or what
/// `each` returned.
pub fn rows<E: From<Mistake>>(
    data: &str,
    format: Format,
    columns: &[String],
    kinds: &[Option<Kind>],
    batch: usize,
    mut each: impl FnMut(Vec<Row>) -> Result<(), E>,
) -> Result<(), E> {
    let (data, _) = without_bom(data);
    let mut out: Vec<Row> = Vec::with_capacity(batch);
    match format {
        Format::Csv(d) => {
            let mut reader = csv_reader(data, d);
            let mut record = csv::ByteRecord::new();
            let mut header = true;
            while reader
                .read_byte_record(&mut record)
                .map_err(|e| E::from(csv_mistake(&e)))?
            {
                if std::mem::take(&mut header) {
                    continue;
                }
                let row: Row = (0..columns.len())
                    .map(|i| value(Cell::Text(field(&record, i)), kinds[i]))
                    .collect();
                out.push(row);
                if out.len() == batch {
                    each(std::mem::replace(&mut out, Vec::with_capacity(batch)))?;
                }
            }
        }
        Format::JsonLines => {
            let mut buf = String::new();
            for (n, at, line) in json_lines(data) {
                let object = json_object(line, n, at).map_err(E::from)?;
                let row: Row = columns
                    .iter()
                    .zip(kinds)
                    .map(|(c, k)| match object.get(c) {
                        Some(v) => value(json_cell(v, &mut buf), *k),
                        None => Value::null(),
                    })
                    .collect();
                out.push(row);
                if out.len() == batch {
                    each(std::mem::replace(&mut out, Vec::with_capacity(batch)))?;
                }
            }
        }
    }
    if !out.is_empty() {
        each(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_csv_survey_names_columns_and_kinds() {
        let s = survey(
            "id,first_name,when\n1,Michael,2018-01-01\n2,\"Shawn, Jr.\",\n",
            Format::Csv(b','),
        )
        .expect("read");
        assert_eq!(s.columns, ["id", "first_name", "when"]);
        assert_eq!(s.rows, 2);
        let kinds: Vec<Kind> = s.testers.iter().map(Tester::kind).collect();
        assert_eq!(kinds, [Kind::Integer, Kind::Text, Kind::Date]);
    }

    #[test]
    fn csv_mistakes_name_their_line() {
        let e = survey("a,b\n1,2\n3\n", Format::Csv(b',')).expect_err("short");
        assert_eq!(e.line, 3);
        assert_eq!(e.offset, 8);
        assert!(
            e.message.contains("1 fields; the header has 2"),
            "{}",
            e.message
        );
        let e = survey("a,,c\n", Format::Csv(b',')).expect_err("no name");
        assert!(e.message.contains("column 2"), "{}", e.message);
        let e = survey("a,A\n", Format::Csv(b',')).expect_err("twice");
        assert!(e.message.contains("twice"), "{}", e.message);
        let e = survey("", Format::Csv(b',')).expect_err("empty");
        assert!(e.message.contains("empty"), "{}", e.message);
        // A byte order mark is no part of the first column's name; places count it.
        let s = survey("\u{feff}id,v\n1,2\n", Format::Csv(b',')).expect("bom");
        assert_eq!(s.columns, ["id", "v"]);
        let e = survey("\u{feff}a,b\n1\n", Format::Csv(b',')).expect_err("short");
        assert_eq!(e.offset, 7);
    }

    #[test]
    fn json_lines_take_keys_in_order_of_first_appearance() {
        let data = "{\"a\": 1, \"b\": \"x\"}\n\n{\"c\": true, \"a\": 2.5, \"d\": {\"k\": [1]}}\n";
        let s = survey(data, Format::JsonLines).expect("read");
        assert_eq!(s.columns, ["a", "b", "c", "d"]);
        let kinds: Vec<Kind> = s.testers.iter().map(Tester::kind).collect();
        assert_eq!(kinds, [Kind::Number, Kind::Text, Kind::Boolean, Kind::Text]);
        let mut got = Vec::new();
        let k: Vec<Option<Kind>> = kinds.into_iter().map(Some).collect();
        rows::<Mistake>(data, Format::JsonLines, &s.columns, &k, 10, |b| {
            got.extend(b);
            Ok(())
        })
        .expect("rows");
        assert_eq!(got.len(), 2);
        assert_eq!(got[0][1], Value::text("x"));
        assert_eq!(got[0][2], Value::null());
        assert_eq!(got[1][3], Value::text("{\"k\":[1]}"));
        let e = survey("{\"a\":1}\n[1]\n", Format::JsonLines).expect_err("array");
        assert_eq!((e.line, e.offset), (2, 8));
        let e = survey("{\"a\":1}\n{\"a\":\n", Format::JsonLines).expect_err("broken");
        assert_eq!(e.line, 2);
    }

    #[test]
    fn rows_come_in_batches_in_their_kinds() {
        let data = "n,t\n1,a\n2,b\n3,\n";
        let mut batches = Vec::new();
        rows::<Mistake>(
            data,
            Format::Csv(b','),
            &["n".into(), "t".into()],
            &[Some(Kind::Integer), Some(Kind::Text)],
            2,
            |b| {
                batches.push(b);
                Ok(())
            },
        )
        .expect("rows");
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[1][0][0], Value::int(3));
        assert_eq!(batches[1][0][1], Value::null());
    }
}
