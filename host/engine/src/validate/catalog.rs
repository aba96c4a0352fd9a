//! The validator's view of the loaded plugins ([`PluginCatalog`], the real [`Catalog`]):
//! their modules and object types, the connection types, each connection's dialect from the
//! key file, and the deploy's quick look at whether the objects exist.

use std::collections::BTreeMap;
use weft_core::plugins::Registry;
use weft_sdk::ModuleInfo;

/// What validation needs to know of the loaded plugins and the connections' dialects.
pub trait Catalog {
    /// What module `name` declares, if a loaded plugin provides it.
    fn module(&self, name: &str) -> Option<weft_sdk::ModuleInfo>;
    /// Every module name, sorted.
    fn module_names(&self) -> Vec<String>;
    /// Why this server refuses module `name` (a module a setting must allow), if it does.
    fn module_refusal(&self, name: &str) -> Option<String> {
        let _ = name;
        None
    }
    /// Asks module `name` to validate an action.
    ///
    /// # Errors
    ///
    /// When the module failed (a panic caught at the boundary, say).
    fn validate_action(
        &self,
        name: &str,
        input: &weft_sdk::ValidateInput,
    ) -> Result<weft_sdk::ValidateOutput, String>;
    /// The tables module `name` says an action's text writes (nothing when it says nothing
    /// or fails: the targets still order the run).
    fn writes_of(
        &self,
        name: &str,
        input: &weft_sdk::ValidateInput,
    ) -> Vec<weft_sdk::WrittenTable> {
        let _ = (name, input);
        Vec::new()
    }
    /// The tables module `name` says an action checks (a data test; nothing when it says
    /// nothing or fails).
    fn checks_of(&self, name: &str, input: &weft_sdk::ValidateInput) -> Vec<weft_sdk::TableName> {
        let _ = (name, input);
        Vec::new()
    }
    /// Whether object type `id` is provided.
    fn object_type(&self, id: i64) -> bool;
    /// Every object type as `id (name)`.
    fn object_type_names(&self) -> Vec<String>;
    /// Every connection type, the native `sqlite` included.
    fn connection_types(&self) -> Vec<String>;
    /// The SQL dialect of connection number `id`, whose type is `kind`.
    fn dialect(&self, id: i64, kind: Option<&str>) -> weft_sdk::Dialect;
    /// Checks objects against their connections: `(node id, warning)` for each that is off.
    /// Validation judges the document: what the data holds is only ever a warning.
    /// `schemas` holds the default schema of each connection that names one.
    fn check_objects(
        &self,
        objects: &[weft_sdk::ObjectRef],
        schemas: &BTreeMap<i64, String>,
    ) -> Vec<(i64, String)>;
    /// The identity of an object as its object type gives it (two references with one
    /// identity are one object): the connection, the schema and the name.
    fn identity(&self, object: &weft_sdk::ObjectRef) -> (i64, String, String) {
        weft_core::plan::plain_identity(object)
    }
}

/// The validator's view of the loaded plugins, with the key file for connection dialects.
pub struct PluginCatalog<'a> {
    /// The loaded plugins.
    pub registry: &'a Registry,
    /// The key file, whose entries name each connection's URL (hence its dialect).
    pub keys: Option<std::sync::Arc<weft_core::keys::KeyFile>>,
}

