//! The key file (`HOME/keyfile`) and `getkey`.
//!
//! One entry a line: `KEY|TYPE|URL|USER|PASSWORD|OPTIONS`; `#` starts a comment line; `\|`
//! and `\\` escape inside fields; OPTIONS is `k=v` pairs separated by `;`. KEY is a
//! connection number or a name. The file holds secrets, so it must have mode 0600: a file
//! that group or others can read is refused with a message saying how to fix it. The first
//! server start writes entry `0` (the repository) and `weft_server` (the service URL).
//! [`KeyStore`] re-reads the file when it changes on disk.
//!
//! An entry may take its password from a secret store instead: option `passwordCommand`
//! names a program that prints it, `entryCommand` one that prints the whole entry line
//! ([`Entry::resolved`], run each time a connection opens; `command`); what they print is
//! never logged, and what they print is cleaned out of every log and error
//! ([`printed_secrets`]).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// The key of the service's own entry.
pub const SERVER_KEY: &str = "weft_server";

/// A key file error, naming the file and line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be read or written.
    #[error("key file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Group or others may read the file.
    #[error(
        "key file {path} has mode {mode:04o}, so users other than its owner can read the secrets in it; \
         run `chmod 600 {path}` and try again"
    )]
    Permissions {
        /// The file.
        path: PathBuf,
        /// Its mode bits.
        mode: u32,
    },
    /// A line is not `KEY|TYPE|URL|USER|PASSWORD|OPTIONS`.
    #[error("key file {path}, line {line}: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// Line number, from 1.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// No entry has the key.
    #[error("key file {path} has no entry `{key}`")]
    Missing {
        /// The file.
        path: PathBuf,
        /// The key asked for.
        key: String,
    },
    /// The secret store's program of an entry failed (what it printed is not told).
    #[error("key file entry `{key}`: its {option} failed: {message}")]
    Command {
        /// The entry's key.
        key: String,
        /// `passwordCommand` or `entryCommand`.
        option: &'static str,
        /// Why.
        message: String,
    },
}

/// The option naming a program that prints an entry's password.
pub const PASSWORD_COMMAND: &str = "passwordCommand";
/// The option naming a program that prints an entry's whole line.
pub const ENTRY_COMMAND: &str = "entryCommand";
/// The option giving either program's time, in whole seconds (default 30).
pub const COMMAND_TIMEOUT: &str = "commandTimeoutSeconds";

/// The secrets programs printed this process (passwords, secret options), cleaned out of
/// logs and errors as the key file's own are; at most [`MAX_REMEMBERED`] of them and
/// [`MAX_REMEMBERED_BYTES`] in all.
static PRINTED_SECRETS: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// The most printed secrets kept (the oldest forgotten first).
const MAX_REMEMBERED: usize = 1024;
/// The most bytes of printed secrets kept.
const MAX_REMEMBERED_BYTES: usize = 1 << 20;

/// The secrets that secret stores' programs printed in this process (passwords, secret
/// options), for redaction beside [`KeyFile::secrets`].
pub fn printed_secrets() -> Vec<String> {
    PRINTED_SECRETS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// Adds `secret` to the printed secrets.
fn remember(secret: &str) {
    if secret.is_empty() {
        return;
    }
    let mut kept = PRINTED_SECRETS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !kept.iter().any(|s| s == secret) {
        kept.push(secret.to_owned());
        while kept.len() > MAX_REMEMBERED
            || kept.iter().map(String::len).sum::<usize>() > MAX_REMEMBERED_BYTES
        {
            kept.remove(0);
        }
    }
}

/// `text` with every secret a program printed in this process replaced by `***`: asked at
/// each use, so that a password printed while an action ran is cleaned out of its log too.
pub fn redact_printed(text: &str) -> String {
    let kept = PRINTED_SECRETS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut out = text.to_owned();
    for s in kept.iter().filter(|s| s.len() >= 3) {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), "***");
        }
    }
    out
}

/// A key file result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One entry of the key file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Connection number or name.
    pub key: String,
    /// Connection type: `sqlite`, `jdbc`, `http`.
    pub kind: String,
    /// URL (a file path for `sqlite`).
    pub url: String,
    /// User name.
    pub user: String,
    /// Password (never logged or answered).
    pub password: String,
    /// `k=v` options in file order.
    pub options: Vec<(String, String)>,
}

