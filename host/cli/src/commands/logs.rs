//! `weft logs ID [--action A]`: the log lines of a batch instance's actions
//! (`GetBatchInstance`), each line after its action's id, or one action's lines alone. Exit 0,
//! 2 when the instance has no such action, 4 when there is no such instance.

use super::args::{Endpoint, Home};
use super::view::{ask, print_json};
use crate::client::Exit;
use clap::Args;
use std::process::ExitCode;
use weft_protocol::commands::GetBatchInstance;

/// `weft logs`' arguments.
#[derive(Debug, Args)]
pub struct Logs {
    /// The batch instance.
    #[arg(value_name = "ID")]
    id: i64,
    /// Only this action's lines, as they are.
    #[arg(long, value_name = "ACTION")]
    action: Option<i64>,
    /// Print the lines as JSON: `[{"actionId": .., "log": [..]}, ..]`.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    endpoint: Endpoint,
}

impl Logs {
    /// Prints the log lines; the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        ExitCode::from(self.logs(home) as u8)
    }

    fn logs(&self, home: &Home) -> Exit {
        let asked = GetBatchInstance {
            batch_instance_id: self.id,
        };
        let instance = match ask(&self.endpoint, home, "weft logs", asked) {
            Ok((_, instance)) => instance,
            Err(code) => return code,
        };
        let actions: Vec<_> = instance
            .actions
            .iter()
            .filter(|a| self.action.is_none_or(|id| a.action_id == id))
            .collect();
        if let (Some(id), true) = (self.action, actions.is_empty()) {
            eprintln!("weft logs: batch instance {} has no action {id}", self.id);
            return Exit::Usage;
        }
        if self.json {
            let lines: Vec<serde_json::Value> = actions
                .iter()
                .map(|a| serde_json::json!({"actionId": a.action_id, "log": a.log}))
                .collect();
            return print_json("weft logs", &lines);
        }
        for a in actions {
            for line in &a.log {
                if self.action.is_some() {
                    println!("{line}");
                } else {
                    println!("{}\t{line}", a.action_id);
                }
            }
        }
        Exit::Ok
    }
}
