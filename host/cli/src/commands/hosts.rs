//! `weft hosts`: the hosts on the repository (`ListHosts`), one a line, the answering one
//! marked, with how long ago its heartbeat was recorded.

use super::args::{Endpoint, Home};
use crate::client::{Exit, Service};
use clap::Args;
use std::path::Path;
use std::process::ExitCode;
use weft_protocol::ListHosts;

/// `weft hosts`' arguments.
#[derive(Debug, Args)]
pub struct Hosts {
    #[command(flatten)]
    endpoint: Endpoint,
}

impl Hosts {
    /// Prints the hosts; the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        ExitCode::from(hosts(
            self.endpoint.url.as_deref(),
            self.endpoint.token.as_deref(),
            self.endpoint.ca.as_deref(),
            &home.dir,
        ) as u8)
    }
}

/// Runs `weft hosts`: one line a host, the answering one marked, with how long ago its
/// heartbeat was recorded.
fn hosts(url: Option<&str>, token: Option<&str>, ca: Option<&Path>, home: &Path) -> Exit {
    let service = match Service::locate(url, token, ca, home, "weft hosts") {
        Ok(s) => s,
        Err(code) => return code,
    };
    let list = match service.call(ListHosts {}) {
        Ok(Ok(list)) => list,
        Ok(Err(refusal)) => {
            eprintln!("weft hosts: {} ({})", refusal.error.message, refusal.status);
            return refusal.exit();
        }
        Err(code) => return code,
    };
    println!("HOST\tURL\tSLOTS\tRUNNING\tSTARTED\tLAST HEARTBEAT");
    for h in &list.hosts {
        let this = if h.host == list.this_host {
            " (this)"
        } else {
            ""
        };
        println!(
            "{}{this}\t{}\t{}\t{}\t{}\t{:.1} s ago",
            h.host,
            h.url,
            h.slots,
            h.running,
            h.started,
            h.silent_ms as f64 / 1000.0
        );
    }
    Exit::Ok
}
