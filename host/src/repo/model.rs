//! The repository's domain types: what every backend stores and answers, with no SQL and
//! no answer shapes of the API in them (`api::protocol` has those, made from these). The
//! states are stored as their words and letters, which the API answers too.

use crate::plan::{Element, StoredPlan};
use serde::{Deserialize, Serialize};

/// A scheduled start this much later than planned is recorded as late.
pub use crate::sched::scheduler::LATE_AFTER_SECONDS;

/// The state of a batch instance; stored and answered as its word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InstanceState {
    /// `running`: actions are running or waiting for each other or a slot.
    Running,
    /// `waiting`: stored, none of its actions claimed by a host yet (every slot was busy).
    Waiting,
    /// `finished`: every action finished.
    Finished,
    /// `failed`: some action failed or was skipped.
    Failed,
    /// `halted`: halted on request.
    Halted,
    /// `interrupted`: the server stopped during the run.
    Interrupted,
}

impl InstanceState {
    /// The word stored in the repository and answered by the API.
    pub fn word(self) -> &'static str {
        match self {
            InstanceState::Running => "running",
            InstanceState::Waiting => "waiting",
            InstanceState::Finished => "finished",
            InstanceState::Failed => "failed",
            InstanceState::Halted => "halted",
            InstanceState::Interrupted => "interrupted",
        }
    }

    /// The state of a stored word, if it is one.
    pub fn from_word(word: &str) -> Option<Self> {
        Some(match word {
            "running" => InstanceState::Running,
            "waiting" => InstanceState::Waiting,
            "finished" => InstanceState::Finished,
            "failed" => InstanceState::Failed,
            "halted" => InstanceState::Halted,
            "interrupted" => InstanceState::Interrupted,
            _ => return None,
        })
    }

    /// Whether the instance has not ended (`running` or `waiting`).
    pub fn is_ongoing(self) -> bool {
        matches!(self, InstanceState::Running | InstanceState::Waiting)
    }
}

impl std::fmt::Display for InstanceState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// The state of one action of an instance; stored and answered as its one-letter code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActionState {
    /// `D`: defined, waiting for the actions it depends on.
    Defined,
    /// `W`: ready, waiting for a slot.
    Waiting,
    /// `R`: running.
    Running,
    /// `F`: finished.
    Finished,
    /// `E`: failed.
    Error,
    /// `S`: skipped, because an action it depends on failed or was skipped.
    Skipped,
    /// `H`: halted before it started.
    Halted,
}

impl ActionState {
    /// The one-letter code stored in the repository and answered by the API.
    pub fn code(self) -> &'static str {
        match self {
            ActionState::Defined => "D",
            ActionState::Waiting => "W",
            ActionState::Running => "R",
            ActionState::Finished => "F",
            ActionState::Error => "E",
            ActionState::Skipped => "S",
            ActionState::Halted => "H",
        }
    }

    /// The state of a one-letter code, if it is one.
    pub fn from_code(code: &str) -> Option<Self> {
        Some(match code {
            "D" => ActionState::Defined,
            "W" => ActionState::Waiting,
            "R" => ActionState::Running,
            "F" => ActionState::Finished,
            "E" => ActionState::Error,
            "S" => ActionState::Skipped,
            "H" => ActionState::Halted,
            _ => return None,
        })
    }

    /// Whether the action has not started yet (`D` or `W`).
    pub fn is_pending(self) -> bool {
        matches!(self, ActionState::Defined | ActionState::Waiting)
    }

    /// Whether the action failed or was skipped, so that what depends on it is skipped.
    pub fn is_failure(self) -> bool {
        matches!(self, ActionState::Error | ActionState::Skipped)
    }
}

impl Serialize for ActionState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

impl<'de> Deserialize<'de> for ActionState {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let code = String::deserialize(d)?;
        ActionState::from_code(&code).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "`{code}` is not an action state (one of D W R F E S H)"
            ))
        })
    }
}

