//! The plugin ABI grows without refusing plugins built before: a plugin built against a copy
//! of the sdk with one member fewer in an open set (`Dialect::Hsqldb` removed, as if it had
//! been added since) loads into this host, meets the member it does not know as unknown
//! without failing, and runs with values of every kind crossing the boundary.
//!
//! The copy (with the sdk's own manifest) and the plugin (depending on nothing but the sdk,
//! not even abi_stable) are built outside the workspace, the way a plugin author builds
//! against a path dependency; the build is cached under the target directory, so only the
//! first run pays for it (about a minute in debug).

use crate::common;

use common::actions::plan_in;
use common::*;
use std::path::{Path, PathBuf};
use weft_core::keys::KeyFile;
use weft_core::plugins::Registry;
use weft_sdk::{Dialect, ValidateInput};

/// The member the copy of the sdk leaves out, and the lines that name it.
const REMOVED: &str = "Hsqldb";

/// Copies `sdk/` to `to` without [`REMOVED`]: every line naming it and the doc line of its
/// constant go; the manifest is written for a crate outside the workspace.
fn sdk_copy_without_one_dialect(to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to.join("src")).expect("sdk copy dir");
    let mut removed = 0;
    for entry in std::fs::read_dir(root().join("sdk/src")).expect("sdk sources") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("source");
        let lines: Vec<&str> = text.lines().collect();
        let mut kept = Vec::with_capacity(lines.len());
        for (i, line) in lines.iter().enumerate() {
            let names_it = line.contains(REMOVED);
            let doc_of_it = line.trim_start().starts_with("///")
                && lines
                    .get(i + 1)
                    .is_some_and(|next| next.trim_start().starts_with(&format!("{REMOVED} =")));
            if names_it || doc_of_it {
                removed += 1;
            } else {
                kept.push(*line);
            }
        }
        let name = path.file_name().expect("file name");
        std::fs::write(to.join("src").join(name), kept.join("\n") + "\n").expect("write copy");
    }
    // The constant and its doc line, and the two arms of `of_jdbc_url` and `name`: if the sdk
    // names the member elsewhere, this test must learn about it.
    assert_eq!(
        removed, 4,
        "the sdk names Dialect::{REMOVED} in other places than this test expects"
    );
    // The sdk's own manifest: it inherits nothing from the workspace, so the copy builds
    // on its own.
    std::fs::copy(root().join("sdk/Cargo.toml"), to.join("Cargo.toml")).expect("sdk manifest");
}

/// Builds the fixture plugin against the copy; the path of its library.
fn build_old_plugin() -> PathBuf {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("compat");
    sdk_copy_without_one_dialect(&work.join("sdk"));
    let plugin = work.join("plugin");
    let source = root().join("tests/fixtures/compat_plugin/src/lib.rs");
    let o = weft_tests::outside::build(
        &plugin,
        &format!(
            "[package]\nname = \"weft_fixture_compat\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n\
             [lib]\ncrate-type = [\"cdylib\"]\npath = \"{}\"\n\n\
             [dependencies]\nweft_sdk = {{ path = \"../sdk\" }}\n\n[workspace]\n",
            source.display()
        ),
        &[],
    );
    let (out, err) = text(&o);
    assert!(
        o.status.success(),
        "the old plugin did not build:\n{out}{err}"
    );
    plugin.join("target/debug/libweft_fixture_compat.so")
}

#[test]
fn a_plugin_built_before_a_dialect_was_added_loads_and_meets_it_as_unknown() {
    let library = build_old_plugin();
    let home = tempfile::tempdir().expect("home");
    let plugins = home.path().join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugins dir");
    std::fs::copy(&library, plugins.join("libweft_fixture_compat.so")).expect("install");
    let built_in = weft_bin().parent().expect("target dir").to_path_buf();
    let reg = Registry::load(&[(built_in, false), (plugins, true)]);
    assert!(
        reg.refused.is_empty(),
        "refused: {:?}",
        reg.refused
            .iter()
            .map(|r| r.reason.as_str())
            .collect::<Vec<_>>()
    );
    let module = &reg
        .module("Dialects")
        .expect("the old plugin's module")
        .module;

    // Validation: connection 5 is HSQLDB to the host, a dialect the plugin does not know.
    let dialect = |c: i64| {
        if c == 5 {
            Dialect::Hsqldb
        } else {
            Dialect::Sqlite
        }
    };
    let plan = plan_in(
        "Dialects",
        "SELECT 1",
        serde_json::json!({}),
        &[(5, "legacy")],
        Some((1, "here")),
        &dialect,
    );
    let input = ValidateInput::new(
        plan.id,
        Some(plan.text.as_deref().unwrap_or_default()),
        plan.sdk_attributes(None),
        plan.source_refs(),
        plan.target_refs(),
    );
    let out = module.validate(&input).into_result().expect("validated");
    let messages: Vec<&str> = out.problems().iter().map(|p| p.message()).collect();
    assert_eq!(
        messages,
        [
            "legacy is on Dialect(5), a dialect this plugin does not know",
            "here is on Sqlite, SQLite",
        ]
    );

    // A run: values of every kind the native SQLite connection makes cross to the plugin.
    let kf = home.path().join("keyfile");
    std::fs::write(
        &kf,
        format!("1|sqlite|{}|||\n", home.path().join("one.db").display()),
    )
    .expect("keyfile");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&kf, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let keys = KeyFile::load(&kf).expect("keys");
    let plan = plan_in(
        "Dialects",
        "SELECT 7, 'x', x'00ff', NULL, 1.5",
        serde_json::json!({}),
        &[],
        Some((1, "here")),
        &dialect,
    );
    let ran = weft_engine::exec::run_action(&reg, &keys, &plan, &[]);
    assert_eq!(ran.outcome.map(|o| o.rows_read), Ok(1), "{:?}", ran.log);
    assert_eq!(
        ran.log.last().map(String::as_str),
        Some(r#"Int(7) | Text("x") | Bytes([0, 255]) | Null | Float(1.5)"#),
        "{:?}",
        ran.log
    );
}
