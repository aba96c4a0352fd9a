//! The typed `.dsr` model: a document holding folders, connections and sheets (SPEC 2.1 to
//! 2.4, plus the project's `connections` and `folders`). Every field keeps its span so that
//! validation can place its problems; serialising a model gives its canonical JSON, which the
//! repository stores and compares to tell an identical redeploy from a change.

use super::value::{Span, Spanned};
use serde::{Serialize, Serializer};

/// A value and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct At<T> {
    /// The value.
    pub v: T,
    /// Its span in the text.
    pub span: Span,
}

impl<T> At<T> {
    /// A value with a span.
    pub fn new(v: T, span: Span) -> Self {
        At { v, span }
    }
}

impl<T: Serialize> Serialize for At<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.v.serialize(s)
    }
}

/// Fields of an object that weft does not model, kept as they were written (in document
/// order) so that a document made by another tool (`owner` in sheet attributes, `color` in
/// a layout) keeps them through weft's repository. Serialised into the object's map.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extra(pub Vec<(String, serde_json::Value)>);

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// The format version this weft reads and writes.
pub const FORMAT_VERSION: i64 = 1;

/// A deployable document.
#[derive(Debug, Clone, Default)]
pub struct Document {
    /// The `version` field.
    pub version: Option<At<i64>>,
    /// Folders to create or update.
    pub folders: Vec<Folder>,
    /// Connections to create or update.
    pub connections: Vec<Connection>,
    /// Sheets to create or update.
    pub sheets: Vec<Sheet>,
    /// Scheduled batches to create or update.
    pub batches: Vec<Batch>,
    /// The notification channels and the rules for every batch; when present, they
    /// replace the stored ones as a whole.
    pub notifications: Option<Notifications>,
    /// Template modules to create or update, by name.
    pub modules: Vec<TemplateModule>,
    /// False when an object could not be read (a required field missing or mistyped) and is
    /// absent from the model, so that graph rules would judge an incomplete sheet.
    pub complete: bool,
}

/// A scheduled batch: what it runs, when, and what it does at clock changes and when its
/// previous run is still going.
#[derive(Debug, Clone, Serialize)]
pub struct Batch {
    /// Batch id.
    pub id: At<i64>,
    /// Name (the `batchName` of its instances).
    pub name: At<String>,
    /// The name it had before (`renamedFrom`): a batch written without an id keeps that
    /// one's id. Not stored.
    #[serde(skip)]
    pub renamed_from: Option<At<String>>,
    /// `daily HH:MM`, `weekly DAYS HH:MM`, `monthly DAY HH:MM` or `every N minutes`, in the
    /// service time zone.
    pub schedule: At<String>,
    /// What it runs: `S`, `A` or `F` elements.
    pub elements: Vec<BatchElement>,
    /// Variables given to every run.
    pub variables: Vec<(String, String)>,
    /// Whether the scheduler starts it (default true).
    pub enabled: bool,
    /// `skip` (default) or `wait` when the previous run has not finished.
    #[serde(rename = "ifRunning")]
    pub if_running: Option<At<String>>,
    /// `next` (default) or `skip`, for a planned time the clocks skip.
    #[serde(rename = "springGap")]
    pub spring_gap: Option<At<String>>,
    /// `first` (default), `second` or `both`, for a planned time that happens twice.
    #[serde(rename = "autumnOverlap")]
    pub autumn_overlap: Option<At<String>>,
    /// Batches (by id) whose runs of the same schedule date must have finished before a
    /// scheduled start of this one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<At<i64>>,
    /// How long a scheduled start waits for `after` (default 120 minutes).
    #[serde(
        rename = "afterTimeoutMinutes",
        skip_serializing_if = "Option::is_none"
    )]
    pub after_timeout_minutes: Option<At<i64>>,
    /// What then: `skip` (default: the start passes, recorded as missed) or `start`.
    #[serde(rename = "afterTimeout", skip_serializing_if = "Option::is_none")]
    pub after_timeout: Option<At<String>>,
    /// `allow` (default) or `exclude`: while a run of this batch goes, a manual run of any
    /// of its actions is refused, and its scheduled start waits while such a manual run
    /// goes.
    #[serde(rename = "manualRuns", skip_serializing_if = "Option::is_none")]
    pub manual_runs: Option<At<String>>,
    /// Who is told of this batch's runs, beside the rules for every batch.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notifications: Vec<NotificationRule>,
    /// How the failed actions of its runs are tried again, for those that say nothing.
    #[serde(flatten)]
    pub retry: Retry,
    /// Free text.
    pub documentation: Option<String>,
    /// The whole object.
    #[serde(skip)]
    pub span: Span,
    /// Fields weft does not model, kept as written.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A template module (`transformationData.modules`): a module defined in a document as a
