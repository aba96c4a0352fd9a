//! Seed benchmark (`cargo bench -p weft_tests --bench seed`): prints numbers, asserts
//! nothing but that the rows arrived.
//!
//! A CSV file of 1,000,000 rows in jaffle_shop's shape (id, user_id, order_date, status,
//! amount, paid: integer, integer, date, text, number, boolean) loaded by the `Seed` module
//! (its shared library, run by the host's action runner, the file as the action's text as
//! `weft deploy` sends a project's file, types inferred) into a real PostgreSQL server started by the bench, three alternating rounds
//! against PostgreSQL's own CSV reader (`psql \copy t FROM file (FORMAT csv, HEADER)` into a
//! table made beforehand: the server parsing and writing, the floor). Goal: at least 1,000,000
//! rows a second into PostgreSQL. Also measured: the same load into a SQLite file, and a run
//! whose file did not change (the digest read and compared, nothing loaded).
//!
//! Needs `cargo build --release --workspace` first and PostgreSQL (`.ci/run` installs it).
//! `WEFT_BENCH_ROWS` changes the row count.

// The same allocator as the `weft` binary.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::Write as _;
use std::path::Path;
use std::time::Instant;
use weft_tests::bench::{median, rounds as fmt};
use weft_tests::postgres::Postgres;

/// A Seed of the CSV `data` (a project's file, as `weft deploy` sends it) into table `t` on
/// `connection`.
fn plan(data: &str, connection: i64, dialect: weft_sdk::Dialect) -> weft_engine::exec::ActionPlan {
    let sheet = serde_json::json!({"version": 1, "transformationData": {"sheets": [{"id": 1, "attributes": {"name": "seed", "folder_id": 1, "folder": "/"},
        "nodes": [
            {"id": 1, "type": 0, "attributes": {"module": "Seed", "name": "orders", "action": data}},
            {"id": 2, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": connection}}],
        "edges": [{"id": 1, "from": 1, "to": 2}]}]}});
    let (doc, _) = weft_dsr::parse(&sheet.to_string());
    weft_engine::exec::actions_of(&doc.expect("sheet").sheets[0], &|_| dialect).remove(0)
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("seed bench: run with `cargo bench -p weft_tests --bench seed`");
        return;
    }
    let rows: i64 = std::env::var("WEFT_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("dir");
    let csv = dir.path().join("orders.csv");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&csv).expect("csv"));
        writeln!(f, "id,user_id,order_date,status,amount,paid").expect("header");
        let status = [
            "placed",
            "shipped",
            "completed",
            "return_pending",
            "returned",
        ];
        for i in 0..rows {
            writeln!(
                f,
                "{i},{},2018-{:02}-{:02},{},{}.{:02},{}",
                i % 997,
                i % 12 + 1,
                i % 28 + 1,
                status[(i % 5) as usize],
                i % 1000,
                i % 100,
                i % 3 == 0
            )
            .expect("row");
        }
    }
    let text = std::fs::read_to_string(&csv).expect("csv");
    let bytes = text.len();
    println!("seed: {rows} rows, {:.1} MB of CSV", bytes as f64 / 1e6);
    let pg = Postgres::start().expect("start PostgreSQL");
    let target_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().and_then(|p| p.parent()).map(Path::to_path_buf))
        .unwrap_or_default();
    let registry = weft_core::plugins::Registry::load(&[(target_dir.clone(), false)]);
    assert!(
        registry.module("Seed").is_some() && registry.bridge("postgresql").is_some(),
        "no Seed plugin or postgresql bridge in {}: run `cargo build --release --workspace` first",
        target_dir.display()
    );
    let lite = dir.path().join("dw.db");
    let kf = dir.path().join("keyfile");
    std::fs::write(
        &kf,
        format!(
            "1|sqlite|{}|||\n2|postgresql|postgresql://127.0.0.1:{}/weft|weft|secret|sslmode=disable\n",
            lite.display(),
            pg.port
        ),
    )
    .expect("keyfile");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&kf, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let keys = weft_core::keys::KeyFile::load(&kf).expect("keys");
    let seed = |connection: i64, dialect: weft_sdk::Dialect, expect: i64| {
        let p = plan(&text, connection, dialect);
        let t = Instant::now();
        let ran = weft_engine::exec::run_action(&registry, &keys, &p, &[]);
        let secs = t.elapsed().as_secs_f64();
        let outcome = ran.outcome.unwrap_or_else(|e| panic!("seed: {e}"));
        assert_eq!(outcome.rows_written as i64, expect);
        secs
    };
    let psql = |sql: &str| pg.psql(sql).unwrap_or_else(|e| panic!("psql: {e}"));
    let drop_pg = || psql("DROP TABLE IF EXISTS t; DROP TABLE IF EXISTS r");
    let drop_lite = || {
        rusqlite::Connection::open(&lite)
            .expect("lite")
            .execute_batch("DROP TABLE IF EXISTS t")
            .expect("drop");
    };
    // Warm-up: the session opens, the file is in the page cache.
    drop_pg();
    seed(2, weft_sdk::Dialect::Postgres, rows);
    let (mut weft_pg, mut psql_pg, mut weft_lite) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        drop_pg();
        weft_pg.push(seed(2, weft_sdk::Dialect::Postgres, rows));
        drop_pg();
        psql(
            "CREATE TABLE r (id integer, user_id integer, order_date date, status text, amount double precision, paid boolean)",
        );
        let t = Instant::now();
        psql(&format!(
            "\\copy r FROM '{}' (FORMAT csv, HEADER)",
            csv.display()
        ));
        psql_pg.push(t.elapsed().as_secs_f64());
        drop_lite();
        weft_lite.push(seed(1, weft_sdk::Dialect::Sqlite, rows));
    }
    // Unchanged: nothing loaded.
    drop_pg();
    seed(2, weft_sdk::Dialect::Postgres, rows);
    let types = psql(
        "SELECT string_agg(data_type, ', ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 't'",
    );
    let unchanged: Vec<f64> = (0..3)
        .map(|_| seed(2, weft_sdk::Dialect::Postgres, 0))
        .collect();
    let rate = |secs: f64| rows as f64 / secs / 1e6;
    println!("inferred types on PostgreSQL: {types}");
    println!(
        "weft Seed -> PostgreSQL:        {} s; median {:.2} s ({:.2} M rows/s; goal >= 1.00)",
        fmt(&weft_pg),
        median(&weft_pg),
        rate(median(&weft_pg))
    );
    println!(
        "psql \\copy CSV (the floor):     {} s; median {:.2} s ({:.2} M rows/s)",
        fmt(&psql_pg),
        median(&psql_pg),
        rate(median(&psql_pg))
    );
    println!(
        "weft Seed -> SQLite:            {} s; median {:.2} s ({:.2} M rows/s)",
        fmt(&weft_lite),
        median(&weft_lite),
        rate(median(&weft_lite))
    );
    println!(
        "unchanged file, not loaded:     {} s; median {:.3} s",
        fmt(&unchanged),
        median(&unchanged)
    );
}
