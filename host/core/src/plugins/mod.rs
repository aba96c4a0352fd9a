//! Loading plugin libraries and the registry of what they provide.
//!
//! Libraries are found next to the `weft` executable (files named `libweft_plugin_*`) and in
//! `HOME/plugins` (every shared library there). Each is loaded with
//! `lib_header_from_path(..).init_root_module()`, which checks the root module's layout and
//! the sdk version it was built against (semver). A library that is refused gets one line,
//! naming the file, its sdk version and the host's, in the log and in `weft plugins`; the
//! server starts anyway, and a sheet that needs a module that did not load is invalid.
//!
//! A server loads private copies ([`copies`]): replacing an installed file while it runs
//! changes nothing until the next start. A library built with `panic = "abort"` is refused,
//! since a panic in it would end the server instead of failing an action.
//!
//! # Plugins, connections and running an action
//!
//! The detail behind docs/ARCHITECTURE.md's map.
//!
//! `plugins` finds libraries (`libweft_plugin_*` next to the executable, every shared library in
//! `INSTALL/plugins` and `HOME/plugins`; `settings::install_dir` and `settings::home_and_source`
//! hold the rules for INSTALL and HOME, docs/install.md), loads each with `lib_header_from_path(..).init_root_module()` (layout and sdk
//! version checked, semver), and keeps a `Registry` of modules by name, object types by id and
//! bridges by connection type. A refused library is one line in the log and in `weft plugins`;
//! the server starts anyway. The server loads copies (`plugins::copies`: each library copied
//! by content hash into a store beside the installation's libraries, `INSTALL/plugins/.loaded/`,
//! shared by every HOME, or for a HOME's own libraries into `HOME/plugins/.loaded/`, and loaded
//! from there), so that an installed file replaced while it runs cannot rewrite mapped code; `weft plugins install`
//! checks a library by loading it and installs it by rename; `plugins::template` is what
//! `weft plugins new` writes (a crate from the templates in `host/core/src/plugins/template/`,
//! depending on `INSTALL/sdk` by path). The command `ListPlugins` (and
//! `weft plugins --url`) answers what a running server loaded, as `api::protocol::PluginList`,
//! the same listing `weft plugins` prints from HOME. A library whose root module says
//! it was built with `panic = "abort"` (`PluginMod::panic_unwind`, which `export_plugin!`
//! fills and refuses to compile without) is refused before any of its modules, object types or
//! bridges is made or called (only its root module's constructor has run, as loading needs it). `connect` opens connections: the native `sqlite` type
//! (`connect::sqlite`, the host's rusqlite: one SQLite in the process) or a bridge's. `plan`
//! holds `actions_of` (an action's module, text, attributes, sources and targets from a sheet,
//! one pass over the sheet's edges), `dependencies` and `find_cycle`. `exec` holds what runs
//! an action: `substitute` (`${name}` variables, `$${` for a literal), and
//! `run_action`, which opens the connections, begins a transaction on each target connection,
//! calls the module on the calling (blocking) thread, and commits or rolls back. A batch run
//! gives it a live log (`exec::Lines` with a `LiveLog`): the module's lines, redacted, are
//! appended to the running action's log in the repository as they come (at most every 250 ms,
//! counted from the action's start; a line held back is handed on by the one `weft-log-flush`
//! thread 250 ms after the last hand-over even when no line follows; lines not stored then,
//! all of a shorter action's among them, come with the action's end). The outermost
//! transaction on a native SQLite connection is `BEGIN IMMEDIATE`; nested ones are savepoints.
//! Every call into a plugin is guarded by the sdk (`export_plugin!`, and `Connection::new` for the
//! connections a bridge returns): a panic becomes an error. The host enforces the source and
//! target counts each module declares.
//!
//! The ABI is built to grow without refusing older plugins (the rules are in plugin-guide.md,
//! "What changes keep a plugin loading"). abi_stable checks every enum's variants at load, so
//! the sets that grow are not Rust enums: `open_enum!` (sdk/src/open_enum.rs) makes `Dialect`,
//! `ValueKind`, `ErrorKind`, `AttributeKind` and `Severity` a `u8` newtype with one constant per
//! member, named like a variant, and `Value` and `AttributeValue` are structs of such a kind and
//! its data (`Value::get` gives the `Datum` view to match on; a kind a plugin does not know is
//! `Datum::Other`, passed on as it came). abi_stable's own `NonExhaustive` was not used: its
//! check lets the *loaded* library have more variants than the loader, which fits a library
//! that grows under older callers, not plugins that stay older than the host that loads them.
//! `tests/tests/suite/compat.rs` builds a plugin against a copy of the sdk with one dialect fewer and
//! loads it into the current host. The sdk's manifest inherits nothing from the workspace, and
//! `export_plugin!` writes abi_stable's library header itself through `$crate::abi_stable`
//! (the symbol name is checked against abi_stable's in the sdk's tests), so a plugin depends on
//! the sdk alone; the compat fixture does.

