//! `weft runs`: the most recent batch instances, newest first (`ListBatchInstances`), with
//! the page's filters: state, a part of the batch name, a scheduled batch, a backfill, older
//! than an id.
//! Exit 0, 2 for a state that is none.

use super::args::{Endpoint, Home};
use super::view::{ask, print_json};
use crate::client::Exit;
use clap::Args;
use std::process::ExitCode;
use weft_protocol::InstanceState;
use weft_protocol::commands::ListBatchInstances;

/// `weft runs`' arguments.
#[derive(Debug, Args)]
pub struct Runs {
    /// Only instances in this state (waiting, running, finished, failed, halted, interrupted).
    #[arg(long, value_parser = state)]
    state: Option<InstanceState>,
    /// Only instances whose batch name holds this text, in any case.
    #[arg(long)]
    name: Option<String>,
    /// Only the runs the scheduler started for this batch id.
    #[arg(long, value_name = "ID")]
    batch: Option<i64>,
    /// Only the instances of this backfill (weft backfill).
    #[arg(long, value_name = "ID")]
    backfill: Option<i64>,
    /// Only instances older than this id (the next page).
    #[arg(long, value_name = "ID")]
    before: Option<i64>,
    /// How many (1 to 1,000).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(i64).range(1..=1000))]
    limit: i64,
    /// Print the answer as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    endpoint: Endpoint,
}

/// A state word of `--state`.
fn state(word: &str) -> Result<InstanceState, String> {
    InstanceState::from_word(word).ok_or_else(|| {
        format!("`{word}` is no state; the states are waiting, running, finished, failed, halted, interrupted")
    })
}

impl Runs {
    /// Lists the instances; the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        let asked = ListBatchInstances {
            limit: self.limit,
            state: self.state,
            name: self.name.clone(),
            before: self.before,
            batch_id: self.batch,
            backfill_id: self.backfill,
            ..ListBatchInstances::default()
        };
        let code = match ask(&self.endpoint, home, "weft runs", asked) {
            Ok((_, list)) if self.json => print_json("weft runs", &list),
            Ok((_, list)) => {
                println!("ID\tSTATE\tBATCH\tUSER\tSTART\tEND\tPLANNED");
                for i in &list.instances {
                    println!(
                        "{}\t{}\t{}\t{}\t{}\t{}\t{}",
                        i.batch_instance_id,
                        i.state,
                        i.batch_name,
                        i.user,
                        i.start,
                        i.end.as_deref().unwrap_or("-"),
                        i.planned_start.as_deref().unwrap_or("-")
                    );
                }
                Exit::Ok
            }
            Err(code) => code,
        };
        ExitCode::from(code as u8)
    }
}
