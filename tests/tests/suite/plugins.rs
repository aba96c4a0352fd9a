//! End to end: plugin loading and its failures. A library built against an incompatible sdk
//! and a shared library that is not a plugin are refused with one line each, and the server
//! starts anyway; a plugin that panics in `validate` or in `run` turns into an error, and the
//! server keeps serving.

use crate::common;

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
            .contains("panicked at tests/fixtures/plugins/panics/src/lib.rs:"),
        "{v}"
    );
    assert!(
        d["message"]
            .as_str()
            .unwrap_or("")
            .contains(": Panicky was asked to panic in validate"),
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
    let reg =
        weft_core::plugins::Registry::load(&[(dir, false), (home.path().join("plugins"), true)]);
    let (doc, problems) = weft_dsr::parse(&panicky_sheet("calm"));
    assert!(!problems.has_errors());
    let plan =
        weft_engine::exec::actions_of(&doc.expect("doc").sheets[0], &|_| weft_sdk::Dialect::Sqlite)
            .remove(0);
    let kf = home.path().join("keyfile");
    std::fs::write(&kf, "").expect("keyfile");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&kf, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let keys = weft_core::keys::KeyFile::load(&kf).expect("keys");
    let ran = weft_engine::exec::run_action(&reg, &keys, &plan, &[]);
    let e = ran.outcome.expect_err("panicked").to_string();
    assert!(
        e.contains("panicked at tests/fixtures/plugins/panics/src/lib.rs:")
            && e.contains(": Panicky panics in run"),
        "{e}"
    );
    // The process is alive and the module can be called again.
    assert!(
        weft_engine::exec::run_action(&reg, &keys, &plan, &[])
            .outcome
            .is_err()
    );
}

/// The abort fixture's manifest: built with `panic = "abort"`.
fn abort_manifest() -> String {
    format!(
        "[package]\nname = \"weft_fixture_abort\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n\
         [lib]\ncrate-type = [\"cdylib\"]\npath = \"{}\"\n\n\
         [features]\nmacro = []\n\n\
         [dependencies]\nweft_sdk = {{ path = \"{}\" }}\nabi_stable = \"0.11\"\n\n\
         [profile.dev]\npanic = \"abort\"\n\n[workspace]\n",
        root()
            .join("tests/fixtures/abort_plugin/src/lib.rs")
            .display(),
        root().join("sdk").display()
    )
}

#[test]
fn a_plugin_built_with_panic_abort_does_not_compile_with_the_macro_and_is_refused_at_load() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("abort");
    let o = weft_tests::outside::build(&dir, &abort_manifest(), &["--features", "macro"]);
    let (out, err) = text(&o);
    assert!(
        !o.status.success(),
        "export_plugin! compiled under panic = \"abort\""
    );
    assert!(
        err.contains("a weft plugin must be built with panic = \"unwind\""),
        "{out}{err}"
    );
    // Written by hand, the library builds; the host refuses it before calling into it.
    let o = weft_tests::outside::build(&dir, &abort_manifest(), &[]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let home = tempfile::tempdir().expect("home");
    let plugins = home.path().join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugins");
    std::fs::copy(
        dir.join("target/debug/libweft_fixture_abort.so"),
        plugins.join("libweft_fixture_abort.so"),
    )
    .expect("install");
    let o = std::process::Command::new(weft_bin())
        .args(["plugins", "--home"])
        .arg(home.path())
        .output()
        .expect("weft plugins");
    let (out, err) = text(&o);
    let refused: Vec<&str> = out.lines().filter(|l| l.starts_with("refused: ")).collect();
    assert_eq!(refused.len(), 1, "{out}{err}");
    assert!(
        refused[0].contains("libweft_fixture_abort.so is built with panic = \"abort\""),
        "{}",
        refused[0]
    );
}

