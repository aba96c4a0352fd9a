//! End to end with the native `postgresql` connection type (plugins/postgres) on a real
//! PostgreSQL server started by the test: Insert and Upsert on PostgreSQL, Transfer both ways
//! with SQLite and every type there and back with its extremes and NULLs, `timestamptz`
//! texts read in the session's zone, a halt that cancels a running statement or a streaming
//! Transfer, the `sslmode`s on a server with TLS, connection errors that name the place and
//! never the password, deploy checks in
//! PostgreSQL's dialect (positions; table functions are no tables), and the clock functions
//! (`current_local_timestamp()`, `is_dst_change_tonight()`) as on SQLite.

use crate::common;

use common::*;
use serde_json::{Value, json};
use weft_tests::postgres::Postgres;

/// A server whose key file has connection 1 (SQLite `data.db`) and 7 (the PostgreSQL server),
/// deployed with folder 10.
fn setup(pg: &Postgres) -> (Weft, std::path::PathBuf) {
    setup_with(pg, &[], &[])
}

/// [`setup`] with more arguments and environment for `weft serve`.
fn setup_with(pg: &Postgres, args: &[&str], env: &[(&str, &str)]) -> (Weft, std::path::PathBuf) {
    let mut all = vec!["--listen", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let w = Weft::start_with(&all, env);
    let data = w.home.path().join("data.db");
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch(
            "CREATE TABLE lite_in (id INTEGER, name TEXT, amount TEXT, day TEXT, ok INTEGER);
             INSERT INTO lite_in VALUES (1, 'Ünïcode ✓', '12.50', '2026-11-24', 1), (2, NULL, '-0.01', '1999-12-31', 0);
             CREATE TABLE lite_out (id INTEGER, name TEXT, amount TEXT, day TEXT, ok INTEGER,
                 at TEXT, at_tz TEXT, raw BLOB, u TEXT, j TEXT, f REAL, big INTEGER);",
        )
        .expect("tables");
    w.add_keys(&format!(
        "1|sqlite|{}|||\n7|postgresql|postgresql://127.0.0.1:{}/weft|weft|secret|sslmode=disable;application_name=weft-test\n",
        data.display(),
        pg.port
    ));
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {
            "folders": [{"id": 10, "path": "/pg"}],
            "connections": [{"id": 1, "name": "data", "type": "sqlite"},
                            {"id": 7, "name": "warehouse", "type": "postgresql"}]}}),
    );
    (w, data)
}

fn deploy(w: &Weft, doc: &Value) {
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "deploy failed: {v}");
}

/// Sheet `id` with one action (`module`, `text`, extra attributes) from `sources` to `target`,
/// each object `(table, connection)`.
fn sheet(
    id: i64,
    module: &str,
    text: &str,
    extra: Value,
    sources: &[(&str, i64)],
    target: (&str, i64),
) -> Value {
    let action = id * 10;
    let mut attributes = json!({"module": module, "name": format!("step {id}"), "action": text});
    if let (Some(a), Some(e)) = (attributes.as_object_mut(), extra.as_object()) {
        a.extend(e.clone());
    }
    let mut nodes = vec![json!({"id": action, "type": 0, "attributes": attributes})];
    let mut edges = Vec::new();
    for (i, (table, conn)) in sources.iter().enumerate() {
        let n = action + 1 + i as i64;
        nodes.push(json!({"id": n, "type": 1, "attributes": {"field1": table, "objectTypeId": 1, "connectionId": conn}}));
        edges.push(json!({"id": n, "from": n, "to": action}));
    }
    let t = action + 9;
    nodes.push(json!({"id": t, "type": 1, "attributes": {"field1": target.0, "objectTypeId": 1, "connectionId": target.1}}));
    edges.push(json!({"id": t, "from": action, "to": t}));
    json!({"version": 1, "transformationData": {"sheets": [{"id": id,
        "attributes": {"name": format!("sheet {id}"), "folder_id": 10, "folder": "/pg"},
        "nodes": nodes, "edges": edges}]}})
}

fn run(w: &Weft, sheet: i64) -> i64 {
    let (st, v) = command(
        w,
        "RunElements",
        json!({"batchExecution": {"batchName": "pg", "user": "t", "elementList": [{"elementType": "S", "elementId": sheet}]}}),
    );
    assert_eq!(st, 200, "{v}");
    v["payload"]["batchInstanceId"].as_i64().expect("id")
}

fn wait(w: &Weft, id: i64) -> Value {
    let (st, v) = command(
        w,
        "WaitBatchInstance",
        json!({"batchInstanceId": id, "timeoutSeconds": 120}),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["timedOut"], false, "{v}");
    v["payload"].clone()
}

/// Runs sheet `id` and waits for its end; the instance.
fn run_and_wait(w: &Weft, id: i64) -> Value {
    let instance = run(w, id);
    wait(w, instance)
}

/// Waits until the server shows a running `pg_sleep` statement of weft's session.
fn until_sleeping(pg: &Postgres) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while pg
        .psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'weft-test' AND query LIKE '%pg_sleep%' AND state = 'active'")
        .expect("activity")
        != "1"
    {
        assert!(std::time::Instant::now() < deadline, "it never ran");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn sql_insert_upsert_and_transfers_both_ways_on_a_native_postgresql_connection() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql(
        "CREATE TABLE src (id int PRIMARY KEY, name text, amount numeric(14,2), day date, ok boolean);
         INSERT INTO src VALUES (1, 'one', 10.00, '2026-01-01', true), (2, 'two', 20.50, '2026-01-02', false);
         CREATE TABLE copy_dst (id int, name text, amount numeric(14,2), day date, ok boolean);
         CREATE TABLE up_dst (id int PRIMARY KEY, name text, amount numeric(14,2));
         CREATE TABLE from_lite (id bigint, name varchar(40), amount numeric(14,2), day date, ok boolean);
         CREATE TABLE typed (id int, name text, amount numeric(20,4), day date, ok boolean,
             at timestamp, at_tz timestamptz, raw bytea, u uuid, j jsonb, f double precision, big bigint);
         INSERT INTO typed VALUES
           (1, 'Ünïcode ✓ \"q\"', 123456789012.3456, '2026-03-29', true, '2026-03-29 02:30:00.25',
            '2026-10-25 01:30:00+00', '\\x00ff10', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"k\": [1, 2]}',
            -1.5e300, 9223372036854775807),
           (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, -9223372036854775808);",
    )
    .expect("tables");
    let (w, data) = setup(&pg);
    deploy(
        &w,
        &sheet(
            1,
            "Insert",
            "SELECT * FROM src",
            json!({}),
            &[("src", 7)],
            ("copy_dst", 7),
        ),
    );
    deploy(
        &w,
        &sheet(
            2,
            "Upsert",
            "SELECT id, name, amount FROM src",
            // No `keys`: the table's primary key (a one-column key, first in its index).
            json!({}),
            &[("src", 7)],
            ("up_dst", 7),
        ),
    );
    deploy(
        &w,
        &sheet(
            3,
            "Transfer",
            "SELECT * FROM lite_in",
            json!({}),
            &[("lite_in", 1)],
            ("from_lite", 7),
        ),
    );
    deploy(
        &w,
        &sheet(
            4,
            "Transfer",
            "SELECT * FROM typed ORDER BY id",
            json!({}),
            &[("typed", 7)],
            ("lite_out", 1),
        ),
    );
    // Insert: INSERT ... SELECT on the server.
    let inst = run_and_wait(&w, 1);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(
        pg.psql("SELECT id, name, amount, day, ok FROM copy_dst ORDER BY id")
            .expect("copy"),
        "1|one|10.00|2026-01-01|t\n2|two|20.50|2026-01-02|f"
    );
    // Upsert: inserts, then updates on the key.
    let inst = run_and_wait(&w, 2);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(inst["actions"][0]["rowsWritten"], 2, "{inst}");
    pg.psql("UPDATE src SET name = 'ONE' WHERE id = 1; INSERT INTO src VALUES (3, 'three', 3, NULL, NULL);")
        .expect("change");
    let inst = run_and_wait(&w, 2);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(
        pg.psql("SELECT id, name FROM up_dst ORDER BY id")
            .expect("up"),
        "1|ONE\n2|two\n3|three"
    );
    let a = &inst["actions"][0];
    assert_eq!(
        (&a["rowsRead"], &a["rowsWritten"], &a["rowsUpdated"]),
        (&json!(3), &json!(1), &json!(2)),
        "{inst}"
    );
    // ON CONFLICT on a unique constraint that is not the primary key; and a clear error,
    // with nothing written, where the key columns have none.
    pg.psql(
        "CREATE TABLE uq_dst (n serial PRIMARY KEY, id int UNIQUE, name text);
         INSERT INTO uq_dst (id, name) VALUES (2, 'old');
         CREATE TABLE nokey_dst (id int, name text);",
    )
    .expect("tables");
    for (sheet_id, table) in [(6, "uq_dst"), (7, "nokey_dst")] {
        deploy(
            &w,
            &sheet(
                sheet_id,
                "Upsert",
                "SELECT id, name FROM src",
                json!({"keys": "id"}),
                &[("src", 7)],
                (table, 7),
            ),
        );
    }
    let inst = run_and_wait(&w, 6);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(
        (
            &inst["actions"][0]["rowsWritten"],
            &inst["actions"][0]["rowsUpdated"]
        ),
        (&json!(2), &json!(1)),
        "{inst}"
    );
    assert_eq!(
        pg.psql("SELECT id, name FROM uq_dst ORDER BY id")
            .expect("uq"),
        "1|ONE\n2|two\n3|three"
    );
    let inst = run_and_wait(&w, 7);
    assert_eq!(inst["state"], "failed", "{inst}");
    let e = inst["actions"][0]["error"].as_str().unwrap_or_default();
    assert!(
        e.contains("no primary key or unique constraint on exactly (id)")
            && e.contains("ADD UNIQUE (id)"),
        "{e}"
    );
    assert_eq!(
        pg.psql("SELECT count(*) FROM nokey_dst").expect("count"),
        "0"
    );
    // SQLite -> PostgreSQL: text values land in typed columns.
    let inst = run_and_wait(&w, 3);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(
        pg.psql("SELECT id, coalesce(name, 'NULL'), amount, day, ok FROM from_lite ORDER BY id")
            .expect("from lite"),
        "1|Ünïcode ✓|12.50|2026-11-24|t\n2|NULL|-0.01|1999-12-31|f"
    );
    // A value a column cannot take fails the action with its row and column, and the
    // target keeps what it had.
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("INSERT INTO lite_in VALUES (3, 'three', 'not a number', '2026-01-03', 1);")
        .expect("bad row");
    let inst = run_and_wait(&w, 3);
    assert_eq!(inst["state"], "failed", "{inst}");
    let e = inst["actions"][0]["error"].as_str().unwrap_or_default();
    assert!(e.contains("row 3, column amount"), "{e}");
    assert!(e.contains("`not a number` is no number"), "{e}");
    assert_eq!(
        pg.psql("SELECT count(*) FROM from_lite").expect("count"),
        "2"
    );
    // PostgreSQL -> SQLite: every basic type and NULLs read as weft values.
    let inst = run_and_wait(&w, 4);
    assert_eq!(inst["state"], "finished", "{inst}");
    let c = rusqlite::Connection::open(&data).expect("data");
    let row: Vec<String> = c
        .query_row("SELECT * FROM lite_out WHERE id = 1", [], |r| {
            (0..12)
                .map(|i| {
                    Ok(match r.get_ref(i)? {
                        rusqlite::types::ValueRef::Null => "NULL".to_owned(),
                        rusqlite::types::ValueRef::Integer(n) => n.to_string(),
                        rusqlite::types::ValueRef::Real(f) => format!("{f:e}"),
                        rusqlite::types::ValueRef::Text(t) => {
                            String::from_utf8_lossy(t).into_owned()
                        }
                        rusqlite::types::ValueRef::Blob(b) => format!("blob {b:?}"),
                    })
                })
                .collect()
        })
        .expect("row 1");
    assert_eq!(
        row,
        [
            "1",
            "Ünïcode ✓ \"q\"",
            "123456789012.3456",
            "2026-03-29",
            "1",
            "2026-03-29 02:30:00.25",
            "2026-10-25T01:30:00+00:00",
            "blob [0, 255, 16]",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "{\"k\": [1, 2]}",
            "-1.5e300",
            "9223372036854775807",
        ]
    );
    let nulls: i64 = c
        .query_row(
            "SELECT (name IS NULL) + (amount IS NULL) + (day IS NULL) + (ok IS NULL) + (at IS NULL) + (at_tz IS NULL) + (raw IS NULL) + (u IS NULL) + (j IS NULL) + (f IS NULL) FROM lite_out WHERE id = 2 AND big = -9223372036854775808",
            [],
            |r| r.get(0),
        )
        .expect("row 2");
    assert_eq!(nulls, 10, "every NULL arrives as NULL");
}

