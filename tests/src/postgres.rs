//! A real PostgreSQL server for tests and benches, in a temporary directory on a free port.
//!
//! `initdb` and `postgres` refuse to run as root, and CI runs as root: then both run as the
//! user `nobody`, in a directory handed over to it. The server is started through a small
//! shell that stops it when the test process's end closes its stdin, so that no server
//! outlives the tests even when they are killed.

use std::io::Write;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running PostgreSQL server with a database `weft` and a superuser `weft`, password
/// `secret`.
pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// The TCP port it listens on (127.0.0.1).
    pub port: u16,
    shell: Child,
    user: Option<(u32, u32)>,
}

/// The PostgreSQL server binaries: `/usr/lib/postgresql/<newest>/bin`, else the folder of
/// `initdb` on `PATH`.
fn bin_dir() -> Result<PathBuf, String> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path().join("bin"))
                .collect()
        })
        .unwrap_or_default();
    versions.retain(|b| b.join("initdb").is_file());
    versions.sort_by_key(|b| {
        b.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    if let Some(b) = versions.pop() {
        return Ok(b);
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .find(|d| d.join("initdb").is_file())
        .ok_or_else(|| {
            "PostgreSQL is not installed (no initdb): apt-get install postgresql (.ci/run does)"
                .to_owned()
        })
}

/// uid and gid of `nobody`, from /etc/passwd.
fn nobody() -> Result<(u32, u32), String> {
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| format!("/etc/passwd: {e}"))?;
    passwd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.first() == Some(&"nobody") && f.len() > 3)
                .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
                .flatten()
        })
        .ok_or_else(|| "no user `nobody` in /etc/passwd to run PostgreSQL as".to_owned())
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

impl Postgres {
    /// Initialises and starts a server; waits until it answers.
    ///
    /// # Errors
    ///
    /// What failed, with the server's log.
    pub fn start() -> Result<Self, String> {
        Self::start_with(false)
    }

    /// [`Postgres::start`] with TLS offered (`ssl=on`; connections without it are still
    /// accepted): a certificate for `localhost` and `127.0.0.1` signed by a certificate
    /// authority made for this server, whose certificate (PEM) is `ca.pem` in
    /// [`Postgres::dir`]. Made with the `openssl` command.
    ///
    /// # Errors
    ///
    /// What failed, with the server's log or openssl's message.
    pub fn start_tls() -> Result<Self, String> {
        Self::start_with(true)
    }

