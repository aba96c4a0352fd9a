//! `weft deploy` (behind `bin/deploySheet.sh`): sends a `.dsr` file as `DeployRepository`,
//! or every `.dsr` file of a directory's tree as one `DeployProject` (`weft deploy DIR`,
//! `--dir DIR`, with `--prune FOLDER`), and reports the answer as `FILE:LINE:COLUMN:
//! message` lines. Exit codes: 0 deployed, 1 content invalid, 2 usage, 3 service
//! unreachable, 4 request refused for another reason, 5 service failure.

use super::args::{Endpoint, Home};
use crate::client::{Exit, Refusal, Service, format_detail};
use crate::project::{Name, action_files, project_files, read_content, single_as_project};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft::api::protocol::read;
use weft_dsr::LineIndex;
use weft_engine::deploy;
use weft_protocol::DeployRepository;
use weft_protocol::commands::{DeployProject, ProjectDocument};

/// `weft deploy`'s arguments.
#[derive(Debug, Args)]
pub struct Deploy {
    #[command(flatten)]
    endpoint: Endpoint,
    /// Only test the deployment (deploy option dryRun=true).
    #[arg(long)]
    test: bool,
    /// Print the effective URL, options and file.
    #[arg(long)]
    verbose: bool,
    /// Deploy options as a JSON object: {"validate": "true", "dryRun": "false", "intoFolder": 12}.
    #[arg(long, value_name = "JSON")]
    option: Option<String>,
    /// The .dsr file; default standard input.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["dir", "path"])]
    file: Option<PathBuf>,
    /// Deploy every .dsr file below DIR (hidden directories skipped) as one project, in one
    /// transaction: all or nothing.
    #[arg(long, value_name = "DIR", conflicts_with = "path")]
    dir: Option<PathBuf>,
    /// With a project: below this folder (a path such as /sales), delete the sheets and
    /// folders the project no longer holds, in the same transaction; repeatable.
    #[arg(long, value_name = "FOLDER")]
    prune: Vec<String>,
    /// A .dsr file, or a directory to deploy as a project (as --file or --dir).
    #[arg(value_name = "PATH")]
    path: Option<PathBuf>,
}

impl Deploy {
    /// Deploys; the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        ExitCode::from(deploy(&self, &home.dir) as u8)
    }
}

/// Reads `--option`, a JSON object of deploy options, with the server's own reader: each
/// problem with its line and column in the option's text.
fn deploy_options(text: &str) -> Result<deploy::Options, String> {
    let root = weft_dsr::json::parse(text).map_err(|e| {
        let pos = LineIndex::new(text).position(e.offset as u32);
        format!("--option is not valid JSON: {} at {pos}", e.message)
    })?;
    let mut problems = weft_dsr::Problems::default();
    read::duplicates(&root, &mut problems);
    let options = read::deploy_options(&root, &weft_dsr::Path::root(), &mut problems);
    if problems.has_errors() {
        let lines: Vec<String> = problems
            .into_details(&LineIndex::new(text))
            .iter()
            .map(|d| format_detail("--option", d, ""))
            .collect();
        return Err(format!(
            "--option must be a JSON object such as {{\"validate\": \"true\"}}:\n{}",
            lines.join("\n")
        ));
    }
    Ok(options)
}