#[test]
fn halt_cancels_a_running_postgresql_statement_and_rolls_it_back() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql("CREATE TABLE waited (n int);").expect("table");
    let (w, _) = setup(&pg);
    deploy(
        &w,
        &sheet(
            5,
            "Sql",
            "INSERT INTO waited VALUES (1); SELECT pg_sleep(60);",
            json!({}),
            &[],
            ("waited", 7),
        ),
    );
    let id = run(&w, 5);
    until_sleeping(&pg);
    let asked = std::time::Instant::now();
    let (st, v) = command(&w, "HaltBatchInstance", json!({"batchInstanceId": id}));
    assert_eq!(st, 200, "{v}");
    let inst = wait(&w, id);
    let took = asked.elapsed();
    eprintln!("the PostgreSQL statement was cancelled {took:?} after the halt");
    assert!(
        took < std::time::Duration::from_secs(1),
        "the halt took {took:?}"
    );
    assert_eq!(inst["state"], "halted", "{inst}");
    let a = &inst["actions"][0];
    assert_eq!(a["state"], "H", "{inst}");
    let e = a["error"].as_str().unwrap_or_default();
    assert!(
        e.starts_with("halted on request: ") && e.contains("canceling statement"),
        "{e}"
    );
    assert_eq!(
        pg.psql("SELECT count(*) FROM waited").expect("count"),
        "0",
        "its transaction was rolled back"
    );
}

#[test]
fn sslmodes_encrypt_and_verify_full_checks_the_certificate_and_the_host_name() {
    let pg = Postgres::start_tls().expect("PostgreSQL with TLS");
    pg.psql("CREATE TABLE seen (entry int, ssl boolean);")
        .expect("table");
    let ca = pg.dir().join("ca.pem");
    // A certificate authority that did not sign the server's certificate.
    let other = tempfile::tempdir().expect("other CA");
    let made = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "k.pem", "-out",
        ])
        .arg(other.path().join("ca.pem"))
        .args(["-days", "2", "-subj", "/CN=someone else"])
        .current_dir(other.path())
        .output()
        .expect("openssl");
    assert!(made.status.success(), "{made:?}");
    let (w, _) = setup(&pg);
    let url = |host: &str| format!("postgresql://{host}:{}/weft", pg.port);
    let entries = [
        (21, url("127.0.0.1"), "sslmode=disable".to_owned()),
        (22, url("127.0.0.1"), "sslmode=require".to_owned()),
        (
            23,
            url("localhost"),
            format!("sslmode=verify-full;sslrootcert={}", ca.display()),
        ),
        (
            24,
            url("127.0.0.1"),
            format!("sslmode=verify-full;sslrootcert={}", ca.display()),
        ),
        (
            25,
            url("localhost"),
            format!(
                "sslmode=verify-full;sslrootcert={}",
                other.path().join("ca.pem").display()
            ),
        ),
    ];
    let mut keys = String::new();
    let mut connections = Vec::new();
    for (id, url, options) in &entries {
        keys.push_str(&format!("{id}|postgresql|{url}|weft|secret|{options}\n"));
        connections.push(json!({"id": id, "name": format!("tls{id}"), "type": "postgresql"}));
    }
    w.add_keys(&keys);
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {"connections": connections}}),
    );
    for (id, _, _) in &entries {
        deploy(
            &w,
            &sheet(
                *id,
                "Sql",
                &format!(
                    "INSERT INTO seen SELECT {id}, ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
                ),
                // A system view, not an object of the sheet.
                json!({"validateSql": false}),
                &[],
                ("seen", *id),
            ),
        );
    }
    for id in [21, 22, 23, 24] {
        let inst = run_and_wait(&w, id);
        assert_eq!(inst["state"], "finished", "entry {id}: {inst}");
    }
    assert_eq!(
        pg.psql("SELECT entry, ssl FROM seen ORDER BY entry")
            .expect("seen"),
        "21|f\n22|t\n23|t\n24|t",
        "disable is plain; require and verify-full (by name and by address) are encrypted"
    );
    // A certificate another authority signed is refused, and the message says why.
    let inst = run_and_wait(&w, 25);
    assert_eq!(inst["state"], "failed", "{inst}");
    let e = inst["actions"][0]["error"].as_str().unwrap_or_default();
    assert!(
        e.contains(&format!(
            "cannot connect to PostgreSQL at localhost:{}",
            pg.port
        )) && e.to_lowercase().contains("certificate"),
        "{e}"
    );
    // require against a server that offers no TLS fails, naming it.
    let plain = Postgres::start().expect("PostgreSQL");
    plain
        .psql("CREATE TABLE seen (entry int, ssl boolean);")
        .expect("table");
    w.add_keys(&format!(
        "26|postgresql|postgresql://127.0.0.1:{}/weft|weft|secret|sslmode=require\n",
        plain.port
    ));
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {"connections": [{"id": 26, "name": "plain", "type": "postgresql"}]}}),
    );
    deploy(
        &w,
        &sheet(
            26,
            "Sql",
            "INSERT INTO seen VALUES (26, false)",
            json!({}),
            &[],
            ("seen", 26),
        ),
    );
    let inst = run_and_wait(&w, 26);
    assert_eq!(inst["state"], "failed", "{inst}");
    let e = inst["actions"][0]["error"].as_str().unwrap_or_default();
    assert!(e.contains(&format!("127.0.0.1:{}", plain.port)), "{e}");
    assert_eq!(plain.psql("SELECT count(*) FROM seen").expect("seen"), "0");
}

