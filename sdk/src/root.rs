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

/// The name of the library header's symbol that [`export_plugin!`] writes.
#[doc(hidden)]
pub const LIBRARY_HEADER_SYMBOL: &str = "_1as_0lib_1header_0root_bmodule_bloader";

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
        use $crate::ffi::abi_stable::std_types::{RResult, RVec};
        /// The library's root module, found by the host at load.
        pub fn weft_plugin_root_module() -> $crate::ffi::PluginMod_Ref {
            use $crate::ffi::abi_stable::prefix_type::PrefixTypeTrait as _;
            extern "C" fn info() -> $crate::ffi::PluginInfo {
                $crate::ffi::PluginInfo {
                    name: env!("CARGO_PKG_NAME").into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                }
            }
            extern "C" fn modules() -> RResult<RVec<$crate::ffi::ActionModuleBox>, $crate::PluginError> {
                $crate::ffi::catch(|| Ok(RVec::from(vec![$($crate::ffi::module_box($module)),*])))
            }
            extern "C" fn object_types() -> RResult<RVec<$crate::ffi::ObjectTypeBox>, $crate::PluginError> {
                $crate::ffi::catch(|| Ok(RVec::from(vec![$($crate::ffi::object_type_box($object_type)),*])))
            }
            extern "C" fn bridges() -> RResult<RVec<$crate::ffi::ConnectionBridgeBox>, $crate::PluginError> {
                $crate::ffi::catch(|| Ok(RVec::from(vec![$($crate::ffi::bridge_box($bridge)),*])))
            }
            $crate::ffi::PluginMod {
                info,
                modules,
                object_types,
                panic_unwind: cfg!(panic = "unwind"),
                bridges,
            }
            .leak_into_prefix()
        }
        /// The library header the host looks up, as abi_stable's `#[export_root_module]`
        /// writes it, through the sdk's re-export of abi_stable so that a plugin needs no
        /// dependency of its own on abi_stable. The name is abi_stable 0.11's
        /// (`mangled_root_module_loader_name`; the sdk's tests check it).
        #[allow(non_upper_case_globals, unsafe_code)]
        #[unsafe(no_mangle)]
        pub static _1as_0lib_1header_0root_bmodule_bloader: $crate::ffi::abi_stable::library::LibHeader = {
            extern "C" fn erased_root_module() -> $crate::ffi::abi_stable::library::RootModuleResult {
                $crate::ffi::abi_stable::library::__call_root_module_loader(weft_plugin_root_module)
            }
            // SAFETY: what `#[export_root_module]` writes: the constructor returns the root
            // module of the type the header is made for, and its layout is checked at load.
            unsafe {
                $crate::ffi::abi_stable::library::LibHeader::from_constructor::<$crate::ffi::PluginMod_Ref>(
                    erased_root_module,
                    $crate::ffi::abi_stable::library::CheckTypeLayout::Yes,
                )
            }
        };
        }
    };
}

#[cfg(test)]
mod tests {
    /// `export_plugin!` writes abi_stable's library header by hand (so that plugins need no
    /// abi_stable of their own): its symbol must be the one abi_stable looks up.
    #[test]
    fn the_header_symbol_is_abi_stables() {
        assert_eq!(
            super::LIBRARY_HEADER_SYMBOL,
            abi_stable_shared::mangled_root_module_loader_name()
        );
    }
}