#[test]
fn replacing_an_installed_library_while_the_server_runs_changes_nothing_until_it_restarts() {
    let home = tempfile::tempdir().expect("home");
    let plugins = home.path().join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugins");
    let installed = plugins.join("libweft_fixture_panics.so");
    std::fs::copy(fixture("panics"), &installed).expect("install");
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    // A run whose module is executing its own code in the library, in a loop until halted.
    let (id, _) = patient_run(&w);
    // What `cp other.so installed.so` does: the same file, rewritten in place. Loaded from
    // the file itself, the running module's next instruction came from the new bytes and the
    // server died with a segfault.
    let other = std::fs::read(fixture("not_a_plugin")).expect("other library");
    std::fs::write(&installed, other).expect("overwrite in place");
    let (st, v) = command(
        &w,
        "HaltBatchInstance",
        serde_json::json!({"batchInstanceId": id}),
    );
    assert_eq!(st, 200, "{v}");
    let (st, v) = command(
        &w,
        "WaitBatchInstance",
        serde_json::json!({"batchInstanceId": id, "timeoutSeconds": 60}),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        v["payload"]["state"], "halted",
        "the module went on from its private copy and stopped when halted: {v}"
    );
    let (st, v) = post(&w.url, deploy_body(&panicky_sheet("calm")));
    assert_eq!(st, 200, "the server went on with its copy: {v}");
    let copies: Vec<String> = std::fs::read_dir(w.home.path().join("plugins/.loaded"))
        .expect("private copies")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        copies
            .iter()
            .any(|n| n.starts_with("libweft_fixture_panics-")),
        "{copies:?}"
    );
    // The next start loads what is installed now, which is not a plugin.
    let home = w.stop();
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    let (st, v) = post(&w.url, deploy_body(&panicky_sheet("calm")));
    assert_eq!(st, 422, "Panicky is gone after the restart: {v}");
}

#[test]
fn weft_plugins_install_checks_the_library_and_installs_it_whole() {
    let home = tempfile::tempdir().expect("home");
    let install = |file: &std::path::Path| {
        std::process::Command::new(weft_bin())
            .args(["plugins", "install"])
            .arg(file)
            .arg("--home")
            .arg(home.path())
            .output()
            .expect("weft plugins install")
    };
    let o = install(&fixture("not_a_plugin"));
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        err.contains("not installed") && err.contains("is not a weft plugin"),
        "{err}"
    );
    assert!(
        !home
            .path()
            .join("plugins/libweft_fixture_not_a_plugin.so")
            .exists()
    );
    let o = install(&fixture("old_sdk"));
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(err.contains("sdk 0.0.9"), "{err}");
    let o = install(&fixture("panics"));
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        out.contains("installed weft_fixture_panics") && out.contains("modules Panicky"),
        "{out}"
    );
    assert!(out.contains("restart it"), "{out}");
    let installed = home.path().join("plugins/libweft_fixture_panics.so");
    assert_eq!(
        std::fs::read(&installed).expect("installed"),
        std::fs::read(fixture("panics")).expect("fixture")
    );
    // An update of the same file installs (it replaces the one that provides its names),
    // and a link planted at the partial copy's name is removed, not written through.
    let victim = home.path().join("victim");
    std::fs::write(&victim, "keep me").expect("victim");
    std::os::unix::fs::symlink(
        &victim,
        home.path()
            .join("plugins/.libweft_fixture_panics.so.installing"),
    )
    .expect("planted link");
    let o = install(&fixture("panics"));
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "keep me");
    assert_eq!(
        std::fs::read(&installed).expect("installed"),
        std::fs::read(fixture("panics")).expect("fixture")
    );
    assert!(
        !home
            .path()
            .join("plugins/.libweft_fixture_panics.so.installing")
            .exists()
    );
    // The same modules under another file name would be refused at the next start: the
    // install refuses it now, naming the module and the library that keeps it.
    let elsewhere = tempfile::tempdir().expect("elsewhere");
    let twin = elsewhere.path().join("libweft_fixture_twin.so");
    std::fs::copy(fixture("panics"), &twin).expect("twin");
    let o = install(&twin);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        err.contains("module `Panicky` is already provided by")
            && err.contains(&installed.display().to_string()),
        "{err}"
    );
    assert!(!home.path().join("plugins/libweft_fixture_twin.so").exists());
    // Put there by hand, the twin is refused at load with the same words, in `weft plugins`.
    std::fs::copy(&twin, home.path().join("plugins/libweft_fixture_twin.so")).expect("by hand");
    let o = std::process::Command::new(weft_bin())
        .args(["plugins", "--home"])
        .arg(home.path())
        .output()
        .expect("weft plugins");
    let (out, _) = text(&o);
    let twin_line = out
        .lines()
        .find(|l| l.starts_with("refused: ") && l.contains("libweft_fixture_twin.so"))
        .unwrap_or_else(|| panic!("no refusal of the twin in:\n{out}"));
    assert!(
        twin_line.contains("module `Panicky` is already provided by")
            && twin_line.contains("libweft_fixture_panics.so")
            && twin_line.contains("loaded first"),
        "{twin_line}"
    );
    std::fs::remove_file(home.path().join("plugins/libweft_fixture_twin.so")).expect("remove");
    let leftovers: Vec<_> = std::fs::read_dir(home.path().join("plugins"))
        .expect("plugins")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let o = install(std::path::Path::new("/no/such/file.so"));
    assert_eq!(o.status.code(), Some(2));
}

