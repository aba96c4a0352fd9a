//! The real `weft` binary for end-to-end tests and benches: start `weft serve` on a free
//! port with a fresh home, run the real scripts of `bin/`, dump the real repository file,
//! post to the endpoint.
//!
//! The binary is the one the build made beside the test or bench executable
//! (`target/debug/weft` or `target/release/weft`), or `$WEFT_BIN`.
//!
//! The repository is the backend `WEFT_TEST_REPOSITORY` names: `sqlite` (the default:
//! `HOME/repository.db`) or `postgresql`, where each fresh home's key file puts the
//! repository into a database of its own on one PostgreSQL server the test process starts.
//! Tests read the repository through [`Weft::dump`], [`Weft::repo_rows`] and
//! [`Weft::repo_execute`], the same on both.

use crate::postgres::Postgres;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `weft` binary under test.
pub fn weft_bin() -> PathBuf {
    if let Some(b) = std::env::var_os("WEFT_BIN") {
        return PathBuf::from(b);
    }
    let exe = std::env::current_exe().expect("test executable");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let bin = dir.join("weft");
    assert!(
        bin.is_file(),
        "{} is missing: build it first (the test command `./test.sh` does: cargo build --workspace --bins)",
        bin.display()
    );
    bin
}

/// Where the tests keep repositories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `HOME/repository.db`.
    Sqlite,
    /// A database of its own on the test process's PostgreSQL server.
    Postgres,
}

/// The backend of this test run: `WEFT_TEST_REPOSITORY` (`sqlite`, the default, or
/// `postgresql`).
///
/// # Panics
///
/// On another value.
pub fn backend() -> Backend {
    match std::env::var("WEFT_TEST_REPOSITORY").as_deref() {
        Err(_) | Ok("" | "sqlite") => Backend::Sqlite,
        Ok("postgresql") => Backend::Postgres,
        Ok(other) => panic!("WEFT_TEST_REPOSITORY is sqlite or postgresql, not `{other}`"),
    }
}

/// Whether a test of the SQLite repository itself (its file, its disk) must skip: under
/// `WEFT_TEST_REPOSITORY=postgresql` it says so, naming `what` the test does, and answers
/// true.
pub fn skipped_on_postgres(what: &str) -> bool {
    let skip = backend() == Backend::Postgres;
    if skip {
        eprintln!("skipped under WEFT_TEST_REPOSITORY=postgresql: it {what}");
    }
    skip
}

/// The PostgreSQL server of the repositories, started once per test process.
pub fn repository_server() -> &'static Postgres {
    static SERVER: std::sync::OnceLock<Postgres> = std::sync::OnceLock::new();
    SERVER.get_or_init(|| Postgres::start().expect("PostgreSQL for the repositories"))
}

/// In `home`, a key file whose entry 0 puts the repository into a new database of the
/// repository server (on the PostgreSQL backend; nothing on SQLite, or where the home has
/// a key file already).
fn prepare_home(home: &Path) {
    if backend() != Backend::Postgres || home.join("keyfile").exists() {
        return;
    }
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let db = format!(
        "repo_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    );
    let pg = repository_server();
    pg.psql(&format!("CREATE DATABASE {db}"))
        .expect("a repository database");
    let keyfile = home.join("keyfile");
    std::fs::write(
        &keyfile,
        format!(
            "0|postgresql|postgresql://127.0.0.1:{}/{db}|weft|secret|sslmode=disable\n",
            pg.port
        ),
    )
    .expect("keyfile");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&keyfile, std::fs::Permissions::from_mode(0o600)).expect("mode");
}

/// `n` hosts (`weft serve`) on one new repository database of the repository server, each
/// with connection 1 to one new data database holding table `t (action_id BIGINT)`, with
/// `env` (and a 50 ms poll) for each; and the data database's name.
pub fn cluster(n: usize, env: &[(&str, &str)]) -> (Vec<Weft>, String) {
    cluster_with(n, &[], env)
}