pub mod copies;
pub mod process;
pub mod template;

use abi_stable::library::{LibraryError, RootModule, lib_header_from_path};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use weft_sdk::ffi::{ActionModuleBox, ConnectionBridgeBox, ObjectTypeBox, PluginMod_Ref};
use weft_sdk::{ModuleInfo, ObjectTypeInfo, SDK_VERSION};

/// A library that loaded.
#[derive(Debug, Clone)]
pub struct Library {
    /// The file, as installed.
    pub path: PathBuf,
    /// The file loaded: the private copy of `path`, or `path` itself.
    pub loaded: PathBuf,
    /// Its crate name.
    pub name: String,
    /// Its crate version.
    pub version: String,
    /// Module names it provides.
    pub modules: Vec<String>,
    /// Object types it provides, as `id name`.
    pub object_types: Vec<String>,
    /// Connection types it provides.
    pub connection_types: Vec<String>,
}

/// A library, or a plugin in it, that was refused.
#[derive(Debug, Clone)]
pub struct Refusal {
    /// The file.
    pub path: PathBuf,
    /// Why, in one line naming the versions where they matter.
    pub reason: String,
}

/// A loaded action module.
pub struct LoadedModule {
    /// What it declares.
    pub info: ModuleInfo,
    /// The module.
    pub module: ActionModuleBox,
    /// Where it came from.
    pub library: PathBuf,
}

/// A loaded object type.
pub struct LoadedObjectType {
    /// What it declares.
    pub info: ObjectTypeInfo,
    /// The type.
    pub object_type: ObjectTypeBox,
    /// The library that provides it (as installed).
    pub library: PathBuf,
}

/// Everything the loaded plugins provide.
#[derive(Default)]
pub struct Registry {
    /// Libraries that loaded.
    pub libraries: Vec<Library>,
    /// What was refused.
    pub refused: Vec<Refusal>,
    modules: BTreeMap<String, LoadedModule>,
    object_types: BTreeMap<i64, LoadedObjectType>,
    bridges: BTreeMap<String, ConnectionBridgeBox>,
    /// The library that provides each bridge (as installed).
    bridge_libraries: BTreeMap<String, PathBuf>,
    bridge_options: Vec<(String, String)>,
    /// Modules this server does not allow, with why (see [`Registry::turn_off`]).
    off: BTreeMap<String, String>,
    /// The process modules among `modules`, by name.
    process: BTreeMap<String, std::sync::Arc<process::ProcessModule>>,
}

/// The modules a server allows only by a setting: the name, and the setting.
pub const GATED: &[(&str, &str)] = &[("Shell", "shell_modules")];

/// The order libraries load in, which decides who provides a name two of them provide.
const LOAD_ORDER: &str =
    "built-in plugins first, then INSTALL/plugins, then HOME/plugins, each in name order";

/// The connection type weft serves natively (`connect::sqlite`); no bridge may take it.
pub const NATIVE_SQLITE: &str = "sqlite";

/// What the host tells every bridge beside a key entry's own options (see
/// [`Registry::set_bridge_options`]): `weft.drivers`, INSTALL/drivers where jdbcManager puts
/// driver jars, and `weft.java_home`, the setting `java_home`.
pub fn bridge_options(settings: &crate::settings::Settings) -> Vec<(String, String)> {
    let mut o = Vec::new();
    if let Some(install) = crate::settings::install_dir() {
        o.push((
            "weft.drivers".to_owned(),
            install.join("drivers").to_string_lossy().into_owned(),
        ));
    }
    if let Some(j) = &settings.java_home {
        o.push((
            "weft.java_home".to_owned(),
            j.to_string_lossy().into_owned(),
        ));
    }
    o
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("libraries", &self.libraries)
            .field("refused", &self.refused)
            .finish_non_exhaustive()
    }
}

