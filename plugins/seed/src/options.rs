//! A seed's attributes read and checked: its table, format, delimiter, declared column types
//! and where its data comes from. Problems name the attribute they are about.

use crate::read::Format;
use weft_sdk::Problem;

/// What a seed's attributes ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The table, `(schema, name)`: `table`, else the file's name without its extension.
    pub table: Option<(Option<String>, String)>,
    /// How the data is written.
    pub format: Format,
    /// Declared column types, `(column, type)`, as written.
    pub declared: Vec<(String, String)>,
    /// A file on the server's host to read when the action runs.
    pub path: Option<String>,
    /// The project file its text was read from, as written (`file`).
    pub file: Option<String>,
    /// The attributes that decide how the data is read, as one text for the digest.
    pub reading: String,
}

impl Options {
    /// Reads the attributes `text` answers by name.
    ///
    /// # Errors
    ///
    /// Every problem, each on its attribute.
    pub fn of<'a>(text: impl Fn(&str) -> Option<&'a str>) -> Result<Self, Vec<Problem>> {
        let mut problems = Vec::new();
        let file = text("file").map(str::to_owned);
        let path = text("path").map(str::to_owned);
        if let Some(p) = &path
            && let Err(why) = path_shape(p)
        {
            problems.push(Problem::error("Seed.path", why, None).on_attribute("path"));
        }
        let source = path.as_deref().or(file.as_deref());
        let stem = source.and_then(weft_sql_support::file_stem);
        let table = match text("table") {
            Some(t) => {
                let name = weft_sql_support::attribute_table(t);
                if name.is_none() {
                    problems.push(
                        Problem::error(
                            "Seed.table",
                            format!("`table: {t}` is not `name` or `schema.name`"),
                            None,
                        )
                        .on_attribute("table"),
                    );
                }
                name
            }
            None => stem.map(|s| (None, s)),
        };
        let extension = source
            .and_then(|s| s.rsplit_once('.'))
            .map(|(_, e)| e.to_ascii_lowercase());
        let delimiter = text("delimiter").unwrap_or(",");
        let delimiter = match delimiter.as_bytes() {
            [b] if b.is_ascii() && !matches!(b, b'"' | b'\n' | b'\r') => *b,
            _ => {
                problems.push(
                    Problem::error(
                        "Seed.delimiter",
                        format!(
                            "`delimiter: {delimiter:?}` is not one character (an ASCII one other than a quote or a line end)"
                        ),
                        None,
                    )
                    .on_attribute("delimiter"),
                );
                b','
            }
        };
        let format = match text("format").map(str::to_ascii_lowercase).as_deref() {
            Some("csv") => Format::Csv(delimiter),
            Some("jsonl" | "ndjson" | "json lines") => Format::JsonLines,
            Some(other) => {
                problems.push(
                    Problem::error(
                        "Seed.format",
                        format!("`format: {other}` is not `csv` or `jsonl`"),
                        None,
                    )
                    .on_attribute("format"),
                );
                Format::Csv(delimiter)
            }
            None if matches!(extension.as_deref(), Some("jsonl" | "ndjson")) => Format::JsonLines,
            None => Format::Csv(delimiter),
        };
        let declared = match text("columnTypes").map(column_types) {
            None => Vec::new(),
            Some(Ok(d)) => d,
            Some(Err(why)) => {
                problems.push(
                    Problem::error("Seed.columnTypes", why, None).on_attribute("columnTypes"),
                );
                Vec::new()
            }
        };
        if !problems.is_empty() {
            return Err(problems);
        }
        let reading = format!(
            "{format:?}\u{1f}{}",
            declared
                .iter()
                .map(|(c, t)| format!("{c} {t}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        Ok(Options {
            table,
            format,
            declared,
            path,
            file,
            reading,
        })
    }

    /// The type declared for `column`, if any (names compared without case).
    pub fn declared_type(&self, column: &str) -> Option<&str> {
        self.declared
            .iter()
            .find(|(c, _)| c.eq_ignore_ascii_case(column))
            .map(|(_, t)| t.as_str())
    }
}

/// The variable that lists the directories `path` may read from (`:` between them): none by
/// default, so that a deploy cannot read the server's files.
pub const SEED_DIRS: &str = "WEFT_SEED_DIRS";

/// The most bytes a file on the server's host may hold.
pub const MAX_PATH_BYTES: u64 = 4 << 30;

/// The directories `path` may read from.
fn seed_dirs() -> Vec<std::path::PathBuf> {
    std::env::var(SEED_DIRS)
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.trim().is_empty())
        .map(std::path::PathBuf::from)
        .collect()
}

/// Whether `path` is written as a path on the server's host may be: absolute, without `..`.
///
/// # Errors
///
/// Why not.
pub fn path_shape(path: &str) -> Result<(), String> {
    let p = std::path::Path::new(path);
    if !p.is_absolute() {
        return Err(format!(
            "`path: {path}` is not absolute: name the file on the server's host from `/` (a project's file is `file`, relative to the document)"
        ));
    }
    if p.components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(format!("`path: {path}` holds `..`"));
    }
    Ok(())
}

