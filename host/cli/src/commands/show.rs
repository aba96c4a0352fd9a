//! `weft show ID`: one batch instance (`GetBatchInstance`): what it is, its schedule date and
//! each action with its state, rows and error. Exit 0, or 4 when there is no such instance.

use super::args::{Home, OneInstance};
use super::view::{ask, print_instance, print_json};
use crate::client::Exit;
use clap::Args;
use std::process::ExitCode;
use weft_protocol::commands::GetBatchInstance;

/// `weft show`'s arguments.
#[derive(Debug, Args)]
pub struct Show {
    #[command(flatten)]
    one: OneInstance,
}

impl Show {
    /// Prints the instance; the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        let asked = GetBatchInstance {
            batch_instance_id: self.one.id,
        };
        let code = match ask(&self.one.endpoint, home, "weft show", asked) {
            Ok((_, instance)) if self.one.json => print_json("weft show", &instance),
            Ok((_, instance)) => {
                print_instance(&instance);
                Exit::Ok
            }
            Err(code) => code,
        };
        ExitCode::from(code as u8)
    }
}
