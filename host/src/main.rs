//! The `weft` command: the server (`weft serve`), the schema upgrade (`weft schema`, behind
//! `bin/deploySchema.sh`), the clients of a running server (`weft deploy`, behind
//! `bin/deploySheet.sh`; `weft run`, `weft next-runs`, `weft hosts`, `weft plugins --url`),
//! the plugin libraries (`weft plugins`, `install`, `new`), JDBC drivers (`weft jdbc`, behind
//! `bin/jdbcManager`) and the key file (`weft keys`, `weft getkey` behind `bin/getkey`). Run
//! `weft --help` for the list.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use weft::client;
use weft::keys::{self, KeyFile};
use weft::repo::{self, migrations};
use weft::settings::{self, Environment};

// mimalloc: batches of rows are allocated on one thread and freed on another by the million,
// where it is markedly faster than the system allocator (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// weft: a server for data transformations.
#[derive(Debug, Parser)]
#[command(name = "weft", version, about, long_about = None)]
struct Cli {
    /// The data directory (repository, key file, settings); default $WEFT_HOME, else the
    /// installation's default-home, else ./weft-home (docs/install.md).
    #[arg(long, global = true, value_name = "DIR")]
    home: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start the server (initialises a fresh home on first start).
    Serve {
        /// Address to listen on; port 0 picks a free port.
        #[arg(long, default_value = weft::server::DEFAULT_LISTEN, value_name = "HOST:PORT")]
        listen: String,
        /// development, test or production (overrides weft.toml and WEFT_ENVIRONMENT).
        #[arg(long, value_name = "ENV")]
        environment: Option<Environment>,
        /// Start the service clock at this instant (RFC 3339, or YYYY-MM-DD HH:MM[:SS] in the
        /// service time zone); it runs on at normal speed, for the scheduler and the SQL
        /// functions alike. Development environments only.
        #[arg(long, value_name = "TIMESTAMP")]
        fake_now: Option<String>,
        /// Stop the service clock (at --fake-now, else at the start): it moves only when the
        /// command AdvanceClock moves it, and each move runs the scheduler before it answers.
        /// For tests; development environments only.
        #[arg(long)]
        stepped_clock: bool,
    },
    /// Bring the repository schema to the current version (what deploySchema.sh runs).
    Schema {
        /// Only print the repository's schema version and this program's; change nothing.
        #[arg(long)]
        status: bool,
        /// Create a new repository when there is none (needed when HOME is a default, the
        /// installation's or ./weft-home; with --home or WEFT_HOME a missing repository is
        /// created anyway).
        #[arg(long)]
        init: bool,
    },
    /// Deploy a .dsr file to the service (what deploySheet.sh runs).
    Deploy {
        /// The service endpoint; default the URL of key file entry weft_server, else http://localhost:17491/weft/service.
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// The bearer token of a server listening beyond loopback; default option token of key file entry weft_server.
        #[arg(long, env = "WEFT_TOKEN", hide_env_values = true, value_name = "TOKEN")]
        token: Option<String>,
        /// Only test the deployment (deploy option dryRun=true).
        #[arg(long)]
        test: bool,
        /// Print the effective URL, options and file.
        #[arg(long)]
        verbose: bool,
        /// Deploy options as a JSON object: {"validate": "true", "dryRun": "false", "intoFolder": 12}.
        #[arg(long, value_name = "JSON")]
        option: Option<String>,
        /// The .dsr file; default standard input.
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
    },
    /// Run sheets, actions or folders as a batch instance (RunElements), and follow it with --wait.
    Run {
        /// The service endpoint; default the URL of key file entry weft_server, else http://localhost:17491/weft/service.
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// The bearer token of a server listening beyond loopback; default option token of key file entry weft_server.
        #[arg(long, env = "WEFT_TOKEN", hide_env_values = true, value_name = "TOKEN")]
        token: Option<String>,
        /// A sheet to run (repeatable).
        #[arg(long = "sheet", value_name = "ID")]
        sheets: Vec<i64>,
        /// An action to run (repeatable).
        #[arg(long = "action", value_name = "ID")]
        actions: Vec<i64>,
        /// A folder whose sheets, at any depth, run (repeatable).
        #[arg(long = "folder", value_name = "ID")]
        folders: Vec<i64>,
        /// A variable for the run (repeatable).
        #[arg(long = "var", value_name = "NAME=VALUE", value_parser = parse_var)]
        vars: Vec<(String, String)>,
        /// The batch name.
        #[arg(long, default_value = "manual run")]
        name: String,
        /// The user the run is for; default $USER.
        #[arg(long)]
        user: Option<String>,
        /// Show the actions' states while the run goes on; the exit code says finished (0) or not (1).
        #[arg(long)]
        wait: bool,
    },
    /// Manage JDBC drivers: the interactive menu, or list, add, delete for scripts (what bin/jdbcManager runs).
    Jdbc {
        /// INSTALL, where jdbcList and drivers/ are; default $WEFT_INSTALL, else found above the binary.
        #[arg(long, value_name = "DIR")]
        install: Option<PathBuf>,
        /// Without an action: the interactive menu.
        #[command(subcommand)]
        action: Option<JdbcAction>,
    },
    /// List the plugin libraries found (next to the binary, in INSTALL/plugins and in HOME/plugins) and what they provide, refused ones with the reason; or install one.
    Plugins {
        /// Ask the running server at this endpoint what it loaded, instead of looking into HOME.
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// The bearer token of a server listening beyond loopback; default option token of key file entry weft_server.
        #[arg(long, env = "WEFT_TOKEN", hide_env_values = true, value_name = "TOKEN")]
        token: Option<String>,
        /// Without an action: the list.
        #[command(subcommand)]
        action: Option<PluginsAction>,
    },
    /// List the next planned starts of a scheduled batch, in local time and UTC, with clock
    /// changes marked (the NextRuns command).
    NextRuns {
        /// The service endpoint; default the URL of key file entry weft_server, else http://localhost:17491/weft/service.
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// The bearer token of a server listening beyond loopback; default option token of key file entry weft_server.
        #[arg(long, env = "WEFT_TOKEN", hide_env_values = true, value_name = "TOKEN")]
        token: Option<String>,
        /// The batch id.
        batch: i64,
        /// How many starts (1 to 1000).
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=1000))]
        count: u16,
    },
    /// List the hosts on the repository with their last heartbeat and what runs on each
    /// (the ListHosts command): several with the repository on PostgreSQL, else one.
    Hosts {
        /// The service endpoint; default the URL of key file entry weft_server, else http://localhost:17491/weft/service.
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// The bearer token of a server listening beyond loopback; default option token of key file entry weft_server.
        #[arg(long, env = "WEFT_TOKEN", hide_env_values = true, value_name = "TOKEN")]
        token: Option<String>,
    },
    /// Work on the key file (HOME/keyfile).
    Keys {
        #[command(subcommand)]
        action: KeysAction,
    },
    /// Print a field of a key file entry (default its URL).
    Getkey {
        /// The entry's key: a connection number or a name such as weft_server.
        name: String,
        /// Which field to print.
        #[arg(long, value_enum, default_value_t = Field::Url)]
        field: Field,
    },
}

