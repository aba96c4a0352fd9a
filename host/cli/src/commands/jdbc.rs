//! `weft jdbc` (behind `bin/jdbcManager`): the JDBC drivers of INSTALL/drivers, from the
//! drivers `jdbcList` offers: the interactive menu at a terminal, or `list`, `add NAME` and
//! `delete NAME` for scripts.

use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use weft_core::settings;

/// `weft jdbc`'s arguments.
#[derive(Debug, Args)]
pub struct Jdbc {
    /// INSTALL, where jdbcList and drivers/ are; default $WEFT_INSTALL, else found above the binary.
    #[arg(long, value_name = "DIR")]
    install: Option<PathBuf>,
    /// Without an action: the interactive menu.
    #[command(subcommand)]
    action: Option<JdbcAction>,
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

impl Jdbc {
    /// The menu or the action; 0 done, 1 failed, 2 no INSTALL, no jdbcList or no terminal.
    pub fn run(self) -> ExitCode {
        jdbc(self.install, self.action)
    }
}

fn jdbc(install: Option<PathBuf>, action: Option<JdbcAction>) -> ExitCode {
    use crate::jdbc_manager as jm;
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