/// [`cluster`] with more arguments for each `weft serve`.
pub fn cluster_with(n: usize, args: &[&str], env: &[(&str, &str)]) -> (Vec<Weft>, String) {
    cluster_on(repository_server(), n, args, env)
}

/// [`cluster_with`] whose repository database is on `server` (a server of the test's own,
/// which it may stop and start); the data database stays on [`repository_server`].
pub fn cluster_on(
    server: &Postgres,
    n: usize,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Vec<Weft>, String) {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let (repo, data) = (
        format!("hosts_repo_{}_{k}", std::process::id()),
        format!("hosts_data_{}_{k}", std::process::id()),
    );
    let pg = repository_server();
    server
        .psql(&format!("CREATE DATABASE {repo}"))
        .expect("database");
    pg.psql(&format!("CREATE DATABASE {data}"))
        .expect("database");
    pg.psql_in(&data, "CREATE TABLE t (action_id BIGINT NOT NULL)")
        .expect("table");
    let keys = format!(
        "0|postgresql|postgresql://127.0.0.1:{}/{repo}|weft|secret|sslmode=disable\n1|postgresql|postgresql://127.0.0.1:{}/{data}|weft|secret|sslmode=disable\n",
        server.port, pg.port
    );
    let hosts = (0..n)
        .map(|_| {
            let home = tempfile::tempdir().expect("home");
            let keyfile = home.path().join("keyfile");
            std::fs::write(&keyfile, &keys).expect("keyfile");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&keyfile, std::fs::Permissions::from_mode(0o600))
                .expect("mode");
            let mut all = vec![("WEFT_HOST_POLL_MS", "50")];
            all.extend_from_slice(env);
            let mut argv = vec!["--listen", "127.0.0.1:0"];
            argv.extend_from_slice(args);
            Weft::start_in(home, &argv, &all)
        })
        .collect();
    (hosts, data)
}

/// A psql session holding the advisory lock `lock` of database `db` of the repository
/// server until dropped (its stdin closed, it ends and the server lets the lock go): actions
/// that take the lock wait until the test lets them.
pub struct Gate(std::process::Child);