#[test]
fn every_type_goes_postgresql_to_sqlite_and_back_unchanged_with_extremes_and_nulls() {
    let pg = Postgres::start().expect("PostgreSQL");
    let columns = "i2 smallint, i4 integer, i8 bigint, r4 real, r8 double precision, \
                   num numeric, txt text, vc varchar(12), ch char(3), b boolean, d date, \
                   tm time, ts timestamp, tstz timestamptz, by bytea, js json, jsb jsonb, \
                   u uuid";
    pg.psql(&format!(
        "CREATE TABLE all_types (n int, {columns});
         CREATE TABLE all_back (n int, {columns});
         INSERT INTO all_types VALUES
           (1, -32768, -2147483648, -9223372036854775808, -3.4e38, -1.7976931348623157e308,
            -99999999999999999999.99999, '', '', 'ab', false, '0001-01-01', '00:00:00',
            '0001-01-01 00:00:00', '0001-01-01 00:00:00+00', '\\x00', 'null', '{{}}',
            '00000000-0000-0000-0000-000000000000'),
           (2, 32767, 2147483647, 9223372036854775807, 3.4e38, 'Infinity', 'Infinity',
            repeat('x', 5000), 'ünï ✓ 日本', '✓✓✓', true, 'infinity', '23:59:59.999999',
            'infinity', '-infinity', '\\xdeadbeef00ff', '[1, \"a\", null]',
            '{{\"k\": {{\"deep\": [true, 1.5]}}}}', 'ffffffff-ffff-ffff-ffff-ffffffffffff'),
           (3, 0, 0, 0, 1.25, -0.0, 0.000001, 'line\nbreak\ttab', 'q''uote', 'x', true,
            '2026-03-29', '12:30:00.5', '2026-10-25 02:30:00.123456',
            '2026-03-29 01:30:00.5+00', '', '{{\"a\": 1}}', '[]',
            'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
           (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
            NULL, NULL, NULL, NULL, NULL);"
    ))
    .expect("tables");
    let (w, data) = setup(&pg);
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch(
            "CREATE TABLE lite_types (n, i2, i4, i8, r4, r8, num, txt, vc, ch, b, d, tm, ts, tstz, by, js, jsb, u);",
        )
        .expect("lite table");
    deploy(
        &w,
        &sheet(
            31,
            "Transfer",
            "SELECT * FROM all_types",
            json!({}),
            &[("all_types", 7)],
            ("lite_types", 1),
        ),
    );
    deploy(
        &w,
        &sheet(
            32,
            "Transfer",
            "SELECT * FROM lite_types",
            json!({}),
            &[("lite_types", 1)],
            ("all_back", 7),
        ),
    );
    for id in [31, 32] {
        let inst = run_and_wait(&w, id);
        assert_eq!(inst["state"], "finished", "sheet {id}: {inst}");
        assert_eq!(inst["actions"][0]["rowsWritten"], 4, "sheet {id}: {inst}");
    }
    // Every value, by its text in PostgreSQL, row by row.
    let rows = |table: &str| {
        pg.psql(&format!("SELECT t::text FROM {table} t ORDER BY n"))
            .expect("rows")
    };
    assert_eq!(rows("all_back"), rows("all_types"));
    // In SQLite the kinds are kept: integers as integers, floats as floats, bytes as bytes,
    // the rest as text (decimals exact, times as ISO text).
    let lite = common::actions::rows(
        &data,
        "SELECT typeof(i8), typeof(r8), typeof(num), typeof(by), typeof(b), num, tstz FROM lite_types WHERE n = 1",
    );
    assert_eq!(
        lite,
        vec![
            "integer|real|text|blob|integer|-99999999999999999999.99999|0001-01-01T00:00:00+00:00"
        ]
    );
}

#[test]
fn a_timestamp_with_zone_without_an_offset_is_read_in_the_session_s_zone_on_both_ways() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql(
        "ALTER DATABASE weft SET timezone TO 'Europe/Berlin';
         CREATE TABLE by_copy (n int, t timestamptz);
         CREATE TABLE by_insert (n int, t timestamptz, pad interval);",
    )
    .expect("tables");
    let (w, data) = setup(&pg);
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch(
            "CREATE TABLE zoned (n INTEGER, t TEXT);
             INSERT INTO zoned VALUES (1, '2026-07-01 12:00:00'), (2, '2026-07-01 12:00:00+00'),
               (3, '2026-10-25 02:30:00'), (4, '2026-03-29 02:30:00'), (5, '2026-01-05T08:00:00Z');",
        )
        .expect("source");
    // Into `by_copy` through binary COPY (encoded by weft); into `by_insert`, whose interval
    // column COPY does not write, through INSERTs (read by the server).
    for (id, target) in [(41, "by_copy"), (42, "by_insert")] {
        deploy(
            &w,
            &sheet(
                id,
                "Transfer",
                "SELECT n, t FROM zoned",
                json!({}),
                &[("zoned", 1)],
                (target, 7),
            ),
        );
        let inst = run_and_wait(&w, id);
        assert_eq!(inst["state"], "finished", "{target}: {inst}");
    }
    let utc = |table: &str| {
        pg.psql(&format!(
            "SELECT n, t AT TIME ZONE 'UTC' FROM {table} ORDER BY n"
        ))
        .expect("rows")
    };
    assert_eq!(
        utc("by_copy"),
        "1|2026-07-01 10:00:00\n2|2026-07-01 12:00:00\n3|2026-10-25 01:30:00\n4|2026-03-29 01:30:00\n5|2026-01-05 08:00:00"
    );
    assert_eq!(utc("by_insert"), utc("by_copy"), "both ways read alike");
}

#[test]
fn a_transfer_halted_while_it_streams_leaves_its_target_as_it_was() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql(
        "CREATE TABLE target (n int, s text);
         INSERT INTO target VALUES (0, 'kept');
         CREATE TABLE numbers AS SELECT g AS n FROM generate_series(1, 100000) AS g;",
    )
    .expect("tables");
    let (w, _) = setup(&pg);
    // Connection 8 is the same database as 7: the Transfer streams from one session into the
    // COPY of another.
    w.add_keys(&format!(
        "8|postgresql|postgresql://127.0.0.1:{}/weft|weft|secret|sslmode=disable;application_name=weft-test\n",
        pg.port
    ));
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {"connections": [{"id": 8, "name": "again", "type": "postgresql"}]}}),
    );
    // The source's rows come at once up to row 50,000, which sleeps for a minute.
    deploy(
        &w,
        &sheet(
            43,
            "Transfer",
            "SELECT n, CASE WHEN n = 50000 THEN (CASE WHEN pg_sleep(60) IS NULL THEN 'late' ELSE 'late' END) ELSE 'row' END AS s FROM numbers ORDER BY n",
            json!({}),
            &[("numbers", 7)],
            ("target", 8),
        ),
    );
    let id = run(&w, 43);
    until_sleeping(&pg);
    // The rows before it are on their way into the target's COPY.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while pg
        .psql("SELECT coalesce(sum(tuples_processed), 0) > 0 FROM pg_stat_progress_copy WHERE command = 'COPY FROM'")
        .expect("progress")
        != "t"
    {
        assert!(std::time::Instant::now() < deadline, "no row reached the target's COPY");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let asked = std::time::Instant::now();
    let (st, v) = command(&w, "HaltBatchInstance", json!({"batchInstanceId": id}));
    assert_eq!(st, 200, "{v}");
    let inst = wait(&w, id);
    let took = asked.elapsed();
    assert!(
        took < std::time::Duration::from_secs(1),
        "the halt took {took:?}"
    );
    assert_eq!(inst["state"], "halted", "{inst}");
    assert_eq!(inst["actions"][0]["state"], "H", "{inst}");
    assert_eq!(
        pg.psql("SELECT n, s FROM target ORDER BY n").expect("rows"),
        "0|kept",
        "nothing of the halted Transfer landed"
    );
}

#[test]
fn an_upsert_from_sqlite_into_postgresql_counts_inserts_and_updates_and_needs_a_unique_key() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql(
        "CREATE TABLE dim (code text UNIQUE, name text, amount numeric(14,2), extra text DEFAULT 'untouched');
         INSERT INTO dim (code, name, amount) SELECT 'c' || g, 'old ' || g, g FROM generate_series(1, 5000) g;
         CREATE TABLE no_key (code text, name text);
         INSERT INTO no_key VALUES ('c1', 'kept');",
    )
    .expect("tables");
    let (w, data) = setup(&pg);
    // 20,000 source rows: codes 2,501..22,500, so 2,500 update and 17,500 insert.
    {
        let mut c = rusqlite::Connection::open(&data).expect("data");
        let tx = c.transaction().expect("tx");
        tx.execute_batch("CREATE TABLE codes (code TEXT, name TEXT, amount TEXT);")
            .expect("table");
        for g in 2_501..=22_500 {
            tx.execute(
                "INSERT INTO codes VALUES (?1, ?2, ?3)",
                rusqlite::params![format!("c{g}"), format!("new {g}"), format!("{g}.50")],
            )
            .expect("row");
        }
        tx.commit().expect("commit");
    }
    deploy(
        &w,
        &sheet(
            51,
            "Upsert",
            "SELECT code, name, amount FROM codes",
            json!({"keys": "code"}),
            &[("codes", 1)],
            ("dim", 7),
        ),
    );
    let inst = run_and_wait(&w, 51);
    assert_eq!(inst["state"], "finished", "{inst}");
    let a = &inst["actions"][0];
    assert_eq!(
        (&a["rowsRead"], &a["rowsWritten"], &a["rowsUpdated"]),
        (&json!(20_000), &json!(17_500), &json!(2_500)),
        "{inst}"
    );
    assert_eq!(
        pg.psql(
            "SELECT count(*), count(*) FILTER (WHERE name LIKE 'new %'), count(*) FILTER (WHERE extra = 'untouched'), sum(amount) FROM dim"
        )
        .expect("counts"),
        // 22,500 codes; the 20,000 new; a column the query does not name is left as it was;
        // old amounts 1..2,500, new ones g + 0.50 for 2,501..22,500 (summed in cents).
        {
            let cents: i64 = (1..=2_500).map(|g: i64| g * 100).sum::<i64>()
                + (2_501..=22_500).map(|g: i64| g * 100 + 50).sum::<i64>();
            format!("22500|20000|22500|{}.{:02}", cents / 100, cents % 100)
        }
    );
    // A target without a unique constraint on the keys: said so, nothing written.
    deploy(
        &w,
        &sheet(
            52,
            "Upsert",
            "SELECT code, name FROM codes",
            json!({"keys": "code"}),
            &[("codes", 1)],
            ("no_key", 7),
        ),
    );
    let inst = run_and_wait(&w, 52);
    assert_eq!(inst["state"], "failed", "{inst}");
    let e = inst["actions"][0]["error"].as_str().unwrap_or_default();
    assert!(
        e.contains("no primary key or unique constraint on exactly (code)")
            && e.contains("ADD UNIQUE (code)"),
        "{e}"
    );
    assert_eq!(
        pg.psql("SELECT code, name FROM no_key").expect("rows"),
        "c1|kept"
    );
}

