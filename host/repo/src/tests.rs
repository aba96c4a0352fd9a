//! Tests of the repository schema: upgrades from every earlier version, idempotence, the
//! refusal to downgrade, and a snapshot that shows any edit of a released migration.

use super::*;
use crate::sql::args;
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// Inserts sample rows that fit schema version 1.
fn sample_v1(conn: &rusqlite::Connection) {
    conn.execute_batch(
        "INSERT INTO folders VALUES (10, '/sales', 'Sales', '2026-01-01 00:00:00', '2026-01-01 00:00:00');
         INSERT INTO connections VALUES (1, 'sales', 'main', 'sqlite', '2026-01-01 00:00:00', '2026-01-01 00:00:00');
         INSERT INTO sheets VALUES (100, 'load customers', 'LOAD CUSTOMERS', 10, NULL, '{}', '2026-01-01 00:00:00', '2026-01-01 00:00:00');
         INSERT INTO nodes (id, sheet_id, type, x, y, width, height, module, name) VALUES (102, 100, 0, 0, 0, 0, 0, 'Upsert', 'upsert customers');
         INSERT INTO edges VALUES (104, 100, 101, 102);",
    )
    .expect("sample rows");
}

/// Writes `tests/fixtures/repository-v1.db`. Run once when version 2 was added; a fixture,
/// like a released migration, is never regenerated.
#[test]
#[ignore = "writes a fixture file; run by hand only when a new schema version is added"]
fn make_fixture_v1() {
    let path = fixtures().join("repository-v1.db");
    let _ = std::fs::remove_file(&path);
    let mut conn = connect(&path).expect("create");
    migrations::to_version(&mut conn, 1).expect("v1");
    sample_v1(&conn);
}

/// Writes `tests/fixtures/repository-v2.db`: made once, when version 3 was added.
#[test]
#[ignore = "writes a fixture file; run by hand only when a new schema version is added"]
fn make_fixture_v2() {
    let path = fixtures().join("repository-v2.db");
    let _ = std::fs::remove_file(&path);
    let mut conn = connect(&path).expect("create");
    migrations::to_version(&mut conn, 2).expect("v2");
    sample_v1(&conn);
    conn.execute_batch(
        "INSERT INTO deploy_history (deployed_at, kind, object_id, change, definition) VALUES ('2026-01-01 00:00:00', 'folder', 10, 'created', '{}');",
    )
    .expect("history row");
}

