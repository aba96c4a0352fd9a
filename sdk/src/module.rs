//! Action modules: what they declare, what `validate` gets and gives, what `run` gets.
//!
//! The types here cross the boundary (they are `#[repr(C)]` with abi_stable fields), but an
//! author meets plain Rust: constructors and builders that take `&str` and `Option`, and
//! accessors that give `&str`, slices, `Option` and iterators.

use crate::connection::Connection;
use crate::error::{ErrorKind, PluginError, PluginResult};
use crate::halt::HaltSignal;
use crate::value::Dialect;
use abi_stable::StableAbi;
use abi_stable::sabi_trait;
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RBox, ROption, RResult, RStr, RString, RVec, Tuple2};

open_enum! {
    /// The type of an attribute beyond table A. Later sdk versions may add types.
    pub struct AttributeKind {
        /// `true` or `false`.
        Bool = 0,
        /// Text.
        String = 1,
        /// A whole number.
        Integer = 2,
    }
}

/// An attribute a module takes beyond table A.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct AttributeSpec {
    name: RString,
    kind: AttributeKind,
    default: ROption<RString>,
    description: RString,
    required: bool,
}

impl AttributeSpec {
    /// An attribute: its name as written in the `.dsr` file (`truncateBefore`), its type, the
    /// default as it would be written (the host gives it to `validate` and `run` when the
    /// action does not write the attribute), and what it does.
    pub fn new(name: &str, kind: AttributeKind, default: Option<&str>, description: &str) -> Self {
        AttributeSpec {
            name: name.into(),
            kind,
            default: default.map(RString::from).into(),
            description: description.into(),
            required: false,
        }
    }

    /// The same attribute, which every action must write (the host refuses the deploy
    /// otherwise).
    #[must_use]
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its type.
    pub fn kind(&self) -> AttributeKind {
        self.kind
    }

    /// The default as written, if any.
    pub fn default(&self) -> Option<&str> {
        self.default.as_ref().into_option().map(RString::as_str)
    }

    /// What it does.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Whether every action must write it.
    pub fn is_required(&self) -> bool {
        self.required
    }

    /// The default as a value of the attribute's kind (`None` without one, or for one that
    /// does not read as its kind).
    pub fn default_value(&self) -> Option<AttributeValue> {
        let text = self.default()?;
        match self.kind {
            AttributeKind::Bool => text.trim().parse().ok().map(AttributeValue::bool),
            AttributeKind::Integer => text.trim().parse().ok().map(AttributeValue::integer),
            AttributeKind::String => Some(AttributeValue::string(text)),
            _ => None,
        }
    }
}

/// What a module declares of itself: its name, a description, its attributes, and how many
/// sources and targets it takes.
///
/// ```
/// use weft_sdk::{AttributeKind, AttributeSpec, ModuleInfo};
/// let info = ModuleInfo::new("Rowcount", "Fails when a table has too few rows.")
///     .sources(1, 1)
///     .targets(0, 0)
///     .attribute(AttributeSpec::new("minRows", AttributeKind::Integer, Some("1"), "fewest rows"));
/// assert_eq!(info.name(), "Rowcount");
/// ```
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct ModuleInfo {
    name: RString,
    description: RString,
    attributes: RVec<AttributeSpec>,
    min_sources: u32,
    max_sources: u32,
    min_targets: u32,
    max_targets: u32,
}

impl ModuleInfo {
    /// A module named `name` (what actions write in `module`), with any number of sources
    /// and targets and no attributes beyond table A.
    pub fn new(name: &str, description: &str) -> Self {
        ModuleInfo {
            name: name.into(),
            description: description.into(),
            attributes: RVec::new(),
            min_sources: 0,
            max_sources: u32::MAX,
            min_targets: 0,
            max_targets: u32::MAX,
        }
    }

    /// Takes from `min` to `max` source objects (`u32::MAX`: any number).
    #[must_use]
    pub fn sources(mut self, min: u32, max: u32) -> Self {
        self.min_sources = min;
        self.max_sources = max;
        self
    }

    /// Takes from `min` to `max` target objects (`u32::MAX`: any number).
    #[must_use]
    pub fn targets(mut self, min: u32, max: u32) -> Self {
        self.min_targets = min;
        self.max_targets = max;
        self
    }