    fn start_with(tls: bool) -> Result<Self, String> {
        let bin = bin_dir()?;
        let dir = tempfile::Builder::new()
            .prefix("weft-pg-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let user = if is_root() { Some(nobody()?) } else { None };
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))
                .map_err(|e| format!("chown {}: {e}", dir.path().display()))?;
        }
        let data = dir.path().join("data");
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, "secret\n").map_err(|e| format!("{e}"))?;
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(&pwfile, Some(uid), Some(gid)).map_err(|e| format!("{e}"))?;
        }
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "weft",
                "-A",
                "md5",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .arg(format!("--pwfile={}", pwfile.display()))
            .current_dir(dir.path());
        as_user(&mut initdb, user);
        let out = initdb.output().map_err(|e| format!("initdb: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "initdb failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let ssl = if tls {
            certificates(dir.path(), user)?;
            format!(
                "-c ssl=on -c ssl_cert_file='{0}/server.crt' -c ssl_key_file='{0}/server.key'",
                dir.path().display()
            )
        } else {
            String::new()
        };
        let port = free_port()?;
        // For benches that ask where PostgreSQL spends its time (`benches/hosts.rs`).
        let ssl = if std::env::var_os("WEFT_TEST_PG_STATEMENTS").is_some() {
            format!(
                "{ssl} -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_planning=on"
            )
        } else {
            ssl
        };
        let log = dir.path().join("server.log");
        // The shell stops the server when its stdin closes (the test process ended), then
        // removes the folder, which a server shared through a static is never dropped to do.
        // Between, it starts the server again whenever it stops, unless the file `down` in
        // the folder holds it down ([`Postgres::stop`], [`Postgres::start_again`]).
        let d = dir.path().display();
        let script = format!(
            "( while [ ! -e '{d}/stopped' ]; do \
                 while [ -e '{d}/down' ] && [ ! -e '{d}/stopped' ]; do sleep 0.05; done; \
                 [ -e '{d}/stopped' ] && break; \
                 '{}' -D '{}' -p {port} -k '{d}' -c listen_addresses=127.0.0.1 -c fsync=off \
                   -c synchronous_commit=off -c full_page_writes=off -c max_connections=60 {ssl} \
                   >>'{}' 2>&1; \
               done ) & loop=$!; \
             cat >/dev/null; touch '{d}/stopped'; \
             while kill -0 $loop 2>/dev/null; do \
               pid=$(head -n 1 '{}/postmaster.pid' 2>/dev/null); \
               [ -n \"$pid\" ] && kill -INT $pid 2>/dev/null; sleep 0.1; \
             done; rm -rf '{d}'",
            bin.join("postgres").display(),
            data.display(),
            log.display(),
            data.display(),
        );
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .current_dir(dir.path());
        as_user(&mut sh, user);
        let shell = sh.spawn().map_err(|e| format!("starting postgres: {e}"))?;
        let pg = Postgres {
            dir,
            bin,
            port,
            shell,
            user,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if pg.psql_in("postgres", "SELECT 1").is_ok() {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "PostgreSQL did not answer within 60 s; its log:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        pg.psql_in("postgres", "CREATE DATABASE weft")?;
        Ok(pg)
    }

    /// The JDBC URL of the database `weft`.
    pub fn jdbc_url(&self) -> String {
        format!("jdbc:postgresql://127.0.0.1:{}/weft", self.port)
    }

    /// Runs SQL in the database `weft` with psql; returns the rows, `|` between values.
    ///
    /// # Errors
    ///
    /// psql's message.
    pub fn psql(&self, sql: &str) -> Result<String, String> {
        self.psql_in("weft", sql)
    }

    /// [`Postgres::psql`] in database `db`.
    ///
    /// # Errors
    ///
    /// psql's message.
    pub fn psql_in(&self, db: &str, sql: &str) -> Result<String, String> {
        let psql = if self.bin.join("psql").is_file() {
            self.bin.join("psql")
        } else {
            PathBuf::from("psql")
        };
        let mut c = Command::new(psql);
        c.args([
            "-X",
            "-q",
            "-At",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            "127.0.0.1",
            "-U",
            "weft",
        ])
        .arg("-p")
        .arg(self.port.to_string())
        .arg("-d")
        .arg(db)
        .env("PGPASSWORD", "secret")
        .env("PGTZ", "UTC")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = c.spawn().map_err(|e| format!("psql: {e}"))?;
        if let Some(mut i) = child.stdin.take() {
            i.write_all(sql.as_bytes())
                .map_err(|e| format!("psql: {e}"))?;
        }
        let out = child.wait_with_output().map_err(|e| format!("psql: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// Runs the client program `tool` of the server's installation (`pg_dump`, `pg_restore`)
    /// as user `weft` against it, with `args` after the connection's.
    ///
    /// # Errors
    ///
    /// The program's message.
    pub fn client_tool(&self, tool: &str, args: &[&str]) -> Result<String, String> {
        let program = if self.bin.join(tool).is_file() {
            self.bin.join(tool)
        } else {
            PathBuf::from(tool)
        };
        let out = Command::new(program)
            .args(["-h", "127.0.0.1", "-U", "weft", "-p"])
            .arg(self.port.to_string())
            .args(args)
            .env("PGPASSWORD", "secret")
            .env("PGTZ", "UTC")
            .output()
            .map_err(|e| format!("{tool}: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!("{tool}: {}", String::from_utf8_lossy(&out.stderr)))
        }
    }

    /// The server's folder.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Stops the server as an administrator's restart does (a fast shutdown: every session
    /// is cut, nothing more is accepted) and keeps it down until [`Postgres::start_again`];
    /// answers once it no longer answers.
    ///
    /// # Errors
    ///
    /// Its process cannot be told, or it still answers after 30 s.
    pub fn stop(&self) -> Result<(), String> {
        let down = self.dir.path().join("down");
        std::fs::write(&down, "").map_err(|e| format!("{}: {e}", down.display()))?;
        let pidfile = self.dir.path().join("data").join("postmaster.pid");
        let pid =
            std::fs::read_to_string(&pidfile).map_err(|e| format!("{}: {e}", pidfile.display()))?;
        let pid = pid.lines().next().unwrap_or_default().trim().to_owned();
        let out = Command::new("kill")
            .args(["-INT", &pid])
            .output()
            .map_err(|e| format!("kill: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "kill -INT {pid}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while pidfile.exists() || self.psql_in("postgres", "SELECT 1").is_ok() {
            if Instant::now() > deadline {
                return Err("PostgreSQL still answers 30 s after a fast shutdown".to_owned());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Starts the server [`Postgres::stop`] stopped, on the same port and data; answers once
    /// it answers.
    ///
    /// # Errors
    ///
    /// It does not answer within 60 s (with its log).
    pub fn start_again(&self) -> Result<(), String> {
        let down = self.dir.path().join("down");
        std::fs::remove_file(&down).map_err(|e| format!("{}: {e}", down.display()))?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.psql_in("postgres", "SELECT 1").is_err() {
            if Instant::now() > deadline {
                return Err(format!(
                    "PostgreSQL did not answer within 60 s of its start; its log:\n{}",
                    std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

/// A certificate authority (`ca.pem`) and a server certificate for `localhost` and
/// `127.0.0.1` signed by it (`server.crt`, `server.key`, the key readable by the server's
/// user only, as PostgreSQL requires), in `dir`. The SMTP test server uses them too.
pub fn certificates(dir: &Path, user: Option<(u32, u32)>) -> Result<(), String> {
    let openssl = |args: &[&str]| -> Result<(), String> {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .map_err(|e| format!("openssl (apt-get install openssl): {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "openssl {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    };
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .map_err(|e| format!("server.ext: {e}"))?;
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=weft test CA",
    ])?;
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
    ])?;
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "2",
        "-extfile",
        "server.ext",
    ])?;
    let key = dir.join("server.key");
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .map_err(|e| format!("{}: {e}", key.display()))?;
    if let Some((uid, gid)) = user {
        for f in ["server.key", "server.crt"] {
            std::os::unix::fs::chown(dir.join(f), Some(uid), Some(gid))
                .map_err(|e| format!("chown {f}: {e}"))?;
        }
    }
    Ok(())
}

fn as_user(c: &mut Command, user: Option<(u32, u32)>) {
    if let Some((uid, gid)) = user {
        c.uid(uid).gid(gid).env("HOME", "/tmp");
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // Closing stdin makes the shell stop the server and wait for it.
        drop(self.shell.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.shell.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.shell.kill();
        let _ = self.shell.wait();
        let _ = self.user;
    }
}
