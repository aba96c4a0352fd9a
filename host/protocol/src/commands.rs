//! The commands and their answers as types: [`Command`] (the envelope), one struct per
//! payload, the answers, and the list of names.

use crate::browse::{BatchItem, DeployItem, HistoryDetail, SheetDetail, Tree};
use crate::deploys;
use crate::elements::Element;
use crate::instances;
use crate::plugins::PluginList;
use crate::problems::Detail;
use crate::schedules;
use crate::states::InstanceState;
use serde::ser::SerializeMap as _;
use serde::{Deserialize, Serialize};

/// The one service path: commands are sent as POST to it.
pub const SERVICE_PATH: &str = "/weft/service";

/// The commands the server answers, by name.
pub const COMMANDS: &[&str] = &[
    "DeployRepository",
    "RunElements",
    "GetBatchInstance",
    "WaitBatchInstance",
    "ListBatchInstances",
    "HaltBatchInstance",
    "RestartBatchInstance",
    "NextRuns",
    "ListPlugins",
    "ListHosts",
    "ListSheets",
    "GetSheet",
    "ListBatches",
    "ListDeploys",
    "GetDeployChange",
    "AdvanceClock",
];

/// A command with its payload.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Deploy `.dsr` content (SPEC 4.2).
    DeployRepository(DeployRepository),
    /// Start a batch instance (SPEC 4.3).
    RunElements(RunElements),
    /// An instance with its actions.
    GetBatchInstance(GetBatchInstance),
    /// An instance once it has ended, or when the time is up.
    WaitBatchInstance(WaitBatchInstance),
    /// The most recent instances.
    ListBatchInstances(ListBatchInstances),
    /// Halt an instance.
    HaltBatchInstance(HaltBatchInstance),
    /// Rerun what failed, was skipped or halted in an instance.
    RestartBatchInstance(RestartBatchInstance),
    /// A scheduled batch's next planned starts.
    NextRuns(NextRuns),
    /// What the running server loaded: libraries, modules, refusals.
    ListPlugins(ListPlugins),
    /// The hosts on the repository, with their last heartbeat.
    ListHosts(ListHosts),
    /// The folders and sheets of the repository.
    ListSheets(ListSheets),
    /// A sheet as drawn, with its last runs.
    GetSheet(GetSheet),
    /// The scheduled batches.
    ListBatches(ListBatches),
    /// A page of the deploy history.
    ListDeploys(ListDeploys),
    /// One change of a deploy, with the definition it replaced.
    GetDeployChange(GetDeployChange),
    /// Move a development server's stepped clock (`weft serve --stepped-clock`).
    AdvanceClock(AdvanceClock),
}

impl Command {
    /// The command's name, as the envelope's `command` says it.
    pub fn name(&self) -> &'static str {
        match self {
            Command::DeployRepository(_) => DeployRepository::NAME,
            Command::RunElements(_) => RunElements::NAME,
            Command::GetBatchInstance(_) => GetBatchInstance::NAME,
            Command::WaitBatchInstance(_) => WaitBatchInstance::NAME,
            Command::ListBatchInstances(_) => ListBatchInstances::NAME,
            Command::HaltBatchInstance(_) => HaltBatchInstance::NAME,
            Command::RestartBatchInstance(_) => RestartBatchInstance::NAME,
            Command::NextRuns(_) => NextRuns::NAME,
            Command::ListPlugins(_) => ListPlugins::NAME,
            Command::ListHosts(_) => ListHosts::NAME,
            Command::ListSheets(_) => ListSheets::NAME,
            Command::GetSheet(_) => GetSheet::NAME,
            Command::ListBatches(_) => ListBatches::NAME,
            Command::ListDeploys(_) => ListDeploys::NAME,
            Command::GetDeployChange(_) => GetDeployChange::NAME,
            Command::AdvanceClock(_) => AdvanceClock::NAME,
        }
    }
}