impl Catalog for PluginCatalog<'_> {
    fn module(&self, name: &str) -> Option<ModuleInfo> {
        self.registry.module(name).map(|m| m.info.clone())
    }

    fn module_names(&self) -> Vec<String> {
        self.registry.module_names()
    }

    fn module_refusal(&self, name: &str) -> Option<String> {
        self.registry.refusal(name).map(str::to_owned)
    }

    fn validate_action(
        &self,
        name: &str,
        input: &weft_sdk::ValidateInput,
    ) -> Result<weft_sdk::ValidateOutput, String> {
        let m = self
            .registry
            .module(name)
            .ok_or_else(|| format!("module `{name}` is not loaded"))?;
        m.module
            .validate(input)
            .into_result()
            .map_err(|e| e.to_string())
    }

    fn writes_of(
        &self,
        name: &str,
        input: &weft_sdk::ValidateInput,
    ) -> Vec<weft_sdk::WrittenTable> {
        self.registry
            .module(name)
            .and_then(|m| m.module.writes(input).into_result().ok())
            .map(Vec::from)
            .unwrap_or_default()
    }

    fn checks_of(&self, name: &str, input: &weft_sdk::ValidateInput) -> Vec<weft_sdk::TableName> {
        self.registry
            .module(name)
            .and_then(|m| m.module.checks(input).into_result().ok())
            .map(Vec::from)
            .unwrap_or_default()
    }

    fn object_type(&self, id: i64) -> bool {
        self.registry.object_type(id).is_some()
    }

    fn object_type_names(&self) -> Vec<String> {
        self.registry.object_type_names()
    }

    fn connection_types(&self) -> Vec<String> {
        let mut v = vec![weft_core::connect::SQLITE.to_owned()];
        v.extend(self.registry.connection_types());
        v
    }

    fn check_objects(
        &self,
        objects: &[weft_sdk::ObjectRef],
        schemas: &BTreeMap<i64, String>,
    ) -> Vec<(i64, String)> {
        PluginCatalog::check_objects(self, objects, schemas)
    }

    fn identity(&self, object: &weft_sdk::ObjectRef) -> (i64, String, String) {
        weft_core::plan::identity(self.registry, object)
    }

    fn dialect(&self, id: i64, kind: Option<&str>) -> weft_sdk::Dialect {
        match self.keys.as_ref().and_then(|k| k.get(&id.to_string())) {
            Some(e) => weft_core::connect::dialect_of(&e.kind, &e.url),
            // Without the entry only a type that names its database says the dialect.
            None => kind
                .and_then(weft_core::connect::dialect_of_type)
                .unwrap_or(weft_sdk::Dialect::Unknown),
        }
    }
}

/// The time one connection gets for the object checks of one deploy.
pub const CHECK_BUDGET: std::time::Duration = std::time::Duration::from_millis(10);

impl PluginCatalog<'_> {
    /// Checks objects against their connections (only connections the key file names); a
    /// warning text for each object that is off, or whose connection cannot be opened. A
    /// native SQLite connection gets [`CHECK_BUDGET`] in all: what is left when it is spent
    /// (a file busy with writes) is reported as not checked, so a deploy never waits on the
    /// data's writers.
    pub fn check_objects(
        &self,
        objects: &[weft_sdk::ObjectRef],
        schemas: &BTreeMap<i64, String>,
    ) -> Vec<(i64, String)> {
        let mut out = Vec::new();
        let Some(keys) = &self.keys else { return out };
        let mut by_connection: BTreeMap<i64, Vec<&weft_sdk::ObjectRef>> = BTreeMap::new();
        for o in objects {
            by_connection.entry(o.connection_id()).or_default().push(o);
        }
        for (id, objs) in by_connection {
            let Some(entry) = keys.get(&id.to_string()) else {
                continue;
            };
            let schema = schemas.get(&id).map(String::as_str);
            let mut conn = match weft_core::connect::open_briefly(entry, self.registry, schema) {
                Ok(c) => c,
                Err(e) => {
                    for o in objs {
                        out.push((
                            o.node_id(),
                            keys.redact(&format!(
                                "connection {id} cannot be reached, so `{}` was not checked: {e}",
                                o.name()
                            )),
                        ));
                    }
                    continue;
                }
            };
            let started = std::time::Instant::now();
            for o in objs {
                let Some(t) = self.registry.object_type(o.object_type_id()) else {
                    continue;
                };
                if entry.kind == weft_core::connect::SQLITE && started.elapsed() > CHECK_BUDGET {
                    out.push((
                        o.node_id(),
                        format!(
                            "connection {id} was busy (it did not answer within {} ms), so `{}` was not checked",
                            CHECK_BUDGET.as_millis(),
                            o.name()
                        ),
                    ));
                    continue;
                }
                match t.object_type.check(o, &mut conn).into_result() {
                    Ok(weft_sdk::ffi::abi_stable::std_types::ROption::RSome(msg)) => {
                        out.push((o.node_id(), msg.to_string()))
                    }
                    Ok(_) => {}
                    Err(e) => out.push((
                        o.node_id(),
                        keys.redact(&format!("`{}` could not be checked: {e}", o.name())),
                    )),
                }
            }
        }
        out
    }
}
