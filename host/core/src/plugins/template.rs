//! `weft plugins new NAME`: writes a plugin crate that builds and whose tests pass, as a start
//! for an author (a module that runs its action text on its target's connection, with unit
//! tests on the sdk's fakes). The files are the templates beside this module.

use std::path::{Path, PathBuf};

const CARGO_TOML: &str = include_str!("template/Cargo.toml.in");
const LIB_RS: &str = include_str!("template/lib.rs.in");
const GITIGNORE: &str = include_str!("template/gitignore.in");

/// Why a crate was not written.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// The name is not one a crate and a module can take.
    #[error(
        "`{0}` is not a plugin name: use lower-case letters, digits and `_`, starting with a letter (e.g. `dedupe`)"
    )]
    Name(String),
    /// The folder exists and holds something.
    #[error("{0} exists and is not empty; choose another folder with --dir")]
    Exists(PathBuf),
    /// The sdk's folder has no sdk.
    #[error(
        "{0} holds no weft sdk (no Cargo.toml naming weft_sdk); give the sdk's folder with --sdk"
    )]
    NoSdk(PathBuf),
    /// Writing failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The module name of plugin `name`: `row_count` is `RowCount`.
pub fn module_name(name: &str) -> String {
    name.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// Whether `name` can name a plugin crate (`weft_plugin_NAME`) and its module.
fn valid(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// A TOML basic string's content for `path`.
fn toml_path(path: &Path) -> String {
    path.to_string_lossy()
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
}

/// Writes plugin crate `name` into `dir` (created; it must not exist or be empty), depending
/// on the sdk in `sdk` by path. Returns the files written.
///
/// # Errors
///
/// [`TemplateError`]: a bad name, a folder in use, no sdk at `sdk`, or a write that failed
/// (what was written before stays).
pub fn write_crate(dir: &Path, name: &str, sdk: &Path) -> Result<Vec<PathBuf>, TemplateError> {
    if !valid(name) {
        return Err(TemplateError::Name(name.to_owned()));
    }
    let manifest = std::fs::read_to_string(sdk.join("Cargo.toml")).unwrap_or_default();
    if !manifest.contains("name = \"weft_sdk\"") {
        return Err(TemplateError::NoSdk(sdk.to_owned()));
    }
    let sdk = std::fs::canonicalize(sdk).map_err(|source| TemplateError::Write {
        path: sdk.to_owned(),
        source,
    })?;
    if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(TemplateError::Exists(dir.to_owned()));
    }
    let module = module_name(name);
    let fill = |t: &str| {
        t.replace("{name}", name)
            .replace("{Module}", &module)
            .replace("{sdk}", &toml_path(&sdk))
    };
    let files = [
        (dir.join("Cargo.toml"), fill(CARGO_TOML)),
        (dir.join("src/lib.rs"), fill(LIB_RS)),
        (dir.join(".gitignore"), GITIGNORE.to_owned()),
    ];
    let mut written = Vec::new();
    for (path, text) in files {
        let wrote = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, text));
        wrote.map_err(|source| TemplateError::Write {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sdk() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sdk")
    }

    #[test]
    fn names_become_crates_and_modules_or_are_refused() {
        assert_eq!(module_name("dedupe"), "Dedupe");
        assert_eq!(module_name("row_count2"), "RowCount2");
        for bad in ["", "Dedupe", "2fast", "a-b", "x y", "über"] {
            let dir = tempfile::tempdir().expect("dir");
            assert!(
                matches!(
                    write_crate(&dir.path().join("p"), bad, &sdk()),
                    Err(TemplateError::Name(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_crate_is_written_once_with_every_placeholder_filled() {
        let dir = tempfile::tempdir().expect("dir");
        let target = dir.path().join("row_count");
        let files = write_crate(&target, "row_count", &sdk()).expect("written");
        assert_eq!(files.len(), 3);
        let manifest = std::fs::read_to_string(target.join("Cargo.toml")).expect("manifest");
        assert!(
            manifest.contains("name = \"weft_plugin_row_count\""),
            "{manifest}"
        );
        let lib = std::fs::read_to_string(target.join("src/lib.rs")).expect("lib");
        assert!(lib.contains("pub struct RowCount;"), "{lib}");
        for text in [&manifest, &lib] {
            assert!(
                !text.contains("{Module}") && !text.contains("{name}") && !text.contains("{sdk}"),
                "{text}"
            );
        }
        assert!(matches!(
            write_crate(&target, "row_count", &sdk()),
            Err(TemplateError::Exists(_))
        ));
        assert!(matches!(
            write_crate(&dir.path().join("other"), "other", dir.path()),
            Err(TemplateError::NoSdk(_))
        ));
    }
}
