//! `weft run`: starts a batch instance of sheets, actions or folders (`RunElements`); with
//! `--wait`, follows it (`WaitBatchInstance`) and exits 0 when it finished, 1 when not.

use super::args::{Endpoint, Home};
use crate::client::{Exit, Service};
use clap::Args;
use std::path::Path;
use std::process::ExitCode;
use weft_protocol::{BatchExecution, ElementKey, ElementRef, RunElements, Selection, Variable};

/// `weft run`'s arguments.
#[derive(Debug, Args)]
pub struct Run {
    #[command(flatten)]
    endpoint: Endpoint,
    /// A sheet to run, by id or path (/folder/sheet) (repeatable).
    #[arg(long = "sheet", value_name = "ID|PATH", value_parser = parse_key)]
    sheets: Vec<ElementKey>,
    /// An action to run, by id or path (/folder/sheet/action) (repeatable).
    #[arg(long = "action", value_name = "ID|PATH", value_parser = parse_key)]
    actions: Vec<ElementKey>,
    /// A folder whose sheets, at any depth, run, by id or path (repeatable).
    #[arg(long = "folder", value_name = "ID|PATH", value_parser = parse_key)]
    folders: Vec<ElementKey>,
    /// A variable for the run (repeatable).
    #[arg(long = "var", value_name = "NAME=VALUE", value_parser = parse_var)]
    vars: Vec<(String, String)>,
    /// Also run every action that reads, directly or through others, what the named ones
    /// write (dbt's `model+`).
    #[arg(long, conflicts_with = "upstream")]
    downstream: bool,
    /// Also run every action that writes, directly or through others, what the named ones
    /// read (dbt's `+model`).
    #[arg(long)]
    upstream: bool,
    /// The batch name.
    #[arg(long, default_value = "manual run")]
    name: String,
    /// The user the run is for; default $USER.
    #[arg(long)]
    user: Option<String>,
    /// Show the actions' states while the run goes on; the exit code says finished (0) or not (1).
    #[arg(long)]
    wait: bool,
}

impl Run {
    /// Starts the run (and follows it); the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        let user = self
            .user
            .clone()
            .or_else(|| std::env::var("USER").ok())
            .unwrap_or_else(|| "weft".to_owned());
        ExitCode::from(run(&self, user, &home.dir) as u8)
    }
}

/// `NAME=VALUE` of `--var`.
/// An element's id, or its path (from `/`).
fn parse_key(s: &str) -> Result<ElementKey, String> {
    if s.starts_with('/') {
        return Ok(ElementKey::Path(s.to_owned()));
    }
    s.parse()
        .map(ElementKey::Id)
        .map_err(|_| format!("`{s}` is neither an id nor a path from `/`"))
}

fn parse_var(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((n, v)) if !n.trim().is_empty() => Ok((n.trim().to_owned(), v.to_owned())),
        _ => Err(format!("`{s}` is not NAME=VALUE")),
    }
}

/// Runs `weft run`: starts a batch instance; with `--wait`, shows the actions' states while
/// it runs and exits 0 when it finished, 1 when it failed, was halted or interrupted.
fn run(args: &Run, user: String, home: &Path) -> Exit {
    let service = match Service::locate(
        args.endpoint.url.as_deref(),
        args.endpoint.token.as_deref(),
        args.endpoint.ca.as_deref(),
        home,
        "weft run",
    ) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let mut elements = Vec::new();
    for (kind, ids) in [
        ('S', &args.sheets),
        ('A', &args.actions),
        ('F', &args.folders),
    ] {
        elements.extend(ids.iter().map(|id| ElementRef {
            kind,
            id: id.clone(),
        }));
    }
    if elements.is_empty() {
        eprintln!(
            "weft run: name something to run: --sheet, --action or --folder, each an ID or a /path (each may be repeated)"
        );
        return Exit::Usage;
    }
    let request = RunElements {
        batch_execution: BatchExecution {
            batch_name: args.name.clone(),
            user,
            element_list: elements,
            select: if args.downstream {
                Selection::Downstream
            } else if args.upstream {
                Selection::Upstream
            } else {
                Selection::Named
            },
        },
        variables: args
            .vars
            .iter()
            .map(|(name, value)| Variable {
                name: name.clone(),
                kind: Some("String".to_owned()),
                value: value.clone(),
            })
            .collect(),
    };
    let id = match service.call(request) {
        Ok(Ok(started)) => started.batch_instance_id,
        Ok(Err(refusal)) => {
            eprintln!(
                "weft run: the service refused the run ({}, {}): {}",
                refusal.status, refusal.error.code, refusal.error.message
            );
            return refusal.exit();
        }
        Err(code) => return code,
    };
    println!("batch instance {id} started");
    if !args.wait {
        return Exit::Ok;
    }
    super::view::follow(&service, "weft run", id)
}
