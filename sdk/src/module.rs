//! Action modules: what they declare, what `validate` gets and gives, what `run` gets.

use crate::connection::ConnectionBox;
use crate::error::{ErrorKind, PluginError, PluginResult};
use crate::halt::HaltSignal;
use crate::value::Dialect;
use abi_stable::StableAbi;
use abi_stable::sabi_trait;
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
    /// Name as written in the `.dsr` file, e.g. `truncateBefore`.
    pub name: RString,
    /// Its type.
    pub kind: AttributeKind,
    /// The default, as it would be written, if any: the host gives it to `validate` and
    /// `run` when the action does not write the attribute.
    pub default: ROption<RString>,
    /// What it does.
    pub description: RString,
    /// Whether an action must write it (the host refuses the deploy otherwise).
    pub required: bool,
}

impl AttributeSpec {
    /// An attribute.
    pub fn new(name: &str, kind: AttributeKind, default: Option<&str>, description: &str) -> Self {
        AttributeSpec {
            name: name.into(),
            kind,
            default: default.map(RString::from).into(),
            description: description.into(),
            required: false,
        }
    }

    /// The same attribute, which every action must write.
    #[must_use]
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// The default as a value of the attribute's kind (`None` without one, or for one that
    /// does not read as its kind).
    pub fn default_value(&self) -> Option<AttributeValue> {
        let text = self.default.as_ref().into_option()?.as_str();
        match self.kind {
            AttributeKind::Bool => text.trim().parse().ok().map(AttributeValue::bool),
            AttributeKind::Integer => text.trim().parse().ok().map(AttributeValue::integer),
            AttributeKind::String => Some(AttributeValue::string(text)),
            _ => None,
        }
    }
}

/// What a module declares of itself.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct ModuleInfo {
    /// The name written in `module`, e.g. `Upsert`.
    pub name: RString,
    /// One line on what it does.
    pub description: RString,
    /// Attributes beyond table A.
    pub attributes: RVec<AttributeSpec>,
    /// Fewest source objects.
    pub min_sources: u32,
    /// Most source objects (`u32::MAX`: any number).
    pub max_sources: u32,
    /// Fewest target objects.
    pub min_targets: u32,
    /// Most target objects.
    pub max_targets: u32,
}

/// A source or target object of an action, with its connection's dialect.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    /// The node id.
    pub node_id: i64,
    /// Object type (`1` table, `2` view).
    pub object_type_id: i64,
    /// Connection number.
    pub connection_id: i64,
    /// `field1`: the object name.
    pub name: RString,
    /// `field2`: the schema, for tables.
    pub schema: ROption<RString>,
    /// The dialect of the object's connection.
    pub dialect: Dialect,
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
    /// Error or warning.
    pub severity: Severity,
    /// A stable code such as `sql.syntax` or `keys`.
    pub code: RString,
    /// What is wrong.
    pub message: RString,
    /// Byte offset in the action text (or in the attribute's value, with `attribute`), where
    /// the problem is there.
    pub offset: ROption<u32>,
    /// The attribute the problem is about, by name.
    pub attribute: ROption<RString>,
}

impl Problem {
    /// An error at `offset` of the action text.
    pub fn error(code: &str, message: impl Into<String>, offset: Option<u32>) -> Self {
        Problem {
            severity: Severity::Error,
            code: code.into(),
            message: RString::from(message.into()),
            offset: offset.into(),
            attribute: ROption::RNone,
        }
    }

    /// A warning at `offset` of the action text.
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
}

/// A table named in SQL.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct TableName {
    /// Schema, if written.
    pub schema: ROption<RString>,
    /// Name.
    pub name: RString,
    /// Byte offset of the name in the action text.
    pub offset: ROption<u32>,
}

/// What `validate` gets.
#[repr(C)]
#[derive(StableAbi, Debug, Clone)]
pub struct ValidateInput {
    /// The action node's id.
    pub action_id: i64,
    /// The action text, variables not substituted.
    pub action: ROption<RString>,
    /// Attributes beyond table A, as deployed.
    pub attributes: RVec<Tuple2<RString, AttributeValue>>,
    /// Source objects (edges object -> action).
    pub sources: RVec<ObjectRef>,
    /// Target objects (edges action -> object).
    pub targets: RVec<ObjectRef>,
}