/// Jinja template of SQL with typed attributes. An action that names it in `module` is
/// rendered at deploy with its attributes and stored and run as an action of the module the
/// template `runs` (default `Sql`). Deployed, stored and exported by name.
#[derive(Debug, Clone, Serialize)]
pub struct TemplateModule {
    /// The name actions write in `module`.
    pub name: At<String>,
    /// What it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<At<String>>,
    /// The module that runs what it renders (default `Sql`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<At<String>>,
    /// The attributes an action gives it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<TemplateAttribute>,
    /// The template (Jinja, minijinja's dialect).
    pub template: At<String>,
    /// The whole object.
    #[serde(skip)]
    pub span: Span,
    /// Fields weft does not model, kept as written.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The types of a template module's attributes.
pub const TEMPLATE_ATTRIBUTE_TYPES: [&str; 3] = ["text", "integer", "boolean"];

/// An attribute of a template module: its name (a variable of the template), type, default
/// and what it does.
#[derive(Debug, Clone, Serialize)]
pub struct TemplateAttribute {
    /// Its name, as actions write it and the template reads it.
    pub name: At<String>,
    /// `text`, `integer` or `boolean`.
    #[serde(rename = "type")]
    pub kind: At<String>,
    /// The value when an action does not give one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<At<serde_json::Value>>,
    /// Whether every action must give it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// What it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<At<String>>,
    /// The whole object.
    #[serde(skip)]
    pub span: Span,
}

/// The repository's notification setup (one object; a deploy that has it replaces it):
/// the channels notifications go through and the rules that apply to every batch.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Notifications {
    /// Where notifications go, by name.
    pub channels: Vec<Channel>,
    /// Rules for the runs of every batch (scheduled or not).
    pub rules: Vec<NotificationRule>,
    /// The whole object.
    #[serde(skip)]
    pub span: Span,
    /// Fields weft does not model, kept as written.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A way to tell people: `email` (through an SMTP server named in the key file) or
/// `webhook` (an HTTP POST, signed with a secret from the key file).
#[derive(Debug, Clone, Serialize)]
pub struct Channel {
    /// The name rules send to.
    pub name: At<String>,
    /// `email` or `webhook`.
    #[serde(rename = "type")]
    pub kind: At<String>,
    /// E-mail: the key-file entry of the SMTP server (`smtp://` or `smtps://` URL, user,
    /// password).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<At<String>>,
    /// E-mail: the sender address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<At<String>>,
    /// E-mail: the recipients.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub to: Vec<At<String>>,
    /// Webhook: where to POST.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<At<String>>,
    /// Webhook: the key-file entry whose password signs the body (HMAC-SHA256).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<At<String>>,
    /// Webhook: how long a POST may take (default 10 s).
    #[serde(rename = "timeoutSeconds", skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<At<i64>>,
    /// E-mail: the subject's template.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<At<String>>,
    /// The body's template (e-mail text; a webhook's body, JSON by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<At<String>>,
    /// The whole object.
    #[serde(skip)]
    pub span: Span,
    /// Fields weft does not model, kept as written.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Which events of a batch's runs go to which channels.
#[derive(Debug, Clone, Serialize)]
pub struct NotificationRule {
    /// The events: `started`, `finished`, `failed`, `halted`, `interrupted`, `missed`,
    /// `late`, `actionFailed`.
    pub on: Vec<At<String>>,
    /// The channels, by name.
    pub to: Vec<At<String>>,
    /// `late`: a run of the day not finished by this time (`HH:MM`, service time zone).
    #[serde(rename = "lateAt", skip_serializing_if = "Option::is_none")]
    pub late_at: Option<At<String>>,
    /// `late`: a run still going this many minutes after its start.
    #[serde(rename = "longerThanMinutes", skip_serializing_if = "Option::is_none")]
    pub longer_than_minutes: Option<At<i64>>,
    /// The subject's template, instead of the channel's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<At<String>>,
    /// The body's template, instead of the channel's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<At<String>>,
    /// The whole object.
    #[serde(skip)]
    pub span: Span,
    /// Fields weft does not model, kept as written.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One element of a batch.
#[derive(Debug, Clone, Serialize)]
pub struct BatchElement {
    /// `S` sheet, `A` action, `F` folder.
    #[serde(rename = "elementType")]
    pub kind: At<String>,
    /// Its id ([`UNNAMED`] until the deploy finds the object `path` names).
    #[serde(rename = "elementId")]
    pub id: At<i64>,
    /// The path it was written as (`/folder/sheet/action`), instead of an id.
    #[serde(skip)]
    pub path: Option<At<String>>,
    /// Left out of the batch's runs for now.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub skip: bool,
    /// Its actions (and what depends on them) start halted: they run when the instance is
    /// restarted.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub halted: bool,
}

/// A transformation directory.
#[derive(Debug, Clone, Serialize)]
pub struct Folder {
    /// Folder id.
    pub id: At<i64>,
    /// Absolute path such as `/sales/daily`.
    pub path: At<String>,
    /// Free text.
    pub documentation: Option<String>,
    /// The whole folder object.
    #[serde(skip)]
    pub span: Span,
    /// Fields weft does not model, kept as written.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A data connection. Its credentials live in the key file under the same number.
#[derive(Debug, Clone, Serialize)]
pub struct Connection {
    /// Connection number.
    pub id: At<i64>,
    /// Display name.
    pub name: At<String>,
    /// Schema name on the database, if it has schemas.
    pub schema: Option<At<String>>,
    /// Connection type: `sqlite`, `jdbc`.
    #[serde(rename = "type")]
    pub kind: At<String>,
    /// The whole connection object.
    #[serde(skip)]
    pub span: Span,
    /// Fields weft does not model, kept as written.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A worksheet.
#[derive(Debug, Clone, Serialize)]
pub struct Sheet {
    /// Sheet id.
    pub id: At<i64>,
    /// Sheet attributes.
    pub attributes: SheetAttributes,
    /// Nodes.
    pub nodes: Vec<Node>,
    /// Edges.
    pub edges: Vec<Edge>,
    /// The whole sheet object.
    #[serde(skip)]
    pub span: Span,
    /// Fields weft does not model, kept as written.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The `attributes` of a sheet.
#[derive(Debug, Clone, Serialize)]
pub struct SheetAttributes {
    /// Free text.
    pub documentation: Option<String>,
    /// Display name.
    pub name: At<String>,
    /// Ordering key; derived from the name when missing.
    pub order: Option<At<String>>,
    /// Containing folder id.
    pub folder_id: At<i64>,
    /// Containing folder path.
    pub folder: At<String>,
    /// The connection of its actions that name none and have no object nodes (an id or a
    /// name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection: Option<At<NameOrId>>,
    /// The name it had before (`renamedFrom`): a sheet written without an id keeps that
    /// one's id. Not stored.
    #[serde(skip)]
    pub renamed_from: Option<At<String>>,
    /// The attributes object.
    #[serde(skip)]
    pub span: Span,
    /// Fields weft does not model, kept as written.
    #[serde(flatten)]
    pub extra: Extra,
}

impl SheetAttributes {
    /// The order key as stored: the given one, else the upper-case name.
    pub fn order_key(&self) -> String {
        match &self.order {
            Some(o) => o.v.clone(),
            None => self.name.v.to_uppercase(),
        }
    }
}

/// A node's position and size in the sheet.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Layout {
    /// Left.
    pub x: i64,
    /// Top.
    pub y: i64,
    /// Width.
    pub width: i64,
    /// Height.
    pub height: i64,
    /// Fields weft does not model, kept as written.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A node of a sheet.
#[derive(Debug, Clone, Serialize)]
pub struct Node {
    /// Node id (an action's id is what `RunElements` names with element type `A`).
    pub id: At<i64>,
    /// Node type: 0 action, 1 object.
    #[serde(rename = "type")]
    pub kind: At<i64>,
    /// Position and size.
    pub layout: Layout,
    /// Attributes by type.
    pub attributes: NodeAttributes,
    /// The whole node object.
    #[serde(skip)]
    pub span: Span,
    /// Fields weft does not model, kept as written.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Node {
    /// The action attributes, if this is an action node.
    pub fn action(&self) -> Option<&ActionAttributes> {
        match &self.attributes {
            NodeAttributes::Action(a) => Some(a),
            _ => None,
        }
    }

