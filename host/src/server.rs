//! `weft serve`: prepares HOME (folders, repository, key file), listens, and serves the
//! endpoint until SIGINT or SIGTERM.
//!
//! # The key file and the server's start
//!
//! The detail behind docs/ARCHITECTURE.md's map.
//!
//! `keys` reads `HOME/keyfile` (`KEY|TYPE|URL|USER|PASSWORD|OPTIONS`, mode 0600 required). The
//! first start writes entry `0` (the repository) and `weft_server` (the URL actually listened on,
//! loopback for an unspecified address); later starts keep the entry's URL current. Listening
//! beyond loopback requires `Authorization: Bearer TOKEN` on every request; a token is generated
//! into the `weft_server` entry's options when none is there. `KeyStore` re-reads the file when
//! its modification time changes.
//!
//! `server` prepares HOME (`logs/`, `plugins/`), loads settings (`settings`: `weft.toml`, then
//! `WEFT_*` variables, then flags), opens and upgrades the repository, binds, writes the key file,
//! settles what the last server left running, prints `weft listening on URL` on standard
//! output and serves (`server::http`) until SIGINT or SIGTERM, giving open connections five
//! seconds to finish. The async runtime runs commands on at most 64 blocking threads.

mod http;
pub mod tls;

use crate::api::{self, AppState};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use weft_core::keys::{self, KeyFile, KeyStore};
use weft_core::settings::{self, Environment, Settings};
use weft_repo::{self as repo, Repository};

/// The default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:17491";

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// HOME could not be prepared.
    #[error("cannot prepare the home directory {path}: {source}")]
    Home {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Settings are wrong.
    #[error(transparent)]
    Settings(#[from] settings::Error),
    /// The repository could not be opened or upgraded.
    #[error(transparent)]
    Repo(#[from] repo::Error),
    /// The key file is wrong.
    #[error(transparent)]
    Keys(#[from] keys::Error),
    /// The listen address is not usable.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// Serving failed.
    #[error("the server stopped with an error: {0}")]
    Serve(std::io::Error),
    /// The service clock or time zone cannot be set up as asked.
    #[error("{0}")]
    Time(String),
    /// The TLS certificate or key does not read.
    #[error("TLS: {0}")]
    Tls(String),
    /// Another server runs with this HOME.
    #[error(
        "another weft server (process {pid}) runs with the home directory {}; stop it first (its lock: {})",
        path.display(),
        path.join(HOME_LOCK).display()
    )]
    HomeInUse {
        /// HOME.
        path: PathBuf,
        /// The other server's process id, as its lock file says.
        pid: String,
    },
}

/// What a server that stopped with nothing running leaves in its lock file: the next start
/// need not look for processes its actions left running.
const STOPPED_CLEANLY: &str = "stopped cleanly";

/// Marks the lock file `file` (from [`lock_home`]) as left by a clean stop.
fn stopped_cleanly(mut file: &std::fs::File) {
    use std::io::{Seek, Write};
    let _ = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|_| writeln!(file, "{STOPPED_CLEANLY}"));
}

/// The file in HOME that the running server holds locked (and writes its process id into).
pub const HOME_LOCK: &str = "server.lock";

