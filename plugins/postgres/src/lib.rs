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
//! - [`session`] and [`tls`] (from `weft_pg_client`, shared with the host's PostgreSQL
//!   repository): a tokio-postgres client driven from a plain thread, and `sslmode`.

// `export_plugin!` expands to abi_stable's export code, which is unsafe; this crate writes
// no unsafe code of its own.
#![allow(unsafe_code)]

pub mod clock;
pub mod connection;
pub mod placeholders;
pub mod pool;
pub mod values;

pub use weft_pg_client::{describe_error, session, tls};

use std::time::Duration;
use weft_sdk::{Connection, ConnectionBridge, ErrorKind, KeyEntry, PluginError, PluginResult};

/// The connection type this bridge serves.
pub const CONNECTION_TYPE: &str = "postgresql";

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
    let (t, rest) =
        weft_pg_client::target(entry.url(), entry.user(), entry.password(), entry.options())
            .map_err(|m| refuse(key, m))?;
    let mut config = t.config;
    let mut idle = pool::DEFAULT_IDLE;
    let mut configured_path = None;
    let mut schema = None;
    for (k, v) in rest {
        match k {
            "idle_timeout" => {
                let secs: u64 = v.trim().parse().map_err(|_| {
                    refuse(
                        key,
                        format!("idle_timeout is a number of seconds, not `{v}`"),
                    )
                })?;
                idle = Duration::from_secs(secs);
            }
            "search_path" => configured_path = Some(v.trim().to_owned()),
            KeyEntry::DEFAULT_SCHEMA => schema = Some(v.trim().to_owned()),
            k if k.starts_with("weft.") => {}
            other => {
                return Err(refuse(
                    key,
                    format!(
                        "unknown option `{other}` (known: {}, idle_timeout, search_path)",
                        weft_pg_client::CONNECTION_OPTIONS.join(", ")
                    ),
                ));
            }
        }
    }
    if let Some(path) = search_path(schema.as_deref(), configured_path.as_deref()) {
        config.options(startup_setting("search_path", &path));
    }
    Ok(Target {
        config,
        tls: t.tls,
        place: t.place,
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
            // Not the host's `weft.` options but the default schema: the clock's instant
            // changes at every open.
            let options: Vec<String> = entry
                .options()
                .filter(|(k, _)| !k.starts_with("weft.") || *k == KeyEntry::DEFAULT_SCHEMA)
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

/// The `search_path` of a session: the connection's default schema (the `.dsr` connection's
/// `schema`, quoted as one name) first, then the key file's `search_path` option, or, when
/// the entry has none, PostgreSQL's own default (`"$user", public`), so that what lives in
/// `public` (extensions, say) is still found. `None` when neither is given: the server's
/// setting stands.
fn search_path(schema: Option<&str>, configured: Option<&str>) -> Option<String> {
    let configured = configured.filter(|c| !c.is_empty());
    match schema.filter(|s| !s.is_empty()) {
        Some(s) => Some(format!(
            "\"{}\", {}",
            s.replace('"', "\"\""),
            configured.unwrap_or("\"$user\", public")
        )),
        None => configured.map(str::to_owned),
    }
}

/// `-c NAME=VALUE` as the startup packet's `options` carries it: the server splits it at
/// white space, so spaces and backslashes in the value are escaped with a backslash.
fn startup_setting(name: &str, value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        if c == '\\' || c.is_whitespace() {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    format!("-c {name}={escaped}")
}

weft_sdk::export_plugin! {
    modules: [],
    object_types: [],
    bridges: [PostgresBridge],
}

#[cfg(test)]
mod tests {
    use super::{search_path, startup_setting};

    #[test]
    fn the_default_schema_comes_first_in_the_search_path() {
        assert_eq!(search_path(None, None), None);
        assert_eq!(search_path(Some(""), Some("")), None);
        assert_eq!(
            search_path(None, Some("staging, public")).as_deref(),
            Some("staging, public")
        );
        assert_eq!(
            search_path(Some("mart"), None).as_deref(),
            Some("\"mart\", \"$user\", public")
        );
        assert_eq!(
            search_path(Some("Sales \"EU\""), Some("staging")).as_deref(),
            Some("\"Sales \"\"EU\"\"\", staging")
        );
    }

    #[test]
    fn a_startup_setting_escapes_white_space_and_backslashes() {
        assert_eq!(
            startup_setting("search_path", "\"a b\", c\\d"),
            "-c search_path=\"a\\ b\",\\ c\\\\d"
        );
    }
}
