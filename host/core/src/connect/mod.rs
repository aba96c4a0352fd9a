//! Connections for runs: the native SQLite type lives here ([`sqlite`]), and the commit
//! markers written through any connection ([`marker`]); every other type
//! (`jdbc`, ...) is opened by the bridge plugin that serves it.

pub mod marker;
pub mod sqlite;

use crate::keys::Entry;
use crate::plugins::Registry;
use weft_sdk::{Connection, ErrorKind, KeyEntry, PluginError};

/// The native connection type.
pub const SQLITE: &str = crate::plugins::NATIVE_SQLITE;

/// Opens the connection of key file `entry`.
///
/// # Errors
///
/// When its type has no bridge, or the connection cannot be opened.
pub fn open(entry: &Entry, registry: &Registry) -> Result<Connection, PluginError> {
    open_in(entry, registry, None)
}

/// [`open`] with the connection's default schema (its `schema` in the repository), which a
/// bridge gets as the option [`KeyEntry::DEFAULT_SCHEMA`]. The native SQLite type has no
/// schemas to choose from (an attached database is named in the object), so it ignores it.
///
/// # Errors
///
/// As [`open`].
pub fn open_in(
    entry: &Entry,
    registry: &Registry,
    schema: Option<&str>,
) -> Result<Connection, PluginError> {
    counted(entry, registry, open_uncounted(entry, registry, schema))
}

/// `opened`, counted for `/metrics` when it failed: by its connection type when that is
/// one this server knows (labels from a closed set), else as `other`.
fn counted(
    entry: &Entry,
    registry: &Registry,
    opened: Result<Connection, PluginError>,
) -> Result<Connection, PluginError> {
    if opened.is_err() {
        let known = entry.kind == SQLITE || registry.bridge(&entry.kind).is_some();
        crate::metrics::connection_failed(if known { &entry.kind } else { "other" });
    }
    opened
}

fn open_uncounted(
    entry: &Entry,
    registry: &Registry,
    schema: Option<&str>,
) -> Result<Connection, PluginError> {
    // A password from a secret store's program, asked now.
    let entry = entry
        .resolved()
        .map_err(|e| PluginError::of(ErrorKind::Connection, e.to_string()))?;
    let entry = entry.as_ref();
    if entry.kind == SQLITE {
        return Ok(sqlite::open(&entry.key, &entry.url)?.boxed());
    }
    let Some(bridge) = registry.bridge(&entry.kind) else {
        let mut known = vec![SQLITE.to_owned()];
        known.extend(registry.connection_types());
        return Err(PluginError::of(
            ErrorKind::Connection,
            format!(
                "connection {}: no plugin serves connection type `{}` (known types: {})",
                entry.key,
                entry.kind,
                known.join(", ")
            ),
        ));
    };
    let key = KeyEntry::new(
        &entry.key,
        &entry.kind,
        &entry.url,
        &entry.user,
        &entry.password,
        entry
            .options
            .iter()
            .filter(|(k, _)| !k.starts_with("weft."))
            .chain(registry.bridge_options())
            .cloned()
            .chain(clock_options())
            .chain(
                schema
                    .filter(|s| !s.is_empty())
                    .map(|s| (KeyEntry::DEFAULT_SCHEMA.to_owned(), s.to_owned())),
            )
            .collect(),
    );
    bridge.open(&key).into_result()
}

/// The service clock and zone as a bridge gets them ([`KeyEntry::SERVICE_ZONE`] and the
/// options beside it), for the clock functions of its connections.
fn clock_options() -> [(String, String); 3] {
    let t = crate::sched::clock::current();
    [
        (KeyEntry::SERVICE_ZONE.to_owned(), t.zone.name().to_owned()),
        (
            KeyEntry::SERVICE_NOW.to_owned(),
            t.clock
                .now()
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        ),
        (
            KeyEntry::SERVICE_CLOCK.to_owned(),
            if t.clock.is_stepped() {
                "stepped"
            } else {
                "running"
            }
            .to_owned(),
        ),
    ]
}

/// [`open`] for a short look (a deploy checking its objects): a native SQLite connection
/// waits at most about 10 ms for a writer of its file, then fails with "database is locked".
///
/// # Errors
///
/// As [`open`].
pub fn open_briefly(
    entry: &Entry,
    registry: &Registry,
    schema: Option<&str>,
) -> Result<Connection, PluginError> {
    if entry.kind == SQLITE {
        return counted(
            entry,
            registry,
            sqlite::open(&entry.key, &entry.url).map(|c| c.briefly().boxed()),
        );
    }
    open_in(entry, registry, schema)
}

/// The native PostgreSQL connection type (the bridge plugin `plugins/postgres`).
pub const POSTGRESQL: &str = "postgresql";

/// The SQL dialect of a connection type and URL, for validation before anything is opened.
pub fn dialect_of(kind: &str, url: &str) -> weft_sdk::Dialect {
    match kind {
        SQLITE => weft_sdk::Dialect::Sqlite,
        POSTGRESQL => weft_sdk::Dialect::Postgres,
        _ => weft_sdk::Dialect::of_jdbc_url(url),
    }
}

/// The dialect a connection type names without its URL (a type that serves one database),
/// if it names one.
pub fn dialect_of_type(kind: &str) -> Option<weft_sdk::Dialect> {
    match kind {
        SQLITE => Some(weft_sdk::Dialect::Sqlite),
        POSTGRESQL => Some(weft_sdk::Dialect::Postgres),
        _ => None,
    }
}
