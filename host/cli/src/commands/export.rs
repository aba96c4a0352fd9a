//! `weft export [--folder PATH] DIR`: writes the repository (`ExportRepository`) as `.dsr`
//! files below DIR, in the canonical form that `weft deploy DIR` deploys back. Exit 0 when
//! written, 2 for usage (DIR holds `.dsr` files already and `--replace` was not given; a
//! file that cannot be written), 3 unreachable, 4 refused (no such folder), 5 failed.

use super::args::{Endpoint, Home};
use super::view::ask;
use crate::client::Exit;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft_protocol::commands::ExportRepository;

/// `weft export`'s arguments.
#[derive(Debug, Args)]
pub struct Export {
    /// Only this folder (by path, such as /sales), what is below it and the connections its
    /// sheets use; no batches.
    #[arg(long, value_name = "PATH")]
    folder: Option<String>,
    /// Remove the .dsr files below DIR first (other files, and hidden directories such as
    /// .git, stay); without it, a DIR that holds .dsr files is refused.
    #[arg(long)]
    replace: bool,
    /// The directory to write (made when missing).
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Print what was written as JSON: `{"dir", "files": [names]}`.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    endpoint: Endpoint,
}

/// The `.dsr` files below `dir`, hidden directories skipped.
fn dsr_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            dsr_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "dsr") {
            out.push(path);
        }
    }
    Ok(())
}

impl Export {
    /// Exports; the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        ExitCode::from(self.export(home) as u8)
    }

    fn export(&self, home: &Home) -> Exit {
        let mut old = Vec::new();
        if let Err(e) = dsr_files(&self.dir, &mut old) {
            eprintln!("weft export: cannot read {}: {e}", self.dir.display());
            return Exit::Usage;
        }
        if !old.is_empty() && !self.replace {
            eprintln!(
                "weft export: {} holds {} .dsr file(s) already; give --replace to replace them, or an empty directory",
                self.dir.display(),
                old.len()
            );
            return Exit::Usage;
        }
        let asked = ExportRepository {
            folder: self.folder.clone(),
        };
        let answer = match ask(&self.endpoint, home, "weft export", asked) {
            Ok((_, answer)) => answer,
            Err(code) => return code,
        };
        for path in &old {
            if let Err(e) = std::fs::remove_file(path) {
                eprintln!("weft export: cannot remove {}: {e}", path.display());
                return Exit::Usage;
            }
        }
        for f in &answer.files {
            // Names come from the server: only plain relative parts are written.
            let relative: PathBuf = f
                .name
                .split('/')
                .filter(|p| !p.is_empty() && *p != "." && *p != "..")
                .collect();
            let path = self.dir.join(relative);
            let written = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(&path, &f.content));
            if let Err(e) = written {
                eprintln!("weft export: cannot write {}: {e}", path.display());
                return Exit::Usage;
            }
        }
        if self.json {
            let names: Vec<&str> = answer.files.iter().map(|f| f.name.as_str()).collect();
            return super::view::print_json(
                "weft export",
                &serde_json::json!({"dir": self.dir.display().to_string(), "files": names}),
            );
        }
        println!(
            "{} file(s) written to {}",
            answer.files.len(),
            self.dir.display()
        );
        Exit::Ok
    }
}
