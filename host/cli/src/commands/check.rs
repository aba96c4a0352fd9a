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
use crate::client::format_detail;
use crate::offline::{Checker, Target};
use crate::project::{Name, action_files, project_files, read_content, single_as_project};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
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
    let mut with = Vec::with_capacity(args.with.len());
    for path in &args.with {
        match read_content(Some(path)) {
            Ok(named) => with.push(named),
            Err(e) => {
                eprintln!("weft check: --with {}: {e}", path.display());
                return 2;
            }
        }
    }
    let target = match &name {
        Name::Project(_) => Target::Project {
            documents: &files,
            files: &data,
        },
        Name::File(_) => Target::Document(&files[0].1),
    };
    let details = match Checker::new(&home.dir).check(&with, target, true) {
        Ok(checked) => checked.details,
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