/// Builds `examples/plugin-rowcount` as its author would (its own crate, the sdk by path);
/// the library's path.
fn build_example() -> std::path::PathBuf {
    let example = root().join("examples/plugin-rowcount");
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("example-rowcount");
    std::fs::create_dir_all(dir.join("src")).expect("example folder");
    std::fs::copy(example.join("src/lib.rs"), dir.join("src/lib.rs")).expect("example source");
    let manifest = std::fs::read_to_string(example.join("Cargo.toml")).expect("manifest");
    let sdk = format!("path = \"{}\"", root().join("sdk").display());
    let sql = format!("path = \"{}\"", root().join("host/sql_support").display());
    assert!(manifest.contains("path = \"../../sdk\""), "{manifest}");
    let manifest = manifest
        .replace("path = \"../../sdk\"", &sdk)
        .replace("path = \"../../host/sql_support\"", &sql);
    let o = weft_tests::outside::build(&dir, &manifest, &[]);
    let (out, err) = text(&o);
    assert!(
        o.status.success(),
        "the example plugin did not build:\n{out}{err}"
    );
    // Its unit tests, on the sdk's fakes (an in-memory SQLite, a recorded log).
    let o = weft_tests::outside::cargo(&dir, &manifest, "test", &[]);
    let (out, err) = text(&o);
    assert!(
        o.status.success(),
        "the example plugin's tests failed:\n{out}{err}"
    );
    let library = dir.join("target/debug/libweft_plugin_rowcount.so");
    // The fakes are a dev-dependency: the library itself links no SQLite.
    let bytes = std::fs::read(&library).expect("library");
    assert!(
        !bytes.windows(13).any(|w| w == b"sqlite3_open_"),
        "the plugin library links SQLite"
    );
    library
}

#[test]
fn the_example_plugin_builds_installs_and_runs() {
    let library = build_example();
    let home = tempfile::tempdir().expect("home");
    let o = std::process::Command::new(weft_bin())
        .args(["plugins", "install"])
        .arg(&library)
        .arg("--home")
        .arg(home.path())
        .output()
        .expect("weft plugins install");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("modules Rowcount"), "{out}");
    let data = home.path().join("data.db");
    {
        let c = rusqlite::Connection::open(&data).expect("data");
        c.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (3);")
            .expect("table");
    }
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    w.add_keys(&format!("5|sqlite|{}|||\n", data.display()));
    let sheet = |min_rows: i64| {
        format!(
            "{{ version: 1, transformationData: {{\n folders: [ {{ id: 1, path: \"/ex\" }} ]\n connections: [ {{ id: 5, name: \"data\", type: \"sqlite\" }} ]\n sheets: [ {{ id: 40, attributes: {{ name: \"count\", folder_id: 1, folder: \"/ex\" }}\n nodes: [\n  {{ id: 41, type: 1, attributes: {{ field1: \"t\", objectTypeId: 1, connectionId: 5 }} }}\n  {{ id: 42, type: 0, attributes: {{ module: \"Rowcount\", name: \"count t\",\n   minRows: {min_rows} }} }}\n ]\n edges: [ {{ id: 43, from: 41, to: 42 }} ] }} ] }} }}"
        )
    };
    // Its problem about `minRows` is placed at `minRows`, under its own code.
    let text_bad = sheet(-1);
    let (st, v) = post(&w.url, deploy_body(&text_bad));
    assert_eq!(st, 422, "{v}");
    let d = &v["error"]["details"][0];
    assert_eq!(d["code"], "Rowcount.minRows", "{v}");
    let line = text_bad
        .lines()
        .position(|l| l.contains("minRows: -1"))
        .expect("line");
    let column = text_bad
        .lines()
        .nth(line)
        .expect("line")
        .find("-1")
        .expect("-1")
        + 1;
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(line as u64 + 1), Some(column as u64)),
        "{v}"
    );
    // Deployed and run: it counts through the host's connection.
    let (st, v) = post(&w.url, deploy_body(&sheet(2)));
    assert_eq!(st, 200, "{v}");
    let run = serde_json::json!({"command": "RunElements", "payload": {"batchExecution": {"batchName": "ex", "user": "t", "elementList": [{"elementType": "S", "elementId": 40}]}}});
    let (st, v) = post(&w.url, run.to_string().into_bytes());
    assert_eq!(st, 200, "{v}");
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    let wait = serde_json::json!({"command": "WaitBatchInstance", "payload": {"batchInstanceId": id, "timeoutSeconds": 60}});
    let (st, v) = post(&w.url, wait.to_string().into_bytes());
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["state"], "finished", "{v}");
    let action = &v["payload"]["actions"][0];
    assert_eq!(action["rowsRead"], 3, "{v}");
    assert!(
        action["log"]
            .as_array()
            .is_some_and(|l| l.iter().any(|x| x == "t: 3 rows")),
        "{v}"
    );
}

