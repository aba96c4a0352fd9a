//! The PostgreSQL repository: the key file's entry 0 with type `postgresql` names the
//! database. Its versioned schema ([`migrations`]), a small pool of connections (each
//! statement prepared once per connection, `session`), transactions that begin and commit
//! on one of them, and a full logical [`Postgres::dump`]. The store's statements are the ones the
//! SQLite backend runs (`crate::writer`, `instances`, `schedules`).
//!
//! Several hosts may share the database: a deploy's transaction holds an advisory lock
//! ([`DEPLOY_LOCK`]), so that two deploys never number new ids from the same maxima, and a
//! schema upgrade holds one of its own.

pub mod changes;
pub mod migrations;
pub mod session;

use super::sql::{Session, args};
use crate::error::{Error, Result};
use session::{Conn, PgSession};
use std::sync::Mutex;

/// The advisory lock every deploy transaction takes first (`weftdply` in ASCII, cut to 63
/// bits).
pub const DEPLOY_LOCK: i64 = 0x7765_6674_6470_6c79;

/// The advisory lock of a new instance's transaction: hosts count the waiting instances and
/// add one, one at a time.
pub const INSTANCE_LOCK: i64 = 0x7765_6674_696e_7374;

/// The advisory lock every claim of actions takes (`weftclam`): one claim at a time over all
/// hosts, so that no two claims each see the other's action still waiting and start two
/// writers of one table (`work::claim`).
pub const CLAIM_LOCK: i64 = 0x7765_6674_636c_616d;

/// How many idle connections are kept for the next request.
const MAX_IDLE: usize = 8;

/// What the repository's entry asks for.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The URL (`postgresql://HOST:PORT/DATABASE` or `host=... dbname=...`).
    pub url: String,
    /// The user.
    pub user: String,
    /// The password.
    pub password: String,
    /// The options (`sslmode`, `sslrootcert`, `application_name`, `connect_timeout`).
    pub options: Vec<(String, String)>,
}

impl Entry {
    /// Entry 0 of `keys`, when its type is `postgresql` (the repository lives there), its
    /// password asked of its secret store's program when it names one.
    ///
    /// # Errors
    ///
    /// [`Error::PostgresOpen`] when that program fails.
    pub fn of(keys: &weft_core::keys::KeyFile) -> Result<Option<Self>> {
        let Some(e) = keys
            .get("0")
            .filter(|e| e.kind == weft_core::connect::POSTGRESQL)
        else {
            return Ok(None);
        };
        let e = e.resolved().map_err(|err| Error::PostgresOpen {
            place: "entry 0 of the key file".to_owned(),
            message: err.to_string(),
        })?;
        Ok(Some(Entry {
            url: e.url.clone(),
            user: e.user.clone(),
            password: e.password.clone(),
            options: e.options.clone(),
        }))
    }
}

/// The PostgreSQL repository of a running server.
pub struct Postgres {
    config: weft_pg_client::tokio_postgres::Config,
    tls: weft_pg_client::tls::MakeRustlsConnect,
    place: String,
    idle: Mutex<Vec<Conn>>,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field("place", &self.place)
            .finish_non_exhaustive()
    }
}

impl Postgres {
    /// Connects to the repository of `entry` and brings its schema to the current version.
    ///
    /// # Errors
    ///
    /// [`Error::PostgresOpen`] when the entry is wrong or the server cannot be reached or
    /// refuses; the errors of [`migrations::to_latest`].
    pub fn open(entry: &Entry) -> Result<Self> {
        let repo = Self::connect(entry)?;
        let mut conn = repo.take()?;
        migrations::to_latest(&mut conn)?;
        repo.give(conn);
        Ok(repo)
    }

    /// Connects to the repository of `entry` without touching its schema.
    ///
    /// # Errors
    ///
    /// [`Error::PostgresOpen`] when the entry is wrong or the server cannot be reached.
    pub fn connect(entry: &Entry) -> Result<Self> {
        let (target, rest) = weft_pg_client::target(
            &entry.url,
            &entry.user,
            &entry.password,
            entry.options.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        )
        .map_err(|message| Error::PostgresOpen {
            place: "entry 0 of the key file".to_owned(),
            message,
        })?;
        if let Some((k, _)) = rest.first() {
            return Err(Error::PostgresOpen {
                place: target.place,
                message: format!(
                    "entry 0 has the option `{k}`, which the repository does not take (it takes {})",
                    weft_pg_client::CONNECTION_OPTIONS.join(", ")
                ),
            });
        }
        let repo = Postgres {
            config: target.config,
            tls: target.tls,
            place: target.place,
            idle: Mutex::new(Vec::new()),
        };
        // Reached now, so that a wrong entry is said at start.
        let conn = repo.take()?;
        repo.give(conn);
        Ok(repo)
    }