impl Gate {
    /// Takes the lock; answers once it is held.
    pub fn hold(db: &str, lock: i64) -> Gate {
        let pg = repository_server();
        let mut child = std::process::Command::new("psql")
            .args([
                "-X",
                "-q",
                "-At",
                "-h",
                "127.0.0.1",
                "-p",
                &pg.port.to_string(),
            ])
            .args(["-U", "weft", "-d", db])
            .env("PGPASSWORD", "secret")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("psql");
        use std::io::{BufRead, Write};
        let stdin = child.stdin.as_mut().expect("stdin");
        writeln!(stdin, "SELECT pg_advisory_lock({lock});\n\\echo locked").expect("write");
        stdin.flush().expect("flush");
        let mut line = String::new();
        let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        while line.trim() != "locked" {
            line.clear();
            assert!(out.read_line(&mut line).expect("read") > 0, "psql ended");
        }
        Gate(child)
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

/// Starts folder 10 (`/load`) on `w` as batch `load`; answers the instance id.
pub fn run_folder(w: &Weft) -> i64 {
    let (st, v) = command(
        w,
        "RunElements",
        serde_json::json!({"batchExecution": {"batchName": "load", "user": "tester",
            "elementList": [{"elementType": "F", "elementId": 10}]}}),
    );
    assert_eq!(st, 200, "{v}");
    v["payload"]["batchInstanceId"].as_i64().expect("id")
}

/// Deploys, on `w`, folder 10 `/load` with `n` sheets (100, 101, ...), each with one `Sql`
/// action (id `sheet * 10`) running `sql` with connection 1's table `t` as its target.
pub fn deploy_sql_actions(w: &Weft, n: i64, sql: &str) {
    let sheets: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let id = 100 + i;
            let (a, t) = (id * 10, id * 10 + 1);
            serde_json::json!({"id": id, "attributes": {"name": format!("s{id}"), "folder_id": 10, "folder": "/load"},
              "nodes": [
                {"id": a, "type": 0, "attributes": {"module": "Sql", "name": format!("a{id}"), "action": sql}},
                {"id": t, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 1}}],
              "edges": [{"id": t, "from": a, "to": t}]})
        })
        .collect();
    let doc = serde_json::json!({"version": 1, "transformationData": {
        "folders": [{"id": 10, "path": "/load"}],
        "connections": [{"id": 1, "name": "data", "type": "postgresql"}],
        "sheets": sheets}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
}

/// The repository database of a host on PostgreSQL (its key file's entry 0).
pub fn repository_database_of(w: &Weft) -> String {
    repository_database(w.home.path()).expect("a PostgreSQL repository")
}

/// The repository database named by the key file in `home` (PostgreSQL backend).
fn repository_database(home: &Path) -> Option<String> {
    let keys = std::fs::read_to_string(home.join("keyfile")).ok()?;
    let line = keys.lines().find(|l| l.starts_with("0|postgresql|"))?;
    let url = line.split('|').nth(2)?;
    Some(url.rsplit('/').next()?.to_owned())
}

/// A running server with its own home; killed when dropped.
pub struct Weft {
    /// Its home.
    pub home: tempfile::TempDir,
    /// The endpoint's URL.
    pub url: String,
    /// The server process.
    pub child: Child,
}

impl Weft {
    /// How many reads of the repository the server made for waits, as its `/metrics` says
    /// (`weft_wait_reads_total`).
    pub fn wait_reads(&self) -> u64 {
        weft::init_tls();
        let text = reqwest::blocking::get(self.url.replace("/weft/service", "/metrics"))
            .and_then(|r| r.text())
            .expect("GET /metrics");
        text.lines()
            .find_map(|l| l.strip_prefix("weft_wait_reads_total "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(|v| v as u64)
            .unwrap_or_else(|| panic!("no weft_wait_reads_total in:\n{text}"))
    }

    /// Starts `weft serve` on 127.0.0.1 with a free port and a fresh home.
    pub fn start() -> Self {
        Self::start_with(&["--listen", "127.0.0.1:0"], &[])
    }

    /// Starts `weft serve` with extra arguments and environment.
    pub fn start_with(args: &[&str], env: &[(&str, &str)]) -> Self {
        let home = tempfile::tempdir().expect("home");
        Self::start_in(home, args, env)
    }

    /// Starts `weft serve` in an existing home.
    pub fn start_in(home: tempfile::TempDir, args: &[&str], env: &[(&str, &str)]) -> Self {
        prepare_home(home.path());
        let mut cmd = Command::new(weft_bin());
        cmd.arg("serve").arg("--home").arg(home.path()).args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let (child, url) = serve(cmd);
        Weft { home, url, child }
    }

    /// The repository file (SQLite backend).
    pub fn repository(&self) -> PathBuf {
        self.home.path().join("repository.db")
    }

    /// Where the repository is, as `getkey 0` says it: the file, or the PostgreSQL URL.
    pub fn repository_location(&self) -> String {
        match repository_database(self.home.path()) {
            Some(db) => format!("postgresql://127.0.0.1:{}/{db}", repository_server().port),
            None => self.repository().display().to_string(),
        }
    }

    /// A full dump of the repository.
    pub fn dump(&self) -> String {
        match repository_database(self.home.path()) {
            Some(db) => {
                let entry = weft_repo::postgres::Entry {
                    url: format!("postgresql://127.0.0.1:{}/{db}", repository_server().port),
                    user: "weft".to_owned(),
                    password: "secret".to_owned(),
                    options: vec![("sslmode".to_owned(), "disable".to_owned())],
                };
                weft_repo::Repository::open_postgres(&entry)
                    .expect("the PostgreSQL repository")
                    .dump()
                    .expect("dump")
            }
            None => dump(&self.repository()),
        }
    }

    /// The rows of a query on the repository, each its values as text joined by `|`, NULL
    /// as an empty text (as psql writes them). The SQL must read alike on both backends.
    pub fn repo_rows(&self, sql: &str) -> Vec<String> {
        match repository_database(self.home.path()) {
            Some(db) => {
                let out = repository_server()
                    .psql_in(&db, sql)
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
                out.lines().map(str::to_owned).collect()
            }
            None => {
                let c = weft_repo::connect(&self.repository()).expect("repository");
                let mut st = c.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
                let n = st.column_count();
                st.query_map([], |r| {
                    Ok((0..n)
                        .map(|i| match r.get_ref(i) {
                            Ok(rusqlite::types::ValueRef::Integer(v)) => v.to_string(),
                            Ok(rusqlite::types::ValueRef::Real(v)) => v.to_string(),
                            Ok(rusqlite::types::ValueRef::Text(t)) => {
                                String::from_utf8_lossy(t).into_owned()
                            }
                            Ok(rusqlite::types::ValueRef::Blob(b)) => format!("{b:?}"),
                            Ok(rusqlite::types::ValueRef::Null) | Err(_) => String::new(),
                        })
                        .collect::<Vec<_>>()
                        .join("|"))
                })
                .and_then(Iterator::collect)
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
            }
        }
    }

    /// The one value of a query on the repository (see [`Weft::repo_rows`]).
    pub fn repo_value(&self, sql: &str) -> String {
        let rows = self.repo_rows(sql);
        assert_eq!(rows.len(), 1, "{sql}: {rows:?}");
        rows.into_iter().next().unwrap_or_default()
    }

    /// Runs statements on the repository, as a person would by hand.
    pub fn repo_execute(&self, sql: &str) {
        match repository_database(self.home.path()) {
            Some(db) => {
                repository_server()
                    .psql_in(&db, sql)
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
            None => weft_repo::connect(&self.repository())
                .expect("repository")
                .execute_batch(sql)
                .unwrap_or_else(|e| panic!("{sql}: {e}")),
        }
    }

    /// Runs a script of `bin/` with this server's home.
    pub fn script(&self, name: &str, args: &[&str], stdin: Option<&str>) -> Output {
        script(self.home.path(), name, args, stdin)
    }

    /// Stops the server (SIGKILL) and hands back its home.
    pub fn stop(mut self) -> tempfile::TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let home = tempfile::tempdir().expect("placeholder");
        std::mem::replace(&mut self.home, home)
    }
}

impl Weft {
    /// Waits for the server to end by itself (a fault it was told to hit), for at most
    /// `within`; hands back how it ended and its home.
    pub fn exited(mut self, within: Duration) -> (std::process::ExitStatus, tempfile::TempDir) {
        let deadline = Instant::now() + within;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "weft serve did not end within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let home = tempfile::tempdir().expect("placeholder");
        (status, std::mem::replace(&mut self.home, home))
    }
}

impl Weft {
    /// `weft ARGS` with this server's home (`WEFT_HOME`): exit code, standard output and
    /// standard error. A client command still needs `--url` (the home's key file has no
    /// entry for the server).
    pub fn cli(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let o = std::process::Command::new(weft_bin())
            .args(args)
            .env("WEFT_HOME", self.home.path())
            .output()
            .expect("weft");
        let (out, err) = text(&o);
        (o.status.code(), out, err)
    }

    /// Appends `lines` (`KEY|TYPE|URL|USER|PASSWORD|OPTIONS`, each ending in a line break)
    /// to the server's key file, which it reads again when it changes.
    pub fn add_keys(&self, lines: &str) {
        let keyfile = self.home.path().join("keyfile");
        let mut keys = std::fs::read_to_string(&keyfile).expect("keyfile");
        keys.push_str(lines);
        std::fs::write(&keyfile, keys).expect("write keyfile");
    }

    /// The state of batch instance `id`, read from the repository.
    pub fn instance_state(&self, id: i64) -> String {
        self.repo_value(&format!(
            "SELECT state FROM batch_instances WHERE id = {id}"
        ))
    }

    /// Of `ids`, the sheets the repository does not hold.
    pub fn missing_sheets(&self, ids: &[i64]) -> Vec<i64> {
        let mut held = std::collections::HashSet::new();
        for chunk in ids.chunks(1_000) {
            let list: Vec<String> = chunk.iter().map(i64::to_string).collect();
            held.extend(
                self.repo_rows(&format!(
                    "SELECT id FROM sheets WHERE id IN ({})",
                    list.join(", ")
                ))
                .iter()
                .filter_map(|r| r.parse::<i64>().ok()),
            );
        }
        ids.iter()
            .copied()
            .filter(|id| !held.contains(id))
            .collect()
    }
}

impl Drop for Weft {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Spawns `cmd` (a `weft serve` command) and waits, at most 30 s, for the line that gives
/// its address; hands back the process and the endpoint's URL. The caller kills the child.
// The caller kills and waits for the child, which clippy cannot see.
#[allow(clippy::zombie_processes)]
pub fn serve(mut cmd: Command) -> (Child, String) {
    let mut child = cmd
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn weft serve");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if let Some(url) = line.strip_prefix("weft listening on ") {
                    return (child, url.trim().to_owned());
                }
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("weft serve did not report its address within 30 s");
            }
        }
    }
}

