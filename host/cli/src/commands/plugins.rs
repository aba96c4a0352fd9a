//! `weft plugins`: the plugin libraries found and what they provide, refused ones with the
//! reason (or, with `--url`, what a running server loaded: `ListPlugins`); `install` checks a
//! library and puts it into HOME/plugins atomically; `new` writes a plugin crate to start
//! from.

use super::args::Home;
use crate::client::{Exit, Service};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft_protocol::{ListPlugins, PluginList};

/// `weft plugins`' arguments.
#[derive(Debug, Args)]
pub struct Plugins {
    /// Ask the running server at this endpoint what it loaded, instead of looking into HOME.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// The bearer token of a server listening beyond loopback; default option token of key file entry weft_server.
    #[arg(long, env = "WEFT_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    token: Option<String>,
    /// For an https URL: trust only the CA certificates in FILE (PEM).
    #[arg(long, env = "WEFT_CA_FILE", value_name = "FILE")]
    ca: Option<PathBuf>,
    /// Without an action: the list.
    #[command(subcommand)]
    action: Option<PluginsAction>,
}

/// What `weft plugins` does besides listing.
#[derive(Debug, Subcommand)]
enum PluginsAction {
    /// Check that FILE is a weft plugin this weft loads, and install it into HOME/plugins (atomically, by rename); a running server uses it from its next start.
    Install {
        /// The plugin library (a .so file).
        file: PathBuf,
    },
    /// Write a new plugin crate NAME (a module that runs its action text, with unit tests on the sdk's fakes) that builds and passes its tests, as a start.
    New {
        /// The plugin's name: lower-case letters, digits and `_` (the crate is weft_plugin_NAME, the module NAME in CamelCase).
        name: String,
        /// The folder to write (default: ./NAME); it must not exist or be empty.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// The weft sdk's folder (default: INSTALL/sdk, which a checkout and an installed tree have).
        #[arg(long)]
        sdk: Option<PathBuf>,
    },
}

impl Plugins {
    /// Lists, installs or writes; 0 done, 1 failed (nothing found, a library refused), 2 a
    /// mistake in the arguments.
    pub fn run(self, home: &Home) -> ExitCode {
        match self.action {
            None => match &self.url {
                Some(url) => {
                    ExitCode::from(
                        remote(url, self.token.as_deref(), self.ca.as_deref(), &home.dir) as u8,
                    )
                }
                None => list(&home.dir),
            },
            Some(PluginsAction::Install { file }) => install(&home.dir, &file),
            Some(PluginsAction::New { name, dir, sdk }) => new(&name, dir, sdk),
        }
    }
}

