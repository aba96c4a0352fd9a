//! The root module every plugin library exports, and the macro that writes it.

use crate::error::PluginError;
use crate::module::ActionModuleBox;
use crate::object_type::{ConnectionBridgeBox, ObjectTypeBox};
use abi_stable::library::RootModule;
use abi_stable::sabi_types::VersionStrings;
use abi_stable::std_types::{RResult, RString, RVec};
use abi_stable::{StableAbi, declare_root_module_statics, package_version_strings};

/// Name and version of a plugin library (its crate's).
#[repr(C)]
#[derive(StableAbi, Debug, Clone, PartialEq, Eq)]
pub struct PluginInfo {
    /// The crate name.
    pub name: RString,
    /// The crate version.
    pub version: RString,
}

/// The root module of a plugin library. The host checks its layout and this crate's version
/// (the ABI version, with semver) when it loads the library.
///
/// Fields added in later sdk versions go below the field marked `last_prefix_field`, so that a
/// host still loads libraries built against an older sdk; such a field must then be declared
/// `#[sabi(missing_field(option))]` and read as an `Option`, since an older library lacks it
/// (the fields so far all panic when missing, as every library has them).
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PluginMod_Ref)))]
#[sabi(missing_field(panic))]
pub struct PluginMod {
    /// Name and version of the library.
    pub info: extern "C" fn() -> PluginInfo,
    /// The action modules it provides.
    pub modules: extern "C" fn() -> RResult<RVec<ActionModuleBox>, PluginError>,
    /// The object types it provides.
    pub object_types: extern "C" fn() -> RResult<RVec<ObjectTypeBox>, PluginError>,
    /// Whether the library was built with `panic = "unwind"`: the host refuses one built
    /// with `panic = "abort"`, where a panic would end the host instead of failing a call.
    pub panic_unwind: bool,
    /// The connection bridges it provides.
    #[sabi(last_prefix_field)]
    pub bridges: extern "C" fn() -> RResult<RVec<ConnectionBridgeBox>, PluginError>,
}

impl RootModule for PluginMod_Ref {
    declare_root_module_statics! {PluginMod_Ref}
    const BASE_NAME: &'static str = "weft_plugin";
    const NAME: &'static str = "weft plugin";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}

/// Writes the root module of a plugin library: every constructor runs inside
/// `catch_unwind`, and every plugin is wrapped so that each call is guarded too.
///
/// ```ignore
/// weft_sdk::export_plugin! {
///     modules: [Sql, Insert::default()],
///     object_types: [Table],
///     bridges: [],
/// }
/// ```
#[macro_export]
macro_rules! export_plugin {
    (
        modules: [$($module:expr),* $(,)?],
        object_types: [$($object_type:expr),* $(,)?],
        bridges: [$($bridge:expr),* $(,)?] $(,)?
    ) => {
        // A panic in a plugin must unwind to the guard at the boundary; under
        // `panic = "abort"` it would end the host instead of failing one call.
        #[cfg(panic = "abort")]
        compile_error!(
            "a weft plugin must be built with panic = \"unwind\" (Cargo's default): under panic = \"abort\" a panic in the plugin would end the whole weft server instead of failing one action; remove `panic = \"abort\"` from the profile"
        );
        #[doc(hidden)]
        mod __weft_plugin_root {
        #[allow(unused_imports)]
        use super::*;
        /// The library's root module, found by the host at load.
        #[::abi_stable::export_root_module]
        pub fn weft_plugin_root_module() -> $crate::PluginMod_Ref {
            use ::abi_stable::prefix_type::PrefixTypeTrait as _;
            extern "C" fn info() -> $crate::PluginInfo {
                $crate::PluginInfo {
                    name: env!("CARGO_PKG_NAME").into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                }
            }
            extern "C" fn modules() -> ::abi_stable::std_types::RResult<::abi_stable::std_types::RVec<$crate::ActionModuleBox>, $crate::PluginError> {
                $crate::catch(|| Ok(::abi_stable::std_types::RVec::from(vec![$($crate::module_box($module)),*])))
            }
            extern "C" fn object_types() -> ::abi_stable::std_types::RResult<::abi_stable::std_types::RVec<$crate::ObjectTypeBox>, $crate::PluginError> {
                $crate::catch(|| Ok(::abi_stable::std_types::RVec::from(vec![$($crate::object_type_box($object_type)),*])))
            }
            extern "C" fn bridges() -> ::abi_stable::std_types::RResult<::abi_stable::std_types::RVec<$crate::ConnectionBridgeBox>, $crate::PluginError> {
                $crate::catch(|| Ok(::abi_stable::std_types::RVec::from(vec![$($crate::bridge_box($bridge)),*])))
            }
            $crate::PluginMod {
                info,
                modules,
                object_types,
                panic_unwind: cfg!(panic = "unwind"),
                bridges,
            }
            .leak_into_prefix()
        }
        }
    };
}