/// Locks HOME for this server as long as the answer lives: a second server on the same
/// HOME would settle this one's running actions as its own leftovers.
///
/// # Errors
///
/// [`Error::HomeInUse`] while another process holds it, [`Error::Home`] when the lock file
/// cannot be opened or written.
pub fn lock_home(home: &Path) -> Result<(std::fs::File, bool), Error> {
    use std::io::{Read, Seek, Write};
    let path = home.join(HOME_LOCK);
    let failed = |source| Error::Home {
        path: path.clone(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(failed)?;
    match file.try_lock() {
        Ok(()) => {
            let mut before = String::new();
            let _ = file.read_to_string(&mut before);
            file.set_len(0).map_err(failed)?;
            file.rewind().map_err(failed)?;
            writeln!(file, "{}", std::process::id()).map_err(failed)?;
            Ok((file, before.trim() == STOPPED_CLEANLY))
        }
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut pid = String::new();
            let _ = file.read_to_string(&mut pid);
            Err(Error::HomeInUse {
                path: home.to_path_buf(),
                pid: pid.trim().to_owned(),
            })
        }
        Err(std::fs::TryLockError::Error(e)) => Err(failed(e)),
    }
}

/// What `weft serve` was asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// HOME.
    pub home: PathBuf,
    /// Where HOME came from, for the log.
    pub home_from: weft_core::settings::HomeSource,
    /// `HOST:PORT`; port 0 picks a free port (printed on start).
    pub listen: String,
    /// `--environment`, overriding the settings.
    pub environment: Option<Environment>,
    /// `--fake-now`: the service clock starts at this instant (RFC 3339, or
    /// `YYYY-MM-DD HH:MM[:SS]` in the service time zone) and runs on at normal speed.
    /// Development environments only.
    pub fake_now: Option<String>,
    /// `--stepped-clock`: the service clock stands still (at `fake_now`, else at the start)
    /// and moves only by the command `AdvanceClock`. Development environments only.
    pub stepped_clock: bool,
    /// `--tls-cert` and `--tls-key`, overriding the settings.
    pub tls: Option<tls::Files>,
}

/// The service time for `settings`, `fake_now` and `stepped`: the zone from the setting,
/// `TZ`, `/etc/localtime` or UTC, and the system clock, one started at `fake_now`, or (with
/// `stepped`) one that stands still at `fake_now` (else now) until it is moved.
///
/// # Errors
///
/// A wrong zone setting, an unreadable timestamp, or a chosen clock outside a development
/// environment.
pub fn service_time(
    settings: &Settings,
    fake_now: Option<&str>,
    stepped: bool,
) -> Result<weft_core::sched::clock::ServiceTime, Error> {
    let (zone, zone_source) =
        weft_core::sched::clock::resolve_zone(settings.timezone.as_deref()).map_err(Error::Time)?;
    if (fake_now.is_some() || stepped) && settings.environment != Environment::Development {
        let flag = if stepped {
            "--stepped-clock"
        } else {
            "--fake-now"
        };
        return Err(Error::Time(format!(
            "{flag} is for development environments only; this server runs as {} (setting `environment`)",
            settings.environment
        )));
    }
    let start = fake_now
        .map(|text| {
            weft_core::sched::clock::parse_timestamp(text, zone)
                .map_err(|e| Error::Time(format!("--fake-now: {e}")))
        })
        .transpose()?;
    let clock = match (start, stepped) {
        (None, false) => weft_core::sched::clock::ServiceClock::system(),
        (Some(at), false) => weft_core::sched::clock::ServiceClock::starting_at(at),
        (at, true) => {
            weft_core::sched::clock::ServiceClock::stepped_at(at.unwrap_or_else(chrono::Utc::now))
        }
    };
    Ok(weft_core::sched::clock::ServiceTime {
        clock,
        zone,
        zone_source,
    })
}

/// Creates HOME and its folders if missing.
///
/// # Errors
///
/// When a folder cannot be created.
pub fn prepare_home(home: &Path) -> Result<(), Error> {
    for dir in [home.to_path_buf(), home.join("logs"), home.join("plugins")] {
        std::fs::create_dir_all(&dir).map_err(|source| Error::Home {
            path: dir.clone(),
            source,
        })?;
    }
    Ok(())
}

/// The URL of the endpoint for a listening address (loopback for an unspecified address),
/// `https` when the server speaks TLS.
pub fn service_url(addr: SocketAddr, tls: bool) -> String {
    let host = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => "127.0.0.1".to_owned(),
        ip if ip.is_unspecified() => "[::1]".to_owned(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        std::net::IpAddr::V4(ip) => ip.to_string(),
    };
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://{host}:{}{}", addr.port(), api::SERVICE_PATH)
}

