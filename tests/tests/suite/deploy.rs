//! End to end: the real `weft serve` on a free port with a fresh home, deploys through
//! `bin/deploySheet.sh` and through raw HTTP, and the repository file checked after each.

use crate::common;

use common::*;

#[test]
fn deploy_sheet_script_deploys_the_quickstart() {
    let w = Weft::start();
    for f in ["1-folder.dsr", "2-connection.dsr"] {
        let o = w.script(
            "deploySheet.sh",
            &["--file", example(f).to_str().expect("utf8")],
            None,
        );
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{out}{err}");
        assert_eq!(
            out.lines().next(),
            Some("Deployment without errors"),
            "{out}"
        );
    }
    // The sheet from standard input, with the URL named explicitly.
    let sheet = std::fs::read_to_string(example("3-sheet.dsr")).expect("example");
    let o = w.script("deploySheet.sh", &["--url", &w.url], Some(&sheet));
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.starts_with("Deployment without errors"), "{out}");
    let dump = w.dump();
    assert!(
        dump.contains("\"load customers\"") && dump.contains("\"/sales\""),
        "{dump}"
    );
}

#[test]
fn deploy_sheet_test_and_verbose() {
    let w = Weft::start();
    let folder = example("1-folder.dsr");
    let before = w.dump();
    let o = w.script(
        "deploySheet.sh",
        &[
            "--test",
            "--verbose",
            "--file",
            folder.to_str().expect("utf8"),
        ],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.starts_with("Deployment without errors"), "{out}");
    assert!(
        err.contains(&format!("url: {}", w.url)),
        "--verbose names the URL: {err}"
    );
    assert!(
        err.contains("\"dryRun\":true")
            && err.contains("\"validate\":true")
            && err.contains("\"intoFolder\":null"),
        "--verbose names the options in force, defaults included: {err}"
    );
    assert!(
        err.contains("(from key file entry weft_server"),
        "--verbose says where the URL came from: {err}"
    );
    assert!(
        err.contains(&format!("file: {}", folder.display())),
        "--verbose names the file: {err}"
    );
    assert_eq!(before, w.dump(), "--test changed the repository");
    // --option as JSON, with a string boolean.
    let o = w.script(
        "deploySheet.sh",
        &[
            "--option",
            r#"{"dryRun": "true", "validate": true}"#,
            "--file",
            folder.to_str().expect("utf8"),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert_eq!(before, w.dump(), "dryRun changed the repository");
    let o = w.script(
        "deploySheet.sh",
        &[
            "--option",
            "{not json",
            "--file",
            folder.to_str().expect("utf8"),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("--option is not valid JSON"));
    // Options the server would refuse are refused before sending, each with its place in
    // the option's text, by the server's own reader.
    let o = w.script(
        "deploySheet.sh",
        &[
            "--option",
            "{\"dryRun\": \"yes\",\n \"intoFoldr\": 3}",
            "--file",
            folder.to_str().expect("utf8"),
        ],
        None,
    );
    let err = text(&o).1;
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--option:1:12: option `dryRun` must be true or false"),
        "{err}"
    );
    assert!(
        err.contains("--option:2:2: unknown deploy option `intoFoldr`")
            && err.contains("did you mean `intoFolder`?"),
        "{err}"
    );
    assert_eq!(
        before,
        w.dump(),
        "a refused --option changed the repository"
    );
}

#[test]
fn deploy_sheet_reports_problems_as_file_line_column() {
    let w = Weft::start();
    let dir = tempfile::tempdir().expect("dir");
    let bad = dir.path().join("bad.dsr");
    let sheet = std::fs::read_to_string(example("3-sheet.dsr")).expect("example");
    std::fs::write(&bad, sheet.replace("module: Upsert", "module: Upsrt")).expect("write");
    let before = w.dump();
    let o = w.script(
        "deploySheet.sh",
        &["--file", bad.to_str().expect("utf8")],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "invalid content exits 1: {out}{err}"
    );
    assert!(!out.contains("Deployment without errors"));
    // The folder does not exist yet either: every problem, each with its place.
    let line = sheet
        .lines()
        .position(|l| l.contains("module: Upsert"))
        .expect("line")
        + 1;
    let expected = format!(
        "{}:{line}:23: module `Upsrt` is not provided by any loaded plugin",
        bad.display()
    );
    assert!(err.contains(&expected), "expected {expected:?} in:\n{err}");
    assert!(err.contains("sheet 100: folder 10 does not exist"), "{err}");
    assert_eq!(before, w.dump());
}

#[test]
fn deploy_sheet_without_a_reachable_service_exits_3() {
    let home = tempfile::tempdir().expect("home");
    let folder = example("1-folder.dsr");
    // A port that nothing listens on: bind, read the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let url = format!("http://127.0.0.1:{port}/weft/service");
    let o = script(
        home.path(),
        "deploySheet.sh",
        &["--url", &url, "--file", folder.to_str().expect("utf8")],
        None,
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("cannot be reached") && err.contains(&url),
        "{err}"
    );
    // Without --url and without a key file: the local default address (SPEC 4.4), and the
    // message says where the address came from.
    if std::net::TcpStream::connect("127.0.0.1:17491").is_ok() {
        eprintln!("skipped the default-address part: something listens on 17491");
        return;
    }
    let o = script(
        home.path(),
        "deploySheet.sh",
        &["--file", folder.to_str().expect("utf8")],
        None,
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("http://localhost:17491/weft/service") && err.contains("the default"),
        "{err}"
    );
}

#[test]
fn getkey_and_the_key_file() {
    let w = Weft::start();
    let o = w.script("getkey", &["weft_server"], None);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(text(&o).0.trim(), w.url);
    let o = w.script("getkey", &["0"], None);
    assert_eq!(text(&o).0.trim(), w.repository_location());
    let o = w.script("getkey", &["nope"], None);
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o).1.contains("no entry `nope`"));
    use std::os::unix::fs::PermissionsExt;
    let keyfile = w.home.path().join("keyfile");
    let mode = std::fs::metadata(&keyfile)
        .expect("keyfile")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    // A key file others can read is refused, by getkey and by the server.
    let home = w.stop();
    std::fs::set_permissions(&keyfile, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let o = script(home.path(), "getkey", &["weft_server"], None);
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o).1.contains("chmod 600"), "{:?}", text(&o));
    let o = std::process::Command::new(weft_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--home"])
        .arg(home.path())
        .output()
        .expect("serve");
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o).1.contains("chmod 600"), "{:?}", text(&o));
}

