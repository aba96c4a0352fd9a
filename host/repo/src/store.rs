//! What a repository backend implements: the seam a second backend (PostgreSQL) plugs into.
//!
//! Callers outside `repo` use only these traits (and `Repository::write` and `read` for a
//! deploy, handing out a [`DeployWriter`], which also answers [`super::Facts`]); they never see a
//! connection, SQL or a storage format. Every method is one transaction of its own: what
//! must happen together (a new instance and its batch's next planned start; an action's end
//! and what follows from it) is one method. What the scheduler needs of the repository is
//! its own trait, `sched::scheduler::PlannedStarts`, implemented beside these. Ids are allocated by the backend; times are the
//! backend's "now" in UTC, or wall-clock text the caller computed (the repository does no
//! time arithmetic).

use super::error::Result;
use super::facts::Facts;
use super::model::{
    ActionEnd, ActionPlace, BatchScope, Change, FlowRow, IdTable, InstanceRow, InstanceState,
    InstanceSummary, Lookup, Named, NewInstance, ObjectKey, ObjectKind, Restarted, SheetPlans,
};
use super::work::{Beat, Claimed, Ended, Halted, Holder, HostRow, InstanceInfo, Settle};
use weft_core::plan::ActionPlan;
use weft_core::sched::schedule::{Planned, Schedule};
use weft_core::sched::scheduler::ScheduledStart;
use weft_dsr::model::{Batch, Connection, Folder, Sheet};

/// A deploy's writes, inside its one transaction (`Repository::write`), with the
/// [`Facts`] validation asks in the same transaction. Each write reports what it changed.
pub trait DeployWriter: Facts {
    /// The largest id stored in `table` (0 when empty), for renumbering a document's ids.
    fn max_id(&self, table: IdTable) -> Result<i64>;
    /// Reads ahead, in one round trip, what judging and writing `sheets` asks of the
    /// repository by their ids (a deploy's first step inside its lock).
    fn prefetch(&self, sheets: &[weft_dsr::model::Sheet]) -> Result<()>;
    /// Creates or updates a folder.
    fn folder(&self, f: &Folder) -> Result<Change>;
    /// Creates or updates a connection.
    fn connection(&self, c: &Connection) -> Result<Change>;
    /// Creates or replaces a sheet with its nodes and edges: the sheet's change first, then
    /// every node and edge the new version no longer holds. The sheet counts as having its
    /// lines of the data graph: the caller records them ([`DeployWriter::record_flow`]) in
    /// the same transaction.
    fn sheet(&self, s: &Sheet) -> Result<Vec<Change>>;
    /// Creates or updates a batch. Its planned start becomes `first` (the first planned
    /// start after now, which the caller computed) when the batch is new, its schedule
    /// changed, or it has none; else the stored one stays (a sheet may have moved it).
    fn batch(&self, b: &Batch, schedule: &Schedule, first: Option<Planned>) -> Result<Change>;
    /// Replaces the notification setup (channels and the rules for every batch).
    fn notifications(&self, n: &weft_dsr::model::Notifications) -> Result<Change>;
    /// Creates or replaces a template module, by its name.
    fn template_module(&self, m: &weft_dsr::model::TemplateModule) -> Result<Change>;
    /// The number this deploy got with its first change (in `deploys`); `None` while it
    /// changed nothing.
    fn deploy_id(&self) -> Option<i64>;
    /// Replaces the lines of the data graph of the actions `clear` (a redeployed sheet's,
    /// those it no longer holds included) with `rows`, of a sheet this deploy wrote.
    fn record_flow(&self, clear: &[i64], rows: &[FlowRow]) -> Result<()>;
    /// Records the lines of the data graph of sheet `sheet`, one [`Self::unrecorded_flow`]
    /// names, and marks it recorded.
    fn record_unrecorded_flow(&self, sheet: i64, rows: &[FlowRow]) -> Result<()>;
    /// The sheets whose lines of the data graph are not recorded yet (stored by a weft
    /// before the data graph), each with its stored plans (`None`: unreadable).
    fn unrecorded_flow(&self) -> Result<Vec<(i64, Option<Vec<ActionPlan>>)>>;
    /// The actions next to `action` in the data graph with the object between: with
    /// `forward` those that read what it writes, else those that write what it reads.
    fn flow_neighbours(&self, action: i64, forward: bool) -> Result<Vec<(i64, ObjectKey)>>;
    /// Where action `action` lives (its name, sheet and folder); `None` for no action.
    fn action_place(&self, action: i64) -> Result<Option<ActionPlace>>;
    /// Every deployed batch with its elements.
    fn batch_scopes(&self) -> Result<Vec<BatchScope>>;
    /// The actions of the data graph in sheet `sheet`.
    fn flow_actions_in_sheet(&self, sheet: i64) -> Result<Vec<i64>>;
    /// The sheets in folder `folder` and every folder below it; `None` when it does not
    /// exist.
    fn sheets_below(&self, folder: i64) -> Result<Option<Vec<i64>>>;
    /// The objects of `kind` that `key` names (several when a name repeats).
    fn find(&self, kind: ObjectKind, key: &Lookup) -> Result<Vec<Named>>;
    /// The folders below the folder at `path`, deepest first.
    fn folders_below(&self, path: &str) -> Result<Vec<Named>>;
    /// The sheets directly in folder `folder`.
    fn sheets_in(&self, folder: i64) -> Result<Vec<Named>>;
    /// The sheets whose object nodes use connection `connection`, with the first such node.
    fn connection_users(&self, connection: i64) -> Result<Vec<(Named, i64)>>;
    /// Everything deployed, or (`below`, a folder's path) that folder, what is below it and
    /// the connections its sheets use, each with its definition, for an export.
    fn exported(&self, below: Option<&str>) -> Result<crate::model::Exported>;
    /// Removes `objects`, in their order (a folder after what it holds), each with a line in
    /// the deploy history; a sheet's plans stay while an instance names them.
    fn delete(&self, objects: &[(ObjectKind, Named)]) -> Result<Vec<Change>>;
}

