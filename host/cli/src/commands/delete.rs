//! `weft delete`: removes folders, sheets, connections, batches and template modules from the
//! repository
//! (`DeleteObjects`), by id or by path or name. Exit 0 when deleted (or, with `--dry-run`,
//! when the delete would be done), 4 when refused: something named does not exist, or what
//! stays still refers to it (every reference is printed).

use super::args::{Endpoint, Home};
use super::view::{ask, print_json};
use crate::client::Exit;
use clap::Args;
use std::process::ExitCode;
use weft_protocol::commands::{DeleteObjects, ObjectName};

/// `weft delete`'s arguments.
#[derive(Debug, Args)]
pub struct Delete {
    /// A folder to delete, by id or path (`/sales/daily`); repeatable.
    #[arg(long = "folder", value_name = "ID|PATH")]
    folders: Vec<String>,
    /// A sheet to delete, by id or by its folder's path and its name (`/sales/daily/Orders`);
    /// repeatable.
    #[arg(long = "sheet", value_name = "ID|PATH")]
    sheets: Vec<String>,
    /// A connection to delete, by id or name; repeatable.
    #[arg(long = "connection", value_name = "ID|NAME")]
    connections: Vec<String>,
    /// A batch to delete, by id or name; repeatable.
    #[arg(long = "batch", value_name = "ID|NAME")]
    batches: Vec<String>,
    /// A template module to delete, by name; repeatable. What its actions rendered stays.
    #[arg(long = "module", value_name = "NAME")]
    modules: Vec<String>,
    /// Delete each folder with every folder and sheet below it.
    #[arg(long, short = 'r')]
    recursive: bool,
    /// Report what would be deleted; delete nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print the answer as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    endpoint: Endpoint,
}

/// An argument as an id (all digits) or a path or name.
fn name(text: &str) -> ObjectName {
    match text.parse::<i64>() {
        Ok(id) if text.bytes().all(|b| b.is_ascii_digit()) => ObjectName::Id(id),
        _ => ObjectName::Name(text.to_owned()),
    }
}

impl Delete {
    /// Asks for the delete; the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        let names = |v: &[String]| v.iter().map(|t| name(t)).collect::<Vec<_>>();
        let request = DeleteObjects {
            folders: names(&self.folders),
            sheets: names(&self.sheets),
            connections: names(&self.connections),
            batches: names(&self.batches),
            modules: self
                .modules
                .iter()
                .map(|m| ObjectName::Name(m.clone()))
                .collect(),
            recursive: self.recursive,
            dry_run: self.dry_run,
        };
        if request.folders.is_empty()
            && request.sheets.is_empty()
            && request.connections.is_empty()
            && request.batches.is_empty()
            && request.modules.is_empty()
        {
            eprintln!(
                "weft delete: name something to delete: --folder, --sheet, --connection, --batch or --module (see weft delete --help)"
            );
            return ExitCode::from(Exit::Usage as u8);
        }
        let code = match ask(&self.endpoint, home, "weft delete", request) {
            Ok((_, answer)) if self.json => print_json("weft delete", &answer),
            Ok((_, answer)) => {
                let verb = if answer.dry_run {
                    "would delete"
                } else {
                    "deleted"
                };
                for d in &answer.deleted {
                    println!("{verb} {} {} {}", d.kind, d.id, d.name);
                }
                match answer.deploy_id {
                    Some(id) => println!(
                        "{} object(s) deleted; deploy {id} of the deploy history records it",
                        answer.deleted.len()
                    ),
                    None => println!(
                        "dry run: {} object(s) would be deleted; nothing changed",
                        answer.deleted.len()
                    ),
                }
                Exit::Ok
            }
            Err(code) => code,
        };
        ExitCode::from(code as u8)
    }
}