#[test]
fn bad_input_over_http_gets_4xx_and_changes_nothing() {
    let w = Weft::start();
    let folder = std::fs::read_to_string(example("1-folder.dsr")).expect("example");
    let (st, _) = post(
        &w.url,
        serde_json::json!({"command": "DeployRepository", "payload": {"content": folder}})
            .to_string()
            .into_bytes(),
    );
    assert_eq!(st, 200);
    let before = w.dump();
    let sheet = std::fs::read_to_string(example("3-sheet.dsr")).expect("example");
    let deep = sheet.replace(
        "field1: customers",
        "field1: customers\n              bad key: 2",
    );
    let mut invalid_utf8 = br#"{"command": "DeployRepository", "payload": {"content": ""#.to_vec();
    invalid_utf8.extend_from_slice(&[0xff, 0xfe]);
    invalid_utf8.extend_from_slice(br#""}}"#);
    let ten_mb = serde_json::json!({"command": "DeployRepository", "payload": {"content": "x".repeat(10 * 1024 * 1024)}})
        .to_string()
        .into_bytes();
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        (
            "truncated JSON",
            br#"{"command": "DeployRepository", "payload": {"con"#.to_vec(),
            400,
            "request.json",
        ),
        (
            "wrong type",
            br#"{"command": "DeployRepository", "payload": {"content": ["a"]}}"#.to_vec(),
            400,
            "request.envelope",
        ),
        (
            "unknown command",
            br#"{"command": "Frobnicate", "payload": {}}"#.to_vec(),
            400,
            "request.unknown_command",
        ),
        ("10 MB body", ten_mb, 413, "request.too_large"),
        ("invalid UTF-8", invalid_utf8, 400, "request.encoding"),
        (
            "HJSON syntax error deep in a sheet",
            serde_json::json!({"command": "DeployRepository", "payload": {"content": deep}})
                .to_string()
                .into_bytes(),
            422,
            "deploy.invalid",
        ),
        ("empty body", Vec::new(), 400, "request.json"),
    ];
    for (what, body, status, code) in cases {
        let (st, v) = post(&w.url, body);
        assert_eq!(st, status, "{what}: {v}");
        assert_eq!(v["error"]["code"], code, "{what}: {v}");
        assert!(v["requestId"].is_u64(), "{what}: {v}");
        assert!(
            !v["error"]["message"].as_str().unwrap_or("").is_empty(),
            "{what}"
        );
        assert_eq!(before, w.dump(), "{what} changed the repository");
    }
    // The HJSON error names its line and column in the content.
    let body = serde_json::json!({"command": "DeployRepository", "payload": {"content": deep}})
        .to_string();
    let (_, v) = post(&w.url, body.into_bytes());
    let d = &v["error"]["details"][0];
    let line = deep
        .lines()
        .position(|l| l.contains("bad key"))
        .expect("line") as u64
        + 1;
    assert_eq!(d["code"], "dsr.syntax");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(line), Some(18)),
        "{v}"
    );
    assert!(
        d["message"]
            .as_str()
            .unwrap_or("")
            .contains("whitespace in your key name"),
        "{v}"
    );
    // The server is still up and well.
    let (st, _) = post(
        &w.url,
        serde_json::json!({"command": "DeployRepository", "payload": {"content": folder}})
            .to_string()
            .into_bytes(),
    );
    assert_eq!(st, 200);
}