    /// Takes attribute `spec` too.
    #[must_use]
    pub fn attribute(mut self, spec: AttributeSpec) -> Self {
        self.attributes.push(spec);
        self
    }

    /// Takes each of `specs` too (a set several modules share, such as the SQL modules').
    #[must_use]
    pub fn with_attributes(mut self, specs: impl IntoIterator<Item = AttributeSpec>) -> Self {
        self.attributes.extend(specs);
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What it does.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The attributes it takes beyond table A.
    pub fn attributes(&self) -> &[AttributeSpec] {
        &self.attributes
    }

    /// The declaration of attribute `name`, if it takes one.
    pub fn attribute_spec(&self, name: &str) -> Option<&AttributeSpec> {
        self.attributes.iter().find(|a| a.name() == name)
    }

    /// Fewest and most source objects.
    pub fn source_range(&self) -> (u32, u32) {
        (self.min_sources, self.max_sources)
    }

    /// Fewest and most target objects.
    pub fn target_range(&self) -> (u32, u32) {
        (self.min_targets, self.max_targets)
    }
}

/// A source or target object of an action, with its connection's dialect.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    node_id: i64,
    object_type_id: i64,
    connection_id: i64,
    name: RString,
    schema: ROption<RString>,
    dialect: Dialect,
}

impl ObjectRef {
    /// An object: its node, object type (`1` table, `2` view), connection number, name
    /// (`field1`), schema (`field2`, for tables) and its connection's dialect.
    pub fn new(
        node_id: i64,
        object_type_id: i64,
        connection_id: i64,
        name: &str,
        schema: Option<&str>,
        dialect: Dialect,
    ) -> Self {
        ObjectRef {
            node_id,
            object_type_id,
            connection_id,
            name: name.into(),
            schema: schema.map(RString::from).into(),
            dialect,
        }
    }

    /// The node id.
    pub fn node_id(&self) -> i64 {
        self.node_id
    }

    /// The object type (`1` table, `2` view).
    pub fn object_type_id(&self) -> i64 {
        self.object_type_id
    }

    /// The connection number.
    pub fn connection_id(&self) -> i64 {
        self.connection_id
    }

    /// The object's name (`field1`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its schema (`field2`), if written.
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_ref().into_option().map(RString::as_str)
    }

    /// The dialect of its connection.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }
}

/// An attribute value as deployed: its kind (a boolean, text or a whole number; later sdk
/// versions may add kinds) and the value. Read it with [`AttributeValue::as_bool`],
/// [`AttributeValue::as_str`] or [`AttributeValue::as_integer`].
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct AttributeValue {
    kind: AttributeKind,
    integer: i64,
    text: RString,
}

impl AttributeValue {
    /// A boolean.
    pub fn bool(b: bool) -> Self {
        AttributeValue {
            kind: AttributeKind::Bool,
            integer: i64::from(b),
            text: RString::new(),
        }
    }

    /// Text.
    pub fn string(text: impl Into<String>) -> Self {
        AttributeValue {
            kind: AttributeKind::String,
            integer: 0,
            text: RString::from(text.into()),
        }
    }

    /// A whole number.
    pub fn integer(i: i64) -> Self {
        AttributeValue {
            kind: AttributeKind::Integer,
            integer: i,
            text: RString::new(),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> AttributeKind {
        self.kind
    }

    /// The boolean, if it is one.
    pub fn as_bool(&self) -> Option<bool> {
        (self.kind == AttributeKind::Bool).then_some(self.integer != 0)
    }

    /// The text, if it is text.
    pub fn as_str(&self) -> Option<&str> {
        (self.kind == AttributeKind::String).then_some(self.text.as_str())
    }

    /// The whole number, if it is one.
    pub fn as_integer(&self) -> Option<i64> {
        (self.kind == AttributeKind::Integer).then_some(self.integer)
    }
}

open_enum! {
    /// How bad a problem found by `validate` is. A host meeting a severity it does not know
    /// takes it as an error.
    pub struct Severity {
        /// Rejects the deploy.
        Error = 0,
        /// Reported; the deploy goes on.
        Warning = 1,
    }
}

/// A problem found by `validate`: where it is, a code and a message.
///
/// It points into the action text (`offset`), or, with [`Problem::on_attribute`], at an
/// attribute (`offset` is then in the attribute's value, for a string), and the host places
/// it at that line and column of the `.dsr` file. Codes are the module's own: the host
/// answers `Module.code` (`Upsert.keys`) for a code that is not already namespaced; the
/// shared ones, `sql.*` and `module.*`, stay as they are.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    severity: Severity,
    code: RString,
    message: RString,
    offset: ROption<u32>,
    attribute: ROption<RString>,
}

impl Problem {
    /// An error at byte `offset` of the action text (`None`: the action as a whole).
    pub fn error(code: &str, message: impl Into<String>, offset: Option<u32>) -> Self {
        Problem {
            severity: Severity::Error,
            code: code.into(),
            message: RString::from(message.into()),
            offset: offset.into(),
            attribute: ROption::RNone,
        }
    }

