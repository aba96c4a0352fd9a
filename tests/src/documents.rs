//! The documents the tests hold: every text file under a folder by its ending, and the
//! `.dsr` documents written inside the test sources, which the fuzzers take as seeds and the
//! JSON Schema check reads.

use std::path::Path;

/// The text of every file under `dir` (folders included) whose name ends in one of
/// `endings`.
pub fn files(dir: &Path, endings: &[&str], out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            files(&p, endings, out);
        } else if endings.iter().any(|end| p.to_string_lossy().ends_with(end))
            && let Ok(text) = std::fs::read_to_string(&p)
        {
            out.push(text);
        }
    }
}

/// The documents written inside the test sources (raw string literals that hold a
/// `version`), read from the files under `root`: the end-to-end tests and the host's deploy
/// and validation tests, and the deploy tests' fixture of a valid project (the broken
/// cases of `fixtures/cases` are not documents weft accepts).
pub fn test_documents(root: &Path) -> Vec<String> {
    let mut sources = Vec::new();
    let mut documents = Vec::new();
    for (dir, endings) in [
        ("tests/tests", ".rs"),
        ("host/engine/src/deploy", "tests.rs"),
        ("host/engine/src/validate", "tests.rs"),
        ("host/engine/src/deploy/fixtures/one-upsert-sheet", ".dsr"),
    ] {
        // A folder moved away must fail here, not leave the seeds silently fewer.
        let dir = root.join(dir);
        assert!(dir.is_dir(), "no folder {}", dir.display());
        // A fixture file is a document whole; a source holds documents in raw strings.
        let into = if endings == ".dsr" {
            &mut documents
        } else {
            &mut sources
        };
        files(&dir, &[endings], into);
    }
    for source in &sources {
        let mut rest = source.as_str();
        while let Some(start) = rest.find("r#\"") {
            let body = &rest[start + 3..];
            let Some(end) = body.find("\"#") else { break };
            if body[..end].contains("version") {
                documents.push(body[..end].to_owned());
            }
            rest = &body[end + 2..];
        }
    }
    documents
}

/// Copies the tree `from` (files and directories) to `to`.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("ls") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}