/// Batch instances and their actions, and the hosts that run them. Each method is one
/// transaction; the decisions that several hosts might take at once (which host runs an
/// action, what follows an action's end, a halt, a restart, a takeover) are each one.
pub trait InstanceStore {
    /// The repository's random identity (commit markers name it).
    fn repository_id(&self) -> Result<String>;
    /// Stores a new instance (state `waiting`) with its actions (`D` for those that wait
    /// for others, else `W`) and their dependencies; with `scheduled`, also its batch's
    /// next planned start, in the same transaction ([`super::error::Error::Conflict`] and
    /// nothing stored when the planned start changed). Nothing is stored, and
    /// [`Created::Busy`] answered, when `max_waiting` instances wait already.
    fn create_instance(
        &self,
        new: &NewInstance,
        scheduled: Option<&ScheduledStart>,
        max_waiting: usize,
    ) -> Result<Created>;
    /// An instance with its actions.
    fn instance(&self, id: i64) -> Result<Option<InstanceRow>>;
    /// Records a backfill of `batch` (id and name) by `user`, `parallel` instances at a
    /// time, of the planned starts `starts` (wall-clock text, in order); its id.
    fn create_backfill(
        &self,
        batch: (i64, &str),
        user: &str,
        parallel: i64,
        starts: &[String],
    ) -> Result<i64>;
    /// The starts of backfills that may begin now (each backfill's next ones, as many as
    /// it has places free; one begins when an instance stores it:
    /// [`NewInstance::backfill`](crate::model::NewInstance)), and whether any backfill has
    /// starts left.
    fn backfill_pending(&self) -> Result<(Vec<crate::model::PendingStart>, bool)>;
    /// A start that can never begin keeps why; the backfill goes on with the next.
    fn backfill_failed(&self, start: &crate::model::BackfillStart, error: &str) -> Result<()>;
    /// What a run needs of an instance besides its actions (cheap).
    fn instance_info(&self, id: i64) -> Result<Option<InstanceInfo>>;
    /// An instance's state (cheap, for waiting).
    fn instance_state(&self, id: i64) -> Result<Option<InstanceState>>;
    /// An instance's state and a number that changes whenever anything shown of it does,
    /// read without its logs (cheap, for following a run); `None` when there is none.
    fn instance_fingerprint(&self, id: i64) -> Result<Option<(InstanceState, u64)>>;
    /// The newest `limit` instances, newest first.
    fn list_instances(&self, filter: &crate::model::InstanceFilter)
    -> Result<Vec<InstanceSummary>>;
    /// Pauses batch `id` or resumes it (`by` recorded as who paused it): the batch as it is
    /// then; `None` for no such batch.
    fn pause_batch(
        &self,
        id: i64,
        paused: bool,
        by: &str,
    ) -> Result<Option<weft_protocol::commands::BatchPause>>;
    /// How many instances `filter` matches in all.
    fn count_instances(&self, filter: &crate::model::InstanceFilter) -> Result<i64>;
    /// Each scheduled batch's runs by schedule date, `from` to before `until` (days):
    /// (batch id, day), by batch id and day.
    fn run_days(
        &self,
        from: &str,
        until: &str,
        batch_id: Option<i64>,
    ) -> Result<Vec<(i64, weft_protocol::commands::RunDay)>>;
    /// The instances `filter` leaves (state and name), grouped by batch name.
    fn run_groups(
        &self,
        filter: &crate::model::InstanceFilter,
    ) -> Result<Vec<weft_protocol::commands::RunGroup>>;
    /// Instances by state word, and actions of unfinished instances by state code (`D`,
    /// `W`, `R`), for `/metrics`.
    fn state_counts(&self) -> Result<crate::model::StateCounts>;
    /// Up to `limit` ready actions become `host`'s, running.
    fn claim(&self, host: &str, limit: usize) -> Result<Vec<Claimed>>;
    /// Records how attempt `attempt` of an action ended on `host`, and what follows; in the
    /// same transaction, up to `claim` ready actions become `host`'s, running (the slot the
    /// ended action gives back, taken again without a round of the host's worker).
    fn end_action(
        &self,
        host: &str,
        id: i64,
        action: i64,
        attempt: i64,
        end: &ActionEnd<'_>,
        claim: usize,
    ) -> Result<(Ended, Vec<Claimed>)>;
    /// Asks an instance to halt.
    fn halt(&self, id: i64) -> Result<Halted>;
    /// Which of `ids` have a halt asked for.
    fn halts_asked(&self, ids: &[i64]) -> Result<Vec<i64>>;
    /// Checks and resets an ended instance for a restart, in one step, to run
    /// `definitions`: with the current ones, each sheet it ran runs its plans deployed now,
    /// unless an action to run again is no longer deployed (then nothing changes).
    /// `only`, when not empty, names the actions to run again (with what was skipped or halted
    /// because of them); the instance's other actions stay as they ended.
    fn restart(
        &self,
        id: i64,
        definitions: crate::model::Definitions,
        only: &[i64],
    ) -> Result<Restarted>;
    /// The instances still running or waiting.
    fn unfinished(&self) -> Result<Vec<i64>>;
    /// After a stop of a server that was the only host (SQLite): unfinished instances
    /// become interrupted (or finished); their ids.
    fn recover(&self) -> Result<Vec<i64>>;
    /// Records the connections an action's attempt writes without a commit marker.
    fn set_unmarked(&self, id: i64, action: i64, connections: &[i64]) -> Result<()>;
    /// Adds log lines to a running action (its end adds the rest); `false` when the action
    /// is not running (nothing was added).
    fn append_log(&self, id: i64, action: i64, lines: &[String]) -> Result<bool>;
    /// Registers a host, held by `process`.
    fn register_host(&self, host: &str, url: &str, slots: usize, process: &str) -> Result<()>;
    /// A host's heartbeat, recorded only while `process` holds its id.
    fn heartbeat(&self, host: &str, process: &str) -> Result<Beat>;
    /// The row of `host`, as a starting host judges it.
    fn host_holder(&self, host: &str) -> Result<Option<Holder>>;
    /// `host`, held by `process`, leaves after a clean stop with nothing running.
    fn leave(&self, host: &str, process: &str) -> Result<()>;
    /// The hosts, with how long each has been silent and what it runs.
    fn hosts(&self) -> Result<Vec<HostRow>>;
    /// The running actions of hosts silent for `lease_ms` become `host`'s.
    fn take_over(&self, host: &str, lease_ms: i64) -> Result<Vec<Claimed>>;
    /// How a taken-over action ended, by its commit markers.
    fn settled(
        &self,
        host: &str,
        claimed: &Claimed,
        outcome: &Settle,
        note: &str,
        follow: bool,
    ) -> Result<Ended>;
    /// The actions running on `host`.
    fn running_on(&self, host: &str) -> Result<Vec<Claimed>>;
}

