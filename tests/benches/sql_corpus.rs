//! The SQL check against the databases' own test suites (`cargo bench -p weft_tests --bench
//! sql_corpus`, after `tests/corpus/fetch.sh`): prints numbers and every false error.
//!
//! A false error is a statement the database accepts that the deploy check refuses. The
//! corpus is SQL nobody here wrote:
//!
//! - PostgreSQL: every file of its regression tests (`src/test/regress/sql`, in the order of
//!   `parallel_schedule`), psql's meta-commands (`\set`, `\gset`, ...) and `COPY` data left
//!   out, cut into statements by PostgreSQL's scanner, and run one by one on a real server
//!   started here (a session per file, `statement_timeout` 5 s). The statements it runs
//!   without an error are the accepted ones. `COPY ... FROM STDIN` and `TO STDOUT` need a
//!   client's data stream: they count as accepted when PostgreSQL's parser reads them.
//! - SQLite: the SQL blocks of its TCL test suite (`test/*.test`: `execsql`, `catchsql`,
//!   `do_execsql_test`, `do_catchsql_test`, `db eval` with braces), cut into statements by
//!   `sqlite3_complete`, run one by one on an in-memory database per file (in a temporary
//!   directory, for what they attach); what runs without an error is accepted.
//!
//! Each accepted statement goes through `weft_sql_support::check`, the function each SQL
//! module's `validate` calls at deploy, in the database's dialect: an error is a false
//! error; a warning `sql.unchecked` means the statement was left to the database; else it
//! was checked fully (parsed, its tables known). Prints the counts, the share checked fully,
//! the check's time per statement, and each false error.
//!
//! Set `WEFT_SQL_CORPUS` to read another folder than `target/sql-corpus`, `SQL_CORPUS` to
//! `postgresql` or `sqlite` to measure one.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use weft_sdk::{Dialect, Severity};
use weft_tests::postgres::Postgres;

/// What the check said of the accepted statements of one corpus.
#[derive(Default)]
struct Tally {
    extracted: usize,
    accepted: usize,
    full: usize,
    unchecked: usize,
    false_errors: Vec<(String, String)>,
    check_time: Duration,
}

impl Tally {
    fn check(&mut self, statement: &str, dialect: Dialect) {
        self.accepted += 1;
        let input = weft_sdk::testing::Validate::new(Some(statement)).build();
        let t = Instant::now();
        let out = weft_sql_support::check(&input, dialect);
        self.check_time += t.elapsed();
        if let Some(e) = out
            .problems()
            .iter()
            .find(|p| p.severity() == Severity::Error)
        {
            self.false_errors.push((
                statement.to_owned(),
                format!("{}: {}", e.code(), e.message()),
            ));
        } else if out.problems().iter().any(|p| p.code() == "sql.unchecked") {
            self.unchecked += 1;
        } else {
            self.full += 1;
        }
    }

    fn print(&self, name: &str, elapsed: Duration) {
        println!(
            "{name}: {} statements, {} accepted by the database ({:.1} s); check: {} false errors, {} checked fully ({:.2} %), {} not checked (left to the database); {:.1} µs per statement",
            self.extracted,
            self.accepted,
            elapsed.as_secs_f64(),
            self.false_errors.len(),
            self.full,
            100.0 * self.full as f64 / self.accepted.max(1) as f64,
            self.unchecked,
            self.check_time.as_secs_f64() * 1e6 / self.accepted.max(1) as f64,
        );
        for (statement, error) in &self.false_errors {
            let short: String = statement.chars().take(300).collect();
            println!("  FALSE ERROR {error}\n    in: {short}");
        }
    }
}

fn corpus() -> PathBuf {
    std::env::var_os("WEFT_SQL_CORPUS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/sql-corpus"),
        PathBuf::from,
    )
}

