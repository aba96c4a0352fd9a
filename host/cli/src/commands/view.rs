//! What the operator's subcommands share: asking the service one command ([`ask`]), an
//! instance printed as text ([`print_actions`], [`print_instance`]), and following a run to
//! its end ([`follow`]), which `weft run --wait` and `weft follow` both do.

use super::args::{Endpoint, Home};
use crate::client::{Exit, Service};
use serde::Serialize;
use weft_protocol::commands::Request;
use weft_protocol::instances::Instance;
use weft_protocol::{ActionState, InstanceState, WaitBatchInstance};

/// The service at `endpoint`, asked `request`: its answer, or the exit code after the
/// refusal (or the failure to reach it) was printed, as `who: ...`.
pub fn ask<R: Request>(
    endpoint: &Endpoint,
    home: &Home,
    who: &'static str,
    request: R,
) -> Result<(Service, R::Answer), Exit> {
    let service = Service::locate(
        endpoint.url.as_deref(),
        endpoint.token.as_deref(),
        endpoint.ca.as_deref(),
        &home.dir,
        who,
    )?;
    let answer = call(&service, who, request)?;
    Ok((service, answer))
}

/// [`ask`] on a service already located.
pub fn call<R: Request>(service: &Service, who: &str, request: R) -> Result<R::Answer, Exit> {
    match service.call(request)? {
        Ok(answer) => Ok(answer),
        Err(refusal) => {
            eprintln!(
                "{who}: {} ({}, {})",
                refusal.error.message, refusal.status, refusal.error.code
            );
            for d in &refusal.error.details {
                eprintln!("  {}: {}", d.path, d.message);
            }
            Err(refusal.exit())
        }
    }
}

/// `answer` as one line of JSON on standard output.
pub fn print_json(who: &str, answer: &impl Serialize) -> Exit {
    match serde_json::to_string(answer) {
        Ok(text) => {
            println!("{text}");
            Exit::Ok
        }
        Err(e) => {
            eprintln!("{who}: {e}");
            Exit::ServerError
        }
    }
}

/// Each action of `instance`, a line (and its error under it).
pub fn print_actions(instance: &Instance) {
    for a in &instance.actions {
        let mut l = format!(
            "  {} {:<24} {}  read {} written {} updated {}",
            a.state,
            format!("{} {}", a.action_id, a.name),
            a.module,
            a.rows_read,
            a.rows_written,
            a.rows_updated
        );
        if a.rows_deleted > 0 {
            l.push_str(&format!(" deleted {}", a.rows_deleted));
        }
        if let Some(e) = &a.error {
            l.push_str(&format!("\n      error: {e}"));
        }
        println!("{l}");
    }
}

/// `instance` as text: what it is, when it ran, its schedule date, then its actions.
pub fn print_instance(instance: &Instance) {
    let s = &instance.summary;
    println!(
        "batch instance {} `{}` {} (user {})",
        s.batch_instance_id, s.batch_name, s.state, s.user
    );
    println!(
        "  started {}{}",
        s.start,
        s.end
            .as_deref()
            .map_or_else(String::new, |e| format!(", ended {e}"))
    );
    if let Some(p) = &s.planned_start {
        println!("  planned start {p}");
    }
    if !instance.schedule_date.is_empty() {
        let set = if instance.schedule_date_set {
            " (set by the run)"
        } else {
            ""
        };
        println!("  schedule date {}{set}", instance.schedule_date);
    }
    print_actions(instance);
}

/// Follows instance `id` until it ends, showing its actions' states on standard error as
/// they change, then every action and how it ended on standard output: [`Exit::Ok`] when it
/// finished, [`Exit::Invalid`] (1) when it failed, was halted or interrupted.
pub fn follow(service: &Service, who: &str, id: i64) -> Exit {
    use std::io::Write as _;
    let mut last = String::new();
    let mut version: Option<String> = None;
    loop {
        // The instance as it is now first, then at each change (or at its end).
        let wait = WaitBatchInstance {
            batch_instance_id: id,
            timeout_seconds: Some(if version.is_some() {
                WaitBatchInstance::MAX_CHANGE_SECONDS
            } else {
                0.0
            }),
            changed_from: version.take(),
        };
        let waited = match service.call(wait) {
            Ok(Ok(waited)) => waited,
            Ok(Err(refusal)) => {
                eprintln!(
                    "{who}: cannot follow instance {id}: {}",
                    refusal.error.message
                );
                return refusal.exit();
            }
            Err(code) => return code,
        };
        version = Some(waited.version.clone());
        let instance = waited.instance;
        let state = instance.summary.state;
        let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
        for a in &instance.actions {
            *counts.entry(a.state.code()).or_default() += 1;
        }
        let running: Vec<String> = instance
            .actions
            .iter()
            .filter(|a| a.state == ActionState::Running)
            .map(|a| format!("{} {}", a.action_id, a.name))
            .collect();
        let line = format!(
            "instance {id} {state}: {}{}",
            counts
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
            if running.is_empty() {
                String::new()
            } else {
                format!("; running: {}", running.join(", "))
            }
        );
        if line != last {
            eprintln!("{line}");
            let _ = std::io::stderr().flush();
            last = line;
        }
        if !state.is_ongoing() {
            print_actions(&instance);
            println!("batch instance {id} {state}");
            return if state == InstanceState::Finished {
                Exit::Ok
            } else {
                Exit::Invalid
            };
        }
    }
}