#[test]
fn connection_errors_name_the_server_and_never_the_password() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql("CREATE TABLE t (n int);").expect("table");
    let (w, _) = setup(&pg);
    // Nothing listens on this port (it was free a moment ago).
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr")
        .port();
    w.add_keys(&format!(
        "8|postgresql|postgresql://127.0.0.1:{closed}/weft|weft|s3cret-8|sslmode=disable\n9|postgresql|host=127.0.0.1 port={} dbname=weft|weft|wr0ng-9|sslmode=disable\n",
        pg.port
    ));
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {
            "connections": [{"id": 8, "name": "down", "type": "postgresql"},
                            {"id": 9, "name": "badpw", "type": "postgresql"}]}}),
    );
    for (sheet_id, conn, expect) in [
        (6, 8, format!("127.0.0.1:{closed}")),
        (7, 9, "password authentication failed".to_owned()),
    ] {
        deploy(
            &w,
            &sheet(
                sheet_id,
                "Sql",
                "INSERT INTO t VALUES (1)",
                json!({}),
                &[],
                ("t", conn),
            ),
        );
        let inst = run_and_wait(&w, sheet_id);
        assert_eq!(inst["state"], "failed", "{inst}");
        let e = inst["actions"][0]["error"].as_str().unwrap_or_default();
        assert!(e.contains(&expect), "{e}");
        assert!(
            e.contains("cannot connect to PostgreSQL at 127.0.0.1:"),
            "{e}"
        );
        assert!(!e.contains("s3cret") && !e.contains("wr0ng"), "{e}");
    }
}

#[test]
fn the_connection_s_schema_is_where_its_actions_find_and_create_unqualified_tables() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql(
        "CREATE SCHEMA mart; CREATE SCHEMA \"Other One\";
         CREATE TABLE mart.src (n int); INSERT INTO mart.src VALUES (1), (2), (3);
         CREATE TABLE public.src (n int); INSERT INTO public.src VALUES (100);
         CREATE TABLE mart.only_in_mart (n int);",
    )
    .expect("schemas");
    let (w, _) = setup(&pg);
    w.add_keys(&format!(
        "11|postgresql|postgresql://127.0.0.1:{}/weft|weft|secret|sslmode=disable;application_name=weft-test\n",
        pg.port
    ));
    let connection = |schema: &str| {
        json!({"version": 1, "transformationData": {
            "connections": [{"id": 11, "name": "mart", "type": "postgresql", "schema": schema}]}})
    };
    deploy(&w, &connection("mart"));
    // The deploy's object check looks where the actions will: `only_in_mart` is found, a
    // table in no schema of the path is not; `copied`, which the action's own DDL creates,
    // need not exist yet.
    let doc = sheet(
        12,
        "Sql",
        "CREATE TABLE copied AS SELECT n FROM src",
        json!({}),
        &[("src", 11), ("only_in_mart", 11), ("nowhere", 11)],
        ("copied", 11),
    );
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "deploy failed: {v}");
    let missing = warnings(&v, "object.missing");
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert!(missing[0].contains("nowhere"), "{missing:?}");
    let inst = run_and_wait(&w, 12);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(pg.psql("SELECT sum(n) FROM mart.copied").expect("sum"), "6");
    assert_eq!(
        pg.psql("SELECT to_regclass('public.copied') IS NULL")
            .expect("public"),
        "t"
    );
    // Deployed again with another schema (a quoted name), the next run uses it: a pooled
    // session of the old schema is not reused.
    deploy(&w, &connection("Other One"));
    deploy(
        &w,
        &sheet(
            13,
            "Sql",
            "CREATE TABLE copied AS SELECT n FROM src",
            json!({}),
            &[("src", 11)],
            ("copied", 11),
        ),
    );
    let inst = run_and_wait(&w, 13);
    assert_eq!(inst["state"], "finished", "{inst}");
    // `src` is found in `public`, after the schema, as PostgreSQL's default path has it.
    assert_eq!(
        pg.psql("SELECT sum(n) FROM \"Other One\".copied")
            .expect("sum"),
        "100"
    );
}

#[test]
fn deploys_check_sql_in_postgresqls_dialect_and_table_functions_are_no_tables() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql("CREATE TABLE t (n int);").expect("table");
    let (w, _) = setup(&pg);
    // A table function in FROM needs no source node.
    deploy(
        &w,
        &sheet(
            8,
            "Sql",
            "INSERT INTO t SELECT g FROM generate_series(1, 3) AS g WHERE 1 = (SELECT 1 FROM pg_sleep(0))",
            json!({}),
            &[],
            ("t", 7),
        ),
    );
    let inst = run_and_wait(&w, 8);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(pg.psql("SELECT count(*) FROM t").expect("count"), "3");
    // A syntax error is placed at its line and column in the document.
    let doc = sheet(
        9,
        "Sql",
        "INSERT INTO t VALUES (1,, 2)",
        json!({}),
        &[],
        ("t", 7),
    );
    let text = serde_json::to_string_pretty(&doc).expect("text");
    let (st, v) = post(&w.url, deploy_body(&text));
    assert_eq!(st, 422, "{v}");
    let d = &v["error"]["details"][0];
    assert_eq!(d["code"], "sql.syntax", "{v}");
    assert!(
        d["message"]
            .as_str()
            .is_some_and(|m| m.contains("PostgreSQL")),
        "{v}"
    );
    let line = text
        .lines()
        .position(|l| l.contains("INSERT INTO t"))
        .expect("line");
    // At the second comma of `(1,, 2)`.
    let column = text
        .lines()
        .nth(line)
        .and_then(|l| l.find(",,"))
        .expect("column")
        + 2;
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(line as u64 + 1), Some(column as u64)),
        "{v}"
    );
}

/// What PostgreSQL runs is never refused at deploy: a `DO` block, a function with a
/// dollar-quoted body, one in SQL-standard form (`BEGIN ATOMIC`, whose `;` end no
/// statement). Each statement weft's parser cannot read is a warning "not checked", at its
/// place; the others are checked as before. A real syntax error stays an error.
#[test]
fn statements_postgresql_accepts_deploy_with_warnings_and_run() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql("CREATE TABLE t (n int); CREATE TABLE log (line text);")
        .expect("tables");
    let (w, _) = setup(&pg);
    let text = "DO $do$ BEGIN INSERT INTO log VALUES ('started; still one statement'); END $do$;\n\
                CREATE OR REPLACE FUNCTION twice(x int) RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT x * 2; END;\n\
                INSERT INTO t SELECT twice(g) FROM generate_series(1, 3) AS g WHERE 'ab' ~~ 'a%'";
    let doc = sheet(21, "Sql", text, json!({}), &[], ("t", 7));
    let (st, v) = post(
        &w.url,
        deploy_body(&serde_json::to_string_pretty(&doc).expect("text")),
    );
    assert_eq!(st, 200, "{v}");
    let warnings: Vec<&Value> = v["payload"]["warnings"]
        .as_array()
        .map(|a| a.iter().filter(|d| d["code"] == "sql.unchecked").collect())
        .unwrap_or_default();
    assert_eq!(warnings.len(), 2, "{v}");
    for (w, opening) in warnings
        .iter()
        .zip(["DO $do$", "CREATE OR REPLACE FUNCTION"])
    {
        let m = w["message"].as_str().unwrap_or("");
        assert!(
            m.contains(&format!("not checked: `{opening}"))
                && m.contains("PostgreSQL's own parser can"),
            "{w}"
        );
        assert!(w["line"].as_u64().is_some(), "{w}");
    }
    let inst = run_and_wait(&w, 21);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(pg.psql("SELECT sum(n) FROM t").expect("sum"), "12");
    assert_eq!(pg.psql("SELECT count(*) FROM log").expect("log"), "1");
    // PostgreSQL refuses this one too: an error, the repository unchanged.
    let bad = sheet(
        22,
        "Sql",
        "DO $$ BEGIN END $$; SELECT FROM WHERE",
        json!({}),
        &[],
        ("t", 7),
    );
    let (st, v) = post(&w.url, deploy_body(&bad.to_string()));
    assert_eq!(st, 422, "{v}");
    let d = &v["error"]["details"][0];
    assert_eq!(d["code"], "sql.syntax", "{v}");
    assert!(
        d["message"]
            .as_str()
            .is_some_and(|m| m.contains("syntax error at or near \"WHERE\"")),
        "{v}"
    );
}