    /// A warning at byte `offset` of the action text.
    pub fn warning(code: &str, message: impl Into<String>, offset: Option<u32>) -> Self {
        Problem {
            severity: Severity::Warning,
            ..Problem::error(code, message, offset)
        }
    }

    /// The same problem about attribute `name`: its offset is then one in the attribute's
    /// value (for a string), and the host places it there.
    #[must_use]
    pub fn on_attribute(mut self, name: &str) -> Self {
        self.attribute = ROption::RSome(name.into());
        self
    }

    /// Error or warning.
    pub fn severity(&self) -> Severity {
        self.severity
    }

    /// Its code, as the module wrote it (`keys`, `sql.syntax`).
    pub fn code(&self) -> &str {
        &self.code
    }

    /// What is wrong.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The byte offset it points at: in the action text, or in the attribute's value.
    pub fn offset(&self) -> Option<u32> {
        self.offset.into_option()
    }

    /// The attribute it is about, if any.
    pub fn attribute(&self) -> Option<&str> {
        self.attribute.as_ref().into_option().map(RString::as_str)
    }
}

/// A table named in SQL.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct TableName {
    schema: ROption<RString>,
    name: RString,
    offset: ROption<u32>,
}

impl TableName {
    /// A table `schema.name` named at byte `offset` of the action text.
    pub fn new(schema: Option<&str>, name: &str, offset: Option<u32>) -> Self {
        TableName {
            schema: schema.map(RString::from).into(),
            name: name.into(),
            offset: offset.into(),
        }
    }

    /// The schema, if written.
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_ref().into_option().map(RString::as_str)
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the name is in the action text.
    pub fn offset(&self) -> Option<u32> {
        self.offset.into_option()
    }
}

/// A table an action's text writes, and how: its rows only (`INSERT`, `UPDATE`, `DELETE`,
/// `MERGE`), or the table itself (`CREATE`, `DROP`, `ALTER`: DDL), which a run does before
/// the other actions that read or write the table. Added in sdk 0.3.2.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct WrittenTable {
    table: TableName,
    defines: bool,
}

impl WrittenTable {
    /// `table`, whose rows are written (`defines` false) or which is created, dropped or
    /// altered (`defines` true).
    pub fn new(table: TableName, defines: bool) -> Self {
        WrittenTable { table, defines }
    }

    /// The table.
    pub fn table(&self) -> &TableName {
        &self.table
    }

    /// Whether the text creates, drops or alters it (DDL).
    pub fn defines(&self) -> bool {
        self.defines
    }
}

/// Attribute values by name, as `validate` and `run` get them.
fn find_attribute<'a>(
    attributes: &'a [Tuple2<RString, AttributeValue>],
    name: &str,
) -> Option<&'a AttributeValue> {
    attributes.iter().find(|t| t.0 == name).map(|t| &t.1)
}

fn attribute_list(
    attributes: Vec<(String, AttributeValue)>,
) -> RVec<Tuple2<RString, AttributeValue>> {
    attributes
        .into_iter()
        .map(|(k, v)| Tuple2(RString::from(k), v))
        .collect()
}

/// What `validate` gets: the action's id and text (variables not substituted), its
/// attributes beyond table A (with the declared defaults of those it does not write), and its
/// source and target objects.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct ValidateInput {
    action_id: i64,
    action: ROption<RString>,
    attributes: RVec<Tuple2<RString, AttributeValue>>,
    sources: RVec<ObjectRef>,
    targets: RVec<ObjectRef>,
}