/// A full dump of the repository file at `path`.
pub fn dump(path: &Path) -> String {
    let conn = weft_repo::connect(path).expect("open repository");
    weft_repo::dump(&conn).expect("dump")
}

/// Runs `bin/NAME ARGS` with `WEFT_HOME=home` and the binary under test.
pub fn script(home: &Path, name: &str, args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write as _;
    let mut child = Command::new(root().join("bin").join(name))
        .args(args)
        .env("WEFT_BIN", weft_bin())
        .env("WEFT_HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run bin/{name}: {e}"));
    let mut pipe = child.stdin.take().expect("stdin");
    if let Some(text) = stdin {
        pipe.write_all(text.as_bytes()).expect("write stdin");
    }
    drop(pipe);
    child.wait_with_output().expect("wait")
}

/// Standard output and error as text, for messages.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A quickstart example file.
pub fn example(name: &str) -> PathBuf {
    root().join("examples/quickstart").join(name)
}

/// POSTs raw bytes to the endpoint.
pub fn post(url: &str, body: Vec<u8>) -> (u16, serde_json::Value) {
    weft::init_tls();
    let client = reqwest::blocking::Client::new();
    let resp = client
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .expect("request");
    let status = resp.status().as_u16();
    let v = resp.json().expect("JSON answer");
    (status, v)
}