#[test]
fn data_survives_a_restart() {
    let w = Weft::start();
    let o = w.script(
        "deploySheet.sh",
        &["--file", example("1-folder.dsr").to_str().expect("utf8")],
        None,
    );
    assert_eq!(o.status.code(), Some(0));
    let dump = w.dump();
    let home = w.stop();
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    assert_eq!(dump, w.dump());
    // The key file follows the new address.
    let o = w.script("getkey", &["weft_server"], None);
    assert_eq!(text(&o).0.trim(), w.url);
    let o = w.script(
        "deploySheet.sh",
        &["--file", example("1-folder.dsr").to_str().expect("utf8")],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

#[test]
fn beyond_loopback_a_token_is_required() {
    let w = Weft::start_with(&["--listen", "0.0.0.0:0"], &[]);
    // The service URL in the key file is the loopback address of the same port.
    assert!(w.url.starts_with("http://127.0.0.1:"), "{}", w.url);
    let folder = std::fs::read_to_string(example("1-folder.dsr")).expect("example");
    let body = serde_json::json!({"command": "DeployRepository", "payload": {"content": folder}})
        .to_string();
    let (st, v) = post(&w.url, body.clone().into_bytes());
    assert_eq!(st, 401, "{v}");
    assert!(!w.dump().contains("/sales"));
    // A development server beyond loopback says so at its start.
    let logs: String = std::fs::read_dir(w.home.path().join("logs"))
        .expect("logs")
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .collect();
    assert!(
        logs.contains("runs as a development environment and listens beyond loopback"),
        "{logs}"
    );
    let o = w.script("getkey", &["weft_server", "--field", "token"], None);
    let token = text(&o).0.trim().to_owned();
    assert_eq!(token.len(), 32, "a token was written to the key file");
    weft::init_tls();
    let resp = reqwest::blocking::Client::new()
        .post(&w.url)
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .expect("request");
    assert_eq!(resp.status().as_u16(), 200);
    // The script takes the token from the key file.
    let o = w.script(
        "deploySheet.sh",
        &[
            "--file",
            example("2-connection.dsr").to_str().expect("utf8"),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

#[test]
fn into_folder_over_http_returns_the_id_map() {
    let w = Weft::start();
    for f in ["1-folder.dsr", "2-connection.dsr", "3-sheet.dsr"] {
        let o = w.script(
            "deploySheet.sh",
            &["--file", example(f).to_str().expect("utf8")],
            None,
        );
        assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    }
    let o = w.script(
        "deploySheet.sh",
        &[
            "--verbose",
            "--option",
            r#"{"intoFolder": 10}"#,
            "--file",
            example("3-sheet.dsr").to_str().expect("utf8"),
        ],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("idMap: {\"sheets\":{\"100\":101}"), "{out}");
}

#[test]
fn a_dry_run_of_a_sheet_through_the_binary_changes_nothing() {
    let w = Weft::start();
    deploy_folder_and_connection(&w);
    let before = w.dump();
    let o = w.script(
        "deploySheet.sh",
        &[
            "--test",
            "--file",
            example("3-sheet.dsr").to_str().expect("utf8"),
        ],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("test only"), "{out}");
    assert_eq!(before, w.dump(), "a dry run changed the repository");
}

#[test]
fn content_encoded_as_spec_4_2_says_is_accepted_by_the_server() {
    let w = Weft::start();
    // The specification's encoding, done the way a shell script does it: CRs removed,
    // backslashes doubled, quotes escaped, line breaks as \n, TABs left raw.
    let folder = "{\r\n\tversion: 1\r\n\ttransformationData: {\r\n\t\tfolders: [\r\n\t\t\t{ id: 3, path: \"/x\", documentation: \"C:\\\\data \\\"raw\\\"\tTAB\" }\r\n\t\t]\r\n\t}\r\n}\r\n";
    let encoded = folder
        .replace('\r', "")
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n");
    let body = format!(
        "{{\"command\":\"DeployRepository\",\"payload\":{{\"content\":\"{encoded}\",\"deployOptions\":{{\"validate\":\"true\",\"dryRun\":\"false\",\"intoFolder\":null}}}}}}"
    );
    assert!(body.contains('\t'));
    let (st, v) = post(&w.url, body.into_bytes());
    assert_eq!(st, 200, "{v}");
    assert!(
        w.dump().contains("C:\\\\data \\\"raw\\\"\\tTAB"),
        "{}",
        w.dump()
    );
}

#[test]
fn into_folder_is_refused_by_a_production_server() {
    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0", "--environment", "production"],
        &[],
    );
    deploy_folder_and_connection(&w);
    let before = w.dump();
    let o = w.script(
        "deploySheet.sh",
        &[
            "--option",
            r#"{"intoFolder": 10}"#,
            "--file",
            example("3-sheet.dsr").to_str().expect("utf8"),
        ],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(4), "refused, not invalid: {out}{err}");
    assert!(
        err.contains("deploy.into_folder_refused") && err.contains("production"),
        "{err}"
    );
    assert_eq!(before, w.dump());
}

#[test]
fn objects_missing_on_their_connection_are_warnings() {
    let w = Weft::start();
    deploy_folder_and_connection(&w);
    // Connection 1 becomes a real SQLite file holding only the source table; the server
    // re-reads the key file when it changes.
    let data = w.home.path().join("sales.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch(
            "CREATE TABLE stg_customers (id INTEGER, name TEXT, email TEXT, loaded_at TEXT)",
        )
        .expect("table");
    w.add_keys(&format!("1|sqlite|{}|||\n", data.display()));
    let o = w.script(
        "deploySheet.sh",
        &["--file", example("3-sheet.dsr").to_str().expect("utf8")],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "a missing table is only a warning: {out}{err}"
    );
    assert!(
        err.contains("warning: node 103: table `customers` does not exist on connection 1"),
        "{err}"
    );
    assert!(!err.contains("stg_customers` does not exist"), "{err}");
    // While another process writes the file, the deploy does not wait for it: the objects
    // are reported as not checked.
    let writer = rusqlite::Connection::open(&data).expect("writer");
    writer
        .execute_batch("BEGIN EXCLUSIVE")
        .expect("exclusive lock");
    let o = w.script(
        "deploySheet.sh",
        &[
            "--test",
            "--file",
            example("3-sheet.dsr").to_str().expect("utf8"),
        ],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        err.contains("connection 1 was busy") && err.contains("was not checked"),
        "{err}"
    );
    writer.execute_batch("ROLLBACK").expect("unlock");
}

/// Deploys the quickstart's folder and connection with `deploySheet.sh`.
fn deploy_folder_and_connection(w: &Weft) {
    for f in ["1-folder.dsr", "2-connection.dsr"] {
        let o = w.script(
            "deploySheet.sh",
            &["--file", example(f).to_str().expect("utf8")],
            None,
        );
        assert_eq!(o.status.code(), Some(0), "{f}: {:?}", text(&o));
    }
}

/// Runs a script file with `WEFT_HOME=home` from the folder `cwd`, with `env`.
fn script_at(
    script: &std::path::Path,
    cwd: &std::path::Path,
    home: &std::path::Path,
    args: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
) -> std::process::Output {
    let mut c = std::process::Command::new(script);
    c.args(args).current_dir(cwd).env("WEFT_HOME", home);
    for (k, v) in env {
        c.env(k, v);
    }
    // A file just written (the copy below) can be held open for writing for
    // an instant by a child that another test thread forked and that has not
    // reached exec yet: Linux then refuses to run it with ETXTBSY. That ends
    // when the child execs, so the spawn is tried again, a bounded number of
    // times.
    let mut tries = 0;
    loop {
        match c.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                tries += 1;
                std::thread::yield_now();
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other.expect("script"),
        }
    }
}

#[test]
fn scripts_work_through_a_symlink_and_as_a_copy_from_another_directory() {
    let w = Weft::start();
    let elsewhere = tempfile::tempdir().expect("cwd");
    let user_bin = tempfile::tempdir().expect("~/bin");
    // Linked into the user's bin: it finds its installation through the link.
    let linked = user_bin.path().join("deploySheet.sh");
    std::os::unix::fs::symlink(root().join("bin/deploySheet.sh"), &linked).expect("symlink");
    let o = script_at(
        &linked,
        elsewhere.path(),
        w.home.path(),
        &["--file", example("1-folder.dsr").to_str().expect("utf8")],
        &[("WEFT_BIN", weft_bin().as_os_str())],
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(text(&o).0.contains("Deployment without errors"));
    // Copied without the rest of bin/: weft is found on PATH.
    let copied = user_bin.path().join("getkey");
    std::fs::copy(root().join("bin/getkey"), &copied).expect("copy");
    let path_dir = tempfile::tempdir().expect("PATH dir");
    std::os::unix::fs::symlink(weft_bin(), path_dir.path().join("weft")).expect("weft on PATH");
    let path = std::env::join_paths(std::iter::once(path_dir.path().to_owned()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    let o = script_at(
        &copied,
        elsewhere.path(),
        w.home.path(),
        &["weft_server"],
        &[("PATH", path.as_os_str())],
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert_eq!(text(&o).0.trim(), w.url);
    // Without weft on PATH and without WEFT_BIN, it says what to do.
    let o = script_at(
        &copied,
        elsewhere.path(),
        w.home.path(),
        &["weft_server"],
        &[("PATH", std::ffi::OsStr::new("/usr/bin:/bin"))],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).1.contains("set WEFT_BIN or put weft on PATH"),
        "{:?}",
        text(&o)
    );
}

#[test]
fn clients_take_the_token_from_a_flag_or_the_environment() {
    let w = Weft::start_with(&["--listen", "0.0.0.0:0"], &[]);
    let token = text(&w.script("getkey", &["weft_server", "--field", "token"], None))
        .0
        .trim()
        .to_owned();
    assert_eq!(token.len(), 32);
    // Another home, without a key file: only the flag or the variable can give the token.
    let other = tempfile::tempdir().expect("other home");
    let deploy = |extra: &[&str], env: &[(&str, &str)]| {
        let mut c = std::process::Command::new(weft_bin());
        c.args(["deploy", "--url", &w.url, "--file"])
            .arg(example("1-folder.dsr"))
            .args(extra)
            .env("WEFT_HOME", other.path())
            .env_remove("WEFT_TOKEN");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().expect("weft deploy")
    };
    let o = deploy(&[], &[]);
    assert_eq!(
        o.status.code(),
        Some(4),
        "refused without a token: {:?}",
        text(&o)
    );
    assert!(text(&o).1.contains("Bearer"), "{:?}", text(&o));
    let o = deploy(&["--token", &token], &[]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let o = deploy(&["--verbose"], &[("WEFT_TOKEN", &token)]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let (_, err) = text(&o);
    assert!(err.contains("token: --token or WEFT_TOKEN"), "{err}");
    assert!(!err.contains(&token), "the token is never printed: {err}");
    // weft next-runs takes it too: past the token, an unknown batch is a 404.
    let o = std::process::Command::new(weft_bin())
        .args(["next-runs", "99", "--url", &w.url])
        .env("WEFT_HOME", other.path())
        .env("WEFT_TOKEN", &token)
        .output()
        .expect("next-runs");
    assert!(
        text(&o).1.contains("batch 99 does not exist"),
        "{:?}",
        text(&o)
    );
}

#[test]
fn the_vital_key_file_entries_are_not_overwritten_by_mistake() {
    let w = Weft::start();
    let copy = |args: &[&str]| {
        std::process::Command::new(weft_bin())
            .args(["keys", "copy"])
            .args(args)
            .env("WEFT_HOME", w.home.path())
            .output()
            .expect("weft keys copy")
    };
    for vital in ["0", "weft_server"] {
        let o = copy(&["0", vital]);
        assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
        assert!(text(&o).1.contains("--force"), "{:?}", text(&o));
    }
    assert_eq!(
        text(&w.script("getkey", &["weft_server"], None)).0.trim(),
        w.url,
        "the server entry is intact"
    );
    let o = copy(&["0", "7"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    // A key file with an entry given twice: getkey refuses it, naming both lines.
    let keyfile = w.home.path().join("keyfile");
    let mut keys = std::fs::read_to_string(&keyfile).expect("keyfile");
    keys.push_str("7|sqlite|/elsewhere.db|||\n");
    std::fs::write(&keyfile, keys).expect("write");
    let o = w.script("getkey", &["7"], None);
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o).1.contains("given twice"), "{:?}", text(&o));
}

/// Deploys `content` over HTTP: the status and the answer.
fn deploy_over_http(w: &Weft, content: &str, options: serde_json::Value) -> serde_json::Value {
    let (status, answer) = command(
        w,
        "DeployRepository",
        serde_json::json!({"content": content, "deployOptions": options}),
    );
    assert!(status == 200 || status == 422, "{status}: {answer}");
    answer
}

#[test]
fn the_deploy_history_lists_each_committed_deploy_with_what_it_changed() {
    let w = Weft::start();
    let read = |f: &str| std::fs::read_to_string(example(f)).expect("example");
    let folder = deploy_over_http(&w, &read("1-folder.dsr"), serde_json::Value::Null);
    let folder = folder["payload"]["deployId"].as_i64().expect("a deploy id");
    let connection = deploy_over_http(&w, &read("2-connection.dsr"), serde_json::Value::Null);
    let connection = connection["payload"]["deployId"]
        .as_i64()
        .expect("a deploy id");
    let first = deploy_over_http(&w, &sheet(5), serde_json::Value::Null);
    let first = first["payload"]["deployId"].as_i64().expect("a deploy id");
    // What changes nothing is no deploy: the same sheet again, a dry run of a change, and
    // a rejected change.
    let changed = sheet(5).replace("step 5", "step five");
    let again = deploy_over_http(&w, &sheet(5), serde_json::Value::Null);
    assert!(again["payload"].get("deployId").is_none(), "{again}");
    let dry = deploy_over_http(&w, &changed, serde_json::json!({"dryRun": true}));
    assert!(dry["payload"].get("deployId").is_none(), "{dry}");
    let rejected = deploy_over_http(
        &w,
        &changed.replace("type: 1", "type: 9"),
        serde_json::Value::Null,
    );
    assert_eq!(rejected["error"]["code"], "deploy.invalid", "{rejected}");
    let second = deploy_over_http(&w, &changed, serde_json::Value::Null);
    let second = second["payload"]["deployId"].as_i64().expect("a deploy id");
    // Numbers grow (on PostgreSQL a sequence's: a dry run may leave a gap).
    assert!(folder < connection && connection < first && first < second);

    let (status, list) = command(&w, "ListDeploys", serde_json::json!({}));
    assert_eq!(status, 200, "{list}");
    let deploys = list["payload"]["deploys"].as_array().expect("deploys");
    let ids: Vec<i64> = deploys
        .iter()
        .map(|d| d["deployId"].as_i64().unwrap_or(0))
        .collect();
    assert_eq!(ids, [second, first, connection, folder]);
    let newest = &deploys[0];
    assert_eq!(
        (
            &newest["created"],
            &newest["updated"],
            &newest["deleted"],
            &newest["more"]
        ),
        (&0.into(), &1.into(), &0.into(), &0.into()),
        "{newest}"
    );
    assert_eq!(newest["changes"][0]["kind"], "sheet");
    assert_eq!(newest["changes"][0]["objectId"], 5);
    assert_eq!(newest["changes"][0]["name"], "sheet 5");
    assert_eq!(newest["changes"][0]["change"], "updated");
    assert!(
        newest["deployed"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{newest}"
    );
    assert_eq!(deploys[3]["changes"][0]["name"], "/sales");
    assert_eq!(deploys[3]["changes"][0]["change"], "created");

    // Pages: two at a time, then the two before the last one shown; changes cut short.
    let (_, page) = command(
        &w,
        "ListDeploys",
        serde_json::json!({"limit": 2, "changes": 0}),
    );
    let page = page["payload"]["deploys"].as_array().expect("page").clone();
    assert_eq!(page.len(), 2);
    assert_eq!(page[0]["changes"], serde_json::json!([]));
    assert_eq!(page[0]["more"], 1);
    let (_, next) = command(
        &w,
        "ListDeploys",
        serde_json::json!({"limit": 2, "before": first}),
    );
    let next: Vec<i64> = next["payload"]["deploys"]
        .as_array()
        .expect("next")
        .iter()
        .map(|d| d["deployId"].as_i64().unwrap_or(0))
        .collect();
    assert_eq!(next, [connection, folder]);

    // One change with the definition it replaced: the action's new name, and the old one.
    let line = newest["changes"][0]["historyId"].as_i64().expect("line");
    let (status, change) = command(
        &w,
        "GetDeployChange",
        serde_json::json!({"historyId": line}),
    );
    assert_eq!(status, 200, "{change}");
    let change = &change["payload"];
    assert_eq!(change["deployId"], second);
    assert!(
        change["definition"]
            .as_str()
            .is_some_and(|d| d.contains("step five")),
        "{change}"
    );
    let previous = &change["previous"];
    assert_eq!(previous["deployId"], first);
    assert!(
        previous["definition"]
            .as_str()
            .is_some_and(|d| d.contains("step 5\"")),
        "{change}"
    );
    // The first version replaced nothing; a line that does not exist is a 404 with its id.
    let first_line = deploys[1]["changes"][0]["historyId"]
        .as_i64()
        .expect("line");
    let (_, first) = command(
        &w,
        "GetDeployChange",
        serde_json::json!({"historyId": first_line}),
    );
    assert_eq!(
        first["payload"]["previous"],
        serde_json::Value::Null,
        "{first}"
    );
    let before = w.dump();
    let (status, missing) = command(&w, "GetDeployChange", serde_json::json!({"historyId": 999}));
    assert_eq!(status, 404, "{missing}");
    assert_eq!(
        missing["error"]["code"], "deploy.change_not_found",
        "{missing}"
    );
    assert!(
        missing["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("999")),
        "{missing}"
    );
    assert_eq!(before, w.dump(), "reading changes nothing");

    // The sheets' tree is bounded: the first ones, and whether there are more.
    deploy_over_http(&w, &sheet(6), serde_json::Value::Null);
    let tree = |limit: i64| {
        let (status, v) = command(&w, "ListSheets", serde_json::json!({ "limit": limit }));
        assert_eq!(status, 200, "{v}");
        let ids: Vec<i64> = v["payload"]["sheets"]
            .as_array()
            .expect("sheets")
            .iter()
            .map(|s| s["sheetId"].as_i64().unwrap_or(0))
            .collect();
        (ids, v["payload"]["more"].clone())
    };
    assert_eq!(tree(1), (vec![5], serde_json::json!(true)));
    assert_eq!(tree(2), (vec![5, 6], serde_json::json!(false)));
}

#[test]
fn the_history_example_deploys_and_runs_as_written() {
    let w = Weft::start();
    let dir = root().join("examples/history");
    let db = w.home.path().join("warehouse.db");
    rusqlite::Connection::open(&db)
        .expect("warehouse")
        .execute_batch(&std::fs::read_to_string(dir.join("tables.sql")).expect("tables.sql"))
        .expect("the example's tables");
    w.add_keys(&format!("1|sqlite|{}|||\n", db.display()));
    for f in ["1-setup.dsr", "2-customer-history.dsr"] {
        let o = w.script(
            "deploySheet.sh",
            &["--file", dir.join(f).to_str().expect("utf8")],
            None,
        );
        assert_eq!(o.status.code(), Some(0), "{f}: {:?}", text(&o));
    }
    let run = || {
        let o = std::process::Command::new(weft_bin())
            .args(["run", "--sheet", "300", "--wait", "--url", &w.url])
            .output()
            .expect("weft run");
        assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    };
    run();
    rusqlite::Connection::open(&db)
        .expect("warehouse")
        .execute_batch(
            "UPDATE stg_customer SET city = 'Paris' WHERE customer_id = 1;
             DELETE FROM stg_customer WHERE customer_id = 2;
             INSERT INTO stg_customer VALUES (3, 'Edsger', 'Austin');",
        )
        .expect("the README's changes");
    // A run by hand changes at the action's start: the first run's periods are moved a day
    // back, as if it had run yesterday, so that the second run's periods begin later.
    rusqlite::Connection::open(&db)
        .expect("warehouse")
        .execute_batch("UPDATE dim_customer SET valid_from_dt = '2026-01-01 00:00:00'")
        .expect("yesterday");
    run();
    let periods = common::actions::rows(
        &db,
        "SELECT customer_id, city, invalid_from_dt IS NULL FROM dim_customer ORDER BY customer_id, valid_from_dt",
    );
    assert_eq!(
        periods,
        ["1|London|0", "1|Paris|1", "2|New York|0", "3|Austin|1"]
    );
}

#[test]
fn history_attributes_are_checked_at_deploy_at_their_place() {
    let w = Weft::start();
    let dir = root().join("examples/history");
    let o = w.script(
        "deploySheet.sh",
        &["--file", dir.join("1-setup.dsr").to_str().expect("utf8")],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let sheet = std::fs::read_to_string(dir.join("2-customer-history.dsr")).expect("example");
    let before = w.dump();
    let refused = |text: &str, code: &str| -> (i64, i64) {
        let (status, answer) = post(&w.url, deploy_body(text));
        assert_eq!(status, 422, "{answer}");
        answer["error"]["details"]
            .as_array()
            .and_then(|all| all.iter().find(|d| d["code"] == code))
            .map(|d| {
                (
                    d["line"].as_i64().unwrap_or(0),
                    d["column"].as_i64().unwrap_or(0),
                )
            })
            .unwrap_or_else(|| panic!("no {code} in {answer}"))
    };
    let place = |text: &str, line_holds: &str, word: &str| -> (i64, i64) {
        let (i, line) = text
            .lines()
            .enumerate()
            .find(|(_, l)| l.contains(line_holds))
            .expect("the line");
        (i as i64 + 1, line.find(word).expect("the word") as i64 + 1)
    };
    // A key the query does not return: at the name inside `keys`.
    let bad_key = sheet.replace("keys: customer_id", "keys: customer_id, nope");
    assert_eq!(
        refused(&bad_key, "History.keys"),
        place(&bad_key, "keys: customer_id, nope", "nope")
    );
    // A flag that is no boolean: at its value.
    let bad_flag = sheet.replace(
        "compare: name, city",
        "compare: name, city\n              closeMissing: maybe",
    );
    assert_eq!(
        refused(&bad_flag, "dsr.wrong_type"),
        place(&bad_flag, "closeMissing: maybe", "maybe")
    );
    assert_eq!(before, w.dump(), "the repository is unchanged");
}

#[test]
fn a_loop_query_that_does_not_parse_is_refused_at_its_place() {
    let w = Weft::start();
    deploy_folder_and_connection(&w);
    let sheet = std::fs::read_to_string(example("3-sheet.dsr")).expect("example");
    let bad = sheet.replace(
        "keys: id",
        "keys: id\n              loopQuery: SELECT day FROM calendar WHERE",
    );
    let before = w.dump();
    let (status, answer) = post(&w.url, deploy_body(&bad));
    assert_eq!(status, 422, "{answer}");
    let d = answer["error"]["details"]
        .as_array()
        .and_then(|all| all.iter().find(|d| d["code"] == "sql.syntax"))
        .unwrap_or_else(|| panic!("no sql.syntax in {answer}"))
        .clone();
    assert!(
        d["message"]
            .as_str()
            .is_some_and(|m| m.contains("`loopQuery` does not parse as SQLite")),
        "{d}"
    );
    let line = bad
        .lines()
        .position(|l| l.contains("loopQuery:"))
        .expect("line") as i64
        + 1;
    assert_eq!(d["line"], line, "{d}");
    assert_eq!(
        d["path"], "transformationData.sheets[0].nodes[1].attributes.loopQuery",
        "{d}"
    );
    // At the end of the query, where it stops making sense.
    let end = bad.lines().nth(line as usize - 1).map_or(0, str::len) as i64;
    assert!(
        d["column"]
            .as_i64()
            .is_some_and(|c| c > end - 8 && c <= end + 1),
        "{d}"
    );
    assert_eq!(before, w.dump());
}

#[test]
fn a_nul_character_is_refused_at_its_place_the_same_on_every_backend() {
    let w = Weft::start();
    let before = w.dump();
    // Every field a person writes, each with a NUL (written as the escape `\u0000`), in a
    // document deployed without validation (which takes any module name).
    let doc = r#"{
  version: 1
  transformationData: {
    folders: [{ id: 10, path: "/n", documentation: "a\u0000b" }]
    sheets: [{
      id: 1
      attributes: { name: "sheet\u0000", folder_id: 10, folder: "/n" }
      nodes: [
        { id: 11, type: 0, attributes: { module: "Mod\u0000ule", name: "step\u0000", action: "SELECT 1\u0000" } }
        { id: 12, type: 1, attributes: { field1: "t\u0000", objectTypeId: 1, connectionId: 1 } }
      ]
      edges: [{ id: 13, from: 11, to: 12 }]
    }]
  }
}"#;
    let body = serde_json::json!({"command": "DeployRepository",
        "payload": {"content": doc, "deployOptions": {"validate": "false"}}});
    let (st, v) = post(&w.url, body.to_string().into_bytes());
    assert_eq!(st, 422, "{v}");
    let nul: Vec<(String, i64)> = v["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter(|d| d["code"] == "dsr.nul")
        .map(|d| {
            (
                d["path"].as_str().unwrap_or_default().to_owned(),
                d["line"].as_i64().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        nul,
        [
            ("transformationData.folders[0].documentation".to_owned(), 4),
            ("transformationData.sheets[0].attributes.name".to_owned(), 7),
            (
                "transformationData.sheets[0].nodes[0].attributes.module".to_owned(),
                9
            ),
            (
                "transformationData.sheets[0].nodes[0].attributes.name".to_owned(),
                9
            ),
            (
                "transformationData.sheets[0].nodes[0].attributes.action".to_owned(),
                9
            ),
            (
                "transformationData.sheets[0].nodes[1].attributes.field1".to_owned(),
                10
            ),
        ],
        "{v}"
    );
    assert_eq!(w.dump(), before, "nothing deployed");
    // A run's name, user and variables: refused at their place in the request.
    let body = serde_json::json!({"command": "RunElements",
        "payload": {"batchExecution": {"batchName": "night\u{0}ly", "user": "\u{0}",
            "elementList": [{"elementType": "S", "elementId": 1}]}},
        "variableList": [{"variableName": "x", "variableType": "string", "variableValue": "a\u{0}"}]});
    let (st, v) = post(&w.url, body.to_string().into_bytes());
    assert_eq!(st, 400, "{v}");
    let paths: Vec<&str> = v["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter(|d| d["code"] == "request.nul")
        .filter_map(|d| d["path"].as_str())
        .collect();
    assert_eq!(
        paths,
        [
            "payload.batchExecution.batchName",
            "payload.batchExecution.user",
            "variableList[0].variableValue"
        ],
        "{v}"
    );
    assert_eq!(w.dump(), before, "nothing started");
}

#[test]
fn small_things_a_deploy_says_right() {
    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0"],
        &[("WEFT_SHELL_MODULES", "true")],
    );
    // A document holding only a batch deploys it, and says nothing of an empty document.
    let doc = serde_json::json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/etl"}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    let doc = serde_json::json!({"version": 1, "transformationData": {"batches": [{"id": 3,
        "name": "nightly", "schedule": "daily 22:00",
        "elements": [{"elementType": "F", "elementId": 10}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    assert!(warnings(&v, "dsr.empty").is_empty(), "{v}");
    assert!(
        v["payload"]["created"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["kind"] == "batch" && c["id"] == 3)),
        "{v}"
    );
    // Two lone Shell actions need no edges (they have no objects to join).
    let shell = |id: i64| {
        serde_json::json!({"id": id, "type": 0, "attributes": {"module": "Shell",
            "name": format!("script {id}"), "action": "true"}})
    };
    let doc = serde_json::json!({"version": 1, "transformationData": {"sheets": [{"id": 5,
        "attributes": {"name": "scripts", "folder_id": 10, "folder": "/etl"},
        "nodes": [shell(51), shell(52)], "edges": []}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    // A deploy without validation says so.
    let body = serde_json::json!({"command": "DeployRepository", "payload": {
        "content": doc.to_string().replace("script 51", "script 51 again"),
        "deployOptions": {"validate": "false"}}});
    let (st, v) = post(&w.url, body.to_string().into_bytes());
    assert_eq!(st, 200, "{v}");
    let said = warnings(&v, "deploy.not_validated");
    assert_eq!(said.len(), 1, "{v}");
    assert!(said[0].contains("were not checked"), "{said:?}");
}

#[test]
fn a_cycle_between_sheets_is_warned_at_deploy_and_refused_inside_a_scheduled_batch() {
    let w = Weft::start();
    // Sheet `id`: one Sql action (node `id * 10`) reading `from` and writing `to`.
    let sheet = |id: i64, from: &str, to: &str| {
        let (a, s, t) = (id * 10, id * 10 + 1, id * 10 + 2);
        serde_json::json!({"id": id, "attributes": {"name": format!("{from} to {to}"), "folder_id": 10, "folder": "/etl"},
          "nodes": [
            {"id": a, "type": 0, "attributes": {"module": "Sql", "name": format!("load {to}"),
                "action": format!("INSERT INTO {to} SELECT * FROM {from}")}},
            {"id": s, "type": 1, "attributes": {"field1": from, "objectTypeId": 1, "connectionId": 1}},
            {"id": t, "type": 1, "attributes": {"field1": to, "objectTypeId": 1, "connectionId": 1}}],
          "edges": [{"id": s, "from": s, "to": a}, {"id": t, "from": a, "to": t}]})
    };
    let deploy = |doc: serde_json::Value| post(&w.url, deploy_body(&doc.to_string()));
    let (st, v) = deploy(serde_json::json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/etl"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [sheet(1, "a", "b")]}}));
    assert_eq!(st, 200, "{v}");
    assert!(warnings(&v, "deploy.cycle").is_empty(), "{v}");
    let (st, v) = deploy(serde_json::json!({"version": 1, "transformationData": {
        "sheets": [sheet(2, "b", "a")]}}));
    assert_eq!(st, 200, "{v}");
    let said = warnings(&v, "deploy.cycle");
    assert_eq!(said.len(), 1, "{v}");
    assert!(
        said[0].contains("action 20 `load a` (sheet 2) writes a (connection 1), which action 10 `load b` (sheet 1) reads"),
        "{said:?}"
    );
    // What the deploy warned of is what a start refuses.
    let (st, v) = command(
        &w,
        "RunElements",
        serde_json::json!({"batchExecution": {"batchName": "etl", "user": "tester",
            "elementList": [{"elementType": "F", "elementId": 10}]}}),
    );
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (422, Some("run.cycle")),
        "{v}"
    );
    // A scheduled batch over the folder is refused, and nothing changes.
    let before = w.dump();
    let batch = |enabled: bool| {
        serde_json::json!({"version": 1, "transformationData": {"batches": [{"id": 3,
            "name": "nightly", "schedule": "daily 02:00", "enabled": enabled,
            "elements": [{"elementType": "F", "elementId": 10}]}]}})
    };
    let (st, v) = deploy(batch(true));
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (422, Some("deploy.invalid")),
        "{v}"
    );
    let details = v["error"]["details"].as_array().expect("details");
    let refusal = details
        .iter()
        .find(|d| d["code"] == "deploy.cycle_in_batch")
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(
        refusal["path"], "transformationData.batches[0].elements",
        "{v}"
    );
    assert_eq!(w.dump(), before);
    // Disabled it deploys; the cycle broken (b is now read by sheet 2 with dependency N),
    // enabling it is fine.
    let (st, v) = deploy(batch(false));
    assert_eq!(st, 200, "{v}");
    let mut broken = sheet(2, "b", "a");
    broken["nodes"][1]["attributes"]["dependency"] = "N".into();
    let (st, v) =
        deploy(serde_json::json!({"version": 1, "transformationData": {"sheets": [broken]}}));
    assert_eq!(st, 200, "{v}");
    assert!(warnings(&v, "deploy.cycle").is_empty(), "{v}");
    let (st, v) = deploy(batch(true));
    assert_eq!(st, 200, "{v}");
    // Closing it again while the batch is enabled is refused at the action.
    let (st, v) = deploy(
        serde_json::json!({"version": 1, "transformationData": {"sheets": [sheet(2, "b", "a")]}}),
    );
    assert_eq!(st, 422, "{v}");
    let refusal = v["error"]["details"]
        .as_array()
        .and_then(|d| {
            d.iter()
                .find(|d| d["code"] == "deploy.cycle_in_batch")
                .cloned()
        })
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(
        refusal["path"], "transformationData.sheets[0].nodes[0]",
        "{v}"
    );
    assert!(
        refusal["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("batch 3 `nightly` runs every action of a cycle")),
        "{v}"
    );
}

/// `weft check DIR` without a server finds what a deploy of the same project finds, line for
/// line (file, line, column, message, code), with exit code 1; a fixed project passes with
/// 0, a warning fails only with `--strict`, and a path that cannot be read is a usage error.
#[test]
fn weft_check_finds_offline_what_a_deploy_finds() {
    let dir = tempfile::tempdir().expect("project");
    for f in ["1-folder.dsr", "2-connection.dsr", "3-sheet.dsr"] {
        std::fs::copy(example(f), dir.path().join(f)).expect("copy");
    }
    let sheet = dir.path().join("3-sheet.dsr");
    let good = std::fs::read_to_string(&sheet).expect("sheet");
    let bad = good
        .replace("FROM stg_customers", "FROM stg_customers WHERE = =")
        .replace("keys: id", "keys: id\n              after: nobody");
    assert_ne!(bad, good);
    std::fs::write(&sheet, &bad).expect("bad sheet");
    let home = tempfile::tempdir().expect("home");
    let check = |args: &[&str]| {
        let o = std::process::Command::new(weft_bin())
            .arg("check")
            .args(args)
            .env("WEFT_HOME", home.path())
            .output()
            .expect("weft check");
        let (out, err) = text(&o);
        (o.status.code(), out, err)
    };
    let path = dir.path().to_str().expect("a path");
    let (code, out, err) = check(&[path]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("(3 files): 2 error(s)"), "{out}");
    let problems: Vec<&str> = err.lines().collect();
    assert_eq!(problems.len(), 2, "{err}");
    assert!(
        problems
            .iter()
            .any(|l| l.contains("3-sheet.dsr:") && l.ends_with("[sql.syntax]")),
        "{err}"
    );
    assert!(
        problems
            .iter()
            .any(|l| l.contains("this sheet has no action named `nobody`")
                && l.ends_with("[action.after]")),
        "{err}"
    );
    // The same lines from a deploy of the same files to a server.
    let w = Weft::start();
    let o = std::process::Command::new(weft_bin())
        .args(["deploy", path, "--url", &w.url])
        .env("WEFT_HOME", w.home.path())
        .output()
        .expect("weft deploy");
    let (dout, derr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{dout}{derr}");
    for p in &problems {
        assert!(
            derr.lines().any(|l| l == *p),
            "deploy said:\n{derr}\ncheck said: {p}"
        );
    }
    // Fixed: no errors; a sheet whose SQL weft's parser cannot read warns, which --strict fails.
    std::fs::write(&sheet, &good).expect("good sheet");
    let (code, out, err) = check(&[path]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("0 error(s), 0 warning(s)"), "{out}");
    std::fs::write(
        &sheet,
        good.replace(
            "FROM stg_customers",
            "FROM stg_customers INDEXED BY stg_by_id",
        ),
    )
    .expect("sheet");
    let (code, _, err) = check(&[path]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("[sql.unchecked]"), "{err}");
    let (code, _, err) = check(&["--strict", path]);
    assert_eq!(code, Some(1), "{err}");
    let (code, _, err) = check(&["/nowhere/at/all"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot read /nowhere/at/all"), "{err}");
}
