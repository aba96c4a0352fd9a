//! Differential test of the `.dsr` HJSON reader against the reference implementation,
//! hjson-js 3.2.2 (installed from npm into `target/hjson-js` by `./test.sh`).
//!
//! A deterministic generator writes documents full of the format's corners: quoteless
//! strings holding punctuation and comment marks, number-like and literal-like text, quoted
//! strings with escapes, `'''` strings with uneven indentation, optional commas, comments,
//! root braces left out, and now and then a real syntax error. Both readers must accept the
//! same documents with the same value, and reject the same documents.

use crate::common;

use std::io::Write as _;
use std::process::{Command, Stdio};

/// xorshift64*: small, deterministic, good enough to pick among choices.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const NUMBERISH: &[&str] = &[
    "0",
    "-0",
    "7",
    "-12",
    "3.25",
    "1e3",
    "-2.5E-2",
    "01",
    "1.",
    "-",
    "1e",
    "12 x",
    "5,",
    "0x10",
    "1.5 # c",
    "42 // c",
    "144115188075855873",
    "2 /* c */",
    ".5",
    "-.5",
    "1.2.3",
];
const LITERALISH: &[&str] = &[
    "true",
    "false",
    "null",
    "true x",
    "nullish",
    "false // c",
    "true,",
    "null #c",
    "True",
];
const TEXT_CHARS: &[&str] = &[
    "a", "b", "z", " ", " ", "-", "_", ".", ":", "/", "@", "$", "%", "&", "*", "+", "=", "?", "!",
    "'", "\"", "\\", ",", "{", "}", "[", "]", "#", "é", "→",
];

fn word(r: &mut Rng) -> String {
    let mut s = r.pick(&["a", "k", "x", "name", "id", "z9"]).to_owned();
    for _ in 0..r.below(4) {
        s.push_str(r.pick(&["a", "b", "_", "-", "1", "9"]));
    }
    s
}

fn key(r: &mut Rng) -> String {
    match r.below(6) {
        0 => format!("\"{} {}\"", word(r), word(r)),
        1 => format!("'{}'", word(r)),
        _ => word(r),
    }
}

fn quoteless(r: &mut Rng) -> String {
    let mut s = r
        .pick(&["a", "t", "n", "f", "x", "SELECT", "path"])
        .to_owned();
    for _ in 0..r.below(12) {
        s.push_str(r.pick(TEXT_CHARS));
    }
    s
}

fn quoted(r: &mut Rng) -> String {
    let q = if r.chance(70) { '"' } else { '\'' };
    let mut s = q.to_string();
    for _ in 0..r.below(10) {
        match r.below(8) {
            0 => s.push_str(r.pick(&[
                "\\n",
                "\\t",
                "\\\\",
                "\\/",
                "\\u00e9",
                "\\ud83d\\ude00",
                "\\b",
            ])),
            1 => s.push_str(if q == '"' { "\\\"" } else { "\\'" }),
            2 => s.push(if q == '"' { '\'' } else { '"' }),
            _ => s.push_str(r.pick(&["a", " ", "#", "//", ",", "}", "é"])),
        }
    }
    s.push(q);
    s
}

fn multiline(r: &mut Rng, indent: &str) -> String {
    let mut s = String::from("\n");
    s.push_str(indent);
    s.push_str("  '''");
    if r.chance(30) {
        s.push_str(&quoteless(r).replace('\'', ""));
    }
    for _ in 0..r.below(4) {
        s.push('\n');
        let extra = r.pick(&["", "  ", "    ", " ", "\t"]);
        s.push_str(indent);
        s.push_str(extra);
        s.push_str(&quoteless(r).replace('\'', ""));
    }
    s.push('\n');
    s.push_str(indent);
    s.push_str("  '''");
    s
}

fn value(r: &mut Rng, depth: usize, indent: &str) -> String {
    let choice = if depth == 0 { r.below(6) } else { r.below(9) };
    match choice {
        0 => r.pick(NUMBERISH).to_owned(),
        1 => r.pick(LITERALISH).to_owned(),
        2 | 3 => quoteless(r),
        4 => quoted(r),
        5 => multiline(r, indent),
        6 | 7 => object(r, depth - 1, indent),
        _ => array(r, depth - 1, indent),
    }
}

fn comment(r: &mut Rng) -> &'static str {
    r.pick(&[
        "# a comment",
        "// another",
        "/* block */",
        "/* two\n  lines */",
    ])
}

fn members(r: &mut Rng, depth: usize, indent: &str) -> String {
    let mut s = String::new();
    for _ in 0..r.below(5) {
        if r.chance(15) {
            s.push_str(&format!("{indent}{}\n", comment(r)));
        }
        let v = value(r, depth, indent);
        let sep = if r.chance(30) { "," } else { "" };
        s.push_str(&format!("{indent}{}: {v}{sep}\n", key(r)));
    }
    s
}

fn object(r: &mut Rng, depth: usize, indent: &str) -> String {
    let inner = format!("{indent}  ");
    if r.chance(10) {
        return "{}".to_owned();
    }
    format!("{{\n{}{indent}}}", members(r, depth, &inner))
}