/// A valid three-node sheet (source, action, target) in folder 10 `/sales` on connection 1
/// (the quickstart's), with ids derived from `n`.
pub fn sheet(n: i64) -> String {
    let b = n * 10;
    format!(
        "{{\n  version: 1\n  transformationData: {{\n    sheets: [\n      {{\n        id: {n}\n        attributes: {{ name: \"sheet {n}\", folder_id: 10, folder: \"/sales\" }}\n        nodes: [\n          {{ id: {}, type: 1, attributes: {{ field1: \"src_{n}\", objectTypeId: 1, connectionId: 1 }} }}\n          {{ id: {}, type: 0, attributes: {{ module: \"Sql\", name: \"step {n}\", action: \"INSERT INTO dst_{n} SELECT * FROM src_{n}\" }} }}\n          {{ id: {}, type: 1, attributes: {{ field1: \"dst_{n}\", objectTypeId: 1, connectionId: 1 }} }}\n        ]\n        edges: [\n          {{ id: {}, from: {}, to: {} }}\n          {{ id: {}, from: {}, to: {} }}\n        ]\n      }}\n    ]\n  }}\n}}\n",
        b + 1,
        b + 2,
        b + 3,
        b + 4,
        b + 1,
        b + 2,
        b + 5,
        b + 2,
        b + 3
    )
}

