//! `weft deploy` (behind `bin/deploySheet.sh`): sends a `.dsr` file as `DeployRepository`
//! and reports the answer as `FILE:LINE:COLUMN: message` lines. Exit codes: 0 deployed,
//! 1 content invalid, 2 usage, 3 service unreachable, 4 request refused for another reason,
//! 5 service failure.

use super::args::{Endpoint, Home};
use crate::client::{Exit, Refusal, Service, format_detail};
use clap::Args;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft::api::protocol::read;
use weft_dsr::LineIndex;
use weft_engine::deploy;
use weft_protocol::DeployRepository;

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
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,
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
    let (name, content) = match read_content(args.file.as_deref()) {
        Ok(x) => x,
        Err(msg) => {
            eprintln!("deploySheet: {msg}");
            return Exit::Usage;
        }
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
    let refusal = match service.call(request) {
        Ok(Ok(report)) => {
            for w in &report.warnings {
                eprintln!("{}", format_detail(&name, w, "warning: "));
            }
            println!("Deployment without errors");
            if report.dry_run {
                println!("(test only: the repository was not changed)");
            }
            if args.verbose {
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
                if let Some(map) = &report.id_map {
                    println!("idMap: {}", serde_json::to_string(map).unwrap_or_default());
                }
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
            eprintln!("{}", format_detail(&name, d, prefix));
        }
        eprintln!("deploySheet: {name} was not deployed: {}", error.message);
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

fn read_content(file: Option<&Path>) -> Result<(String, String), String> {
    match file {
        Some(p) if p != Path::new("-") => {
            let bytes =
                std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
            let text = String::from_utf8(bytes).map_err(|e| {
                format!(
                    "{} is not UTF-8 text (invalid byte at offset {})",
                    p.display(),
                    e.utf8_error().valid_up_to()
                )
            })?;
            Ok((p.display().to_string(), text))
        }
        _ => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| format!("cannot read standard input as UTF-8 text: {e}"))?;
            Ok(("<stdin>".to_owned(), text))
        }
    }
}
