//! `weft schema`: the repository's schema version, or its upgrade (what deploySchema.sh
//! runs), on SQLite in HOME or on PostgreSQL when key file entry 0 says so.

use super::args::Home;
use clap::Args;
use std::process::ExitCode;
use weft_core::keys::KeyFile;
use weft_core::settings;
use weft_repo::{self as repo, migrations};

/// `weft schema`'s arguments.
#[derive(Debug, Args)]
pub struct Schema {
    /// Only print the repository's schema version and this program's; change nothing.
    #[arg(long)]
    status: bool,
    /// Create a new repository when there is none (needed when HOME is a default, the
    /// installation's or ./weft-home; with --home or WEFT_HOME a missing repository is
    /// created anyway).
    #[arg(long)]
    init: bool,
}

impl Schema {
    /// 0 done, 1 failed, 2 refused (no repository where a default HOME points).
    pub fn run(self, home: &Home) -> ExitCode {
        upgrade(&home.dir, &home.from, self.status, self.init)
    }
}

fn upgrade(
    home: &std::path::Path,
    home_from: &settings::HomeSource,
    status: bool,
    init: bool,
) -> ExitCode {
    let keyfile = KeyFile::path_in(home);
    let keys = if keyfile.exists() {
        match KeyFile::load(&keyfile) {
            Ok(keys) => Some(keys),
            Err(e) => {
                eprintln!("weft schema: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        None
    };
    // Entry 0 of type `postgresql`: the repository is that database; else the file in HOME.
    let place = match repo::Place::of(home, keys.as_ref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("weft schema: {e}");
            return ExitCode::FAILURE;
        }
    };
    // A repository is created only on purpose: not because the command ran in another
    // folder (during an update that would upgrade nothing and say it did).
    if let repo::Place::File(path) = &place
        && !status
        && !init
        && !home_from.is_explicit()
        && !path.exists()
    {
        eprintln!(
            "weft schema: there is no repository at {} (HOME {} comes from {home_from}); nothing was created. Give --home DIR or WEFT_HOME for the repository to upgrade, or --init to create a new one there.",
            path.display(),
            home.display()
        );
        return ExitCode::from(2);
    }
    if status {
        // Read-only: --status changes nothing.
        return match place.version() {
            Ok((at, Some(v))) => {
                println!(
                    "{at}: schema version {v}; this weft writes version {}",
                    migrations::latest()
                );
                ExitCode::SUCCESS
            }
            Ok((at, None)) => {
                println!(
                    "{at}: no repository yet; this weft writes schema version {}",
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
    if matches!(place, repo::Place::File(_))
        && let Err(e) = weft::server::prepare_home(home)
    {
        eprintln!("weft schema: {e}");
        return ExitCode::FAILURE;
    }
    match place.upgrade() {
        Ok((at, u)) if u.from == u.to => {
            println!("{at}: schema already at version {}", u.to);
            ExitCode::SUCCESS
        }
        Ok((at, u)) if u.from == 0 => {
            println!("{at}: new repository created at schema version {}", u.to);
            ExitCode::SUCCESS
        }
        Ok((at, u)) => {
            println!("{at}: schema upgraded from version {} to {}", u.from, u.to);
            ExitCode::SUCCESS
        }
        Err(e) => {
            match &place {
                repo::Place::File(path) => eprintln!("weft schema: {}: {e}", path.display()),
                repo::Place::Postgres(_) => eprintln!("weft schema: {e}"),
            }
            ExitCode::FAILURE
        }
    }
}
