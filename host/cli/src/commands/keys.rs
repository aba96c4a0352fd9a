//! `weft keys`: work on the key file (HOME/keyfile); `copy` gives an entry the credentials
//! of another.

use super::args::Home;
use clap::{Args, Subcommand};
use std::process::ExitCode;
use weft_core::keys::KeyFile;
use weft_core::settings;

/// `weft keys`' arguments.
#[derive(Debug, Args)]
pub struct Keys {
    #[command(subcommand)]
    action: KeysAction,
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

impl Keys {
    /// 0 done, 1 failed, 2 refused (no key file, a vital entry without --force).
    pub fn run(self, home: &Home) -> ExitCode {
        match self.action {
            KeysAction::Copy { from, to, force } => {
                keys_copy(&home.dir, &home.from, &from, &to, force)
            }
        }
    }
}

/// The message of a command that needs the key file and finds none: the absolute path it
/// looked at, where HOME came from, and how to make one.
pub(super) fn no_key_file(
    command: &str,
    path: &std::path::Path,
    home_from: &settings::HomeSource,
) -> String {
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
    let vital = [String::from("0"), weft_core::keys::SERVER_KEY.to_owned()];
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
