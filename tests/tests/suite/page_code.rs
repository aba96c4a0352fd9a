//! The web page's code without a browser: its unit tests in Node's test runner
//! (`tests/web/*.test.js`: ordering, counts, the critical path, diffs, error places, times
//! and the axis), its JSDoc types checked by `tsc --checkJs` (TypeScript from npm, which
//! `./test.sh` installs into `target/typescript`; the page itself is served as written), and
//! the rule that no script puts text on the page as markup.

use std::path::{Path, PathBuf};
use std::process::Command;
use weft_tests::server::root;

/// Every script of the page, by path.
fn scripts(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("host/web") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            out.extend(scripts(&path));
        } else if path.extension().is_some_and(|e| e == "js") {
            out.push(path);
        }
    }
    out
}

fn run(cmd: &mut Command, what: &str) {
    let o = cmd.current_dir(root()).output().expect(what);
    assert!(
        o.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn the_pages_unit_tests_pass_in_node() {
    run(
        Command::new("node").args(["--test", "tests/web/"]),
        "node --test tests/web/",
    );
}

#[test]
fn the_pages_types_check_with_tsc() {
    let tsc = root().join("target/typescript/node_modules/typescript/bin/tsc");
    assert!(
        tsc.is_file(),
        "TypeScript is missing at {}: ./test.sh installs it (npm install --prefix target/typescript typescript@5.9.3)",
        tsc.display()
    );
    run(
        Command::new("node")
            .arg(&tsc)
            .args(["-p", "host/web/tsconfig.json"]),
        "tsc --checkJs of host/web",
    );
}

#[test]
fn no_script_of_the_page_writes_markup() {
    let files = scripts(&root().join("host/web"));
    assert!(files.len() > 10, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a script");
        for banned in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
        ] {
            assert!(
                !text.contains(banned),
                "{} uses {banned}: the page writes text only",
                file.display()
            );
        }
    }
}