/// The places plugins are searched, with whether every shared library there counts (else
/// only `libweft_plugin_*` files): beside the binary (a checkout's `target/release`),
/// `INSTALL/plugins` (an installed tree), and `HOME/plugins`.
pub fn search_path(home: &Path) -> Vec<(PathBuf, bool)> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        dirs.push((dir, false));
    }
    if let Some(install) = crate::settings::install_dir() {
        let dir = install.join("plugins");
        if dir.is_dir() && !dirs.iter().any(|(d, _)| *d == dir) {
            dirs.push((dir, true));
        }
    }
    dirs.push((home.join("plugins"), true));
    dirs
}

/// Where process modules are looked for: `INSTALL/modules`, then `HOME/modules`.
pub fn process_dirs(home: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(install) = crate::settings::install_dir() {
        dirs.push(install.join("modules"));
    }
    dirs.push(home.join("modules"));
    dirs
}

fn is_shared_library(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("so" | "dylib" | "dll")
    )
}

/// The library files in `dirs`, each folder's in name order: every shared library, or only
/// `libweft_plugin_*` ones where the folder says so.
fn library_files(dirs: &[(PathBuf, bool)]) -> Vec<PathBuf> {
    let mut all_files = Vec::new();
    for (dir, all) in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file() && is_shared_library(p))
            .filter(|p| {
                *all || p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                    n.starts_with("libweft_plugin_") || n.starts_with("weft_plugin_")
                })
            })
            .collect();
        files.sort();
        all_files.extend(files);
    }
    all_files
}

impl Registry {
    /// Refuses module `name` on this server, with `why`: deploys of its actions are refused
    /// at their place and its actions fail (the Shell module without `shell_modules`).
    pub fn turn_off(&mut self, name: &str, why: &str) {
        self.off.insert(name.to_owned(), why.to_owned());
    }

    /// Turns off each module of [`GATED`] whose setting `settings` leaves off.
    pub fn apply_gates(&mut self, settings: &crate::settings::Settings) {
        for (module, setting) in GATED {
            let allowed = match *setting {
                "shell_modules" => settings.shell_modules,
                _ => false,
            };
            if !allowed {
                self.turn_off(
                    module,
                    &format!(
                        "module {module} runs programs on this server's machine as its service user, which this server does not allow: set `{setting} = true` in HOME/weft.toml (or WEFT_{}=true) and restart it",
                        setting.to_ascii_uppercase()
                    ),
                );
            }
        }
    }

    /// Loads the process modules of `dirs` (`INSTALL/modules`, `HOME/modules`): each folder
    /// with a manifest. A name a loaded module has already is refused, as is a manifest that
    /// cannot be used; either is listed with its reason.
    pub fn load_process_modules(&mut self, dirs: &[PathBuf]) {
        for dir in process::folders(dirs) {
            let manifest = dir.join(process::MANIFEST);
            match process::read(&dir) {
                Ok(m) if self.modules.contains_key(&m.manifest.name) => {
                    self.refused.push(Refusal {
                        path: manifest,
                        reason: format!(
                            "process module {} is refused: a loaded module has that name",
                            m.manifest.name
                        ),
                    });
                }
                Ok(m) => {
                    let name = m.manifest.name.clone();
                    let m = std::sync::Arc::new(m);
                    self.modules.insert(
                        name.clone(),
                        LoadedModule {
                            info: m.info(),
                            module: weft_sdk::ffi::module_box(m.as_ref().clone()),
                            library: manifest,
                        },
                    );
                    self.process.insert(name, m);
                }
                Err(reason) => self.refused.push(Refusal {
                    path: manifest,
                    reason: format!("process module refused: {reason}"),
                }),
            }
        }
    }

    /// Process module `name`, if it is one.
    pub fn process_module(&self, name: &str) -> Option<&process::ProcessModule> {
        self.process.get(name).map(|m| m.as_ref())
    }