impl Entry {
    /// The value of option `name`.
    pub fn option(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The entry as a connection opens with it: with the password its `passwordCommand`
    /// prints, or as its `entryCommand` prints it (each field printed empty keeps the
    /// file's, the key stays the file's); else as written. Each time it is asked, so that a
    /// rotated secret is taken at the next connection.
    ///
    /// # Errors
    ///
    /// [`Error::Command`] when the program fails, naming the entry and why, never what it
    /// printed.
    pub fn resolved(&self) -> Result<std::borrow::Cow<'_, Entry>> {
        let (option, command) = match (self.option(PASSWORD_COMMAND), self.option(ENTRY_COMMAND)) {
            (Some(c), _) => (PASSWORD_COMMAND, c),
            (None, Some(c)) => (ENTRY_COMMAND, c),
            (None, None) => return Ok(std::borrow::Cow::Borrowed(self)),
        };
        let failed = |message: String| Error::Command {
            key: self.key.clone(),
            option,
            message,
        };
        let seconds = match self.option(COMMAND_TIMEOUT) {
            None => command::DEFAULT_TIMEOUT_SECONDS,
            Some(s) => s
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|s| (1..=3600).contains(s))
                .ok_or_else(|| {
                    failed(format!("`{COMMAND_TIMEOUT}={s}` is not 1 to 3600 seconds"))
                })?,
        };
        let printed = command::output(command, &self.key, std::time::Duration::from_secs(seconds))
            .map_err(failed)?;
        let mut entry = self.clone();
        // The options that named the program are used up: a connection type does not know
        // them.
        entry.options.retain(|(k, _)| {
            ![PASSWORD_COMMAND, ENTRY_COMMAND, COMMAND_TIMEOUT].contains(&k.as_str())
        });
        if option == PASSWORD_COMMAND {
            remember(&printed);
            entry.password = printed;
            return Ok(std::borrow::Cow::Owned(entry));
        }
        let line = printed.trim();
        let fields = split_fields(line)
            .ok()
            .filter(|f| f.len() == 6)
            .ok_or_else(|| {
                failed("it did not print one line KEY|TYPE|URL|USER|PASSWORD|OPTIONS".to_owned())
            })?;
        remember(&fields[4]);
        // The type and URL are the file's: they are read before a connection opens (the
        // dialect, a SQLite file's lock), so a program may repeat them, not change them.
        for (name, file, printed) in [
            ("TYPE", &entry.kind, &fields[1]),
            ("URL", &entry.url, &fields[2]),
        ] {
            if !printed.is_empty() && printed != file {
                return Err(failed(format!(
                    "it printed another {name} than the file's; an entryCommand gives the user, password and options"
                )));
            }
        }
        for (field, printed) in [
            (&mut entry.user, &fields[3]),
            (&mut entry.password, &fields[4]),
        ] {
            if !printed.is_empty() {
                field.clone_from(printed);
            }
        }
        for pair in fields[5].split(';').filter(|p| !p.trim().is_empty()) {
            let Some((k, v)) = pair.split_once('=') else {
                return Err(failed(
                    "an option it printed is not `name=value`".to_owned(),
                ));
            };
            let k = k.trim();
            if matches!(k, "token" | "password") {
                remember(v);
            }
            // A program cannot name another program.
            if k == PASSWORD_COMMAND || k == ENTRY_COMMAND {
                continue;
            }
            entry.options.retain(|(name, _)| name != k);
            entry.options.push((k.to_owned(), v.to_owned()));
        }
        Ok(std::borrow::Cow::Owned(entry))
    }

    /// The entry as a key file line.
    pub fn to_line(&self) -> String {
        let options: Vec<String> = self
            .options
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let mut line = String::new();
        for (i, field) in [
            &self.key,
            &self.kind,
            &self.url,
            &self.user,
            &self.password,
            &options.join(";"),
        ]
        .into_iter()
        .enumerate()
        {
            if i > 0 {
                line.push('|');
            }
            line.push_str(&escape(field));
        }
        line
    }
}

fn escape(field: &str) -> String {
    field.replace('\\', "\\\\").replace('|', "\\|")
}

/// Splits a line at unescaped `|` and removes the escapes.
fn split_fields(line: &str) -> Result<Vec<String>, String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | '|')) => fields.last_mut().map_or((), |f| f.push(e)),
                Some(other) => {
                    return Err(format!(
                        "`\\{other}` is not an escape; write `\\\\` for a backslash and `\\|` for a bar"
                    ));
                }
                None => return Err("the line ends with a lone backslash".to_owned()),
            },
            '|' => fields.push(String::new()),
            c => fields.last_mut().map_or((), |f| f.push(c)),
        }
    }
    Ok(fields)
}

/// A parsed key file.
#[derive(Debug, Clone)]
pub struct KeyFile {
    path: PathBuf,
    lines: Vec<Line>,
}

#[derive(Debug, Clone)]
enum Line {
    Text(String),
    Entry(Entry),
}