    /// The object attributes, if this is an object node.
    pub fn object(&self) -> Option<&ObjectAttributes> {
        match &self.attributes {
            NodeAttributes::Object(o) => Some(o),
            _ => None,
        }
    }
}

/// The id of an object written without one, until the deploy finds or makes it from its
/// name (`deploy::names`). Never stored.
pub const UNNAMED: i64 = i64::MIN;

/// Node type 0.
pub const NODE_ACTION: i64 = 0;
/// Node type 1.
pub const NODE_OBJECT: i64 = 1;

/// A node's attributes, by its type.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum NodeAttributes {
    /// Type 0: table A.
    Action(Box<ActionAttributes>),
    /// Type 1: table B.
    Object(ObjectAttributes),
    /// The type was not 0 or 1, or the attributes could not be read.
    Invalid,
}

/// Table A: the attributes of an action node.
#[derive(Debug, Clone)]
pub struct ActionAttributes {
    /// Module name, e.g. `Upsert`.
    pub module: At<String>,
    /// Free text.
    pub documentation: Option<String>,
    /// Display name.
    pub name: At<String>,
    /// The action text (SQL for most modules).
    pub action: Option<At<String>>,
    /// When slots are scarce, ready actions of a higher priority are claimed first (0 to
    /// 1000; default 0).
    pub priority: Option<At<i64>>,
    /// How a failure of it is tried again (`retries`, `retryDelaySeconds`, `retryOn`).
    pub retry: Retry,
    /// The actions it runs after when a run holds both (`after`), for what the data cannot
    /// say: DDL before the load, a side effect.
    pub after: Vec<After>,
    /// The connection its SQL runs on when it has no object nodes (its id or name; else its
    /// sheet's `connection`): the deploy then finds its objects in the SQL.
    pub connection: Option<At<NameOrId>>,
    /// The file its text is read from (`file`), as written: a path relative to the document,
    /// in a project deploy, which carries the file (`project::files`).
    pub file: Option<At<String>>,
    /// Data tests of the table it writes (`tests`), as written: a list of objects, each
    /// `{KIND: COLUMN, ...}`; the deploy makes a `Test` action of each.
    pub tests: Option<Spanned>,
    /// The name it had before (`renamedFrom`): an action written without an id keeps that
    /// one's id.
    pub renamed_from: Option<At<String>>,
    /// Whether its text is a template (`template: true`), rendered at deploy.
    pub template: bool,
    /// Whether `action` holds what its template rendered (its offsets are the rendered
    /// text's, not the document's).
    pub rendered: bool,
    /// Whether `action` holds a file's content (its span then covers that content, placed
    /// after the documents in a project's joined text), not a string of the document.
    pub text_from_file: bool,
    /// The tables its text defines (creates, drops, alters: `(schema, name)`), as its module
    /// told the deploy; never written in a document.
    pub defines: Vec<(Option<String>, String)>,
    /// The tables it checks (a data test: `(schema, name)`), as its module told the deploy;
    /// never written in a document.
    pub checks: Vec<(Option<String>, String)>,
    /// Attributes beyond table A, for the module to judge (`truncateBefore`, `keys`, ...).
    pub extra: Vec<(At<String>, Spanned)>,
}

/// An object named by its id or by its name: an entry of `after` (an action's id, the name
/// of an action of the same sheet, or the path of one in any sheet, `/folder/sheet/action`),
/// or a `connection` (its id or name).
#[derive(Debug, Clone, PartialEq)]
pub enum NameOrId {
    /// An id.
    Id(i64),
    /// A name (for `after`: no `/`) or a path (from `/`).
    Name(String),
}

impl Serialize for NameOrId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            NameOrId::Id(id) => s.serialize_i64(*id),
            NameOrId::Name(n) => s.serialize_str(n),
        }
    }
}

/// An entry of `after`: as written, and the action's id once the deploy found it.
#[derive(Debug, Clone, PartialEq)]
pub struct After {
    /// As written, where written.
    pub written: At<NameOrId>,
    /// The action's id (the deploy resolves names and paths; an id is itself).
    pub resolved: Option<i64>,
}

impl Serialize for After {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.written.v.serialize(s)
    }
}

/// How a failed action is tried again: on an action (its attributes) or on a batch (the
/// default of the actions of its runs that say nothing).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Retry {
    /// How many times at most (0 to 20; default 0).
    pub retries: Option<At<i64>>,
    /// The pause before the first try again, doubled at each further one, at most an hour
    /// (0 to 3600; default 60).
    pub delay_seconds: Option<At<i64>>,
    /// Which failures: `connection` (default: a connection that could not be opened or was
    /// lost, a deadlock, a serialization failure, a lock that could not be had), `all` or
    /// `none`.
    pub on: Option<At<String>>,
}

