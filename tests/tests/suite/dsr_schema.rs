//! `docs/dsr.schema.json`, the JSON Schema editors and other tools check `.dsr` documents
//! with, checked by a real validator (Python's `jsonschema`, by the draft the schema names, as such
//! tools read it) against every example and every test document that weft itself reads without an
//! error: the schema must accept whatever weft accepts.

use crate::common;

use common::*;
use std::path::Path;
use weft_tests::documents::test_documents;

/// Every file under `dir` whose name ends in `.dsr`.
fn dsr_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("a folder").flatten() {
        let p = e.path();
        if p.is_dir() {
            dsr_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "dsr") {
            out.push(p);
        }
    }
}

#[test]
fn the_json_schema_accepts_every_document_weft_accepts() {
    let root = root();
    let mut files = Vec::new();
    dsr_files(&root.join("examples"), &mut files);
    assert!(files.len() >= 8, "the examples: {files:?}");
    let mut texts: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            (
                f.display().to_string(),
                std::fs::read_to_string(f).expect("example"),
            )
        })
        .collect();
    for (i, t) in test_documents(&root).into_iter().enumerate() {
        texts.push((format!("test document {i}"), t));
    }
    let dir = tempfile::tempdir().expect("dir");
    let mut checked = Vec::new();
    for (name, text) in &texts {
        let (doc, problems) = weft_dsr::parse(text);
        let example = name.ends_with(".dsr");
        if doc.is_none() || problems.has_errors() {
            assert!(!example, "an example weft does not read: {name}");
            continue;
        }
        let root = weft_dsr::hjson::parse(text).expect("read once already");
        let json = dir.path().join(format!("{}.json", checked.len()));
        std::fs::write(&json, root.value.to_json().to_string()).expect("json");
        checked.push((name.clone(), json));
    }
    assert!(
        checked.len() > texts.len() / 2,
        "{} of {}",
        checked.len(),
        texts.len()
    );
    // One run of the validator over all of them; it prints each document it refuses.
    let script = r#"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
cls = jsonschema.validators.validator_for(schema)
cls.check_schema(schema)
validator = cls(schema)
bad = 0
for path in sys.argv[2:]:
    for e in validator.iter_errors(json.load(open(path))):
        bad += 1
        print(path, "/".join(str(p) for p in e.absolute_path), e.message)
sys.exit(1 if bad else 0)
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(root.join("docs/dsr.schema.json"))
        .args(checked.iter().map(|(_, p)| p))
        .output()
        .expect("python3 (tests/install-needs.sh installs it with python3-jsonschema)");
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let named = checked.iter().fold(said.clone(), |s, (name, p)| {
        s.replace(&p.display().to_string(), name)
    });
    assert!(
        out.status.success(),
        "the schema refuses what weft reads:\n{named}"
    );
}
