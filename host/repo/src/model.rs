//! The repository's domain types: what every backend stores and reads, with no SQL. The
//! state words, the deploy's object kinds and the browse answers are `weft_protocol`'s
//! types, read by the repository in those shapes; the rows of instances and actions are
//! this module's own, and `api::protocol` makes its answers from them.

use weft_core::plan::{ActionPlan, Element};
pub use weft_protocol::browse::{
    BatchItem, DeployItem, EdgeItem, FolderItem, HistoryDetail, HistoryItem, MissedItem, NodeItem,
    PreviousVersion, SheetDetail, SheetItem, Tree,
};
pub use weft_protocol::deploys::ObjectKind;
pub use weft_protocol::states::{ActionState, InstanceState};

/// A scheduled start this much later than planned is recorded as late.
pub use weft_core::sched::scheduler::LATE_AFTER_SECONDS;

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
    /// The version of its sheet's plans it runs (the number of the deploy that stored
    /// them): the instance keeps no copy of its own, it names them.
    pub plan_version: i64,
    /// The actions it waits for.
    pub depends_on: Vec<i64>,
    /// It starts halted (its batch element starts halted, or it depends on one that does):
    /// it runs when the instance is restarted.
    pub held: bool,
    /// Its priority when slots are scarce (higher first; 0 the default).
    pub priority: i64,
    /// How a failure of it is tried again, as its attributes say.
    pub retry: weft_core::plan::RetryPlan,
}

/// The error an action that starts halted shows until a restart runs it.
pub const HELD: &str = "held: its batch element starts halted (or it depends on one that does); a restart of the instance runs it";

/// A sheet's plans at one version, as runs read them: in the sheet's order, and by action.
#[derive(Debug, Clone, Default)]
pub struct SheetPlans {
    plans: Vec<ActionPlan>,
    by_id: std::collections::HashMap<i64, usize>,
}

impl SheetPlans {
    /// `plans`, found by action too.
    pub fn new(plans: Vec<ActionPlan>) -> Self {
        let by_id = plans.iter().enumerate().map(|(i, p)| (p.id, i)).collect();
        SheetPlans { plans, by_id }
    }

    /// Every plan, in the sheet's order.
    pub fn plans(&self) -> &[ActionPlan] {
        &self.plans
    }

    /// Action `id`'s plan.
    pub fn get(&self, id: i64) -> Option<&ActionPlan> {
        self.by_id.get(&id).and_then(|i| self.plans.get(*i))
    }
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
    /// The start of a backfill it is (claimed in the same transaction).
    pub backfill: Option<BackfillStart>,
    /// Which other runs of its actions keep it from being stored.
    pub exclusion: Exclusion,
}

/// Runs a new instance may not be stored beside (a batch's `manualRuns: exclude`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Exclusion {
    /// None: a batch's run that allows manual runs.
    #[default]
    None,
    /// A manual run: not while a run of a batch that excludes manual runs runs or waits
    /// with any of its actions.
    Manual,
    /// A run of a batch that excludes manual runs: not while a manual run runs or waits
    /// with any of its actions.
    Batch,
}

/// One planned start of a backfill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackfillStart {
    /// The backfill.
    pub backfill_id: i64,
    /// Its place in the backfill's order, from 0.
    pub seq: i64,
    /// The batch.
    pub batch_id: i64,
    /// The planned start, wall-clock text in the service zone.
    pub planned_start: String,
}

/// A start of a backfill that may begin now, with what its instance is started as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingStart {
    /// The start.
    pub start: BackfillStart,
    /// The batch's name (the instance's `batchName`).
    pub batch_name: String,
    /// Who asked for the backfill.
    pub user: String,
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
    /// How many times it was started (the commit marker names the attempt).
    pub attempt: i64,
    /// The connections its current attempt writes without a commit marker.
    pub unmarked: Vec<i64>,
    /// The host that runs it, or that ran its last attempt to its end.
    pub host: Option<String>,
    /// The deploy whose plans its last attempt ran (none before it ran, or for plans kept
    /// by the upgrade to schema version 14).
    pub deploy_id: Option<i64>,
    /// A ready action's wait for an object a running action of another instance writes.
    pub waiting_for: Option<weft_protocol::instances::WaitingFor>,
    /// A failed action waiting to be tried again: when (ISO 8601).
    pub retry_at: Option<String>,
    /// Its earlier failed tries.
    pub tries: Vec<weft_protocol::instances::Try>,
}

/// An instance without its actions, read straight into the answer `ListBatchInstances`
/// gives (the repository keeps nothing more of it).
pub use weft_protocol::instances::Listed as InstanceSummary;

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
    /// What kind of failure its error is, for its retries.
    pub class: FailureClass,
    /// It failed before its module ran (a connection that could not be opened or begin):
    /// it did nothing, so a connection failure then is tried again at once, uncounted.
    pub untouched: bool,
}

