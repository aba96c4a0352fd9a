//! The JDBC bridge against real engines: a PostgreSQL server started for these tests, H2 and
//! HSQLDB in files, CSV files through csvjdbc, each through the driver jar its Debian package
//! installs (`.ci/run` installs them). The action modules run through the host's runner on
//! the plugins' shared libraries, and every value that lands is compared.

use crate::common;

use common::actions::{plan_in, rows};
use std::path::PathBuf;
use std::sync::OnceLock;
use weft_core::keys::KeyFile;
use weft_core::plugins::Registry;
use weft_engine::exec::{ActionPlan, run_action};
use weft_sdk::Dialect;
use weft_tests::postgres::Postgres;

/// The jars the tests use, from the Debian packages.
const JARS: [(&str, &str); 4] = [
    ("postgresql.jar", "libpostgresql-jdbc-java"),
    ("h2.jar", "libh2-java"),
    ("hsqldb.jar", "libhsqldb-java"),
    ("csvjdbc.jar", "libcsvjdbc-java"),
];

/// One server for the whole test binary; the tests use tables of their own.
fn pg() -> &'static Postgres {
    static PG: OnceLock<Postgres> = OnceLock::new();
    PG.get_or_init(|| Postgres::start().expect("start PostgreSQL"))
}

/// The tests that use HSQLDB (connection 4) take turns. In CI, twice in some hundred runs,
/// a row that `history_keeps_periods_on_h2_and_hsqldb` wrote with the date 2026-01-01 read
/// back as 2026-06-08, a date that `hsqldb_takes_batches_and_an_empty_source_sends_no_batch`
/// was writing into its own HSQLDB database at that moment in the same JVM. The bridge keeps
/// no state between connections (each has its own `Bridge` and session calendar), so the
/// exchange is inside HSQLDB 2.6's in-process engine; it did not show in 20 runs of the two
/// alone. docs/jdbc-drivers.md tells users to give in-process HSQLDB databases one action at a time.
fn hsqldb_turn() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A drivers folder (as INSTALL/drivers) holding links to the Debian jars. The test
/// processes of this binary run at once, so the folder is made under a name of this process
/// and renamed into place; one made by another process is used as it is.
fn drivers() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("jdbc-drivers");
        let complete = |d: &std::path::Path| JARS.iter().all(|(jar, _)| d.join(jar).is_file());
        if complete(&dir) {
            return dir;
        }
        let mine = dir.with_extension(std::process::id().to_string());
        let _ = std::fs::remove_dir_all(&mine);
        std::fs::create_dir_all(&mine).expect("drivers dir");
        for (jar, package) in JARS {
            let from = PathBuf::from("/usr/share/java").join(jar);
            assert!(
                from.is_file(),
                "{} is missing: apt-get install {package} (.ci/run does)",
                from.display()
            );
            std::os::unix::fs::symlink(&from, mine.join(jar)).expect("link jar");
        }
        if std::fs::rename(&mine, &dir).is_err() {
            // Another process was first; an incomplete leftover is replaced.
            if !complete(&dir) {
                let _ = std::fs::remove_dir_all(&dir);
                std::fs::rename(&mine, &dir).expect("drivers dir in place");
            } else {
                let _ = std::fs::remove_dir_all(&mine);
            }
        }
        dir
    })
    .clone()
}

fn registry() -> Registry {
    let dir = common::weft_bin()
        .parent()
        .expect("target dir")
        .to_path_buf();
    let mut r = Registry::load(&[(dir, false)]);
    assert!(
        r.bridge("jdbc").is_some(),
        "the jdbc bridge did not load: {:?}",
        r.refused
    );
    r.set_bridge_options(vec![(
        "weft.drivers".to_owned(),
        drivers().to_string_lossy().into_owned(),
    )]);
    r
}

/// Connections: 1 SQLite, 2 PostgreSQL, 3 H2, 4 HSQLDB, 5 CSV, and broken ones from 6.
struct Env {
    dir: tempfile::TempDir,
    keys: KeyFile,
    reg: Registry,
}