impl std::fmt::Display for ActionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

/// One action of a new instance.
#[derive(Debug, Clone)]
pub struct NewAction {
    /// The action node id.
    pub action_id: i64,
    /// Its sheet.
    pub sheet_id: i64,
    /// Its name.
    pub name: String,
    /// Its module.
    pub module: String,
    /// The plan (module, text, attributes, objects), stored with the instance.
    pub plan: StoredPlan,
    /// The actions it waits for.
    pub depends_on: Vec<i64>,
}

/// A new instance (stored `waiting` until a host claims one of its actions).
#[derive(Debug, Clone)]
pub struct NewInstance {
    /// `batchName`.
    pub batch_name: String,
    /// `user`.
    pub user: String,
    /// The elements asked for.
    pub elements: Vec<Element>,
    /// The variables, name and value.
    pub variables: Vec<(String, String)>,
    /// Its actions.
    pub actions: Vec<NewAction>,
}

/// An action of an instance: what monitoring shows of it, and what a run needs.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionRow {
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
    /// The actions it waits for.
    pub depends_on: Vec<i64>,
    /// The plan stored with the instance, or why it cannot be read.
    pub plan: Result<StoredPlan, String>,
    /// How many times it was started (the commit marker names the attempt).
    pub attempt: i64,
    /// The connections its current attempt writes without a commit marker.
    pub unmarked: Vec<i64>,
    /// The host that runs it, or that ran its last attempt to its end.
    pub host: Option<String>,
}

/// An instance without its actions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceSummary {
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
    pub batch_id: Option<i64>,
    /// The planned start it was started for, for a scheduled run.
    pub planned_start: Option<String>,
    /// How many seconds after its planned start it started, for a scheduled run.
    pub late_seconds: Option<i64>,
    /// Whether it started late, for a scheduled run.
    pub late: Option<bool>,
    /// The hosts its running actions run on (filled by the list of instances).
    pub running_on: Vec<String>,
}

/// An instance with its actions.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceRow {
    /// The instance itself.
    pub summary: InstanceSummary,
    /// The elements asked for.
    pub elements: Vec<Element>,
    /// The actions.
    pub actions: Vec<ActionRow>,
    /// Whether a halt was asked for.
    pub halt_requested: bool,
    /// The variables, name and value.
    pub variables: Vec<(String, String)>,
}

/// How an action ended: finished with its counts, or failed with the error; its log lines.
#[derive(Debug, Clone, Copy)]
pub struct ActionEnd<'a> {
    /// The error, when it failed or was halted.
    pub error: Option<&'a str>,
    /// Whether a halt stopped it (state `H`, not `E`); it did not commit.
    pub halted: bool,
    /// Rows read.
    pub rows_read: u64,
    /// Rows written.
    pub rows_written: u64,
    /// Rows updated.
    pub rows_updated: u64,
    /// Rows deleted.
    pub rows_deleted: u64,
    /// Log lines to append.
    pub log: &'a [String],
}

/// What a restart found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restarted {
    /// There is no such instance.
    NotFound,
    /// It finished: nothing to run again.
    Finished,
    /// It is still running or waiting.
    Running,
    /// Its unfinished actions wait again: how many.
    Reset(usize),
}

/// What happened to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChangeKind {
    /// It did not exist.
    Created,
    /// It existed and differed.
    Updated,
    /// It existed and was identical.
    #[default]
    Unchanged,
    /// A redeploy of its sheet no longer holds it.
    Deleted,
}

/// The kinds of object a deploy writes, answered as their lowercase names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObjectKind {
    /// A folder.
    Folder,
    /// A connection.
    Connection,
    /// A sheet.
    Sheet,
    /// A node of a sheet.
    Node,
    /// An edge of a sheet.
    Edge,
    /// A batch.
    Batch,
}

