//! Commit markers: what makes an action's effect on its targets count exactly once.
//!
//! Before an action's transaction on a target connection commits, a row naming the run
//! (`token`: repository identity, instance and its start, action, attempt) is inserted into
//! the table
//! `weft_commit_marker` of that target, in the same transaction. So the marker exists if
//! and only if the action's writes committed. When the server was killed between that
//! commit and recording `F` in the repository, its next start finds the marker and records
//! the action as finished instead of running it again ([`committed`]).
//!
//! The table is created on first use (`CREATE TABLE IF NOT EXISTS`, outside the action's
//! transaction; tried twice, as two actions may race to create it). On SQLite that happens
//! once per database and schema in a server's life ([`prepare_once`]): a table dropped or a
//! file replaced since is made again inside the action's transaction when its marker's
//! insert finds no table (SQLite's DDL is transactional, and a statement that cannot be
//! prepared leaves the transaction as it was). Where it cannot be (a
//! dialect without `IF NOT EXISTS`), or where the key file entry says
//! `weft.commit_marker=off` (a warehouse where weft may not create tables), the action runs
//! without one, says so in its log, and the repository records it before the action begins:
//! after a kill such an action is reported as "may have committed", and its effect on that
//! connection is at-least-once. Markers older than 30 days are deleted at most once an hour
//! per target in a server's life ([`prune_due`]): the delete reads the whole table, which a
//! busy target fills with a month of markers (it ran at every action of every hundredth
//! instance before).

use std::collections::HashSet;
use std::sync::{LazyLock, Mutex, PoisonError};
use weft_sdk::{Connection, Datum, Dialect, Value};

/// The SQLite databases (by key file entry and schema: [`place`]) whose marker table this
/// server made or found.
static PREPARED: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(|| Mutex::new(HashSet::new()));

/// When the markers of each target were last deleted by this server.
static PRUNED: LazyLock<Mutex<std::collections::HashMap<String, std::time::Instant>>> =
    LazyLock::new(|| Mutex::new(std::collections::HashMap::new()));

/// How often a target's old markers are deleted, at most.
const PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);

/// The marker table in every target database.
pub const TABLE: &str = "weft_commit_marker";

/// The key file option that turns markers off for a connection.
pub const OPTION: &str = "weft.commit_marker";

/// How long markers are kept.
const KEEP_DAYS: i64 = 30;

/// The run of one action that a marker names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The repository's identity (`repository_identity.id`), so that two weft servers
    /// writing the same target never take each other's markers.
    pub repository: String,
    /// The batch instance.
    pub instance: i64,
    /// When the instance started (digits of its start time): a repository restored from a
    /// backup may give a new instance an old id, never with the same start.
    pub started: String,
    /// The action.
    pub action: i64,
    /// Which run of the action in that instance (a restart runs it again).
    pub attempt: i64,
}

impl Run {
    /// The marker's key.
    pub fn token(&self) -> String {
        format!(
            "{}:{}:{}:{}:{}",
            self.repository, self.instance, self.started, self.action, self.attempt
        )
    }
}

/// Whether a key file entry allows markers.
pub fn enabled(entry: &crate::keys::Entry) -> bool {
    !entry.option(OPTION).is_some_and(|v| {
        matches!(
            v.to_ascii_lowercase().as_str(),
            "off" | "false" | "no" | "0"
        )
    })
}

/// Creates the marker table if it is missing (outside any transaction).
///
/// # Errors
///
/// What the database said: the action then runs without a marker on this connection.
pub fn prepare(conn: &mut Connection, schema: Option<&str>) -> Result<(), String> {
    let table = table(conn, schema);
    // One statement with no parameter, run as a prepared one: a connection that keeps its
    // statements (the native SQLite one) parses it once, not at every action.
    conn.execute(
        &format!(
            "CREATE TABLE IF NOT EXISTS {table} (token VARCHAR(120) NOT NULL PRIMARY KEY, committed_at VARCHAR(20) NOT NULL)"
        ),
        &[],
    )
    .map(|_| ())
    .map_err(|e| e.to_string())
}

/// Where a connection's markers live, as [`prepare_once`] knows it: its key file entry's
/// name, type and URL, and the schema.
pub fn place(entry: &crate::keys::Entry, schema: Option<&str>) -> String {
    format!(
        "{}\u{1f}{}\u{1f}{}\u{1f}{}",
        entry.key,
        entry.kind,
        entry.url,
        schema.unwrap_or_default()
    )
}

/// [`prepare`], once per `place` in this server's life where the database is SQLite (where
/// [`write()`] makes a missing table itself); at every call elsewhere.
///
/// # Errors
///
/// As [`prepare`].
pub fn prepare_once(
    conn: &mut Connection,
    schema: Option<&str>,
    place: &str,
) -> Result<(), String> {
    let sqlite = conn.dialect() == Dialect::Sqlite;
    let known = || {
        PREPARED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(place)
    };
    if sqlite && known() {
        return Ok(());
    }
    prepare(conn, schema)?;
    if sqlite {
        PREPARED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(place.to_owned());
    }
    Ok(())
}

/// Whether the markers of the target `place` (a connection and schema) are due to be
/// deleted when older than 30 days: at its first marker in this server's life, then once
/// an hour. Answers true once per due time (the caller deletes them).
pub fn prune_due(place: &str) -> bool {
    let mut pruned = PRUNED.lock().unwrap_or_else(PoisonError::into_inner);
    let now = std::time::Instant::now();
    match pruned.get(place) {
        Some(at) if now.duration_since(*at) < PRUNE_EVERY => false,
        _ => {
            pruned.insert(place.to_owned(), now);
            true
        }
    }
}

