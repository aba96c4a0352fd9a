//! Object types and connection bridges.

use crate::connection::Connection;
use crate::error::{PluginError, PluginResult};
use crate::module::ObjectRef;
use abi_stable::StableAbi;
use abi_stable::sabi_trait;
use abi_stable::std_types::{RBox, ROption, RResult, RString, RVec, Tuple2};

/// What an object type declares of itself.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct ObjectTypeInfo {
    id: i64,
    name: RString,
}

impl ObjectTypeInfo {
    /// The type serving `objectTypeId` `id`, named `name` (`table`).
    pub fn new(id: i64, name: &str) -> Self {
        ObjectTypeInfo {
            id,
            name: name.into(),
        }
    }

    /// The `objectTypeId` it serves.
    pub fn id(&self) -> i64 {
        self.id
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The identity of an object for dependency matching: two nodes name the same object when
/// their identities are equal.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectIdentity {
    connection_id: i64,
    schema: RString,
    name: RString,
}

impl ObjectIdentity {
    /// The identity: connection number, schema and name, folded as the type decides
    /// (tables: lower case), the schema empty when there is none.
    pub fn new(connection_id: i64, schema: &str, name: &str) -> Self {
        ObjectIdentity {
            connection_id,
            schema: schema.into(),
            name: name.into(),
        }
    }

    /// The connection number.
    pub fn connection_id(&self) -> i64 {
        self.connection_id
    }

    /// The schema, folded; empty when none.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The name, folded.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// An object type, as its author writes it.
pub trait ObjectType: Send + Sync + 'static {
    /// Id and name.
    fn info(&self) -> ObjectTypeInfo;

    /// The object's identity. It may depend on the object's type, connection, schema and
    /// name only (not its node): a run's order asks once for each distinct object.
    fn identity(&self, object: &ObjectRef) -> ObjectIdentity;

    /// Checks the object against its connection: `Some(message)` when something is off (a
    /// warning at deploy: another action may create it).
    ///
    /// # Errors
    ///
    /// When the check itself failed.
    fn check(
        &self,
        object: &ObjectRef,
        connection: &mut Connection,
    ) -> PluginResult<Option<String>>;
}

/// The boundary form of an [`ObjectType`].
#[sabi_trait]
pub trait ObjectTypeFfi: Send + Sync {
    /// See [`ObjectType::info`].
    fn info(&self) -> RResult<ObjectTypeInfo, PluginError>;

    /// See [`ObjectType::identity`].
    fn identity(&self, object: &ObjectRef) -> RResult<ObjectIdentity, PluginError>;

    /// See [`ObjectType::check`].
    #[sabi(last_prefix_field)]
    fn check(
        &self,
        object: &ObjectRef,
        connection: &mut Connection,
    ) -> RResult<ROption<RString>, PluginError>;
}

/// An object type as it crosses the boundary.
pub type ObjectTypeBox = ObjectTypeFfi_TO<'static, RBox<()>>;

/// A key file entry, as a bridge gets it: `key|type|url|user|password|options`.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct KeyEntry {
    key: RString,
    kind: RString,
    url: RString,
    user: RString,
    password: RString,
    options: RVec<Tuple2<RString, RString>>,
}

impl KeyEntry {
    /// The option through which the host tells every bridge the service time zone (an IANA
    /// name, `Europe/Berlin`): the zone of the clock functions `current_local_timestamp()`
    /// and `is_dst_change_tonight()`. Options starting with `weft.` come from the host, never
    /// from the key file.
    pub const SERVICE_ZONE: &'static str = "weft.zone";
    /// The option with the service clock's instant when the connection was opened, in RFC
    /// 3339 (`--fake-now` moves it).
    pub const SERVICE_NOW: &'static str = "weft.now";
    /// The option that says how the service clock moves from [`Self::SERVICE_NOW`] on:
    /// `running` (with real time) or `stepped` (it stands still; development servers with
    /// `--stepped-clock`).
    pub const SERVICE_CLOCK: &'static str = "weft.clock";
    /// The option with the default schema of the action's connection: the `schema` of the
    /// connection in the repository (its `.dsr` object), present only when it names one. A
    /// bridge whose database has schemas makes it where unqualified names are looked up
    /// and created (PostgreSQL: first in the `search_path`).
    pub const DEFAULT_SCHEMA: &'static str = "weft.schema";

    /// An entry (for hosts and tests).
    pub fn new(
        key: &str,
        kind: &str,
        url: &str,
        user: &str,
        password: &str,
        options: Vec<(String, String)>,
    ) -> Self {
        KeyEntry {
            key: key.into(),
            kind: kind.into(),
            url: url.into(),
            user: user.into(),
            password: password.into(),
            options: options
                .into_iter()
                .map(|(k, v)| Tuple2(RString::from(k), RString::from(v)))
                .collect(),
        }
    }

    /// The connection number or name.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The connection type.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The user.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The password: never put it into a message.
    pub fn password(&self) -> &str {
        &self.password
    }

    /// The `k=v` options, in order.
    pub fn options(&self) -> impl Iterator<Item = (&str, &str)> {
        self.options.iter().map(|t| (t.0.as_str(), t.1.as_str()))
    }

    /// The value of option `name`, if set.
    pub fn option(&self, name: &str) -> Option<&str> {
        self.options().find(|(k, _)| *k == name).map(|(_, v)| v)
    }
}

/// A connection bridge, as its author writes it.
pub trait ConnectionBridge: Send + Sync + 'static {
    /// The connection type it serves, e.g. `jdbc`.
    fn connection_type(&self) -> String;

    /// Opens a connection ([`Connection::new`] of a
    /// [`DatabaseConnection`](crate::DatabaseConnection)).
    ///
    /// # Errors
    ///
    /// When the connection cannot be opened; the message names the entry, never its password.
    fn open(&self, entry: &KeyEntry) -> PluginResult<Connection>;
}

/// The boundary form of a [`ConnectionBridge`].
#[sabi_trait]
pub trait ConnectionBridgeFfi: Send + Sync {
    /// See [`ConnectionBridge::connection_type`].
    fn connection_type(&self) -> RResult<RString, PluginError>;

    /// See [`ConnectionBridge::open`].
    #[sabi(last_prefix_field)]
    fn open(&self, entry: &KeyEntry) -> RResult<Connection, PluginError>;
}

/// A bridge as it crosses the boundary.
pub type ConnectionBridgeBox = ConnectionBridgeFfi_TO<'static, RBox<()>>;