#[test]
fn a_million_rows_copy_in_and_a_bad_row_500001_leaves_the_target_as_it_was() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql(
        "CREATE TABLE big (id bigint, name text, amount numeric(14,2), day date, ok boolean);
         CREATE TABLE big_copy (id bigint, name text, amount numeric(14,2), day date, ok boolean);
         INSERT INTO big_copy VALUES (0, 'kept', 0, '2026-01-01', true);",
    )
    .expect("tables");
    let (w, data) = setup(&pg);
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch(
            "CREATE TABLE million (id INTEGER, name TEXT, amount TEXT, day TEXT, ok INTEGER);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000)
             INSERT INTO million SELECT i, 'name ' || i, printf('%d.%02d', i, i % 100), '2026-11-24', i % 2 FROM n;",
        )
        .expect("a million rows");
    deploy(
        &w,
        &sheet(
            11,
            "Transfer",
            "SELECT * FROM million",
            json!({}),
            &[("million", 1)],
            ("big", 7),
        ),
    );
    let inst = run_and_wait(&w, 11);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(inst["actions"][0]["rowsWritten"], 1_000_000, "{inst}");
    assert_eq!(
        pg.psql("SELECT count(*), sum(id), min(name), max(amount) FROM big")
            .expect("big"),
        "1000000|500000500000|name 1|1000000.00"
    );
    // PostgreSQL -> PostgreSQL through COPY out and in.
    deploy(
        &w,
        &sheet(
            12,
            "Transfer",
            "SELECT * FROM big",
            json!({}),
            &[("big", 7)],
            ("big_copy", 7),
        ),
    );
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("UPDATE million SET amount = 'oops' WHERE id = 500001;")
        .expect("a bad row");
    pg.psql("UPDATE big SET day = NULL WHERE id = 3;")
        .expect("a NULL");
    let inst = run_and_wait(&w, 12);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(
        pg.psql("SELECT count(*), count(day) FROM big_copy")
            .expect("copy"),
        "1000001|1000000"
    );
    // The bad row fails the Transfer at its row and column; the target keeps what it had.
    pg.psql("TRUNCATE big_copy; INSERT INTO big_copy VALUES (0, 'kept', 0, '2026-01-01', true);")
        .expect("reset");
    deploy(
        &w,
        &sheet(
            13,
            "Transfer",
            "SELECT * FROM million ORDER BY id",
            json!({}),
            &[("million", 1)],
            ("big_copy", 7),
        ),
    );
    let inst = run_and_wait(&w, 13);
    assert_eq!(inst["state"], "failed", "{inst}");
    let e = inst["actions"][0]["error"].as_str().unwrap_or_default();
    assert!(e.contains("row 500001, column amount"), "{e}");
    assert_eq!(
        pg.psql("SELECT count(*), min(name) FROM big_copy")
            .expect("kept"),
        "1|kept"
    );
    // A row the server refuses (a check constraint) while the batches stream into one COPY:
    // found when the COPY ends, named by its row over the whole Transfer; nothing lands.
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("UPDATE million SET amount = '1.00' WHERE id = 500001;")
        .expect("mended");
    pg.psql("ALTER TABLE big_copy ADD CONSTRAINT not_700001 CHECK (id <> 700001);")
        .expect("constraint");
    let inst = run_and_wait(&w, 13);
    assert_eq!(inst["state"], "failed", "{inst}");
    let e = inst["actions"][0]["error"].as_str().unwrap_or_default();
    assert!(e.contains("row 700001") && e.contains("not_700001"), "{e}");
    assert_eq!(
        pg.psql("SELECT count(*), min(name) FROM big_copy")
            .expect("kept"),
        "1|kept"
    );
}

#[test]
fn a_10_mb_text_goes_both_ways_and_a_connection_dropped_mid_transfer_fails_cleanly() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql(
        "CREATE TABLE big_text (id int, body text);
         INSERT INTO big_text SELECT 1, repeat('é€𝄞x', 10 * 1024 * 1024 / 10);
         CREATE TABLE big_text_back (id int, body text);
         CREATE TABLE slow_dst (g int, s text);",
    )
    .expect("tables");
    let (w, data) = setup(&pg);
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch(
            "CREATE TABLE lite_text (id INTEGER, body TEXT); CREATE TABLE slow_lite (g INTEGER, s TEXT);",
        )
        .expect("tables");
    // 10 MB of multi-byte text out of PostgreSQL and back in, unchanged.
    deploy(
        &w,
        &sheet(
            21,
            "Transfer",
            "SELECT id, body FROM big_text",
            json!({}),
            &[("big_text", 7)],
            ("lite_text", 1),
        ),
    );
    deploy(
        &w,
        &sheet(
            22,
            "Transfer",
            "SELECT id, body FROM lite_text",
            json!({}),
            &[("lite_text", 1)],
            ("big_text_back", 7),
        ),
    );
    for id in [21, 22] {
        let inst = run_and_wait(&w, id);
        assert_eq!(inst["state"], "finished", "{inst}");
    }
    assert_eq!(
        pg.psql("SELECT octet_length(b.body), a.body = b.body FROM big_text a JOIN big_text_back b USING (id)")
            .expect("compare"),
        format!("{}|t", "é€𝄞x".len() * 10 * 1024 * 1024 / 10)
    );
    // A source connection that the server drops while the rows stream: the action fails
    // saying so, and the target has nothing of it.
    deploy(
        &w,
        &sheet(
            23,
            "Transfer",
            "SELECT g, pg_sleep(0.01)::text AS s FROM generate_series(1, 6000) AS g",
            json!({"batchRows": 10}),
            &[("big_text", 7)],
            ("slow_lite", 1),
        ),
    );
    let id = run(&w, 23);
    until_sleeping(&pg);
    pg.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'weft-test' AND query LIKE '%pg_sleep%' AND state = 'active'")
        .expect("terminate");
    let inst = wait(&w, id);
    assert_eq!(inst["state"], "failed", "{inst}");
    let e = inst["actions"][0]["error"].as_str().unwrap_or_default();
    assert!(e.contains("PostgreSQL (connection 7)"), "{e}");
    let rows: i64 = rusqlite::Connection::open(&data)
        .expect("data")
        .query_row("SELECT count(*) FROM slow_lite", [], |r| r.get(0))
        .expect("count");
    assert_eq!(rows, 0, "the target's transaction was rolled back");
    // The pool does not hand the dropped connection out again.
    deploy(
        &w,
        &sheet(
            24,
            "Sql",
            "INSERT INTO slow_dst VALUES (1, 'after')",
            json!({}),
            &[],
            ("slow_dst", 7),
        ),
    );
    let inst = run_and_wait(&w, 24);
    assert_eq!(inst["state"], "finished", "{inst}");
}

/// Moves the stepped clock of `w` (`to` or `seconds`) and checks where it went.
fn advance(w: &Weft, payload: Value, local: &str) {
    let (st, v) = command(w, "AdvanceClock", payload);
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["local"], local, "{v}");
}

#[test]
fn clock_functions_read_the_service_clock_and_zone_as_on_sqlite_and_the_dst_procedure_shifts_once()
{
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql(
        "CREATE TABLE seen (now_local text, tonight boolean, second boolean, first boolean, instant boolean);
         CREATE TABLE service_batch_next_run (batch_id int PRIMARY KEY, start_dt timestamp);
         INSERT INTO service_batch_next_run VALUES (1, '2026-10-24 22:00'), (2, '2026-10-24 22:00');",
    )
    .expect("tables");
    let (w, data) = setup_with(
        &pg,
        &["--fake-now", "2026-10-24 19:00", "--stepped-clock"],
        &[("WEFT_TIMEZONE", "Europe/Berlin")],
    );
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("CREATE TABLE seen (now_local TEXT, tonight INT, second INT, first INT);")
        .expect("table");
    // The same question on both connections; the second and first 02:30 of the autumn night
    // given as instants and as wall-clock text.
    let ask = "SELECT current_local_timestamp(), is_dst_change_tonight(), \
        is_dst_change_tonight('2026-10-25T01:30:00Z'), is_dst_change_tonight('2026-10-25 02:30')";
    deploy(
        &w,
        &sheet(
            20,
            "Sql",
            &format!(
                "INSERT INTO seen {ask}, is_dst_change_tonight(timestamptz '2026-10-25 00:30+00')"
            ),
            json!({}),
            &[],
            ("seen", 7),
        ),
    );
    deploy(
        &w,
        &sheet(
            21,
            "Sql",
            &format!("INSERT INTO seen {ask}"),
            json!({}),
            &[],
            ("seen", 1),
        ),
    );
    // SPEC 4.7 on a PostgreSQL connection: batch 1 moves by one day on the eve, once.
    deploy(
        &w,
        &sheet(
            22,
            "Upsert",
            "SELECT batch_id, start_dt + interval '1 day' AS start_dt FROM service_batch_next_run
             WHERE batch_id IN (1) AND is_dst_change_tonight()
               AND start_dt <= current_local_timestamp() + interval '14 hours'",
            json!({"keys": "batch_id"}),
            &[("service_batch_next_run", 7)],
            ("service_batch_next_run", 7),
        ),
    );
    let round = |expected_pg: &str, expected_lite: &str| {
        for sheet in [20, 21] {
            let inst = run_and_wait(&w, sheet);
            assert_eq!(inst["state"], "finished", "{inst}");
        }
        assert_eq!(
            pg.psql("SELECT * FROM seen; DELETE FROM seen;")
                .expect("seen"),
            expected_pg
        );
        let lite = common::actions::rows(&data, "SELECT * FROM seen");
        rusqlite::Connection::open(&data)
            .expect("data")
            .execute("DELETE FROM seen", [])
            .expect("delete");
        assert_eq!(lite, vec![expected_lite.to_owned()]);
    };
    // The eve, 19:00: the change comes tonight.
    round("2026-10-24 19:00:00|t|f|t|t", "2026-10-24 19:00:00|1|0|1");
    let inst = run_and_wait(&w, 22);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(inst["actions"][0]["rowsUpdated"], 1, "{inst}");
    let again = run_and_wait(&w, 22);
    assert_eq!(again["actions"][0]["rowsRead"], 0, "shifted once: {again}");
    assert_eq!(
        again["actions"][0]["rowsUpdated"], 0,
        "shifted once: {again}"
    );
    assert_eq!(
        pg.psql("SELECT batch_id, start_dt FROM service_batch_next_run ORDER BY 1")
            .expect("starts"),
        "1|2026-10-25 22:00:00\n2|2026-10-24 22:00:00"
    );
    // 02:30 before the change (00:30 UTC) and, an hour later, 02:30 again after it.
    advance(&w, json!({"to": "2026-10-25 02:30"}), "2026-10-25 02:30:00");
    round("2026-10-25 02:30:00|t|f|t|t", "2026-10-25 02:30:00|1|0|1");
    advance(&w, json!({"seconds": 3600}), "2026-10-25 02:30:00");
    round("2026-10-25 02:30:00|f|f|t|t", "2026-10-25 02:30:00|0|0|1");
    // The evening after: nothing comes tonight.
    advance(&w, json!({"to": "2026-10-25 19:00"}), "2026-10-25 19:00:00");
    round("2026-10-25 19:00:00|f|f|t|t", "2026-10-25 19:00:00|0|0|1");

    // A user who may not create the functions in its database is told who can, and how.
    pg.psql("CREATE ROLE plain LOGIN PASSWORD 'plain'; CREATE DATABASE locked;")
        .expect("role");
    pg.psql_in(
        "locked",
        "CREATE TABLE t (n int); GRANT INSERT ON t TO plain;",
    )
    .expect("table");
    w.add_keys(&format!(
        "8|postgresql|postgresql://127.0.0.1:{}/locked|plain|plain|sslmode=disable\n",
        pg.port
    ));
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {
            "connections": [{"id": 8, "name": "locked", "type": "postgresql"}]}}),
    );
    deploy(
        &w,
        &sheet(
            23,
            "Sql",
            "INSERT INTO t SELECT 1 WHERE is_dst_change_tonight()",
            json!({}),
            &[],
            ("t", 8),
        ),
    );
    let inst = run_and_wait(&w, 23);
    assert_eq!(inst["state"], "failed", "{inst}");
    let e = inst["actions"][0]["error"].as_str().unwrap_or_default();
    assert!(
        e.contains("may not create them") && e.contains("docs/sql/postgresql-clock.sql"),
        "{e}"
    );
    // An owner runs the script once; then the user's statement runs (tonight is past).
    let script =
        std::fs::read_to_string(root().join("docs/sql/postgresql-clock.sql")).expect("the script");
    pg.psql_in("locked", &script)
        .expect("the script as the owner");
    advance(&w, json!({"to": "2026-10-26 19:00"}), "2026-10-26 19:00:00");
    let inst = run_and_wait(&w, 23);
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(inst["actions"][0]["rowsWritten"], 0, "{inst}");
}