fn list(home: &std::path::Path) -> ExitCode {
    let dirs = weft_core::plugins::search_path(home);
    let mut registry = weft_core::plugins::Registry::load(&dirs);
    registry.load_process_modules(&weft_core::plugins::process_dirs(home));
    print_plugins(&weft::api::protocol::plugin_list(&registry));
    if registry.libraries.is_empty() {
        let searched: Vec<String> = dirs.iter().map(|(d, _)| d.display().to_string()).collect();
        eprintln!(
            "weft plugins: no plugin library was found (searched {})",
            searched.join(", ")
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// `weft plugins new NAME`: writes a plugin crate to start from (exit 1 when it cannot, 2 for
/// a name that cannot be a plugin's).
fn new(name: &str, dir: Option<PathBuf>, sdk: Option<PathBuf>) -> ExitCode {
    use weft_core::plugins::template::{TemplateError, write_crate};
    let dir = dir.unwrap_or_else(|| PathBuf::from(name));
    let Some(sdk) = sdk.or_else(|| weft_core::settings::install_dir().map(|i| i.join("sdk")))
    else {
        eprintln!(
            "weft plugins new: INSTALL is unknown, so the sdk cannot be found; give its folder with --sdk"
        );
        return ExitCode::FAILURE;
    };
    match write_crate(&dir, name, &sdk) {
        Ok(files) => {
            for f in &files {
                println!("wrote {}", f.display());
            }
            let lib = format!("libweft_plugin_{name}.so");
            println!(
                "next: cd {} && cargo test && cargo build --release && weft plugins install target/release/{lib}",
                dir.display()
            );
            ExitCode::SUCCESS
        }
        Err(e @ TemplateError::Name(_)) => {
            eprintln!("weft plugins new: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("weft plugins new: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `weft plugins install FILE`: checks that FILE is a plugin this weft loads, then puts it into
/// HOME/plugins under its own name by an atomic rename, so that a server starting at any
/// moment sees the old file or the new one, never half of one.
fn install(home: &std::path::Path, file: &std::path::Path) -> ExitCode {
    let Some(name) = file.file_name() else {
        eprintln!("weft plugins install: {} names no file", file.display());
        return ExitCode::from(2);
    };
    if !file.is_file() {
        eprintln!("weft plugins install: {} is not a file", file.display());
        return ExitCode::from(2);
    }
    let mut checked = weft_core::plugins::Registry::default();
    checked.load_library(file);
    if let Some(r) = checked.refused.first() {
        eprintln!("weft plugins install: not installed: {}", r.reason);
        return ExitCode::FAILURE;
    }
    let Some(lib) = checked.libraries.first() else {
        eprintln!(
            "weft plugins install: not installed: {} provides nothing",
            file.display()
        );
        return ExitCode::FAILURE;
    };
    let dir = home.join("plugins");
    let target = dir.join(name);
    // Beside what is installed: a name another library provides would be refused (or would
    // take it from a library loaded after this one) at the next start.
    let beside = weft_core::plugins::Registry::load_as_installed(
        &weft_core::plugins::search_path(home),
        &target,
        file,
    );
    let target_name = target.display().to_string();
    let clashes: Vec<&str> = beside
        .refused
        .iter()
        .filter(|r| r.path == target || r.reason.contains(&target_name))
        .map(|r| r.reason.as_str())
        .collect();
    if !clashes.is_empty() {
        eprintln!(
            "weft plugins install: not installed: beside the libraries installed now, installed as {target_name} it would clash:"
        );
        for c in clashes {
            eprintln!("  {c}");
        }
        return ExitCode::FAILURE;
    }
    let partial = dir.join(format!(".{}.installing", name.to_string_lossy()));
    // Whatever stands at the partial's name (a left-over, or a link planted there to have
    // the copy overwrite its target) is removed, not followed; the partial is then made new
    // (O_EXCL: a link made again meanwhile fails the install instead).
    let copied = std::fs::create_dir_all(&dir)
        .and_then(|()| match std::fs::remove_file(&partial) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        })
        .and_then(|()| {
            let mut from = std::fs::File::open(file)?;
            let mut to = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&partial)?;
            std::io::copy(&mut from, &mut to)?;
            to.sync_all()
        })
        .and_then(|()| std::fs::rename(&partial, &target));
    if let Err(e) = copied {
        let _ = std::fs::remove_file(&partial);
        eprintln!(
            "weft plugins install: cannot install {} as {}: {e}",
            file.display(),
            target.display()
        );
        return ExitCode::FAILURE;
    }
    let mut provides = Vec::new();
    for (what, list) in [
        ("modules", &lib.modules),
        ("object types", &lib.object_types),
        ("connection types", &lib.connection_types),
    ] {
        if !list.is_empty() {
            provides.push(format!("{what} {}", list.join(", ")));
        }
    }
    println!(
        "installed {} {} as {} ({})",
        lib.name,
        lib.version,
        target.display(),
        provides.join("; ")
    );
    println!(
        "a running server goes on with the libraries it loaded at its start; restart it to use this one"
    );
    ExitCode::SUCCESS
}

/// Runs `weft plugins --url`: what the running server loaded, as `weft plugins` prints it.
fn remote(url: &str, token: Option<&str>, ca: Option<&Path>, home: &Path) -> Exit {
    let service = match Service::locate(Some(url), token, ca, home, "weft plugins") {
        Ok(s) => s,
        Err(code) => return code,
    };
    match service.call(ListPlugins {}) {
        Ok(Ok(list)) => {
            print_plugins(&list);
            Exit::Ok
        }
        Ok(Err(refusal)) => {
            eprintln!(
                "weft plugins: {} ({})",
                refusal.error.message, refusal.status
            );
            refusal.exit()
        }
        Err(code) => code,
    }
}

/// A module and its attributes, indented by `indent`.
fn print_module(m: &weft_protocol::ModuleView, indent: &str) {
    println!("{indent}{}: {} ({})", m.name, m.description, m.objects);
    for a in &m.attributes {
        let mut what = a.kind.clone();
        if let Some(d) = &a.default {
            what.push_str(&format!(", default {d}"));
        }
        if a.required {
            what.push_str(", required");
        }
        println!("{indent}  {} ({what}): {}", a.name, a.description);
    }
}

/// Prints what a plugin list holds: each library with its modules (their attributes
/// below them), object types and connection types, the process modules, then the refusals.
fn print_plugins(list: &PluginList) {
    println!("weft sdk {}", list.sdk_version);
    for lib in &list.libraries {
        println!("{} {} ({})", lib.name, lib.version, lib.path);
        if !lib.modules.is_empty() {
            let names: Vec<&str> = lib.modules.iter().map(|m| m.name.as_str()).collect();
            println!("  modules: {}", names.join(", "));
            for m in &lib.modules {
                print_module(m, "    ");
            }
        }
        if !lib.object_types.is_empty() {
            println!("  object types: {}", lib.object_types.join(", "));
        }
        if !lib.connection_types.is_empty() {
            println!("  connection types: {}", lib.connection_types.join(", "));
        }
    }
    for p in &list.process_modules {
        println!(
            "process module {} ({}: {})",
            p.module.name, p.path, p.command
        );
        print_module(&p.module, "  ");
    }
    println!(
        "native connection types: {}",
        list.native_connection_types.join(", ")
    );
    for r in &list.refused {
        println!("refused: {}", r.reason);
    }
}
