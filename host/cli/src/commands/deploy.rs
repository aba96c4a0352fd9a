//! `weft deploy` (behind `bin/deploySheet.sh`): sends a `.dsr` file as `DeployRepository`,
//! or every `.dsr` file of a directory's tree as one `DeployProject` (`weft deploy DIR`,
//! `--dir DIR`, with `--prune FOLDER`), and reports the answer as `FILE:LINE:COLUMN:
//! message` lines. Exit codes: 0 deployed, 1 content invalid, 2 usage, 3 service
//! unreachable, 4 request refused for another reason, 5 service failure.

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

/// The most files a project deploy sends.
const MAX_FILES: usize = 20_000;

/// The `.dsr` files below `dir` (hidden directories and files skipped), by their path
/// relative to it with `/` between parts, sorted.
pub(super) fn project_files(dir: &Path) -> Result<Vec<(String, String)>, String> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let entries = std::fs::read_dir(&d)
            .map_err(|e| format!("cannot read directory {}: {e}", d.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot read directory {}: {e}", d.display()))?;
            let name = entry.file_name();
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            if kind.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "dsr") {
                found.push(path);
                if found.len() > MAX_FILES {
                    return Err(format!(
                        "{} holds more than {MAX_FILES} .dsr files",
                        dir.display()
                    ));
                }
            }
        }
    }
    let mut files = Vec::with_capacity(found.len());
    for path in found {
        let relative = path
            .strip_prefix(dir)
            .unwrap_or(&path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let (_, text) = read_content(Some(&path))?;
        files.push((relative, text));
    }
    files.sort();
    if files.is_empty() {
        return Err(format!("{} holds no .dsr file", dir.display()));
    }
    Ok(files)
}

/// The most bytes of one file an action reads (`file`); the server's `max_body_bytes` bounds
/// what one deploy carries.
const MAX_ACTION_FILE: u64 = 256 << 20;

/// The files the actions of `documents` (a project whose top is `dir`) read (`file`), each
/// its name in the project and its text, each once. A `file` that names no file of the
/// project is left for the deploy to report at its place.
///
/// # Errors
///
/// A file that cannot be read, is larger than 256 MiB or is not UTF-8, named with the
/// document and the `file` that names it.
pub(super) fn action_files(
    dir: &Path,
    documents: &[(String, String)],
) -> Result<Vec<(String, String)>, String> {
    let (Some(doc), _, project) = weft_dsr::project::read(documents) else {
        return Ok(Vec::new());
    };
    let mut out: Vec<(String, String)> = Vec::new();
    for r in weft_dsr::project::file_refs(&doc, &project) {
        let Ok(name) = r.name else { continue };
        if out.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let document = project.file_of("sheets", r.sheet).unwrap_or_default();
        let path = dir.join(&name);
        let named = || format!("{}: `file: {}`", dir.join(document).display(), r.written.v);
        let size = std::fs::metadata(&path)
            .map_err(|e| format!("{}: cannot read {}: {e}", named(), path.display()))?
            .len();
        if size > MAX_ACTION_FILE {
            return Err(format!(
                "{}: {} holds {size} bytes, more than the 256 MiB a deploy carries; a module reads larger files on the server's host (Seed's `path`)",
                named(),
                path.display()
            ));
        }
        let (_, text) = read_content(Some(&path)).map_err(|e| format!("{}: {e}", named()))?;
        out.push((name, text));
        if out.len() > MAX_FILES {
            return Err(format!(
                "{} names more than {MAX_FILES} files",
                dir.display()
            ));
        }
    }
    Ok(out)
}

/// Files by name: each its name and text.
pub(super) type Named = Vec<(String, String)>;

/// A project deploy of the one document `content` of the file `file`, when its actions read
/// files (`file`, relative to it): its directory and the document and files to send.
pub(super) fn single_as_project(
    file: Option<&Path>,
    content: &str,
) -> Result<Option<(PathBuf, Named, Named)>, String> {
    let Some(path) = file.filter(|p| *p != Path::new("-")) else {
        return Ok(None);
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let documents = vec![(name, content.to_owned())];
    let files = action_files(&dir, &documents)?;
    Ok((!files.is_empty()).then_some((dir, documents, files)))
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

/// What was deployed, as problems name it.
pub(super) enum Name {
    /// A file (or `<stdin>`).
    File(String),
    /// A project's directory.
    Project(PathBuf),
}

impl Name {
    /// The name a problem is printed with: a project's file as a path from the directory
    /// (so that editors open it), else the file's.
    pub(super) fn of(&self, file: Option<&str>) -> String {
        match (self, file) {
            (Name::File(name), _) => name.clone(),
            (Name::Project(dir), Some(file)) => dir.join(file).display().to_string(),
            (Name::Project(dir), None) => dir.display().to_string(),
        }
    }
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

pub(super) fn read_content(file: Option<&Path>) -> Result<(String, String), String> {
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