/// Runs the server until a shutdown signal.
///
/// # Errors
///
/// When HOME, the settings, the repository, the key file or the address is not usable.
pub async fn run(opts: Options) -> Result<(), Error> {
    prepare_home(&opts.home)?;
    let (home_lock, clean) = lock_home(&opts.home)?;
    // What a killed server's actions left running goes before anything is settled (after a
    // clean stop nothing was running: what its actions started on purpose to outlive them,
    // a daemon, is left alone).
    let left = if clean {
        Vec::new()
    } else {
        let home = opts.home.clone();
        tokio::task::spawn_blocking(move || weft_engine::exec::leftovers::kill_left(&home))
            .await
            .map_err(|e| Error::Serve(std::io::Error::other(e)))?
    };
    if !left.is_empty() {
        tracing::warn!(
            message = "Killed the processes that the actions of the last server on this HOME left running.",
            processes = ?left
        );
    }
    let mut settings = Settings::load(&opts.home)?;
    if let Some(env) = opts.environment {
        settings.environment = env;
    }
    let time = service_time(&settings, opts.fake_now.as_deref(), opts.stepped_clock)?;
    tracing::info!(
        message = "Service time.",
        time_zone = time.zone.name(),
        from = time.zone_source,
        now = %time.clock.now().to_rfc3339(),
        fake = time.clock.is_fake(),
        stepped = time.clock.is_stepped()
    );
    weft_core::sched::clock::install(time);
    // Refuse a loose or broken key file before anything is opened or upgraded.
    let keyfile_path = KeyFile::path_in(&opts.home);
    let existing = if keyfile_path.exists() {
        Some(KeyFile::load(&keyfile_path)?)
    } else {
        None
    };
    let repo_path = opts.home.join(weft_repo::place::FILE_NAME);
    // Entry 0 of type `postgresql` puts the repository there; else it is the file in HOME.
    let place = weft_repo::Place::of(&opts.home, existing.as_ref())?;
    if place.is_missing_file() {
        tracing::warn!(
            message = "No repository in HOME: a new, empty one is created. If you meant an existing one, stop this server and give --home DIR or WEFT_HOME.",
            home = %opts.home.display(),
            home_from = %opts.home_from
        );
    }
    let repo = tokio::task::spawn_blocking(move || place.open())
        .await
        .map_err(|e| Error::Serve(std::io::Error::other(e)))??;
    let opened = Arc::new(repo);
    // However this start ends, the repository goes off the runtime's threads (a PostgreSQL
    // session's own runtime cannot be dropped inside this one): the guard is declared before
    // every other reference, so it is dropped after them all and holds the last one.
    let _repo_off_runtime = OffRuntime(Some(Arc::clone(&opened)));
    let repo = opened;
    tracing::info!(message = "The repository is open.", repository = %repo.location());
    let listener = tokio::net::TcpListener::bind(&opts.listen)
        .await
        .map_err(|source| Error::Listen {
            addr: opts.listen.clone(),
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| Error::Listen {
        addr: opts.listen.clone(),
        source,
    })?;
    // TLS: the flags, else the settings (a relative path is HOME's); a pair that does not
    // read stops the start.
    let tls_files = opts.tls.clone().or_else(|| {
        settings
            .tls_cert_file
            .clone()
            .zip(settings.tls_key_file.clone())
            .map(|(cert, key)| tls::Files {
                cert: opts.home.join(cert),
                key: opts.home.join(key),
            })
    });
    let acceptor = match &tls_files {
        Some(files) => Some(tls::acceptor(files).map_err(Error::Tls)?),
        None => None,
    };
    let url = service_url(addr, acceptor.is_some());
    let mut keyfile = KeyFile::init(&opts.home, &repo_path, &url)?;
    let beyond_loopback = !addr.ip().is_loopback();
    let require_token = beyond_loopback || settings.require_token_on_loopback;
    if beyond_loopback && settings.environment == Environment::Development {
        tracing::warn!(
            message = "This server runs as a development environment and listens beyond loopback: intoFolder copies and --fake-now are allowed. For a shared server set environment = \"production\" (or \"test\") in weft.toml or WEFT_ENVIRONMENT.",
            listen = %addr
        );
    }
    if require_token {
        let entry = keyfile.require(keys::SERVER_KEY)?.clone();
        if entry.option("token").is_none_or(str::is_empty) {
            let mut entry = entry;
            let token = keys::new_token().map_err(|source| Error::Home {
                path: opts.home.clone(),
                source,
            })?;
            entry.options.retain(|(k, _)| k != "token");
            entry.options.push(("token".to_owned(), token));
            keyfile.set(entry);
            keyfile.save()?;
            tracing::warn!(
                message = "Every request needs a bearer token (listening beyond loopback, or require_token_on_loopback); a new one was written to the key file.",
                keyfile = %KeyFile::path_in(&opts.home).display()
            );
        }
    }
    let keys = Arc::new(KeyStore::new(KeyFile::path_in(&opts.home), keyfile));
    let dirs = weft_core::plugins::search_path(&opts.home);
    // Private copies: an installed library replaced while the server runs changes nothing
    // until the next start.
    let copies = opts
        .home
        .join("plugins")
        .join(weft_core::plugins::copies::LOADED);
    let mut registry = tokio::task::spawn_blocking(move || {
        weft_core::plugins::Registry::load_private(&dirs, &copies)
    })
    .await
    .map_err(|e| Error::Serve(std::io::Error::other(e)))?;
    registry.set_bridge_options(weft_core::plugins::bridge_options(&settings));
    registry.load_process_modules(&weft_core::plugins::process_dirs(&opts.home));
    registry.apply_gates(&settings);
    tracing::info!(
        message = "Plugins loaded.",
        libraries = registry.libraries.len(),
        refused = registry.refused.len(),
        modules = %registry.module_names().join(",")
    );
    let registry = Arc::new(registry);
    let limit = settings.max_parallel_actions.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get)
    });
    // On PostgreSQL the repository may be shared by several hosts: this one keeps its id
    // across restarts (HOME/host-id), so that what it left running is settled at once.
    let shared = repo.path().is_none();
    let host = if shared {
        host_id(&opts.home)?
    } else {
        weft_engine::exec::batch::new_host_id()
    };
    // It reads the repository's identity: off the runtime's threads, as every repository call.
    let executor = {
        let (repo, registry, keys) = (Arc::clone(&repo), Arc::clone(&registry), Arc::clone(&keys));
        tokio::task::spawn_blocking(move || {
            weft_engine::exec::batch::Executor::paused(repo, registry, Some(keys), limit, host)
        })
        .await
        .map_err(|e| Error::Serve(std::io::Error::other(e)))?
    };
    executor.set_url(&url);
    executor.set_max_waiting(settings.max_waiting_instances);
    if let Some(endpoint) = &settings.openlineage_url {
        let emitter = weft_notify::lineage::Emitter::start(endpoint)
            .map_err(|e| Error::Serve(std::io::Error::other(e)))?;
        executor.set_lineage(weft_engine::exec::lineage::Lineage {
            emitter,
            namespace: settings
                .openlineage_namespace
                .clone()
                .unwrap_or_else(|| "weft".to_owned()),
        });
        tracing::info!(message = "OpenLineage events of every action go to the endpoint.", endpoint = %endpoint);
    }
    executor.set_write_patience(std::time::Duration::from_secs(
        settings.repository_retry_seconds,
    ));
    if shared {
        // A copy of this HOME (a cloned machine, a restored backup) carries this host's id:
        // nothing is settled under it while another process may hold it.
        let lease = std::time::Duration::from_secs(settings.host_lease_seconds);
        let waited = {
            let executor = Arc::clone(&executor);
            tokio::task::spawn_blocking(move || executor.claim_id(lease))
                .await
                .map_err(|e| Error::Serve(std::io::Error::other(e)))?
                .map_err(|why| Error::Serve(std::io::Error::other(why)))?
        };
        if waited >= std::time::Duration::from_millis(100) {
            tracing::warn!(message = "This host's id was free after waiting out its lease.", host = %executor.host(), waited_ms = waited.as_millis() as u64);
        }
        // What this host's last process left running is settled by its commit markers and
        // goes on (run again where nothing committed); what other hosts left is theirs, or
        // taken over when their lease expires.
        let resumed = {
            let executor = Arc::clone(&executor);
            tokio::task::spawn_blocking(move || executor.resume_own())
                .await
                .map_err(|e| Error::Serve(std::io::Error::other(e)))?
                .map_err(|e| Error::Serve(std::io::Error::other(e.to_string())))?
        };
        if resumed > 0 {
            tracing::warn!(
                message = "Actions this host left running when it stopped were settled.",
                actions = resumed
            );
        }
    } else {
        // A run the last server did not finish: its running actions are settled by their
        // commit markers (finished where the target committed, errors elsewhere), its
        // instance is interrupted; RestartBatchInstance finishes it.
        let interrupted = {
            let executor = Arc::clone(&executor);
            tokio::task::spawn_blocking(move || executor.recover())
                .await
                .map_err(|e| Error::Serve(std::io::Error::other(e)))?
                .map_err(|e| Error::Serve(std::io::Error::other(e.to_string())))?
        };
        if !interrupted.is_empty() {
            tracing::warn!(message = "Batch instances interrupted by a server stop.", instances = ?interrupted);
        }
    }
    {
        let executor = Arc::clone(&executor);
        tokio::task::spawn_blocking(move || executor.open())
            .await
            .map_err(|e| Error::Serve(std::io::Error::other(e)))?
            .map_err(Error::Serve)?;
    }
    // Registered by `open`, the host beats its heart: on a shared repository it takes over
    // from silent hosts; alone, it beats so that `weft hosts` tells it alive.
    executor
        .join_cluster(weft_engine::exec::batch::Cluster {
            lease: std::time::Duration::from_secs(settings.host_lease_seconds),
            poll: if shared {
                std::time::Duration::from_millis(settings.host_poll_ms)
            } else {
                std::time::Duration::from_secs(1)
            },
            shared,
        })
        .map_err(Error::Serve)?;
    tracing::info!(message = "This host runs batch actions.", host = %executor.host(), shared_repository = shared, max_parallel_actions = limit);
    // Stopped (and joined) when the server returns. A stepped clock's ticks are made by
    // `AdvanceClock` alone, so that each answer names every start its move caused.
    let _scheduler = if weft_core::sched::clock::current().clock.is_stepped() {
        None
    } else {
        Some(
            weft_core::sched::scheduler::spawn(
                Arc::clone(&executor),
                std::time::Duration::from_secs(1),
            )
            .map_err(Error::Serve)?,
        )
    };
    spawn_retention(&repo, &settings).map_err(Error::Serve)?;
    weft_notify::sender::spawn(
        weft_notify::sender::Sender {
            repo: Arc::clone(&repo),
            keys: Arc::clone(&keys),
            host: executor.host().to_owned(),
            page_url: Some(
                settings
                    .page_url
                    .clone()
                    .unwrap_or_else(|| url.trim_end_matches("weft/service").to_owned()),
            ),
            retry: std::time::Duration::from_secs(settings.notify_retry_seconds),
            give_up: std::time::Duration::from_secs(settings.notify_give_up_minutes * 60),
            shared,
            fault: notify_fault,
        },
        Arc::new(ChangesBell(Arc::downgrade(&executor))),
    )
    .map_err(Error::Serve)?;
    let stopping = Arc::clone(&executor);
    let state = Arc::new(
        AppState::new(
            repo,
            settings.clone(),
            Some(keys),
            require_token,
            registry,
            executor,
        )
        .listening_on(addr)
        .over_tls(acceptor.is_some()),
    );
    tracing::info!(
        message = "Server started.",
        url = %url,
        home = %opts.home.display(),
        home_from = %opts.home_from,
        environment = %settings.environment,
        version = env!("CARGO_PKG_VERSION")
    );
    // One line on standard output for scripts and tests that start the server on port 0.
    println!("weft listening on {url}");
    let limits = http::Limits {
        max_connections: settings.max_connections,
        header_timeout: std::time::Duration::from_secs(settings.header_timeout_seconds),
        shutdown_grace: std::time::Duration::from_secs(5),
    };
    http::serve(listener, acceptor, api::app(state), limits, shutdown()).await;
    // Stopping: nothing new is claimed, and what runs gets up to STOP_GRACE to end and be
    // recorded. What still runs then dies with the process and is settled by its commit
    // markers at the next start (or taken over by another host).
    stopping.pause();
    let left = tokio::task::spawn_blocking(move || {
        let left = stopping.wait_idle(STOP_GRACE);
        if left == 0 {
            stopping.leave();
        }
        left
    })
    .await
    .unwrap_or(0);
    if left == 0 {
        stopped_cleanly(&home_lock);
    }
    if left > 0 {
        tracing::warn!(
            message = "Actions still running when the server stopped; they are settled at the next start or taken over.",
            actions = left
        );
    }
    tracing::info!(message = "Server stopped.");
    Ok(())
}

