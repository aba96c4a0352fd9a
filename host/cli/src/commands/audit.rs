//! `weft audit`: who did what, when, from where (`ListAudit`; the admin right), newest
//! first, with filters.

use super::args::{Endpoint, Home};
use super::view::{ask, print_json};
use crate::client::Exit;
use clap::Args;
use std::process::ExitCode;
use weft_protocol::commands::ListAudit;

/// `weft audit`'s arguments.
#[derive(Debug, Args)]
pub struct Audit {
    /// Only this user's entries (keyfile, loopback, scheduler, none for refusals of an
    /// unknown caller).
    #[arg(long)]
    user: Option<String>,
    /// Only this command's (HaltBatchInstance, DeployProject, ...).
    #[arg(long)]
    command: Option<String>,
    /// Only done or refused.
    #[arg(long)]
    outcome: Option<String>,
    /// At or after this UTC day or time (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ).
    #[arg(long)]
    since: Option<String>,
    /// Before this UTC day or time.
    #[arg(long)]
    until: Option<String>,
    /// Older than this entry (paging back).
    #[arg(long, value_name = "ID")]
    before: Option<i64>,
    /// The most entries (1 to 1000).
    #[arg(long, default_value_t = 100)]
    limit: i64,
    /// Print the answer as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    endpoint: Endpoint,
}

impl Audit {
    /// Prints the entries; the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        let asked = ListAudit {
            user: self.user,
            command: self.command,
            outcome: self.outcome,
            since: self.since,
            until: self.until,
            before_id: self.before,
            limit: Some(self.limit),
        };
        let code = match ask(&self.endpoint, home, "weft audit", asked) {
            Ok((_, list)) if self.json => print_json("weft audit", &list),
            Ok((_, list)) => {
                println!("ID\tAT\tUSER\tVIA\tCLIENT\tHOST\tCOMMAND\tOUTCOME\tWHAT");
                for e in &list.entries {
                    println!(
                        "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                        e.id, e.at, e.user, e.via, e.client, e.host, e.command, e.outcome, e.what
                    );
                }
                Exit::Ok
            }
            Err(code) => code,
        };
        ExitCode::from(code as u8)
    }
}
