//! `weft check`: validates a `.dsr` file, or a project's directory, without a server, as a
//! deploy into an empty repository would: the same checks (the loaded plugins' modules and
//! SQL, the graph, `after`, batches and schedules, notifications), the same codes, each
//! problem as `FILE:LINE:COLUMN: message`. For CI before a deploy, and for editors.
//!
//! The repository is a fresh one in a temporary directory, deployed into as a dry run (the
//! deploy's own path, so that nothing is checked differently); what the project refers to
//! but does not hold (a folder or connection deployed earlier) is therefore missing. Exit
//! codes: 0 no errors (warnings are printed; with `--strict` they fail too), 1 problems
//! found, 2 a mistake in the arguments or a file that cannot be read.

use super::args::Home;
use super::deploy::{Name, action_files, project_files, read_content, single_as_project};
use crate::client::format_detail;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use weft_engine::deploy;
use weft_protocol::Severity;

/// `weft check`'s arguments.
#[derive(Debug, Args)]
pub struct Check {
    /// A .dsr file, or a directory whose .dsr files are checked as one project (hidden
    /// directories skipped); default standard input.
    #[arg(value_name = "PATH")]
    path: Option<PathBuf>,
    /// Warnings fail the check too (exit 1).
    #[arg(long)]
    strict: bool,
    /// A .dsr file deployed before the check, as the server holds it already (the
    /// connections of an environment, say); repeatable.
    #[arg(long = "with", value_name = "FILE")]
    with: Vec<PathBuf>,
}

impl Check {
    /// Checks; 0 no errors, 1 problems, 2 usage.
    pub fn run(self, home: &Home) -> ExitCode {
        ExitCode::from(check(&self, home))
    }
}

fn check(args: &Check, home: &Home) -> u8 {
    // The documents, and the files their actions read (`file`): a single file whose
    // actions read files is checked as a project of one document, as `weft deploy` sends it.
    let read = match &args.path {
        Some(dir) if dir.is_dir() => project_files(dir).and_then(|files| {
            let data = action_files(dir, &files)?;
            Ok((Name::Project(dir.clone()), files, data))
        }),
        path => read_content(path.as_deref()).and_then(|(name, text)| {
            Ok(match single_as_project(path.as_deref(), &text)? {
                Some((dir, files, data)) => (Name::Project(dir), files, data),
                None => (Name::File(name.clone()), vec![(name, text)], Vec::new()),
            })
        }),
    };
    let (name, files, data) = match read {
        Ok(x) => x,
        Err(e) => {
            eprintln!("weft check: {e}");
            return 2;
        }
    };
    let dirs = weft_core::plugins::search_path(&home.dir);
    let mut registry = weft_core::plugins::Registry::load(&dirs);
    registry.load_process_modules(&weft_core::plugins::process_dirs(&home.dir));
    // The key file, when HOME has one: the dialect of a JDBC connection is its URL's.
    let keys = weft_core::keys::KeyFile::load(&weft_core::keys::KeyFile::path_in(&home.dir))
        .ok()
        .map(std::sync::Arc::new);
    let catalog = weft_engine::validate::PluginCatalog {
        registry: &registry,
        keys,
    };
    let scratch = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("weft check: no temporary directory for the empty repository: {e}");
            return 2;
        }
    };
    let repo = match weft_repo::Repository::open(&scratch.path().join("repository.db")) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("weft check: the empty repository cannot be made: {e}");
            return 2;
        }
    };
    let env = weft_core::settings::Environment::Development;
    // What the server holds already, deployed for real into the empty repository.
    for path in &args.with {
        let deployed = read_content(Some(path)).and_then(|(name, text)| {
            deploy::deploy(&repo, &catalog, &text, deploy::Options::default(), env).map_err(|e| {
                match e {
                    deploy::Error::Invalid(details) => details
                        .iter()
                        .map(|d| format_detail(&name, d, ""))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    other => format!("{name}: {other}"),
                }
            })
        });
        if let Err(e) = deployed {
            eprintln!("weft check: --with {}: {e}", path.display());
            return 2;
        }
    }
    let opts = deploy::Options {
        dry_run: true,
        ..deploy::Options::default()
    };
    let result = match &name {
        Name::Project(_) => deploy::deploy_project(&repo, &catalog, &files, &data, &[], opts, env),
        Name::File(_) => deploy::deploy(&repo, &catalog, &files[0].1, opts, env),
    };
    let details = match result {
        Ok(report) => report.warnings,
        Err(deploy::Error::Invalid(details)) => details,
        Err(e) => {
            eprintln!("weft check: {e}");
            return 2;
        }
    };
    let mut errors = 0;
    let mut warnings = 0;
    for d in &details {
        let prefix = if d.severity == Severity::Warning {
            warnings += 1;
            "warning: "
        } else {
            errors += 1;
            ""
        };
        eprintln!("{}", format_detail(&name.of(d.file.as_deref()), d, prefix));
    }
    let checked = match &name {
        Name::Project(dir) => format!("{} ({} files)", dir.display(), files.len()),
        Name::File(file) => file.clone(),
    };
    println!("{checked}: {errors} error(s), {warnings} warning(s)");
    if errors > 0 || (args.strict && warnings > 0) {
        1
    } else {
        0
    }
}
