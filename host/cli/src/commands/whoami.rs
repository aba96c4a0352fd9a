//! `weft whoami`: who the server takes this client for (`WhoAmI`): the user, its role and
//! rights, the folders it is limited to.

use super::args::{Endpoint, Home};
use super::view::{ask, print_json};
use crate::client::Exit;
use clap::Args;
use std::process::ExitCode;
use weft_protocol::commands::WhoAmI;

/// `weft whoami`'s arguments.
#[derive(Debug, Args)]
pub struct Whoami {
    /// Print the answer as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    endpoint: Endpoint,
}

impl Whoami {
    /// Prints who; the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        let code = match ask(&self.endpoint, home, "weft whoami", WhoAmI {}) {
            Ok((_, me)) if self.json => print_json("weft whoami", &me),
            Ok((_, me)) => {
                let rights: Vec<&str> = me.rights.iter().map(|r| r.word()).collect();
                println!("{} ({}, by {})", me.user, me.role, me.via);
                println!("rights: {}", rights.join(", "));
                if !me.folders.is_empty() {
                    println!("deploy and operate only in: {}", me.folders.join(", "));
                }
                Exit::Ok
            }
            Err(code) => code,
        };
        ExitCode::from(code as u8)
    }
}