#[test]
fn the_postgresql_clock_functions_agree_with_weft_s_own_around_every_clock_change() {
    use chrono::{NaiveDate, NaiveDateTime};
    let pg = Postgres::start().expect("PostgreSQL");
    // The functions, as the bridge creates them.
    let script =
        std::fs::read_to_string(root().join("docs/sql/postgresql-clock.sql")).expect("the script");
    pg.psql(&script).expect("the clock functions");
    // Two days around each change of 2026 (and a window in zones without one), every ten
    // minutes: the gap and the repeated hour are hit at :00 and :30.
    let zones: [(&str, &[&str]); 8] = [
        ("Europe/Berlin", &["2026-03-29", "2026-10-25"]),
        ("Europe/London", &["2026-03-29", "2026-10-25"]),
        ("America/New_York", &["2026-03-08", "2026-11-01"]),
        ("Australia/Sydney", &["2026-04-05", "2026-10-04"]),
        ("Australia/Lord_Howe", &["2026-04-05", "2026-10-04"]),
        ("Pacific/Chatham", &["2026-04-05", "2026-09-27"]),
        ("Asia/Kolkata", &["2026-10-25"]),
        ("America/Sao_Paulo", &["2026-11-01"]),
    ];
    let mut compared = 0;
    for (zone, days) in zones {
        let tz: chrono_tz::Tz = zone.parse().expect("zone");
        for day in days {
            let d = NaiveDate::parse_from_str(day, "%Y-%m-%d").expect("day");
            let from = d.pred_opt().expect("day before");
            let to = d.succ_opt().expect("day after");
            let out = pg
                .psql(&format!(
                    "SET weft.zone = '{zone}';
                     SELECT to_char(t, 'YYYY-MM-DD HH24:MI:SS'), weft_clock.is_dst_change_tonight(t),
                            weft_clock.is_dst_change_tonight(to_char(t, 'YYYY-MM-DD HH24:MI'))
                     FROM generate_series(timestamp '{from} 00:00', timestamp '{to} 00:00',
                                          interval '10 minutes') t;"
                ))
                .expect("rows");
            for line in out.lines() {
                let f: Vec<&str> = line.split('|').collect();
                let local =
                    NaiveDateTime::parse_from_str(f[0], "%Y-%m-%d %H:%M:%S").expect("local time");
                let want = weft_core::sched::clock::is_dst_change_tonight(tz, local);
                let want = if want { "t" } else { "f" };
                assert_eq!(f[1], want, "{zone} {local}: PostgreSQL says {}", f[1]);
                assert_eq!(f[2], want, "{zone} {local} as text");
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 14 * 289, "every instant compared");
    // Instants: every 20 minutes of the Berlin autumn night, as RFC 3339 text and as
    // timestamptz, against the text form of weft's own.
    let tz: chrono_tz::Tz = "Europe/Berlin".parse().expect("zone");
    let out = pg
        .psql(
            "SET weft.zone = 'Europe/Berlin';
             SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
                    weft_clock.is_dst_change_tonight(t),
                    weft_clock.is_dst_change_tonight(to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'))
             FROM generate_series(timestamptz '2026-10-24 00:00+00', timestamptz '2026-10-26 00:00+00',
                                  interval '20 minutes') t;",
        )
        .expect("rows");
    for line in out.lines() {
        let f: Vec<&str> = line.split('|').collect();
        let want = weft_core::sched::clock::is_dst_change_tonight_at(tz, f[0]).expect("instant");
        let want = if want { "t" } else { "f" };
        assert_eq!((f[1], f[2]), (want, want), "{}", f[0]);
    }
    // Text that is no timestamp: an error that says what to write.
    let e = pg
        .psql("SELECT weft_clock.is_dst_change_tonight('tonight');")
        .expect_err("no timestamp");
    assert!(e.contains("`tonight` is not a timestamp"), "{e}");
}

/// The sessions of `application_name` `name` the server has.
fn sessions(pg: &Postgres, name: &str) -> usize {
    pg.psql(&format!(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = '{name}'"
    ))
    .expect("activity")
    .parse()
    .expect("a count")
}

#[test]
fn idle_connections_are_kept_for_their_entry_s_idle_timeout_and_then_closed() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql("CREATE TABLE t (n int);").expect("table");
    let (w, _) = setup(&pg);
    w.add_keys(&format!(
        "8|postgresql|postgresql://127.0.0.1:{port}/weft|weft|secret|sslmode=disable;application_name=weft-kept;idle_timeout=1\n\
         9|postgresql|postgresql://127.0.0.1:{port}/weft|weft|secret|sslmode=disable;application_name=weft-unkept;idle_timeout=0\n",
        port = pg.port
    ));
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {"connections": [
            {"id": 8, "name": "kept", "type": "postgresql"},
            {"id": 9, "name": "unkept", "type": "postgresql"}]}}),
    );
    for (id, conn) in [(30, 8), (31, 9)] {
        deploy(
            &w,
            &sheet(
                id,
                "Sql",
                "INSERT INTO t VALUES (1)",
                json!({}),
                &[],
                ("t", conn),
            ),
        );
        let inst = run_and_wait(&w, id);
        assert_eq!(inst["state"], "finished", "{inst}");
    }
    // Kept for reuse after its action (idle_timeout=1), not kept at all with 0.
    assert_eq!(sessions(&pg, "weft-kept"), 1);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while sessions(&pg, "weft-unkept") != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "an unkept session stayed"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Closed once its idle time is up.
    while sessions(&pg, "weft-kept") != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "an idle session outlived its idle_timeout"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // A bad value is refused by name.
    w.add_keys(&format!(
        "10|postgresql|postgresql://127.0.0.1:{}/weft|weft|secret|idle_timeout=soon\n",
        pg.port
    ));
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {"connections": [
            {"id": 10, "name": "bad", "type": "postgresql"}]}}),
    );
    deploy(
        &w,
        &sheet(
            32,
            "Sql",
            "INSERT INTO t VALUES (1)",
            json!({}),
            &[],
            ("t", 10),
        ),
    );
    let inst = run_and_wait(&w, 32);
    let e = inst["actions"][0]["error"].as_str().unwrap_or_default();
    assert!(
        e.contains("idle_timeout is a number of seconds, not `soon`"),
        "{e}"
    );
}

#[test]
fn a_session_that_only_checked_tables_keeps_its_catalog_statement_and_one_an_action_used_is_reset()
{
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql("CREATE TABLE seen (n bigint, at timestamptz);")
        .expect("table");
    let (w, _) = setup(&pg);
    // The deploy checks `seen` on a pooled session, which goes back with the catalog
    // statement prepared; the first run takes that session and sees the statement.
    deploy(
        &w,
        &sheet(
            41,
            "Sql",
            "INSERT INTO seen SELECT count(*), clock_timestamp() FROM pg_prepared_statements WHERE statement LIKE '%to_regclass%'",
            json!({}),
            &[("pg_prepared_statements", 7)],
            ("seen", 7),
        ),
    );
    for _ in 0..2 {
        let inst = run_and_wait(&w, 41);
        assert_eq!(inst["state"], "finished", "{inst}");
    }
    // The run ran its user's statement on the session, so it was reset (DISCARD ALL) before
    // the second run took it: nothing of the first is left there.
    assert_eq!(
        pg.psql("SELECT string_agg(n::text, ',' ORDER BY at) FROM seen")
            .expect("seen"),
        "1,0"
    );
    assert_eq!(
        sessions(&pg, "weft-test"),
        1,
        "one pooled session served all"
    );
}

