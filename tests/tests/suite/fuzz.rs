//! Fuzzing on stable Rust: random and mutated inputs, seeded from the HJSON conformance
//! suite, the examples and the test documents, fed to every reader of outside input: the
//! `.dsr` reader (HJSON and the model), the request envelope reader (strict JSON and the
//! `DeployRepository` payload), the key file parser and the jdbcList parser. None may panic,
//! and each must answer in time linear in its input.
//!
//! CI runs a short round (`WEFT_FUZZ_CASES`, default 2,000 inputs per reader). The long run
//! is `WEFT_FUZZ_CASES=10000000 cargo test --release -p weft_tests --test suite -- fuzz::`
//! (docs/ARCHITECTURE.md, "Hostile input, faults and load").

use crate::common;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::path::Path;
use std::time::{Duration, Instant};
use weft_tests::documents::{files, test_documents};

fn cases() -> u32 {
    std::env::var("WEFT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
}

/// The `.dsr` seeds: the conformance suite, the examples, the test documents.
fn dsr_seeds() -> Vec<String> {
    let root = common::root();
    let mut seeds = Vec::new();
    // The conformance suite sits in shared/ beside the checkout (WEFT_HJSON_SUITE elsewhere);
    // a clone without it fuzzes from the project's own documents alone.
    let suite = std::env::var_os("WEFT_HJSON_SUITE").map_or_else(
        || root.join("../shared/hjson-suite"),
        std::path::PathBuf::from,
    );
    files(&suite, &[".hjson", ".json"], &mut seeds);
    let mut ours = Vec::new();
    files(&root.join("examples"), &[".dsr"], &mut ours);
    ours.extend(test_documents(&root));
    ours.push(common::sheet(7));
    assert!(
        ours.len() >= 10,
        "the project's own seed documents were not found ({})",
        ours.len()
    );
    // The project's own documents first: the envelope seeds take the first of them.
    seeds.splice(0..0, ours);
    seeds
}

/// Request seeds: each `.dsr` seed as a `DeployRepository` body, and the other commands.
fn envelope_seeds() -> Vec<String> {
    let mut seeds: Vec<String> = dsr_seeds()
        .into_iter()
        .take(40)
        .map(|content| {
            serde_json::json!({"command": "DeployRepository", "payload": {"content": content,
                "deployOptions": {"validate": "true", "dryRun": true, "intoFolder": null}}})
            .to_string()
        })
        .collect();
    seeds.extend(
        [
            r#"{"command": "RunElements", "payload": {"batchExecution": {"batchName": "n", "user": "u", "elementList": [{"elementType": "S", "elementId": 1}]}}, "variableList": [{"variableName": "a", "variableType": "String", "variableValue": "b"}]}"#,
            r#"{"command": "GetBatchInstance", "payload": {"batchInstanceId": 12}}"#,
            r#"{"command": "WaitBatchInstance", "payload": {"batchInstanceId": "12", "timeoutSeconds": 1.5}}"#,
            r#"{"command": "ListBatchInstances", "payload": {"limit": 5}}"#,
            r#"{"command": "NextRuns", "payload": {"batchId": 4, "count": 3}}"#,
            "{\"command\":\"DeployRepository\",\"payload\":{\"content\":\"{\\n\\tversion: 1\\t\\\"x\\\"\\n}\"}}",
        ]
        .map(str::to_owned),
    );
    seeds
}

fn keyfile_seeds() -> Vec<String> {
    vec![
        "# weft key file\n0|sqlite|/srv/weft/repository.db|||\nweft_server|http|http://127.0.0.1:17491/weft/service|||token=abc\n".to_owned(),
        "1|jdbc|jdbc:postgresql://db:5432/dwh|etl|p\\|w\\\\d|ssl=true;weft.commit_marker=off\n2|sqlite|/data/a b.db|||\n".to_owned(),
        "\n\n  # indented comment\nname|http|x||| \n".to_owned(),
    ]
}

fn jdbc_list_seeds() -> Vec<String> {
    let mut seeds = vec![
        std::fs::read_to_string(common::root().join("jdbcList")).expect("jdbcList"),
        "pg:PostgreSQL:https://example.org/pg.jar#sha256=ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789\nbad line\n../x:escape:file:/tmp/x.jar\n".to_owned(),
    ];
    seeds.push("h2:H2:file:/usr/share/java/h2.jar\n".repeat(3));
    seeds
}

/// Tokens a mutation inserts: the characters and words the readers branch on.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "\"",
    "'",
    "'''",
    "\n",
    "\r\n",
    "\t",
    "#",
    "//",
    "/*",
    "*/",
    "\\",
    "\\u",
    "\\uD83D",
    "\\n",
    "|",
    ";",
    "=",
    "#sha256=",
    "file:",
    "http://",
    "null",
    "true",
    "false",
    "-0",
    "1e999",
    "9223372036854775808",
    "-9223372036854775809",
    "0.5",
    "${",
    "$${",
    "}}",
    "\u{feff}",
    "\u{0}",
    "\u{2028}",
    "é",
    "𝄞",
    "version: 1",
    "transformationData: {",
    "sheets: [",
    "nodes: [",
    "\"command\":",
    "\"payload\":{",
    "\"dryRun\":true,",
    "id: 1",
];

