//! A value written as HJSON in one canonical form (what an export writes): two spaces of
//! indentation a level, a member or item a line, keys without quotes where HJSON allows
//! them, every single-line string quoted as JSON quotes it (never quoteless, whose reading
//! depends on what follows), and text of several lines (SQL) as a `'''` block, so that a
//! diff of an exported file shows the lines of a statement that changed. What [`hjson`]
//! writes, [`crate::hjson::parse`] reads back as the same value.

use serde_json::Value;
use std::fmt::Write as _;

/// `v` as HJSON text, ending with a newline.
pub fn hjson(v: &Value) -> String {
    let mut out = String::new();
    value(v, 0, &mut out);
    out.push('\n');
    out
}

pub(crate) fn indent(level: usize, out: &mut String) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn value(v: &Value, level: usize, out: &mut String) {
    match v {
        Value::Object(members) if members.is_empty() => out.push_str("{}"),
        Value::Object(members) => {
            out.push_str("{\n");
            for (k, v) in members {
                indent(level + 1, out);
                key(k, out);
                out.push(':');
                member(v, level + 1, out);
                out.push('\n');
            }
            indent(level, out);
            out.push('}');
        }
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Array(items) => {
            out.push_str("[\n");
            for item in items {
                indent(level + 1, out);
                match item {
                    Value::String(s) if block(s) => lines(s, level + 1, out),
                    _ => value(item, level + 1, out),
                }
                out.push('\n');
            }
            indent(level, out);
            out.push(']');
        }
        Value::String(s) => out.push_str(&Value::String(s.clone()).to_string()),
        other => out.push_str(&other.to_string()),
    }
}

/// A member's value after its `key:`: a block of lines on the lines below, else after a
/// space.
fn member(v: &Value, level: usize, out: &mut String) {
    match v {
        Value::String(s) if block(s) => {
            out.push('\n');
            indent(level + 1, out);
            lines(s, level + 1, out);
        }
        _ => {
            out.push(' ');
            value(v, level, out);
        }
    }
}

/// `s` as a `'''` block whose quotes stand at `level` (the cursor is after their indent):
/// each line indented as far as the quotes, which the reader takes off again; an empty line
/// left empty.
pub(crate) fn lines(s: &str, level: usize, out: &mut String) {
    out.push_str("'''\n");
    for line in s.split('\n') {
        if !line.is_empty() {
            indent(level, out);
            out.push_str(line);
        }
        out.push('\n');
    }
    indent(level, out);
    out.push_str("'''");
}

/// Whether `s` reads back the same from a `'''` block: several lines, no carriage return
/// (the reader drops it), no `'''` (it would end the block) and no other control
/// character.
pub(crate) fn block(s: &str) -> bool {
    s.contains('\n')
        && !s.contains("'''")
        && s.chars().all(|c| c == '\n' || c == '\t' || !c.is_control())
}

/// A key without quotes when it is a plain name, else quoted as JSON.
pub(crate) fn key(k: &str, out: &mut String) {
    let plain = k
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        out.push_str(k);
    } else {
        let _ = write!(out, "{}", Value::String(k.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// The value `text` reads as, as JSON.
    fn read(text: &str) -> Value {
        crate::hjson::parse(text)
            .unwrap_or_else(|e| panic!("{} at {} in\n{text}", e.message, e.offset))
            .value
            .to_json()
    }

    #[test]
    fn sql_of_several_lines_is_a_block_and_reads_back_the_same() {
        let v = json!({"id": 1, "attributes": {"module": "Sql", "action": "SELECT a,\n       b\n  FROM t\n\n WHERE x = 'y'\n"},
                       "weird key": null, "list": [1, "a\nb", {"k": true}], "empty": [], "none": {}});
        let text = hjson(&v);
        assert!(
            text.contains("    action:\n      '''\n      SELECT a,\n             b\n        FROM t\n\n       WHERE x = 'y'\n\n      '''"),
            "{text}"
        );
        assert!(text.contains("\"weird key\": null"), "{text}");
        assert_eq!(read(&text), v);
    }

    proptest! {
        #[test]
        fn whatever_the_strings_they_read_back_the_same(
            strings in proptest::collection::vec(
                prop_oneof!["(?s).{0,40}", "[a-z '\n\t\r\\\"#]{0,40}"],
                1..6,
            ),
            keys in proptest::collection::vec("[a-z _\"#:{}\\[\\]',\n]{1,8}", 1..6),
        ) {
            let members: serde_json::Map<String, Value> = keys
                .iter()
                .cloned()
                .zip(strings.iter().cloned().map(Value::String))
                .collect();
            let v = json!({"members": members, "items": strings});
            let text = hjson(&v);
            prop_assert_eq!(read(&text), v, "{}", text);
        }
    }
}
