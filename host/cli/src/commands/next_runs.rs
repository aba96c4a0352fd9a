//! `weft next-runs`: the next planned starts of a scheduled batch (`NextRuns`), one a line:
//! local time, UTC offset, UTC, and what a clock change does to it.

use super::args::{Endpoint, Home};
use crate::client::{Exit, Service};
use clap::Args;
use std::path::Path;
use std::process::ExitCode;
use weft_protocol::NextRuns as Ask;

/// `weft next-runs`' arguments.
#[derive(Debug, Args)]
pub struct NextRuns {
    #[command(flatten)]
    endpoint: Endpoint,
    /// The batch id.
    batch: i64,
    /// How many starts (1 to 1000).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=1000))]
    count: u16,
}

impl NextRuns {
    /// Prints the starts; the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        ExitCode::from(next_runs(
            self.endpoint.url.as_deref(),
            self.endpoint.token.as_deref(),
            self.endpoint.ca.as_deref(),
            &home.dir,
            self.batch,
            usize::from(self.count),
        ) as u8)
    }
}

/// Runs `weft next-runs`: prints the next planned starts of a scheduled batch, one a line:
/// local time, UTC offset, UTC, and what a clock change does to it.
fn next_runs(
    url: Option<&str>,
    token: Option<&str>,
    ca: Option<&Path>,
    home: &Path,
    batch: i64,
    count: usize,
) -> Exit {
    let service = match Service::locate(url, token, ca, home, "weft next-runs") {
        Ok(s) => s,
        Err(code) => return code,
    };
    let p = match service.call(Ask {
        batch_id: batch,
        count,
    }) {
        Ok(Ok(p)) => p,
        Ok(Err(refusal)) => {
            eprintln!(
                "weft next-runs: {} ({})",
                refusal.error.message, refusal.status
            );
            return refusal.exit();
        }
        Err(code) => return code,
    };
    println!(
        "batch {} `{}`: {} in {}, springGap {}, autumnOverlap {}{}",
        p.batch_id,
        p.name,
        p.schedule,
        p.time_zone,
        p.spring_gap,
        p.autumn_overlap,
        if p.enabled { "" } else { " (disabled)" }
    );
    if let Some(problem) = &p.problem {
        println!("  {problem}");
    } else if p.starts.is_empty() {
        println!("  no planned start");
    }
    for s in &p.starts {
        let note = s
            .clock_change
            .as_deref()
            .map(|n| format!("  {n}"))
            .unwrap_or_default();
        println!(
            "  {}  UTC{}  {}{}",
            s.local,
            s.utc_offset.as_deref().unwrap_or(""),
            s.utc,
            note
        );
    }
    Exit::Ok
}
