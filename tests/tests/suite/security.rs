//! Users and security (issue 28) with the real binary: a token asked over loopback too when
//! the setting says so (item 2); credentials from a secret store with a script standing in
//! for a vault client (item 6): a PostgreSQL connection whose password a program prints
//! when the connection opens (with the entry's key as its argument), which a run uses and
//! nothing records; a program that fails fails the action with why, never with what it
//! printed; `weft getkey` prints what the program gives.

use crate::common;

use common::*;
use serde_json::json;
use weft_tests::postgres::Postgres;

/// The password of the role the connection logs in as: never written anywhere by weft.
const PASSWORD: &str = "Vault7f3a9cX";

/// Every file below `dir` that holds `needle`.
fn holding(dir: &std::path::Path, needle: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d)
            .expect("ls")
            .map(|e| e.expect("entry"))
        {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if std::fs::read(&p)
                .map(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
                .unwrap_or(false)
            {
                found.push(p);
            }
        }
    }
    found
}

/// An executable script `name` in `dir` running `body`.
fn script(dir: &std::path::Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    path.display().to_string()
}

#[test]
fn a_connections_password_comes_from_a_vault_program_and_is_never_recorded() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql(&format!(
        "CREATE ROLE etl LOGIN PASSWORD '{PASSWORD}'; GRANT ALL ON SCHEMA public TO etl;"
    ))
    .expect("role");
    let w = Weft::start();
    let tools = tempfile::tempdir().expect("tools");
    let asked = tools.path().join("asked");
    // The vault client: says which key it was asked for, prints the password (made of two
    // halves, so that the script itself does not hold it).
    let vault = script(
        tools.path(),
        "vault",
        &format!(
            "echo \"$1 $WEFT_KEY\" >> {}\nprintf '%s%s\\n' Vault7f3a9 cX",
            asked.display()
        ),
    );
    let entry = |program: &str| {
        format!(
            "7|postgresql|postgresql://127.0.0.1:{}/weft|etl||sslmode=disable;passwordCommand={program} {{key}}\n",
            pg.port
        )
    };
    w.add_keys(&entry(&vault));
    let doc = json!({"version": 1, "transformationData": {
        "folders": [{"path": "/vault"}],
        "connections": [{"id": 7, "name": "dw", "type": "postgresql"}],
        "sheets": [{"attributes": {"name": "load", "folder": "/vault", "connection": "dw"},
            "nodes": [{"attributes": {"module": "Sql", "name": "load",
                "action": "CREATE TABLE IF NOT EXISTS vaulted (n INTEGER); INSERT INTO vaulted VALUES (1)"}}]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    let inst = run_sheet_to_end(&w, "/vault/load");
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(pg.psql("SELECT count(*) FROM vaulted").expect("count"), "1");
    let asked_for = std::fs::read_to_string(&asked).expect("the program ran");
    assert!(
        asked_for.lines().all(|l| l == "7 7"),
        "asked with the key: {asked_for}"
    );

    // `weft getkey` gives scripts what the program prints.
    let (code, out, err) = w.cli(&["getkey", "7", "--field", "password"]);
    assert_eq!((code, out.trim()), (Some(0), PASSWORD), "{err}");

    // A program that fails: the action fails saying why, not what it printed.
    let failing = script(
        tools.path(),
        "failing",
        "printf '%s%s\\n' Vault7f3a9 cX; echo 'vault: permission denied' >&2; exit 2",
    );
    let keyfile = w.home.path().join("keyfile");
    let keys = std::fs::read_to_string(&keyfile).expect("keyfile");
    std::fs::write(&keyfile, keys.replace(&entry(&vault), &entry(&failing))).expect("write");
    let inst = run_sheet_to_end(&w, "/vault/load");
    assert_eq!(inst["state"], "failed", "{inst}");
    let error = inst["actions"][0]["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        error.contains("key file entry `7`: its passwordCommand failed:")
            && error.contains("exit status: 2"),
        "{inst}"
    );
    assert!(!inst.to_string().contains(PASSWORD) && !error.contains("permission denied"));
    // Nothing the server keeps (its repository, its logs) holds the password.
    assert_eq!(
        holding(w.home.path(), PASSWORD),
        Vec::<std::path::PathBuf>::new()
    );
}

#[test]
fn on_a_shared_machine_a_token_is_asked_over_loopback_too() {
    let w = Weft::start_with(&[], &[("WEFT_REQUIRE_TOKEN_ON_LOOPBACK", "true")]);
    assert!(w.url.starts_with("http://127.0.0.1:"), "{}", w.url);
    let (st, v) = command(&w, "ListBatchInstances", json!({"limit": 5}));
    assert_eq!(st, 401, "{v}");
    let (code, token, err) = w.cli(&["getkey", "weft_server", "--field", "token"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        token.trim().len(),
        32,
        "a token was written to the key file"
    );
    weft::init_tls();
    let body = json!({"command": "ListBatchInstances", "payload": {"limit": 5}}).to_string();
    let send = |host: &str| {
        reqwest::blocking::Client::new()
            .post(&w.url)
            .bearer_auth(token.trim())
            .header("content-type", "application/json")
            .header("host", host)
            .body(body.clone())
            .send()
            .expect("request")
            .status()
            .as_u16()
    };
    assert_eq!(send("127.0.0.1"), 200);
    // With the token, a rebound name is still refused on loopback.
    assert_eq!(send("evil.example"), 403);
    // The commands take the token from the key file by themselves.
    let (code, out, err) = w.cli(&["runs", "--url", &w.url]);
    assert_eq!(code, Some(0), "{out}{err}");
    // A value that is not a truth is refused at the start, naming the variable.
    let home = tempfile::tempdir().expect("home");
    let o = std::process::Command::new(weft_bin())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("WEFT_HOME", home.path())
        .env("WEFT_REQUIRE_TOKEN_ON_LOOPBACK", "sometimes")
        .output()
        .expect("weft serve");
    let (_, err) = text(&o);
    assert_ne!(o.status.code(), Some(0));
    assert!(err.contains("WEFT_REQUIRE_TOKEN_ON_LOOPBACK"), "{err}");
}

#[test]
fn guessing_the_token_is_throttled_and_no_guess_is_logged() {
    let w = Weft::start_with(&[], &[("WEFT_REQUIRE_TOKEN_ON_LOOPBACK", "true")]);
    let (_, token, _) = w.cli(&["getkey", "weft_server", "--field", "token"]);
    weft::init_tls();
    let body = json!({"command": "ListBatchInstances", "payload": {"limit": 5}}).to_string();
    let send = |token: &str| {
        let r = reqwest::blocking::Client::new()
            .post(&w.url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .expect("request");
        let status = r.status().as_u16();
        let retry = r
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        (status, retry, r.text().unwrap_or_default())
    };
    // A right token clears the count: nine wrong ones, a right one, nine wrong ones more.
    for round in 0..2 {
        for i in 0..9 {
            assert_eq!(send(&format!("guess-{round}-{i}")).0, 401);
        }
        assert_eq!(send(token.trim()).0, 200, "round {round}");
    }
    // The tenth wrong one in a minute blocks the client: further guesses get 429; the right
    // token still passes (whoever shares the address is not locked out).
    for i in 0..10 {
        assert_eq!(send(&format!("guess-2-{i}")).0, 401);
    }
    assert_eq!(send(token.trim()).0, 200);
    let (status, retry, text) = send("guess-3");
    assert_eq!(status, 429, "{text}");
    assert!(text.contains("request.throttled"), "{text}");
    let retry: u64 = retry.expect("Retry-After").parse().expect("seconds");
    assert!((1..=60).contains(&retry), "{retry}");
    // No guess reached the logs; the block did, with the client's address.
    let logs: String = std::fs::read_dir(w.home.path().join("logs"))
        .expect("logs")
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .collect();
    assert!(!logs.contains("guess-"), "a guess was logged");
    assert!(!logs.contains(token.trim()), "the token was logged");
    assert!(
        logs.contains("too many requests without the right token") && logs.contains("127.0.0.1"),
        "{logs}"
    );
}