/// Inserts the marker of `run` inside the open transaction; with `prune`, first deletes the
/// markers older than 30 days ([`prune_due`] says when). On SQLite a table that is missing (dropped, or the
/// file replaced, since [`prepare_once`] knew it) is made first, in the transaction.
///
/// # Errors
///
/// What the database said (the action then fails and rolls back).
pub fn write(
    conn: &mut Connection,
    run: &Run,
    schema: Option<&str>,
    prune: bool,
) -> Result<(), String> {
    match insert(conn, run, schema, prune) {
        // Only a missing table: SQLite refuses that statement before it runs, leaving the
        // transaction as it was (an error that rolled it back must not be followed by a
        // marker committed on its own).
        Err(e) if conn.dialect() == Dialect::Sqlite && e.contains("no such table") => {
            prepare(conn, schema).map_err(|_| e)?;
            insert(conn, run, schema, prune)
        }
        done => done,
    }
}

fn insert(
    conn: &mut Connection,
    run: &Run,
    schema: Option<&str>,
    prune: bool,
) -> Result<(), String> {
    let table = table(conn, schema);
    let now = chrono::Utc::now();
    if prune {
        let before = (now - chrono::Duration::days(KEEP_DAYS))
            .format("%Y-%m-%d %H:%M:%S")
            .to_string();
        conn.execute(
            &format!("DELETE FROM {table} WHERE committed_at < ?"),
            &[Value::text(before)],
        )
        .map_err(|e| e.to_string())?;
    }
    conn.execute(
        &format!("INSERT INTO {table} (token, committed_at) VALUES (?, ?)"),
        &[
            Value::text(run.token()),
            Value::text(now.format("%Y-%m-%d %H:%M:%S").to_string()),
        ],
    )
    .map(|_| ())
    .map_err(|e| {
        format!("{e} (a login that may not write {TABLE} needs the key file option {OPTION}=off)")
    })
}

/// Whether the marker of `run` is in the target.
///
/// # Errors
///
/// What the database said, a missing table included: the caller cannot tell then, and
/// reports that the action may have committed.
pub fn committed(conn: &mut Connection, run: &Run, schema: Option<&str>) -> Result<bool, String> {
    match count(conn, run, schema) {
        Ok(n) => Ok(n > 0),
        // No table yet (the action stopped before it made one): with the table made now,
        // the answer is sure; a table that cannot be made leaves the first error standing.
        Err(first) => match prepare(conn, schema) {
            Ok(()) => count(conn, run, schema).map(|n| n > 0),
            Err(_) => Err(first),
        },
    }
}

/// Where the markers of a connection live: on PostgreSQL, in the connection's schema when
/// it names one (`schema` in the `.dsr` connection), written out, so that the table is one
/// whether that schema exists yet or not (unqualified, a table made before the schema was
/// would land in `public` and a later one in the schema); elsewhere, and without a schema,
/// where the connection puts an unqualified table.
fn table(conn: &Connection, schema: Option<&str>) -> String {
    match schema.filter(|s| !s.is_empty()) {
        Some(s) if conn.dialect() == weft_sdk::Dialect::Postgres => {
            format!("\"{}\".{TABLE}", s.replace('"', "\"\""))
        }
        _ => TABLE.to_owned(),
    }
}

fn count(conn: &mut Connection, run: &Run, schema: Option<&str>) -> Result<i64, String> {
    let table = table(conn, schema);
    let (_, rows) = conn
        .query_all(
            &format!("SELECT COUNT(*) FROM {table} WHERE token = ?"),
            &[Value::text(run.token())],
        )
        .map_err(|e| e.to_string())?;
    Ok(rows
        .first()
        .and_then(|r| r.first())
        .map(|v| match v.get() {
            Datum::Int(i) => i,
            Datum::Text(t) | Datum::Decimal(t) => t.parse().unwrap_or(0),
            Datum::Float(f) => f as i64,
            _ => 0,
        })
        .unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(instance: i64, action: i64) -> Run {
        Run {
            repository: "r".to_owned(),
            instance,
            started: "20261127000000".to_owned(),
            action,
            attempt: 1,
        }
    }

    /// Old markers are deleted when the caller says they are due, at the first marker of a
    /// target and then once an hour; other markers delete nothing.
    #[test]
    fn old_markers_go_when_due_once_an_hour_per_target() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("data.db");
        let mut conn = crate::connect::sqlite::open("data", &path.to_string_lossy())
            .expect("open")
            .boxed();
        prepare(&mut conn, None).expect("marker table");
        conn.execute(
            &format!(
                "INSERT INTO {TABLE} (token, committed_at) VALUES ('old', '2000-01-01 00:00:00')"
            ),
            &[],
        )
        .expect("an old marker");
        write(&mut conn, &run(100, 1), None, false).expect("write");
        assert_eq!(count_all(&mut conn), 2, "kept");
        write(&mut conn, &run(100, 2), None, true).expect("write");
        assert_eq!(
            count_all(&mut conn),
            2,
            "the old one gone, two new ones kept"
        );
        assert!(committed(&mut conn, &run(100, 1), None).expect("read"));
        assert!(committed(&mut conn, &run(100, 2), None).expect("read"));
        // Due at a target's first marker, then not again within the hour; each target apart.
        let place = format!("test\u{1f}{}", path.display());
        assert!(prune_due(&place));
        assert!(!prune_due(&place));
        assert!(prune_due(&format!("{place}-other")));
    }

    fn count_all(conn: &mut Connection) -> i64 {
        let (_, rows) = conn
            .query_all(&format!("SELECT COUNT(*) FROM {TABLE}"), &[])
            .expect("count");
        match rows.first().and_then(|r| r.first()).map(|v| v.get()) {
            Some(Datum::Int(n)) => n,
            other => panic!("{other:?}"),
        }
    }
}
