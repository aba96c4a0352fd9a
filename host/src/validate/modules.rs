//! What the validator knows of modules, object types and connection types.
//!
//! STAND-IN: until the plugin system lands (issue 3), the names below are the fixed list of
//! the planned plugins (`Sql`, `Insert`, `Upsert`, `Transfer`; object types table and view;
//! connection types `sqlite` and `jdbc`). The plugin registry replaces this list: a module
//! name that no loaded plugin provides will then be the error that an unknown name is now.

/// The type of a module attribute beyond table A.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttributeType {
    /// `true` or `false`.
    Bool,
    /// Text.
    String,
}

/// A module and the attributes it takes beyond table A.
#[derive(Debug)]
pub struct ModuleInfo {
    /// Module name as written in `module`.
    pub name: &'static str,
    /// Attributes beyond table A, with their types.
    pub attributes: &'static [(&'static str, AttributeType)],
}

/// Attributes every module takes.
pub const COMMON_ATTRIBUTES: &[(&str, AttributeType)] = &[("validateSql", AttributeType::Bool)];

/// The planned modules (stand-in for the plugin registry).
pub const MODULES: &[ModuleInfo] = &[
    ModuleInfo {
        name: "Sql",
        attributes: &[],
    },
    ModuleInfo {
        name: "Insert",
        attributes: &[("truncateBefore", AttributeType::Bool)],
    },
    ModuleInfo {
        name: "Upsert",
        attributes: &[("keys", AttributeType::String)],
    },
    ModuleInfo {
        name: "Transfer",
        attributes: &[],
    },
];

/// The planned object types: `objectTypeId` and name.
pub const OBJECT_TYPES: &[(i64, &str)] = &[(1, "table"), (2, "view")];

/// The planned connection types.
pub const CONNECTION_TYPES: &[&str] = &["sqlite", "jdbc"];

/// Looks a module up by name (exact, as module names are written).
pub fn module(name: &str) -> Option<&'static ModuleInfo> {
    MODULES.iter().find(|m| m.name == name)
}

/// The module names, sorted, for messages.
pub fn module_names() -> String {
    let mut names: Vec<&str> = MODULES.iter().map(|m| m.name).collect();
    names.sort_unstable();
    names.join(", ")
}
