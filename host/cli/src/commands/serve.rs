//! `weft serve`: the server, on the async runtime, with its log to standard error and to
//! `HOME/logs`.

use super::args::Home;
use clap::Args;
use std::process::ExitCode;
use weft_core::settings::Environment;

/// `weft serve`'s arguments.
#[derive(Debug, Args)]
pub struct Serve {
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
    /// Speak HTTPS only, with this certificate chain (PEM; read again when it changes);
    /// with --tls-key. Overrides tls_cert_file of weft.toml and WEFT_TLS_CERT_FILE.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
}

impl Serve {
    /// Serves until stopped; 1 when the server cannot start.
    pub fn run(self, home: Home) -> ExitCode {
        tag_children(&home.dir);
        let _log_guard = init_logging(&home.dir);
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
            home: home.dir,
            home_from: home.from,
            listen: self.listen,
            environment: self.environment,
            fake_now: self.fake_now,
            stepped_clock: self.stepped_clock,
            tls: self
                .tls_cert
                .zip(self.tls_key)
                .map(|(cert, key)| weft::server::tls::Files { cert, key }),
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
}

/// Marks every process the server's actions will start with the server's HOME
/// (`exec::leftovers`), so that the next server on it finds what a killed one left running.
#[allow(unsafe_code)]
fn tag_children(home: &std::path::Path) {
    // HOME made first, so that the tag is its canonical path, as the next start reads it.
    let _ = std::fs::create_dir_all(home);
    let tag = weft_engine::exec::leftovers::tag(home);
    // SAFETY: called first in `main` for `weft serve`, before the logger, the async runtime
    // or anything else has started a thread, so nothing reads the environment meanwhile.
    unsafe { std::env::set_var(weft_engine::exec::leftovers::TAG, tag) };
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