/// Whether `path` may be read, judged by its text alone (at deploy): of the right shape, and
/// below a directory of [`SEED_DIRS`].
///
/// # Errors
///
/// Why not.
pub fn allowed_lexically(path: &str) -> Result<(), String> {
    path_shape(path)?;
    let p = std::path::Path::new(path);
    let dirs = seed_dirs();
    if dirs.is_empty() {
        return Err(format!(
            "seeds may not read files on the server's host: {SEED_DIRS} lists none (the directories they may read, `:` between them, in the server's environment)"
        ));
    }
    if dirs.iter().any(|d| p.starts_with(d)) {
        Ok(())
    } else {
        Err(format!(
            "`path: {path}` lies in none of the directories seeds may read ({SEED_DIRS}: {})",
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// Reads `path` on this host: a regular file of at most [`MAX_PATH_BYTES`] whose real place
/// (links resolved) lies below a directory of [`SEED_DIRS`].
///
/// # Errors
///
/// Why it may not or cannot be read.
pub fn read_allowed(path: &str) -> Result<String, String> {
    allowed_lexically(path)?;
    let real = std::fs::canonicalize(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let inside = seed_dirs()
        .iter()
        .filter_map(|d| std::fs::canonicalize(d).ok())
        .any(|d| real.starts_with(&d));
    if !inside {
        return Err(format!(
            "{path} is {}, outside the directories seeds may read ({SEED_DIRS})",
            real.display()
        ));
    }
    let meta = std::fs::metadata(&real).map_err(|e| format!("cannot read {path}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{path} is not a regular file"));
    }
    if meta.len() > MAX_PATH_BYTES {
        return Err(format!(
            "{path} holds {} bytes, more than the {MAX_PATH_BYTES} a seed reads",
            meta.len()
        ));
    }
    std::fs::read_to_string(&real).map_err(|e| format!("cannot read {path}: {e}"))
}

/// `columnTypes`: `name type` entries separated by commas outside parentheses.
fn column_types(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut entries = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                entries.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    entries.push(&text[start..]);
    let mut out: Vec<(String, String)> = Vec::new();
    for e in entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
        let (name, ty) = if let Some(rest) = e.strip_prefix('"') {
            let (n, t) = rest
                .split_once('"')
                .ok_or_else(|| format!("`columnTypes`: `{e}` opens a quote it does not close"))?;
            (n.to_owned(), t.trim())
        } else {
            let (n, t) = e.split_once(char::is_whitespace).unwrap_or((e, ""));
            (n.to_owned(), t.trim())
        };
        if ty.is_empty()
            || !ty
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || " _(),".contains(c))
        {
            return Err(format!(
                "`columnTypes`: `{e}` is not `column type` (such as `amount numeric(10,2)`)"
            ));
        }
        if out.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name)) {
            return Err(format!("`columnTypes` declares `{name}` twice"));
        }
        out.push((name, ty.to_owned()));
    }
    if depth != 0 {
        return Err("`columnTypes`: its parentheses do not match".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(pairs: &[(&str, &str)]) -> Result<Options, Vec<Problem>> {
        let owned: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Options::of(|n| owned.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str()))
    }

    #[test]
    fn the_table_and_format_come_from_the_file_by_default() {
        let o = of(&[("file", "seeds/raw_orders.csv")]).expect("ok");
        assert_eq!(o.table, Some((None, "raw_orders".into())));
        assert_eq!(o.format, Format::Csv(b','));
        let o = of(&[("path", "/data/events.jsonl"), ("table", "raw.events")]).expect("ok");
        assert_eq!(o.table, Some((Some("raw".into()), "events".into())));
        assert_eq!(o.format, Format::JsonLines);
        let o = of(&[("file", "a.txt"), ("delimiter", ";"), ("format", "CSV")]).expect("ok");
        assert_eq!(o.format, Format::Csv(b';'));
    }

    #[test]
    fn column_types_are_read_with_parentheses() {
        let o = of(&[
            ("file", "x.csv"),
            (
                "columnTypes",
                "amount numeric(10, 2), \"Order Date\" date ,note text",
            ),
        ])
        .expect("ok");
        assert_eq!(
            o.declared,
            [
                ("amount".to_owned(), "numeric(10, 2)".to_owned()),
                ("Order Date".to_owned(), "date".to_owned()),
                ("note".to_owned(), "text".to_owned())
            ]
        );
        assert_eq!(o.declared_type("AMOUNT"), Some("numeric(10, 2)"));
    }

    #[test]
    fn wrong_attributes_are_named() {
        let codes = |r: Result<Options, Vec<Problem>>| -> Vec<(String, Option<String>)> {
            r.expect_err("refused")
                .iter()
                .map(|p| (p.code().to_owned(), p.attribute().map(str::to_owned)))
                .collect()
        };
        assert_eq!(
            codes(of(&[("path", "data.csv")])),
            [("Seed.path".to_owned(), Some("path".to_owned()))]
        );
        assert_eq!(
            codes(of(&[("file", "x.csv"), ("columnTypes", "a int) --(")]))[0].0,
            "Seed.columnTypes"
        );
        assert_eq!(
            codes(of(&[("file", "x.csv"), ("delimiter", ";;")]))[0].0,
            "Seed.delimiter"
        );
        assert_eq!(
            codes(of(&[("file", "x.csv"), ("format", "xml")]))[0].0,
            "Seed.format"
        );
        assert_eq!(
            codes(of(&[("file", "x.csv"), ("columnTypes", "amount")]))[0].0,
            "Seed.columnTypes"
        );
        assert_eq!(
            codes(of(&[("file", "x.csv"), ("columnTypes", "a int, A text")]))[0].0,
            "Seed.columnTypes"
        );
        assert_eq!(codes(of(&[("table", "a.b.c")]))[0].0, "Seed.table");
    }
}