/// The regression test files in the order of `parallel_schedule`, then any others.
fn postgres_files(dir: &Path) -> Vec<PathBuf> {
    let schedule = std::fs::read_to_string(dir.join("parallel_schedule")).unwrap_or_default();
    let mut names: Vec<String> = schedule
        .lines()
        .filter_map(|l| l.strip_prefix("test:"))
        .flat_map(|l| l.split_whitespace().map(str::to_owned))
        .collect();
    let mut rest: Vec<String> = std::fs::read_dir(dir.join("sql"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    e.file_name()
                        .to_str()?
                        .strip_suffix(".sql")
                        .map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default();
    rest.sort();
    rest.retain(|n| !names.contains(n));
    names.extend(rest);
    names
        .into_iter()
        .map(|n| dir.join("sql").join(format!("{n}.sql")))
        .filter(|p| p.is_file())
        .collect()
}

/// A psql script without its meta-commands and `COPY` data: what is sent to the server.
fn without_psql(script: &str) -> String {
    let mut out = String::new();
    let mut in_copy_data = false;
    for line in script.lines() {
        let t = line.trim_start();
        if in_copy_data {
            in_copy_data = t != "\\.";
            continue;
        }
        if t.starts_with('\\') {
            continue;
        }
        // `SELECT ... \gset` and `\g`: the backslash command ends the statement.
        let line = match line.find("\\g") {
            Some(at) => format!("{};", &line[..at]),
            None => line.replace("\\;", ";"),
        };
        let lower = t.to_ascii_lowercase();
        if lower.starts_with("copy")
            && lower.contains("from stdin")
            && lower.trim_end().ends_with(';')
        {
            in_copy_data = true;
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn is_copy_stream(statement: &str) -> bool {
    let lower = statement.to_ascii_lowercase();
    let head = lower
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("--"))
        .unwrap_or("");
    head.starts_with("copy") && (lower.contains("stdin") || lower.contains("stdout"))
}

fn postgres(dir: &Path) -> Tally {
    let mut tally = Tally::default();
    let pg = Postgres::start().expect("PostgreSQL");
    let connect = || {
        let mut config = weft_pg_client::tokio_postgres::Config::new();
        config
            .host("127.0.0.1")
            .port(pg.port)
            .user("weft")
            .password("secret")
            .dbname("weft");
        let (mode, tls) = weft_pg_client::tls::connector("disable", None).expect("tls");
        config.ssl_mode(mode);
        let mut s = weft_pg_client::Session::connect(&config, tls).expect("session");
        let _ = s.batch_execute("SET statement_timeout = '5s'");
        s
    };
    for file in postgres_files(dir) {
        let script = std::fs::read_to_string(&file).unwrap_or_default();
        let text = without_psql(&script);
        // A file with a string the scanner cannot end (a test of the error): cut by weft's
        // own splitter instead.
        let statements: Vec<&str> = pg_query::split_with_scanner(&text).unwrap_or_else(|_| {
            weft_sql_support::statement_ranges(&text, Dialect::Postgres)
                .into_iter()
                .map(|r| &text[r])
                .collect()
        });
        let mut session = connect();
        for statement in statements {
            let statement = statement.trim();
            if statement.is_empty()
                || statement
                    .lines()
                    .all(|l| l.trim_start().starts_with("--") || l.trim().is_empty())
            {
                continue;
            }
            tally.extracted += 1;
            let accepted = if is_copy_stream(statement) {
                pg_query::parse(statement).is_ok()
            } else {
                if session.is_closed_now() {
                    session = connect();
                }
                session.batch_execute(statement).is_ok()
            };
            if accepted {
                tally.check(statement, Dialect::Postgres);
            }
        }
    }
    tally
}

/// The SQL inside the braces of the TCL commands that run SQL in `script`.
fn sqlite_blocks(script: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = script.as_bytes();
    for opener in [
        "execsql ",
        "catchsql ",
        "do_execsql_test ",
        "do_catchsql_test ",
        "db eval ",
    ] {
        let mut from = 0;
        while let Some(at) = script[from..].find(opener) {
            let start = from + at + opener.len();
            from = start;
            // `do_*_test NAME {SQL}`: the name first.
            let mut i = start;
            if opener.starts_with("do_") {
                while i < b.len() && !b[i].is_ascii_whitespace() {
                    i += 1;
                }
            }
            while i < b.len() && (b[i] == b' ' || b[i] == b'\t' || b[i] == b'\\' || b[i] == b'\n') {
                i += 1;
            }
            if b.get(i) != Some(&b'{') {
                continue;
            }
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            if j < b.len() && j > i {
                out.push(script[i + 1..j].to_owned());
                from = j;
            }
        }
    }
    out
}

/// `sqlite3_complete` on `text`: whether it ends a statement as SQLite reads it.
#[allow(unsafe_code)]
fn complete(text: &str) -> bool {
    let Ok(c) = std::ffi::CString::new(text) else {
        return true;
    };
    // SAFETY: `c` is a NUL-terminated string alive across the call; sqlite3_complete only
    // reads it.
    unsafe { rusqlite::ffi::sqlite3_complete(c.as_ptr()) != 0 }
}

/// The statements of `block`, cut where SQLite says a statement is complete.
fn sqlite_statements(block: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in block.char_indices() {
        if c == ';' && complete(&block[start..=i]) {
            out.push(block[start..i].trim().to_owned());
            start = i + 1;
        }
    }
    let rest = block[start..].trim();
    if !rest.is_empty() {
        out.push(rest.to_owned());
    }
    out.retain(|s| !s.is_empty());
    out
}

fn sqlite(dir: &Path) -> Tally {
    let mut tally = Tally::default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("test"))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    let scratch = tempfile::tempdir().expect("a scratch folder");
    std::env::set_current_dir(scratch.path()).expect("into the scratch folder");
    for file in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "test"))
    {
        let Ok(script) = std::fs::read(file) else {
            continue;
        };
        let script = String::from_utf8_lossy(&script);
        let mut db = rusqlite::Connection::open_in_memory().expect("memory");
        for block in sqlite_blocks(&script) {
            for statement in sqlite_statements(&block) {
                if statement.len() > 100_000 {
                    continue;
                }
                tally.extracted += 1;
                // A test's `PRAGMA busy_timeout` would wait on its own second handle of a file.
                let _ = db.busy_timeout(Duration::ZERO);
                let started = Instant::now();
                let _ = db.progress_handler(
                    10_000,
                    Some(move || started.elapsed() > Duration::from_secs(2)),
                );
                let accepted = db.execute_batch(&statement).is_ok();
                let _ = db.progress_handler(0, None::<fn() -> bool>);
                if accepted && !statement.contains('\0') {
                    tally.check(&statement, Dialect::Sqlite);
                }
            }
        }
    }
    tally
}

fn main() {
    // `cargo test --all-targets` runs each bench once without `--bench`: no numbers then.
    if !std::env::args().any(|a| a == "--bench") {
        println!("sql_corpus bench: run with `cargo bench -p weft_tests --bench sql_corpus`");
        return;
    }
    let dir = corpus();
    if !dir.join("postgresql/sql").is_dir() || !dir.join("sqlite/test").is_dir() {
        println!(
            "sql_corpus: no corpus in {} (run tests/corpus/fetch.sh first); nothing measured",
            dir.display()
        );
        return;
    }
    // `SQL_CORPUS=postgresql` or `sqlite` measures one.
    let only = std::env::var("SQL_CORPUS").unwrap_or_default();
    if only != "sqlite" {
        let t = Instant::now();
        let pg = postgres(&dir.join("postgresql"));
        pg.print("PostgreSQL 15 regression tests", t.elapsed());
    }
    if only != "postgresql" {
        let t = Instant::now();
        let lite = sqlite(&dir.join("sqlite"));
        lite.print(
            &format!(
                "SQLite's test suite (3.40), run on SQLite {}",
                rusqlite::version()
            ),
            t.elapsed(),
        );
    }
}
