//! `weft backup FILE` and `weft restore FILE`: a copy of a SQLite repository taken while
//! the server runs (`VACUUM INTO`: one consistent moment, checked), and its way back into
//! HOME while no server runs on it. A repository on PostgreSQL is backed up with
//! `pg_dump` and restored with `pg_restore` (docs/operating.md): both commands say so.
//! Exit codes: 0 done, 2 usage (no repository, a file in the way, PostgreSQL), 4 refused (a
//! server runs on HOME's repository), 5 failed (the copy or the file is not a whole
//! repository).

use super::args::Home;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use weft_core::keys::KeyFile;
use weft_engine::exec::identity::Process;
use weft_repo::{self as repo, sqlite::backup};

/// `weft backup`'s arguments.
#[derive(Debug, Args)]
pub struct Backup {
    /// The file to write (it must not exist).
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

/// `weft restore`'s arguments.
#[derive(Debug, Args)]
pub struct Restore {
    /// The backup to put in place of HOME's repository.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Replace HOME's repository when there is one (no server may run on it).
    #[arg(long)]
    replace: bool,
}

/// HOME's repository file, or the exit code after saying why there is none to use.
fn repository_file(home: &Home, who: &str) -> Result<PathBuf, ExitCode> {
    let keyfile = KeyFile::path_in(&home.dir);
    let keys = if keyfile.exists() {
        match KeyFile::load(&keyfile) {
            Ok(k) => Some(k),
            Err(e) => {
                eprintln!("{who}: {e}");
                return Err(ExitCode::from(2));
            }
        }
    } else {
        None
    };
    match repo::Place::of(&home.dir, keys.as_ref()) {
        Err(e) => {
            eprintln!("{who}: {e}");
            Err(ExitCode::from(2))
        }
        Ok(repo::Place::File(path)) => Ok(path),
        Ok(repo::Place::Postgres(_)) => {
            eprintln!(
                "{who}: the repository is the PostgreSQL database of key file entry 0: back it up with pg_dump and restore it with pg_restore (docs/operating.md, \"Backup and restore\")"
            );
            Err(ExitCode::from(2))
        }
    }
}

impl Backup {
    /// Writes the backup; the exit code.
    pub fn run(self, home: &Home) -> ExitCode {
        let path = match repository_file(home, "weft backup") {
            Ok(p) => p,
            Err(code) => return code,
        };
        if !path.exists() {
            eprintln!("weft backup: there is no repository at {}", path.display());
            return ExitCode::from(2);
        }
        if self.file.exists() {
            eprintln!(
                "weft backup: {} exists already; a backup is written to a new file",
                self.file.display()
            );
            return ExitCode::from(2);
        }
        match backup::backup(&path, &self.file) {
            Ok(c) => {
                println!(
                    "backup of {} written to {} (schema version {}, {} bytes, integrity checked)",
                    path.display(),
                    self.file.display(),
                    c.schema_version,
                    c.bytes
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("weft backup: {e}");
                // A copy that failed its check is no backup.
                let _ = std::fs::remove_file(&self.file);
                ExitCode::from(5)
            }
        }
    }
}

impl Restore {
    /// Puts the backup in place; the exit code.
    pub fn run(self, home: &Home) -> ExitCode {
        let path = match repository_file(home, "weft restore") {
            Ok(p) => p,
            Err(code) => return code,
        };
        if path.exists() {
            if !self.replace {
                eprintln!(
                    "weft restore: {} exists; give --replace to replace it (stop its server first)",
                    path.display()
                );
                return ExitCode::from(2);
            }
            match backup::holders(&path) {
                Ok(holders) => {
                    if let Some(live) = holders
                        .iter()
                        .filter_map(|t| Process::parse(t))
                        .find(|p| p.is_of_this_machine() && p.is_alive_here())
                    {
                        eprintln!(
                            "weft restore: a server (process {}) runs on {}; stop it first",
                            live.pid,
                            path.display()
                        );
                        return ExitCode::from(4);
                    }
                }
                Err(e) => eprintln!(
                    "weft restore: the repository being replaced cannot be read ({e}); replacing it"
                ),
            }
        }
        match backup::restore(&self.file, &path) {
            Ok(c) => {
                println!(
                    "{} restored to {} (schema version {}, {} bytes); a server started on HOME upgrades it when it is older",
                    self.file.display(),
                    path.display(),
                    c.schema_version,
                    c.bytes
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("weft restore: {e}; HOME's repository is unchanged");
                ExitCode::from(5)
            }
        }
    }
}