impl ObjectKind {
    /// Its name, as answered.
    pub fn word(self) -> &'static str {
        match self {
            ObjectKind::Folder => "folder",
            ObjectKind::Connection => "connection",
            ObjectKind::Sheet => "sheet",
            ObjectKind::Node => "node",
            ObjectKind::Edge => "edge",
            ObjectKind::Batch => "batch",
        }
    }
}

impl std::fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// One object a deploy touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// What it is.
    pub kind: ObjectKind,
    /// Its id.
    pub id: i64,
    /// What happened.
    pub change: ChangeKind,
    /// For nodes and edges: the sheet.
    pub sheet_id: Option<i64>,
}

/// The tables whose ids an `intoFolder` copy allocates afresh.
#[derive(Debug, Clone, Copy)]
pub enum IdTable {
    /// Sheet ids.
    Sheets,
    /// Node ids.
    Nodes,
    /// Edge ids.
    Edges,
}

/// How many instances are in each state and how many actions of unfinished instances are in
/// each live state, for `/metrics`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateCounts {
    /// Instances by state word.
    pub instances: Vec<(String, i64)>,
    /// Actions of unfinished instances by state code (`D`, `W`, `R`).
    pub actions: Vec<(String, i64)>,
}

/// Which instances a list shows, newest first: `ListBatchInstances` and the web page's runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceFilter {
    /// At most this many.
    pub limit: i64,
    /// Only in this state.
    pub state: Option<InstanceState>,
    /// Only those whose batch name holds this text (any case).
    pub name: Option<String>,
    /// Only those older than this id (the next page after the last one shown).
    pub before: Option<i64>,
    /// Only those the scheduler started for this batch.
    pub batch_id: Option<i64>,
}

impl InstanceFilter {
    /// The newest `limit`, whatever they are.
    pub fn newest(limit: i64) -> Self {
        InstanceFilter {
            limit,
            state: None,
            name: None,
            before: None,
            batch_id: None,
        }
    }
}

/// A folder as the web page's tree shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FolderItem {
    /// Id.
    pub folder_id: i64,
    /// Path (`/a/b`).
    pub path: String,
}

/// A sheet as the web page's tree shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SheetItem {
    /// Id.
    pub sheet_id: i64,
    /// Name.
    pub name: String,
    /// Its folder's id.
    pub folder_id: i64,
    /// Its folder's path.
    pub folder: String,
}

/// A node of a deployed sheet, as drawn: its place and what it is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeItem {
    /// Id.
    pub node_id: i64,
    /// 0 an action, 1 an object.
    #[serde(rename = "type")]
    pub kind: i64,
    /// Left.
    pub x: i64,
    /// Top.
    pub y: i64,
    /// Width (0 when the sheet gave none).
    pub width: i64,
    /// Height.
    pub height: i64,
    /// An action's module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// An action's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// An action's documentation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation: Option<String>,
    /// An action's text (its SQL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// An action's other attributes, as JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attributes: Option<String>,
    /// An object's table (`field1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// An object's `field2` and `field3` (a schema, a column list, as its type reads them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    /// An object's type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_type_id: Option<i64>,
    /// An object's connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_id: Option<i64>,
    /// An object's dependency (`Y`: the action waits for what writes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency: Option<String>,
}

/// An edge of a deployed sheet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EdgeItem {
    /// Id.
    pub edge_id: i64,
    /// The node it leaves.
    pub from: i64,
    /// The node it reaches.
    pub to: i64,
}

/// A deployed sheet as the web page draws it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SheetDetail {
    /// The sheet.
    #[serde(flatten)]
    pub sheet: SheetItem,
    /// Its documentation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation: Option<String>,
    /// Its nodes, by id.
    pub nodes: Vec<NodeItem>,
    /// Its edges, by id.
    pub edges: Vec<EdgeItem>,
}

/// The repository's folders and sheets, for the web page's tree (`ListSheets`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tree {
    /// Every folder, by path.
    pub folders: Vec<FolderItem>,
    /// The sheets, by folder path and order (the first ones when `more`).
    pub sheets: Vec<SheetItem>,
    /// Whether the repository holds more sheets than listed.
    #[serde(default)]
    pub more: bool,
}