impl ValidateInput {
    /// What the host gives `validate` (and what a test gives it).
    pub fn new(
        action_id: i64,
        action: Option<&str>,
        attributes: Vec<(String, AttributeValue)>,
        sources: Vec<ObjectRef>,
        targets: Vec<ObjectRef>,
    ) -> Self {
        ValidateInput {
            action_id,
            action: action.map(RString::from).into(),
            attributes: attribute_list(attributes),
            sources: sources.into(),
            targets: targets.into(),
        }
    }

    /// The action node's id.
    pub fn action_id(&self) -> i64 {
        self.action_id
    }

    /// The action text, variables not substituted, if the action has one.
    pub fn action(&self) -> Option<&str> {
        self.action.as_ref().into_option().map(RString::as_str)
    }

    /// Its attributes beyond table A, by name.
    pub fn attributes(&self) -> impl Iterator<Item = (&str, &AttributeValue)> {
        self.attributes.iter().map(|t| (t.0.as_str(), &t.1))
    }

    /// The value of attribute `name`, if given (or declared with a default).
    pub fn attribute(&self, name: &str) -> Option<&AttributeValue> {
        find_attribute(&self.attributes, name)
    }

    /// Text attribute `name`.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.attribute(name).and_then(AttributeValue::as_str)
    }

    /// Whole-number attribute `name`.
    pub fn integer(&self, name: &str) -> Option<i64> {
        self.attribute(name).and_then(AttributeValue::as_integer)
    }

    /// A boolean attribute, with a default.
    pub fn flag(&self, name: &str, default: bool) -> bool {
        self.attribute(name)
            .and_then(AttributeValue::as_bool)
            .unwrap_or(default)
    }

    /// Source objects (edges object -> action).
    pub fn sources(&self) -> &[ObjectRef] {
        &self.sources
    }

    /// Target objects (edges action -> object).
    pub fn targets(&self) -> &[ObjectRef] {
        &self.targets
    }
}

/// What `validate` gives: every problem found, and the tables the action text reads (each
/// must be a source, or a target, of the action).
#[repr(C)]
#[derive(StableAbi, Debug, Clone, Default)]
pub struct ValidateOutput {
    problems: RVec<Problem>,
    reads: RVec<TableName>,
}

impl ValidateOutput {
    /// Nothing found, nothing read.
    pub fn new() -> Self {
        ValidateOutput::default()
    }

    /// Adds a problem.
    pub fn push(&mut self, problem: Problem) {
        self.problems.push(problem);
    }

    /// Adds a table the action text reads.
    pub fn read(&mut self, table: TableName) {
        self.reads.push(table);
    }

    /// Adds what `other` found and read.
    pub fn append(&mut self, other: ValidateOutput) {
        self.problems.extend(other.problems);
        self.reads.extend(other.reads);
    }

    /// Keeps only the problems `keep` says yes to.
    pub fn retain_problems(&mut self, keep: impl FnMut(&Problem) -> bool) {
        self.problems.retain(keep);
    }

    /// The problems found.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The tables read.
    pub fn reads(&self) -> &[TableName] {
        &self.reads
    }

    /// Whether an error (not only warnings) was found.
    pub fn has_errors(&self) -> bool {
        self.problems
            .iter()
            .any(|p| p.severity() != Severity::Warning)
    }
}

/// Where a module's log lines go (the host stores them with the action, while it runs).
#[repr(transparent)]
#[derive(StableAbi)]
pub struct Log {
    inner: LoggerBox,
}

impl Log {
    /// A log that hands each line to `sink` (for hosts and tests); a panic in it is caught.
    pub fn new(sink: impl FnMut(&str) + Send + 'static) -> Self {
        Log {
            inner: LoggerFfi_TO::from_value(FnLogger(sink), TD_Opaque),
        }
    }

    /// Logs one line.
    pub fn log(&mut self, line: &str) {
        self.inner.log(line.into());
    }
}

struct FnLogger<F>(F);

impl<F: FnMut(&str) + Send> LoggerFfi for FnLogger<F> {
    fn log(&mut self, line: RStr<'_>) {
        let _ = crate::error::catch(|| {
            (self.0)(line.as_str());
            Ok(())
        });
    }
}

