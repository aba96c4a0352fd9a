//! `weft restart ID`: runs again what failed, was skipped, halted or interrupted in a batch
//! instance (`RestartBatchInstance`), with the definitions deployed now, or with
//! `--as-started` those it ran. Exit codes as every client command's ([`Exit`]): 0 when the
//! instance runs again, 4 when the server refuses (no such instance, still running, finished,
//! or an action to run again is no longer deployed).

use super::args::{Endpoint, Home};
use crate::client::{Exit, Service};
use clap::Args;
use std::process::ExitCode;
use weft_protocol::commands::RestartBatchInstance;

/// `weft restart`'s arguments.
#[derive(Debug, Args)]
pub struct Restart {
    /// The batch instance.
    #[arg(value_name = "ID")]
    id: i64,
    /// Run the definitions the instance ran, not those deployed now (a fix deployed since
    /// the run failed is what runs by default).
    #[arg(long)]
    as_started: bool,
    /// Print the answer as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    endpoint: Endpoint,
}

impl Restart {
    /// Asks for the restart; the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        ExitCode::from(self.restart(home) as u8)
    }

    fn restart(&self, home: &Home) -> Exit {
        let service = match Service::locate(
            self.endpoint.url.as_deref(),
            self.endpoint.token.as_deref(),
            &home.dir,
            "weft restart",
        ) {
            Ok(s) => s,
            Err(code) => return code,
        };
        let asked = RestartBatchInstance {
            batch_instance_id: self.id,
            as_started: self.as_started,
        };
        let answer = match service.call(asked) {
            Ok(Ok(answer)) => answer,
            Ok(Err(refusal)) => {
                eprintln!(
                    "weft restart: {} ({})",
                    refusal.error.message, refusal.status
                );
                return refusal.exit();
            }
            Err(code) => return code,
        };
        if self.json {
            match serde_json::to_string(&answer) {
                Ok(text) => println!("{text}"),
                Err(e) => {
                    eprintln!("weft restart: {e}");
                    return Exit::ServerError;
                }
            }
        } else {
            let which = if self.as_started {
                "the definitions it ran"
            } else {
                "the definitions deployed now"
            };
            println!(
                "batch instance {} restarted: {} action(s) run again with {which}",
                answer.batch_instance_id, answer.actions_to_run
            );
        }
        Exit::Ok
    }
}