impl ValidateInput {
    /// The value of attribute `name`, if given (or declared with a default).
    pub fn attribute(&self, name: &str) -> Option<&AttributeValue> {
        self.attributes.iter().find(|t| t.0 == name).map(|t| &t.1)
    }

    /// Text attribute `name`.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.attribute(name).and_then(AttributeValue::as_str)
    }

    /// Whole-number attribute `name`.
    pub fn integer(&self, name: &str) -> Option<i64> {
        self.attribute(name).and_then(AttributeValue::as_integer)
    }
}

/// What `validate` gives.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, Default)]
pub struct ValidateOutput {
    /// Every problem found.
    pub problems: RVec<Problem>,
    /// The tables the action text reads; each must be a source (or a target) of the action.
    pub reads: RVec<TableName>,
}

/// Where a plugin's log lines go (the host stores them with the action).
#[sabi_trait]
pub trait Logger: Send {
    /// One line.
    #[sabi(last_prefix_field)]
    fn log(&mut self, line: RStr<'_>);
}

/// An owned logger.
pub type LoggerBox = Logger_TO<'static, RBox<()>>;

/// A connection the host opened for a run.
#[repr(C)]
#[derive(StableAbi)]
pub struct ConnectionSlot {
    /// Connection number.
    pub id: i64,
    /// The connection.
    pub connection: ConnectionBox,
}

/// What `run` gets: the action, its objects, the open connections, the variables, a logger.
#[repr(C)]
#[derive(StableAbi)]
pub struct RunContext {
    /// The action node's id.
    pub action_id: i64,
    /// The action's name.
    pub action_name: RString,
    /// The action text with variables substituted.
    pub action: RString,
    /// Attributes beyond table A.
    pub attributes: RVec<Tuple2<RString, AttributeValue>>,
    /// Source objects.
    pub sources: RVec<ObjectRef>,
    /// Target objects.
    pub targets: RVec<ObjectRef>,
    /// One open connection for every connection number the objects use.
    pub connections: RVec<ConnectionSlot>,
    /// Variables (`variableList` and built-ins), name and value.
    pub variables: RVec<Tuple2<RString, RString>>,
    /// Where log lines go.
    pub log: LoggerBox,
    /// Raised when the action is asked to halt.
    pub halt: HaltSignal,
}

impl RunContext {
    /// The open connection with number `id`.
    ///
    /// # Errors
    ///
    /// When the host did not open it (no object of the action uses it).
    pub fn connection(&mut self, id: i64) -> PluginResult<&mut ConnectionBox> {
        self.connection_and_log(id)
            .map(|(connection, _)| connection)
    }

    /// The open connection with number `id` together with the logger, so that a module can
    /// log while it holds the connection (`log.log("...".into())`).
    ///
    /// # Errors
    ///
    /// When the host did not open it (no object of the action uses it).
    pub fn connection_and_log(
        &mut self,
        id: i64,
    ) -> PluginResult<(&mut ConnectionBox, &mut LoggerBox)> {
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
    ) -> PluginResult<(&mut ConnectionBox, &mut ConnectionBox)> {
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

    /// The value of attribute `name`, if given (or declared with a default).
    pub fn attribute(&self, name: &str) -> Option<&AttributeValue> {
        self.attributes.iter().find(|t| t.0 == name).map(|t| &t.1)
    }

    /// Text attribute `name`.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.attribute(name).and_then(AttributeValue::as_str)
    }

    /// Whole-number attribute `name`.
    pub fn integer(&self, name: &str) -> Option<i64> {
        self.attribute(name).and_then(AttributeValue::as_integer)
    }

    /// The value of variable `name` (from `variableList`, or a built-in one).
    pub fn variable(&self, name: &str) -> Option<&str> {
        self.variables
            .iter()
            .find(|t| t.0 == name)
            .map(|t| t.1.as_str())
    }

    /// A boolean attribute, with a default.
    pub fn flag(&self, name: &str, default: bool) -> bool {
        self.attribute(name)
            .and_then(AttributeValue::as_bool)
            .unwrap_or(default)
    }

    /// Logs a line.
    pub fn log(&mut self, line: &str) {
        self.log.log(line.into());
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

/// What `run` gives.
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
        assert!(spec(AttributeKind::Bool, None).required().required);
    }
}