#[derive(Debug, Subcommand)]
enum KeysAction {
    /// Copy entry FROM to key TO (replacing an entry TO): `weft keys copy 0 7` gives
    /// connection 7 the credentials of the repository itself (SPEC 4.7 step 2).
    Copy {
        /// The entry to copy, e.g. 0 (the repository).
        from: String,
        /// The new connection number or name.
        to: String,
        /// Replace entry 0 (the repository) or weft_server (the service), which scripts and
        /// the server rely on.
        #[arg(long)]
        force: bool,
    },
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

#[derive(Debug, Subcommand)]
enum JdbcAction {
    /// The installed drivers, then the drivers jdbcList offers.
    List,
    /// Download and install a driver of jdbcList.
    Add {
        /// The driver's name in jdbcList.
        name: String,
    },
    /// Remove an installed driver.
    Delete {
        /// The driver's name.
        name: String,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Field {
    Url,
    Type,
    User,
    Password,
    Options,
    Token,
}

/// Marks every process the server's actions will start with the server's HOME
/// (`exec::leftovers`), so that the next server on it finds what a killed one left running.
#[allow(unsafe_code)]
fn tag_children(home: &std::path::Path) {
    // HOME made first, so that the tag is its canonical path, as the next start reads it.
    let _ = std::fs::create_dir_all(home);
    let tag = weft::exec::leftovers::tag(home);
    // SAFETY: called first in `main` for `weft serve`, before the logger, the async runtime
    // or anything else has started a thread, so nothing reads the environment meanwhile.
    unsafe { std::env::set_var(weft::exec::leftovers::TAG, tag) };
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (home, home_from) = match settings::home_and_source(cli.home.as_deref()) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("weft: {e}");
            return ExitCode::from(2);
        }
    };
    match cli.command {
        Command::Serve {
            listen,
            environment,
            fake_now,
            stepped_clock,
        } => {
            tag_children(&home);
            let _log_guard = init_logging(&home);
            // Commands run on blocking threads: at most 64 at once, the rest wait their turn
            // (with at most `max_connections` connections, each with one request).
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .max_blocking_threads(64)
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("weft: cannot start the async runtime: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let opts = weft::server::Options {
                home,
                home_from,
                listen,
                environment,
                fake_now,
                stepped_clock,
            };
            match runtime.block_on(weft::server::run(opts)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    tracing::error!(message = "Server failed to start.", error = %e);
                    eprintln!("weft: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Schema { status, init } => schema(&home, &home_from, status, init),
        Command::Deploy {
            url,
            token,
            test,
            verbose,
            option,
            file,
        } => {
            let args = client::DeployArgs {
                url,
                token,
                test,
                verbose,
                option,
                file,
                home,
            };
            ExitCode::from(client::deploy(&args) as u8)
        }
        Command::Getkey { name, field } => getkey(&home, &home_from, &name, field),
        Command::Keys {
            action: KeysAction::Copy { from, to, force },
        } => keys_copy(&home, &home_from, &from, &to, force),
        Command::NextRuns {
            url,
            token,
            batch,
            count,
        } => ExitCode::from(client::next_runs(
            url.as_deref(),
            token.as_deref(),
            &home,
            batch,
            usize::from(count),
        ) as u8),
        Command::Hosts { url, token } => {
            ExitCode::from(client::hosts(url.as_deref(), token.as_deref(), &home) as u8)
        }
        Command::Plugins {
            url: Some(url),
            token,
            action: None,
        } => ExitCode::from(client::plugins(&url, token.as_deref(), &home) as u8),
        Command::Plugins { action: None, .. } => plugins(&home),
        Command::Plugins {
            action: Some(PluginsAction::Install { file }),
            ..
        } => plugins_install(&home, &file),
        Command::Plugins {
            action: Some(PluginsAction::New { name, dir, sdk }),
            ..
        } => plugins_new(&name, dir, sdk),
        Command::Jdbc { install, action } => jdbc(install, action),
        Command::Run {
            url,
            token,
            sheets,
            actions,
            folders,
            vars,
            name,
            user,
            wait,
        } => {
            let user = user
                .or_else(|| std::env::var("USER").ok())
                .unwrap_or_else(|| "weft".to_owned());
            let args = client::RunArgs {
                url,
                token,
                sheets,
                actions,
                folders,
                vars,
                batch_name: name,
                user,
                wait,
                home,
            };
            ExitCode::from(client::run(&args) as u8)
        }
    }
}

/// Logs to standard error and to `HOME/logs/weft.log.YYYY-MM-DD` (a new file each day).
/// The returned guard flushes the file when the server stops.
/// How many daily log files `HOME/logs` keeps.
const LOG_DAYS_KEPT: usize = 14;

fn init_logging(home: &std::path::Path) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    use tracing_subscriber::prelude::*;
    let filter = || {
        tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"))
    };
    // Colours only for a person at a terminal: a journal or a file gets plain text.
    let stderr = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .with_filter(filter());
    let logs = home.join("logs");
    // One file a day, the newest LOG_DAYS_KEPT kept (older ones are deleted as days pass).
    let file = std::fs::create_dir_all(&logs).ok().and_then(|()| {
        tracing_appender::rolling::Builder::new()
            .filename_prefix("weft.log")
            .rotation(tracing_appender::rolling::Rotation::DAILY)
            .max_log_files(LOG_DAYS_KEPT)
            .build(&logs)
            .ok()
    });
    match file {
        Some(appender) => {
            let (writer, guard) = tracing_appender::non_blocking(appender);
            let file_layer = tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(writer)
                .with_filter(filter());
            tracing_subscriber::registry()
                .with(stderr)
                .with(file_layer)
                .init();
            Some(guard)
        }
        None => {
            tracing_subscriber::registry().with(stderr).init();
            tracing::warn!(message = "Cannot write the log file; logging to standard error only.", dir = %logs.display());
            None
        }
    }
}

fn schema(
    home: &std::path::Path,
    home_from: &settings::HomeSource,
    status: bool,
    init: bool,
) -> ExitCode {
    // Entry 0 of type `postgresql`: the repository is that database.
    let keyfile = weft::keys::KeyFile::path_in(home);
    if keyfile.exists() {
        match weft::keys::KeyFile::load(&keyfile) {
            Ok(keys) => {
                if let Some(entry) = repo::postgres::Entry::of(&keys) {
                    return schema_on_postgres(&entry, status);
                }
            }
            Err(e) => {
                eprintln!("weft schema: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let path = home.join("repository.db");
    // A repository is created only on purpose: not because the command ran in another
    // folder (during an update that would upgrade nothing and say it did).
    if !status && !init && !home_from.is_explicit() && !path.exists() {
        eprintln!(
            "weft schema: there is no repository at {} (HOME {} comes from {home_from}); nothing was created. Give --home DIR or WEFT_HOME for the repository to upgrade, or --init to create a new one there.",
            path.display(),
            home.display()
        );
        return ExitCode::from(2);
    }
    if status {
        if !path.exists() {
            println!(
                "{}: no repository yet; this weft writes schema version {}",
                path.display(),
                migrations::latest()
            );
            return ExitCode::SUCCESS;
        }
        // Read-only: --status changes nothing.
        return match repo::schema_version(&path) {
            Ok(v) => {
                println!(
                    "{}: schema version {v}; this weft writes version {}",
                    path.display(),
                    migrations::latest()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("weft schema: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if let Err(e) = weft::server::prepare_home(home) {
        eprintln!("weft schema: {e}");
        return ExitCode::FAILURE;
    }
    let result = repo::upgrade(&path);
    match result {
        Ok(u) if u.from == u.to => {
            println!("{}: schema already at version {}", path.display(), u.to);
            ExitCode::SUCCESS
        }
        Ok(u) if u.from == 0 => {
            println!(
                "{}: new repository created at schema version {}",
                path.display(),
                u.to
            );
            ExitCode::SUCCESS
        }
        Ok(u) => {
            println!(
                "{}: schema upgraded from version {} to {}",
                path.display(),
                u.from,
                u.to
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("weft schema: {}: {e}", path.display());
            ExitCode::FAILURE
        }
    }
}

/// `weft schema` for a repository on PostgreSQL (entry 0): its version, or its upgrade.
fn schema_on_postgres(entry: &repo::postgres::Entry, status: bool) -> ExitCode {
    let db = match repo::postgres::Postgres::connect(entry) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("weft schema: {e}");
            return ExitCode::FAILURE;
        }
    };
    let place = format!("postgresql at {}", db.place());
    if status {
        return match db.schema_version() {
            Ok(v) => {
                println!(
                    "{place}: schema version {v}; this weft writes version {}",
                    migrations::latest()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("weft schema: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match db.upgrade() {
        Ok(u) if u.from == u.to => {
            println!("{place}: schema already at version {}", u.to);
            ExitCode::SUCCESS
        }
        Ok(u) if u.from == 0 => {
            println!("{place}: new repository created at schema version {}", u.to);
            ExitCode::SUCCESS
        }
        Ok(u) => {
            println!(
                "{place}: schema upgraded from version {} to {}",
                u.from, u.to
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("weft schema: {place}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The message of a command that needs the key file and finds none: the absolute path it
/// looked at, where HOME came from, and how to make one.
fn no_key_file(command: &str, path: &std::path::Path, home_from: &settings::HomeSource) -> String {
    format!(
        "{command}: there is no key file at {} (HOME comes from {home_from}); start the server once (weft serve) to create it, or name the right HOME with --home DIR or WEFT_HOME",
        path.display()
    )
}

fn keys_copy(
    home: &std::path::Path,
    home_from: &settings::HomeSource,
    from: &str,
    to: &str,
    force: bool,
) -> ExitCode {
    let path = KeyFile::path_in(home);
    if !path.exists() {
        eprintln!("{}", no_key_file("weft keys copy", &path, home_from));
        return ExitCode::from(2);
    }
    let vital = [String::from("0"), weft::keys::SERVER_KEY.to_owned()];
    if !force && vital.iter().any(|v| v == to) {
        eprintln!(
            "weft keys copy: entry {to} is the {}; every script and the server rely on it, so it is not replaced (give --force to replace it anyway)",
            if to == "0" {
                "repository itself"
            } else {
                "service's address"
            }
        );
        return ExitCode::from(2);
    }
    let done = KeyFile::load(&path).and_then(|mut kf| {
        let mut entry = kf.require(from)?.clone();
        entry.key = to.to_owned();
        let replaced = kf.get(to).is_some();
        kf.set(entry);
        kf.save()?;
        Ok(replaced)
    });
    match done {
        Ok(replaced) => {
            println!(
                "key file {}: entry {to} is now a copy of entry {from}{}",
                path.display(),
                if replaced {
                    " (the old entry was replaced)"
                } else {
                    ""
                }
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("weft keys copy: {e}");
            ExitCode::FAILURE
        }
    }
}

fn getkey(
    home: &std::path::Path,
    home_from: &settings::HomeSource,
    name: &str,
    field: Field,
) -> ExitCode {
    let path = KeyFile::path_in(home);
    if !path.exists() {
        eprintln!("{}", no_key_file("getkey", &path, home_from));
        return ExitCode::FAILURE;
    }
    let entry = KeyFile::load(&path).and_then(|kf| kf.require(name).cloned());
    match entry {
        Ok(e) => {
            let value = match field {
                Field::Url => e.url.clone(),
                Field::Type => e.kind.clone(),
                Field::User => e.user.clone(),
                Field::Password => e.password.clone(),
                Field::Options => e
                    .options
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(";"),
                Field::Token => e.option("token").unwrap_or_default().to_owned(),
            };
            println!("{value}");
            ExitCode::SUCCESS
        }
        Err(e @ keys::Error::Missing { .. }) => {
            eprintln!("getkey: {e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("getkey: {e}");
            ExitCode::from(2)
        }
    }
}

fn plugins(home: &std::path::Path) -> ExitCode {
    let dirs = weft::plugins::search_path(home);
    let mut registry = weft::plugins::Registry::load(&dirs);
    registry.load_process_modules(&weft::plugins::process_dirs(home));
    client::print_plugins(&weft::api::protocol::plugin_list(&registry));
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
fn plugins_new(name: &str, dir: Option<PathBuf>, sdk: Option<PathBuf>) -> ExitCode {
    use weft::plugins::template::{TemplateError, write_crate};
    let dir = dir.unwrap_or_else(|| PathBuf::from(name));
    let Some(sdk) = sdk.or_else(|| weft::settings::install_dir().map(|i| i.join("sdk"))) else {
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
fn plugins_install(home: &std::path::Path, file: &std::path::Path) -> ExitCode {
    let Some(name) = file.file_name() else {
        eprintln!("weft plugins install: {} names no file", file.display());
        return ExitCode::from(2);
    };
    if !file.is_file() {
        eprintln!("weft plugins install: {} is not a file", file.display());
        return ExitCode::from(2);
    }
    let mut checked = weft::plugins::Registry::default();
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
    let beside = weft::plugins::Registry::load_as_installed(
        &weft::plugins::search_path(home),
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

fn parse_var(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((n, v)) if !n.trim().is_empty() => Ok((n.trim().to_owned(), v.to_owned())),
        _ => Err(format!("`{s}` is not NAME=VALUE")),
    }
}

fn jdbc(install: Option<PathBuf>, action: Option<JdbcAction>) -> ExitCode {
    use weft::jdbc_manager as jm;
    let Some(dir) = install.or_else(settings::install_dir) else {
        eprintln!(
            "jdbcManager: cannot find INSTALL (the folder holding jdbcList): set WEFT_INSTALL or give --install DIR"
        );
        return ExitCode::from(2);
    };
    let list_path = settings::jdbc_list(&dir);
    let text = match std::fs::read_to_string(&list_path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("jdbcManager: cannot read {}: {e}", list_path.display());
            return ExitCode::from(2);
        }
    };
    let (entries, problems) = jm::parse_list(&text);
    for p in &problems {
        eprintln!(
            "jdbcManager: {}:{}: {}",
            list_path.display(),
            p.line,
            p.message
        );
    }
    let drivers = dir.join("drivers");
    for p in jm::clean_partials(&drivers) {
        eprintln!(
            "jdbcManager: removed {}, left by an install that was stopped",
            p.display()
        );
    }
    if let Err(e) = jm::on_signals_remove_partials() {
        eprintln!("jdbcManager: cannot watch for SIGINT and SIGTERM: {e}");
    }
    let Some(action) = action else {
        use std::io::IsTerminal as _;
        if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
            eprintln!(
                "jdbcManager: the menu needs a terminal; for scripts use `jdbcManager list`, `add NAME` or `delete NAME`"
            );
            return ExitCode::from(2);
        }
        let problems: Vec<String> = problems
            .iter()
            .map(|p| format!("line {}: {}", p.line, p.message))
            .collect();
        return match jm::menu::run(entries, problems, &drivers) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("jdbcManager: the terminal failed: {e}");
                ExitCode::FAILURE
            }
        };
    };
    match action {
        JdbcAction::List => {
            let installed = jm::installed(&drivers);
            println!("installed drivers ({}):", drivers.display());
            if installed.is_empty() {
                println!("  (none)");
            }
            for i in &installed {
                println!("  {:<24} {} bytes", i.name, i.size);
            }
            println!("available in jdbcList:");
            for e in &entries {
                let mark = if installed.iter().any(|i| i.name == e.name) {
                    "*"
                } else {
                    " "
                };
                println!(" {mark}{:<24} {}  ({})", e.name, e.description, e.url);
            }
            ExitCode::SUCCESS
        }
        JdbcAction::Add { name } => {
            let Some(entry) = entries.iter().find(|e| e.name == name) else {
                let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
                eprintln!(
                    "jdbcManager: `{name}` is not in {} (it lists: {})",
                    list_path.display(),
                    names.join(", ")
                );
                return ExitCode::FAILURE;
            };
            let mut last = 0u64;
            let result = jm::install(entry, &drivers, &mut |done, total| {
                if done >= last + 256 * 1024 || total == Some(done) {
                    last = done;
                    match total {
                        Some(t) if t > 0 => eprint!(
                            "\rjdbcManager: {name}: {:>3}% ({done} of {t} bytes)",
                            done * 100 / t
                        ),
                        _ => eprint!("\rjdbcManager: {name}: {done} bytes"),
                    }
                }
            });
            eprintln!();
            match result {
                Ok(p) => {
                    println!("installed {name} as {}", p.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("jdbcManager: {name} was not installed: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        JdbcAction::Delete { name } => match jm::delete(&name, &drivers) {
            Ok(p) => {
                println!("deleted {}", p.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("jdbcManager: {e}");
                ExitCode::FAILURE
            }
        },
    }
}
