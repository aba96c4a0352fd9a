//! The native `postgresql` connection type: a bridge plugin on `tokio-postgres` (the
//! rust-postgres family's client), driven from plain threads, with its own pool and rustls
//! for TLS.
//!
//! A key file entry is `N|postgresql|URL|USER|PASSWORD|OPTIONS`: the URL is
//! `postgresql://HOST:PORT/DATABASE` or a `host=... dbname=...` string (both as libpq reads
//! them); OPTIONS are `sslmode` (`disable`, `prefer` (the default), `require`,
//! `verify-full`), `sslrootcert` (a PEM file of the certificates `verify-full` trusts; else
//! Mozilla's roots), `application_name` (default `weft`), `connect_timeout` (seconds, default
//! 10), `idle_timeout` (seconds a connection is kept for reuse, default 30; 0: not kept) and
//! `search_path`. docs/postgresql.md has the whole page: the type table, halting, the
//! limits.
//!
//! - [`clock`]: the clock functions `current_local_timestamp()` and
//!   `is_dst_change_tonight()` on PostgreSQL connections;
//! - [`connection`]: the [`weft_sdk::DatabaseConnection`] over a [`session::Session`];
//! - [`values`]: values between PostgreSQL's binary format and weft's;
//! - [`placeholders`]: `?` parameters numbered `$1`, `$2`, ...;
//! - [`pool`]: idle connections kept for reuse;
//! - [`session`]: a tokio-postgres client and its connection driven from a plain thread;
//! - [`tls`]: the rustls configurations of the `sslmode`s.

// `export_plugin!` expands to abi_stable's export code, which is unsafe; this crate writes
// no unsafe code of its own.
#![allow(unsafe_code)]

pub mod clock;
pub mod connection;
pub mod placeholders;
pub mod pool;
pub mod session;
pub mod tls;
pub mod values;

use std::str::FromStr;
use std::time::Duration;
use tokio_postgres::config::{Host, SslMode};
use weft_sdk::{Connection, ConnectionBridge, ErrorKind, KeyEntry, PluginError, PluginResult};

/// The connection type this bridge serves.
pub const CONNECTION_TYPE: &str = "postgresql";

/// What an error says, with its causes: `tokio_postgres::Error` shows only its kind
/// ("db error"),
/// so the server's message, detail, hint and position, or the I/O cause, are added here.
pub fn describe_error(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut m = format!("{} ({})", db.message(), db.code().code());
        if let Some(d) = db.detail() {
            m.push_str(&format!("; {d}"));
        }
        if let Some(h) = db.hint() {
            m.push_str(&format!("; hint: {h}"));
        }
        if let Some(tokio_postgres::error::ErrorPosition::Original(p)) = db.position() {
            m.push_str(&format!("; at character {p}"));
        }
        return m;
    }
    let mut m = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        m.push_str(&format!(": {c}"));
        cause = c.source();
    }
    m
}

/// The bridge.
#[derive(Debug, Default)]
pub struct PostgresBridge;

/// What an entry asks for, read from its URL and options.
struct Target {
    config: tokio_postgres::Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    /// host:port, for messages.
    place: String,
    /// How long a connection of the entry is kept idle for reuse.
    idle: Duration,
}

fn refuse(key: &str, m: impl std::fmt::Display) -> PluginError {
    PluginError::of(ErrorKind::Connection, format!("connection {key}: {m}"))
}

fn target(entry: &KeyEntry) -> PluginResult<Target> {
    let key = entry.key();
    let url = entry.url().trim();
    let mut config = tokio_postgres::Config::from_str(url).map_err(|e| {
        refuse(
            key,
            format!(
                "the URL is not a PostgreSQL URL (postgresql://HOST:PORT/DATABASE) or `host=... dbname=...` string: {}",
                describe_error(&e)
            ),
        )
    })?;
    if !entry.user().is_empty() {
        config.user(entry.user());
    }
    if !entry.password().is_empty() {
        config.password(entry.password());
    }
    config.application_name("weft");
    config.connect_timeout(Duration::from_secs(10));
    let mut mode = "prefer".to_owned();
    let mut root_cert = None;
    let mut idle = pool::DEFAULT_IDLE;
    for (k, v) in entry.options() {
        match k {
            "sslmode" => mode = v.trim().to_owned(),
            "sslrootcert" => root_cert = Some(v.trim().to_owned()),
            "application_name" => {
                config.application_name(v);
            }
            "connect_timeout" => {
                let secs: u64 = v.trim().parse().map_err(|_| {
                    refuse(
                        key,
                        format!("connect_timeout is a number of seconds, not `{v}`"),
                    )
                })?;
                config.connect_timeout(Duration::from_secs(secs.max(1)));
            }
            "idle_timeout" => {
                let secs: u64 = v.trim().parse().map_err(|_| {
                    refuse(
                        key,
                        format!("idle_timeout is a number of seconds, not `{v}`"),
                    )
                })?;
                idle = Duration::from_secs(secs);
            }
            "search_path" => {
                config.options(format!("-c search_path={}", v.trim()));
            }
            k if k.starts_with("weft.") => {}
            other => {
                return Err(refuse(
                    key,
                    format!(
                        "unknown option `{other}` (known: sslmode, sslrootcert, application_name, connect_timeout, idle_timeout, search_path)"
                    ),
                ));
            }
        }
    }
    let (ssl, tls) = tls::connector(&mode, root_cert.as_deref()).map_err(|m| refuse(key, m))?;
    config.ssl_mode(ssl);
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    Ok(Target {
        config,
        tls,
        place: format!("{host}:{port}"),
        idle,
    })
}

impl ConnectionBridge for PostgresBridge {
    fn connection_type(&self) -> String {
        CONNECTION_TYPE.to_owned()
    }

    fn open(&self, entry: &KeyEntry) -> PluginResult<Connection> {
        let key = entry.key();
        let t = target(entry)?;
        // Connections are pooled by everything that makes them: URL, user, password, options.
        let slot: pool::Slot = {
            // Not the host's `weft.` options: the clock's instant changes at every open.
            let options: Vec<String> = entry
                .options()
                .filter(|(k, _)| !k.starts_with("weft."))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            format!(
                "{}\u{1}{}\u{1}{}\u{1}{}",
                entry.url(),
                entry.user(),
                entry.password(),
                options.join(";")
            )
        };
        let client = match pool::take(&slot) {
            Some(c) => c,
            None => session::Session::connect(&t.config, t.tls.clone()).map_err(|e| {
                refuse(
                    key,
                    format!(
                        "cannot connect to PostgreSQL at {} as `{}`: {}",
                        t.place,
                        entry.user(),
                        e
                    ),
                )
            })?,
        };
        Ok(Connection::new(connection::PgConnection::new(
            client,
            slot,
            key,
            t.tls,
            t.config,
            clock::ServiceClock::of(entry),
            t.idle,
        )))
    }
}

/// What `SslMode` and connector an `sslmode` option asks for.
pub fn ssl_mode_of(mode: &str) -> Option<SslMode> {
    match mode {
        "disable" => Some(SslMode::Disable),
        "prefer" => Some(SslMode::Prefer),
        "require" | "verify-full" => Some(SslMode::Require),
        _ => None,
    }
}

weft_sdk::export_plugin! {
    modules: [],
    object_types: [],
    bridges: [PostgresBridge],
}
