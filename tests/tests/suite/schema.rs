//! End to end: `bin/deploySchema.sh` upgrades a repository of every earlier schema version,
//! is idempotent, refuses a newer one; the server upgrades on start.

use crate::common;

use common::*;

fn fixture(v: i64) -> std::path::PathBuf {
    root().join(format!("tests/fixtures/repository-v{v}.db"))
}

#[test]
fn deploy_schema_upgrades_each_earlier_version_once() {
    let latest = weft_repo::migrations::latest();
    for v in 1..latest {
        let home = tempfile::tempdir().expect("home");
        std::fs::copy(fixture(v), home.path().join("repository.db")).expect("copy fixture");
        let o = script(home.path(), "deploySchema.sh", &[], None);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{out}{err}");
        assert!(
            out.contains(&format!("upgraded from version {v} to {latest}")),
            "{out}"
        );
        let dump = dump(&home.path().join("repository.db"));
        assert!(dump.contains(&format!("user_version {latest}")));
        assert!(dump.contains("\"/sales\""), "the data is kept: {dump}");
        // Version 6 filled the plans of every sheet whose definition it could read (the
        // oldest fixtures hold placeholder definitions `{}`: those keep none, and cannot run
        // until deployed again); version 14 keeps them as the sheet's current version.
        let conn = weft_repo::connect(&home.path().join("repository.db")).expect("open");
        let plans: Vec<(i64, String, Option<String>)> = conn
            .prepare(
                "SELECT s.id, s.definition, p.plans FROM sheets s
                 LEFT JOIN plans_versions v ON v.sheet_id = s.id
                 LEFT JOIN sheet_plans p ON p.sheet_id = s.id AND p.version = v.version
                 WHERE EXISTS (SELECT 1 FROM nodes n WHERE n.sheet_id = s.id AND n.type = 0)",
            )
            .expect("prepare")
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        assert!(!plans.is_empty(), "the fixture of version {v} has actions");
        for (sheet, definition, p) in plans {
            if definition == "{}" {
                assert_eq!(p, None, "sheet {sheet} of version {v}");
            } else {
                assert!(
                    p.as_deref()
                        .is_some_and(|p| p.contains("\"module\":\"Upsert\"")),
                    "sheet {sheet} of version {v} has no plans: {p:?}"
                );
            }
        }
        let o = script(home.path(), "deploySchema.sh", &[], None);
        assert!(
            text(&o).0.contains(&format!("already at version {latest}")),
            "{:?}",
            text(&o)
        );
        assert_eq!(
            dump,
            common::dump(&home.path().join("repository.db")),
            "a second run changed something"
        );
    }
}

#[test]
fn deploy_schema_creates_a_fresh_repository_and_reports_status() {
    let home = tempfile::tempdir().expect("home");
    let o = script(home.path(), "deploySchema.sh", &["--status"], None);
    assert!(text(&o).0.contains("no repository yet"));
    let o = script(home.path(), "deploySchema.sh", &[], None);
    assert_eq!(o.status.code(), Some(0));
    let said = text(&o).0;
    assert!(
        said.contains(&format!(
            "new repository created at schema version {}",
            weft_repo::migrations::latest()
        )) && !said.contains("upgraded"),
        "{said}"
    );
    let o = script(home.path(), "deploySchema.sh", &["--status"], None);
    assert!(text(&o).0.contains(&format!(
        "schema version {}",
        weft_repo::migrations::latest()
    )));
}

#[test]
fn a_newer_repository_is_refused_by_the_script_and_the_server() {
    let home = tempfile::tempdir().expect("home");
    let path = home.path().join("repository.db");
    let o = script(home.path(), "deploySchema.sh", &[], None);
    assert_eq!(o.status.code(), Some(0));
    let conn = weft_repo::connect(&path).expect("open");
    conn.pragma_update(None, "user_version", 99).expect("set");
    drop(conn);
    let before = dump(&path);
    let o = script(home.path(), "deploySchema.sh", &[], None);
    assert_ne!(o.status.code(), Some(0));
    let err = text(&o).1;
    assert!(
        err.contains("version 99") && err.contains("downgrade is not possible"),
        "{err}"
    );
    let o = std::process::Command::new(weft_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--home"])
        .arg(home.path())
        .output()
        .expect("serve");
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o).1.contains("version 99"), "{:?}", text(&o));
    assert_eq!(before, dump(&path));
}

#[test]
fn the_server_upgrades_an_old_repository_on_start() {
    // The fixtures are SQLite files in HOME; a server on a PostgreSQL repository does not
    // read them (pg_repository's upgrade tests bring the same data up on PostgreSQL).
    if weft_tests::server::skipped_on_postgres("upgrades a SQLite file") {
        return;
    }
    let home = tempfile::tempdir().expect("home");
    std::fs::copy(fixture(1), home.path().join("repository.db")).expect("copy");
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    assert!(
        w.dump()
            .contains(&format!("user_version {}", weft_repo::migrations::latest()))
    );
    // Its sheet's definition is a placeholder: a run of it says to deploy it again.
    let run = serde_json::json!({"command": "RunElements", "payload": {"batchExecution": {
        "batchName": "b", "user": "u", "elementList": [{"elementType": "S", "elementId": 100}]}}});
    let (st, v) = post(&w.url, run.to_string().into_bytes());
    assert_eq!(st, 500, "{v}");
    drop(w);
    // A sheet of version 5 runs from the plans the upgrade made of its definition.
    let home = tempfile::tempdir().expect("home");
    std::fs::copy(fixture(5), home.path().join("repository.db")).expect("copy");
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    let (st, v) = post(&w.url, run.to_string().into_bytes());
    assert_eq!(st, 200, "{v}");
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    let wait = serde_json::json!({"command": "WaitBatchInstance",
        "payload": {"batchInstanceId": id, "timeoutSeconds": 30}});
    let (_, v) = post(&w.url, wait.to_string().into_bytes());
    let actions = v["payload"]["actions"].as_array().expect("actions");
    assert_eq!(actions.len(), 1, "{v}");
    assert_eq!(actions[0]["actionId"], 102, "{v}");
    assert_eq!(actions[0]["module"], "Upsert", "{v}");
}

#[test]
fn deploy_schema_run_in_another_folder_creates_nothing_unless_asked() {
    let elsewhere = tempfile::tempdir().expect("cwd");
    let run = |args: &[&str]| {
        std::process::Command::new(root().join("bin/deploySchema.sh"))
            .args(args)
            .current_dir(elsewhere.path())
            .env("WEFT_BIN", weft_bin())
            .env_remove("WEFT_HOME")
            .output()
            .expect("deploySchema.sh")
    };
    let o = run(&[]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let expected = elsewhere.path().join("weft-home").join("repository.db");
    assert!(
        err.contains(&expected.display().to_string())
            && err.contains("the default")
            && err.contains("--init"),
        "{err}"
    );
    assert!(
        !elsewhere.path().join("weft-home").exists(),
        "nothing was created"
    );
    let o = run(&["--init"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(expected.is_file(), "--init creates the repository");
    // Once it exists, an upgrade there needs no flag.
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}
