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
    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0"],
        &[("WEFT_REQUIRE_TOKEN_ON_LOOPBACK", "true")],
    );
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
    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0"],
        &[("WEFT_REQUIRE_TOKEN_ON_LOOPBACK", "true")],
    );
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

/// The key file's token of `w`'s home (an admin's).
fn keyfile_token(w: &Weft) -> String {
    let (code, token, err) = w.cli(&["getkey", "weft_server", "--field", "token"]);
    assert_eq!(code, Some(0), "{err}");
    token.trim().to_owned()
}

/// `weft users add NAME --role ROLE [ARGS]` as the key file's admin: the token printed.
fn add_user(w: &Weft, name: &str, role: &str, more: &[&str]) -> String {
    let mut args = vec!["users", "add", name, "--role", role, "--url", &w.url];
    args.extend_from_slice(more);
    let (code, out, err) = w.cli(&args);
    assert_eq!(code, Some(0), "{out}{err}");
    let token = out
        .lines()
        .find_map(|l| l.strip_prefix("token:"))
        .map(|t| t.trim().to_owned())
        .unwrap_or_else(|| panic!("no token printed: {out}"));
    assert!(token.starts_with("weft_"), "{token}");
    token
}

/// Every command's right, from the protocol's one list, for every role: a role without it
/// is refused with 403 naming the right before the payload is read; a role with it gets as
/// far as the payload (here a wrong one, so nothing happens). A new command is in the table
/// by being in the list.
#[test]
fn each_role_may_send_exactly_the_commands_its_rights_allow() {
    use weft_protocol::{RIGHTS, Role};
    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0"],
        &[("WEFT_REQUIRE_TOKEN_ON_LOOPBACK", "true")],
    );
    let tokens: Vec<(Role, String)> = Role::ALL
        .iter()
        .map(|r| (*r, add_user(&w, &format!("the-{r}"), r.word(), &[])))
        .collect();
    let mut table = String::new();
    for (command, right) in RIGHTS {
        for (role, token) in &tokens {
            let (st, v) = command_as(&w, token, command, json!("not a payload"));
            let code = v["error"]["code"].as_str().unwrap_or_default().to_owned();
            if role.holds(*right) {
                assert_eq!(
                    (st, code.as_str()),
                    (400, "request.envelope"),
                    "{role} may send {command}: {v}"
                );
            } else {
                assert_eq!(
                    (st, code.as_str()),
                    (403, "request.no_right"),
                    "{role} may not send {command}: {v}"
                );
                let message = v["error"]["message"].as_str().unwrap_or_default();
                assert!(
                    message.contains(&format!("`{}`", right.word()))
                        && message.contains(right.role())
                        && message.contains(&format!("the-{role}")),
                    "{message}"
                );
            }
            table.push_str(&format!("{command} {role} {st}\n"));
        }
    }
    // 29 commands, 4 roles.
    assert_eq!(table.lines().count(), RIGHTS.len() * 4);
    // A viewer's refusals are in the audit, with who and from where.
    let admin = &tokens[3].1;
    let (st, v) = command_as(
        &w,
        admin,
        "ListAudit",
        json!({"user": "the-viewer", "outcome": "refused", "limit": 1000}),
    );
    assert_eq!(st, 200, "{v}");
    let refused = v["payload"]["entries"].as_array().expect("entries").clone();
    let needing = RIGHTS
        .iter()
        .filter(|(_, r)| *r != weft_protocol::Right::Read)
        .count();
    assert_eq!(refused.len(), needing, "{v}");
    assert!(
        refused.iter().all(|e| e["client"] == "127.0.0.1"
            && e["via"].as_str().is_some_and(|v| v.starts_with("token "))),
        "{v}"
    );
    // A token of the users' form that is wrong: 401, audited with user `none`; no token at
    // all: 401, no attempt to audit.
    let forged = format!("{}{}", &tokens[0].1[..tokens[0].1.len() - 4], "0000");
    let (st, v) = command_as(&w, &forged, "ListHosts", json!({}));
    assert_eq!(st, 401, "{v}");
    let (st, v) = command(&w, "ListHosts", json!({}));
    assert_eq!(st, 401, "{v}");
    let (_, v) = command_as(&w, admin, "ListAudit", json!({"user": "none"}));
    assert_eq!(
        v["payload"]["entries"].as_array().map(Vec::len),
        Some(1),
        "{v}"
    );
}