/// The envelope `{command, payload, variableList?}`.
impl Serialize for Command {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let variables = match self {
            Command::RunElements(r) if !r.variables.is_empty() => Some(&r.variables),
            _ => None,
        };
        let mut map = s.serialize_map(Some(2 + usize::from(variables.is_some())))?;
        map.serialize_entry("command", self.name())?;
        match self {
            Command::DeployRepository(p) => map.serialize_entry("payload", p)?,
            Command::RunElements(p) => map.serialize_entry("payload", p)?,
            Command::GetBatchInstance(p) => map.serialize_entry("payload", p)?,
            Command::WaitBatchInstance(p) => map.serialize_entry("payload", p)?,
            Command::ListBatchInstances(p) => map.serialize_entry("payload", p)?,
            Command::HaltBatchInstance(p) => map.serialize_entry("payload", p)?,
            Command::RestartBatchInstance(p) => map.serialize_entry("payload", p)?,
            Command::NextRuns(p) => map.serialize_entry("payload", p)?,
            Command::ListPlugins(p) => map.serialize_entry("payload", p)?,
            Command::ListHosts(p) => map.serialize_entry("payload", p)?,
            Command::ListSheets(p) => map.serialize_entry("payload", p)?,
            Command::GetSheet(p) => map.serialize_entry("payload", p)?,
            Command::ListBatches(p) => map.serialize_entry("payload", p)?,
            Command::ListDeploys(p) => map.serialize_entry("payload", p)?,
            Command::GetDeployChange(p) => map.serialize_entry("payload", p)?,
            Command::AdvanceClock(p) => map.serialize_entry("payload", p)?,
        }
        if let Some(v) = variables {
            map.serialize_entry("variableList", v)?;
        }
        map.end()
    }
}

/// A command's payload: its name and the type of its answer.
pub trait Request: Into<Command> {
    /// The command's name.
    const NAME: &'static str;
    /// The answer's payload.
    type Answer: serde::de::DeserializeOwned + Serialize;
}

macro_rules! request {
    ($($name:ident => $answer:ty),* $(,)?) => {$(
        impl Request for $name {
            const NAME: &'static str = stringify!($name);
            type Answer = $answer;
        }
        impl From<$name> for Command {
            fn from(p: $name) -> Command {
                Command::$name(p)
            }
        }
    )*};
}

request! {
    DeployRepository => deploys::Report,
    RunElements => Started,
    GetBatchInstance => instances::Instance,
    WaitBatchInstance => Waited,
    ListBatchInstances => InstanceList,
    HaltBatchInstance => HaltRequested,
    RestartBatchInstance => Restarting,
    NextRuns => schedules::NextRuns,
    ListPlugins => PluginList,
    ListHosts => HostList,
    ListSheets => Tree,
    GetSheet => SheetView,
    ListBatches => BatchList,
    ListDeploys => DeployList,
    GetDeployChange => HistoryDetail,
    AdvanceClock => ClockAdvanced,
}

/// `DeployRepository {content, deployOptions?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeployRepository {
    /// The `.dsr` text.
    pub content: String,
    /// The deploy options.
    #[serde(with = "options_wire")]
    pub deploy_options: deploys::Options,
}

/// `deployOptions` as sent: `{validate, dryRun, intoFolder}`.
mod options_wire {
    use crate::deploys::Options;
    use serde::ser::SerializeMap as _;

    pub fn serialize<S: serde::Serializer>(o: &Options, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("validate", &o.validate)?;
        map.serialize_entry("dryRun", &o.dry_run)?;
        map.serialize_entry("intoFolder", &o.into_folder)?;
        map.end()
    }
}

/// `RunElements {batchExecution: {batchName, user, elementList}}`, with the envelope's
/// `variableList`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunElements {
    /// What to run and for whom.
    pub batch_execution: BatchExecution,
    /// `variableList`: sent in the envelope, beside the payload.
    #[serde(skip)]
    pub variables: Vec<Variable>,
}

/// `batchExecution`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchExecution {
    /// The instance's name.
    pub batch_name: String,
    /// Who started it.
    pub user: String,
    /// The sheets, actions and folders to run.
    pub element_list: Vec<Element>,
}