    /// The process modules, by name.
    pub fn process_modules(&self) -> impl Iterator<Item = &process::ProcessModule> {
        self.process.values().map(|m| m.as_ref())
    }

    /// Why module `name` is refused on this server, if it is.
    pub fn refusal(&self, name: &str) -> Option<&str> {
        self.off.get(name).map(String::as_str)
    }

    /// Loads every plugin library found in `dirs` (see [`search_path`]) from the files
    /// themselves; tests and one-off commands use this.
    pub fn load(dirs: &[(PathBuf, bool)]) -> Self {
        let mut r = Registry::default();
        for f in library_files(dirs) {
            r.load_library(&f);
        }
        r
    }

    /// Loads every plugin library found in `dirs` from a copy (see [`copies`]): the
    /// installation's from the store beside them, shared by every HOME, where it can be; the
    /// others from a private copy in `copies` (`HOME/plugins/.loaded`), whose copies no
    /// library uses any more are removed. A library that cannot be copied at all (a full
    /// disk, a folder that cannot be written) is loaded from its file, with a warning that
    /// replacing that file while the server runs will crash it.
    pub fn load_private(dirs: &[(PathBuf, bool)], copies_dir: &Path) -> Self {
        let mut r = Registry::default();
        let mut kept = Vec::new();
        let home_plugins = copies_dir.parent();
        for f in library_files(dirs) {
            let store = f
                .parent()
                .filter(|d| Some(*d) != home_plugins)
                .map(|d| d.join(copies::LOADED));
            if let Some(store) = store {
                match copies::shared_copy(&f, &store) {
                    Ok(copy) => {
                        let refused = r.refused.len();
                        r.load_library_as(&f, &copy);
                        // Removed by a newer build's start in between: a copy of its own.
                        if r.refused.len() == refused || copy.exists() {
                            continue;
                        }
                        r.refused.pop();
                    }
                    Err(e) => tracing::debug!(
                        message = "The installation's store of plugin copies is not used; this HOME gets its own copy.",
                        file = %f.display(),
                        store = %store.display(),
                        error = %e
                    ),
                }
            }
            match copies::private_copy(&f, copies_dir) {
                Ok(copy) => {
                    r.load_library_as(&f, &copy);
                    kept.push(copy);
                }
                Err(e) => {
                    tracing::warn!(
                        message = "No private copy of a plugin library; loading the installed file, which must not be replaced while the server runs.",
                        file = %f.display(),
                        folder = %copies_dir.display(),
                        error = %e
                    );
                    r.load_library(&f);
                }
            }
        }
        copies::remove_stale(copies_dir, &kept);
        r
    }

    /// What the server's next start would load if `candidate` were installed as `target`
    /// (a file in one of `dirs`, replacing what is there now), every library from its file:
    /// `weft plugins install` asks it which names the candidate would clash on.
    pub fn load_as_installed(dirs: &[(PathBuf, bool)], target: &Path, candidate: &Path) -> Self {
        let mut files = library_files(dirs);
        files.retain(|f| f != target);
        files.push(target.to_owned());
        // Each folder in its place, each folder's files in name order (a stable sort keeps
        // the folders' order).
        files.sort_by_key(|f| {
            (
                dirs.iter()
                    .position(|(d, _)| f.parent() == Some(d.as_path())),
                f.file_name().map(std::ffi::OsStr::to_os_string),
            )
        });
        let mut r = Registry::default();
        for f in files {
            if f == target {
                r.load_library_as(target, candidate);
            } else {
                r.load_library(&f);
            }
        }
        r
    }

    /// Loads one library; a refusal is recorded and logged, never fatal.
    pub fn load_library(&mut self, path: &Path) {
        self.load_library_as(path, path);
    }

    /// Loads the library installed as `path` from the file `loaded` (its private copy).
    pub fn load_library_as(&mut self, path: &Path, loaded: &Path) {
        match load_root(loaded) {
            Ok(root) => self.add_root(path, loaded, root),
            // The line names the installed file, not the copy.
            Err(reason) => self.refuse(
                path,
                reason.replace(&loaded.display().to_string(), &path.display().to_string()),
            ),
        }
    }

