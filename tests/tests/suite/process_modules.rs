//! End to end: process modules (programs with a manifest in HOME/modules speaking JSON over
//! stdin and stdout) in a real `weft serve`: the reference Python module of
//! `examples/modules/min_rows` validated at deploy and run, listed by `weft plugins`; and
//! modules that hang, crash, write garbage, are missing or are halted.

use crate::common;

use common::*;
use serde_json::{Value, json};

/// Installs a module folder `name` in `home/modules` with `manifest` and, when given, an
/// executable `run.sh` holding `script`.
fn install(home: &std::path::Path, name: &str, manifest: Value, script: Option<&str>) {
    use std::os::unix::fs::PermissionsExt;
    let dir = home.join("modules").join(name);
    std::fs::create_dir_all(&dir).expect("module folder");
    std::fs::write(dir.join("weft-module.json"), manifest.to_string()).expect("manifest");
    if let Some(s) = script {
        let path = dir.join("run.sh");
        // Written to a new name and renamed: no write handle stays open on the program
        // that is run (ETXTBSY).
        let tmp = dir.join("run.sh.tmp");
        std::fs::write(&tmp, s).expect("script");
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::rename(&tmp, &path).expect("rename");
    }
}

/// A server whose HOME holds the reference module and the broken ones, connection 1 a data
/// file with tables `few` (2 rows) and `many` (5 rows), and folder 10.
fn server() -> (Weft, std::path::PathBuf) {
    let home = tempfile::tempdir().expect("home");
    let example = root().join("examples/modules/min_rows");
    let dest = home.path().join("modules/min_rows");
    std::fs::create_dir_all(&dest).expect("modules");
    for f in ["weft-module.json", "min_rows.py"] {
        std::fs::copy(example.join(f), dest.join(f)).expect("copy the example");
    }
    let manifest = |name: &str, timeout: u64| json!({"name": name, "command": ["./run.sh"], "timeoutSeconds": timeout});
    // Answers validate at once; hangs on run.
    install(
        home.path(),
        "hangs",
        manifest("Hangs", 1),
        Some(
            "#!/bin/sh\nread -r line\ncase \"$line\" in *'\"validate\"'*) echo '{}'; exit 0;; esac\nsleep 300 &\nwait\n",
        ),
    );
    install(
        home.path(),
        "halts",
        manifest("Sleeps", 600),
        Some(
            "#!/bin/sh\nread -r line\ncase \"$line\" in *'\"validate\"'*) echo '{}'; exit 0;; esac\nsleep 300 &\necho $! > \"$PIDFILE\"\nwait\n",
        ),
    );
    install(
        home.path(),
        "crashes",
        manifest("Crashes", 10),
        Some(
            "#!/bin/sh\nread -r line\ncase \"$line\" in *'\"validate\"'*) echo '{}'; exit 0;; esac\necho 'Traceback: it broke' >&2\nexit 3\n",
        ),
    );
    install(
        home.path(),
        "garbage",
        manifest("Garbage", 10),
        Some(
            "#!/bin/sh\nread -r line\ncase \"$line\" in *'\"validate\"'*) echo '{}'; exit 0;; esac\necho 'this is not json'\n",
        ),
    );
    // Echoes its request (with the connections' passwords) to stderr and fails.
    install(
        home.path(),
        "leaks",
        manifest("Leaks", 10),
        Some(
            "#!/bin/sh\nread -r line\ncase \"$line\" in *'\"validate\"'*) echo '{}'; exit 0;; esac\necho \"$line\" >&2\nexit 1\n",
        ),
    );
    install(
        home.path(),
        "missing",
        json!({"name": "Missing", "command": ["./nowhere.sh"]}),
        None,
    );
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    let data = w.home.path().join("data.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch(
            "CREATE TABLE few (n INTEGER); INSERT INTO few VALUES (1), (2);
             CREATE TABLE many (n INTEGER); INSERT INTO many VALUES (1), (2), (3), (4), (5);",
        )
        .expect("tables");
    w.add_keys(&format!("1|sqlite|{}|||\n", data.display()));
    let (st, v) = post(
        &w.url,
        deploy_body(
            &json!({"version": 1, "transformationData": {
                "folders": [{"id": 10, "path": "/checks"}],
                "connections": [{"id": 1, "name": "data", "type": "sqlite"}]}})
            .to_string(),
        ),
    );
    assert_eq!(st, 200, "{v}");
    (w, data)
}

