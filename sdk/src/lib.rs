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
//! cross the boundary are [`Value`]s.
//!
//! Everything that crosses the boundary is `abi_stable`: the library's root module
//! ([`PluginMod`]) is checked at load, and this crate's version is the ABI version (semver:
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
mod value;

pub use abi_stable;
pub use connection::*;
pub use error::*;
pub use guard::*;
pub use halt::*;
pub use module::*;
pub use object_type::*;
pub use root::*;
pub use value::*;

/// The SDK version, which is the plugin ABI version (checked with semver when a plugin loads).
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");
