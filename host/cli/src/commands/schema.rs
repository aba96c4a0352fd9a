//! `weft schema`: the repository's schema version, or its upgrade (what deploySchema.sh
//! runs), on SQLite in HOME or on PostgreSQL when key file entry 0 says so.

use super::args::Home;
use clap::Args;
use std::process::ExitCode;
use weft::repo::{self, migrations};
use weft::settings;

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
