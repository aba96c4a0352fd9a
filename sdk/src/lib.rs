//! The weft plugin SDK: what a plugin author depends on.
//!
//! weft does every transformation through plugins loaded at run time. A plugin library (a
//! crate with `crate-type = ["cdylib", "rlib"]`) may export several plugins of three kinds:
//!
//! - an **action module** ([`ActionModule`]): a name such as `Upsert`, the attributes it takes,
//!   `validate` (problems with positions in the action text, and the tables the text reads)
//!   and `run` (does the work through the connections of a [`RunContext`]);
//! - an **object type** ([`ObjectType`]): an `objectTypeId`, a name, the identity of an object
//!   for dependency matching, and a check of an object against its connection;
//! - a **connection bridge** ([`ConnectionBridge`]): a connection type (such as `jdbc`) that
//!   opens a [`Connection`] from a key file entry.
//!
//! The host hands plugins [`Connection`]s: execute statements, stream a query's rows in
//! batches, insert a batch, describe a table, name the SQL dialect, transactions. Values that
//! cross the boundary are [`Value`]s. A bridge implements [`DatabaseConnection`] for its
//! connections. All of it speaks plain Rust (`&str`, slices, `Option`, `Result`, iterators).
//!
//! Everything that crosses the boundary is `abi_stable`, kept in [`ffi`]: the library's root
//! module ([`ffi::PluginMod`]) is checked at load, and this crate's version is the ABI version (semver:
//! a plugin built against an incompatible sdk is refused with one line naming both versions).
//! The [`export_plugin!`] macro writes the root module and wraps every entry point in
//! `catch_unwind`, so that a panicking plugin becomes an error instead of aborting the host.
//! This crate does no I/O.
//!
//! ```ignore
//! use weft_sdk::{ActionModule, export_plugin};
//! struct Sql;
//! impl ActionModule for Sql { /* name, attributes, validate, run */ }
//! export_plugin! { modules: [Sql], object_types: [], bridges: [] }
//! ```
//!
//! `docs/plugin-guide.md` in the repository walks through a real plugin.
//!
//! Inside, the modules have no import circles: `error` (with `catch`, panics into errors) and
//! `value` at the bottom, then `halt`, `connection`, `module`, `object_type` in that order, and
//! `guard`, `root` and `testing` above them.

// abi_stable's derive macros generate items these lints flag.
#![allow(non_local_definitions, non_camel_case_types)]
// abi_stable's macros (`sabi_trait`, `StableAbi`) expand to unsafe code; this crate writes
// no unsafe code of its own.
#![allow(unsafe_code)]

#[macro_use]
mod open_enum;

mod connection;
mod error;
mod guard;
mod halt;
mod module;
mod object_type;
mod root;
#[cfg(feature = "testing")]
pub mod testing;
mod value;

pub use connection::{Batcher, Connection, DatabaseConnection, RowSink, Rows};
pub use error::{ErrorKind, PluginError, PluginResult, panic_message};
pub use halt::{HaltSignal, Interrupter};
pub use module::{
    ActionModule, AttributeKind, AttributeSpec, AttributeValue, Log, ModuleInfo, ObjectRef,
    Problem, RunContext, RunOutcome, RunParts, Severity, TableName, ValidateInput, ValidateOutput,
    WrittenTable,
};
pub use object_type::{ConnectionBridge, KeyEntry, ObjectIdentity, ObjectType, ObjectTypeInfo};
pub use value::{ColumnInfo, Datum, Dialect, Row, TableInfo, Value, ValueKind};

/// The boundary itself: the `#[repr(C)]` interfaces and boxes that cross between a plugin
/// library and the host, the root module, and the guards. Hosts and the
/// [`export_plugin!`] macro use it; plugin authors do not need to.
pub mod ffi {
    pub use crate::connection::{
        ConnectionBox, ConnectionFfi, ConnectionFfi_TO, RowSinkFfi, RowSinkFfi_TO,
    };
    pub use crate::error::catch;
    pub use crate::guard::{bridge_box, module_box, object_type_box};
    pub use crate::halt::{InterruptBox, InterruptFfi, InterruptFfi_TO};
    pub use crate::module::{
        ActionModuleBox, ActionModuleFfi, ActionModuleFfi_TO, LoggerBox, LoggerFfi, LoggerFfi_TO,
    };
    pub use crate::object_type::{
        ConnectionBridgeBox, ConnectionBridgeFfi, ConnectionBridgeFfi_TO, ObjectTypeBox,
        ObjectTypeFfi, ObjectTypeFfi_TO,
    };
    #[doc(hidden)]
    pub use crate::root::LIBRARY_HEADER_SYMBOL;
    pub use crate::root::{PluginInfo, PluginMod, PluginMod_Ref};
    pub use abi_stable;
}

/// The SDK version, which is the plugin ABI version (checked with semver when a plugin loads).
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");