impl Retry {
    /// Whether nothing is said.
    pub fn is_empty(&self) -> bool {
        self.retries.is_none() && self.delay_seconds.is_none() && self.on.is_none()
    }

    /// Its fields into a map being written, by their names.
    pub fn serialize_into<M: serde::ser::SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        if let Some(r) = &self.retries {
            map.serialize_entry("retries", &r.v)?;
        }
        if let Some(d) = &self.delay_seconds {
            map.serialize_entry("retryDelaySeconds", &d.v)?;
        }
        if let Some(o) = &self.on {
            map.serialize_entry("retryOn", &o.v)?;
        }
        Ok(())
    }
}

impl Serialize for Retry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        self.serialize_into(&mut map)?;
        map.end()
    }
}

impl Serialize for ActionAttributes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(4 + self.extra.len()))?;
        map.serialize_entry("module", &self.module)?;
        map.serialize_entry("documentation", &self.documentation)?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("action", &self.action)?;
        if let Some(p) = &self.priority {
            map.serialize_entry("priority", &p.v)?;
        }
        self.retry.serialize_into(&mut map)?;
        if !self.after.is_empty() {
            map.serialize_entry("after", &self.after)?;
        }
        if let Some(c) = &self.connection {
            map.serialize_entry("connection", c)?;
        }
        if let Some(f) = &self.file {
            map.serialize_entry("file", &f.v)?;
        }
        if let Some(t) = &self.tests {
            map.serialize_entry("tests", &t.value.to_json())?;
        }
        for (k, v) in &self.extra {
            map.serialize_entry(&k.v, &v.value.to_json())?;
        }
        map.end()
    }
}

/// Table B: the attributes of a source or target object node.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectAttributes {
    /// Object name (a table name for object type 1).
    pub field1: At<String>,
    /// Second field (the schema for tables).
    pub field2: Option<String>,
    /// Third field.
    pub field3: Option<String>,
    /// Object type.
    pub object_type_id: At<i64>,
    /// Connection number.
    pub connection_id: At<i64>,
    /// A single letter; `Y` objects order actions.
    pub dependency: At<String>,
    /// Fields weft does not model, kept as written.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An edge between two nodes of one sheet.
#[derive(Debug, Clone, Serialize)]
pub struct Edge {
    /// Edge id.
    pub id: At<i64>,
    /// Start node id.
    pub from: At<i64>,
    /// End node id.
    pub to: At<i64>,
    /// The start node's name, when written so (its id is then found by the deploy).
    #[serde(skip)]
    pub from_name: Option<At<String>>,
    /// The end node's name, when written so.
    #[serde(skip)]
    pub to_name: Option<At<String>>,
    /// The whole edge object.
    #[serde(skip)]
    pub span: Span,
    /// Fields weft does not model, kept as written.
    #[serde(flatten)]
    pub extra: Extra,
}
