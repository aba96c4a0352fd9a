//! The answers that show batch instances (DESIGN.md section 1): an instance with its
//! actions (`GetBatchInstance`, `WaitBatchInstance`) and without them
//! (`ListBatchInstances`).

use crate::elements::Element;
use crate::states::{ActionState, InstanceState};
use serde::{Deserialize, Serialize};

/// An instance as monitoring shows it: what `ListBatchInstances` shows of it, its elements
/// and its actions.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Instance {
    /// The instance itself.
    #[serde(flatten)]
    pub summary: Listed,
    /// The elements asked for.
    pub elements: Vec<Element>,
    /// The day its actions' `${schedule_date}` is: the one the run set, else its planned
    /// start's, else its start's (service time zone).
    #[serde(
        default,
        rename = "scheduleDate",
        skip_serializing_if = "String::is_empty"
    )]
    pub schedule_date: String,
    /// Whether the run set `schedule_date` itself (a backfill, a rerun of a past day).
    #[serde(
        default,
        rename = "scheduleDateSet",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub schedule_date_set: bool,
    /// The actions.
    pub actions: Vec<Action>,
}

/// An instance without its actions.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Listed {
    /// Id.
    pub batch_instance_id: i64,
    /// Name.
    pub batch_name: String,
    /// User.
    pub user: String,
    /// State word.
    pub state: InstanceState,
    /// Start, UTC ISO 8601.
    pub start: String,
    /// End, UTC ISO 8601.
    pub end: Option<String>,
    /// The scheduled batch that started it, if the scheduler did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_id: Option<i64>,
    /// The planned start it was started for, for a scheduled run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_start: Option<String>,
    /// Whether that planned start was the second occurrence of a wall-clock time the autumn
    /// clock change repeats (the two 02:30 of the night look alike otherwise).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub planned_second: bool,
    /// How many seconds after its planned start it started, for a scheduled run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_seconds: Option<i64>,
    /// Whether it started late, for a scheduled run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late: Option<bool>,
    /// The hosts its running actions run on (in `ListBatchInstances`, while it runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub running_on: Vec<String>,
    /// The backfill it is part of (`BackfillBatch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backfill_id: Option<i64>,
}

/// An action of an instance.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    /// Action id.
    pub action_id: i64,
    /// Sheet id.
    pub sheet_id: i64,
    /// Name.
    pub name: String,
    /// Module.
    pub module: String,
    /// State letter: D W R F E S H.
    pub state: ActionState,
    /// Start, UTC ISO 8601.
    pub start: Option<String>,
    /// End, UTC ISO 8601.
    pub end: Option<String>,
    /// Rows read.
    pub rows_read: i64,
    /// Rows written.
    pub rows_written: i64,
    /// Rows updated.
    pub rows_updated: i64,
    /// Rows deleted.
    pub rows_deleted: i64,
    /// Error message.
    pub error: Option<String>,
    /// Log lines.
    pub log: Vec<String>,
    /// The host that runs it, or that ran its last attempt to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The actions of this instance it runs after (their data comes first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<i64>,
    /// The deploy whose definitions its last attempt ran (`ListDeploys`' `deployId`); none
    /// before it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_id: Option<i64>,
    /// What a ready action waits for: an object it writes that a running action of another
    /// instance writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<WaitingFor>,
    /// A failed action waiting to be tried again: when (UTC ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<String>,
    /// Its earlier tries that failed and were tried again, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tries: Vec<Try>,
}

/// A try of an action that failed and was tried again.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Try {
    /// Which run of the action it was (the commit marker's).
    pub attempt: i64,
    /// The host that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Its start, UTC ISO 8601.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// Its end.
    pub end: String,
    /// Its error.
    pub error: String,
    /// Whether it counted against `retries` (a connection that failed before the action did
    /// anything is tried again at once, uncounted).
    pub counted: bool,
    /// When it was to be tried again.
    pub retry_at: String,
}

/// An object a ready action waits for, and the running action of another instance that
/// writes it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct WaitingFor {
    /// The object as the data graph names it: its connection, its schema (may be empty) and
    /// its name.
    pub connection_id: i64,
    /// The schema (empty: the connection's default).
    pub schema: String,
    /// The table or view.
    pub object: String,
    /// The instance whose action writes it now.
    pub batch_instance_id: i64,
    /// That action.
    pub action_id: i64,
}