/// Holds a reference to the repository and drops it on a blocking thread: declared right
/// after the repository is opened, it is the last of `run`'s references to go, so the
/// repository's PostgreSQL sessions (each with a runtime of its own) end off the async
/// runtime's threads, where dropping a runtime panics.
struct OffRuntime(Option<Arc<Repository>>);

impl Drop for OffRuntime {
    fn drop(&mut self) {
        if let Some(repo) = self.0.take() {
            if tokio::runtime::Handle::try_current().is_ok() {
                drop(tokio::task::spawn_blocking(move || drop(repo)));
            } else {
                drop(repo);
            }
        }
    }
}

/// How long a stopping server waits for its running actions to end.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// This host's id in a shared repository, kept in `HOME/host-id` (made on the first start).
fn host_id(home: &std::path::Path) -> Result<String, Error> {
    let path = home.join("host-id");
    match std::fs::read_to_string(&path) {
        Ok(id) if !id.trim().is_empty() => return Ok(id.trim().to_owned()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(Error::Serve(std::io::Error::other(format!(
                "cannot read {}: {e}",
                path.display()
            ))));
        }
    }
    let id = weft_engine::exec::batch::new_host_id();
    let tmp = home.join("host-id.tmp");
    std::fs::write(&tmp, format!("{id}\n"))
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| {
            Error::Serve(std::io::Error::other(format!(
                "cannot write {}: {e}",
                path.display()
            )))
        })?;
    Ok(id)
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