impl KeyFile {
    /// The key file of `home`.
    pub fn path_in(home: &Path) -> PathBuf {
        home.join("keyfile")
    }

    /// Reads and checks a key file.
    ///
    /// # Errors
    ///
    /// When the file cannot be read, is readable by group or others, or has a bad line.
    pub fn load(path: &Path) -> Result<Self> {
        check_mode(path)?;
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Reads key file text; `path` names the file in errors (nothing is read from it).
    ///
    /// # Errors
    ///
    /// [`Error::Syntax`] naming the first bad line.
    pub fn parse(path: &Path, text: &str) -> Result<Self> {
        let mut lines = Vec::new();
        // Each key's first line, to refuse a key given twice.
        let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for (i, raw) in text.lines().enumerate() {
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                lines.push(Line::Text(raw.to_owned()));
                continue;
            }
            let syntax = |message: String| Error::Syntax {
                path: path.to_owned(),
                line: i + 1,
                message,
            };
            let fields = split_fields(trimmed).map_err(syntax)?;
            if fields.len() != 6 {
                return Err(syntax(format!(
                    "an entry has 6 fields KEY|TYPE|URL|USER|PASSWORD|OPTIONS, this one has {}",
                    fields.len()
                )));
            }
            let mut options = Vec::new();
            for (n, pair) in fields[5]
                .split(';')
                .filter(|p| !p.trim().is_empty())
                .enumerate()
            {
                // The option's text is not repeated: it may be a secret.
                let Some((k, v)) = pair.split_once('=') else {
                    return Err(syntax(format!(
                        "option {} of the OPTIONS field is not `name=value`",
                        n + 1
                    )));
                };
                options.push((k.trim().to_owned(), v.to_owned()));
            }
            if fields[0].is_empty() {
                return Err(syntax("the KEY field is empty".to_owned()));
            }
            let has = |name: &str| options.iter().any(|(k, _)| k == name);
            if has(PASSWORD_COMMAND) && has(ENTRY_COMMAND) {
                return Err(syntax(format!(
                    "the entry has both `{PASSWORD_COMMAND}` and `{ENTRY_COMMAND}`; keep one"
                )));
            }
            if fields[0] == SERVER_KEY && (has(PASSWORD_COMMAND) || has(ENTRY_COMMAND)) {
                return Err(syntax(format!(
                    "entry `{SERVER_KEY}` (the service's address and token) cannot take its secret from a program"
                )));
            }
            if let Some(first) = seen.insert(fields[0].clone(), i + 1) {
                return Err(syntax(format!(
                    "entry `{}` is given twice, at lines {first} and {}; keep one of them",
                    fields[0],
                    i + 1
                )));
            }
            let mut f = fields.into_iter();
            let mut next = || f.next().unwrap_or_default();
            lines.push(Line::Entry(Entry {
                key: next(),
                kind: next(),
                url: next(),
                user: next(),
                password: next(),
                options,
            }));
        }
        Ok(KeyFile {
            path: path.to_owned(),
            lines,
        })
    }