#[test]
fn history_and_truncate_before_on_a_native_postgresql_connection() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql(
        "CREATE TABLE stg_h (id int PRIMARY KEY, name text, amount numeric(10,2));
         INSERT INTO stg_h VALUES (1, 'a', 1.50), (2, NULL, 2.00);
         CREATE TABLE dim_h (id int, name text, amount numeric(10,2),
             since timestamp NOT NULL, until timestamp NOT NULL, PRIMARY KEY (id, since));
         CREATE TABLE full_h (id int PRIMARY KEY, name text);
         INSERT INTO full_h VALUES (7, 'old'), (8, 'old');",
    )
    .expect("tables");
    let (w, _) = setup(&pg);
    deploy(
        &w,
        &sheet(
            31,
            "History",
            "SELECT id, name, amount FROM stg_h",
            json!({"validFrom": "since", "invalidFrom": "until", "openUntil": "9999-12-31 00:00:00",
                   "changeTime": "${day} 06:00:00"}),
            &[("stg_h", 7)],
            ("dim_h", 7),
        ),
    );
    // The change time comes from a variable of the run.
    let run_on = |day: &str| {
        let body = json!({"command": "RunElements",
            "payload": {"batchExecution": {"batchName": "pg", "user": "t", "elementList": [{"elementType": "S", "elementId": 31}]}},
            "variableList": [{"variableName": "day", "variableValue": day}]});
        let (st, v) = post(&w.url, body.to_string().into_bytes());
        assert_eq!(st, 200, "{v}");
        wait(&w, v["payload"]["batchInstanceId"].as_i64().expect("id"))
    };
    let first = run_on("2026-01-01");
    assert_eq!(first["state"], "finished", "{first}");
    pg.psql("UPDATE stg_h SET amount = 2.50 WHERE id = 2; DELETE FROM stg_h WHERE id = 1; INSERT INTO stg_h VALUES (3, 'c', 0)")
        .expect("changes");
    let second = run_on("2026-01-02");
    assert_eq!(second["state"], "finished", "{second}");
    let action = &second["actions"][0];
    assert_eq!(
        (
            &action["rowsRead"],
            &action["rowsWritten"],
            &action["rowsUpdated"]
        ),
        (&json!(2), &json!(2), &json!(2)),
        "{second}"
    );
    assert_eq!(
        pg.psql("SELECT string_agg(id || ':' || coalesce(name, '-') || ':' || amount || ':' || since::date || ':' || until::date, ' ' ORDER BY id, since) FROM dim_h")
            .expect("history"),
        "1:a:1.50:2026-01-01:2026-01-02 2:-:2.00:2026-01-01:2026-01-02 2:-:2.50:2026-01-02:9999-12-31 3:c:0.00:2026-01-02:9999-12-31"
    );
    // TRUNCATE in the action's transaction: a failing load leaves the old rows.
    deploy(
        &w,
        &sheet(
            32,
            "Insert",
            "SELECT id, name FROM stg_h UNION ALL SELECT 3, 'twice'",
            json!({"truncateBefore": true}),
            &[("stg_h", 7)],
            ("full_h", 7),
        ),
    );
    let failed = run_and_wait(&w, 32);
    assert_eq!(failed["state"], "failed", "{failed}");
    assert_eq!(
        pg.psql("SELECT string_agg(id::text, ',' ORDER BY id) FROM full_h")
            .expect("kept"),
        "7,8"
    );
    pg.psql("DELETE FROM stg_h WHERE id = 3")
        .expect("no duplicate");
    let done = run_and_wait(&w, 32);
    assert_eq!(done["state"], "finished", "{done}");
    assert_eq!(done["actions"][0]["rowsDeleted"], 2, "{done}");
    assert!(
        done["actions"][0]["log"]
            .as_array()
            .is_some_and(|l| l.iter().any(|x| x
                .as_str()
                .is_some_and(|s| s.contains("(TRUNCATE): 2 row(s) removed")))),
        "{done}"
    );
    assert_eq!(
        pg.psql("SELECT string_agg(id::text, ',' ORDER BY id) FROM full_h")
            .expect("loaded"),
        "2,3"
    );
}

#[test]
fn a_loop_that_goes_on_after_a_failing_iteration_keeps_the_others_on_postgresql() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql(
        "CREATE TABLE loop_days (d date); INSERT INTO loop_days VALUES ('2026-01-01'), ('2026-01-02'), ('2026-01-03');
         CREATE TABLE loop_out (d date NOT NULL, n int NOT NULL);",
    )
    .expect("tables");
    let (w, _) = setup(&pg);
    // The second day inserts NULL: PostgreSQL aborts the statement, the iteration's
    // savepoint is rolled back, and the transaction goes on.
    deploy(
        &w,
        &sheet(
            41,
            "Sql",
            "INSERT INTO loop_out VALUES (DATE '${d}', CASE WHEN ${iteration} = 2 THEN NULL ELSE ${iteration} END)",
            json!({"loopQuery": "SELECT d FROM loop_days ORDER BY d", "loopContinueOnError": true}),
            &[("loop_days", 7)],
            ("loop_out", 7),
        ),
    );
    let done = run_and_wait(&w, 41);
    assert_eq!(done["state"], "finished", "{done}");
    assert_eq!(done["actions"][0]["rowsWritten"], 2, "{done}");
    assert_eq!(
        pg.psql("SELECT string_agg(d || ':' || n, ' ' ORDER BY d) FROM loop_out")
            .expect("rows"),
        "2026-01-01:1 2026-01-03:3"
    );
}

#[test]
fn truncate_before_on_transfer_and_upsert_into_postgresql() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql(
        "CREATE TABLE tb_transfer (id int PRIMARY KEY, name text);
         INSERT INTO tb_transfer VALUES (90, 'old'), (91, 'old');
         CREATE TABLE tb_upsert (id int PRIMARY KEY, name text);
         INSERT INTO tb_upsert VALUES (1, 'stale'), (92, 'old');
         CREATE TABLE tb_parent (id int PRIMARY KEY, name text);
         INSERT INTO tb_parent VALUES (93, 'old');
         CREATE TABLE tb_child (parent int REFERENCES tb_parent);",
    )
    .expect("tables");
    let (w, _) = setup(&pg);
    // From SQLite into PostgreSQL (COPY), emptied first by TRUNCATE in the same transaction.
    deploy(
        &w,
        &sheet(
            51,
            "Transfer",
            "SELECT id, name FROM lite_in",
            json!({"truncateBefore": true}),
            &[("lite_in", 1)],
            ("tb_transfer", 7),
        ),
    );
    let done = run_and_wait(&w, 51);
    assert_eq!(done["state"], "finished", "{done}");
    assert_eq!(done["actions"][0]["rowsDeleted"], 2, "{done}");
    assert_eq!(
        pg.psql("SELECT string_agg(id::text, ',' ORDER BY id) FROM tb_transfer")
            .expect("rows"),
        "1,2"
    );
    // On PostgreSQL's own connection: the upsert after the emptying only inserts.
    deploy(
        &w,
        &sheet(
            52,
            "Upsert",
            "SELECT id, name FROM tb_transfer",
            json!({"truncateBefore": true, "keys": "id"}),
            &[("tb_transfer", 7)],
            ("tb_upsert", 7),
        ),
    );
    let done = run_and_wait(&w, 52);
    assert_eq!(done["state"], "finished", "{done}");
    let a = &done["actions"][0];
    assert_eq!(
        (&a["rowsDeleted"], &a["rowsWritten"], &a["rowsUpdated"]),
        (&json!(2), &json!(2), &json!(0)),
        "{done}"
    );
    assert_eq!(
        pg.psql(
            "SELECT string_agg(id || ':' || coalesce(name, '-'), ',' ORDER BY id) FROM tb_upsert"
        )
        .expect("rows"),
        "1:Ünïcode ✓,2:-"
    );
    // A table another table's foreign key names: PostgreSQL refuses TRUNCATE, DELETE does it.
    deploy(
        &w,
        &sheet(
            53,
            "Insert",
            "SELECT id, name FROM tb_transfer",
            json!({"truncateBefore": true}),
            &[("tb_transfer", 7)],
            ("tb_parent", 7),
        ),
    );
    let done = run_and_wait(&w, 53);
    assert_eq!(done["state"], "finished", "{done}");
    assert_eq!(done["actions"][0]["rowsDeleted"], 1, "{done}");
    assert!(
        done["actions"][0]["log"]
            .to_string()
            .contains("emptied by DELETE instead"),
        "{done}"
    );
    assert_eq!(
        pg.psql("SELECT string_agg(id::text, ',' ORDER BY id) FROM tb_parent")
            .expect("rows"),
        "1,2"
    );
}