/// Runs `weft deploy`, printing to standard output and error; returns the exit code.
fn deploy(args: &Deploy, home: &Path) -> Exit {
    let service = match Service::locate(
        args.endpoint.url.as_deref(),
        args.endpoint.token.as_deref(),
        args.endpoint.ca.as_deref(),
        home,
        "deploySheet",
    ) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let url = service.url.clone();
    let mut options = match args.option.as_deref().map(deploy_options) {
        None => deploy::Options::default(),
        Some(Ok(o)) => o,
        Some(Err(message)) => {
            eprintln!("deploySheet: {message}");
            return Exit::Usage;
        }
    };
    if args.test {
        options.dry_run = true;
    }
    let dir = match (&args.dir, &args.path) {
        (Some(d), _) => Some(d.clone()),
        (None, Some(p)) if p.is_dir() => Some(p.clone()),
        _ => None,
    };
    if dir.is_none() && !args.prune.is_empty() {
        eprintln!(
            "deploySheet: --prune needs a project: a directory (--dir DIR or weft deploy DIR)"
        );
        return Exit::Usage;
    }
    // A single file whose actions read files goes as a project of one document.
    let mut single: Option<(String, String)> = None;
    let project = match dir {
        Some(dir) => match project_files(&dir).and_then(|docs| {
            let files = action_files(&dir, &docs)?;
            Ok((dir, docs, files))
        }) {
            Ok(p) => Some(p),
            Err(msg) => {
                eprintln!("deploySheet: {msg}");
                return Exit::Usage;
            }
        },
        None => {
            let file = args.file.as_deref().or(args.path.as_deref());
            match read_content(file).and_then(|(name, content)| {
                let p = single_as_project(file, &content)?;
                single = Some((name, content));
                Ok(p)
            }) {
                Ok(p) => p,
                Err(msg) => {
                    eprintln!("deploySheet: {msg}");
                    return Exit::Usage;
                }
            }
        }
    };
    let (name, answer) = match project {
        Some((dir, documents, files)) => {
            let named = |list: Vec<(String, String)>| -> Vec<ProjectDocument> {
                list.into_iter()
                    .map(|(name, content)| ProjectDocument { name, content })
                    .collect()
            };
            let request = DeployProject {
                documents: named(documents),
                files: named(files),
                deploy_options: options,
                prune: args.prune.clone(),
            };
            if args.verbose {
                let sent = serde_json::to_value(&request).unwrap_or_default();
                eprintln!("url: {url} (from {})", service.url_from);
                eprintln!("token: {}", service.token_from);
                eprintln!("options: {}", sent["deployOptions"]);
                eprintln!(
                    "project: {} ({} files, {} bytes; {} files its actions read, {} bytes)",
                    dir.display(),
                    request.documents.len(),
                    request
                        .documents
                        .iter()
                        .map(|d| d.content.len())
                        .sum::<usize>(),
                    request.files.len(),
                    request.files.iter().map(|d| d.content.len()).sum::<usize>()
                );
            }
            let name = Name::Project(dir);
            (name, service.call(request))
        }
        None => {
            let Some((name, content)) = single else {
                return Exit::Usage;
            };
            let request = DeployRepository {
                content,
                deploy_options: options,
            };
            if args.verbose {
                // The options in force, defaults included, as they are sent.
                let sent = serde_json::to_value(&request).unwrap_or_default();
                eprintln!("url: {url} (from {})", service.url_from);
                eprintln!("token: {}", service.token_from);
                eprintln!("options: {}", sent["deployOptions"]);
                eprintln!("file: {name} ({} bytes)", request.content.len());
            }
            (Name::File(name), service.call(request))
        }
    };
    let refusal = match answer {
        Ok(Ok(report)) => {
            for w in &report.warnings {
                eprintln!(
                    "{}",
                    format_detail(&name.of(w.file.as_deref()), w, "warning: ")
                );
            }
            println!("Deployment without errors");
            if report.dry_run {
                println!("(test only: the repository was not changed)");
            }
            if let Name::Project(_) = name {
                print_per_file(&name, &report);
            } else if args.verbose {
                for (kind, list) in [
                    ("created", &report.created),
                    ("updated", &report.updated),
                    ("unchanged", &report.unchanged),
                    ("deleted", &report.deleted),
                ] {
                    if !list.is_empty() {
                        let list: Vec<String> = list
                            .iter()
                            .map(|c| format!("{} {}", c.kind, c.id))
                            .collect();
                        println!("{kind}: {}", list.join(", "));
                    }
                }
            }
            if args.verbose
                && let Some(map) = &report.id_map
            {
                println!("idMap: {}", serde_json::to_string(map).unwrap_or_default());
            }
            return Exit::Ok;
        }
        Ok(Err(refusal)) => refusal,
        Err(code) => return code,
    };
    let Refusal { status, error } = &refusal;
    if error.code == "deploy.invalid" {
        for d in &error.details {
            let prefix = if d.severity == weft_protocol::Severity::Warning {
                "warning: "
            } else {
                ""
            };
            eprintln!("{}", format_detail(&name.of(d.file.as_deref()), d, prefix));
        }
        eprintln!(
            "deploySheet: {} was not deployed: {}",
            name.of(None),
            error.message
        );
        return Exit::Invalid;
    }
    eprintln!(
        "deploySheet: the service refused the request ({status}, {}): {}",
        error.code, error.message
    );
    for d in &error.details {
        eprintln!("{}", format_detail("request", d, ""));
    }
    refusal.exit()
}

/// A line per file of a project: how many objects it created, updated, found unchanged and
/// deleted; then what the prune deleted.
fn print_per_file(name: &Name, report: &weft_protocol::deploys::Report) {
    let mut files: std::collections::BTreeMap<Option<&str>, [usize; 4]> = Default::default();
    for (k, list) in [
        &report.created,
        &report.updated,
        &report.unchanged,
        &report.deleted,
    ]
    .into_iter()
    .enumerate()
    {
        for t in list {
            files.entry(t.file.as_deref()).or_default()[k] += 1;
        }
    }
    for (file, n) in &files {
        let Some(file) = file else { continue };
        let words: Vec<String> = ["created", "updated", "unchanged", "deleted"]
            .iter()
            .zip(n)
            .filter(|(_, n)| **n > 0)
            .map(|(w, n)| format!("{n} {w}"))
            .collect();
        println!("{}: {}", name.of(Some(file)), words.join(", "));
    }
    let pruned: Vec<String> = report
        .deleted
        .iter()
        .filter(|t| t.file.is_none())
        .map(|t| format!("{} {}", t.kind, t.id))
        .collect();
    if !pruned.is_empty() {
        println!("pruned: {}", pruned.join(", "));
    }
}