    /// The entry with `key`; for a connection's number that no entry has, the entry whose
    /// key is the name that number was made from (a connection written without an id:
    /// `crate::names`), so that `dwh|postgresql|...` serves connection `dwh`.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries().find(|e| e.key == key).or_else(|| {
            let id: i64 = key.parse().ok()?;
            if !crate::names::is_made(id) {
                return None;
            }
            self.entries().find(|e| {
                e.key.parse::<i64>().is_err() && crate::names::id_of("connection", &e.key) == id
            })
        })
    }

    /// The entry with `key`, or an error naming the file.
    ///
    /// # Errors
    ///
    /// [`Error::Missing`].
    pub fn require(&self, key: &str) -> Result<&Entry> {
        self.get(key).ok_or_else(|| Error::Missing {
            path: self.path.clone(),
            key: key.to_owned(),
        })
    }

    /// All entries.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.lines.iter().filter_map(|l| match l {
            Line::Entry(e) => Some(e),
            Line::Text(_) => None,
        })
    }

    /// Every password and token in the file, for redaction (with [`printed_secrets`]).
    pub fn secrets(&self) -> Vec<String> {
        self.entries()
            .flat_map(|e| {
                std::iter::once(e.password.clone()).chain(
                    e.options
                        .iter()
                        .filter(|(k, _)| matches!(k.as_str(), "token" | "password"))
                        .map(|(_, v)| v.clone()),
                )
            })
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// `text` with every secret of the file, and every one a secret store's program printed,
    /// replaced by `***` (for a message that may quote a connection's error).
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in self.secrets().iter().filter(|s| s.len() >= 3) {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "***");
            }
        }
        redact_printed(&out)
    }

    /// Adds or replaces the entry with `entry.key`.
    pub fn set(&mut self, entry: Entry) {
        for l in &mut self.lines {
            if let Line::Entry(e) = l
                && e.key == entry.key
            {
                *e = entry;
                return;
            }
        }
        self.lines.push(Line::Entry(entry));
    }

    /// Writes the file atomically with mode 0600 (temporary file, then rename).
    ///
    /// # Errors
    ///
    /// When the file cannot be written.
    pub fn save(&self) -> Result<()> {
        let mut text = String::new();
        for l in &self.lines {
            match l {
                Line::Text(t) => text.push_str(t),
                Line::Entry(e) => text.push_str(&e.to_line()),
            }
            text.push('\n');
        }
        write_private(&self.path, &text)
    }

    /// Reads the key file of `home`, creating it with the two first entries when it does not
    /// exist, and makes entry `weft_server` name `server_url` (keeping its options).
    ///
    /// # Errors
    ///
    /// As [`KeyFile::load`] and [`KeyFile::save`].
    pub fn init(home: &Path, repository: &Path, server_url: &str) -> Result<Self> {
        let path = Self::path_in(home);
        let mut kf = if path.exists() {
            Self::load(&path)?
        } else {
            let mut text =
                String::from("# weft key file: KEY|TYPE|URL|USER|PASSWORD|OPTIONS (mode 0600)\n");
            let _ = writeln!(
                text,
                "0|sqlite|{}|||",
                escape(&repository.display().to_string())
            );
            let _ = writeln!(text, "{SERVER_KEY}|http|{}|||", escape(server_url));
            write_private(&path, &text)?;
            return Self::parse(&path, &text);
        };
        let changed = match kf.get(SERVER_KEY) {
            Some(e) if e.url == server_url => false,
            Some(e) => {
                let mut e = e.clone();
                e.url = server_url.to_owned();
                kf.set(e);
                true
            }
            None => {
                kf.set(Entry {
                    key: SERVER_KEY.to_owned(),
                    kind: "http".to_owned(),
                    url: server_url.to_owned(),
                    user: String::new(),
                    password: String::new(),
                    options: Vec::new(),
                });
                true
            }
        };
        if changed {
            kf.save()?;
        }
        Ok(kf)
    }
}

#[cfg(unix)]
fn check_mode(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(Error::Permissions {
            path: path.to_owned(),
            mode,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_mode(_path: &Path) -> Result<()> {
    Ok(())
}

fn write_private(path: &Path, text: &str) -> Result<()> {
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let tmp = path.with_extension("tmp");
    // A leftover temporary file may have any mode; start from a new one.
    let _ = std::fs::remove_file(&tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options.open(&tmp).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(io)?;
    }
    f.write_all(text.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// A key file that is re-read when it changes on disk.
#[derive(Debug)]
pub struct KeyStore {
    path: PathBuf,
    cached: Mutex<(Option<SystemTime>, Option<std::sync::Arc<KeyFile>>)>,
    /// The modification time of a changed file that could not be read (logged once).
    refused: Mutex<Option<SystemTime>>,
}

impl KeyStore {
    /// A store for the file at `path`, primed with `initial`.
    pub fn new(path: PathBuf, initial: KeyFile) -> Self {
        let mtime = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        KeyStore {
            path,
            cached: Mutex::new((mtime, Some(std::sync::Arc::new(initial)))),
            refused: Mutex::new(None),
        }
    }

    /// The current key file, re-read if its modification time changed (shared: every
    /// action reads it, and a copy of each entry per action is not needed).
    ///
    /// # Errors
    ///
    /// When the changed file cannot be read or is refused.
    pub fn current(&self) -> Result<std::sync::Arc<KeyFile>> {
        let mtime = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok();
        let mut cached = self
            .cached
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if cached.0 != mtime || cached.1.is_none() {
            match KeyFile::load(&self.path) {
                Ok(kf) => *cached = (mtime, Some(std::sync::Arc::new(kf))),
                // A changed file that is wrong: the last good one stays in force, and the
                // log says so once per change.
                Err(e) if cached.1.is_some() => {
                    let mut refused = self
                        .refused
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    if *refused != mtime {
                        *refused = mtime;
                        tracing::error!(message = "The changed key file cannot be used; the last good one stays in force until it is fixed.", error = %e);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        match &cached.1 {
            Some(kf) => Ok(std::sync::Arc::clone(kf)),
            None => KeyFile::load(&self.path).map(std::sync::Arc::new),
        }
    }
}

/// A fresh random token (32 hex digits) for non-loopback listening.
///
/// # Errors
///
/// When the system has no randomness to give.
pub fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

mod command;
#[cfg(test)]
mod tests;