#[derive(Debug, Clone)]
enum Mutation {
    Flip(u32, u8),
    Insert(u32, usize),
    Delete(u32, u16),
    Duplicate(u32, u16, u32),
    Truncate(u32),
    Repeat(u32, u16, u16),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<u32>(), any::<u8>()).prop_map(|(p, b)| Mutation::Flip(p, b)),
        (any::<u32>(), 0..TOKENS.len()).prop_map(|(p, t)| Mutation::Insert(p, t)),
        (any::<u32>(), any::<u16>()).prop_map(|(p, n)| Mutation::Delete(p, n)),
        (any::<u32>(), any::<u16>(), any::<u32>())
            .prop_map(|(p, n, a)| Mutation::Duplicate(p, n, a)),
        any::<u32>().prop_map(Mutation::Truncate),
        (any::<u32>(), 1..64u16, 1..200u16).prop_map(|(p, n, k)| Mutation::Repeat(p, n, k)),
    ]
}

fn at(len: usize, p: u32) -> usize {
    if len == 0 {
        0
    } else {
        (p as usize) % (len + 1)
    }
}

fn apply(seed: &str, mutations: &[Mutation]) -> Vec<u8> {
    let mut b = seed.as_bytes().to_vec();
    for m in mutations {
        let len = b.len();
        match *m {
            Mutation::Flip(p, x) if len > 0 => {
                let i = at(len - 1, p);
                b[i] ^= x;
            }
            Mutation::Flip(..) => {}
            Mutation::Insert(p, t) => {
                let i = at(len, p);
                b.splice(i..i, TOKENS[t].bytes());
            }
            Mutation::Delete(p, n) => {
                let i = at(len, p);
                let j = (i + usize::from(n) % 64).min(len);
                b.drain(i..j);
            }
            Mutation::Duplicate(p, n, a) => {
                let i = at(len, p);
                let j = (i + usize::from(n) % 256).min(len);
                let piece = b[i..j].to_vec();
                let k = at(len, a);
                b.splice(k..k, piece);
            }
            Mutation::Truncate(p) => b.truncate(at(len, p)),
            Mutation::Repeat(p, n, k) => {
                let i = at(len, p);
                let j = (i + usize::from(n)).min(len);
                let piece = b[i..j].repeat(usize::from(k));
                b.splice(j..j, piece);
            }
        }
    }
    b
}

/// Inputs: a seed with up to eight mutations, or plain random text.
fn inputs(seeds: Vec<String>) -> impl Strategy<Value = Vec<u8>> {
    let n = seeds.len();
    prop_oneof![
        8 => (0..n, proptest::collection::vec(mutation(), 0..8))
            .prop_map(move |(i, ms)| apply(&seeds[i], &ms)),
        1 => proptest::collection::vec(any::<u8>(), 0..512),
        1 => ".{0,512}".prop_map(String::into_bytes),
    ]
}

/// Feeds `cases()` inputs to `read`; every input must be answered without a panic within a
/// time linear in its length (generous, for debug builds on a busy machine).
fn fuzz(name: &str, seeds: Vec<String>, read: impl Fn(&[u8])) {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&inputs(seeds), |input| {
        let start = Instant::now();
        read(&input);
        let took = start.elapsed();
        let bound = Duration::from_millis(500) + Duration::from_micros(20) * input.len() as u32;
        prop_assert!(
            took < bound,
            "{name}: {} bytes took {took:?} (bound {bound:?})",
            input.len()
        );
        Ok(())
    });
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
}

fn text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

#[test]
fn the_dsr_reader_takes_any_text() {
    fuzz("dsr", dsr_seeds(), |b| {
        let t = text(b);
        let (doc, problems) = weft_dsr::parse(&t);
        // Every problem can be placed in the text.
        let _ = problems.into_details(&weft_dsr::LineIndex::new(&t));
        drop(doc);
    });
}

#[test]
fn the_envelope_reader_takes_any_bytes() {
    fuzz("envelope", envelope_seeds(), |b| {
        if let Ok(weft::api::protocol::Command::DeployRepository(deploy)) =
            weft::api::envelope::read(b, &|_, _| Ok(()))
        {
            let _ = weft_dsr::parse(&deploy.content);
        }
    });
}

#[test]
fn the_key_file_parser_takes_any_text() {
    fuzz("keyfile", keyfile_seeds(), |b| {
        if let Ok(kf) = weft_core::keys::KeyFile::parse(Path::new("keyfile"), &text(b)) {
            let _ = kf.secrets();
            let _ = kf.get("0");
        }
    });
}

