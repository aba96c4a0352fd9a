//! A project as it lies on disk: its `.dsr` documents ([`project_files`]), the files their
//! actions read ([`action_files`]), a single document read as a project of one when its
//! actions read files ([`single_as_project`]), a file or standard input as text
//! ([`read_content`]), and how a problem names its file ([`Name`]). What `weft deploy`,
//! `weft check`, `weft fmt` and `weft lsp` read.

use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The most files a project deploy sends.
const MAX_FILES: usize = 20_000;

/// The `.dsr` files below `dir` (hidden directories and files skipped), by their path
/// relative to it with `/` between parts, sorted.
pub fn project_files(dir: &Path) -> Result<Vec<(String, String)>, String> {
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
pub fn action_files(
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
pub type Named = Vec<(String, String)>;

/// A project deploy of the one document `content` of the file `file`, when its actions read
/// files (`file`, relative to it): its directory and the document and files to send.
pub fn single_as_project(
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

/// What was deployed, as problems name it.
pub enum Name {
    /// A file (or `<stdin>`).
    File(String),
    /// A project's directory.
    Project(PathBuf),
}

impl Name {
    /// The name a problem is printed with: a project's file as a path from the directory
    /// (so that editors open it), else the file's.
    pub fn of(&self, file: Option<&str>) -> String {
        match (self, file) {
            (Name::File(name), _) => name.clone(),
            (Name::Project(dir), Some(file)) => dir.join(file).display().to_string(),
            (Name::Project(dir), None) => dir.display().to_string(),
        }
    }
}

/// The text of `file` (standard input for `None` or `-`) with the name problems give it.
///
/// # Errors
///
/// A file that cannot be read or is not UTF-8, named.
pub fn read_content(file: Option<&Path>) -> Result<(String, String), String> {
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
