//! `weft halt ID`: asks a batch instance to halt (`HaltBatchInstance`): nothing new starts,
//! running actions stop and roll back. Exit 0 when the halt was asked, 4 when the instance
//! does not exist or does not run.

use super::args::{Home, OneInstance};
use super::view::{ask, print_json};
use crate::client::Exit;
use clap::Args;
use std::process::ExitCode;
use weft_protocol::commands::HaltBatchInstance;

/// `weft halt`'s arguments.
#[derive(Debug, Args)]
pub struct Halt {
    #[command(flatten)]
    one: OneInstance,
}

impl Halt {
    /// Asks for the halt; the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        let asked = HaltBatchInstance {
            batch_instance_id: self.one.id,
        };
        let code = match ask(&self.one.endpoint, home, "weft halt", asked) {
            Ok((_, answer)) if self.one.json => print_json("weft halt", &answer),
            Ok((_, answer)) => {
                println!(
                    "batch instance {} asked to halt (weft follow {} shows its end)",
                    answer.batch_instance_id, answer.batch_instance_id
                );
                Exit::Ok
            }
            Err(code) => code,
        };
        ExitCode::from(code as u8)
    }
}