/// What storing a new instance did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created {
    /// Stored, with this id.
    Stored(i64),
    /// Nothing stored: this many instances wait already.
    Busy(i64),
    /// Nothing stored: another run of some of its actions excludes it (its
    /// [`Exclusion`](crate::model::Exclusion)); why.
    Excluded(String),
}

/// The deployed sheets, as a run reads them when it starts.
pub trait SheetStore {
    /// A node's sheet and type (0 an action).
    fn node(&self, id: i64) -> Result<Option<(i64, i64)>>;
    /// The current plans of a sheet's actions as deployed, in node order, with their version
    /// (the number of the deploy that stored them; a new instance names it, and runs them):
    /// no definition is read again, and a version is parsed once while it stays kept.
    fn plans(&self, id: i64) -> Result<Option<(i64, std::sync::Arc<SheetPlans>)>>;
    /// The sheets of a folder and every folder below it, in order; `None` when the folder
    /// does not exist.
    fn sheets_below(&self, folder: i64) -> Result<Option<Vec<i64>>>;
    /// Every action that reads, directly or through others, what `seed` writes (`downstream`),
    /// or that writes what it reads, by the data graph as deployed: (action, sheet).
    fn related_actions(&self, seed: i64, downstream: bool) -> Result<Vec<(i64, i64)>>;
    /// The default schema of each connection that names one (its `schema` as deployed).
    fn connection_schemas(&self)
    -> Result<std::sync::Arc<std::collections::BTreeMap<i64, String>>>;
    /// Every folder and the first `limit` sheets, for the web page's tree.
    fn tree(&self, limit: i64) -> Result<crate::model::Tree>;
    /// A sheet with its nodes and edges; `None` when there is none.
    fn sheet_detail(&self, id: i64) -> Result<Option<crate::model::SheetDetail>>;
    /// Every scheduled batch, by name.
    fn batches(&self) -> Result<Vec<crate::model::BatchItem>>;
    /// The newest `limit` instances that ran actions of sheet `id`.
    fn sheet_runs(&self, id: i64, limit: i64) -> Result<Vec<InstanceSummary>>;
    /// A page of the deploy history, newest first: at most `limit` deploys before deploy
    /// `before` (or the newest), each with its first `changes` changes.
    fn deploys(
        &self,
        before: Option<i64>,
        limit: i64,
        changes: i64,
    ) -> Result<Vec<crate::model::DeployItem>>;
    /// A history line with its definition and the version before it.
    fn history_detail(&self, id: i64) -> Result<Option<crate::model::HistoryDetail>>;
}
