//! What the web page browses: the repository's folders and sheets (`ListSheets`), a sheet
//! as drawn (`GetSheet`), the scheduled batches (`ListBatches`) and the deploy history
//! (`ListDeploys`, `GetDeployChange`). The repository reads them in these shapes.

use serde::{Deserialize, Serialize};

/// A folder as the web page's tree shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FolderItem {
    /// Id.
    pub folder_id: i64,
    /// Path (`/a/b`).
    pub path: String,
}

/// A sheet as the web page's tree shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Whether an operator paused it (`PauseBatch`), and who and when.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// Who paused it, while paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_by: Option<String>,
    /// When it was paused (UTC, ISO 8601), while paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_at: Option<String>,
    /// Its newest planned starts that passed without a run (at most
    /// [`BatchItem::MISSED_SHOWN`]), newest first.
    pub missed: Vec<MissedItem>,
}

impl BatchItem {
    /// How many missed starts a batch lists.
    pub const MISSED_SHOWN: i64 = 10;
}

/// A deploy as the web page's deploy history lists it (`ListDeploys`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeployItem {
    /// Its number.
    pub deploy_id: i64,
    /// When it was committed (UTC, ISO 8601).
    pub deployed: String,
    /// Who deployed it (a user, `keyfile`, `loopback`); none for deploys made before weft
    /// recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MissedItem {
    /// The planned start, wall-clock text in the service zone.
    pub planned: String,
    /// When a host passed it (UTC, ISO 8601).
    pub decided: String,
    /// Why: `running` (the previous run had not finished), `clockGap` (the clocks skip
    /// it), `cannotStart: ` and the error, or `after: ` and the batches it waited for in
    /// vain.
    pub reason: String,
}