/// Sheet `id`: one action of `module` with `attributes`, reading `sources`.
fn sheet(id: i64, module: &str, attributes: Value, sources: &[&str]) -> String {
    let action = id * 10;
    let mut attrs = json!({"module": module, "name": format!("check {id}")});
    if let (Some(a), Some(e)) = (attrs.as_object_mut(), attributes.as_object()) {
        a.extend(e.clone());
    }
    let mut nodes = vec![json!({"id": action, "type": 0, "attributes": attrs})];
    let mut edges = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        let n = action + 1 + i as i64;
        nodes.push(json!({"id": n, "type": 1, "attributes": {"field1": s, "objectTypeId": 1, "connectionId": 1}}));
        edges.push(json!({"id": n, "from": n, "to": action}));
    }
    serde_json::to_string_pretty(
        &json!({"version": 1, "transformationData": {"sheets": [{"id": id,
        "attributes": {"name": format!("sheet {id}"), "folder_id": 10, "folder": "/checks"},
        "nodes": nodes, "edges": edges}]}}),
    )
    .expect("json")
}

fn run_sheet(w: &Weft, id: i64) -> i64 {
    let (st, v) = command(
        w,
        "RunElements",
        json!({"batchExecution": {"batchName": "checks", "user": "t", "elementList": [{"elementType": "S", "elementId": id}]}}),
    );
    assert_eq!(st, 200, "{v}");
    v["payload"]["batchInstanceId"].as_i64().expect("id")
}

fn wait(w: &Weft, id: i64) -> Value {
    let (st, v) = command(
        w,
        "WaitBatchInstance",
        json!({"batchInstanceId": id, "timeoutSeconds": 60}),
    );
    assert_eq!(st, 200, "{v}");
    v["payload"].clone()
}

#[test]
fn the_python_reference_module_validates_at_deploy_and_runs_with_its_connections() {
    let (w, _) = server();
    // Listed beside the native modules, with the refused one and why.
    let o = std::process::Command::new(weft_bin())
        .args(["plugins", "--home"])
        .arg(w.home.path())
        .output()
        .expect("weft plugins");
    let (out, _) = text(&o);
    assert!(
        out.contains("process module MinRows (") && out.contains("python3 min_rows.py"),
        "{out}"
    );
    assert!(out.contains("minRows (Integer, default 1)"), "{out}");
    assert!(
        out.contains("refused: process module refused: its program")
            && out.contains("nowhere.sh does not exist"),
        "{out}"
    );
    // A problem the module finds, at its attribute's place.
    let bad = sheet(1, "MinRows", json!({"minRows": -1}), &["few"]);
    let before = w.dump();
    let (st, v) = post(&w.url, deploy_body(&bad));
    assert_eq!(st, 422, "{v}");
    let d = &v["error"]["details"][0];
    assert!(
        d["message"]
            .as_str()
            .is_some_and(|m| m.contains("minRows must be 0 or more, found -1")),
        "{v}"
    );
    let (line, column) = bad
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find("-1").map(|c| (i as i64 + 1, c as i64 + 1)))
        .expect("the value");
    assert_eq!(
        (d["line"].as_i64(), d["column"].as_i64()),
        (Some(line), Some(column)),
        "{v}"
    );
    assert_eq!(before, w.dump());
    // Runs: 2 rows pass minRows 2; 5 rows pass too; then minRows 3 fails on `few`.
    let (st, v) = post(
        &w.url,
        deploy_body(&sheet(
            2,
            "MinRows",
            json!({"minRows": 2}),
            &["few", "many"],
        )),
    );
    assert_eq!(st, 200, "{v}");
    let inst = wait(&w, run_sheet(&w, 2));
    assert_eq!(inst["state"], "finished", "{inst}");
    let action = &inst["actions"][0];
    assert_eq!(action["rowsRead"], 7, "{inst}");
    let log = action["log"].to_string();
    assert!(
        log.contains("few: 2 row(s)") && log.contains("many: 5 row(s)"),
        "{log}"
    );
    let (st, v) = post(
        &w.url,
        deploy_body(&sheet(3, "MinRows", json!({"minRows": 3}), &["few"])),
    );
    assert_eq!(st, 200, "{v}");
    let inst = wait(&w, run_sheet(&w, 3));
    assert_eq!(inst["state"], "failed", "{inst}");
    assert!(
        inst["actions"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("few holds 2 row(s), fewer than minRows 3")),
        "{inst}"
    );
    // The rows its failed answer says it read are recorded with the action.
    assert_eq!(inst["actions"][0]["rowsRead"], 2, "{inst}");
}

