//! The weft plugin SDK: what a plugin author depends on.
//!
//! This crate will hold the stable ABI between the `weft` host and its plugins (action
//! modules, object types, connection bridges), the values that cross it and the export
//! macro. It does no I/O. The plugin system is built by a later issue; until then the crate
//! only fixes its place in the workspace and the version that will become the ABI version.

/// The SDK version, which is the plugin ABI version (checked with semver when a plugin loads).
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");