/// A scheduled batch as the web page's schedules list it (`ListBatches`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchItem {
    /// Id.
    pub batch_id: i64,
    /// Name.
    pub name: String,
    /// Its schedule's text.
    pub schedule: String,
    /// Whether it runs.
    pub enabled: bool,
    /// Its newest planned starts that passed without a run (at most
    /// [`BatchItem::MISSED_SHOWN`]), newest first.
    pub missed: Vec<MissedItem>,
}

impl BatchItem {
    /// How many missed starts a batch lists.
    pub const MISSED_SHOWN: i64 = 10;
}

/// A deploy as the web page's deploy history lists it (`ListDeploys`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeployItem {
    /// Its number.
    pub deploy_id: i64,
    /// When it was committed (UTC, ISO 8601).
    pub deployed: String,
    /// How many objects it created.
    pub created: i64,
    /// How many it updated.
    pub updated: i64,
    /// How many it deleted.
    pub deleted: i64,
    /// Its first changes, in the order it made them.
    pub changes: Vec<HistoryItem>,
    /// How many more changes it made than `changes` lists.
    pub more: i64,
}

/// One change of a deploy: a line of the deploy history.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryItem {
    /// The line's id (`GetDeployChange`).
    pub history_id: i64,
    /// `folder`, `connection`, `sheet` or `batch`.
    pub kind: String,
    /// The object's id.
    pub object_id: i64,
    /// Its name then (a folder's path), when known.
    pub name: Option<String>,
    /// `created`, `updated` or `deleted`.
    pub change: String,
}

/// One change with the definition it deployed and the one it replaced (`GetDeployChange`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryDetail {
    /// The change.
    #[serde(flatten)]
    pub item: HistoryItem,
    /// Its deploy.
    pub deploy_id: Option<i64>,
    /// When (UTC, ISO 8601).
    pub deployed: String,
    /// The definition deployed, as stored (JSON text).
    pub definition: Option<String>,
    /// The object's change before this one, if any.
    pub previous: Option<PreviousVersion>,
}

/// The version a change replaced.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreviousVersion {
    /// Its history line.
    pub history_id: i64,
    /// Its deploy.
    pub deploy_id: Option<i64>,
    /// When (UTC, ISO 8601).
    pub deployed: String,
    /// Its definition (JSON text).
    pub definition: Option<String>,
}

/// A planned start that passed without a run (`ListBatches`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MissedItem {
    /// The planned start, wall-clock text in the service zone.
    pub planned: String,
    /// When a host passed it (UTC, ISO 8601).
    pub decided: String,
    /// Why: `running` (the previous run had not finished), `clockGap` (the clocks skip
    /// it), or `cannotStart: ` and the error.
    pub reason: String,
}

/// An object as the data graph knows it: its identity as its object type gives it (the
/// connection, the schema and the name, in the type's own spelling).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// The connection number.
    pub connection_id: i64,
    /// The schema (empty for the connection's default).
    pub schema: String,
    /// The name.
    pub name: String,
}

/// One line of the data graph: an action reads or writes an object with dependency `Y`
/// (what orders a run).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FlowRow {
    /// The action node.
    pub action_id: i64,
    /// The object.
    pub object: ObjectKey,
    /// Whether the action writes it (else it reads it).
    pub writes: bool,
}

/// Where an action lives, for naming it and for asking whether a batch runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionPlace {
    /// The action's name.
    pub name: String,
    /// Its sheet.
    pub sheet_id: i64,
    /// The path of the sheet's folder.
    pub folder: String,
}

/// A deployed batch as a deploy's cycle check reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchScope {
    /// The batch id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Whether the scheduler starts it.
    pub enabled: bool,
    /// What it runs.
    pub elements: Vec<Element>,
}