/// A user's life: added with a token shown once, known by it (`weft whoami`), its runs and
/// deploys recorded as its own, disabled and enabled, its token rotated and revoked, each
/// refusal immediate and saying why; no token is stored, answered or logged.
#[test]
fn a_users_tokens_are_shown_once_rotated_revoked_and_never_kept() {
    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0"],
        &[("WEFT_REQUIRE_TOKEN_ON_LOOPBACK", "true")],
    );
    let admin = keyfile_token(&w);
    let ops = add_user(&w, "ops.anna", "operator", &["--expires-in-days", "30"]);
    let dev = add_user(&w, "dev.ben", "deployer", &[]);
    // Who am I, with the token from the environment.
    let o = std::process::Command::new(weft_bin())
        .args(["whoami", "--url", &w.url])
        .env("WEFT_HOME", w.home.path())
        .env("WEFT_TOKEN", &ops)
        .output()
        .expect("weft whoami");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.starts_with("ops.anna (operator, by token "), "{out}");
    assert!(out.contains("rights: read, operate\n"), "{out}");
    // The page's sign-in: the token in an HttpOnly, SameSite=Strict cookie; a wrong one
    // gets no cookie.
    weft::init_tls();
    let session = w.url.replace("/weft/service", "/weft/session");
    let sign_in = |token: &str| {
        let r = reqwest::blocking::Client::new()
            .post(&session)
            .header("content-type", "application/json")
            .body(json!({"token": token}).to_string())
            .send()
            .expect("sign-in");
        let cookie = r
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        (r.status().as_u16(), cookie, r.text().unwrap_or_default())
    };
    let (st, cookie, body) = sign_in(&ops);
    assert_eq!(st, 200, "{body}");
    assert!(body.contains("\"user\":\"ops.anna\""), "{body}");
    let cookie = cookie.expect("a cookie");
    assert!(
        cookie.starts_with("weft_session=weft_")
            && cookie.contains("; HttpOnly")
            && cookie.contains("; SameSite=Strict")
            && cookie.contains("; Path=/")
            && !cookie.contains("Expires")
            && !cookie.contains("Secure"),
        "{cookie}"
    );
    let (st, cookie, _) = sign_in("weft_0123456789abcdef_00");
    assert_eq!((st, cookie), (401, None));
    // A name taken, a role unknown: refused with why.
    let (code, _, err) = w.cli(&[
        "users", "add", "ops.anna", "--role", "viewer", "--url", &w.url,
    ]);
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("a user `ops.anna` exists already"), "{err}");
    let (code, _, err) = w.cli(&["users", "add", "x", "--role", "root", "--url", &w.url]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`root` is no role"), "{err}");
    let (code, _, err) = w.cli(&[
        "users", "add", "keyfile", "--role", "viewer", "--url", &w.url,
    ]);
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("a name weft gives callers"), "{err}");
    // The deployer deploys; the deploy history names it.
    for file in ["1-folder.dsr", "2-connection.dsr", "3-sheet.dsr"] {
        let doc = std::fs::read_to_string(example(file)).expect("example");
        let (st, v) = command_as(&w, &dev, "DeployRepository", json!({"content": doc}));
        assert_eq!(st, 200, "{v}");
    }
    let (_, v) = command_as(&w, &dev, "ListDeploys", json!({}));
    assert_eq!(v["payload"]["deploys"][0]["user"], "dev.ben", "{v}");
    // The operator's run is recorded as its own, whatever the request says.
    let (st, v) = command_as(
        &w,
        &ops,
        "RunElements",
        json!({"batchExecution": {"batchName": "adhoc", "user": "somebody else",
            "elementList": [{"elementType": "S", "elementId": 100}]}}),
    );
    assert_eq!(st, 200, "{v}");
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    assert_eq!(
        w.repo_value(&format!(
            "SELECT user_name FROM batch_instances WHERE id = {id}"
        )),
        "ops.anna"
    );
    // Disabled: refused at once, saying so; enabled: back.
    let (code, out, err) = w.cli(&["users", "disable", "ops.anna", "--url", &w.url]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("disabled"), "{out}");
    let (st, v) = command_as(&w, &ops, "ListHosts", json!({}));
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (401, Some("request.token_refused")),
        "{v}"
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("user `ops.anna` is disabled")),
        "{v}"
    );
    let (code, _, err) = w.cli(&["users", "enable", "ops.anna", "--url", &w.url]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(command_as(&w, &ops, "ListHosts", json!({})).0, 200);
    // Rotation: a new token, the old one revoked in the same step.
    let (code, out, err) = w.cli(&["users", "token", "ops.anna", "--replace", "--url", &w.url]);
    assert_eq!(code, Some(0), "{out}{err}");
    let rotated = out
        .lines()
        .find_map(|l| l.strip_prefix("token:"))
        .map(|t| t.trim().to_owned())
        .expect("token");
    let (st, v) = command_as(&w, &ops, "ListHosts", json!({}));
    assert_eq!(st, 401, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("was revoked")),
        "{v}"
    );
    assert_eq!(command_as(&w, &rotated, "ListHosts", json!({})).0, 200);
    // Revoked by its id, as the list shows it.
    let (_, v) = command_as(&w, &admin, "ListUsers", json!({}));
    let anna = v["payload"]["users"]
        .as_array()
        .and_then(|u| u.iter().find(|u| u["name"] == "ops.anna"))
        .expect("listed")
        .clone();
    let states: Vec<&str> = anna["tokens"]
        .as_array()
        .expect("tokens")
        .iter()
        .map(|t| t["state"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(states, ["revoked", "active"], "{anna}");
    assert!(anna["tokens"][0]["expiresAt"].is_string(), "{anna}");
    let last = anna["tokens"][1]["id"].as_str().expect("id").to_owned();
    let (code, out, err) = w.cli(&["users", "revoke", &last, "--url", &w.url]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(command_as(&w, &rotated, "ListHosts", json!({})).0, 401);
    let (code, _, err) = w.cli(&["users", "revoke", "0123456789abcdef", "--url", &w.url]);
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("there is no token 0123456789abcdef"), "{err}");
    // The list prints no secret; no token is in the repository, the logs or any answer.
    let (code, out, err) = w.cli(&["users", "list", "--url", &w.url]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("ops.anna\toperator\teverywhere\tenabled"),
        "{out}"
    );
    let (_, audit) = command_as(&w, &admin, "ListAudit", json!({"limit": 1000}));
    for token in [&ops, &dev, &rotated] {
        let secret = &token[token.len() - 64..];
        assert_eq!(
            holding(w.home.path(), secret),
            Vec::<std::path::PathBuf>::new()
        );
        assert!(!out.contains(secret) && !audit.to_string().contains(secret));
    }
    // The audit: who did what, from where, newest first.
    let lines = audit_lines(
        &audit["payload"]["entries"],
        &["user", "command", "outcome"],
        |_, v| v.to_owned(),
    );
    assert_eq!(
        lines,
        [
            "keyfile AddUser done",
            "keyfile AddUser done",
            "none  refused",
            "dev.ben DeployRepository done",
            "dev.ben DeployRepository done",
            "dev.ben DeployRepository done",
            "ops.anna RunElements done",
            "keyfile ChangeUser done",
            "none  refused",
            "keyfile ChangeUser done",
            "keyfile CreateToken done",
            "none  refused",
            "keyfile RevokeToken done",
            "none  refused",
        ],
        "{audit}"
    );
}

/// A user limited to a folder deploys, deletes, exports, runs and halts there and nowhere
/// else: a sheet in another folder, a sheet moved out, a connection (in no folder), the
/// whole export, a backfill; each refusal names what lies outside and changes nothing.
#[test]
fn a_user_limited_to_a_folder_deploys_and_operates_there_only() {
    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0"],
        &[("WEFT_REQUIRE_TOKEN_ON_LOOPBACK", "true")],
    );
    let admin = keyfile_token(&w);
    let deploy = |token: &str, content: &str| {
        command_as(&w, token, "DeployRepository", json!({"content": content}))
    };
    for file in ["1-folder.dsr", "2-connection.dsr"] {
        let doc = std::fs::read_to_string(example(file)).expect("example");
        assert_eq!(deploy(&admin, &doc).0, 200);
    }
    let hr = |text: String| {
        text.replace(
            "folder_id: 10, folder: \"/sales\"",
            "folder_id: 20, folder: \"/hr\"",
        )
    };
    let (st, v) = deploy(
        &admin,
        r#"{"version": 1, "transformationData": {"folders": [{"id": 20, "path": "/hr"}]}}"#,
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(deploy(&admin, &sheet(3)).0, 200);
    assert_eq!(deploy(&admin, &hr(sheet(4))).0, 200);
    let dev = add_user(&w, "sales-dev", "deployer", &["--folder", "/sales"]);
    let op = add_user(&w, "sales-op", "operator", &["--folder", "/sales/"]);
    // Inside: a change of its sheet deploys.
    let (st, v) = deploy(&dev, &sheet(3).replace("step 3", "step three"));
    assert_eq!(st, 200, "{v}");
    // Outside: refused with 403 naming what, nothing written.
    let definitions = || {
        [3, 4]
            .map(|id| w.repo_value(&format!("SELECT definition FROM sheets WHERE id = {id}")))
            .join("\n")
    };
    let before = definitions();
    let refused = |(st, v): (u16, serde_json::Value), needle: &str| {
        assert_eq!(
            (st, v["error"]["code"].as_str()),
            (403, Some("request.outside_folders")),
            "{v}"
        );
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("`sales-dev` may deploy only in the folders /sales")
                || message.contains("`sales-op` may operate only in the folders /sales"),
            "{message}"
        );
        assert!(message.contains(needle), "{needle}: {message}");
    };
    refused(
        deploy(&dev, &hr(sheet(4)).replace("step 4", "step four")),
        "sheet 4 in /hr",
    );
    refused(deploy(&dev, &hr(sheet(3))), "sheet 3 in /hr");
    let doc = std::fs::read_to_string(example("2-connection.dsr")).expect("example");
    refused(
        deploy(&dev, &doc.replace("sales", "sales2")),
        "(in no folder)",
    );
    assert_eq!(definitions(), before);
    // A dry run is judged alike; an unchanged sheet elsewhere in the document is no change.
    let (st, v) = command_as(
        &w,
        &dev,
        "DeleteObjects",
        json!({"sheets": [4], "dryRun": true}),
    );
    refused((st, v), "in /hr");
    let (st, v) = command_as(
        &w,
        &dev,
        "DeleteObjects",
        json!({"sheets": [3], "dryRun": true}),
    );
    assert_eq!(st, 200, "{v}");
    let (st, v) = command_as(&w, &dev, "ExportRepository", json!({"folder": "/sales"}));
    assert_eq!(st, 200, "{v}");
    let (st, v) = command_as(&w, &dev, "ExportRepository", json!({}));
    assert_eq!(st, 403, "{v}");
    // The operator runs what lies in its folder only, and halts only such runs.
    let run = |token: &str, sheet: i64| {
        command_as(
            &w,
            token,
            "RunElements",
            json!({"batchExecution": {"batchName": "adhoc", "user": "u",
                "elementList": [{"elementType": "S", "elementId": sheet}]}}),
        )
    };
    let (st, v) = run(&op, 3);
    assert_eq!(st, 200, "{v}");
    refused(run(&op, 4), "sheet 4 in /hr");
    // A selection follows the data into every folder: not for a limited user.
    refused(
        command_as(
            &w,
            &op,
            "RunElements",
            json!({"batchExecution": {"batchName": "adhoc", "user": "u", "select": "downstream",
                "elementList": [{"elementType": "S", "elementId": 3}]}}),
        ),
        "`select: downstream`",
    );
    let (st, v) = run(&admin, 4);
    assert_eq!(st, 200, "{v}");
    let theirs = v["payload"]["batchInstanceId"].as_i64().expect("id");
    refused(
        command_as(
            &w,
            &op,
            "HaltBatchInstance",
            json!({"batchInstanceId": theirs}),
        ),
        &format!("sheet 4 in /hr of batch instance {theirs}"),
    );
    refused(
        command_as(
            &w,
            &op,
            "BackfillBatch",
            json!({"batch": "nightly", "from": "2026-11-01", "to": "2026-11-02"}),
        ),
        "batch nightly",
    );
    // Every refusal is in the audit.
    let (_, v) = command_as(&w, &admin, "ListAudit", json!({"outcome": "refused"}));
    let who: Vec<&str> = v["payload"]["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["user"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(who.iter().filter(|u| **u == "sales-dev").count(), 5, "{v}");
    assert_eq!(who.iter().filter(|u| **u == "sales-op").count(), 4, "{v}");
    // An admin limited to a folder could lift its own limits: no admin command for it.
    let boss = add_user(&w, "sales-boss", "admin", &["--folder", "/sales"]);
    let (st, v) = command_as(&w, &boss, "ListUsers", json!({}));
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (403, Some("request.outside_folders")),
        "{v}"
    );
    let (st, v) = command_as(&w, &boss, "DeployRepository", json!({"content": sheet(3)}));
    assert_eq!(st, 200, "its deploy right holds in its folder: {v}");
}