    /// Starts this repository's change feed ([`changes`]), telling `listener`.
    ///
    /// # Errors
    ///
    /// When its thread cannot be started.
    pub fn listen(
        &self,
        listener: std::sync::Arc<dyn changes::Listener>,
    ) -> std::io::Result<changes::Feed> {
        changes::listen(self.config.clone(), self.tls.clone(), listener)
    }

    /// `host:port` of the server.
    pub fn place(&self) -> &str {
        &self.place
    }

    fn take(&self) -> Result<Conn> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop();
        if let Some(c) = idle.filter(|c| !c.is_closed()) {
            return Ok(c);
        }
        weft_pg_client::Session::connect(&self.config, self.tls.clone())
            .map(Conn::new)
            .map_err(|message| Error::PostgresOpen {
                place: self.place.clone(),
                message,
            })
    }

    fn give(&self, conn: Conn) {
        if conn.is_closed() {
            return;
        }
        let mut idle = self
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }

    /// Runs `f` on a connection outside any explicit transaction (each statement its own).
    ///
    /// # Errors
    ///
    /// What `f` returns, or a failure to connect.
    pub fn with<R>(&self, f: impl FnOnce(&dyn Session) -> Result<R>) -> Result<R> {
        let mut conn = self.take()?;
        let out = f(&PgSession::new(&mut conn));
        self.give(conn);
        out
    }

    /// Runs `f` in one transaction, committed when it returns `Ok((value, true))` and rolled
    /// back otherwise; `lock`, when given, is an advisory lock taken first.
    ///
    /// # Errors
    ///
    /// What `f` returns, or a failure to connect, begin or commit.
    pub fn tx_if<R>(
        &self,
        lock: Option<i64>,
        f: impl FnOnce(&dyn Session) -> Result<(R, bool)>,
    ) -> Result<R> {
        let mut conn = self.take()?;
        // The lock is taken in the message that begins the transaction, which goes with the
        // transaction's first statements (one round trip for all).
        conn.begin_later(match lock {
            Some(l) => format!("BEGIN; SELECT pg_advisory_xact_lock({l})"),
            None => "BEGIN".to_owned(),
        });
        let out = f(&PgSession::new(&mut conn));
        let end = conn.end(matches!(&out, Ok((_, true))));
        self.give(conn);
        let (value, _) = out?;
        end?;
        Ok(value)
    }

    /// The schema version, read without changing anything.
    ///
    /// # Errors
    ///
    /// When it cannot be read.
    pub fn schema_version(&self) -> Result<i64> {
        self.with(migrations::version)
    }

    /// Brings the schema to the current version.
    ///
    /// # Errors
    ///
    /// As [`migrations::to_latest`].
    pub fn upgrade(&self) -> Result<super::schema::Upgrade> {
        let mut conn = self.take()?;
        let out = migrations::to_latest(&mut conn);
        self.give(conn);
        out
    }

    /// Brings the schema to version `target` (tests make earlier versions with it).
    ///
    /// # Errors
    ///
    /// As [`migrations::to_version`].
    pub fn upgrade_to(&self, target: i64) -> Result<super::schema::Upgrade> {
        let mut conn = self.take()?;
        let out = migrations::to_version(&mut conn, target);
        self.give(conn);
        out
    }

    /// The whole repository as text, as `sqlite::dump` writes it: the schema version, each
    /// table's columns, and every row of every table in a stable order.
    ///
    /// # Errors
    ///
    /// A repository error while reading.
    pub fn dump(&self) -> Result<String> {
        self.with(dump)
    }
}

fn dump(s: &dyn Session) -> Result<String> {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "version {}", migrations::version(s)?);
    let tables: Vec<String> = s.rows(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name",
        args![],
        |r| r.get(0),
    )?;
    for table in tables {
        let columns: Vec<String> = s.rows(
            "SELECT column_name || ' ' || data_type || CASE WHEN is_nullable = 'NO' THEN ' NOT NULL' ELSE '' END FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?1 ORDER BY ordinal_position",
            args![table],
            |r| r.get(0),
        )?;
        let _ = writeln!(out, "-- {table} ({})", columns.join(", "));
        if table == crate::sqlite::dump::LIVENESS {
            continue;
        }
        let q = format!(
            "SELECT * FROM \"{}\" ORDER BY 1",
            table.replace('"', "\"\"")
        );
        s.query(&q, args![], &mut |r| {
            let line: Vec<String> =
                r.0.iter()
                    .map(|v| match v {
                        super::sql::Value::Null => "NULL".to_owned(),
                        super::sql::Value::Int(i) => i.to_string(),
                        super::sql::Value::Real(f) => format!("{f:?}"),
                        super::sql::Value::Text(t) => format!("{t:?}"),
                        super::sql::Value::Bytes(b) => format!(
                            "x'{}'",
                            b.iter().map(|c| format!("{c:02x}")).collect::<String>()
                        ),
                    })
                    .collect();
            out.push_str(&line.join("|"));
            out.push('\n');
            Ok(())
        })?;
    }
    Ok(out)
}
