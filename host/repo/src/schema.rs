//! The repository schema: its versions, oldest first ([`MIGRATIONS`]), the same for both
//! backends. Each step is written in SQLite's SQL; PostgreSQL runs it as [`postgres_ddl`]
//! translates it (wider integers, identity ids, its own random text), so that the two never
//! drift apart. A released migration is never edited: a change is a new entry at the end,
//! together with a fixture of the previous version in `tests/fixtures/` that a test upgrades.
//! How a backend records its version and applies the steps is its own (`sqlite::migrations`,
//! `postgres::migrations`).
//!
//! # The repository schema
//!
//! The detail behind docs/ARCHITECTURE.md's map.
//!
//! `repo::schema::MIGRATIONS` lists the steps, one list for both backends; the version is
//! `PRAGMA user_version` on SQLite and the table `weft_schema_version` on PostgreSQL.
//! `weft schema` (`bin/deploySchema.sh`) and the server's start bring a repository of any earlier
//! version to the latest in one transaction; a newer repository is refused and left untouched. A
//! released migration is never edited (an insta snapshot of all migrations shows any edit), and
//! each new version comes with a fixture of the previous one in `tests/fixtures/`, which tests
//! upgrade.
//!
//! | version | adds |
//! |---|---|
//! | 1 | `folders`, `connections`, `sheets`, `nodes`, `edges` |
//! | 2 | `deploy_history` |
//! | 3 | `batch_instances`, `instance_actions` |
//! | 4 | `batches`, `service_batch_next_run` (`batch_id`, `start_dt` as wall-clock text in the service time zone); `batch_instances.batch_id`, `planned_start`, `late_seconds` |
//! | 5 | `repository_identity` (a random id, part of every commit marker), `instance_actions.attempt` |
//! | 6 | `sheets.plans` (the stored plans of a sheet's actions); the upgrade fills it from each definition (a Rust step after the SQL, `Migration::then`), leaving NULL, with a warning, where a definition cannot be read |
//! | 7 | `instance_actions.rows_deleted` |
//! | 8 | `hosts` (heartbeats), `instance_actions.host` and `waits_for`, `instance_action_deps` (each action's dependencies as rows; filled from `depends_on`) |
//! | 9 | `deploys` (a committed deploy's number and time; earlier history lines grouped by their time), `deploy_history.deploy_id` and `name` (filled from the definitions), `missed_starts` (planned starts passed without a run, with why), the index `instance_actions(sheet_id, instance_id)` |
//! | 10 | `hosts.process` (the process holding each host id: boot id, pid, start time) |
//! | 11 | `data_flow` (the data graph: the objects each action reads and writes with dependency `Y`, keyed by action), `sheets.flow_recorded` (sheets stored before it get their lines at the next deploy) |
//! | 12 | on PostgreSQL, triggers that notify `weft_instances` at the commit of every change to instances and their actions |
//! | 13 | `instance_action_deps` keyed by (instance, action depended on, action), without the index of dependents; `instance_sheets` (the sheets each instance ran, one row each) in place of the index `instance_actions(sheet_id, instance_id)`; no index `instance_actions(instance_id, state)` (the index of ready actions, by state and instance, serves those look-ups); `plans_versions` (the deploy that wrote each sheet's plans; none for plans stored before; a table of its own, as SQLite reads a column stored after a row's 3 MB of plans only by walking them) |
//! | 14 | `sheet_plans` (each sheet's plans by version: the current one, which `plans_versions` names, and those instances still run), written once by the deploy and shared by every instance that runs them; `instance_sheets.version` (the plans an instance runs of each sheet); `sheets.plans` and `instance_actions.plan` gone (the upgrade keeps each instance's plans as its own version, minus its id) |
//! | 15 | `instance_actions.deploy_id` (the deploy whose plans the action's last attempt ran: a restart may take plans deployed since its instance started) |
//! | 16 | `backfills` (a batch's planned starts over a range of dates, run in order a bounded number at a time) |
//! | 17 | batch dependencies (`batches.after_batches`, how long to wait and what then), `manual_runs`, action priorities |
//! | 18 | notifications: `notification_setup`, `batches.notifications`, the outbox `notifications` |
//! | 19 | retries: `instance_actions.retries` and what goes with them, `action_attempts`, `batches.retry` |
//! | 20 | `template_modules` (modules defined in documents as SQL templates: the id made from the name, the name, the definition as JSON) |
//! | 21 | `users` (name, role, the folders its deploy and operate rights are limited to, disabled), `user_tokens` (each token's id and the Argon2id hash of its secret, expiry, revocation, last use), `audit` (append-only: when, which host, who, by what, from where, the command, its outcome, what it touched), `deploys.user_name` |
//! | 22 | `batches.paused_at`, `paused_by` (an operator's pause of a schedule, `PauseBatch`; a deploy leaves it) |