    fn refuse(&mut self, path: &Path, reason: String) {
        // Every line names the file.
        let shown = path.display().to_string();
        let reason = if reason.contains(&shown) {
            reason
        } else {
            format!("{shown}: {reason}")
        };
        tracing::warn!(message = "Plugin library refused.", file = %path.display(), reason = %reason);
        self.refused.push(Refusal {
            path: path.to_owned(),
            reason,
        });
    }

    fn add_root(&mut self, path: &Path, loaded: &Path, root: PluginMod_Ref) {
        if !root.panic_unwind() {
            self.refuse(
                path,
                format!(
                    "plugin {} is built with panic = \"abort\": a panic in it would end the whole server instead of failing one action; build it with panic = \"unwind\" (Cargo's default)",
                    path.display()
                ),
            );
            return;
        }
        let info = (root.info())();
        let mut lib = Library {
            path: path.to_owned(),
            loaded: loaded.to_owned(),
            name: info.name.to_string(),
            version: info.version.to_string(),
            modules: Vec::new(),
            object_types: Vec::new(),
            connection_types: Vec::new(),
        };
        match (root.modules())().into_result() {
            Ok(modules) => {
                for m in modules {
                    match m.info().into_result() {
                        Ok(mi) if self.modules.contains_key(mi.name()) => {
                            let first = self.modules[mi.name()].library.display().to_string();
                            self.refuse(path, format!("module `{}` is already provided by {first}, which was loaded first ({LOAD_ORDER}); this library's is ignored", mi.name()));
                        }
                        Ok(mi) => {
                            lib.modules.push(mi.name().to_string());
                            self.modules.insert(
                                mi.name().to_string(),
                                LoadedModule {
                                    info: mi,
                                    module: m,
                                    library: path.to_owned(),
                                },
                            );
                        }
                        Err(e) => {
                            self.refuse(path, format!("a module could not describe itself: {e}"))
                        }
                    }
                }
            }
            Err(e) => self.refuse(path, format!("its modules could not be created: {e}")),
        }
        match (root.object_types())().into_result() {
            Ok(types) => {
                for t in types {
                    match t.info().into_result() {
                        Ok(ti) if self.object_types.contains_key(&ti.id()) => {
                            let first = self.object_types[&ti.id()].library.display().to_string();
                            self.refuse(path, format!("object type {} is already provided by {first}, which was loaded first ({LOAD_ORDER}); this library's is ignored", ti.id()));
                        }
                        Ok(ti) => {
                            lib.object_types.push(format!("{} {}", ti.id(), ti.name()));
                            self.object_types.insert(
                                ti.id(),
                                LoadedObjectType {
                                    info: ti,
                                    object_type: t,
                                    library: path.to_owned(),
                                },
                            );
                        }
                        Err(e) => self.refuse(
                            path,
                            format!("an object type could not describe itself: {e}"),
                        ),
                    }
                }
            }
            Err(e) => self.refuse(path, format!("its object types could not be created: {e}")),
        }
        match (root.bridges())().into_result() {
            Ok(bridges) => {
                for b in bridges {
                    match b.connection_type().into_result() {
                        Ok(t) if t == NATIVE_SQLITE => {
                            self.refuse(path, format!("connection type `{t}` is served by weft itself; this bridge is ignored"));
                        }
                        Ok(t) if self.bridges.contains_key(t.as_str()) => {
                            let first = self
                                .bridge_libraries
                                .get(t.as_str())
                                .map_or_else(String::new, |p| p.display().to_string());
                            self.refuse(path, format!("connection type `{t}` is already served by {first}, which was loaded first ({LOAD_ORDER}); this library's bridge is ignored"));
                        }
                        Ok(t) => {
                            lib.connection_types.push(t.to_string());
                            self.bridge_libraries.insert(t.to_string(), path.to_owned());
                            self.bridges.insert(t.to_string(), b);
                        }
                        Err(e) => {
                            self.refuse(path, format!("a bridge could not describe itself: {e}"))
                        }
                    }
                }
            }
            Err(e) => self.refuse(path, format!("its bridges could not be created: {e}")),
        }
        tracing::info!(
            message = "Plugin library loaded.",
            file = %path.display(),
            library = %lib.name,
            version = %lib.version,
            modules = %lib.modules.join(","),
        );
        self.libraries.push(lib);
    }