#[test]
fn the_jdbc_list_parser_takes_any_text() {
    fuzz("jdbcList", jdbc_list_seeds(), |b| {
        let _ = weft_cli::jdbc_manager::parse_list(&text(b));
    });
}

/// Best of three timings of `f`.
fn best(f: &dyn Fn()) -> Duration {
    (0..3)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// `make(n)` and `make(8n)` take times in the ratio of their sizes, not its square: a
/// quadratic reader would take 64 times as long; a linear one 8 (up to 24 is allowed for
/// noise).
fn linear(name: &str, n: usize, make: impl Fn(usize) -> String, read: impl Fn(&str)) {
    let small = make(n);
    let large = make(8 * n);
    let t_small = best(&|| read(&small)).max(Duration::from_micros(200));
    let t_large = best(&|| read(&large));
    let ratio = t_large.as_secs_f64() / t_small.as_secs_f64();
    assert!(
        ratio < 24.0,
        "{name}: {} bytes took {t_small:?}, {} bytes {t_large:?} (x{ratio:.1})",
        small.len(),
        large.len()
    );
}

#[test]
fn every_reader_takes_time_linear_in_its_input() {
    let dsr = |t: &str| {
        let (_, problems) = weft_dsr::parse(t);
        let _ = problems.into_details(&weft_dsr::LineIndex::new(t));
    };
    // Distinct keys, under the limit of 10,000 members.
    linear(
        "distinct keys",
        1_000,
        |n| {
            let fields: String = (0..n).map(|i| format!("k{i}: {i}\n")).collect();
            format!("{{ version: 1, transformationData: {{ x: {{ {fields} }} }} }}")
        },
        dsr,
    );
    // The same key over and over: one problem each.
    linear(
        "duplicate keys",
        1_000,
        |n| {
            format!(
                "{{ version: 1, transformationData: {{ {} }} }}",
                "sheets: []\n".repeat(n)
            )
        },
        dsr,
    );
    // Unknown fields of a sheet's attributes: many problems with long paths.
    linear(
        "many problems",
        1_000,
        |n| {
            let fields: String = (0..n).map(|i| format!("a{i}: {i}\n")).collect();
            format!(
                "{{ version: 1, transformationData: {{ sheets: [ {{ id: 1, attributes: {{ name: s, folder_id: 1, folder: \"/\", {fields} }}, nodes: [] }} ] }} }}"
            )
        },
        dsr,
    );
    linear(
        "long strings and comments",
        20_000,
        |n| {
            format!(
                "{{ # {}\n version: 1, transformationData: {{ folders: [ {{ id: 1, path: \"/a\", documentation: '''\n {}\n ''' }} ] }} }}",
                "c".repeat(n),
                "d".repeat(n)
            )
        },
        dsr,
    );
    linear(
        "long arrays",
        2_000,
        |n| {
            format!(
                "{{ version: 1, transformationData: {{ x: [ {} ] }} }}",
                "1,\n".repeat(n)
            )
        },
        dsr,
    );
    let envelope = |t: &str| {
        let _ = weft::api::envelope::read(t.as_bytes(), &|_, _| Ok(()));
    };
    linear(
        "envelope keys",
        1_000,
        |n| {
            let fields: String = (0..n).map(|i| format!(",\"k{i}\":{i}")).collect();
            format!(
                "{{\"command\":\"GetBatchInstance\",\"payload\":{{\"batchInstanceId\":1{fields}}}}}"
            )
        },
        envelope,
    );
    // A long key above many values: paths are not copied for every value.
    linear(
        "long key over many values",
        2_000,
        |n| {
            format!(
                "{{\"command\":\"x\",\"payload\":{{\"{}\":[{}{{\"a\":0,\"a\":0}}]}}}}",
                "k".repeat(n),
                "{\"a\":0,\"a\":0},".repeat(n)
            )
        },
        envelope,
    );
    linear(
        "envelope duplicates",
        1_000,
        |n| {
            format!(
                "{{\"command\":\"x\",\"payload\":{{{}\"a\":1}}}}",
                "\"a\":1,".repeat(n)
            )
        },
        envelope,
    );
    linear(
        "key file lines",
        1_000,
        |n| {
            (0..n)
                .map(|i| format!("{i}|sqlite|/d/{i}.db|u|p{i}|a=1;b=2\n"))
                .collect()
        },
        |t| {
            let _ = weft_core::keys::KeyFile::parse(Path::new("keyfile"), t);
        },
    );
    linear(
        "jdbcList lines",
        1_000,
        |n| {
            (0..n)
                .map(|i| format!("d{i}:driver {i}:file:/j/{i}.jar\n"))
                .collect()
        },
        |t| {
            let _ = weft_cli::jdbc_manager::parse_list(t);
        },
    );
}
