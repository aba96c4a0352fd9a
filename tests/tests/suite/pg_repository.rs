//! The repository on PostgreSQL (issue 15): a server whose key file entry 0 has type
//! `postgresql` keeps everything there (no `repository.db` in HOME), deploys, runs and
//! restarts on it; a rejected deploy changes nothing of it; `weft schema` reads and upgrades
//! it; and its schema comes up from every earlier version with the data of the SQLite
//! fixtures of that version.

use crate::common;

use common::*;
use serde_json::json;
use weft_repo::postgres::{Entry, Postgres as PgRepo};
use weft_repo::sql::{Param, Value};
use weft_tests::postgres::Postgres;

/// A new database `db` on `pg` and the entry that names it.
fn database(pg: &Postgres, db: &str) -> Entry {
    pg.psql(&format!("CREATE DATABASE {db}")).expect("database");
    Entry {
        url: format!("postgresql://127.0.0.1:{}/{db}", pg.port),
        user: "weft".to_owned(),
        password: "secret".to_owned(),
        options: vec![("sslmode".to_owned(), "disable".to_owned())],
    }
}

/// A HOME whose key file puts the repository into `entry`'s database.
fn home_on(entry: &Entry) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("home");
    let keyfile = home.path().join("keyfile");
    std::fs::write(
        &keyfile,
        format!(
            "0|postgresql|{}|{}|{}|sslmode=disable\n",
            entry.url, entry.user, entry.password
        ),
    )
    .expect("keyfile");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&keyfile, std::fs::Permissions::from_mode(0o600)).expect("mode");
    home
}

fn command(w: &Weft, command: &str, payload: serde_json::Value) -> serde_json::Value {
    let (st, v) = post(
        &w.url,
        json!({"command": command, "payload": payload})
            .to_string()
            .into_bytes(),
    );
    assert_eq!(st, 200, "{v}");
    v["payload"].clone()
}

fn run_and_wait(w: &Weft, sheet: i64) -> serde_json::Value {
    let id = command(
        w,
        "RunElements",
        json!({"batchExecution": {"batchName": "b", "user": "t", "elementList": [{"elementType": "S", "elementId": sheet}]}}),
    )["batchInstanceId"]
        .as_i64()
        .expect("id");
    let done = command(
        w,
        "WaitBatchInstance",
        json!({"batchInstanceId": id, "timeoutSeconds": 60}),
    );
    assert_eq!(done["timedOut"], false, "{done}");
    done
}

fn the_sheet(id: i64, statement: &str) -> String {
    json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/pg"}],
        "connections": [{"id": 1, "name": "data", "type": "sqlite"}],
        "sheets": [{"id": id, "attributes": {"name": format!("sheet {id}"), "folder_id": 10, "folder": "/pg"},
            "nodes": [
                {"id": id * 10, "type": 0, "attributes": {"module": "Sql", "name": "step", "action": statement}},
                {"id": id * 10 + 1, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 1}}],
            "edges": [{"id": id * 10, "from": id * 10, "to": id * 10 + 1}]}]}})
    .to_string()
}