#[test]
fn weft_plugins_url_asks_the_running_server_what_it_loaded() {
    let home = tempfile::tempdir().expect("home");
    with_fixtures(home.path());
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    let o = std::process::Command::new(weft_bin())
        .args(["plugins", "--url", &w.url])
        .output()
        .expect("weft plugins --url");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    for line in [
        "  modules: Upsert",
        "    Upsert: ",
        "      keys (String): ",
        "  modules: Panicky",
        "native connection types: sqlite",
    ] {
        assert!(out.contains(line), "{line:?} missing from:\n{out}");
    }
    let refused: Vec<&str> = out.lines().filter(|l| l.starts_with("refused: ")).collect();
    assert_eq!(refused.len(), 2, "{out}");
    assert!(refused.iter().any(|l| l.contains("sdk 0.0.9")), "{out}");
    // Installed afterwards: not what the server loaded.
    std::fs::copy(
        fixture("panics"),
        w.home.path().join("plugins/libweft_fixture_later.so"),
    )
    .expect("install later");
    let o = std::process::Command::new(weft_bin())
        .args(["plugins", "--url", &w.url])
        .output()
        .expect("weft plugins --url");
    assert!(
        !text(&o).0.contains("libweft_fixture_later"),
        "{}",
        text(&o).0
    );
}