#[test]
fn a_module_that_hangs_crashes_or_writes_garbage_fails_its_action_and_a_halt_kills_it() {
    let (w, _) = server();
    for (id, module) in [(11, "Hangs"), (12, "Crashes"), (13, "Garbage")] {
        let (st, v) = post(&w.url, deploy_body(&sheet(id, module, json!({}), &["few"])));
        assert_eq!(st, 200, "{module}: {v}");
    }
    let error = |id: i64| {
        let inst = wait(&w, run_sheet(&w, id));
        assert_eq!(inst["state"], "failed", "{inst}");
        inst["actions"][0]["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let e = error(11);
    assert!(
        e.contains("Hangs did not answer within 1 s; it was killed"),
        "{e}"
    );
    let e = error(12);
    assert!(
        e.contains("Crashes exited with code 3") && e.contains("Traceback: it broke"),
        "{e}"
    );
    let e = error(13);
    assert!(
        e.contains("Garbage answered no valid JSON") && e.contains("beginning `this is not json"),
        "{e}"
    );
    // A missing program is refused when the server starts: its module is unknown.
    let (st, v) = post(
        &w.url,
        deploy_body(&sheet(14, "Missing", json!({}), &["few"])),
    );
    assert_eq!(st, 422, "{v}");
    assert_eq!(
        v["error"]["details"][0]["code"], "node.unknown_module",
        "{v}"
    );
}

#[test]
fn halting_a_process_module_kills_its_process_group() {
    let pidfile = std::env::temp_dir().join(format!("weft-sleeps-{}.pid", std::process::id()));
    let _ = std::fs::remove_file(&pidfile);
    // The module's environment is the server's: PIDFILE tells the script where to write.
    let (w, _) = server();
    let w = Weft::start_in(
        w.stop(),
        &["--listen", "127.0.0.1:0"],
        &[("PIDFILE", pidfile.to_str().expect("utf8"))],
    );
    let (st, v) = post(
        &w.url,
        deploy_body(&sheet(15, "Sleeps", json!({}), &["few"])),
    );
    assert_eq!(st, 200, "{v}");
    let id = run_sheet(&w, 15);
    let pid = wait_for_pid_file(&pidfile, "the module");
    let (st, v) = command(&w, "HaltBatchInstance", json!({"batchInstanceId": id}));
    assert_eq!(st, 200, "{v}");
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "halted", "{inst}");
    assert!(process_gone(&pid), "the module's child is gone");
    let _ = std::fs::remove_file(&pidfile);
}

#[test]
fn the_passwords_a_module_is_given_never_reach_the_log_or_the_error() {
    let (w, data) = server();
    let password = "pa$$-wörd-7";
    w.add_keys(&format!("2|sqlite|{}|reader|{password}|\n", data.display()));
    let doc = json!({"version": 1, "transformationData": {
        "connections": [{"id": 2, "name": "guarded", "type": "sqlite"}],
        "sheets": [{"id": 21, "attributes": {"name": "sheet 21", "folder_id": 10, "folder": "/checks"},
          "nodes": [{"id": 210, "type": 0, "attributes": {"module": "Leaks", "name": "leaks"}},
                    {"id": 211, "type": 1, "attributes": {"field1": "few", "objectTypeId": 1, "connectionId": 2}}],
          "edges": [{"id": 211, "from": 211, "to": 210}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    let inst = wait(&w, run_sheet(&w, 21));
    assert_eq!(inst["state"], "failed", "{inst}");
    let all = inst.to_string();
    assert!(all.contains("exited with code 1"), "{all}");
    assert!(
        all.contains("\\\"password\\\":\\\"***\\\""),
        "the request is in the error, its password hidden: {all}"
    );
    assert!(
        !all.contains("wörd") && !all.contains("w\\u00f6rd"),
        "{all}"
    );
}