/// The most rounds of pruning one tick of retention runs (each a few short transactions
/// of at most `retention::ROUND` rows of a kind): what is left waits for the next tick.
const PRUNE_ROUNDS_A_TICK: usize = 20;

/// The fault points of a notification's send (`WEFT_FAULT`, test builds only).
fn notify_fault(moment: weft_notify::sender::Moment) {
    use weft_engine::fault;
    fault::hit(match moment {
        weft_notify::sender::Moment::BeforeSend => fault::BEFORE_NOTIFICATION_SEND,
        weft_notify::sender::Moment::AfterSend => fault::AFTER_NOTIFICATION_SEND,
    });
}

/// What wakes the notification sender: this host's changes to instances; it stops with the
/// executor.
struct ChangesBell(std::sync::Weak<weft_engine::exec::batch::Executor>);

impl weft_notify::sender::Bell for ChangesBell {
    fn count(&self) -> u64 {
        self.0.upgrade().map_or(0, |e| e.changes().count())
    }

    fn wait_past(&self, seen: u64, patience: std::time::Duration) {
        if let Some(e) = self.0.upgrade() {
            let changes = e.changes_handle();
            drop(e);
            changes.wait_past(seen, patience);
        }
    }

    fn stopped(&self) -> bool {
        self.0.upgrade().is_none_or(|e| e.stopped())
    }
}