/// The boundary form of a [`Log`].
#[sabi_trait]
pub trait LoggerFfi: Send {
    /// See [`Log::log`].
    #[sabi(last_prefix_field)]
    fn log(&mut self, line: RStr<'_>);
}

/// An owned logger in its boundary form.
pub type LoggerBox = LoggerFfi_TO<'static, RBox<()>>;

/// A connection the host opened for a run.
#[repr(C)]
#[derive(StableAbi)]
struct ConnectionSlot {
    id: i64,
    connection: Connection,
}

/// What the host gives `run` (see [`RunContext::new`]).
pub struct RunParts {
    /// The action node's id.
    pub action_id: i64,
    /// The action's name.
    pub action_name: String,
    /// The action text with variables substituted.
    pub action: String,
    /// Attributes beyond table A (with the declared defaults of those it does not write).
    pub attributes: Vec<(String, AttributeValue)>,
    /// Source objects.
    pub sources: Vec<ObjectRef>,
    /// Target objects.
    pub targets: Vec<ObjectRef>,
    /// One open connection for every connection number the objects use.
    pub connections: Vec<(i64, Connection)>,
    /// Variables (`variableList` and built-ins), name and value.
    pub variables: Vec<(String, String)>,
    /// Where log lines go.
    pub log: Log,
    /// Raised when the action is asked to halt.
    pub halt: HaltSignal,
}

/// What `run` gets: the action, its objects, the open connections, the variables, a log and
/// the halt signal.
#[repr(C)]
#[derive(StableAbi)]
pub struct RunContext {
    action_id: i64,
    action_name: RString,
    action: RString,
    attributes: RVec<Tuple2<RString, AttributeValue>>,
    sources: RVec<ObjectRef>,
    targets: RVec<ObjectRef>,
    connections: RVec<ConnectionSlot>,
    variables: RVec<Tuple2<RString, RString>>,
    log: Log,
    halt: HaltSignal,
}

impl RunContext {
    /// What the host gives `run` (and what a test gives it).
    pub fn new(parts: RunParts) -> Self {
        RunContext {
            action_id: parts.action_id,
            action_name: parts.action_name.into(),
            action: parts.action.into(),
            attributes: attribute_list(parts.attributes),
            sources: parts.sources.into(),
            targets: parts.targets.into(),
            connections: parts
                .connections
                .into_iter()
                .map(|(id, connection)| ConnectionSlot { id, connection })
                .collect(),
            variables: parts
                .variables
                .into_iter()
                .map(|(k, v)| Tuple2(RString::from(k), RString::from(v)))
                .collect(),
            log: parts.log,
            halt: parts.halt,
        }
    }

    /// The action node's id.
    pub fn action_id(&self) -> i64 {
        self.action_id
    }

    /// The action's name.
    pub fn action_name(&self) -> &str {
        &self.action_name
    }

    /// The action text with variables substituted.
    pub fn action(&self) -> &str {
        &self.action
    }

    /// For the host, between the runs of a looped action (`loopQuery`): the action text and
    /// the variables of the next iteration.
    pub fn next_iteration(&mut self, action: String, variables: Vec<(String, String)>) {
        self.action = action.into();
        self.variables = variables
            .into_iter()
            .map(|(k, v)| Tuple2(RString::from(k), RString::from(v)))
            .collect();
    }

    /// Source objects.
    pub fn sources(&self) -> &[ObjectRef] {
        &self.sources
    }

    /// Target objects.
    pub fn targets(&self) -> &[ObjectRef] {
        &self.targets
    }

    /// The open connection with number `id`.
    ///
    /// # Errors
    ///
    /// When the host did not open it (no object of the action uses it).
    pub fn connection(&mut self, id: i64) -> PluginResult<&mut Connection> {
        self.connection_and_log(id)
            .map(|(connection, _)| connection)
    }

    /// The open connection with number `id` together with the log, so that a module can
    /// log while it holds the connection (`log.log("...")`).
    ///
    /// # Errors
    ///
    /// When the host did not open it (no object of the action uses it).
    pub fn connection_and_log(&mut self, id: i64) -> PluginResult<(&mut Connection, &mut Log)> {
        let RunContext {
            connections, log, ..
        } = self;
        let connection = connections
            .iter_mut()
            .find(|s| s.id == id)
            .map(|s| &mut s.connection)
            .ok_or_else(|| {
                PluginError::of(
                    ErrorKind::Invalid,
                    format!("connection {id} is not open for this action"),
                )
            })?;
        Ok((connection, log))
    }

