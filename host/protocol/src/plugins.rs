//! What a server loaded at its start (`ListPlugins`): the libraries with their modules,
//! object types and connection types, the process modules, and what it refused.

use serde::{Deserialize, Serialize};

/// `ListPlugins`' answer: what a server loaded at its start (or `weft plugins` finds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginList {
    /// The sdk (plugin ABI) version of this weft.
    pub sdk_version: String,
    /// The libraries that loaded, in load order.
    pub libraries: Vec<LibraryView>,
    /// The process modules that loaded, by name.
    #[serde(default)]
    pub process_modules: Vec<ProcessModuleView>,
    /// The libraries (or plugins in them) refused, with why.
    pub refused: Vec<RefusedView>,
    /// The connection types weft serves itself.
    pub native_connection_types: Vec<String>,
}

/// A loaded library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LibraryView {
    /// Its crate name.
    pub name: String,
    /// Its crate version.
    pub version: String,
    /// The installed file.
    pub path: String,
    /// Its action modules.
    pub modules: Vec<ModuleView>,
    /// Its object types, as `id name`.
    pub object_types: Vec<String>,
    /// Its connection types.
    pub connection_types: Vec<String>,
}

/// An action module as it declares itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleView {
    /// The name written in `module`.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its attributes beyond table A.
    pub attributes: Vec<AttributeView>,
    /// How many sources and targets it takes, in words (`1 source, 1 target`).
    pub objects: String,
}

/// An attribute a module takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttributeView {
    /// Its name.
    pub name: String,
    /// `Bool`, `String`, `Integer` (or a type this weft does not know, by code).
    pub kind: String,
    /// The default, as written.
    pub default: Option<String>,
    /// Whether an action must write it.
    pub required: bool,
    /// What it does.
    pub description: String,
}

/// A refused library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedView {
    /// The file.
    pub path: String,
    /// Why, in one line.
    pub reason: String,
}

/// A process module (a program in any language with a manifest; docs/process-modules.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessModuleView {
    /// Its folder.
    pub path: String,
    /// The program and its arguments.
    pub command: String,
    /// The module it declares.
    pub module: ModuleView,
}
