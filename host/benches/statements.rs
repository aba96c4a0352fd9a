//! What one repository statement costs through `repo::sql::Session` on SQLite
//! (`cargo bench -p weft --bench statements`): prints numbers, asserts nothing.
//!
//! 1. `SELECT ?1` through the Session, beside the same through rusqlite directly.
//! 2. Twenty distinct statements used in turn, with rusqlite's default statement cache of
//!    16 (each is prepared again at every use) and with 256 (each stays prepared): the cost
//!    a path of more than 16 distinct statements pays per statement.

use std::time::Instant;
use weft_repo::sql::{Param, Session};

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("statements bench: run with `cargo bench -p weft --bench statements`");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let conn = weft_repo::connect(&dir.path().join("repository.db")).expect("open");
    let session: &dyn Session = &conn;
    let n = 20_000i64;
    let t = Instant::now();
    for i in 0..n {
        session
            .rows("SELECT ?1", &[Param::Int(i)], |r| r.get::<i64>(0))
            .expect("select");
    }
    let through = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    let t = Instant::now();
    for i in 0..n {
        let mut st = conn.prepare_cached("SELECT ?1").expect("prepare");
        let _: i64 = st.query_row([i], |r| r.get(0)).expect("select");
    }
    let raw = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    println!(
        "statements: SELECT ?1 through the Session {through:.2} us, rusqlite directly {raw:.2} us"
    );
    let sqls: Vec<String> = (0..20).map(|k| format!("SELECT ?1 + {k}")).collect();
    for cache in [16usize, 256] {
        conn.set_prepared_statement_cache_capacity(cache);
        let rounds = 2_000i64;
        let t = Instant::now();
        for i in 0..rounds {
            for q in &sqls {
                session
                    .rows(q, &[Param::Int(i)], |r| r.get::<i64>(0))
                    .expect("select");
            }
        }
        let each = t.elapsed().as_secs_f64() * 1e6 / (rounds * sqls.len() as i64) as f64;
        println!(
            "statements: 20 distinct statements in turn, statement cache {cache}: {each:.2} us each"
        );
    }
}