    /// Two different open connections at once (source and target of a transfer).
    ///
    /// # Errors
    ///
    /// When `a == b` or either is not open.
    pub fn two_connections(
        &mut self,
        a: i64,
        b: i64,
    ) -> PluginResult<(&mut Connection, &mut Connection)> {
        if a == b {
            return Err(PluginError::of(
                ErrorKind::Invalid,
                format!("connections {a} and {b} are the same"),
            ));
        }
        let mut first = None;
        let mut second = None;
        for slot in self.connections.iter_mut() {
            if slot.id == a {
                first = Some(&mut slot.connection);
            } else if slot.id == b {
                second = Some(&mut slot.connection);
            }
        }
        match (first, second) {
            (Some(x), Some(y)) => Ok((x, y)),
            _ => Err(PluginError::of(
                ErrorKind::Invalid,
                format!("connections {a} and {b} are not both open"),
            )),
        }
    }

    /// The open connections, by number.
    pub fn connections(&self) -> impl Iterator<Item = (i64, &Connection)> {
        self.connections.iter().map(|s| (s.id, &s.connection))
    }

    /// Its attributes beyond table A, by name.
    pub fn attributes(&self) -> impl Iterator<Item = (&str, &AttributeValue)> {
        self.attributes.iter().map(|t| (t.0.as_str(), &t.1))
    }

    /// The value of attribute `name`, if given (or declared with a default).
    pub fn attribute(&self, name: &str) -> Option<&AttributeValue> {
        find_attribute(&self.attributes, name)
    }

    /// Text attribute `name`.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.attribute(name).and_then(AttributeValue::as_str)
    }

    /// Whole-number attribute `name`.
    pub fn integer(&self, name: &str) -> Option<i64> {
        self.attribute(name).and_then(AttributeValue::as_integer)
    }

    /// A boolean attribute, with a default.
    pub fn flag(&self, name: &str, default: bool) -> bool {
        self.attribute(name)
            .and_then(AttributeValue::as_bool)
            .unwrap_or(default)
    }

    /// The variables (`variableList` and the built-ins), by name.
    pub fn variables(&self) -> impl Iterator<Item = (&str, &str)> {
        self.variables.iter().map(|t| (t.0.as_str(), t.1.as_str()))
    }

    /// The value of variable `name` (from `variableList`, or a built-in one).
    pub fn variable(&self, name: &str) -> Option<&str> {
        self.variables().find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// Logs a line.
    pub fn log(&mut self, line: &str) {
        self.log.log(line);
    }

    /// Whether the action was asked to halt (`HaltBatchInstance`): a module that works
    /// between statements stops soon after, with an error. Statements running on the
    /// action's connections are interrupted by the host.
    pub fn halted(&self) -> bool {
        self.halt.is_raised()
    }

    /// `Err` (of kind [`ErrorKind::Halted`]) once the action was asked to halt, for `?`
    /// between steps of work.
    ///
    /// # Errors
    ///
    /// When the action was asked to halt.
    pub fn stop_if_halted(&self) -> PluginResult<()> {
        self.halt.check()
    }
}

/// What `run` gives: rows read from the sources, and written (inserted), updated and deleted
/// in the targets.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunOutcome {
    /// Rows read from sources.
    pub rows_read: u64,
    /// Rows inserted into targets.
    pub rows_written: u64,
    /// Rows updated in targets.
    pub rows_updated: u64,
    /// Rows deleted from targets.
    pub rows_deleted: u64,
}

/// An action module, as its author writes it. The [`export_plugin!`](crate::export_plugin)
/// macro puts it behind the boundary with every call guarded against panics.
pub trait ActionModule: Send + Sync + 'static {
    /// Name, attributes, and how many sources and targets it takes.
    fn info(&self) -> ModuleInfo;

    /// Checks the action: every problem with its offset in the action text, and the tables
    /// the text reads. No I/O: validation judges the document, not the data.
    fn validate(&self, input: &ValidateInput) -> ValidateOutput;

    /// Does the work through the context's connections.
    ///
    /// # Errors
    ///
    /// What went wrong; the host rolls the action's target transaction back.
    fn run(&self, ctx: &mut RunContext) -> PluginResult<RunOutcome>;

    /// The tables the action's text writes, each saying whether it defines it (DDL): asked at
    /// deploy beside `validate`, so that a run does an action's DDL before the other actions
    /// of the table. No I/O. Nothing by default (a module whose target objects say all it
    /// writes).
    fn writes(&self, input: &ValidateInput) -> Vec<WrittenTable> {
        let _ = input;
        Vec::new()
    }

    /// The tables the action checks (a data test), asked at deploy beside `validate`: the
    /// other actions of a run that read such a table without writing it wait for this one,
    /// and are skipped when it fails, as the readers of a failed writer are. No I/O. None by
    /// default.
    fn checks(&self, input: &ValidateInput) -> Vec<TableName> {
        let _ = input;
        Vec::new()
    }
}