/// What kind of failure an action's error is, for its retries (`retryOn`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FailureClass {
    /// Anything else: bad SQL, a constraint, a missing table.
    #[default]
    Other,
    /// A connection that could not be opened or was lost.
    Connection,
    /// A deadlock, a serialization failure, a lock that could not be had: the same work
    /// may pass when tried again.
    Transient,
    /// Its commit failed, or a process module failed after it said it had handled rows: it
    /// may have written, so it is never tried again by itself.
    Commit,
}

/// What a restart found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restarted {
    /// There is no such instance.
    NotFound,
    /// It finished: nothing to run again.
    Finished,
    /// It is still running or waiting.
    Running,
    /// Its unfinished actions wait again: how many.
    Reset(usize),
    /// Asked to run the current definitions, some of the actions to run again are no longer
    /// deployed (sheet, action): nothing changed.
    NotDeployed(Vec<(i64, i64)>),
    /// Actions named to run again that did not fail, were not skipped, halted or
    /// interrupted (or are none of the instance's): nothing changed.
    NotToRunAgain(Vec<i64>),
}

/// Which definitions a restarted instance runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Definitions {
    /// Those deployed now: a fix deployed since the run failed is what runs again.
    #[default]
    Current,
    /// Those the instance ran so far (as it started, unless an earlier restart took newer
    /// ones).
    AsStarted,
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

/// How a delete names an object: by id, or by path (folders, and sheets as their folder's
/// path and their name) or name (connections and batches).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// Its id.
    Id(i64),
    /// Its path or name.
    Name(String),
}

/// An object found for a delete: its id, and its path (folders and sheets) or name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// Its id.
    pub id: i64,
    /// Its path or name.
    pub name: String,
}

/// An object as an export writes it: id, path or name, and definition (JSON text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportedObject {
    /// Its id.
    pub id: i64,
    /// A folder's path, a sheet's, connection's or batch's name.
    pub name: String,
    /// Its definition as deployed, JSON.
    pub definition: String,
}

/// What an export reads of the repository.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exported {
    /// Folders, by path.
    pub folders: Vec<ExportedObject>,
    /// Connections, by id.
    pub connections: Vec<ExportedObject>,
    /// Sheets with their folder's path, by folder path and name.
    pub sheets: Vec<(String, ExportedObject)>,
    /// Batches, by id.
    pub batches: Vec<ExportedObject>,
    /// The notification setup's definition (JSON), in a whole export.
    pub notifications: Option<String>,
    /// The template modules' definitions (JSON), by name, in a whole export.
    pub modules: Vec<String>,
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
    /// The scheduled (or backfilled) batches by name, each with the end of its newest
    /// finished run (as stored: UTC text), the most recent first, at most
    /// [`crate::instances::LAST_SUCCESS_SHOWN`].
    pub last_success: Vec<(String, String)>,
    /// Scheduled batches with an unfinished run, each with the start of its oldest (UTC
    /// text): what a "running too long" alert compares with the clock.
    pub running_since: Vec<(String, String)>,
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
    /// Only those of this backfill.
    pub backfill_id: Option<i64>,
    /// Only those started before this stored time (UTC, `YYYY-MM-DD HH:MM:SS`).
    pub started_before: Option<String>,
    /// Leaves out this many of the newest that match.
    pub offset: i64,
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
            backfill_id: None,
            started_before: None,
            offset: 0,
        }
    }
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

/// An action that reads or writes a table, with where it lives (`Repository::lineage`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineageRow {
    /// The action.
    pub action_id: i64,
    /// Whether it writes the table (else it reads it).
    pub writes: bool,
    /// The table as its object type identifies it: connection, schema, name.
    pub object: ObjectKey,
    /// The action's name.
    pub action_name: String,
    /// Its sheet.
    pub sheet_id: i64,
    /// The sheet's name.
    pub sheet_name: String,
    /// The sheet's folder's path.
    pub folder: String,
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

/// A notification as `ListNotifications` answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// Its id (the `Weft-Notification-Id` a webhook receives).
    pub id: i64,
    /// The event word.
    pub event: String,
    /// The batch of the event.
    pub batch: String,
    /// The instance, for the events of one.
    pub instance: Option<i64>,
    /// The action, for `actionFailed`.
    pub action: Option<i64>,
    /// The channel's name.
    pub channel: String,
    /// `pending`, `sent` or `given_up`.
    pub state: String,
    /// Sends tried.
    pub attempts: i64,
    /// When the event recorded it (UTC).
    pub created_at: String,
    /// When it is (or was last) due.
    pub next_at: String,
    /// When it was sent.
    pub sent_at: Option<String>,
    /// Why the last send failed.
    pub last_error: Option<String>,
    /// The host sending it now.
    pub claimed_by: Option<String>,
}

/// Which notifications to list.
#[derive(Debug, Clone, Default)]
pub struct NotificationFilter {
    /// Only those in this state.
    pub state: Option<String>,
    /// Only those of this instance.
    pub instance: Option<i64>,
    /// Only those of this batch.
    pub batch: Option<String>,
    /// Only those with an id below (the next page).
    pub before: Option<i64>,
    /// How many at most.
    pub limit: i64,
}
