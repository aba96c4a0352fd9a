//! Tests of the HJSON reader: the public conformance suite and the project's own cases.

use super::*;
use crate::value::LineIndex;
use std::path::PathBuf;

/// The public HJSON conformance suite, which is not part of this repository: `shared/`
/// beside the checkout (or `WEFT_HJSON_SUITE`). Where it is missing the tests that need it
/// say so and pass, unless `WEFT_REQUIRE_SHARED` is set (CI sets it, and has the suite).
pub(crate) fn suite_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("WEFT_HJSON_SUITE").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/hjson-suite"),
        PathBuf::from,
    );
    if dir.join("testlist.txt").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("WEFT_REQUIRE_SHARED").is_none(),
        "the HJSON conformance suite is expected at {} (shared/ beside the repository)",
        dir.display()
    );
    eprintln!(
        "skipped: the HJSON conformance suite is not at {} (shared/ beside the checkout); CI runs this test",
        dir.display()
    );
    None
}

/// Numbers agree when they are equal to 15 significant digits (the expected files round).
pub(crate) fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    match (a, b) {
        (J::Number(x), J::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                return x == y;
            }
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            x == y || ((x - y).abs() <= 1e-14 * x.abs().max(y.abs()))
        }
        (J::Array(x), J::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (J::Object(x), J::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

#[test]
fn passes_the_hjson_conformance_suite() {
    let Some(dir) = suite_dir() else { return };
    let list = std::fs::read_to_string(dir.join("testlist.txt")).expect("testlist.txt");
    let mut failures = Vec::new();
    let mut cases = 0;
    for file in list.lines().map(str::trim).filter(|l| !l.is_empty()) {
        cases += 1;
        let text = std::fs::read_to_string(dir.join(file)).expect("case file");
        let name = file.split("_test.").next().expect("case name");
        let result = parse(&text);
        if name.starts_with("fail") {
            match result {
                Ok(v) => failures.push(format!("{file}: accepted, gave {}", v.value.to_json())),
                Err(e) => {
                    let pos = LineIndex::new(&text).position(e.offset as u32);
                    assert!(pos.line >= 1 && pos.column >= 1, "{file}: position {pos}");
                }
            }
        } else {
            let expected: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(dir.join(format!("{name}_result.json"))).expect("result"),
            )
            .expect("result json");
            match result {
                Ok(v) if same(&v.value.to_json(), &expected) => {}
                Ok(v) => failures.push(format!(
                    "{file}: got {} expected {expected}",
                    v.value.to_json()
                )),
                Err(e) => failures.push(format!(
                    "{file}: rejected at byte {}: {}",
                    e.offset, e.message
                )),
            }
        }
    }
    assert!(
        cases >= 90,
        "the suite lists {cases} cases, expected at least 90"
    );
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn err_at(text: &str) -> (String, u32, u32) {
    let e = parse(text).expect_err("should be rejected");
    let p = LineIndex::new(text).position(e.offset as u32);
    (e.message, p.line, p.column)
}

#[test]
fn errors_carry_line_and_column() {
    let (msg, line, col) = err_at("{\n  a: 1\n  b c: 2\n}");
    assert!(msg.contains("whitespace in your key name"), "{msg}");
    assert_eq!((line, col), (3, 4));
    let (msg, line, col) = err_at("{\n  a: [1, 2\n");
    assert!(msg.contains("missing ']'"), "{msg}");
    assert_eq!(line, 3);
    assert_eq!(col, 1);
    let (msg, line, col) = err_at("{ s: \"é\\x\" }");
    assert!(msg.contains("Bad escape"), "{msg}");
    assert_eq!((line, col), (1, 9));
}

#[test]
fn accepts_bom_and_crlf() {
    let v = parse("\u{feff}{\r\n  a: hello world \r\n  b: 2\r\n  c: '''\r\n    x\r\n    y\r\n    '''\r\n}\r\n")
        .expect("parses");
    assert_eq!(
        v.value.to_json(),
        serde_json::json!({"a": "hello world", "b": 2, "c": "x\ny"})
    );
}

#[test]
fn a_bom_is_not_a_column() {
    let text = "\u{feff}{ a b: 1 }";
    let e = parse(text).expect_err("space in key");
    assert_eq!(
        LineIndex::new(text).position(e.offset as u32).to_string(),
        "1:4"
    );
}

#[test]
fn keeps_spans_of_values_and_keys() {
    let text = "{\n  id: 12\n  name: load customers\n}";
    let v = parse(text).expect("parses");
    let Value::Object(members) = v.value else {
        panic!("object expected")
    };
    let idx = LineIndex::new(text);
    assert_eq!(idx.position(members[0].key_span.start).to_string(), "2:3");
    assert_eq!(idx.position(members[1].value.span.start).to_string(), "3:9");
    assert_eq!(
        &text[members[1].value.span.start as usize..members[1].value.span.end as usize],
        "load customers"
    );
}

#[test]
fn refuses_deep_nesting_without_overflowing_the_stack() {
    let text = "[".repeat(100_000);
    let (msg, _, _) = err_at(&text);
    assert!(msg.contains("nesting deeper"), "{msg}");
}

#[test]
fn a_value_of_unicode_white_space_is_an_empty_string() {
    for ws in ["\u{a0}", "\u{85}", "\u{3000}"] {
        let v = parse(&format!("{{ a: {ws}\n }}")).expect("parses");
        assert_eq!(v.value.to_json(), serde_json::json!({"a": ""}));
        assert_eq!(
            parse(ws).expect("parses").value.to_json(),
            serde_json::json!("")
        );
    }
}

#[test]
fn big_integers_stay_exact() {
    let v = parse("{a: 144115188075855873, b: -9223372036854775808, c: 18446744073709551616}")
        .expect("parses");
    assert_eq!(
        v.value.to_json()["a"],
        serde_json::json!(144115188075855873i64)
    );
    assert_eq!(v.value.to_json()["b"], serde_json::json!(i64::MIN));
    assert!(v.value.to_json()["c"].is_f64());
}

proptest::proptest! {
    /// Any JSON text that serde_json writes reads back as the same value.
    #[test]
    fn reads_what_serde_json_writes(v in json_value(3)) {
        let text = serde_json::to_string_pretty(&v).expect("serialise");
        let parsed = parse(&text).expect("valid JSON is valid HJSON");
        proptest::prop_assert!(same(&parsed.value.to_json(), &v), "{} vs {}", parsed.value.to_json(), v);
    }

    /// No input makes the reader panic.
    #[test]
    fn never_panics(s in "\\PC{0,64}") {
        let _ = parse(&s);
    }
}

fn json_value(depth: u32) -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|i| serde_json::json!(i)),
        (-1e12f64..1e12).prop_map(|f| serde_json::json!(f)),
        "\\PC{0,12}".prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(depth, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::Array),
            proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..5)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Where and why each `fail*` case of the suite is rejected; the snapshot was checked by hand
