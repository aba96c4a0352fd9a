//! `weft backfill BATCH --from DAY --to DAY [--parallel N] [--wait]`: runs a scheduled batch
//! once per planned start of its schedule on those days (`BackfillBatch`), each with its
//! day's schedule date, in order, N at a time. Exit 0 when recorded (with `--wait`: when
//! every instance finished; 1 when one did not), 2 usage, 3 unreachable, 4 refused (no such
//! batch, no planned start in the range), 5 failed.

use super::args::{Endpoint, Home};
use super::view::{ask, call, print_json};
use crate::client::Exit;
use clap::Args;
use std::process::ExitCode;
use weft_protocol::InstanceState;
use weft_protocol::commands::{BackfillBatch, ListBatchInstances, ObjectName, WaitBatchInstance};

/// `weft backfill`'s arguments.
#[derive(Debug, Args)]
pub struct Backfill {
    /// The scheduled batch, by id or name.
    #[arg(value_name = "BATCH")]
    batch: String,
    /// The first day, YYYY-MM-DD (service time zone).
    #[arg(long, value_name = "DAY")]
    from: String,
    /// The last day, included.
    #[arg(long, value_name = "DAY")]
    to: String,
    /// How many of its instances run at a time (1 to 64).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i64).range(1..=64))]
    parallel: i64,
    /// Who asks (the instances' user).
    #[arg(long, default_value = "backfill")]
    user: String,
    /// Wait until every instance ended; exit 1 when one did not finish.
    #[arg(long)]
    wait: bool,
    /// Print the answer as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    endpoint: Endpoint,
}

impl Backfill {
    /// Asks for the backfill; the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        ExitCode::from(self.backfill(home) as u8)
    }

    fn backfill(&self, home: &Home) -> Exit {
        let batch = match self.batch.parse::<i64>() {
            Ok(id) if self.batch.bytes().all(|b| b.is_ascii_digit()) => ObjectName::Id(id),
            _ => ObjectName::Name(self.batch.clone()),
        };
        let asked = BackfillBatch {
            batch,
            from: self.from.clone(),
            to: self.to.clone(),
            parallel: self.parallel,
            user: self.user.clone(),
        };
        let (service, answer) = match ask(&self.endpoint, home, "weft backfill", asked) {
            Ok(x) => x,
            Err(code) => return code,
        };
        if self.json && !self.wait {
            return print_json("weft backfill", &answer);
        }
        let n = answer.planned_starts.len();
        eprintln!(
            "backfill {}: {n} instance(s) of batch {} ({}), {} at a time, from {} to {}; weft runs --backfill {} lists them",
            answer.backfill_id,
            answer.batch_id,
            answer.batch_name,
            answer.parallel,
            answer.planned_starts.first().map_or("", String::as_str),
            answer.planned_starts.last().map_or("", String::as_str),
            answer.backfill_id,
        );
        if !self.wait {
            println!("{}", answer.backfill_id);
            return Exit::Ok;
        }
        // Each instance in the order they start, waited for until it ends.
        let mut failed = 0;
        for k in 0..n {
            let id = loop {
                let list = ListBatchInstances {
                    limit: 1000,
                    backfill_id: Some(answer.backfill_id),
                    ..ListBatchInstances::default()
                };
                let listed = match call(&service, "weft backfill", list) {
                    Ok(l) => l,
                    Err(code) => return code,
                };
                let mut ids: Vec<i64> = listed
                    .instances
                    .iter()
                    .map(|i| i.batch_instance_id)
                    .collect();
                ids.sort_unstable();
                if let Some(id) = ids.get(k) {
                    break *id;
                }
                // Not started yet: wait for the one before it to change, else a moment.
                std::thread::sleep(std::time::Duration::from_millis(200));
            };
            let instance = loop {
                let wait = WaitBatchInstance {
                    batch_instance_id: id,
                    timeout_seconds: Some(60.0),
                    changed_from: None,
                };
                match call(&service, "weft backfill", wait) {
                    Ok(w) if w.timed_out => {}
                    Ok(w) => break w.instance,
                    Err(code) => return code,
                }
            };
            let state = instance.summary.state;
            // An instance that did not finish says why: its first action's error.
            let why = instance
                .actions
                .iter()
                .find_map(|a| a.error.as_deref())
                .filter(|_| state != InstanceState::Finished)
                .map(|e| format!(": {}", e.lines().next().unwrap_or_default()))
                .unwrap_or_default();
            if state != InstanceState::Finished {
                failed += 1;
            }
            eprintln!("{}/{n}: instance {id} {state}{why}", k + 1);
        }
        println!(
            "backfill {}: {} of {n} finished",
            answer.backfill_id,
            n - failed
        );
        if failed == 0 { Exit::Ok } else { Exit::Invalid }
    }
}
