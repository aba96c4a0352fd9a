//! The repository schema and its migrations (what `weft schema` and `bin/deploySchema.sh`
//! run, and the server runs on start).
//!
//! The schema version is `PRAGMA user_version`; [`MIGRATIONS`] lists, in order, the SQL
//! that brings a repository from version `n` to `n + 1`. A repository of any earlier version
//! is brought to the latest in one transaction: a failing step leaves it as it was. A
//! released migration is never edited: a change is a new entry at the end, together with a
//! fixture of the previous version in `tests/fixtures/` that a test upgrades.

use crate::repo::{Error, Result};
use rusqlite::{Connection, TransactionBehavior};

/// One schema step.
#[derive(Debug)]
pub struct Migration {
    /// What it adds, for `weft schema` to print.
    pub summary: &'static str,
    /// The SQL, run as one batch.
    pub sql: &'static str,
    /// What the SQL cannot do, run after it in the same transaction (filling a new column
    /// from what the rows hold).
    pub then: Option<fn(&Connection) -> Result<()>>,
}

/// Every migration, oldest first; entry `i` leads to version `i + 1`.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        summary: "folders, connections, sheets with their nodes and edges",
        sql: "
CREATE TABLE folders (
    id            INTEGER PRIMARY KEY,
    path          TEXT NOT NULL UNIQUE,
    documentation TEXT,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);
CREATE TABLE connections (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    schema_name TEXT,
    type        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE TABLE sheets (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL,
    order_key     TEXT NOT NULL,
    folder_id     INTEGER NOT NULL REFERENCES folders(id),
    documentation TEXT,
    definition    TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);
CREATE INDEX sheets_folder ON sheets(folder_id);
CREATE TABLE nodes (
    id             INTEGER PRIMARY KEY,
    sheet_id       INTEGER NOT NULL REFERENCES sheets(id) ON DELETE CASCADE,
    type           INTEGER NOT NULL,
    x              INTEGER NOT NULL,
    y              INTEGER NOT NULL,
    width          INTEGER NOT NULL,
    height         INTEGER NOT NULL,
    module         TEXT,
    name           TEXT,
    documentation  TEXT,
    action         TEXT,
    attributes     TEXT,
    field1         TEXT,
    field2         TEXT,
    field3         TEXT,
    object_type_id INTEGER,
    connection_id  INTEGER,
    dependency     TEXT
);
CREATE INDEX nodes_sheet ON nodes(sheet_id);
CREATE TABLE edges (
    id        INTEGER PRIMARY KEY,
    sheet_id  INTEGER NOT NULL REFERENCES sheets(id) ON DELETE CASCADE,
    from_node INTEGER NOT NULL,
    to_node   INTEGER NOT NULL
);
CREATE INDEX edges_sheet ON edges(sheet_id);
",
        then: None,
    },
    Migration {
        summary: "deploy history: one row for every real change of a folder, connection or sheet",
        sql: "
CREATE TABLE deploy_history (
    id          INTEGER PRIMARY KEY,
    deployed_at TEXT NOT NULL,
    kind        TEXT NOT NULL,
    object_id   INTEGER NOT NULL,
    change      TEXT NOT NULL,
    definition  TEXT
);
CREATE INDEX deploy_history_object ON deploy_history(kind, object_id);
",
        then: None,
    },
    Migration {
        summary: "batch instances and their actions, with states, row counts, errors and logs",
        sql: "
CREATE TABLE batch_instances (
    id             INTEGER PRIMARY KEY,
    batch_name     TEXT NOT NULL,
    user_name      TEXT NOT NULL,
    state          TEXT NOT NULL,
    started_at     TEXT NOT NULL,
    ended_at       TEXT,
    elements       TEXT NOT NULL,
    variables      TEXT NOT NULL,
    halt_requested INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX batch_instances_state ON batch_instances(state);
CREATE TABLE instance_actions (
    instance_id  INTEGER NOT NULL REFERENCES batch_instances(id) ON DELETE CASCADE,
    action_id    INTEGER NOT NULL,
    sheet_id     INTEGER NOT NULL,
    name         TEXT NOT NULL,
    module       TEXT NOT NULL,
    plan         TEXT NOT NULL,
    depends_on   TEXT NOT NULL,
    state        TEXT NOT NULL,
    started_at   TEXT,
    ended_at     TEXT,
    rows_read    INTEGER NOT NULL DEFAULT 0,
    rows_written INTEGER NOT NULL DEFAULT 0,
    rows_updated INTEGER NOT NULL DEFAULT 0,
    error        TEXT,
    log          TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (instance_id, action_id)
);
",
        then: None,
    },
    Migration {
        summary: "scheduled batches, service_batch_next_run (planned starts as wall-clock text in the service time zone), and the batch, planned start and lateness of scheduled instances",
        sql: "
CREATE TABLE batches (
    id             INTEGER PRIMARY KEY,
    name           TEXT NOT NULL,
    schedule       TEXT NOT NULL,
    spring_gap     TEXT NOT NULL DEFAULT 'next',
    autumn_overlap TEXT NOT NULL DEFAULT 'first',
    if_running     TEXT NOT NULL DEFAULT 'skip',
    enabled        INTEGER NOT NULL DEFAULT 1,
    elements       TEXT NOT NULL,
    variables      TEXT NOT NULL,
    documentation  TEXT,
    second_of      TEXT,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL
);
CREATE TABLE service_batch_next_run (
    batch_id INTEGER PRIMARY KEY REFERENCES batches(id) ON DELETE CASCADE,
    start_dt TEXT NOT NULL
);
CREATE INDEX service_batch_next_run_start ON service_batch_next_run(start_dt);
ALTER TABLE batch_instances ADD COLUMN batch_id INTEGER;
ALTER TABLE batch_instances ADD COLUMN planned_start TEXT;
ALTER TABLE batch_instances ADD COLUMN late_seconds INTEGER;
CREATE INDEX batch_instances_batch ON batch_instances(batch_id, state);
",
        then: None,
    },
    Migration {
        summary: "the repository's own random identity and the attempt of every action run, which together name the commit marker an action leaves in its target, and the connections an attempt wrote without one",
        sql: "
CREATE TABLE repository_identity (
    id TEXT NOT NULL
);
INSERT INTO repository_identity (id) VALUES (lower(hex(randomblob(8))));
ALTER TABLE instance_actions ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
ALTER TABLE instance_actions ADD COLUMN unmarked TEXT;
",
        then: None,
    },
    Migration {
        summary: "each sheet's action plans beside its definition, so that a run reads them without reading the definition again",
        sql: "
ALTER TABLE sheets ADD COLUMN plans TEXT;
",
        then: Some(fill_plans),
    },
    Migration {
        summary: "the rows each action deleted from its targets",
        sql: "
ALTER TABLE instance_actions ADD COLUMN rows_deleted INTEGER NOT NULL DEFAULT 0;
",
        then: None,
    },
];