/// Writes `tests/fixtures/repository-v3.db`: made once, when version 4 was added.
#[test]
#[ignore = "writes a fixture file; run by hand only when a new schema version is added"]
fn make_fixture_v3() {
    let path = fixtures().join("repository-v3.db");
    let _ = std::fs::remove_file(&path);
    let mut conn = connect(&path).expect("create");
    migrations::to_version(&mut conn, 3).expect("v3");
    sample_v1(&conn);
    conn.execute_batch(
        "INSERT INTO deploy_history (deployed_at, kind, object_id, change, definition) VALUES ('2026-01-01 00:00:00', 'folder', 10, 'created', '{}');
         INSERT INTO batch_instances (id, batch_name, user_name, state, started_at, ended_at, elements, variables)
           VALUES (7, 'nightly', 'tester', 'finished', '2026-01-01 22:00:00', '2026-01-01 22:01:00', '[]', '[]');",
    )
    .expect("v3 rows");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

/// Writes `tests/fixtures/repository-v4.db`: made once, when version 5 was added.
#[test]
#[ignore = "writes a fixture file; run by hand only when a new schema version is added"]
fn make_fixture_v4() {
    let path = fixtures().join("repository-v4.db");
    let _ = std::fs::remove_file(&path);
    let mut conn = connect(&path).expect("create");
    migrations::to_version(&mut conn, 4).expect("v4");
    sample_v1(&conn);
    conn.execute_batch(
        "INSERT INTO deploy_history (deployed_at, kind, object_id, change, definition) VALUES ('2026-01-01 00:00:00', 'folder', 10, 'created', '{}');
         INSERT INTO batch_instances (id, batch_name, user_name, state, started_at, ended_at, elements, variables)
           VALUES (7, 'nightly', 'tester', 'finished', '2026-01-01 22:00:00', '2026-01-01 22:01:00', '[]', '[]');
         INSERT INTO instance_actions (instance_id, action_id, sheet_id, name, module, plan, depends_on, state)
           VALUES (7, 102, 100, 'load', 'Upsert', '{}', '[]', 'F');",
    )
    .expect("v4 rows");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

/// Writes `tests/fixtures/repository-v6.db`: made once, when version 7 was added, from the
/// fixture of version 5 (a real sheet, deployed and run) upgraded to version 6.
#[test]
#[ignore = "writes a fixture file; run by hand only when a new schema version is added"]
fn make_fixture_v6() {
    let path = fixtures().join("repository-v6.db");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(fixtures().join("repository-v5.db"), &path).expect("copy v5");
    let mut conn = connect(&path).expect("open");
    migrations::to_version(&mut conn, 6).expect("v6");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

/// Writes `tests/fixtures/repository-v7.db`: made once, when version 8 was added, from the
/// fixture of version 6 upgraded to version 7, with a failed instance whose actions depend
/// on each other (finished, failed, skipped), which version 8 turns into dependency rows.
#[test]
#[ignore = "writes a fixture file; run by hand only when a new schema version is added"]
fn make_fixture_v7() {
    let path = fixtures().join("repository-v7.db");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(fixtures().join("repository-v6.db"), &path).expect("copy v6");
    let mut conn = connect(&path).expect("open");
    migrations::to_version(&mut conn, 7).expect("v7");
    conn.execute_batch(
        "INSERT INTO batch_instances (id, batch_name, user_name, state, started_at, ended_at, elements, variables)
           VALUES (9, 'chain', 'tester', 'failed', '2026-01-02 22:00:00', '2026-01-02 22:01:00', '[{\"elementType\":\"S\",\"elementId\":100}]', '[]');
         INSERT INTO instance_actions (instance_id, action_id, sheet_id, name, module, plan, depends_on, state, error)
           VALUES (9, 201, 100, 'one', 'Sql', '{}', '[]', 'F', NULL),
                  (9, 202, 100, 'two', 'Sql', '{}', '[201]', 'E', 'no such table'),
                  (9, 203, 100, 'three', 'Sql', '{}', '[202, 201]', 'S', NULL);",
    )
    .expect("v7 rows");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

/// Writes `tests/fixtures/repository-v8.db`: made once, when version 9 was added, from the
/// fixture of version 7 upgraded to version 8, with three more history lines holding real
/// definitions: one written with the folder's (the same deploy, as version 9 groups them)
/// and two a minute later (version 9 names each from its definition).
#[test]
#[ignore = "writes a fixture file; run by hand only when a new schema version is added"]
fn make_fixture_v8() {
    let path = fixtures().join("repository-v8.db");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(fixtures().join("repository-v7.db"), &path).expect("copy v7");
    let mut conn = connect(&path).expect("open");
    migrations::to_version(&mut conn, 8).expect("v8");
    conn.execute_batch(
        "INSERT INTO deploy_history (deployed_at, kind, object_id, change, definition) VALUES ('2026-01-01 00:00:00', 'sheet', 100, 'created', '{\"id\":100,\"attributes\":{\"name\":\"load customers\"},\"nodes\":[],\"edges\":[]}');
         INSERT INTO deploy_history (deployed_at, kind, object_id, change, definition) VALUES ('2026-01-01 00:01:00', 'sheet', 100, 'updated', '{\"id\":100,\"attributes\":{\"name\":\"load customers v2\"},\"nodes\":[],\"edges\":[]}');
         INSERT INTO deploy_history (deployed_at, kind, object_id, change, definition) VALUES ('2026-01-01 00:01:00', 'batch', 3, 'created', '{\"id\":3,\"name\":\"nightly\",\"schedule\":\"daily 02:00\"}');",
    )
    .expect("v8 rows");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

/// Writes `tests/fixtures/repository-v9.db`: made once, when version 10 was added, from the
/// fixture of version 8 upgraded to version 9, with a host registered before version 10
/// (no process recorded).
#[test]
#[ignore = "writes a fixture file; run by hand only when a new schema version is added"]
fn make_fixture_v9() {
    let path = fixtures().join("repository-v9.db");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(fixtures().join("repository-v8.db"), &path).expect("copy v8");
    let mut conn = connect(&path).expect("open");
    migrations::to_version(&mut conn, 9).expect("v9");
    conn.execute_batch(
        "INSERT INTO hosts (id, url, slots, started_at, heartbeat_ms) VALUES ('old-host-1', 'http://127.0.0.1:17491/weft/service', 4, '2026-01-02 21:00:00', 1767387600000);",
    )
    .expect("v9 rows");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

/// Writes `tests/fixtures/repository-v10.db`: made once, when version 11 was added, from
/// the fixture of version 9 upgraded to version 10 (sheets with no data graph yet).
#[test]
#[ignore = "writes a fixture file; run by hand only when a new schema version is added"]
fn make_fixture_v10() {
    let path = fixtures().join("repository-v10.db");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(fixtures().join("repository-v9.db"), &path).expect("copy v9");
    let mut conn = connect(&path).expect("open");
    migrations::to_version(&mut conn, 10).expect("v10");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

#[test]
#[ignore = "writes a fixture file; run by hand only when a new schema version is added"]
fn make_fixture_v11() {
    let path = fixtures().join("repository-v11.db");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(fixtures().join("repository-v10.db"), &path).expect("copy v10");
    let mut conn = connect(&path).expect("open");
    migrations::to_version(&mut conn, 11).expect("v11");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

#[test]
#[ignore = "writes a fixture file; run by hand only when a new schema version is added"]
fn make_fixture_v12() {
    let path = fixtures().join("repository-v12.db");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(fixtures().join("repository-v11.db"), &path).expect("copy v11");
    let mut conn = connect(&path).expect("open");
    migrations::to_version(&mut conn, 12).expect("v12");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

#[test]
#[ignore = "writes a fixture file; run by hand only when a new schema version is added"]
fn make_fixture_v13() {
    let path = fixtures().join("repository-v13.db");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(fixtures().join("repository-v12.db"), &path).expect("copy v12");
    let mut conn = connect(&path).expect("open");
    migrations::to_version(&mut conn, 13).expect("v13");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

#[test]
#[ignore = "writes a fixture file; run by hand only when a new schema version is added"]
fn make_fixture_v14() {
    let path = fixtures().join("repository-v14.db");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(fixtures().join("repository-v13.db"), &path).expect("copy v13");
    let mut conn = connect(&path).expect("open");
    migrations::to_version(&mut conn, 14).expect("v14");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

#[test]
#[ignore = "writes a fixture file; run by hand only when a new schema version is added"]
fn make_fixture_v15() {
    let path = fixtures().join("repository-v15.db");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(fixtures().join("repository-v14.db"), &path).expect("copy v14");
    let mut conn = connect(&path).expect("open");
    migrations::to_version(&mut conn, 15).expect("v15");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

#[test]
#[ignore = "writes a fixture file; run by hand only when a new schema version is added"]
fn make_fixture_v16() {
    let path = fixtures().join("repository-v16.db");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(fixtures().join("repository-v15.db"), &path).expect("copy v15");
    let mut conn = connect(&path).expect("open");
    migrations::to_version(&mut conn, 16).expect("v16");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

/// Writes `tests/fixtures/repository-v17.db`: the version 16 fixture upgraded to 17 (batch
/// dependencies, priorities). Run by hand (`--ignored`) when version 18 is added.
#[test]
#[ignore = "writes a fixture; run by hand when a migration is added"]
fn make_fixture_v17() {
    let path = fixtures().join("repository-v17.db");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(fixtures().join("repository-v16.db"), &path).expect("copy v16");
    let mut conn = connect(&path).expect("open");
    migrations::to_version(&mut conn, 17).expect("v17");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

/// Writes `tests/fixtures/repository-v18.db`: the version 17 fixture upgraded to 18
/// (notifications). Run by hand (`--ignored`) when version 19 was added.
#[test]
#[ignore = "writes a fixture; run by hand when a migration is added"]
fn make_fixture_v18() {
    let path = fixtures().join("repository-v18.db");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(fixtures().join("repository-v17.db"), &path).expect("copy v17");
    let mut conn = connect(&path).expect("open");
    migrations::to_version(&mut conn, 18).expect("v18");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

/// Writes `tests/fixtures/repository-v19.db`: the version 18 fixture upgraded to 19
/// (retries). Run by hand (`--ignored`) when version 20 is added.
#[test]
#[ignore = "writes a fixture; run by hand when a migration is added"]
fn make_fixture_v19() {
    let path = fixtures().join("repository-v19.db");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(fixtures().join("repository-v18.db"), &path).expect("copy v18");
    let mut conn = connect(&path).expect("open");
    migrations::to_version(&mut conn, 19).expect("v19");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

/// Writes `tests/fixtures/repository-v20.db`: the version 19 fixture upgraded to 20
/// (template modules). Run by hand (`--ignored`) when version 21 is added.
#[test]
#[ignore = "writes a fixture; run by hand when a migration is added"]
fn make_fixture_v20() {
    let path = fixtures().join("repository-v20.db");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(fixtures().join("repository-v19.db"), &path).expect("copy v19");
    let mut conn = connect(&path).expect("open");
    migrations::to_version(&mut conn, 20).expect("v20");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

/// Writes `tests/fixtures/repository-v21.db`: the version 20 fixture upgraded to 21
/// (users, tokens, the audit). Run by hand (`--ignored`) when version 22 is added.
#[test]
#[ignore = "writes a fixture; run by hand when a migration is added"]
fn make_fixture_v21() {
    let path = fixtures().join("repository-v21.db");
    let _ = std::fs::remove_file(&path);
    std::fs::copy(fixtures().join("repository-v20.db"), &path).expect("copy v20");
    let mut conn = connect(&path).expect("open");
    migrations::to_version(&mut conn, 21).expect("v21");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
}

/// Version 14 on a repository upgraded from version `v`: each sheet's plans stored before
/// are its version 0, each instance's copies of its actions' plans are its own version of
/// each sheet it ran (minus its id), and the copies' columns are gone.
fn plans_kept_by_version(conn: &rusqlite::Connection, v: i64) {
    let (sheets, current) = conn
        .query_row(
            "SELECT (SELECT COUNT(*) FROM sheets),
                    (SELECT COUNT(*) FROM sheets s
                     JOIN plans_versions v ON v.sheet_id = s.id AND v.version = 0
                     JOIN sheet_plans p ON p.sheet_id = s.id AND p.version = 0)",
            [],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
        )
        .expect("v14 current plans");
    // The fixtures before version 5 hold a sheet whose definition (`{}`) the upgrade to
    // version 6 could not read: it has no plans.
    let readable = if v >= 5 { sheets } else { 0 };
    assert_eq!(
        current, readable,
        "version {v}: each sheet's plans, at version 0"
    );
    let ran = pairs(
        conn,
        "SELECT sheet_id, instance_id FROM instance_sheets WHERE version = -instance_id ORDER BY 1, 2",
    );
    assert_eq!(
        ran,
        pairs(
            conn,
            "SELECT sheet_id, instance_id FROM instance_sheets ORDER BY 1, 2"
        ),
        "version {v}: each instance runs its own plans"
    );
    for (sheet, instance) in ran {
        let text: String = conn
            .query_row(
                "SELECT plans FROM sheet_plans WHERE sheet_id = ?1 AND version = ?2",
                [sheet, -instance],
                |r| r.get(0),
            )
            .expect("an instance's plans");
        let plans: Vec<serde_json::Value> = serde_json::from_str(&text).expect("a list of plans");
        let actions: Vec<i64> = pairs(
            conn,
            &format!("SELECT action_id, 0 FROM instance_actions WHERE instance_id = {instance} AND sheet_id = {sheet} ORDER BY 1"),
        )
        .into_iter()
        .map(|(a, _)| a)
        .collect();
        // The fixtures' instances hold `{}` for each plan: their count is what is kept.
        assert_eq!(
            plans.len(),
            actions.len(),
            "version {v}: instance {instance}, sheet {sheet}"
        );
    }
    let copies: i64 = conn
        .query_row(
            "SELECT (SELECT COUNT(*) FROM pragma_table_info('instance_actions') WHERE name = 'plan')
                  + (SELECT COUNT(*) FROM pragma_table_info('sheets') WHERE name = 'plans')",
            [],
            |r| r.get(0),
        )
        .expect("v14 columns");
    assert_eq!(copies, 0, "version {v}");
}

/// The rows of `sql`, two numbers each.
fn pairs(conn: &rusqlite::Connection, sql: &str) -> Vec<(i64, i64)> {
    conn.prepare(sql)
        .and_then(|mut st| {
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()
        })
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

#[test]
fn upgrades_every_earlier_version_and_keeps_the_data() {
    // Version 0: an empty file.
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").expect("empty file");
    let mut conn = connect(&empty).expect("open");
    assert_eq!(
        migrations::to_latest(&mut conn).expect("upgrade"),
        migrations::Upgrade {
            from: 0,
            to: migrations::latest()
        }
    );
    // Every stored fixture of an earlier version.
    for v in 1..migrations::latest() {
        let fixture = fixtures().join(format!("repository-v{v}.db"));
        assert!(
            fixture.is_file(),
            "missing fixture {} for schema version {v}",
            fixture.display()
        );
        let copy = dir.path().join(format!("v{v}.db"));
        std::fs::copy(&fixture, &copy).expect("copy fixture");
        let mut conn = connect(&copy).expect("open fixture");
        assert_eq!(migrations::version(&conn).expect("version"), v);
        let up = migrations::to_latest(&mut conn).expect("upgrade fixture");
        assert_eq!(
            up,
            migrations::Upgrade {
                from: v,
                to: migrations::latest()
            }
        );
        let path: String = conn
            .query_row("SELECT path FROM folders WHERE id = 10", [], |r| r.get(0))
            .expect("folder kept");
        assert_eq!(path, "/sales");
        let node: String = conn
            .query_row("SELECT module FROM nodes WHERE id = 102", [], |r| r.get(0))
            .expect("node kept");
        assert_eq!(node, "Upsert");
        let history: i64 = conn
            .query_row("SELECT COUNT(*) FROM deploy_history", [], |r| r.get(0))
            .expect("v2 table");
        assert_eq!(
            history,
            i64::from(v >= 2) + 3 * i64::from(v >= 8),
            "version {v}"
        );
        // Version 9: every history line belongs to a deploy, those of one time to one.
        let deploys: Vec<(i64, String, i64)> = conn
            .prepare(
                "SELECT d.id, d.deployed_at, COUNT(*) FROM deploys d JOIN deploy_history h ON h.deploy_id = d.id GROUP BY d.id, d.deployed_at ORDER BY d.id",
            )
            .and_then(|mut st| {
                st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect::<Result<_, _>>()
            })
            .expect("v9 deploys");
        let expected: Vec<(i64, String, i64)> = match v {
            1 => vec![],
            2..=7 => vec![(1, "2026-01-01 00:00:00".into(), 1)],
            _ => vec![
                (1, "2026-01-01 00:00:00".into(), 2),
                (2, "2026-01-01 00:01:00".into(), 2),
            ],
        };
        assert_eq!(deploys, expected, "version {v}");
        // Named from their definitions (the oldest fixtures keep `{}`: no name).
        let names: Vec<Option<String>> = conn
            .prepare("SELECT name FROM deploy_history ORDER BY id")
            .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect::<Result<_, _>>())
            .expect("v9 names");
        let expected: Vec<Option<String>> = match v {
            1 => vec![],
            2..=7 => vec![None],
            _ => vec![
                None,
                Some("load customers".into()),
                Some("load customers v2".into()),
                Some("nightly".into()),
            ],
        };
        assert_eq!(names, expected, "version {v}");
        let instances: i64 = conn
            .query_row("SELECT COUNT(*) FROM batch_instances", [], |r| r.get(0))
            .expect("v3 table");
        assert_eq!(
            instances,
            i64::from(v >= 3) + i64::from(v >= 7),
            "version {v}"
        );
        if v >= 7 {
            // Version 8: the dependencies of the chain as rows.
            let deps = pairs(
                &conn,
                "SELECT action_id, depends_on FROM instance_action_deps WHERE instance_id = 9 ORDER BY 1, 2",
            );
            assert_eq!(deps, [(202, 201), (203, 201), (203, 202)]);
        }
        let next_runs: i64 = conn
            .query_row("SELECT COUNT(*) FROM service_batch_next_run", [], |r| {
                r.get(0)
            })
            .expect("v4 table");
        assert_eq!(next_runs, 0);
        if v >= 3 {
            let (name, batch): (String, Option<i64>) = conn
                .query_row(
                    "SELECT batch_name, batch_id FROM batch_instances WHERE id = 7",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .expect("v3 instance kept, with the v4 columns");
            assert_eq!((name.as_str(), batch), ("nightly", None));
        }
        let identity: String = conn
            .query_row("SELECT id FROM repository_identity", [], |r| r.get(0))
            .expect("v5 identity");
        assert_eq!(identity.len(), 16, "{identity}");
        if v >= 4 {
            let attempt: i64 = conn
                .query_row(
                    "SELECT attempt FROM instance_actions WHERE instance_id = 7",
                    [],
                    |r| r.get(0),
                )
                .expect("v4 action kept, with the v5 column");
            assert_eq!(attempt, 0);
        }
        // Version 11: the data graph is empty, every sheet waits for its next deploy to
        // fill it.
        let (flows, unrecorded, sheets): (i64, i64, i64) = conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM data_flow), (SELECT COUNT(*) FROM sheets WHERE flow_recorded IS NULL), (SELECT COUNT(*) FROM sheets)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .expect("v11 table");
        assert_eq!((flows, unrecorded), (0, sheets), "version {v}");
        assert!(sheets > 0, "version {v}");
        // Version 13: the sheets each instance ran, as rows, and no index of the actions by
        // sheet.
        let ran = pairs(
            &conn,
            "SELECT sheet_id, instance_id FROM instance_sheets ORDER BY 1, 2",
        );
        let expected = pairs(
            &conn,
            "SELECT DISTINCT sheet_id, instance_id FROM instance_actions ORDER BY 1, 2",
        );
        assert_eq!(ran, expected, "version {v}");
        if v >= 7 {
            assert_eq!(ran, [(100, 7), (100, 9)], "version {v}");
        }
        // No index of actions by sheet or by instance and state.
        let old_indexes: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('instance_actions_sheet', 'instance_action_deps_dependents', 'instance_actions_instance_state')",
                [],
                |r| r.get(0),
            )
            .expect("v13 schema");
        assert_eq!(old_indexes, 0, "version {v}");
        plans_kept_by_version(&conn, v);
        // Version 15: no attempt before it names the deploy it ran.
        let named: i64 = conn
            .query_row("SELECT COUNT(deploy_id) FROM instance_actions", [], |r| {
                r.get(0)
            })
            .expect("v15 deploy_id");
        assert_eq!(named, 0, "version {v}");
        // Version 16: no backfill, and no instance of one.
        let backfilled: i64 = conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM backfills) + (SELECT COUNT(backfill_id) FROM batch_instances)",
                [],
                |r| r.get(0),
            )
            .expect("v16 backfills");
        assert_eq!(backfilled, 0, "version {v}");
        // Version 17: no batch runs after another; each waits 120 minutes, then skips.
        let after: Vec<String> = pairs_text(
            &conn,
            "SELECT after_batches || ' ' || after_timeout_minutes || ' ' || after_timeout FROM batches",
        );
        assert!(
            after.iter().all(|a| a == "[] 120 skip"),
            "version {v}: {after:?}"
        );
        // Idempotent: a second run changes nothing.
        let before = dump(&conn).expect("dump");
        let again = migrations::to_latest(&mut conn).expect("again");
        assert_eq!(again.from, again.to);
        assert_eq!(before, dump(&conn).expect("dump"));
    }
}

#[test]
fn refuses_to_downgrade_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("repository.db");
    let mut conn = connect(&path).expect("open");
    migrations::to_latest(&mut conn).expect("upgrade");
    let future = migrations::latest() + 5;
    conn.pragma_update(None, "user_version", future)
        .expect("set version");
    let before = dump(&conn).expect("dump");
    let e = migrations::to_latest(&mut conn).expect_err("too new");
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("version {future}")) && msg.contains("newer"),
        "{msg}"
    );
    assert!(msg.contains("downgrade is not possible"), "{msg}");
    assert_eq!(before, dump(&conn).expect("dump"));
    drop(conn);
    assert!(matches!(Repository::open(&path), Err(Error::TooNew { .. })));
}

#[test]
fn a_failing_migration_leaves_the_file_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("repository.db");
    let mut conn = connect(&path).expect("open");
    migrations::to_version(&mut conn, 1).expect("v1");
    // A table that migration 2 wants to create already exists: the step fails.
    conn.execute_batch("CREATE TABLE deploy_history (x)")
        .expect("conflicting table");
    let before = dump(&conn).expect("dump");
    let e = migrations::to_latest(&mut conn).expect_err("fails");
    assert!(e.to_string().contains("version 2"), "{e}");
    assert_eq!(migrations::version(&conn).expect("version"), 1);
    assert_eq!(before, dump(&conn).expect("dump"));
}

#[test]
fn released_migrations_are_never_edited() {
    let all: String = migrations::MIGRATIONS
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let pg = m
                .postgres
                .map(|p| format!("-- and on PostgreSQL:\n{}\n", p.trim()))
                .unwrap_or_default();
            format!(
                "-- version {}: {}\n{}\n{pg}",
                i + 1,
                m.summary,
                m.sql.trim()
            )
        })
        .collect();
    insta::assert_snapshot!(all);
}

/// PostgreSQL runs each step of the schema as `postgres_ddl` derives it from SQLite's text:
/// the derivation is held here statement by statement, so that a change to it (or a new
/// step it translates wrongly) shows as a diff of the DDL PostgreSQL runs.
#[test]
fn released_migrations_as_postgresql_runs_them() {
    let all: String = migrations::MIGRATIONS
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let pg = m
                .postgres
                .map(|p| format!("-- and on PostgreSQL only:\n{}\n", p.trim()))
                .unwrap_or_default();
            format!(
                "-- version {}: {}\n{}\n{pg}",
                i + 1,
                m.summary,
                crate::schema::postgres_ddl(m.sql).trim()
            )
        })
        .collect();
    // Nothing only SQLite reads survives the derivation.
    for sqlite_only in [
        "INTEGER",
        "randomblob",
        "WITHOUT ROWID",
        "AUTOINCREMENT",
        "PRAGMA",
    ] {
        assert!(!all.contains(sqlite_only), "{sqlite_only} in:\n{all}");
    }
    insta::assert_snapshot!(all);
}

#[test]
fn connections_use_wal_and_foreign_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conn = connect(&dir.path().join("r.db")).expect("open");
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .expect("mode");
    assert_eq!(mode, "wal");
    let fk: i64 = conn
        .pragma_query_value(None, "foreign_keys", |r| r.get(0))
        .expect("fk");
    assert_eq!(fk, 1);
}

#[test]
fn commits_leave_checkpoints_to_the_background() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = Repository::open(&dir.path().join("repository.db")).expect("open");
    let auto: i64 = repo
        .with(|c| c.value("PRAGMA wal_autocheckpoint", args![]))
        .expect("pragma")
        .expect("a value");
    assert_eq!(auto, 0, "the writer does not checkpoint in its commits");
    repo.tx(|c| {
        c.execute_batch("CREATE TABLE filler (x TEXT)")?;
        for i in 0..2000 {
            c.execute(
                "INSERT INTO filler VALUES (?1)",
                args![format!("{i:0>200}")],
            )?;
        }
        Ok(())
    })
    .expect("writes");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while repo.checkpoints() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no background checkpoint within 10 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The log is reused once copied: more rounds of the same writes do not grow it.
    let wal = dir.path().join("repository.db-wal");
    let size = || std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    let first = size();
    for round in 0..4 {
        let seen = repo.checkpoints();
        repo.tx(|c| {
            for i in 0..2000 {
                c.execute(
                    "INSERT INTO filler VALUES (?1)",
                    args![format!("{round}{i:0>200}")],
                )?;
            }
            Ok(())
        })
        .expect("more writes");
        while repo.checkpoints() == seen {
            assert!(std::time::Instant::now() < deadline + std::time::Duration::from_secs(30));
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    assert!(
        size() <= first * 3 / 2,
        "the log grew from {first} to {} bytes",
        size()
    );
}

/// An acknowledged deploy outlives a kill of the process at any `synchronous` level in WAL
/// mode (the page cache keeps it); what outlives a power cut is the writer's settings,
/// asserted here: WAL, and `synchronous=NORMAL` (the WAL is synced at every checkpoint; a cut
/// loses at most the transactions since the last one, never the file). `OFF` fails it.
#[test]
fn the_writer_runs_in_wal_mode_with_synchronous_normal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = Repository::open(&dir.path().join("repository.db")).expect("open");
    let (mode, synchronous) = repo
        .with(|c| {
            Ok((
                c.value::<String>("PRAGMA journal_mode", args![])?,
                c.value::<i64>("PRAGMA synchronous", args![])?,
            ))
        })
        .expect("pragmas");
    assert_eq!(mode.as_deref(), Some("wal"));
    assert_eq!(synchronous, Some(1), "1 is NORMAL (0 OFF, 2 FULL)");
}

#[test]
fn the_change_feed_listens_where_the_triggers_notify() {
    let pg = migrations::MIGRATIONS
        .iter()
        .filter_map(|m| m.postgres)
        .collect::<String>();
    assert!(
        pg.contains(&format!(
            "pg_notify('{}', '')",
            crate::schema::CHANGES_CHANNEL
        )),
        "{pg}"
    );
}

/// A large sheet's plans are kept parsed once its deploy commits them, at the deploy's
/// number, so its first run does not parse them; a deploy rolled back keeps nothing. A
/// run reads the stored version, and the text only when the version differs.
#[test]
fn a_deploy_keeps_its_sheet_s_plans_parsed_for_the_first_run() {
    use crate::store::SheetStore as _;
    let doc = |sql: &str| {
        let text = format!(
            r#"{{"version": 1, "transformationData": {{
                "folders": [{{"id": 10, "path": "/load"}}],
                "sheets": [{{"id": 1, "attributes": {{"name": "s", "folder_id": 10, "folder": "/load"}},
                  "nodes": [{{"id": 11, "type": 0, "attributes": {{"module": "Sql", "name": "a", "action": "{sql}"}}}}],
                  "edges": []}}]}}}}"#
        );
        let (doc, problems) = weft_dsr::parse(&text);
        assert!(!problems.has_errors(), "{problems:?}");
        doc.expect("a document")
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("r.db");
    let repo = Repository::open(&path).expect("open");
    // Rolled back: nothing is kept.
    // Large: past the size from which a deploy parses them.
    let first = doc(&format!("SELECT 1 -- {}", "x".repeat(70 << 10)));
    repo.write("tests", |w| {
        w.folder(&first.folders[0])?;
        w.sheet(&first.sheets[0])?;
        Ok(((), false))
    })
    .expect("rolled back");
    assert_eq!(repo.plans_kept().0, 0);
    repo.write("tests", |w| {
        w.folder(&first.folders[0])?;
        w.sheet(&first.sheets[0])?;
        Ok(((), true))
    })
    .expect("deploy");
    let (sheets, bytes) = repo.plans_kept();
    assert_eq!(sheets, 1, "the deployed sheet's plans are kept");
    assert!(bytes > 0);
    let (version, a) = repo.plans(1).expect("read").expect("a sheet");
    assert!(std::sync::Arc::ptr_eq(
        &a,
        &repo.plans(1).expect("read").expect("a sheet").1
    ));
    assert_eq!(a.plans()[0].name, "a");
    // Found by the stored version: a text changed under the same version is not read.
    let conn = connect(&path).expect("connect");
    conn.execute("UPDATE sheet_plans SET plans = '[]' WHERE sheet_id = 1", [])
        .expect("by hand");
    let (_, b) = repo.plans(1).expect("read").expect("a sheet");
    assert!(std::sync::Arc::ptr_eq(&a, &b), "the version decides");
    // Another version: the text is read and parsed.
    conn.execute_batch(
        "INSERT INTO sheet_plans (sheet_id, version, plans) VALUES (1, -5, '[]');
         UPDATE plans_versions SET version = -5 WHERE sheet_id = 1;",
    )
    .expect("by hand");
    assert!(
        repo.plans(1)
            .expect("read")
            .expect("a sheet")
            .1
            .plans()
            .is_empty()
    );
    // A redeploy gives the plans a new version, and keeps of the earlier ones only those an
    // instance runs.
    let versions = || pairs(&conn, "SELECT version, 0 FROM sheet_plans ORDER BY 1");
    let redeploy = |sql: &str| {
        let again = doc(sql);
        repo.write("tests", |w| {
            w.sheet(&again.sheets[0])?;
            Ok(((), true))
        })
        .expect("redeploy");
        repo.plans(1).expect("read").expect("a sheet")
    };
    let (second, c) = redeploy("SELECT 2");
    assert!(second > version, "{second} after {version}");
    assert_eq!(c.get(11).and_then(|p| p.text.as_deref()), Some("SELECT 2"));
    assert_eq!(versions(), [(second, 0)], "none ran the earlier ones");
    conn.execute_batch(&format!(
        "INSERT INTO batch_instances (id, batch_name, user_name, state, started_at, elements, variables)
             VALUES (99, 'b', 'u', 'running', '2026-11-27 00:00:00', '[]', '[]');
         INSERT INTO instance_sheets (sheet_id, instance_id, version) VALUES (1, 99, {second});"
    ))
    .expect("an instance runs it");
    let (third, _) = redeploy("SELECT 3");
    assert_eq!(versions(), [(second, 0), (third, 0)], "kept while it runs");
    conn.execute("DELETE FROM instance_sheets", [])
        .expect("the instance gone");
    let (fourth, d) = redeploy("SELECT 4");
    assert_eq!(versions(), [(fourth, 0)]);
    assert_eq!(d.get(11).and_then(|p| p.text.as_deref()), Some("SELECT 4"));
}

/// The first column of each row of `sql`, as text.
fn pairs_text(conn: &rusqlite::Connection, sql: &str) -> Vec<String> {
    let mut st = conn.prepare(sql).expect("prepare");
    st.query_map([], |r| r.get::<_, String>(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

#[test]
fn users_and_their_tokens_are_kept_changed_and_revoked_in_one_place() {
    use crate::users::{TokenToStore, UserChange};
    let dir = tempfile::tempdir().expect("dir");
    let repo = Repository::open(&dir.path().join("repository.db")).expect("open");
    let token = |id: &'static str| TokenToStore {
        id,
        hash: "$argon2id$hash",
        expires_at: None,
    };
    let folders = ["/etl".to_owned()];
    assert!(
        repo.add_user(
            ("anna", "operator", &folders),
            "keyfile",
            &token("aaaaaaaaaaaaaaaa")
        )
        .expect("add")
    );
    // A second user of the name is refused and nothing is written.
    assert!(
        !repo
            .add_user(
                ("anna", "admin", &[]),
                "keyfile",
                &token("bbbbbbbbbbbbbbbb")
            )
            .expect("add")
    );
    assert!(repo.sign_in("bbbbbbbbbbbbbbbb").expect("sign in").is_none());
    let s = repo
        .sign_in("aaaaaaaaaaaaaaaa")
        .expect("sign in")
        .expect("known");
    assert_eq!(
        (
            s.user.as_str(),
            s.role.as_str(),
            s.folders.as_slice(),
            s.revoked,
            s.disabled
        ),
        ("anna", "operator", &folders[..], false, false)
    );
    // Disabled and enabled again; the role and folders changed.
    let change = |c: UserChange<'_>| repo.change_user("anna", &c).expect("change");
    assert!(change(UserChange {
        disabled: Some(true),
        ..UserChange::default()
    }));
    assert!(
        repo.sign_in("aaaaaaaaaaaaaaaa")
            .expect("sign in")
            .expect("known")
            .disabled
    );
    assert!(change(UserChange {
        disabled: Some(false),
        role: Some("deployer"),
        folders: Some(&[])
    }));
    let s = repo
        .sign_in("aaaaaaaaaaaaaaaa")
        .expect("sign in")
        .expect("known");
    assert_eq!(
        (s.role.as_str(), s.folders.len(), s.disabled),
        ("deployer", 0, false)
    );
    assert!(
        !repo
            .change_user("nobody", &UserChange::default())
            .expect("change")
    );
    // A rotation revokes the others in the same step; a revocation names the user.
    assert!(
        repo.add_token("anna", "keyfile", &token("cccccccccccccccc"), true)
            .expect("token")
    );
    assert!(
        repo.sign_in("aaaaaaaaaaaaaaaa")
            .expect("sign in")
            .expect("known")
            .revoked
    );
    assert!(
        !repo
            .add_token("nobody", "keyfile", &token("dddddddddddddddd"), false)
            .expect("token")
    );
    assert_eq!(
        repo.revoke_token("cccccccccccccccc")
            .expect("revoke")
            .as_deref(),
        Some("anna")
    );
    assert_eq!(repo.revoke_token("eeeeeeeeeeeeeeee").expect("revoke"), None);
    let users = repo.users().expect("list");
    assert_eq!(users.len(), 1);
    assert_eq!(users[0].tokens.len(), 2);
    assert!(users[0].tokens.iter().all(|t| t.revoked_at.is_some()));
}

#[test]
fn the_audit_is_listed_newest_first_by_filter_and_pruned_as_runs_are() {
    use crate::audit::{Entry, Filter};
    let dir = tempfile::tempdir().expect("dir");
    let repo = Repository::open(&dir.path().join("repository.db")).expect("open");
    for (user, command, outcome) in [
        ("anna", "DeployRepository", "done"),
        ("otto", "HaltBatchInstance", "refused"),
        ("anna", "RunElements", "done"),
    ] {
        repo.audit(&Entry {
            host: "h".to_owned(),
            user: user.to_owned(),
            via: "token 0123456789abcdef".to_owned(),
            client: "10.0.0.7".to_owned(),
            command: command.to_owned(),
            outcome: outcome.to_owned(),
            what: String::new(),
        })
        .expect("append");
    }
    let list = |f: Filter| -> Vec<String> {
        repo.audit_list(&Filter { limit: 100, ..f })
            .expect("list")
            .into_iter()
            .map(|e| e.command)
            .collect()
    };
    assert_eq!(
        list(Filter::default()),
        ["RunElements", "HaltBatchInstance", "DeployRepository"]
    );
    assert_eq!(
        list(Filter {
            user: Some("anna".to_owned()),
            ..Filter::default()
        }),
        ["RunElements", "DeployRepository"]
    );
    assert_eq!(
        list(Filter {
            outcome: Some("refused".to_owned()),
            ..Filter::default()
        }),
        ["HaltBatchInstance"]
    );
    assert_eq!(
        list(Filter {
            before_id: Some(3),
            ..Filter::default()
        }),
        ["HaltBatchInstance", "DeployRepository"]
    );
    assert_eq!(
        list(Filter {
            until: Some("2000-01-01 00:00:00".to_owned()),
            ..Filter::default()
        }),
        Vec::<String>::new()
    );
    // Kept as long as runs are: what is older than the cutoff goes.
    let keep = crate::retention::Retention {
        runs_before: Some("9999-01-01 00:00:00".to_owned()),
        ..Default::default()
    };
    assert_eq!(repo.prune(&keep).expect("prune").audit, 3);
    assert_eq!(list(Filter::default()), Vec::<String>::new());
}