/// Deploys a sheet whose action is the fixture module `Patient` (it writes a row into `t`
/// of connection 1, `data.db` in HOME, then waits in its own code until it is halted),
/// starts it, and waits until its log says it waits: the instance and the data file.
fn patient_run(w: &Weft) -> (i64, PathBuf) {
    let data = w.home.path().join("data.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("CREATE TABLE t (x INTEGER);")
        .expect("table");
    w.add_keys(&format!("1|sqlite|{}|||\n", data.display()));
    let doc = serde_json::json!({"version": 1, "transformationData": {
        "folders": [{"id": 1, "path": "/p"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [{"id": 1, "attributes": {"name": "p", "folder_id": 1, "folder": "/p"},
            "nodes": [
                {"id": 1, "type": 0, "attributes": {"module": "Patient", "name": "wait", "action": "INSERT INTO t VALUES (1)"}},
                {"id": 2, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 1}}],
            "edges": [{"id": 1, "from": 1, "to": 2}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    let (st, v) = command(
        w,
        "RunElements",
        serde_json::json!({"batchExecution": {"batchName": "b", "user": "u", "elementList": [{"elementType": "S", "elementId": 1}]}}),
    );
    assert_eq!(st, 200, "{v}");
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    // Its line says it works (it wrote its row and waits, for up to a minute).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (_, v) = command(
            w,
            "GetBatchInstance",
            serde_json::json!({"batchInstanceId": id}),
        );
        let log = v["payload"]["actions"][0]["log"].to_string();
        if log.contains("Patient waits for the halt.") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "it never ran: {v}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    (id, data)
}

#[test]
fn a_halt_reaches_a_running_module_which_stops_and_is_rolled_back() {
    let home = tempfile::tempdir().expect("home");
    with_fixtures(home.path());
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    let (id, data) = patient_run(&w);
    let asked = std::time::Instant::now();
    let (st, v) = command(
        &w,
        "HaltBatchInstance",
        serde_json::json!({"batchInstanceId": id}),
    );
    assert_eq!(st, 200, "{v}");
    let (st, v) = command(
        &w,
        "WaitBatchInstance",
        serde_json::json!({"batchInstanceId": id, "timeoutSeconds": 60}),
    );
    let took = asked.elapsed();
    eprintln!("the module stopped {took:?} after the halt");
    assert_eq!(st, 200, "{v}");
    assert!(
        took < std::time::Duration::from_secs(1),
        "the halt took {took:?}"
    );
    let inst = &v["payload"];
    assert_eq!(inst["state"], "halted", "{inst}");
    let a = &inst["actions"][0];
    assert_eq!(a["state"], "H", "{inst}");
    assert!(
        a["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("halted on request: ") && e.contains("Patient")),
        "{inst}"
    );
    let n: i64 = rusqlite::Connection::open(&data)
        .expect("data")
        .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
        .expect("count");
    assert_eq!(n, 0, "its row was rolled back");
}

#[test]
fn weft_plugins_new_writes_a_crate_that_builds_passes_its_tests_and_loads() {
    let work = tempfile::tempdir().expect("work");
    let sdk = root().join("sdk");
    let new = |args: &[&str]| {
        let o = std::process::Command::new(weft_bin())
            .args(["plugins", "new"])
            .args(args)
            .current_dir(work.path())
            .output()
            .expect("weft plugins new");
        let (out, err) = text(&o);
        (o.status.code(), out, err)
    };
    let dir = work.path().join("dedupe");
    let dir_arg = dir.to_string_lossy().into_owned();
    let sdk_arg = sdk.to_string_lossy().into_owned();
    // A name that cannot be a crate's is a usage error; nothing is written.
    let (code, _, err) = new(&["Dedupe-1", "--dir", &dir_arg, "--sdk", &sdk_arg]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`Dedupe-1` is not a plugin name"), "{err}");
    assert!(!dir.exists());
    // A folder that is no sdk is refused.
    let (code, _, err) = new(&["dedupe", "--dir", &dir_arg, "--sdk", &dir_arg]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("holds no weft sdk"), "{err}");
    let (code, out, err) = new(&["dedupe", "--dir", &dir_arg, "--sdk", &sdk_arg]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("wrote") && out.contains("cargo test"), "{out}");
    // Never over what is there.
    let (code, _, err) = new(&["dedupe", "--dir", &dir_arg, "--sdk", &sdk_arg]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("exists and is not empty"), "{err}");
    // Without --sdk, the sdk of INSTALL (this checkout) and the folder ./NAME.
    let (code, out, err) = new(&["other"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(work.path().join("other/src/lib.rs").is_file());
    // It builds and its tests pass, offline with the workspace's versions, as an author's
    // crate (the target folder is the example's, which holds the same dependencies).
    std::fs::copy(root().join("Cargo.lock"), dir.join("Cargo.lock")).expect("lock file");
    let target = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("example-rowcount")
        .join("target");
    let cargo = |command: &str| {
        std::process::Command::new(option_env!("CARGO").unwrap_or("cargo"))
            .args([command, "--offline", "--quiet", "--manifest-path"])
            .arg(dir.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&target)
            .env_remove("CARGO_TARGET_DIR")
            .env("CARGO_PROFILE_DEV_DEBUG", "line-tables-only")
            .output()
            .expect("cargo")
    };
    let o = cargo("test");
    let (out, err) = text(&o);
    assert!(o.status.success(), "its tests failed:\n{out}{err}");
    let o = cargo("build");
    let (out, err) = text(&o);
    assert!(o.status.success(), "it did not build:\n{out}{err}");
    let home = tempfile::tempdir().expect("home");
    let o = std::process::Command::new(weft_bin())
        .args(["plugins", "install"])
        .arg(target.join("debug/libweft_plugin_dedupe.so"))
        .arg("--home")
        .arg(home.path())
        .output()
        .expect("weft plugins install");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("modules Dedupe"), "{out}");
}

#[test]
fn every_home_loads_the_same_copies_of_the_built_plugins() {
    // Two servers on two HOMEs, from the checkout's build: both map the copies in the store
    // beside the libraries, and neither HOME holds a copy of its own.
    let (a, b) = (Weft::start(), Weft::start());
    let store = weft_bin().parent().expect("target dir").join(".loaded");
    let mapped = |w: &Weft| -> Vec<String> {
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", w.child.id())).expect("maps");
        let mut libs: Vec<String> = maps
            .lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .filter(|p| p.contains("libweft_plugin_"))
            .map(str::to_owned)
            .collect();
        libs.sort();
        libs.dedup();
        libs
    };
    let (in_a, in_b) = (mapped(&a), mapped(&b));
    assert!(in_a.len() >= 9, "{in_a:?}");
    assert_eq!(in_a, in_b);
    assert!(
        in_a.iter()
            .all(|p| p.starts_with(&store.display().to_string())),
        "{in_a:?}"
    );
    for w in [&a, &b] {
        let own: Vec<_> = std::fs::read_dir(w.home.path().join("plugins/.loaded"))
            .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(own.is_empty(), "{own:?}");
    }
}
