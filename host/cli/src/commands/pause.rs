//! `weft pause BATCH` and `weft resume BATCH`: an operator pauses a scheduled batch (its
//! planned starts pass without a run, each kept as missed) or resumes it (`PauseBatch`).
//! Exit 0 when done, 4 when there is no such batch or the name is not one batch's.

use super::args::{Endpoint, Home};
use super::view::{ask, print_json};
use crate::client::Exit;
use clap::Args;
use std::process::ExitCode;
use weft_protocol::commands::{ObjectName, PauseBatch};

/// `weft pause`'s and `weft resume`'s arguments.
#[derive(Debug, Args)]
pub struct Pause {
    /// The scheduled batch, by id or name.
    #[arg(value_name = "BATCH")]
    batch: String,
    /// Print the answer as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    endpoint: Endpoint,
}

impl Pause {
    /// Pauses the batch (`paused`) or resumes it; the exit code of [`Exit`].
    pub fn run(self, home: &Home, paused: bool) -> ExitCode {
        let what = if paused { "weft pause" } else { "weft resume" };
        let batch = match self.batch.parse::<i64>() {
            Ok(id) if self.batch.bytes().all(|b| b.is_ascii_digit()) => ObjectName::Id(id),
            _ => ObjectName::Name(self.batch.clone()),
        };
        let code = match ask(&self.endpoint, home, what, PauseBatch { batch, paused }) {
            Ok((_, answer)) if self.json => print_json(what, &answer),
            Ok((_, answer)) => {
                match (&answer.paused_by, &answer.paused_at) {
                    (Some(by), Some(at)) if answer.paused => println!(
                        "batch {} ({}) is paused (by {by} at {at}): its planned starts pass, kept as missed, until weft resume {}",
                        answer.batch_id, answer.name, answer.batch_id
                    ),
                    _ => println!(
                        "batch {} ({}) runs on its schedule",
                        answer.batch_id, answer.name
                    ),
                }
                Exit::Ok
            }
            Err(code) => code,
        };
        ExitCode::from(code as u8)
    }
}