    /// A module by name.
    pub fn module(&self, name: &str) -> Option<&LoadedModule> {
        self.modules.get(name)
    }

    /// Every module name, sorted.
    pub fn module_names(&self) -> Vec<String> {
        self.modules.keys().cloned().collect()
    }

    /// An object type by id.
    pub fn object_type(&self, id: i64) -> Option<&LoadedObjectType> {
        self.object_types.get(&id)
    }

    /// Every object type as `id (name)`.
    pub fn object_type_names(&self) -> Vec<String> {
        self.object_types
            .values()
            .map(|t| format!("{} ({})", t.info.id(), t.info.name()))
            .collect()
    }

    /// The host's options for bridges (see [`Registry::set_bridge_options`]).
    pub fn bridge_options(&self) -> &[(String, String)] {
        &self.bridge_options
    }

    /// Sets the host's options for bridges (`weft.` names), which `connect::open`
    /// adds to every key entry it opens through a bridge; an entry cannot set them itself.
    pub fn set_bridge_options(&mut self, options: Vec<(String, String)>) {
        self.bridge_options = options;
    }

    /// The bridge serving connection type `kind`.
    pub fn bridge(&self, kind: &str) -> Option<&ConnectionBridgeBox> {
        self.bridges.get(kind)
    }

    /// Connection types served by bridges (`sqlite` is the host's own).
    pub fn connection_types(&self) -> Vec<String> {
        self.bridges.keys().cloned().collect()
    }
}

fn load_root(path: &Path) -> Result<PluginMod_Ref, String> {
    let header = lib_header_from_path(path).map_err(|e| describe(path, &e, None))?;
    let theirs = header.version_strings().version.to_string();
    header
        .init_root_module::<PluginMod_Ref>()
        .map_err(|e| describe(path, &e, Some(&theirs)))
}

/// One line for a load failure, worded after nushell's: the file, its sdk version, ours.
fn describe(path: &Path, e: &LibraryError, theirs: Option<&str>) -> String {
    let file = path.display();
    match e {
        LibraryError::IncompatibleVersionNumber { actual_version, .. } => format!(
            "plugin {file} is built for weft sdk {actual_version}, which is not compatible with this weft's sdk {SDK_VERSION}; rebuild it against sdk {SDK_VERSION}"
        ),
        LibraryError::AbiInstability(_) => format!(
            "plugin {file} is built for weft sdk {}, whose interface differs from this weft's sdk {SDK_VERSION} (layout check failed); rebuild it against sdk {SDK_VERSION}",
            theirs.unwrap_or("of unknown version")
        ),
        LibraryError::OpenError { .. } => format!(
            "{file} cannot be loaded as a shared library (this weft's sdk is {SDK_VERSION}): {e}"
        ),
        LibraryError::GetSymbolError { .. } => format!(
            "{file} is not a weft plugin: it has no abi_stable root module (this weft's sdk is {SDK_VERSION})"
        ),
        LibraryError::RootModule { err, .. } => {
            format!("plugin {file} failed while starting: {err}")
        }
        other => {
            format!("plugin {file} cannot be loaded (this weft's sdk is {SDK_VERSION}): {other}")
        }
    }
}

/// The sdk version this host was built with, for messages.
pub fn host_sdk_version() -> &'static str {
    let _ = PluginMod_Ref::NAME;
    SDK_VERSION
}

/// The real plugins, loaded afresh from the target directory of the running test binary
/// (the test command builds them first), for tests that need a registry of their own.
#[cfg(any(test, feature = "testing"))]
pub fn load_test_registry() -> Registry {
    let exe = std::env::current_exe().expect("test executable");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .to_path_buf();
    let r = Registry::load(&[(dir.clone(), false)]);
    assert!(
        r.module("Upsert").is_some() && r.object_type(1).is_some(),
        "the plugin libraries are not built in {}: run `cargo build --workspace` first (./test.sh does); refused: {:?}",
        dir.display(),
        r.refused
    );
    r
}

/// [`load_test_registry`], loaded once.
#[cfg(any(test, feature = "testing"))]
pub fn test_registry() -> &'static Registry {
    static REGISTRY: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(load_test_registry)
}