/// A number from `/proc/PID/status` (the first word after `field:`, e.g. `VmRSS` in kB or
/// `Threads`); 0 when the process or the field is gone.
pub fn proc_status(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Sends `command` with `payload` to the server: the status and the answer.
pub fn command(w: &Weft, command: &str, payload: serde_json::Value) -> (u16, serde_json::Value) {
    let body = serde_json::json!({"command": command, "payload": payload});
    post(&w.url, body.to_string().into_bytes())
}

/// Sends `command` with `payload` as the holder of `token` (`Authorization: Bearer`): the
/// status and the answer.
pub fn command_as(
    w: &Weft,
    token: &str,
    command: &str,
    payload: serde_json::Value,
) -> (u16, serde_json::Value) {
    weft::init_tls();
    let body = serde_json::json!({"command": command, "payload": payload});
    let resp = reqwest::blocking::Client::new()
        .post(&w.url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .expect("request");
    let status = resp.status().as_u16();
    (status, resp.json().expect("JSON answer"))
}

/// The entries of a `ListAudit` answer's payload (`entries`, newest first) oldest first, each
/// a line of its `fields` joined by spaces, each field mapped by `map` (its name and text).
pub fn audit_lines(
    entries: &serde_json::Value,
    fields: &[&str],
    map: impl Fn(&str, &str) -> String,
) -> Vec<String> {
    entries
        .as_array()
        .expect("entries")
        .iter()
        .rev()
        .map(|e| {
            fields
                .iter()
                .map(|f| map(f, e[*f].as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Runs sheet `path` (such as `/etl/load`), waits for its end (at most 120 s) and answers
/// the instance as `GetBatchInstance` does.
pub fn run_sheet_to_end(w: &Weft, path: &str) -> serde_json::Value {
    let (st, v) = command(
        w,
        "RunElements",
        serde_json::json!({"batchExecution": {"batchName": "test", "user": "t", "elementList": [{"elementType": "S", "elementId": path}]}}),
    );
    assert_eq!(st, 200, "{v}");
    let id = v["payload"]["batchInstanceId"].as_i64().expect("id");
    let (st, v) = command(
        w,
        "WaitBatchInstance",
        serde_json::json!({"batchInstanceId": id, "timeoutSeconds": 120}),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["payload"]["timedOut"], false, "{v}");
    let (st, v) = command(
        w,
        "GetBatchInstance",
        serde_json::json!({"batchInstanceId": id}),
    );
    assert_eq!(st, 200, "{v}");
    v["payload"].clone()
}

/// The `DeployRepository` body for `content`.
pub fn deploy_body(content: &str) -> Vec<u8> {
    serde_json::json!({"command": "DeployRepository", "payload": {"content": content}})
        .to_string()
        .into_bytes()
}

/// The messages of a deploy answer's warnings with `code`, in order.
pub fn warnings(answer: &serde_json::Value, code: &str) -> Vec<String> {
    answer["payload"]["warnings"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter(|p| p["code"] == code)
                .map(|p| p["message"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until the file `path` holds a whole line (a process id a script wrote once it ran),
/// and answers it; fails the test, saying `what` never started, after 60 s.
pub fn wait_for_pid_file(path: &Path, what: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(s) = std::fs::read_to_string(path)
            && s.ends_with('\n')
        {
            return s.trim().to_owned();
        }
        assert!(std::time::Instant::now() < deadline, "{what} never started");
        std::thread::yield_now();
    }
}

/// Whether process `pid` is gone (a zombie, killed and not reaped yet, counts as gone).
pub fn process_gone(pid: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.is_empty() || stat.split(") ").nth(1).is_some_and(|s| s.starts_with('Z'))
}

/// Waits for instance `id`'s end on `w` (WaitBatchInstance, 25 s at a time), asserting it
/// finished; the instance (for the benches).
pub fn finish(w: &Weft, id: i64) -> serde_json::Value {
    loop {
        let (st, v) = command(
            w,
            "WaitBatchInstance",
            serde_json::json!({"batchInstanceId": id, "timeoutSeconds": 25}),
        );
        assert_eq!(st, 200, "{v}");
        if v["payload"]["timedOut"] == false {
            assert_eq!(v["payload"]["state"], "finished", "{v}");
            return v["payload"].clone();
        }
    }
}