/// against the cases' texts.
#[test]
fn suite_failures_name_their_place() {
    let Some(dir) = suite_dir() else { return };
    let list = std::fs::read_to_string(dir.join("testlist.txt")).expect("testlist.txt");
    let mut report = String::new();
    for file in list
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("fail"))
    {
        let text = std::fs::read_to_string(dir.join(file)).expect("case");
        let e = parse(&text).expect_err("fail case");
        let pos = LineIndex::new(&text).position(e.offset as u32);
        report.push_str(&format!("{file}:{pos}: {}\n", e.message));
    }
    insta::assert_snapshot!(report);
}

#[test]
fn string_source_maps_place_decoded_bytes() {
    // Multi-line: the decoded text comes from indented lines.
    let text = "{\n  a:\n    '''\n    SELECT x\n      FROM t\n    '''\n}";
    let v = parse(text).expect("parses");
    let Value::Object(m) = &v.value else {
        panic!("object")
    };
    let Value::String(s) = &m[0].value.value else {
        panic!("string")
    };
    assert_eq!(s, "SELECT x\n  FROM t");
    let map = string_source_map(text, m[0].value.span.start as usize);
    assert_eq!(map.len(), s.len() + 1);
    let from = s.find("FROM").expect("FROM");
    assert_eq!(&text[map[from]..map[from] + 4], "FROM");
    // Quoted, with escapes before the byte asked for.
    let text = r#"{ a: "x\ty \"q\" é z" }"#;
    let v = parse(text).expect("parses");
    let Value::Object(m) = &v.value else {
        panic!("object")
    };
    let Value::String(s) = &m[0].value.value else {
        panic!("string")
    };
    let map = string_source_map(text, m[0].value.span.start as usize);
    for needle in ["z", "q", "é"] {
        let at = s.find(needle).expect("needle");
        assert_eq!(&text[map[at]..map[at] + needle.len()], needle);
    }
    // Quoteless.
    let text = "{\n  a: SELECT y FROM u\n}";
    let v = parse(text).expect("parses");
    let Value::Object(m) = &v.value else {
        panic!("object")
    };
    let map = string_source_map(text, m[0].value.span.start as usize);
    assert_eq!(&text[map[14]..map[14] + 1], "u");
}

/// HJSON's trap: a quoteless value runs to the end of its line, so a `}` or `]` written after
/// it on the line is part of it. The error is told on the value's line, naming it, not where
/// the reader later stopped.
#[test]
fn a_quoteless_value_that_took_in_a_closing_bracket_is_named_on_its_line() {
    let text = "{\n  sheets: [\n    {name: load orders, folder: /jaffle}\n  ]\n  version: 1\n}\n";
    let e = parse(text).expect_err("the trap");
    let at = text.find("load orders").expect("value");
    assert_eq!(e.offset, at);
    assert!(
        e.message.starts_with("the value of `name`, `load orders, folder: /jaffle}`, has no quotes: it runs to the end of its line, taking in the `}`"),
        "{}",
        e.message
    );
    // In an array, and with the line the reader stopped on.
    let e = parse("{\n  after: [create, load]\n  x: 1\n}").expect_err("the trap");
    assert!(
        e.message
            .starts_with("an entry of an array, `create, load]`"),
        "{}",
        e.message
    );
    assert!(e.message.contains("stopped on line 4"), "{}", e.message);
    // A value whose brackets are balanced (a `${variable}` in SQL) is not blamed for a later
    // error.
    let text = "{\n  action: SELECT * FROM t WHERE d >= '${since}'\n  b: [1, 2\n}";
    let e = parse(text).expect_err("a missing ]");
    assert!(!e.message.contains("has no quotes"), "{}", e.message);
}