/// Version 6: the plans of every stored sheet, read from its definition once. A sheet whose
/// definition cannot be read keeps none (NULL): it cannot run until it is deployed again,
/// which a run of it says, as it did before.
fn fill_plans(conn: &Connection) -> Result<()> {
    let sheets: Vec<(i64, String)> = conn
        .prepare("SELECT id, definition FROM sheets")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (id, definition) in sheets {
        let sheet = match super::read_definition(id, &definition) {
            Ok(sheet) => sheet,
            Err(e) => {
                tracing::warn!(message = "A stored sheet cannot be read; it cannot run until it is deployed again.", sheet_id = id, error = %e);
                continue;
            }
        };
        let plans = serde_json::to_string(&crate::plan::stored_plans(&sheet))
            .map_err(|e| Error::Corrupt(format!("sheet {id}: {e}")))?;
        conn.execute(
            "UPDATE sheets SET plans = ?2 WHERE id = ?1",
            rusqlite::params![id, plans],
        )?;
    }
    Ok(())
}

/// The schema version this program writes.
pub fn latest() -> i64 {
    MIGRATIONS.len() as i64
}

/// The schema version of the open repository (0 for an empty file).
///
/// # Errors
///
/// When the pragma cannot be read.
pub fn version(conn: &Connection) -> Result<i64> {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|e| Error::with_sql(e, "PRAGMA user_version"))
}

/// What an upgrade did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upgrade {
    /// Version before.
    pub from: i64,
    /// Version after.
    pub to: i64,
}

/// Brings the repository to the latest schema version in one transaction.
///
/// # Errors
///
/// [`Error::TooNew`] when the file is newer than this program (nothing is changed), or
/// [`Error::Migration`] when a step fails (nothing is changed).
pub fn to_latest(conn: &mut Connection) -> Result<Upgrade> {
    to_version(conn, latest())
}

/// Brings the repository to schema version `target` (at most the latest). Tests use it to
/// make fixtures of earlier versions.
///
/// # Errors
///
/// As [`to_latest`]; also when `target` is below the file's version.
pub fn to_version(conn: &mut Connection, target: i64) -> Result<Upgrade> {
    let latest = latest();
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| Error::with_sql(e, "BEGIN IMMEDIATE"))?;
    let from = version(&tx)?;
    if from > latest || from > target {
        return Err(Error::TooNew {
            found: from,
            latest: target.min(latest),
        });
    }
    for (i, m) in MIGRATIONS
        .iter()
        .enumerate()
        .take(target.min(latest) as usize)
        .skip(from as usize)
    {
        let to = i as i64 + 1;
        tx.execute_batch(m.sql).map_err(|source| Error::Migration {
            version: to,
            source,
        })?;
        if let Some(then) = m.then {
            then(&tx)?;
        }
        tx.pragma_update(None, "user_version", to)
            .map_err(|source| Error::Migration {
                version: to,
                source,
            })?;
    }
    let to = version(&tx)?;
    tx.commit().map_err(|e| Error::with_sql(e, "COMMIT"))?;
    Ok(Upgrade { from, to })
}
