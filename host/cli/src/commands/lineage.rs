//! `weft lineage TABLE`: which actions of the whole repository write a table (who feeds it)
//! and which read it (what it feeds), each as `/folder/sheet/action` with its id
//! (`GetLineage`), and one step further: the tables each writer reads, the tables each reader
//! writes. Exit 0, also when none does; 1 when the answer was cut at 1,000 of each.

use super::args::{Endpoint, Home};
use super::view::{ask, print_json};
use crate::client::Exit;
use clap::Args;
use std::process::ExitCode;
use weft_protocol::commands::{GetLineage, LineageAction, LineageTable};

/// `weft lineage`'s arguments.
#[derive(Debug, Args)]
pub struct Lineage {
    /// The table's name (any case).
    #[arg(value_name = "TABLE")]
    table: String,
    /// Only on this connection.
    #[arg(long, value_name = "ID")]
    connection: Option<i64>,
    /// Only in this schema.
    #[arg(long, value_name = "SCHEMA")]
    schema: Option<String>,
    /// Print the answer as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    endpoint: Endpoint,
}

/// Tables as `schema.name`, comma-separated.
fn names(tables: &[LineageTable]) -> String {
    tables
        .iter()
        .map(|t| {
            if t.schema.is_empty() {
                t.table.clone()
            } else {
                format!("{}.{}", t.schema, t.table)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// An action as a line: its path, id and the table as it names it.
fn line(a: &LineageAction) -> String {
    let folder = a.folder.trim_end_matches('/');
    let schema = if a.schema.is_empty() {
        String::new()
    } else {
        format!("{}.", a.schema)
    };
    format!(
        "  {folder}/{}/{}\t(action {}, connection {}, {schema}{})",
        a.sheet_name, a.action_name, a.action_id, a.connection_id, a.table
    )
}

impl Lineage {
    /// Lists the writers and readers; the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        let asked = GetLineage {
            table: self.table.clone(),
            connection_id: self.connection,
            schema: self.schema.clone(),
        };
        let code = match ask(&self.endpoint, home, "weft lineage", asked) {
            Ok((_, l)) if self.json => print_json("weft lineage", &l),
            Ok((_, l)) => {
                for (title, list) in [("written by", &l.writers), ("read by", &l.readers)] {
                    println!("{} {title}: {}", self.table, list.len());
                    for a in list {
                        println!("{}", line(a));
                        // One step further: what a writer reads, what a reader writes.
                        let (verb, next) = if title == "written by" {
                            ("reads", &a.reads)
                        } else {
                            ("writes", &a.writes)
                        };
                        if !next.is_empty() {
                            println!("      {verb} {}", names(next));
                        }
                    }
                }
                if l.truncated {
                    eprintln!("weft lineage: the answer holds the first 1,000 of each");
                    Exit::Invalid
                } else {
                    Exit::Ok
                }
            }
            Err(code) => code,
        };
        ExitCode::from(code as u8)
    }
}
