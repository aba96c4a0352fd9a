//! End to end: plugin loading and its failures. A library built against an incompatible sdk
//! and a shared library that is not a plugin are refused with one line each, and the server
//! starts anyway; a plugin that panics in `validate` or in `run` turns into an error, and the
//! server keeps serving.

mod common;

use common::*;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    weft_bin()
        .parent()
        .expect("target dir")
        .join(format!("libweft_fixture_{name}.so"))
}

fn with_fixtures(home: &std::path::Path) {
    let plugins = home.join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugins dir");
    for name in ["old_sdk", "not_a_plugin", "panics"] {
        let f = fixture(name);
        assert!(
            f.is_file(),
            "{} is missing: build it with `cargo build --workspace`",
            f.display()
        );
        std::fs::copy(&f, plugins.join(f.file_name().expect("name"))).expect("copy fixture");
    }
}

#[test]
fn weft_plugins_lists_what_loaded_and_what_was_refused() {
    let home = tempfile::tempdir().expect("home");
    with_fixtures(home.path());
    let o = std::process::Command::new(weft_bin())
        .args(["plugins", "--home"])
        .arg(home.path())
        .output()
        .expect("weft plugins");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    for m in [
        "modules: Insert",
        "modules: Sql",
        "modules: Transfer",
        "modules: Upsert",
        "object types: 1 table, 2 view",
        "modules: Panicky",
    ] {
        assert!(out.contains(m), "{m} missing from:\n{out}");
    }
    let refused: Vec<&str> = out.lines().filter(|l| l.starts_with("refused: ")).collect();
    assert_eq!(refused.len(), 2, "{out}");
    let old = refused
        .iter()
        .find(|l| l.contains("old_sdk"))
        .expect("old sdk line");
    assert!(
        old.contains("libweft_fixture_old_sdk.so")
            && old.contains("sdk 0.0.9")
            && old.contains(&format!("sdk {}", weft_sdk::SDK_VERSION)),
        "{old}"
    );
    let not = refused
        .iter()
        .find(|l| l.contains("not_a_plugin"))
        .expect("not a plugin line");
    assert!(not.contains("is not a weft plugin"), "{not}");
}

fn panicky_sheet(text: &str) -> String {
    serde_json::json!({"version": 1, "transformationData": {
        "folders": [{"id": 1, "path": "/p"}],
        "sheets": [{"id": 1, "attributes": {"name": "p", "folder_id": 1, "folder": "/p"},
            "nodes": [{"id": 1, "type": 0, "attributes": {"module": "Panicky", "name": "boom", "action": text}}]}]}})
    .to_string()
}

#[test]
fn a_panic_in_validate_rejects_the_deploy_and_the_server_goes_on() {
    let home = tempfile::tempdir().expect("home");
    with_fixtures(home.path());
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    let before = w.dump();
    let (st, v) = post(&w.url, deploy_body(&panicky_sheet("please panic")));
    assert_eq!(st, 422, "{v}");
    let d = &v["error"]["details"][0];
    assert_eq!(d["code"], "module.failed", "{v}");
    assert!(
        d["message"]
            .as_str()
            .unwrap_or("")
            .contains("panicked: Panicky was asked to panic in validate"),
        "{v}"
    );
    assert_eq!(before, w.dump());
    // Still serving, and the same module without the trigger deploys.
    let (st, v) = post(&w.url, deploy_body(&panicky_sheet("calm")));
    assert_eq!(st, 200, "{v}");
    // The refusals are in the log too.
    let logs: String = std::fs::read_dir(w.home.path().join("logs"))
        .expect("logs")
        .filter_map(Result::ok)
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect();
    assert!(logs.contains("sdk 0.0.9"), "{logs}");
}

#[test]
fn a_panic_in_run_fails_the_action_only() {
    let dir = weft_bin().parent().expect("target dir").to_path_buf();
    let home = tempfile::tempdir().expect("home");
    with_fixtures(home.path());
    let reg = weft::plugins::Registry::load(&[(dir, false), (home.path().join("plugins"), true)]);
    let (doc, problems) = weft::dsr::parse(&panicky_sheet("calm"));
    assert!(!problems.has_errors());
    let plan = weft::exec::actions_of(&doc.expect("doc").sheets[0], &|_| weft_sdk::Dialect::Sqlite)
        .remove(0);
    let kf = home.path().join("keyfile");
    std::fs::write(&kf, "").expect("keyfile");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&kf, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let keys = weft::keys::KeyFile::load(&kf).expect("keys");
    let ran = weft::exec::run_action(&reg, &keys, &plan, &[]);
    let e = ran.outcome.expect_err("panicked");
    assert!(e.contains("panicked: Panicky panics in run"), "{e}");
    // The process is alive and the module can be called again.
    assert!(
        weft::exec::run_action(&reg, &keys, &plan, &[])
            .outcome
            .is_err()
    );
}
