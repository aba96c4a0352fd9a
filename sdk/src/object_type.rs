//! Object types and connection bridges.

use crate::connection::ConnectionBox;
use crate::error::{PluginError, PluginResult};
use crate::module::ObjectRef;
use abi_stable::StableAbi;
use abi_stable::sabi_trait;
use abi_stable::std_types::{RBox, ROption, RResult, RString, RVec, Tuple2};

/// What an object type declares of itself.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct ObjectTypeInfo {
    /// The `objectTypeId` it serves.
    pub id: i64,
    /// Its name, e.g. `table`.
    pub name: RString,
}

/// The identity of an object for dependency matching: two nodes name the same object when
/// their identities are equal.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectIdentity {
    /// Connection number.
    pub connection_id: i64,
    /// Schema, folded as the type decides (tables: lower case), empty when none.
    pub schema: RString,
    /// Name, folded likewise.
    pub name: RString,
}

/// An object type, as its author writes it.
pub trait ObjectType: Send + Sync + 'static {
    /// Id and name.
    fn info(&self) -> ObjectTypeInfo;

    /// The object's identity.
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
        connection: &mut ConnectionBox,
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
        connection: &mut ConnectionBox,
    ) -> RResult<ROption<RString>, PluginError>;
}

/// An object type as it crosses the boundary.
pub type ObjectTypeBox = ObjectTypeFfi_TO<'static, RBox<()>>;

/// A key file entry, as a bridge gets it.
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct KeyEntry {
    /// Connection number or name.
    pub key: RString,
    /// Connection type.
    pub kind: RString,
    /// URL.
    pub url: RString,
    /// User.
    pub user: RString,
    /// Password.
    pub password: RString,
    /// `k=v` options.
    pub options: RVec<Tuple2<RString, RString>>,
}

/// A connection bridge, as its author writes it.
pub trait ConnectionBridge: Send + Sync + 'static {
    /// The connection type it serves, e.g. `jdbc`.
    fn connection_type(&self) -> String;

    /// Opens a connection.
    ///
    /// # Errors
    ///
    /// When the connection cannot be opened; the message names the entry, never its password.
    fn open(&self, entry: &KeyEntry) -> PluginResult<ConnectionBox>;
}

/// The boundary form of a [`ConnectionBridge`].
#[sabi_trait]
pub trait ConnectionBridgeFfi: Send + Sync {
    /// See [`ConnectionBridge::connection_type`].
    fn connection_type(&self) -> RResult<RString, PluginError>;

    /// See [`ConnectionBridge::open`].
    #[sabi(last_prefix_field)]
    fn open(&self, entry: &KeyEntry) -> RResult<ConnectionBox, PluginError>;
}

/// A bridge as it crosses the boundary.
pub type ConnectionBridgeBox = ConnectionBridgeFfi_TO<'static, RBox<()>>;
