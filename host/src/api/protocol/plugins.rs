//! `ListPlugins`' answer made from what the host loaded.

use weft_protocol::plugins::{
    AttributeView, LibraryView, ModuleView, PluginList, ProcessModuleView, RefusedView,
};

/// What `registry` holds, as `ListPlugins` answers it.
pub fn plugin_list(registry: &weft_core::plugins::Registry) -> PluginList {
    let libraries = registry
        .libraries
        .iter()
        .map(|lib| LibraryView {
            name: lib.name.clone(),
            version: lib.version.clone(),
            path: lib.path.display().to_string(),
            modules: lib
                .modules
                .iter()
                .filter_map(|name| registry.module(name))
                .map(|m| module_view(&m.info))
                .collect(),
            object_types: lib.object_types.clone(),
            connection_types: lib.connection_types.clone(),
        })
        .collect();
    PluginList {
        sdk_version: weft_sdk::SDK_VERSION.to_owned(),
        libraries,
        process_modules: registry
            .process_modules()
            .map(|p| ProcessModuleView {
                path: p.dir.display().to_string(),
                command: p.manifest.command.join(" "),
                module: module_view(&p.info()),
            })
            .collect(),
        refused: registry
            .refused
            .iter()
            .map(|r| RefusedView {
                path: r.path.display().to_string(),
                reason: r.reason.clone(),
            })
            .collect(),
        native_connection_types: vec![weft_core::connect::SQLITE.to_owned()],
    }
}

/// What a module declares, as `ListPlugins` answers it.
pub fn module_view(info: &weft_sdk::ModuleInfo) -> ModuleView {
    let count = |(min, max): (u32, u32), what: &str| match (min, max) {
        (a, b) if a == b => format!("{a} {what}"),
        (a, u32::MAX) => format!("{a} or more {what}"),
        (a, b) => format!("{a} to {b} {what}"),
    };
    ModuleView {
        name: info.name().to_string(),
        description: info.description().to_string(),
        attributes: info
            .attributes()
            .iter()
            .map(|a| AttributeView {
                name: a.name().to_string(),
                kind: format!("{:?}", a.kind()),
                default: a.default().map(|d| d.to_string()),
                required: a.is_required(),
                description: a.description().to_string(),
            })
            .collect(),
        objects: format!(
            "{}, {}",
            count(info.source_range(), "source(s)"),
            count(info.target_range(), "target(s)")
        ),
    }
}
