//! `weft restart ID`: runs again what failed, was skipped, halted or interrupted in a batch
//! instance (`RestartBatchInstance`), with the definitions deployed now, or with
//! `--as-started` those it ran. Exit codes as every client command's ([`Exit`]): 0 when the
//! instance runs again, 4 when the server refuses (no such instance, still running, finished,
//! or an action to run again is no longer deployed).

use super::args::{Home, OneInstance};
use super::view::{ask, print_json};
use crate::client::Exit;
use clap::Args;
use std::process::ExitCode;
use weft_protocol::commands::RestartBatchInstance;

/// `weft restart`'s arguments.
#[derive(Debug, Args)]
pub struct Restart {
    #[command(flatten)]
    one: OneInstance,
    /// Run the definitions the instance ran, not those deployed now (a fix deployed since
    /// the run failed is what runs by default).
    #[arg(long)]
    as_started: bool,
    /// Only this action runs again, with what was skipped or halted because of it
    /// (repeatable); default everything that failed, was skipped, halted or interrupted.
    #[arg(long = "action", value_name = "ACTION")]
    actions: Vec<i64>,
}

impl Restart {
    /// Asks for the restart; the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        let asked = RestartBatchInstance {
            batch_instance_id: self.one.id,
            as_started: self.as_started,
            actions: self.actions.clone(),
        };
        let code = match ask(&self.one.endpoint, home, "weft restart", asked) {
            Ok((_, answer)) if self.one.json => print_json("weft restart", &answer),
            Ok((_, answer)) => {
                let which = if self.as_started {
                    "the definitions it ran"
                } else {
                    "the definitions deployed now"
                };
                println!(
                    "batch instance {} restarted: {} action(s) run again with {which}",
                    answer.batch_instance_id, answer.actions_to_run
                );
                Exit::Ok
            }
            Err(code) => code,
        };
        ExitCode::from(code as u8)
    }
}