/// The boundary form of an [`ActionModule`].
#[sabi_trait]
pub trait ActionModuleFfi: Send + Sync {
    /// See [`ActionModule::info`].
    fn info(&self) -> RResult<ModuleInfo, PluginError>;

    /// See [`ActionModule::validate`].
    fn validate(&self, input: &ValidateInput) -> RResult<ValidateOutput, PluginError>;

    /// See [`ActionModule::run`].
    #[sabi(last_prefix_field)]
    fn run(&self, ctx: &mut RunContext) -> RResult<RunOutcome, PluginError>;

    /// See [`ActionModule::writes`]. Added in sdk 0.3.2 (after the prefix: a module from a
    /// plugin built before writes nothing it says).
    fn writes(&self, input: &ValidateInput) -> RResult<RVec<WrittenTable>, PluginError> {
        let _ = input;
        RResult::ROk(RVec::new())
    }

    /// See [`ActionModule::checks`]. Added in sdk 0.3.3 (after the prefix: a module from a
    /// plugin built before checks nothing).
    fn checks(&self, input: &ValidateInput) -> RResult<RVec<TableName>, PluginError> {
        let _ = input;
        RResult::ROk(RVec::new())
    }
}

/// An action module as it crosses the boundary.
pub type ActionModuleBox = ActionModuleFfi_TO<'static, RBox<()>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_reads_as_its_kind() {
        let spec = |kind, default| AttributeSpec::new("a", kind, default, "");
        assert_eq!(
            spec(AttributeKind::Bool, Some("true")).default_value(),
            Some(AttributeValue::bool(true))
        );
        assert_eq!(
            spec(AttributeKind::Integer, Some(" 42")).default_value(),
            Some(AttributeValue::integer(42))
        );
        assert_eq!(
            spec(AttributeKind::String, Some("id")).default_value(),
            Some(AttributeValue::string("id"))
        );
        assert_eq!(
            spec(AttributeKind::Integer, Some("many")).default_value(),
            None
        );
        assert_eq!(spec(AttributeKind::Bool, None).default_value(), None);
        assert!(spec(AttributeKind::Bool, None).required().is_required());
    }

    #[test]
    fn the_context_lends_what_it_was_given_in_plain_types() {
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = std::sync::Arc::clone(&lines);
        let mut ctx = RunContext::new(RunParts {
            action_id: 7,
            action_name: "load".to_owned(),
            action: "SELECT 1".to_owned(),
            attributes: vec![("keys".to_owned(), AttributeValue::string("id"))],
            sources: vec![ObjectRef::new(
                1,
                1,
                2,
                "raw",
                Some("main"),
                Dialect::Sqlite,
            )],
            targets: Vec::new(),
            connections: Vec::new(),
            variables: vec![("day".to_owned(), "2026-11-24".to_owned())],
            log: Log::new(move |l| {
                seen.lock().expect("lines").push(l.to_owned());
            }),
            halt: HaltSignal::new(),
        });
        assert_eq!((ctx.action_id(), ctx.action()), (7, "SELECT 1"));
        assert_eq!(ctx.text("keys"), Some("id"));
        assert_eq!(ctx.variable("day"), Some("2026-11-24"));
        assert_eq!(ctx.sources()[0].schema(), Some("main"));
        let e = ctx.connection(2).expect_err("none open");
        assert_eq!(e.kind(), ErrorKind::Invalid);
        ctx.log("one");
        assert_eq!(*lines.lock().expect("lines"), vec!["one"]);
        assert!(!ctx.halted() && ctx.stop_if_halted().is_ok());
    }
}