#[test]
fn every_module_across_two_postgresql_connections_and_across_postgresql_and_sqlite() {
    let pg = Postgres::start().expect("PostgreSQL");
    // More rows than one batch (10,000), and a short last one.
    const ROWS: i64 = 25_001;
    let sum: i64 = (1..=ROWS).sum();
    let mut ddl = format!(
        "CREATE TABLE src (id int PRIMARY KEY, name text);
         INSERT INTO src SELECT g, 'n' || g FROM generate_series(1, {ROWS}) g;"
    );
    for t in ["pg_u1", "pg_u2", "pg_u3", "pg_t1", "pg_t2", "pg_i", "pg_h"] {
        ddl.push_str(&format!(
            "CREATE TABLE {t} (id int PRIMARY KEY, name text);"
        ));
    }
    pg.psql(&ddl).expect("tables");
    let (w, data) = setup(&pg);
    {
        let mut c = rusqlite::Connection::open(&data).expect("data");
        let tx = c.transaction().expect("tx");
        tx.execute_batch(
            "CREATE TABLE lite_src (id INTEGER PRIMARY KEY, name TEXT);
             CREATE TABLE lite_u (id INTEGER PRIMARY KEY, name TEXT);
             CREATE TABLE lite_t (id INTEGER PRIMARY KEY, name TEXT);",
        )
        .expect("tables");
        for g in 1..=ROWS {
            tx.execute(
                "INSERT INTO lite_src VALUES (?1, ?2)",
                rusqlite::params![g, format!("n{g}")],
            )
            .expect("row");
        }
        tx.commit().expect("commit");
    }
    // Connection 8: the same database as 7 through a session of its own.
    w.add_keys(&format!(
        "8|postgresql|postgresql://127.0.0.1:{}/weft|weft|secret|sslmode=disable;application_name=weft-test\n",
        pg.port
    ));
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {"connections": [{"id": 8, "name": "again", "type": "postgresql"}]}}),
    );
    let pg_rows = |t: &str| {
        pg.psql(&format!("SELECT count(*), sum(id) FROM {t}"))
            .expect("rows")
    };
    let lite_rows = |t: &str| {
        rusqlite::Connection::open(&data)
            .expect("data")
            .query_row(
                &format!("SELECT count(*) || '|' || sum(id) FROM {t}"),
                [],
                |r| r.get::<_, String>(0),
            )
            .expect("rows")
    };
    let want = format!("{ROWS}|{sum}");
    // (sheet, module, query, source, target): PostgreSQL to PostgreSQL through COPY and
    // through a plain query (a text COPY does not take), PostgreSQL to SQLite, SQLite to
    // PostgreSQL.
    type Object = (&'static str, i64);
    let cases: &[(i64, &str, &str, Object, Object)] = &[
        (
            61,
            "Upsert",
            "SELECT id, name FROM src",
            ("src", 7),
            ("pg_u1", 8),
        ),
        (
            62,
            "Upsert",
            "(SELECT id, name FROM src)",
            ("src", 7),
            ("pg_u2", 8),
        ),
        (
            63,
            "Upsert",
            "SELECT id, name FROM src",
            ("src", 7),
            ("lite_u", 1),
        ),
        (
            64,
            "Upsert",
            "SELECT id, name FROM lite_src",
            ("lite_src", 1),
            ("pg_u3", 7),
        ),
        (
            65,
            "Transfer",
            "SELECT id, name FROM src",
            ("src", 7),
            ("pg_t1", 8),
        ),
        (
            66,
            "Transfer",
            "SELECT id, name FROM src",
            ("src", 7),
            ("lite_t", 1),
        ),
        (
            67,
            "Transfer",
            "SELECT id, name FROM lite_src",
            ("lite_src", 1),
            ("pg_t2", 7),
        ),
    ];
    for &(id, module, query, source, target) in cases {
        let extra = if module == "Upsert" {
            json!({"keys": "id"})
        } else {
            json!({})
        };
        deploy(&w, &sheet(id, module, query, extra, &[source], target));
        // Twice: an Upsert's second run updates what its first inserted.
        for round in 0..2 {
            let inst = run_and_wait(&w, id);
            let case = format!("{module} {source:?} -> {target:?}, run {round}");
            assert_eq!(inst["state"], "finished", "{case}: {inst}");
            assert_eq!(inst["actions"][0]["rowsRead"], ROWS, "{case}: {inst}");
            let rows = if target.1 == 1 {
                lite_rows(target.0)
            } else {
                pg_rows(target.0)
            };
            assert_eq!(rows, want, "{case}");
            if module == "Transfer" {
                break;
            }
        }
    }
    // The modules that run their query on the target's connection refuse a source elsewhere
    // at deploy, at their place, before anything runs.
    for (id, module, extra) in [
        (68, "Insert", json!({})),
        (69, "History", json!({"keys": "id"})),
    ] {
        let target = if module == "Insert" { "pg_i" } else { "pg_h" };
        let doc = sheet(
            id,
            module,
            "SELECT id, name FROM src",
            extra,
            &[("src", 7)],
            (target, 8),
        );
        let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
        assert_eq!(st, 422, "{module}: {v}");
        assert!(
            v["error"]["details"]
                .as_array()
                .is_some_and(|d| d.iter().any(|d| d["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("runs its query on the target's connection 8")))),
            "{module}: {v}"
        );
    }
}

#[test]
fn pooled_connections_the_server_ended_while_idle_are_replaced_before_an_action_uses_them() {
    let pg = Postgres::start().expect("PostgreSQL");
    const SHEETS: i64 = 6;
    let tables: String = (1..=SHEETS)
        .map(|id| format!("CREATE TABLE hits_{id} (sheet int, round int);"))
        .collect();
    pg.psql(&tables).expect("tables");
    let (w, _) = setup(&pg);
    for id in 1..=SHEETS {
        let t = format!("hits_{id}");
        let sql = format!("INSERT INTO {t} SELECT {id}, count(*) FROM {t}");
        deploy(&w, &sheet(80 + id, "Sql", &sql, json!({}), &[], (&t, 7)));
    }
    // All six at once, so that several sessions go back to the pool, idle.
    let run_all = || -> Value {
        let elements: Vec<Value> = (1..=SHEETS)
            .map(|id| json!({"elementType": "S", "elementId": 80 + id}))
            .collect();
        let (st, v) = command(
            &w,
            "RunElements",
            json!({"batchExecution": {"batchName": "pool", "user": "t", "elementList": elements}}),
        );
        assert_eq!(st, 200, "{v}");
        wait(&w, v["payload"]["batchInstanceId"].as_i64().expect("id"))
    };
    let idle = || {
        pg.psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'weft-test' AND state = 'idle'")
            .expect("activity")
    };
    let inst = run_all();
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_ne!(idle(), "0", "sessions wait in the pool");
    // The server ends every idle session (as pg_terminate_backend, or an administrator).
    pg.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'weft-test' AND pid <> pg_backend_pid()")
        .expect("terminate");
    let inst = run_all();
    assert_eq!(
        inst["state"], "finished",
        "after pg_terminate_backend: {inst}"
    );
    // The server restarted (a fast shutdown ends every session) while they idle.
    pg.stop().expect("stop");
    pg.start_again().expect("start again");
    let inst = run_all();
    assert_eq!(inst["state"], "finished", "after a restart: {inst}");
    let all: Vec<String> = (1..=SHEETS)
        .map(|id| format!("SELECT * FROM hits_{id}"))
        .collect();
    assert_eq!(
        pg.psql(&format!(
            "SELECT count(*), count(DISTINCT (sheet, round)) FROM ({}) h",
            all.join(" UNION ALL ")
        ))
        .expect("rows"),
        format!("{}|{}", 3 * SHEETS, 3 * SHEETS),
        "each action once a round"
    );
}

#[test]
fn commit_markers_live_in_the_connection_s_schema_only_even_before_it_exists() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql("CREATE TABLE public.src (n int); INSERT INTO public.src VALUES (5);")
        .expect("tables");
    let (w, _) = setup(&pg);
    w.add_keys(&format!(
        "11|postgresql|postgresql://127.0.0.1:{}/weft|weft|secret|sslmode=disable;application_name=weft-test\n",
        pg.port
    ));
    deploy(
        &w,
        &json!({"version": 1, "transformationData": {
            "connections": [{"id": 11, "name": "late", "type": "postgresql", "schema": "late"}]}}),
    );
    // The first run makes the schema: its marker has no place yet, and it runs without one
    // (its log says so) rather than leaving one in `public`.
    deploy(
        &w,
        &sheet(
            14,
            "Sql",
            "CREATE SCHEMA IF NOT EXISTS late; CREATE TABLE IF NOT EXISTS late.copied (n int); INSERT INTO late.copied SELECT n FROM src",
            json!({}),
            &[("src", 11)],
            ("copied", 11),
        ),
    );
    for round in 1..=2 {
        let inst = run_and_wait(&w, 14);
        assert_eq!(inst["state"], "finished", "round {round}: {inst}");
    }
    let markers = |schema: &str| {
        let exists = pg
            .psql(&format!(
                "SELECT to_regclass('{schema}.weft_commit_marker') IS NOT NULL"
            ))
            .expect("table");
        if exists == "f" {
            return "none".to_owned();
        }
        pg.psql(&format!("SELECT count(*) FROM {schema}.weft_commit_marker"))
            .expect("markers")
    };
    assert_eq!(markers("public"), "none", "no marker table in public");
    assert_eq!(
        markers("late"),
        "1",
        "the second run's marker, in the schema"
    );
    assert_eq!(
        pg.psql("SELECT count(*) FROM late.copied").expect("rows"),
        "2"
    );
}

#[test]
fn a_failing_statement_of_a_script_is_placed_in_the_action_text_as_on_sqlite() {
    let pg = Postgres::start().expect("PostgreSQL");
    pg.psql("CREATE TABLE placed (n int);").expect("table");
    let (w, data) = setup(&pg);
    rusqlite::Connection::open(&data)
        .expect("data")
        .execute_batch("CREATE TABLE lite_placed (n INTEGER);")
        .expect("table");
    // The same script on both connection types: the typo is on line 3, in the second
    // statement, `FORM` where `FROM` was meant.
    let script = "DELETE FROM {t};\nINSERT INTO {t}\n  SELECT n FORM {t};";
    for (id, conn, table) in [(21, 7, "placed"), (22, 1, "lite_placed")] {
        let text = script.replace("{t}", table);
        deploy_unchecked(&w, &sheet(id, "Sql", &text, json!({}), &[], (table, conn)));
        let inst = run_and_wait(&w, id);
        assert_eq!(inst["state"], "failed", "{inst}");
        let e = inst["actions"][0]["error"].as_str().unwrap_or_default();
        assert!(e.contains("at line 3, column "), "connection {conn}: {e}");
        let column: usize = e
            .split("at line 3, column ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .expect("a column");
        let third = text.lines().nth(2).expect("line 3");
        let token = &third[column - 1..];
        // Where each server stumbles: at the misspelt word, or at the word after it.
        assert!(
            token.starts_with("FORM") || token.starts_with(table),
            "connection {conn}: column {column} of `{third}`: {e}"
        );
    }
}

/// Deploys without validation (the deploy's own SQL check would refuse a typo).
fn deploy_unchecked(w: &Weft, doc: &Value) {
    let body = json!({"command": "DeployRepository", "payload": {"content": doc.to_string(),
        "deployOptions": {"validate": "false"}}});
    let (st, v) = post(&w.url, body.to_string().into_bytes());
    assert_eq!(st, 200, "deploy failed: {v}");
}