/// One entry of `variableList`: `{variableName, variableType?, variableValue}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Variable {
    /// The name, `${name}` in action text.
    #[serde(rename = "variableName")]
    pub name: String,
    /// The declared type (SPEC 4.3 sends `String`; weft substitutes text whatever it says).
    #[serde(rename = "variableType", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The value as text (a number or boolean sent is taken as written).
    #[serde(rename = "variableValue")]
    pub value: String,
}

/// `GetBatchInstance {batchInstanceId}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetBatchInstance {
    /// The instance.
    pub batch_instance_id: i64,
}

/// `WaitBatchInstance {batchInstanceId, timeoutSeconds?, changedFrom?}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitBatchInstance {
    /// The instance.
    pub batch_instance_id: i64,
    /// How long to wait at most (default [`WaitBatchInstance::DEFAULT_SECONDS`], at most
    /// [`WaitBatchInstance::MAX_SECONDS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<f64>,
    /// Answer as soon as the instance is no longer the one of this [`Waited::version`]
    /// (a page following a run), not only at its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_from: Option<String>,
}

impl WaitBatchInstance {
    /// The wait when none is given.
    pub const DEFAULT_SECONDS: f64 = 30.0;
    /// The longest wait one request holds.
    pub const MAX_SECONDS: f64 = 3600.0;
    /// The longest wait one request with `changedFrom` holds: a page asks again.
    pub const MAX_CHANGE_SECONDS: f64 = 60.0;
}

/// `ListBatchInstances {limit?, state?, name?, before?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListBatchInstances {
    /// How many, newest first (1 to 1,000; default 20).
    pub limit: i64,
    /// Only instances in this state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<InstanceState>,
    /// Only instances whose batch name holds this text, in any case.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Only instances older than this id: the page after one whose last id it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<i64>,
    /// Only instances the scheduler started for this batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_id: Option<i64>,
}

impl Default for ListBatchInstances {
    fn default() -> Self {
        ListBatchInstances {
            limit: 20,
            state: None,
            name: None,
            before: None,
            batch_id: None,
        }
    }
}

/// `HaltBatchInstance {batchInstanceId}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HaltBatchInstance {
    /// The instance.
    pub batch_instance_id: i64,
}

/// `RestartBatchInstance {batchInstanceId}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RestartBatchInstance {
    /// The instance.
    pub batch_instance_id: i64,
}

/// `NextRuns {batchId, count?}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NextRuns {
    /// The scheduled batch.
    pub batch_id: i64,
    /// How many starts (1 to 1,000; default 10).
    pub count: usize,
}

/// `ListPlugins {}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ListPlugins {}

/// `ListHosts {}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ListHosts {}

/// `ListHosts`' answer: the hosts registered on the repository, oldest start first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostList {
    /// The id of the host that answered.
    pub this_host: String,
    /// The hosts.
    pub hosts: Vec<HostView>,
}

/// One host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostView {
    /// Its id (`HOME/host-id` on a shared repository).
    pub host: String,
    /// The URL it serves.
    pub url: String,
    /// Its `max_parallel_actions`.
    pub slots: i64,
    /// When it started, UTC.
    pub started: String,
    /// Milliseconds since its last heartbeat, by the repository's clock.
    pub silent_ms: i64,
    /// How many actions run on it now.
    pub running: i64,
}

/// `AdvanceClock {seconds}` or `{to}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum AdvanceClock {
    /// Forward by this many seconds (0 to a year).
    By {
        /// The seconds.
        seconds: i64,
    },
    /// Forward to this instant: RFC 3339, or `YYYY-MM-DD HH:MM[:SS]` in the service zone.
    To {
        /// The instant as written.
        to: String,
    },
}

impl AdvanceClock {
    /// The most one step moves: a year of seconds.
    pub const MAX_SECONDS: i64 = 366 * 86_400;
}

/// The answer envelope: `{requestId, payload}` or `{requestId, error}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer<P> {
    /// The server's id of the request, as its log names it.
    pub request_id: u64,
    /// The command's answer, when it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<P>,
    /// Why it did not, otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

