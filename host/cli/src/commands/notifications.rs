//! `weft notifications`: the notifications the events of runs recorded, newest first
//! (`ListNotifications`): sent, pending with their next try, or given up with why.
//! Exit 0; 2 for a state that is none.

use super::args::{Endpoint, Home};
use super::view::{ask, print_json};
use crate::client::Exit;
use clap::Args;
use std::process::ExitCode;
use weft_protocol::commands::ListNotifications;

/// `weft notifications`' arguments.
#[derive(Debug, Args)]
pub struct Notifications {
    /// Only those in this state.
    #[arg(long, value_parser = ["pending", "sent", "given_up"])]
    state: Option<String>,
    /// Only those of this batch instance.
    #[arg(long, value_name = "ID")]
    run: Option<i64>,
    /// Only those of this batch (its exact name).
    #[arg(long, value_name = "NAME")]
    batch: Option<String>,
    /// Only those older than this id (the next page).
    #[arg(long, value_name = "ID")]
    before: Option<i64>,
    /// How many (1 to 500).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(i64).range(1..=500))]
    limit: i64,
    /// Print the answer as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    endpoint: Endpoint,
}

impl Notifications {
    /// Lists the notifications; the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        let asked = ListNotifications {
            limit: self.limit,
            state: self.state.clone(),
            batch_instance_id: self.run,
            batch_name: self.batch.clone(),
            before: self.before,
        };
        let code = match ask(&self.endpoint, home, "weft notifications", asked) {
            Ok((_, list)) if self.json => print_json("weft notifications", &list),
            Ok((_, list)) => {
                println!(
                    "ID\tSTATE\tEVENT\tBATCH\tRUN\tCHANNEL\tTRIES\tCREATED\tSENT OR NEXT TRY\tLAST ERROR"
                );
                for n in &list.notifications {
                    println!(
                        "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                        n.id,
                        n.state,
                        n.event,
                        n.batch_name,
                        n.batch_instance_id
                            .map_or_else(|| "-".to_owned(), |i| i.to_string()),
                        n.channel,
                        n.attempts,
                        n.created,
                        n.sent
                            .as_deref()
                            .or(n.next_attempt.as_deref())
                            .unwrap_or("-"),
                        n.last_error.as_deref().unwrap_or("-")
                    );
                }
                Exit::Ok
            }
            Err(code) => code,
        };
        ExitCode::from(code as u8)
    }
}