fn array(r: &mut Rng, depth: usize, indent: &str) -> String {
    let inner = format!("{indent}  ");
    let mut s = String::from("[\n");
    for _ in 0..r.below(5) {
        let sep = if r.chance(30) { "," } else { "" };
        s.push_str(&format!("{inner}{}{sep}\n", value(r, depth, &inner)));
    }
    s.push_str(indent);
    s.push(']');
    s
}

fn document(r: &mut Rng) -> String {
    let mut doc = match r.below(5) {
        0 => members(r, 2, ""),
        1 => array(r, 3, ""),
        _ => object(r, 3, ""),
    };
    if r.chance(10) {
        // A real mistake somewhere: a stray bracket, colon, or an unterminated string.
        let at = r.below(doc.len() + 1);
        if doc.is_char_boundary(at) {
            doc.insert_str(at, r.pick(&["}", "]", ":", "\"open", "'''", "{", ","]));
        }
    }
    doc
}

/// Numbers agree to 15 significant digits (hjson-js reads every number as a double).
fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    match (a, b) {
        (J::Number(x), J::Number(y)) => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            x == y || (x - y).abs() <= 1e-14 * x.abs().max(y.abs())
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

const SCRIPT: &str = r#"
const Hjson = require(process.argv[1]);
const texts = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const out = texts.map(t => { try { return { ok: Hjson.parse(t) }; } catch (e) { return { err: String(e.message) }; } });
process.stdout.write(JSON.stringify(out));
"#;

/// What hjson-js 3.2.2 makes of each of `texts`: `{ok: value}` or `{err: message}`.
fn hjson_js(texts: &[String]) -> Vec<serde_json::Value> {
    let module = common::root().join("target/hjson-js/node_modules/hjson");
    assert!(
        module.is_dir(),
        "hjson-js is missing at {}: ./test.sh installs it (npm install --prefix target/hjson-js hjson@3.2.2)",
        module.display()
    );
    let mut child = Command::new("node")
        .args(["-e", SCRIPT])
        .arg(&module)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node (Node.js) must be installed for the differential test");
    let input = serde_json::to_vec(texts).expect("json");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&input)
        .expect("write");
    let out = child.wait_with_output().expect("node");
    assert!(out.status.success(), "node failed");
    let answers: Vec<serde_json::Value> =
        serde_json::from_slice(&out.stdout).expect("node's answer");
    assert_eq!(answers.len(), texts.len());
    answers
}

#[test]
fn hjson_js_reads_what_an_export_writes_as_it_was() {
    // The values of the generated documents, written as an export writes (`dsr::write`).
    let mut r = Rng(0x0E8F_0A75_11E5);
    let values: Vec<serde_json::Value> = (0..1500)
        .filter_map(|_| weft_dsr::hjson::parse(&document(&mut r)).ok())
        .map(|v| v.value.to_json())
        .filter(serde_json::Value::is_object)
        .collect();
    let written: Vec<String> = values.iter().map(weft_dsr::write::hjson).collect();
    let answers = hjson_js(&written);
    let wrong: Vec<String> = written
        .iter()
        .zip(&values)
        .zip(&answers)
        .filter(|((_, v), a)| !a.get("ok").is_some_and(|ok| same(ok, v)))
        .map(|((text, v), a)| format!("{text}\n  value: {v}\n  hjson-js: {a}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} written documents read back differently:\n\n{}",
        wrong.len(),
        written.len(),
        wrong
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n---\n")
    );
    assert!(
        written.len() > 300 && written.iter().any(|t| t.contains("'''")),
        "the generator must give values, some of several lines: {}",
        written.len()
    );
}

#[test]
fn agrees_with_hjson_js_on_generated_documents() {
    let mut r = Rng(0x5EED_0F4E_57AB);
    let docs: Vec<String> = (0..1500).map(|_| document(&mut r)).collect();
    let answers = hjson_js(&docs);
    let mut disagreements = Vec::new();
    let (mut accepted, mut rejected) = (0, 0);
    for (doc, reference) in docs.iter().zip(&answers) {
        let ours = weft_dsr::hjson::parse(doc);
        match (&ours, reference.get("ok")) {
            (Ok(v), Some(expected)) if same(&v.value.to_json(), expected) => accepted += 1,
            (Err(_), None) => rejected += 1,
            (Ok(v), Some(expected)) => disagreements.push(format!(
                "{doc}\n  ours: {}\n  hjson-js: {expected}",
                v.value.to_json()
            )),
            (Ok(v), None) => disagreements.push(format!(
                "{doc}\n  ours: {}\n  hjson-js rejects: {}",
                v.value.to_json(),
                reference["err"]
            )),
            (Err(e), Some(expected)) => disagreements.push(format!(
                "{doc}\n  ours rejects: {}\n  hjson-js: {expected}",
                e.message
            )),
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} of {} documents read differently:\n\n{}",
        disagreements.len(),
        docs.len(),
        disagreements
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n---\n")
    );
    // The generator must exercise both sides.
    assert!(
        accepted > 500 && rejected > 50,
        "accepted {accepted}, rejected {rejected}"
    );
}
