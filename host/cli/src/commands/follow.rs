//! `weft follow ID`: follows any batch instance (one the scheduler started, too) as `weft
//! run --wait` does: its actions' states on standard error while it runs, every action at its
//! end; exit 0 when it finished, 1 when it failed, was halted or interrupted, 4 when there is
//! no such instance.

use super::args::{Endpoint, Home};
use super::view::follow;
use crate::client::Service;
use clap::Args;
use std::process::ExitCode;

/// `weft follow`'s arguments.
#[derive(Debug, Args)]
pub struct Follow {
    /// The batch instance.
    #[arg(value_name = "ID")]
    id: i64,
    #[command(flatten)]
    endpoint: Endpoint,
}

impl Follow {
    /// Follows the instance to its end; the exit code of [`crate::client::Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        let code = match Service::locate(
            self.endpoint.url.as_deref(),
            self.endpoint.token.as_deref(),
            self.endpoint.ca.as_deref(),
            &home.dir,
            "weft follow",
        ) {
            Ok(service) => follow(&service, "weft follow", self.id),
            Err(code) => code,
        };
        ExitCode::from(code as u8)
    }
}