use crate::error::{Error, Result};
use crate::sql::{Session, args};

/// One schema step.
#[derive(Debug)]
pub struct Migration {
    /// What it adds, for `weft schema` to print.
    pub summary: &'static str,
    /// The SQL, run as one batch.
    pub sql: &'static str,
    /// What PostgreSQL runs after it (what SQLite has no use for), as one batch.
    pub postgres: Option<&'static str>,
    /// What the SQL cannot do, run after it in the same transaction (filling a new column
    /// from what the rows hold).
    pub then: Option<fn(&dyn Session) -> Result<()>>,
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
        postgres: None,
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
        postgres: None,
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
        postgres: None,
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
        postgres: None,
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
        postgres: None,
        then: None,
    },
    Migration {
        summary: "each sheet's action plans beside its definition, so that a run reads them without reading the definition again",
        sql: "
ALTER TABLE sheets ADD COLUMN plans TEXT;
",
        postgres: None,
        then: Some(fill_plans),
    },
    Migration {
        summary: "the rows each action deleted from its targets",
        sql: "
ALTER TABLE instance_actions ADD COLUMN rows_deleted INTEGER NOT NULL DEFAULT 0;
",
        postgres: None,
        then: None,
    },
    Migration {
        summary: "several hosts on one repository: the hosts and their heartbeats, the host running each action, each action's dependencies as rows and how many of them it still waits for, so that whichever host ends an action decides in the repository what follows",
        sql: "
CREATE TABLE hosts (
    id           TEXT PRIMARY KEY,
    url          TEXT NOT NULL,
    slots        INTEGER NOT NULL,
    started_at   TEXT NOT NULL,
    heartbeat_ms INTEGER NOT NULL
);
ALTER TABLE instance_actions ADD COLUMN host TEXT;
ALTER TABLE instance_actions ADD COLUMN waits_for INTEGER NOT NULL DEFAULT 0;
CREATE TABLE instance_action_deps (
    instance_id INTEGER NOT NULL REFERENCES batch_instances(id) ON DELETE CASCADE,
    action_id   INTEGER NOT NULL,
    depends_on  INTEGER NOT NULL,
    PRIMARY KEY (instance_id, action_id, depends_on)
);
CREATE INDEX instance_action_deps_dependents ON instance_action_deps(instance_id, depends_on, action_id);
CREATE INDEX instance_actions_ready ON instance_actions(state, instance_id, action_id);
CREATE INDEX instance_actions_instance_state ON instance_actions(instance_id, state);
",
        postgres: None,
        then: Some(fill_dependencies),
    },
    Migration {
        summary: "deploys: each committed deploy numbered, its history lines tied to it (earlier lines grouped by their time) and naming what changed; the scheduled starts passed over, with why; the actions of a sheet found by an index",
        sql: "
CREATE TABLE deploys (
    id          INTEGER PRIMARY KEY,
    deployed_at TEXT NOT NULL
);
ALTER TABLE deploy_history ADD COLUMN deploy_id INTEGER REFERENCES deploys(id);
ALTER TABLE deploy_history ADD COLUMN name TEXT;
INSERT INTO deploys (deployed_at) SELECT DISTINCT deployed_at FROM deploy_history ORDER BY deployed_at;
UPDATE deploy_history SET deploy_id = (SELECT d.id FROM deploys d WHERE d.deployed_at = deploy_history.deployed_at);
CREATE INDEX deploy_history_deploy ON deploy_history(deploy_id, id);
CREATE TABLE missed_starts (
    id         INTEGER PRIMARY KEY,
    batch_id   INTEGER NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
    planned    TEXT NOT NULL,
    decided_at TEXT NOT NULL,
    reason     TEXT NOT NULL
);
CREATE INDEX missed_starts_batch ON missed_starts(batch_id, id);
CREATE INDEX instance_actions_sheet ON instance_actions(sheet_id, instance_id);
",
        postgres: None,
        then: Some(fill_history_names),
    },
    Migration {
        summary: "the process holding each host id (its machine's boot id, its process id and start time), so that a second process started with a copy of a host's HOME is refused while the first lives, and a host restarted after a crash need not wait out its lease",
        sql: "
ALTER TABLE hosts ADD COLUMN process TEXT;
",
        postgres: None,
        then: None,
    },
    Migration {
        summary: "the repository's data graph: which objects each action reads and writes (as its object type names them), so that a deploy finds a cycle it closes without reading every plan; sheets stored before it get theirs at the next deploy",
        sql: "
CREATE TABLE data_flow (
    action_id     INTEGER NOT NULL,
    writes        INTEGER NOT NULL,
    connection_id INTEGER NOT NULL,
    schema_name   TEXT NOT NULL,
    object_name   TEXT NOT NULL,
    PRIMARY KEY (action_id, writes, connection_id, schema_name, object_name)
) WITHOUT ROWID;
CREATE INDEX data_flow_object ON data_flow(connection_id, object_name, schema_name, writes);
ALTER TABLE sheets ADD COLUMN flow_recorded INTEGER;
CREATE INDEX sheets_flow_unrecorded ON sheets(id) WHERE flow_recorded IS NULL;
",
        postgres: None,
        then: None,
    },
    Migration {
        summary: "on PostgreSQL, a notice on the channel `weft_instances` at the commit of every change to instances and their actions, so that the hosts' waits wake at a change instead of polling (SQLite, one host's, needs none)",
        sql: "
-- PostgreSQL only (a statement that changed no rows, such as a claim that found nothing
-- ready, notifies nothing; one transaction's notices are one, sent at its commit).
",
        postgres: Some(
            "
CREATE FUNCTION weft_instances_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM changed) THEN
        PERFORM pg_notify('weft_instances', '');
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER batch_instances_insert AFTER INSERT ON batch_instances
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION weft_instances_changed();
CREATE TRIGGER batch_instances_update AFTER UPDATE ON batch_instances
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION weft_instances_changed();
CREATE TRIGGER batch_instances_delete AFTER DELETE ON batch_instances
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION weft_instances_changed();
CREATE TRIGGER instance_actions_insert AFTER INSERT ON instance_actions
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION weft_instances_changed();
CREATE TRIGGER instance_actions_update AFTER UPDATE ON instance_actions
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION weft_instances_changed();
CREATE TRIGGER instance_actions_delete AFTER DELETE ON instance_actions
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION weft_instances_changed();
",
        ),
        then: None,
    },
    Migration {
        summary: "a run's start and each action's end write fewer index entries: each action's dependencies keyed by the action depended on (one b-tree a row on SQLite instead of three), the sheets an instance ran as rows of their own instead of an index over every action, and the actions of an instance in a state found through the index of ready actions (state, instance, action) instead of one of their own; each sheet's plans carry the number of the deploy that wrote them, so that a run reads the 3 MB of a large sheet's plans only when they changed",
        sql: "
CREATE TABLE instance_action_dependents (
    instance_id INTEGER NOT NULL REFERENCES batch_instances(id) ON DELETE CASCADE,
    depends_on  INTEGER NOT NULL,
    action_id   INTEGER NOT NULL,
    PRIMARY KEY (instance_id, depends_on, action_id)
) WITHOUT ROWID;
INSERT INTO instance_action_dependents (instance_id, depends_on, action_id)
    SELECT instance_id, depends_on, action_id FROM instance_action_deps;
DROP TABLE instance_action_deps;
ALTER TABLE instance_action_dependents RENAME TO instance_action_deps;
CREATE TABLE instance_sheets (
    sheet_id    INTEGER NOT NULL,
    instance_id INTEGER NOT NULL REFERENCES batch_instances(id) ON DELETE CASCADE,
    PRIMARY KEY (sheet_id, instance_id)
) WITHOUT ROWID;
CREATE INDEX instance_sheets_instance ON instance_sheets(instance_id);
INSERT INTO instance_sheets (sheet_id, instance_id)
    SELECT DISTINCT sheet_id, instance_id FROM instance_actions;
DROP INDEX instance_actions_sheet;
DROP INDEX instance_actions_instance_state;
CREATE TABLE plans_versions (
    sheet_id INTEGER PRIMARY KEY REFERENCES sheets(id) ON DELETE CASCADE,
    version  INTEGER NOT NULL
);
",
        postgres: None,
        then: None,
    },
    Migration {
        summary: "each sheet's plans stored once per version and shared by the instances that run them: a run's start writes which plans each of its sheets runs, not a copy of every action's plan (3 MB for a sheet of 10,000 actions); a deploy keeps the plans of a sheet's earlier versions while an instance runs them",
        sql: "
CREATE TABLE sheet_plans (
    sheet_id INTEGER NOT NULL,
    version  INTEGER NOT NULL,
    plans    TEXT NOT NULL,
    PRIMARY KEY (sheet_id, version)
);
INSERT INTO plans_versions (sheet_id, version)
    SELECT id, 0 FROM sheets
    WHERE plans IS NOT NULL AND id NOT IN (SELECT sheet_id FROM plans_versions);
INSERT INTO sheet_plans (sheet_id, version, plans)
    SELECT s.id, v.version, s.plans FROM sheets s JOIN plans_versions v ON v.sheet_id = s.id
    WHERE s.plans IS NOT NULL;
ALTER TABLE instance_sheets ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
INSERT INTO sheet_plans (sheet_id, version, plans)
    SELECT sheet_id, -instance_id, '[' || string_agg(plan, ',') || ']'
    FROM instance_actions GROUP BY instance_id, sheet_id;
UPDATE instance_sheets SET version = -instance_id;
ALTER TABLE instance_actions DROP COLUMN plan;
ALTER TABLE sheets DROP COLUMN plans;
",
        postgres: None,
        then: None,
    },
    Migration {
        summary: "each action's attempt records the deploy whose plans it ran (`instance_actions.deploy_id`), as a restart may run an instance's failed actions with plans deployed since it started",
        sql: "
ALTER TABLE instance_actions ADD COLUMN deploy_id INTEGER;
",
        postgres: None,
        then: None,
    },
    Migration {
        summary: "backfills: a batch's planned starts over a range of dates, each started as an instance of its own (with that planned start and its schedule date) in order and a bounded number at a time, by whichever host sees a free place first; each instance names its backfill",
        sql: "
CREATE TABLE backfills (
    id         INTEGER PRIMARY KEY,
    batch_id   INTEGER NOT NULL,
    batch_name TEXT NOT NULL,
    user_name  TEXT NOT NULL,
    parallel   INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE backfill_starts (
    backfill_id   INTEGER NOT NULL REFERENCES backfills(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    planned_start TEXT NOT NULL,
    instance_id   INTEGER,
    error         TEXT,
    PRIMARY KEY (backfill_id, seq)
);
CREATE INDEX backfill_starts_pending ON backfill_starts(backfill_id, seq) WHERE instance_id IS NULL AND error IS NULL;
ALTER TABLE batch_instances ADD COLUMN backfill_id INTEGER;
CREATE INDEX batch_instances_backfill ON batch_instances(backfill_id, state) WHERE backfill_id IS NOT NULL;
",
        postgres: None,
        then: None,
    },
    Migration {
        summary: "batch dependencies: the batches (ids, JSON) whose runs of the same schedule date a scheduled start of a batch waits for, how many minutes at most, and what then (skip or start); whether a batch's runs exclude manual runs of its actions; each action's priority, the ready ones of a priority above 0 found by an index of their own",
        sql: "
ALTER TABLE batches ADD COLUMN after_batches TEXT NOT NULL DEFAULT '[]';
ALTER TABLE batches ADD COLUMN after_timeout_minutes INTEGER NOT NULL DEFAULT 120;
ALTER TABLE batches ADD COLUMN after_timeout TEXT NOT NULL DEFAULT 'skip';
ALTER TABLE batches ADD COLUMN manual_runs TEXT NOT NULL DEFAULT 'allow';
ALTER TABLE instance_actions ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
CREATE INDEX instance_actions_urgent ON instance_actions(priority DESC, instance_id, action_id) WHERE state = 'W' AND priority > 0;
CREATE INDEX batch_instances_planned ON batch_instances(batch_id, planned_start) WHERE batch_id IS NOT NULL;
",
        postgres: None,
        then: None,
    },
    Migration {
        summary: "notifications: the deployed setup (channels and the rules for every batch, one row of JSON), each batch's own rules, and the outbox the events of a run write into in their own transaction, sent by one host at a time (its claim), tried again until sent or given up",
        sql: "
CREATE TABLE notification_setup (
    id         INTEGER PRIMARY KEY,
    definition TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
ALTER TABLE batches ADD COLUMN notifications TEXT NOT NULL DEFAULT '[]';
CREATE TABLE notifications (
    id            INTEGER PRIMARY KEY,
    event_key     TEXT NOT NULL UNIQUE,
    event         TEXT NOT NULL,
    batch_name    TEXT NOT NULL,
    instance_id   INTEGER,
    action_id     INTEGER,
    channel       TEXT NOT NULL,
    message       TEXT NOT NULL,
    state         TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    next_at       TEXT NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    claimed_by    TEXT,
    claimed_until TEXT,
    sent_at       TEXT,
    last_error    TEXT
);
CREATE INDEX notifications_due ON notifications(next_at) WHERE state = 'pending';
CREATE INDEX notifications_instance ON notifications(instance_id) WHERE instance_id IS NOT NULL;
",
        postgres: None,
        then: None,
    },
    Migration {
        summary: "retries: each action of a run with how often and after what pause it is tried again, and on which failures (its own attributes, else its batch's default), how often it was, and when it may be claimed again; each failed try kept; a batch's default",
        sql: "
ALTER TABLE instance_actions ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE instance_actions ADD COLUMN retry_delay_seconds INTEGER NOT NULL DEFAULT 60;
ALTER TABLE instance_actions ADD COLUMN retry_on TEXT NOT NULL DEFAULT 'connection';
ALTER TABLE instance_actions ADD COLUMN retried INTEGER NOT NULL DEFAULT 0;
ALTER TABLE instance_actions ADD COLUMN free_retried INTEGER NOT NULL DEFAULT 0;
ALTER TABLE instance_actions ADD COLUMN ready_at TEXT;
CREATE TABLE action_attempts (
    instance_id INTEGER NOT NULL REFERENCES batch_instances(id) ON DELETE CASCADE,
    action_id   INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    host        TEXT,
    started_at  TEXT,
    ended_at    TEXT NOT NULL,
    error       TEXT NOT NULL,
    counted     INTEGER NOT NULL,
    retry_at    TEXT NOT NULL,
    PRIMARY KEY (instance_id, action_id, attempt)
);
ALTER TABLE batches ADD COLUMN retry TEXT NOT NULL DEFAULT '{}';
",
        postgres: None,
        then: None,
    },
    Migration {
        summary: "template modules: modules defined in documents as SQL templates with typed attributes, stored by name as deployed (their definition as JSON)",
        sql: "
CREATE TABLE template_modules (
    id         BIGINT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    definition TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
",
        postgres: None,
        then: None,
    },
    Migration {
        summary: "users and their tokens (each token's Argon2id hash, never the token), the audit of who did what from where, and who made each deploy",
        sql: "
CREATE TABLE users (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    role        TEXT NOT NULL,
    folders     TEXT NOT NULL DEFAULT '[]',
    disabled_at TEXT,
    created_at  TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE TABLE user_tokens (
    id           TEXT PRIMARY KEY,
    user_id      INTEGER NOT NULL REFERENCES users(id),
    hash         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    expires_at   TEXT,
    revoked_at   TEXT,
    last_used_at TEXT
);
CREATE INDEX user_tokens_user ON user_tokens(user_id);
CREATE TABLE audit (
    id        INTEGER PRIMARY KEY,
    at        TEXT NOT NULL,
    host      TEXT NOT NULL,
    user_name TEXT NOT NULL,
    via       TEXT NOT NULL,
    client    TEXT NOT NULL,
    command   TEXT NOT NULL,
    outcome   TEXT NOT NULL,
    what      TEXT NOT NULL
);
CREATE INDEX audit_at ON audit(at);
ALTER TABLE deploys ADD COLUMN user_name TEXT;
",
        postgres: None,
        then: None,
    },
    Migration {
        summary: "a batch paused by an operator (who, when), which deploys leave as it is",
        sql: "
ALTER TABLE batches ADD COLUMN paused_at TEXT;
ALTER TABLE batches ADD COLUMN paused_by TEXT;
",
        postgres: None,
        then: None,
    },
];

/// The channel PostgreSQL notifies at the commit of a change to instances or their actions
/// (schema version 12's triggers); `repo::postgres::changes` listens on it.
pub const CHANGES_CHANNEL: &str = "weft_instances";

/// Version 6: the plans of every stored sheet, read from its definition once. A sheet whose
/// definition cannot be read keeps none (NULL): it cannot run until it is deployed again,
/// which a run of it says, as it did before.
fn fill_plans(conn: &dyn Session) -> Result<()> {
    let sheets: Vec<(i64, String)> =
        conn.rows("SELECT id, definition FROM sheets", args![], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    for (id, definition) in sheets {
        let sheet = match read_definition(id, &definition) {
            Ok(sheet) => sheet,
            Err(e) => {
                tracing::warn!(message = "A stored sheet cannot be read; it cannot run until it is deployed again.", sheet_id = id, error = %e);
                continue;
            }
        };
        let plans = serde_json::to_string(&weft_core::plan::stored_plans(&sheet))
            .map_err(|e| Error::Corrupt(format!("sheet {id}: {e}")))?;
        conn.execute(
            "UPDATE sheets SET plans = ?2 WHERE id = ?1",
            args![id, plans],
        )?;
    }
    Ok(())
}

/// Version 8: the dependencies of every stored action as rows (from its `depends_on` list),
/// and how many of them a waiting (`D`) action still waits for.
fn fill_dependencies(conn: &dyn Session) -> Result<()> {
    let actions: Vec<(i64, i64, String, String)> = conn.rows(
        "SELECT instance_id, action_id, depends_on, state FROM instance_actions",
        args![],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )?;
    let finished: std::collections::HashSet<(i64, i64)> = actions
        .iter()
        .filter(|a| a.3 == "F")
        .map(|a| (a.0, a.1))
        .collect();
    for (instance, action, depends_on, state) in &actions {
        let deps: Vec<i64> = serde_json::from_str(depends_on).map_err(|e| {
            Error::Corrupt(format!(
                "the dependencies of action {action} of batch instance {instance}: {e}"
            ))
        })?;
        let mut deps = deps;
        deps.sort_unstable();
        deps.dedup();
        for d in &deps {
            conn.execute(
                "INSERT INTO instance_action_deps (instance_id, action_id, depends_on) VALUES (?1, ?2, ?3)",
                args![instance, action, d],
            )?;
        }
        if state == "D" {
            let waits = deps
                .iter()
                .filter(|d| !finished.contains(&(*instance, **d)))
                .count() as i64;
            conn.execute(
                "UPDATE instance_actions SET waits_for = ?3 WHERE instance_id = ?1 AND action_id = ?2",
                args![instance, action, waits],
            )?;
        }
    }
    Ok(())
}

/// Version 9: the name of what each history line changed, read from the definition it
/// kept (a folder's path; a connection's, sheet's or batch's name). A line whose definition
/// cannot be read keeps none.
fn fill_history_names(conn: &dyn Session) -> Result<()> {
    // A page of lines at a time: a long history's definitions are not all held at once.
    let mut after = 0;
    loop {
        let lines: Vec<(i64, String, Option<String>)> = conn.rows(
            "SELECT id, kind, definition FROM deploy_history WHERE id > ?1 ORDER BY id LIMIT 500",
            args![after],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let Some(last) = lines.last() else {
            return Ok(());
        };
        after = last.0;
        name_lines(conn, lines)?;
    }
}

/// Fills the name of each of `lines` (id, kind, definition) that its definition gives.
fn name_lines(conn: &dyn Session, lines: Vec<(i64, String, Option<String>)>) -> Result<()> {
    for (id, kind, definition) in lines {
        let name = definition
            .and_then(|d| serde_json::from_str::<serde_json::Value>(&d).ok())
            .and_then(|v| {
                let named = match kind.as_str() {
                    "folder" => v.get("path"),
                    "sheet" => v.get("attributes").and_then(|a| a.get("name")),
                    _ => v.get("name"),
                };
                named.and_then(|n| n.as_str()).map(str::to_owned)
            });
        if let Some(name) = name {
            conn.execute(
                "UPDATE deploy_history SET name = ?2 WHERE id = ?1",
                args![id, name],
            )?;
        }
    }
    Ok(())
}

/// The schema version this program writes.
pub fn latest() -> i64 {
    MIGRATIONS.len() as i64
}

/// What an upgrade did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upgrade {
    /// Version before.
    pub from: i64,
    /// Version after.
    pub to: i64,
}

/// Runs the steps from version `from` to `target` (at most the latest) on `s`, inside the
/// caller's transaction: each step's SQL as `ddl` gives it for the backend, then its `then`,
/// then `record` of the version it leads to. Answers the version reached.
///
/// # Errors
///
/// [`Error::TooNew`] when `from` is past `target` or the latest (nothing is run);
/// [`Error::Migration`] with the failing step's version.
pub fn run_steps(
    s: &dyn Session,
    from: i64,
    target: i64,
    ddl: impl Fn(&str) -> String,
    record: impl Fn(i64) -> Result<()>,
) -> Result<i64> {
    let last = target.min(latest());
    if from > last {
        return Err(Error::TooNew {
            found: from,
            latest: last,
        });
    }
    for (i, m) in MIGRATIONS
        .iter()
        .enumerate()
        .take(last as usize)
        .skip(from as usize)
    {
        let to = i as i64 + 1;
        let failed = |e: Error| Error::Migration {
            version: to,
            source: Box::new(e),
        };
        s.execute_batch(&ddl(m.sql)).map_err(failed)?;
        if let Some(pg) = m
            .postgres
            .filter(|_| s.dialect() == super::sql::Dialect::Postgres)
        {
            s.execute_batch(pg).map_err(failed)?;
        }
        if let Some(then) = m.then {
            then(s).map_err(failed)?;
        }
        record(to).map_err(failed)?;
    }
    Ok(last.max(from))
}

/// A step's SQL as PostgreSQL runs it: every `INTEGER` is a `BIGINT` (SQLite's integers are
/// 64 bits), an `id INTEGER PRIMARY KEY` is an identity column (SQLite assigns such an id
/// when none is given; PostgreSQL does from the column's sequence), and SQLite's random hex
/// text is PostgreSQL's.
pub fn postgres_ddl(sqlite: &str) -> String {
    // A column `id INTEGER PRIMARY KEY` (however aligned) on a line of its own.
    let mut out: String = sqlite
        .split_inclusive('\n')
        .map(|line| {
            let body = line.trim_start();
            let indent = &line[..line.len() - body.len()];
            match body
                .strip_prefix("id")
                .filter(|rest| rest.starts_with(char::is_whitespace))
                .map(str::trim_start)
                .and_then(|rest| rest.strip_prefix("INTEGER PRIMARY KEY"))
            {
                Some(after) => {
                    format!("{indent}id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY{after}")
                }
                None => line.to_owned(),
            }
        })
        .collect::<String>()
        .replace(
            "lower(hex(randomblob(8)))",
            "substr(md5(random()::text || clock_timestamp()::text), 1, 16)",
        )
        // A table clustered by its key is SQLite's choice; PostgreSQL has its own heap.
        .replace(") WITHOUT ROWID;", ");");
    // The other INTEGERs, as whole words (column types and casts).
    let mut widened = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(p) = rest.find("INTEGER") {
        let before = rest[..p].chars().next_back();
        let after = rest[p + 7..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        widened.push_str(&rest[..p]);
        widened.push_str(if word(before) || word(after) {
            "INTEGER"
        } else {
            "BIGINT"
        });
        rest = &rest[p + 7..];
    }
    widened.push_str(rest);
    out = widened;
    out
}

/// A stored sheet definition read back (only a schema upgrade does: runs read plans).
///
/// # Errors
///
/// [`Error::Corrupt`] when the definition cannot be read.
fn read_definition(id: i64, definition: &str) -> Result<weft_dsr::model::Sheet> {
    let doc = format!("{{\"version\": 1, \"transformationData\": {{\"sheets\": [{definition}]}}}}");
    let (doc, problems) = weft_dsr::parse(&doc);
    doc.filter(|_| !problems.has_errors())
        .and_then(|d| d.sheets.into_iter().next())
        .ok_or_else(|| Error::Corrupt(format!("sheet {id}: its stored definition cannot be read")))
}

#[cfg(test)]
mod tests {
    use super::postgres_ddl;

    #[test]
    fn postgresql_gets_wide_integers_identity_ids_and_its_own_random_text() {
        assert_eq!(
            postgres_ddl(
                "CREATE TABLE t (\n    id          INTEGER PRIMARY KEY,\n    n INTEGER NOT NULL,\n    INTEGERS_SEEN TEXT\n);\nINSERT INTO r (id) VALUES (lower(hex(randomblob(8))));\nALTER TABLE t ADD COLUMN k INTEGER;\nCREATE TABLE k (a INTEGER NOT NULL, PRIMARY KEY (a)) WITHOUT ROWID;"
            ),
            "CREATE TABLE t (\n    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,\n    n BIGINT NOT NULL,\n    INTEGERS_SEEN TEXT\n);\nINSERT INTO r (id) VALUES (substr(md5(random()::text || clock_timestamp()::text), 1, 16));\nALTER TABLE t ADD COLUMN k BIGINT;\nCREATE TABLE k (a BIGINT NOT NULL, PRIMARY KEY (a));"
        );
    }
}
