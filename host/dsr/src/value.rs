//! The spanned value tree that the HJSON and JSON readers produce.
//!
//! Every value keeps the byte range it came from, so that any later error (a wrong type,
//! an unknown field, a graph rule) can name a line and column in the submitted text.
//! Line and column are computed only when an error needs them ([`LineIndex`]).

use std::fmt;

/// A byte range `start..end` in the source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// Byte offset of the first byte.
    pub start: u32,
    /// Byte offset one past the last byte.
    pub end: u32,
}

impl Span {
    /// A span from byte offsets.
    pub fn new(start: usize, end: usize) -> Self {
        Span {
            start: u32::try_from(start).unwrap_or(u32::MAX),
            end: u32::try_from(end).unwrap_or(u32::MAX),
        }
    }
}

/// A value with the span it was read from.
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned {
    /// The value.
    pub value: Value,
    /// Where it stands in the source.
    pub span: Span,
}

/// A member of an object: key, where the key stands, and the value.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// The key as written (quotes removed).
    pub key: String,
    /// Where the key stands.
    pub key_span: Span,
    /// The member's value.
    pub value: Spanned,
}

/// A JSON-like value. Integers that fit in `i64` stay exact.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`
    Null,
    /// `true` or `false`
    Bool(bool),
    /// A number without fraction or exponent that fits in an `i64`.
    Int(i64),
    /// Any other number.
    Float(f64),
    /// A string (quoted, quoteless or multi-line).
    String(String),
    /// An array.
    Array(Vec<Spanned>),
    /// An object; members keep their order, and duplicates are kept for the caller to judge.
    Object(Vec<Member>),
}

/// For each member, whether an earlier member of the same object has its key (in time
/// linear in the number of members).
pub fn repeated_keys(members: &[Member]) -> Vec<bool> {
    let mut seen = std::collections::HashSet::with_capacity(members.len());
    members
        .iter()
        .map(|m| !seen.insert(m.key.as_str()))
        .collect()
}

impl Value {
    /// The kind of value, as a user reads it in an error message.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }

    /// Converts to a `serde_json::Value` (later duplicate keys win, as in hjson-js).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) => serde_json::Value::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::String(s) => serde_json::Value::String(s.clone()),
            Value::Array(items) => {
                serde_json::Value::Array(items.iter().map(|i| i.value.to_json()).collect())
            }
            Value::Object(members) => {
                let mut map = serde_json::Map::new();
                for m in members {
                    map.insert(m.key.clone(), m.value.value.to_json());
                }
                serde_json::Value::Object(map)
            }
        }
    }
}

/// A 1-based line and column; the column counts characters, not bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Position {
    /// Line, from 1.
    pub line: u32,
    /// Column in characters, from 1.
    pub column: u32,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Turns byte offsets of one text into line and column.
#[derive(Debug)]
pub struct LineIndex<'a> {
    text: &'a str,
    line_starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    /// Indexes the line starts of `text` (a line ends at `\n`).
    pub fn new(text: &'a str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { text, line_starts }
    }

    /// The line and column of byte offset `offset` (clamped to the text).
    pub fn position(&self, offset: u32) -> Position {
        let offset = (offset as usize).min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let mut start = self.line_starts[line];
        // A leading byte order mark is not a column.
        if line == 0 && self.text.starts_with('\u{feff}') && offset >= 3 {
            start = 3;
        }
        let mut end = offset;
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let line_text = &self.text[start..end];
        let column = line_text.chars().count() + 1;
        Position {
            line: u32::try_from(line + 1).unwrap_or(u32::MAX),
            column: u32::try_from(column).unwrap_or(u32::MAX),
        }
    }
}

/// Where a value stands in a document, as a path: `transformationData.sheets[0].edges[1].to`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Path(String);

impl Path {
    /// The path of the document's root.
    pub fn root() -> Self {
        Path(String::new())
    }

    /// The path of member `key` of this object.
    pub fn key(&self, key: &str) -> Self {
        if self.0.is_empty() {
            Path(key.to_owned())
        } else {
            Path(format!("{}.{key}", self.0))
        }
    }

    /// The path of the attributes of node `node` of sheet `sheet` of a document:
    /// `transformationData.sheets[sheet].nodes[node].attributes`.
    pub fn node_attributes(sheet: usize, node: usize) -> Self {
        Path(format!(
            "transformationData.sheets[{sheet}].nodes[{node}].attributes"
        ))
    }

    /// The path of element `index` of this array.
    pub fn index(&self, index: usize) -> Self {
        Path(format!("{}[{index}]", self.0))
    }

    /// The path as text; the root is the empty string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("(document)")
        } else {
            f.write_str(&self.0)
        }
    }
}