#[test]
fn a_server_keeps_its_repository_in_postgresql_across_a_restart() {
    let pg = Postgres::start().expect("PostgreSQL");
    let entry = database(&pg, "repo_a");
    let w = Weft::start_in(home_on(&entry), &["--listen", "127.0.0.1:0"], &[]);
    let data = w.home.path().join("data.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("CREATE TABLE t (n INTEGER)")
        .expect("table");
    w.add_keys(&format!("1|sqlite|{}|||\n", data.display()));
    let (st, v) = post(
        &w.url,
        deploy_body(&the_sheet(5, "INSERT INTO t VALUES (1)")),
    );
    assert_eq!(st, 200, "{v}");
    let done = run_and_wait(&w, 5);
    assert_eq!(done["state"], "finished", "{done}");
    assert!(
        !w.home.path().join("repository.db").exists(),
        "no SQLite repository beside a PostgreSQL one"
    );
    let psql = |sql: &str| pg.psql_in("repo_a", sql).expect("psql");
    assert_eq!(psql("SELECT count(*) FROM sheets"), "1");
    assert_eq!(
        psql(
            "SELECT state, (SELECT string_agg(state, '') FROM instance_actions) FROM batch_instances"
        ),
        "finished|F"
    );
    // A rejected deploy changes nothing of it.
    let repo = PgRepo::connect(&entry).expect("connect");
    let before = repo.dump().expect("dump");
    let (st, v) = post(
        &w.url,
        deploy_body(&the_sheet(6, "INSERT INTO t VALUES (1,, 2)")),
    );
    assert_eq!(st, 422, "{v}");
    assert_eq!(before, repo.dump().expect("dump"));
    // Killed and started again, it finds what it had; the next instance gets the next id.
    let home = w.stop();
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    let again = run_and_wait(&w, 5);
    assert_eq!(again["state"], "finished", "{again}");
    assert_eq!(again["batchInstanceId"], 2, "{again}");
    assert_eq!(
        weft_repo::connect(&data)
            .expect("data")
            .query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0))
            .expect("count"),
        2
    );
    // `weft schema` reads and upgrades the same database.
    let o = w.script("deploySchema.sh", &["--status"], None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        out.contains(&format!(
            "postgresql at 127.0.0.1:{}: schema version {}",
            pg.port,
            weft_repo::migrations::latest()
        )),
        "{out}"
    );
    let o = w.script("deploySchema.sh", &[], None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("schema already at version"), "{out}");
}

#[test]
fn a_server_whose_postgresql_repository_is_down_says_where_and_never_the_password() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr")
        .port();
    let entry = Entry {
        url: format!("postgresql://127.0.0.1:{closed}/nothing"),
        user: "weft".to_owned(),
        password: "s3cret-0".to_owned(),
        options: Vec::new(),
    };
    let home = home_on(&entry);
    let o = std::process::Command::new(weft_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--home"])
        .arg(home.path())
        .output()
        .expect("weft serve");
    let (out, err) = text(&o);
    assert_ne!(o.status.code(), Some(0), "{out}{err}");
    let all = format!("{out}{err}");
    assert!(
        all.contains(&format!(
            "cannot connect to the PostgreSQL repository at 127.0.0.1:{closed}"
        )),
        "{all}"
    );
    assert!(!all.contains("s3cret"), "{all}");
}

