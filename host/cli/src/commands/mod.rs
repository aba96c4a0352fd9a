//! The subcommands, one file each: its arguments as a clap struct (the help text is on the
//! fields) and its `run`, which returns the process's exit code. [`Cli`] is the command line
//! as a whole: `--home` and the subcommand.

mod args;
mod audit;
mod backfill;
mod backup;
mod check;
mod delete;
mod deploy;
mod export;
mod fmt;
mod follow;
mod getkey;
mod halt;
mod hosts;
mod jdbc;
mod keys;
mod lineage;
mod logs;
mod lsp;
mod next_runs;
mod notifications;
mod pause;
mod plugins;
mod restart;
mod run;
mod runs;
mod schema;
mod serve;
mod show;
mod users;
mod view;
mod whoami;

pub use args::{Endpoint, Home};

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use weft_core::settings;

/// weft: a server for data transformations.
#[derive(Debug, Parser)]
#[command(name = "weft", version, about, long_about = None)]
pub struct Cli {
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
    Serve(serve::Serve),
    /// Bring the repository schema to the current version (what deploySchema.sh runs).
    Schema(schema::Schema),
    /// Deploy a .dsr file to the service (what deploySheet.sh runs).
    Deploy(deploy::Deploy),
    /// Check a .dsr file or a project's directory without a server, as a deploy into an
    /// empty repository would: the same problems at FILE:LINE:COLUMN; exit 0 none, 1 some.
    Check(check::Check),
    /// Write .dsr files in one canonical form, comments kept; --check lists the files not in
    /// it (exit 1) and writes nothing.
    Fmt(fmt::Fmt),
    /// The language server for editors (standard input and output): the problems weft check
    /// finds as you type, hover documentation of attributes, go to the action that writes a
    /// table, formatting.
    Lsp(lsp::Lsp),
    /// Delete folders, sheets, connections, batches or template modules from the repository (DeleteObjects),
    /// refused while anything that stays refers to them.
    Delete(delete::Delete),
    /// Write the repository (or one folder's tree) as .dsr files below a directory
    /// (ExportRepository), in the form weft deploy DIR deploys back.
    Export(export::Export),
    /// Run sheets, actions or folders as a batch instance (RunElements), and follow it with --wait.
    Run(run::Run),
    /// List the most recent batch instances, newest first, with filters (ListBatchInstances).
    Runs(runs::Runs),
    /// Show one batch instance and its actions (GetBatchInstance).
    Show(show::Show),
    /// Follow a batch instance until it ends, as run --wait does: exit 0 when it finished, 1 when not.
    Follow(follow::Follow),
    /// Print the log lines of a batch instance's actions.
    Logs(logs::Logs),
    /// Ask a batch instance to halt (HaltBatchInstance).
    Halt(halt::Halt),
    /// Run again what failed, was skipped, halted or interrupted in a batch instance
    /// (RestartBatchInstance), with the definitions deployed now unless --as-started.
    Restart(restart::Restart),
    /// Run a scheduled batch once per planned start over a range of days, each with its
    /// day's schedule date, in order, N at a time (BackfillBatch).
    Backfill(backfill::Backfill),
    /// Pause a scheduled batch: its planned starts pass without a run, each kept as missed,
    /// until it is resumed; a deploy leaves the pause (PauseBatch).
    Pause(pause::Pause),
    /// Resume a paused batch: it runs on its schedule again, from its next planned start
    /// (PauseBatch with paused: false).
    Resume(pause::Pause),
    /// List the notifications the events of runs recorded, newest first: sent, pending
    /// with their next try, or given up with why (ListNotifications).
    Notifications(notifications::Notifications),
    /// Copy the SQLite repository to a new file while the server runs (checked).
    Backup(backup::Backup),
    /// Put a backup in place of HOME's SQLite repository (no server may run on it).
    Restore(backup::Restore),
    /// Manage JDBC drivers: the interactive menu, or list, add, delete for scripts (what bin/jdbcManager runs).
    Jdbc(jdbc::Jdbc),
    /// List the plugin libraries found (next to the binary, in INSTALL/plugins and in HOME/plugins) and what they provide, refused ones with the reason; or install one.
    Plugins(plugins::Plugins),
    /// List the next planned starts of a scheduled batch, in local time and UTC, with clock
    /// changes marked (the NextRuns command).
    NextRuns(next_runs::NextRuns),
    /// List the hosts on the repository with their last heartbeat and what runs on each
    /// (the ListHosts command): several with the repository on PostgreSQL, else one.
    Hosts(hosts::Hosts),
    /// Which actions of the repository write a table and which read it, as
    /// /folder/sheet/action (the GetLineage command).
    Lineage(lineage::Lineage),
    /// Work on the key file (HOME/keyfile).
    Keys(keys::Keys),
    /// Print a field of a key file entry (default its URL).
    Getkey(getkey::Getkey),
    /// Named users with roles and their tokens: add, list, set, disable, enable, token,
    /// revoke (the admin right).
    Users(users::Users),
    /// Who the server takes this client for: user, role, rights, folders (WhoAmI).
    Whoami(whoami::Whoami),
    /// Who did what, when, from where: deploys, runs, halts, restarts, backfills, user
    /// changes and refused attempts, newest first (ListAudit; the admin right).
    Audit(audit::Audit),
}

impl Cli {
    /// Runs the subcommand; its exit code.
    pub fn run(self) -> ExitCode {
        let home = match settings::home_and_source(self.home.as_deref()) {
            Ok((dir, from)) => Home { dir, from },
            Err(e) => {
                eprintln!("weft: {e}");
                return ExitCode::from(2);
            }
        };
        match self.command {
            Command::Serve(c) => c.run(home),
            Command::Schema(c) => c.run(&home),
            Command::Deploy(c) => c.run(&home),
            Command::Check(c) => c.run(&home),
            Command::Fmt(c) => c.run(),
            Command::Lsp(c) => c.run(&home),
            Command::Delete(c) => c.run(&home),
            Command::Export(c) => c.run(&home),
            Command::Run(c) => c.run(&home),
            Command::Restart(c) => c.run(&home),
            Command::Runs(c) => c.run(&home),
            Command::Show(c) => c.run(&home),
            Command::Follow(c) => c.run(&home),
            Command::Logs(c) => c.run(&home),
            Command::Halt(c) => c.run(&home),
            Command::Backfill(c) => c.run(&home),
            Command::Pause(c) => c.run(&home, true),
            Command::Resume(c) => c.run(&home, false),
            Command::Notifications(c) => c.run(&home),
            Command::Backup(c) => c.run(&home),
            Command::Restore(c) => c.run(&home),
            Command::Jdbc(c) => c.run(),
            Command::Plugins(c) => c.run(&home),
            Command::NextRuns(c) => c.run(&home),
            Command::Hosts(c) => c.run(&home),
            Command::Keys(c) => c.run(&home),
            Command::Lineage(c) => c.run(&home),
            Command::Getkey(c) => c.run(&home),
            Command::Users(c) => c.run(&home),
            Command::Whoami(c) => c.run(&home),
            Command::Audit(c) => c.run(&home),
        }
    }
}