/// A refusal: a stable code, a message and each problem with its place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// Stable code such as `request.envelope` or `deploy.invalid`.
    pub code: String,
    /// What is wrong.
    pub message: String,
    /// Each problem, with line, column and path where it has them.
    #[serde(default)]
    pub details: Vec<Detail>,
}

/// `RunElements`' answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Started {
    /// The new instance.
    pub batch_instance_id: i64,
}

/// `WaitBatchInstance`'s answer: the instance, and whether the time ran out first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Waited {
    /// The instance as `GetBatchInstance` answers it.
    #[serde(flatten)]
    pub instance: instances::Instance,
    /// Whether it was still running when the wait ended.
    pub timed_out: bool,
    /// What the instance is as answered, as a short text that changes whenever anything of
    /// it does (a state, a count, a log line): the `changedFrom` of the next wait.
    #[serde(default)]
    pub version: String,
}

/// `ListBatchInstances`' answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceList {
    /// The instances, newest first, without their actions.
    pub instances: Vec<instances::Listed>,
}

/// `HaltBatchInstance`'s answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HaltRequested {
    /// The instance.
    pub batch_instance_id: i64,
    /// Always true: running actions stop at their next check, the others do not start.
    pub halt_requested: bool,
}

/// `RestartBatchInstance`'s answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Restarting {
    /// The instance.
    pub batch_instance_id: i64,
    /// How many actions run again.
    pub actions_to_run: usize,
}

/// `AdvanceClock`'s answer: the clock's new time and what the tick there did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClockAdvanced {
    /// The new time, UTC (`YYYY-MM-DDTHH:MM:SSZ`).
    pub now: String,
    /// The new time on the service zone's wall clock.
    pub local: String,
    /// The scheduled starts the tick made.
    pub started: Vec<ScheduledRun>,
    /// Batches whose planned start passed without a run.
    pub passed: Vec<i64>,
    /// Batches waiting for their previous run to end.
    pub waiting: Vec<i64>,
}

/// One start of [`ClockAdvanced`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledRun {
    /// The batch.
    pub batch_id: i64,
    /// The instance it started.
    pub batch_instance_id: i64,
}

/// `ListSheets {limit?}`: the repository's folders and its first `limit` sheets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ListSheets {
    /// How many sheets at most (1 to 20,000; default 5,000): the answer says when there
    /// are more.
    pub limit: i64,
}

impl Default for ListSheets {
    fn default() -> Self {
        ListSheets { limit: 5000 }
    }
}

/// `GetSheet {sheetId}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetSheet {
    /// The sheet.
    pub sheet_id: i64,
}

/// `GetSheet`'s answer: the sheet as drawn (its nodes with their places, its edges) and its
/// last runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SheetView {
    /// The sheet.
    #[serde(flatten)]
    pub sheet: SheetDetail,
    /// The newest instances that ran its actions (at most [`SheetView::RUNS`]).
    pub runs: Vec<instances::Listed>,
}

impl SheetView {
    /// How many of its last runs a sheet shows.
    pub const RUNS: i64 = 10;
}

/// `ListBatches {}`: the scheduled batches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ListBatches {}

/// `ListBatches`' answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchList {
    /// Every scheduled batch, by name.
    pub batches: Vec<BatchItem>,
}

/// `ListDeploys {limit?, before?, changes?}`: a page of the deploy history, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListDeploys {
    /// How many deploys (1 to 200; default 20).
    pub limit: i64,
    /// Only deploys older than this one: the page after one whose last deploy it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<i64>,
    /// How many changes of each deploy are listed (0 to 200; default 20).
    pub changes: i64,
}

impl Default for ListDeploys {
    fn default() -> Self {
        ListDeploys {
            limit: 20,
            before: None,
            changes: 20,
        }
    }
}

/// `ListDeploys`' answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeployList {
    /// The deploys, newest first.
    pub deploys: Vec<DeployItem>,
}

/// `GetDeployChange {historyId}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetDeployChange {
    /// The change's line in the deploy history.
    pub history_id: i64,
}