fn dialect(c: i64) -> Dialect {
    match c {
        1 => Dialect::Sqlite,
        2 | 6 | 8 | 9 => Dialect::Postgres,
        3 => Dialect::H2,
        4 => Dialect::Hsqldb,
        _ => Dialect::Generic,
    }
}

impl Env {
    fn new() -> Self {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        let d = dir.path();
        std::fs::create_dir_all(d.join("csv")).expect("csv dir");
        let pg = pg().jdbc_url();
        let kf = d.join("keyfile");
        std::fs::write(
            &kf,
            format!(
                "1|sqlite|{lite}|||\n\
                 2|jdbc|{pg}|weft|secret|\n\
                 3|jdbc|jdbc:h2:{h2}|sa||\n\
                 4|jdbc|jdbc:hsqldb:file:{hsql};shutdown=true|SA||\n\
                 5|jdbc|jdbc:relique:csv:{csv}|||columnTypes=Integer,String,Date\n\
                 6|jdbc|jdbc:postgresql://127.0.0.1:1/weft|weft|secret|\n\
                 7|jdbc|jdbc:nosuch://somewhere/db|||\n\
                 8|jdbc|{pg}|weft|secret|driver=org.example.NoSuchDriver\n\
                 9|jdbc|{pg}|weft|wrong-pass-word|\n\
                 10|jdbc|jdbc:sqlite:{lite}|||\n",
                lite = d.join("lite.db").display(),
                h2 = d.join("h2db").display(),
                hsql = d.join("hsql").join("db").display(),
                csv = d.join("csv").display(),
            ),
        )
        .expect("keyfile");
        std::fs::set_permissions(&kf, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        Env {
            keys: KeyFile::load(&kf).expect("keys"),
            dir,
            reg: registry(),
        }
    }

    fn lite(&self, sql: &str) {
        rusqlite::Connection::open(self.dir.path().join("lite.db"))
            .expect("open")
            .execute_batch(sql)
            .expect("sqlite setup");
    }

    fn lite_rows(&self, sql: &str) -> Vec<String> {
        rows(&self.dir.path().join("lite.db"), sql)
    }

    fn plan(
        &self,
        module: &str,
        action: &str,
        sources: &[(i64, &str)],
        target: (i64, &str),
    ) -> ActionPlan {
        plan_in(
            module,
            action,
            serde_json::json!({}),
            sources,
            Some(target),
            &dialect,
        )
    }

    fn run(&self, p: &ActionPlan) -> Result<weft_sdk::RunOutcome, String> {
        run_action(&self.reg, &self.keys, p, &[])
            .outcome
            .map_err(|e| e.to_string())
    }

    fn ok(&self, p: &ActionPlan) -> weft_sdk::RunOutcome {
        match self.run(p) {
            Ok(o) => o,
            Err(e) => panic!("the action failed: {e}"),
        }
    }

    /// Every row of `sql` on connection `key`, through the bridge, as text.
    fn query(&self, key: &str, sql: &str) -> Vec<String> {
        let entry = self.keys.get(key).expect("key");
        let mut c = weft_core::connect::open(entry, &self.reg).expect("open");
        let (_, rows) = c.query_all(sql, &[]).expect("query");
        rows.iter()
            .map(|r| {
                r.iter()
                    .map(|v| format!("{v:?}"))
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect()
    }

    fn open_error(&self, key: &str) -> String {
        let entry = self.keys.get(key).expect("key");
        match weft_core::connect::open(entry, &self.reg) {
            Ok(_) => panic!("connection {key} opened"),
            Err(e) => e.to_string(),
        }
    }
}

const TYPES_DDL: &str = "(id bigint PRIMARY KEY, i integer, s smallint, b boolean, \
    n numeric(38,10), d double precision, r real, t text, vc varchar(20), dt date, tm time, \
    ts timestamp, tstz timestamptz, by bytea)";

#[test]
fn transfer_postgres_to_sqlite_and_back_keeps_every_value_of_every_type() {
    let env = Env::new();
    let pg = pg();
    pg.psql(&format!(
        "CREATE TABLE types_src {TYPES_DDL}; CREATE TABLE types_back {TYPES_DDL};
         INSERT INTO types_src VALUES
         (1, 2147483647, -32768, true, 12345678901234567890.0123456789, 0.1, 1.5,
          'äöü €; ''quoted''', 'x', '2026-10-25', '02:30:00', '2026-10-25 02:30:00.123456',
          '2026-10-25 02:30:00+02', '\\x00ff10'),
         (2, -2147483648, 0, false, -0.0000000001, -1e300, -0.25, '', 'y', '0001-01-01',
          '23:59:59.999999', '2027-03-28 02:30:00', '2027-03-28 01:30:00Z', '\\x'),
         (9223372036854775807, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
          NULL, NULL, NULL);"
    ))
    .expect("postgres setup");
    // Decimals into TEXT, so that SQLite keeps every digit.
    env.lite(
        "CREATE TABLE types (id INTEGER PRIMARY KEY, i INTEGER, s INTEGER, b INTEGER, n TEXT,
         d REAL, r REAL, t TEXT, vc TEXT, dt TEXT, tm TEXT, ts TEXT, tstz TEXT, by BLOB)",
    );
    let o = env.ok(&env.plan(
        "Transfer",
        "SELECT * FROM types_src",
        &[(2, "types_src")],
        (1, "types"),
    ));
    assert_eq!((o.rows_read, o.rows_written), (3, 3));
    assert_eq!(
        env.lite_rows("SELECT * FROM types ORDER BY id"),
        vec![
            "1|2147483647|-32768|1|12345678901234567890.0123456789|0.1|1.5|äöü €; 'quoted'|x|\
             2026-10-25|02:30:00|2026-10-25 02:30:00.123456|2026-10-25T00:30:00Z|x00ff10",
            "2|-2147483648|0|0|-0.0000000001|-1e300|-0.25||y|0001-01-01|23:59:59.999999|\
             2027-03-28 02:30:00|2027-03-28T01:30:00Z|x",
            "9223372036854775807|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
        ]
    );

    // And back: SQLite's integers, reals, text and blobs into PostgreSQL's typed columns.
    let o = env.ok(&env.plan(
        "Transfer",
        "SELECT * FROM types",
        &[(1, "types")],
        (2, "types_back"),
    ));
    assert_eq!((o.rows_read, o.rows_written), (3, 3));
    let original = pg
        .psql("SELECT * FROM types_src ORDER BY id")
        .expect("read");
    let back = pg
        .psql("SELECT * FROM types_back ORDER BY id")
        .expect("read");
    assert_eq!(back, original);
    assert_eq!(original.lines().count(), 3);
    assert!(
        original.contains("12345678901234567890.0123456789"),
        "{original}"
    );
}

#[test]
fn upsert_on_postgres_inserts_and_updates_on_one_connection_and_across() {
    let env = Env::new();
    let pg = pg();
    pg.psql(
        "CREATE TABLE up_target (id int PRIMARY KEY, name text, amount numeric(10,2));
         INSERT INTO up_target VALUES (1, 'old', 1.00), (2, 'keep', 2.00);
         CREATE TABLE up_source (id int, name text, amount numeric(10,2));
         INSERT INTO up_source VALUES (1, 'new', 10.50), (3, 'three', 3.25);",
    )
    .expect("setup");
    // On one connection: INSERT ... ON CONFLICT.
    let o = env.ok(&env.plan(
        "Upsert",
        "SELECT id, name, amount FROM up_source",
        &[(2, "up_source")],
        (2, "up_target"),
    ));
    assert_eq!((o.rows_read, o.rows_written, o.rows_updated), (2, 1, 1));
    assert_eq!(
        pg.psql("SELECT * FROM up_target ORDER BY id")
            .expect("read"),
        "1|new|10.50\n2|keep|2.00\n3|three|3.25"
    );
    // Across connections: rows streamed from SQLite.
    env.lite(
        "CREATE TABLE changes (id INTEGER, name TEXT, amount TEXT);
         INSERT INTO changes VALUES (2, 'changed', '20.00'), (4, 'four', '4.75');",
    );
    let o = env.ok(&env.plan(
        "Upsert",
        "SELECT id, name, amount FROM changes",
        &[(1, "changes")],
        (2, "up_target"),
    ));
    assert_eq!((o.rows_read, o.rows_written, o.rows_updated), (2, 1, 1));
    assert_eq!(
        pg.psql("SELECT * FROM up_target ORDER BY id")
            .expect("read"),
        "1|new|10.50\n2|changed|20.00\n3|three|3.25\n4|four|4.75"
    );
}

#[test]
fn sql_insert_and_upsert_on_h2_and_transfer_reads_it_back() {
    let env = Env::new();
    let o = env.ok(&env.plan(
        "Sql",
        "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(12,4), \
         seen TIMESTAMP);\n\
         INSERT INTO items VALUES (1, 'a;b', 1.5, TIMESTAMP '2026-11-22 22:00:00'), \
         (2, 'b', 12345678.1234, NULL);\n\
         UPDATE items SET name = name || '!' WHERE id = 2;",
        &[],
        (3, "items"),
    ));
    assert_eq!(o.rows_written, 3);
    // Unquoted names are upper case in H2; the bridge finds the table as H2 spells it.
    env.lite("CREATE TABLE items (id INTEGER, name TEXT, price TEXT, seen TEXT)");
    let o = env.ok(&env.plan(
        "Transfer",
        "SELECT id, name, price, seen FROM items ORDER BY id",
        &[(3, "items")],
        (1, "items"),
    ));
    assert_eq!(o.rows_written, 2);
    assert_eq!(
        env.lite_rows("SELECT * FROM items ORDER BY id"),
        vec![
            "1|a;b|1.5000|2026-11-22 22:00:00",
            "2|b!|12345678.1234|NULL"
        ]
    );
    assert_eq!(
        env.query("3", "SELECT COUNT(*), SUM(price) FROM items"),
        vec!["Int(2)|Decimal(\"12345679.6234\")"]
    );

    // Insert and Upsert with H2 as the target: no ON CONFLICT there, so Upsert updates the
    // rows whose key exists and inserts the others.
    env.ok(&env.plan(
        "Sql",
        "CREATE TABLE items_copy (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(12,4))",
        &[],
        (3, "items_copy"),
    ));
    let o = env.ok(&env.plan(
        "Insert",
        "SELECT id, name, price FROM items WHERE id = 1",
        &[(3, "items")],
        (3, "items_copy"),
    ));
    assert_eq!(o.rows_written, 1);
    let o = env.ok(&env.plan(
        "Upsert",
        "SELECT id, name || '?' AS name, price * 2 AS price FROM items",
        &[(3, "items")],
        (3, "items_copy"),
    ));
    assert_eq!((o.rows_read, o.rows_written, o.rows_updated), (2, 1, 1));
    assert_eq!(
        env.query("3", "SELECT id, name, price FROM items_copy ORDER BY id"),
        vec![
            "Int(1)|Text(\"a;b?\")|Decimal(\"3.0000\")",
            "Int(2)|Text(\"b!?\")|Decimal(\"24691356.2468\")"
        ]
    );
}

#[test]
fn hsqldb_takes_batches_and_an_empty_source_sends_no_batch() {
    let _turn = hsqldb_turn();
    let env = Env::new();
    env.ok(&env.plan(
        "Sql",
        "CREATE TABLE measures (id INTEGER PRIMARY KEY, day DATE, v DOUBLE, note VARCHAR(40))",
        &[],
        (4, "measures"),
    ));
    env.lite(
        "CREATE TABLE empty (id INTEGER, day TEXT, v REAL, note TEXT);
         CREATE TABLE full (id INTEGER, day TEXT, v REAL, note TEXT);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
         INSERT INTO full SELECT i, date('2026-01-01', '+' || (i % 365) || ' days'), i / 4.0,
           CASE WHEN i % 7 = 0 THEN NULL ELSE 'n' || i END FROM n;",
    );
    // HSQLDB throws on an empty batch: an empty source must not send one.
    let o = env.ok(&env.plan(
        "Transfer",
        "SELECT * FROM empty",
        &[(1, "empty")],
        (4, "measures"),
    ));
    assert_eq!((o.rows_read, o.rows_written), (0, 0));
    let o = env.ok(&env.plan(
        "Transfer",
        "SELECT * FROM full",
        &[(1, "full")],
        (4, "measures"),
    ));
    assert_eq!((o.rows_read, o.rows_written), (2500, 2500));
    env.lite("CREATE TABLE back (id INTEGER, day TEXT, v REAL, note TEXT)");
    env.ok(&env.plan(
        "Transfer",
        "SELECT id, day, v, note FROM measures",
        &[(4, "measures")],
        (1, "back"),
    ));
    assert_eq!(
        env.lite_rows("SELECT * FROM full EXCEPT SELECT * FROM back"),
        Vec::<String>::new()
    );
    assert_eq!(env.lite_rows("SELECT COUNT(*) FROM back"), vec!["2500"]);
}

#[test]
fn csv_files_are_read_through_csvjdbc() {
    let env = Env::new();
    std::fs::write(
        env.dir.path().join("csv").join("people.csv"),
        "id,name,born\n1,Ada Lovelace,1815-12-10\n2,\"Hopper, Grace\",1906-12-09\n",
    )
    .expect("csv");
    env.lite("CREATE TABLE people (id INTEGER, name TEXT, born TEXT)");
    let o = env.ok(&env.plan(
        "Transfer",
        "SELECT id, name, born FROM people",
        &[(5, "people")],
        (1, "people"),
    ));
    assert_eq!((o.rows_read, o.rows_written), (2, 2));
    assert_eq!(
        env.lite_rows("SELECT id, typeof(id), name, born FROM people ORDER BY id"),
        vec![
            "1|integer|Ada Lovelace|1815-12-10",
            "2|integer|Hopper, Grace|1906-12-09"
        ]
    );
}

#[test]
fn a_failed_transfer_into_postgres_leaves_no_rows_and_names_the_sqlstate() {
    let env = Env::new();
    let pg = pg();
    pg.psql("CREATE TABLE strict (id int PRIMARY KEY, v text NOT NULL)")
        .expect("setup");
    env.lite(
        "CREATE TABLE loose (id INTEGER, v TEXT);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30000)
         INSERT INTO loose SELECT i, CASE WHEN i = 25000 THEN NULL ELSE 'v' END FROM n;",
    );
    let e = env
        .run(&env.plan(
            "Transfer",
            "SELECT id, v FROM loose",
            &[(1, "loose")],
            (2, "strict"),
        ))
        .expect_err("a NULL into NOT NULL");
    assert!(
        e.contains("[SQLState 23502]") && e.contains("PSQLException"),
        "{e}"
    );
    assert_eq!(pg.psql("SELECT COUNT(*) FROM strict").expect("count"), "0");

    let e = env
        .run(&env.plan("Sql", "SELEC 1", &[], (2, "strict")))
        .expect_err("bad SQL");
    assert!(e.contains("[SQLState 42601]") && e.contains("SELEC"), "{e}");
}

#[test]
fn connections_that_cannot_open_say_why() {
    let env = Env::new();
    let e = env.open_error("6");
    assert!(
        e.contains("connection 6") && e.contains("[SQLState 08001]"),
        "{e}"
    );
    let e = env.open_error("7");
    assert!(
        e.contains("no installed JDBC driver accepts the URL jdbc:nosuch://somewhere/db")
            && e.contains("org.postgresql.Driver"),
        "{e}"
    );
    let e = env.open_error("8");
    assert!(
        e.contains("the driver class org.example.NoSuchDriver is in none of the installed"),
        "{e}"
    );
    let e = env.open_error("9");
    assert!(e.contains("[SQLState 28P01]"), "{e}");
    assert!(!e.contains("wrong-pass-word"), "the password leaked: {e}");
    let e = env.open_error("10");
    assert!(e.contains("SQLite is reached natively"), "{e}");
}

#[test]
fn postgres_targets_by_schema_with_its_own_types_and_strict_booleans() {
    let env = Env::new();
    let pg = pg();
    pg.psql(
        "CREATE SCHEMA archive; CREATE SCHEMA other1; CREATE SCHEMA other2;
         CREATE TABLE archive.orders (id int, tag uuid, doc jsonb, ok boolean, flags bit(8));
         CREATE TABLE public.orders (id int, tag uuid, doc jsonb, ok boolean, flags bit(8));
         CREATE TABLE other1.twice (id int); CREATE TABLE other2.twice (id int);
         CREATE TABLE public.t_1 (id int); CREATE TABLE public.t11 (id int, extra int);",
    )
    .expect("setup");
    env.lite(
        "CREATE TABLE src (id INTEGER, tag TEXT, doc TEXT, ok TEXT, flags TEXT);
         INSERT INTO src VALUES (1, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"k\": [1, 2]}', 'yes', '10100000'),
                                (2, NULL, NULL, 'F', NULL);
         CREATE TABLE back (id INTEGER, tag TEXT, doc TEXT, ok INTEGER, flags TEXT);
         CREATE TABLE one (id INTEGER); INSERT INTO one VALUES (5);",
    );
    // No schema named: the connection's own (public), not archive, which sorts first.
    let o = env.ok(&env.plan(
        "Transfer",
        "SELECT id, tag, doc, ok, flags FROM src",
        &[(1, "src")],
        (2, "orders"),
    ));
    assert_eq!(o.rows_written, 2);
    assert_eq!(
        pg.psql("SELECT id, tag, doc, ok, flags FROM public.orders ORDER BY id")
            .expect("read"),
        "1|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11|{\"k\": [1, 2]}|t|10100000\n2|||f|"
    );
    assert_eq!(
        pg.psql("SELECT COUNT(*) FROM archive.orders").expect("n"),
        "0"
    );
    // uuid, jsonb and bit(8) come back as text; the boolean as one.
    env.ok(&env.plan(
        "Transfer",
        "SELECT id, tag, doc, ok, flags FROM orders",
        &[(2, "orders")],
        (1, "back"),
    ));
    assert_eq!(
        env.lite_rows("SELECT * FROM back ORDER BY id"),
        vec![
            "1|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11|{\"k\": [1, 2]}|1|10100000",
            "2|NULL|NULL|0|NULL"
        ]
    );
    // `_` in a name is not a pattern: t_1 is t_1, not t11.
    env.ok(&env.plan("Transfer", "SELECT id FROM one", &[(1, "one")], (2, "t_1")));
    assert_eq!(pg.psql("SELECT id FROM t_1").expect("t_1"), "5");
    // A table only in two other schemas: named, not guessed.
    let e = env
        .run(&env.plan(
            "Transfer",
            "SELECT id FROM one",
            &[(1, "one")],
            (2, "twice"),
        ))
        .expect_err("ambiguous");
    assert!(
        e.contains("exists in several schemas (other1, other2)"),
        "{e}"
    );
    // Text that is no boolean is refused, not stored as false.
    env.lite("INSERT INTO src VALUES (3, NULL, NULL, 'perhaps', NULL)");
    pg.psql("TRUNCATE public.orders").expect("truncate");
    let e = env
        .run(&env.plan(
            "Transfer",
            "SELECT id, tag, doc, ok, flags FROM src",
            &[(1, "src")],
            (2, "orders"),
        ))
        .expect_err("not a boolean");
    assert!(e.contains("`perhaps`") && e.contains("22018"), "{e}");
    assert_eq!(
        pg.psql("SELECT COUNT(*) FROM public.orders").expect("n"),
        "0"
    );
}

#[test]
fn history_keeps_periods_on_h2_and_hsqldb() {
    let _turn = hsqldb_turn();
    let env = Env::new();
    for conn in [3, 4] {
        env.ok(&env.plan(
            "Sql",
            "CREATE TABLE stg_h (id INTEGER PRIMARY KEY, name VARCHAR(20));\n\
             INSERT INTO stg_h VALUES (1, 'a'), (2, NULL);\n\
             CREATE TABLE dim_h (id INTEGER NOT NULL, name VARCHAR(20), valid_from_dt TIMESTAMP NOT NULL, \
             invalid_from_dt TIMESTAMP, PRIMARY KEY (id, valid_from_dt))",
            &[],
            (conn, "dim_h"),
        ));
        let history = |at: &str| {
            plan_in(
                "History",
                "SELECT id, name FROM stg_h",
                serde_json::json!({"keys": "id", "changeTime": at}),
                &[(conn, "stg_h")],
                Some((conn, "dim_h")),
                &dialect,
            )
        };
        let counts = |o: weft_sdk::RunOutcome| (o.rows_read, o.rows_written, o.rows_updated);
        assert_eq!(counts(env.ok(&history("2026-01-01 00:00:00"))), (2, 2, 0));
        // Unchanged, a NULL equal to a NULL.
        assert_eq!(counts(env.ok(&history("2026-01-02 00:00:00"))), (2, 0, 0));
        env.ok(&env.plan(
            "Sql",
            "UPDATE stg_h SET name = 'b' WHERE id = 2;\nDELETE FROM stg_h WHERE id = 1",
            &[],
            (conn, "stg_h"),
        ));
        assert_eq!(counts(env.ok(&history("2026-01-03 00:00:00"))), (1, 1, 2));
        let periods = env.query(
            &conn.to_string(),
            "SELECT id, CAST(valid_from_dt AS DATE), CAST(invalid_from_dt AS DATE) FROM dim_h ORDER BY id, valid_from_dt",
        );
        assert_eq!(periods.len(), 3, "connection {conn}: {periods:?}");
        assert!(
            periods[0].contains("2026-01-01") && periods[0].contains("2026-01-03"),
            "connection {conn}: {periods:?}"
        );
        assert!(
            periods[2].starts_with("Int(2)") && periods[2].ends_with("Null"),
            "connection {conn}: {periods:?}"
        );
    }
}

#[test]
fn an_error_in_a_script_is_placed_in_the_action_text_on_every_driver() {
    let _turn = hsqldb_turn();
    let env = Env::new();
    // The second statement of three fails; each driver says where in its own words.
    let script = |table: &str| {
        format!(
            "CREATE TABLE {table} (id INT);\nINSERT INTO {table}\n  SELEC id FROM {table};\nDROP TABLE {table}"
        )
    };
    for (key, table) in [(2, "placed_pg"), (3, "placed_h2"), (4, "placed_hsql")] {
        let sql = script(table);
        let e = env
            .run(&env.plan("Sql", &sql, &[], (key, table)))
            .expect_err("a typo in the second statement");
        let offset = "INSERT INTO \n  ".len() + table.len();
        match key {
            // PostgreSQL says a position and H2 marks it: the line and column of the whole
            // text, and the offset in the statement quoted.
            2 | 3 => {
                let statement = format!("INSERT INTO {table}\n  SELEC id FROM {table}");
                let said = format!("at line 3, column 3 of the action; at offset {offset} in `{statement}`");
                assert!(e.contains(&said), "connection {key}: {e}");
            }
            // HSQLDB says no place: the statement's own.
            _ => assert!(
                e.contains("statement 2 of 3, from line 2, column 1 of the action, in `INSERT INTO placed_hsql"),
                "{e}"
            ),
        }
        assert!(!e.contains("\n  Position:"), "{e}");
    }
}