/// The thread that prunes what the `keep_*` settings let go, every `prune_interval_seconds`,
/// while the repository is open.
fn spawn_retention(repo: &Arc<Repository>, settings: &Settings) -> std::io::Result<()> {
    let weak = Arc::downgrade(repo);
    let interval = std::time::Duration::from_secs(settings.prune_interval_seconds);
    let days = (
        settings.keep_runs_days,
        settings.keep_logs_days,
        settings.keep_deploys_days,
    );
    if days == (0, 0, 0) {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("weft-retention".to_owned())
        .spawn(move || {
            loop {
                std::thread::sleep(interval);
                let Some(repo) = weak.upgrade() else { return };
                for _ in 0..PRUNE_ROUNDS_A_TICK {
                    let keep = repo::retention::Retention::of_days(days.0, days.1, days.2);
                    match repo.prune(&keep) {
                        Ok(p) if p.any() => tracing::info!(
                            message = "Pruned what the retention settings let go.",
                            instances = p.instances,
                            plans = p.plans,
                            logs = p.logs,
                            deploy_history = p.history,
                            notifications = p.notifications
                        ),
                        Ok(_) => break,
                        Err(e) => {
                            tracing::warn!(message = "Pruning failed; trying again at the next tick.", error = %e);
                            break;
                        }
                    }
                }
            }
        })?;
    Ok(())
}