/// Every row of every table of the SQLite file at `from`, inserted into the same tables of
/// `to` (both at the same schema version).
fn copy_rows(from: &std::path::Path, to: &PgRepo) {
    let conn = rusqlite::Connection::open(from).expect("fixture");
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .expect("tables")
        .query_map([], |r| r.get(0))
        .expect("tables")
        .collect::<Result<_, _>>()
        .expect("tables");
    // Parents first, for the foreign keys.
    let order = [
        "folders",
        "connections",
        "sheets",
        "nodes",
        "edges",
        "data_flow",
        "deploys",
        "deploy_history",
        "batches",
        "service_batch_next_run",
        "missed_starts",
        "batch_instances",
        "instance_actions",
        "instance_action_deps",
        "instance_sheets",
        "plans_versions",
        "sheet_plans",
        "hosts",
        "repository_identity",
        "backfills",
        "backfill_starts",
        "notification_setup",
        "notifications",
        "action_attempts",
        "template_modules",
        "users",
        "user_tokens",
        "audit",
    ];
    // A table the list misses would be left empty, unseen.
    for t in &tables {
        assert!(
            order.contains(&t.as_str()),
            "table {t} of {} has no place in copy_rows' order",
            from.display()
        );
    }
    for table in order.iter().filter(|t| tables.iter().any(|n| n == *t)) {
        let mut st = conn
            .prepare(&format!("SELECT * FROM {table}"))
            .expect("select");
        let names: Vec<String> = st.column_names().map(str::to_owned).collect();
        let insert = format!(
            "INSERT INTO {table} ({}) VALUES ({})",
            names.join(", "),
            (1..=names.len())
                .map(|i| format!("?{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if *table == "repository_identity" {
            to.with(|s| s.execute("DELETE FROM repository_identity", &[]))
                .expect("delete");
        }
        let rows: Vec<Vec<Value>> = st
            .query_map([], |r| {
                (0..names.len())
                    .map(|i| {
                        Ok(match r.get_ref(i)? {
                            rusqlite::types::ValueRef::Integer(n) => Value::Int(n),
                            rusqlite::types::ValueRef::Text(t) => {
                                Value::Text(String::from_utf8_lossy(t).into_owned())
                            }
                            _ => Value::Null,
                        })
                    })
                    .collect()
            })
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("rows");
        for row in rows {
            let params: Vec<Param<'_>> = row
                .iter()
                .map(|v| match v {
                    Value::Int(n) => Param::Int(*n),
                    Value::Text(t) => Param::Text(t.as_str().into()),
                    _ => Param::Null,
                })
                .collect();
            to.with(|s| s.execute(&insert, &params))
                .unwrap_or_else(|e| panic!("{insert}: {e}"));
        }
    }
}

#[test]
fn the_postgresql_schema_comes_up_from_every_earlier_version_with_the_fixtures_data() {
    let pg = Postgres::start().expect("PostgreSQL");
    let latest = weft_repo::migrations::latest();
    // Version 0: an empty database.
    let entry = database(&pg, "v0");
    let repo = PgRepo::connect(&entry).expect("connect");
    assert_eq!(repo.schema_version().expect("version"), 0);
    let up = repo.upgrade().expect("upgrade");
    assert_eq!((up.from, up.to), (0, latest));
    for v in 1..latest {
        let db = format!("v{v}");
        let entry = database(&pg, &db);
        let repo = PgRepo::connect(&entry).expect("connect");
        repo.upgrade_to(v).expect("earlier version");
        copy_rows(
            &root().join(format!("tests/fixtures/repository-v{v}.db")),
            &repo,
        );
        assert_eq!(repo.schema_version().expect("version"), v);
        let up = repo.upgrade().expect("upgrade");
        assert_eq!((up.from, up.to), (v, latest), "version {v}");
        let psql = |sql: &str| pg.psql_in(&db, sql).expect("psql");
        assert_eq!(psql("SELECT path FROM folders WHERE id = 10"), "/sales");
        assert_eq!(psql("SELECT module FROM nodes WHERE id = 102"), "Upsert");
        assert_eq!(
            psql("SELECT count(*) FROM deploy_history"),
            match v {
                0 | 1 => "0",
                2..=7 => "1",
                _ => "4",
            },
            "version {v}"
        );
        // Version 9: the history lines of one time form one deploy.
        assert_eq!(
            psql(
                "SELECT string_agg(d.id || ':' || (SELECT count(*) FROM deploy_history h WHERE h.deploy_id = d.id), ',' ORDER BY d.id) FROM deploys d"
            ),
            match v {
                0 | 1 => "",
                2..=7 => "1:1",
                _ => "1:2,2:2",
            },
            "version {v}"
        );
        // Named from their definitions (the oldest fixtures keep `{}`: no name).
        assert_eq!(
            psql("SELECT string_agg(coalesce(name, '-'), ',' ORDER BY id) FROM deploy_history"),
            match v {
                0 | 1 => "",
                2..=7 => "-",
                _ => "-,load customers,load customers v2,nightly",
            },
            "version {v}"
        );
        if v >= 3 {
            assert_eq!(
                psql(
                    "SELECT batch_name || '|' || coalesce(batch_id::text, 'none') FROM batch_instances WHERE id = 7"
                ),
                "nightly|none"
            );
        }
        // Version 13: the dependencies kept under their new key, the sheets each instance
        // ran as rows.
        if v >= 7 {
            assert_eq!(
                psql(
                    "SELECT string_agg(action_id || '>' || depends_on, ',' ORDER BY action_id, depends_on) FROM instance_action_deps WHERE instance_id = 9"
                ),
                "202>201,203>201,203>202",
                "version {v}"
            );
            assert_eq!(
                psql(
                    "SELECT string_agg(sheet_id || ':' || instance_id || ':' || version, ',' ORDER BY sheet_id, instance_id) FROM instance_sheets"
                ),
                "100:7:-7,100:9:-9",
                "version {v}"
            );
        }
        assert_eq!(
            psql("SELECT length(id) FROM repository_identity"),
            "16",
            "version {v}"
        );
        // Version 6 filled the plans of every sheet whose definition it could read, and
        // version 14 made them the sheet's version 0.
        let plans = psql(
            "SELECT count(*) FROM sheet_plans p JOIN plans_versions v ON v.sheet_id = p.sheet_id AND v.version = p.version WHERE p.version = 0",
        );
        let readable = psql("SELECT count(*) FROM sheets WHERE definition <> '{}'");
        assert_eq!(plans, readable, "version {v}");
        // Version 14: each instance's copies of its actions' plans, its own version of the
        // sheet (minus its id), as many as its actions.
        assert_eq!(
            psql(
                "SELECT coalesce(string_agg(sheet_id || ':' || version || ':' || json_array_length(plans::json), ',' ORDER BY sheet_id, version), '') FROM sheet_plans WHERE version < 0"
            ),
            match v {
                0..=3 => "",
                4..=6 => "100:-7:1",
                _ => "100:-9:3,100:-7:1",
            },
            "version {v}"
        );
        // Idempotent: a second upgrade changes nothing.
        let before = repo.dump().expect("dump");
        let again = repo.upgrade().expect("again");
        assert_eq!(again.from, again.to);
        assert_eq!(before, repo.dump().expect("dump"));
    }
    // A failing step leaves the database as it was (PostgreSQL's DDL is transactional).
    let entry = database(&pg, "failing");
    let repo = PgRepo::connect(&entry).expect("connect");
    repo.upgrade_to(1).expect("v1");
    pg.psql_in("failing", "CREATE TABLE deploy_history (x int)")
        .expect("conflicting table");
    let before = repo.dump().expect("dump");
    let e = repo.upgrade().expect_err("fails").to_string();
    assert!(e.contains("version 2"), "{e}");
    assert_eq!(repo.schema_version().expect("version"), 1);
    assert_eq!(before, repo.dump().expect("dump"));
    // A database newer than this weft is refused, unchanged.
    let entry = database(&pg, "future");
    let repo = PgRepo::connect(&entry).expect("connect");
    repo.upgrade().expect("latest");
    pg.psql_in(
        "future",
        &format!("UPDATE weft_schema_version SET version = {}", latest + 3),
    )
    .expect("future");
    let before = repo.dump().expect("dump");
    let e = repo.upgrade().expect_err("too new").to_string();
    assert!(e.contains("newer than this weft"), "{e}");
    assert_eq!(before, repo.dump().expect("dump"));
}

#[test]
fn statements_sent_together_fail_at_the_one_that_fails_and_leave_nothing_behind() {
    let pg = Postgres::start().expect("PostgreSQL");
    let repo = PgRepo::connect(&database(&pg, "together")).expect("connect");
    repo.tx_if(None, |s| {
        s.execute_batch("CREATE TABLE p (id BIGINT PRIMARY KEY, name TEXT)")?;
        Ok(((), true))
    })
    .expect("table");
    let insert = "INSERT INTO p (id, name) VALUES (?1, ?2)";
    let row =
        |id: i64, name: &'static str| (insert, vec![Param::Int(id), Param::Text(name.into())]);
    // The second of three repeats the first's key: the error is the second's, and the first
    // is rolled back with the transaction.
    let err = repo
        .tx_if(None, |s| {
            let n = s.execute_all(&[row(1, "a"), row(1, "b"), row(2, "c")])?;
            Ok((n, true))
        })
        .expect_err("a duplicate key");
    let said = err.to_string();
    assert!(
        said.contains("duplicate key") && said.contains("INSERT INTO p"),
        "{said}"
    );
    let count = repo
        .with(|s| s.value::<i64>("SELECT count(*) FROM p", &[]))
        .expect("count");
    assert_eq!(count, Some(0), "nothing of the failed transaction is left");
    // Together they land, each counted.
    let n = repo
        .tx_if(None, |s| {
            Ok((s.execute_all(&[row(1, "a"), row(2, "b")])?, true))
        })
        .expect("insert");
    assert_eq!(n, vec![1, 1]);
    repo.tx_if(None, |s| {
        Ok((
            s.execute_all(&[("INSERT INTO p (id) VALUES (?1)", vec![Param::Int(3)])])?,
            true,
        ))
    })
    .expect("a NULL name");
    // First values, in order: a value, no row, a NULL.
    let q = "SELECT name FROM p WHERE id = ?1";
    let got = repo
        .with(|s| {
            s.first_values(&[
                (q, vec![Param::Int(2)]),
                (q, vec![Param::Int(9)]),
                (q, vec![Param::Int(3)]),
            ])
        })
        .expect("values");
    assert_eq!(got, vec![Some(Value::Text("b".to_owned())), None, None]);
}

/// A transaction's first message goes with its first statements, and the writes nobody waits
/// for (`Session::defer_all`) go with what comes next, the commit at the latest: a read
/// after them sees them, a commit whose deferred write fails fails (naming the write) and
/// keeps nothing of the transaction, and a rolled back one keeps nothing either.
#[test]
fn deferred_writes_go_with_the_commit_and_a_failing_one_fails_it() {
    let pg = Postgres::start().expect("PostgreSQL");
    let repo = PgRepo::connect(&database(&pg, "deferred")).expect("connect");
    repo.upgrade().expect("schema");
    let folder = |id: i64, path: &str| -> (&'static str, Vec<Param<'static>>) {
        (
            "INSERT INTO folders (id, path, created_at, updated_at) VALUES (?1, ?2, '2026-11-27', '2026-11-27')",
            vec![Param::Int(id), Param::Text(path.to_owned().into())],
        )
    };
    let paths = || -> Vec<String> {
        repo.with(|s| s.rows("SELECT path FROM folders ORDER BY id", &[], |r| r.get(0)))
            .expect("paths")
    };
    // Seen by a read of the same transaction, and committed.
    let seen: i64 = repo
        .tx_if(None, |s| {
            s.defer_all(&[folder(1, "/a")])?;
            let n: Option<i64> = s.value("SELECT COUNT(*) FROM folders", &[])?;
            s.defer_all(&[folder(2, "/b")])?;
            Ok((n.unwrap_or(0), true))
        })
        .expect("committed");
    assert_eq!(seen, 1);
    assert_eq!(paths(), ["/a", "/b"]);
    // A deferred write that fails fails the commit, and nothing of the transaction stays.
    let e = repo
        .tx_if(None, |s| {
            s.execute(folder(3, "/c").0, &folder(3, "/c").1)?;
            s.defer_all(&[folder(1, "/again")])?;
            Ok(((), true))
        })
        .expect_err("a duplicate id");
    assert!(e.to_string().contains("INSERT INTO folders"), "{e}");
    assert_eq!(paths(), ["/a", "/b"]);
    // Rolled back: the deferred write is never sent.
    repo.tx_if(None, |s| {
        s.defer_all(&[folder(4, "/d")])?;
        Ok(((), false))
    })
    .expect("rolled back");
    assert_eq!(paths(), ["/a", "/b"]);
    // The connection serves the next transaction as usual.
    repo.tx_if(None, |s| {
        s.defer_all(&[folder(5, "/e")])?;
        Ok(((), true))
    })
    .expect("committed");
    assert_eq!(paths(), ["/a", "/b", "/e"]);
}
