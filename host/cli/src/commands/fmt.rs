//! `weft fmt`: writes `.dsr` files in one canonical form, their comments kept
//! ([`weft_dsr::format`]), so that a project's diffs show what changed and not how each
//! author lays out HJSON. With `--check` it writes nothing and fails when a file is not in
//! the form (for CI); `-` formats standard input to standard output (for editors).
//!
//! A file is replaced through a temporary file in its directory and a rename, so that a
//! crash leaves the old text or the new one, never half; a file that does not read is left
//! as it is and reported at its line and column. Exit codes: 0 every file formatted (or, with
//! `--check`, already in the form), 1 a file that does not read or, with `--check`, one not
//! in the form, 2 a mistake in the arguments or a file that cannot be read or written.

use crate::project::{project_files, read_content};
use clap::Args;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `weft fmt`'s arguments.
#[derive(Debug, Args)]
pub struct Fmt {
    /// .dsr files, or directories whose .dsr files are formatted (hidden directories
    /// skipped), or `-` for standard input to standard output; default the current
    /// directory.
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Write nothing: list the files not in the canonical form and exit 1 if there are any.
    #[arg(long)]
    check: bool,
}

impl Fmt {
    /// Formats; 0 done, 1 a file not in the form (`--check`) or not readable as HJSON, 2
    /// usage or I/O.
    pub fn run(self) -> ExitCode {
        ExitCode::from(fmt(&self))
    }
}

/// What happened to one file.
enum Outcome {
    Unchanged,
    Changed,
    Invalid,
}

fn fmt(args: &Fmt) -> u8 {
    if args.paths.iter().any(|p| p == Path::new("-")) {
        if args.paths.len() > 1 {
            eprintln!("weft fmt: `-` (standard input) cannot be given with other paths");
            return 2;
        }
        return stdin(args.check);
    }
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for path in &paths {
        let read = if path.is_dir() {
            project_files(path).map(|found| {
                found
                    .into_iter()
                    .map(|(relative, text)| (path.join(relative), text))
                    .collect::<Vec<_>>()
            })
        } else {
            read_content(Some(path)).map(|(_, text)| vec![(path.clone(), text)])
        };
        match read {
            Ok(found) => files.extend(found),
            Err(e) => {
                eprintln!("weft fmt: {e}");
                return 2;
            }
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    files.dedup_by(|a, b| a.0 == b.0);
    let (mut changed, mut unchanged, mut invalid) = (0usize, 0usize, 0usize);
    for (path, text) in &files {
        match one(path, text, args.check) {
            Ok(Outcome::Unchanged) => unchanged += 1,
            Ok(Outcome::Changed) => changed += 1,
            Ok(Outcome::Invalid) => invalid += 1,
            Err(e) => {
                eprintln!("weft fmt: {e}");
                return 2;
            }
        }
    }
    if args.check {
        println!(
            "{} file(s) in the canonical form, {changed} not, {invalid} unreadable",
            unchanged
        );
    } else {
        println!("{changed} file(s) formatted, {unchanged} unchanged, {invalid} unreadable");
    }
    if invalid > 0 || (args.check && changed > 0) {
        1
    } else {
        0
    }
}

/// Formats `text`, read from `path`: writes it back unless `check`.
fn one(path: &Path, text: &str, check: bool) -> Result<Outcome, String> {
    let formatted = match weft_dsr::format::format(text) {
        Ok(f) => f,
        Err(e) => {
            let at = weft_dsr::LineIndex::new(text)
                .position(u32::try_from(e.offset).unwrap_or(u32::MAX));
            eprintln!("{}:{at}: {} ({})", path.display(), e.message, e.code);
            return Ok(Outcome::Invalid);
        }
    };
    if formatted == text {
        return Ok(Outcome::Unchanged);
    }
    if check {
        eprintln!("{}: not in the canonical form", path.display());
    } else {
        replace(path, &formatted)?;
    }
    Ok(Outcome::Changed)
}

/// Puts `text` in place of the file at `path` in one rename, keeping its permissions; a
/// symbolic link stays one, its target replaced.
fn replace(path: &Path, text: &str) -> Result<(), String> {
    let real =
        std::fs::canonicalize(path).map_err(|e| format!("cannot find {}: {e}", path.display()))?;
    let path = real.as_path();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".weft-fmt-")
        .tempfile_in(dir)
        .map_err(|e| format!("cannot write in {}: {e}", dir.display()))?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| format!("cannot write {}: {e}", tmp.path().display()))?;
    if let Ok(meta) = std::fs::metadata(path) {
        // Keep the file's mode; a failure leaves the temporary file's (owner read-write).
        let _ = std::fs::set_permissions(tmp.path(), meta.permissions());
    }
    tmp.persist(path)
        .map_err(|e| format!("cannot replace {}: {}", path.display(), e.error))?;
    Ok(())
}

/// Standard input to standard output (`--check`: nothing written, exit 1 when not in the form).
fn stdin(check: bool) -> u8 {
    let text = match read_content(None) {
        Ok((_, text)) => text,
        Err(e) => {
            eprintln!("weft fmt: {e}");
            return 2;
        }
    };
    match weft_dsr::format::format(&text) {
        Ok(formatted) if check => u8::from(formatted != text),
        Ok(formatted) => {
            let mut out = std::io::stdout().lock();
            match out
                .write_all(formatted.as_bytes())
                .and_then(|()| out.flush())
            {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("weft fmt: cannot write standard output: {e}");
                    2
                }
            }
        }
        Err(e) => {
            let at = weft_dsr::LineIndex::new(&text)
                .position(u32::try_from(e.offset).unwrap_or(u32::MAX));
            eprintln!("<stdin>:{at}: {} ({})", e.message, e.code);
            1
        }
    }
}
