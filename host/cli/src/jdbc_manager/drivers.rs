//! jdbcManager's engine: the driver list (`jdbcList`), the installed drivers in
//! `INSTALL/drivers`, and installing or deleting one.
//!
//! `jdbcList` holds `name:description:url` a line, split at the first two colons (URLs hold
//! colons); `#` comments and blank lines are skipped; a bad line is reported with its line
//! number and the rest still works. URLs are `http:`, `https:` or `file:`, optionally ending
//! in `#sha256=HEX`, which is checked. An install is atomic: the jar is written to a temporary
//! file in the drivers folder and renamed into place only when complete and checked, so a
//! failed or interrupted download leaves nothing behind: the partial file is removed when
//! the install fails, when SIGINT or SIGTERM stop it, and else (a `kill -9`, a power cut) by
//! the next start ([`clean_partials`]). Names that would escape `drivers/` are refused.
//!
//! Bounds: a driver is at most [`MAX_JAR_BYTES`]; a `file:` URL must name a regular file
//! (not `/dev/zero`, a pipe or a folder); a download must connect within 15 s, every read
//! must return within 30 s, and the whole download must end within 30 minutes. What arrives
//! is installed only when it is a jar: a zip archive naming at least one `.class` file or
//! `META-INF/services/java.sql.Driver` (a key file, a web page or a truncated file is not).

use crate::client::error_chain;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The largest driver jar installed: 256 MiB.
pub const MAX_JAR_BYTES: u64 = 256 * 1024 * 1024;

/// The bounds of one install.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The largest file installed.
    pub max_bytes: u64,
    /// Time for connecting.
    pub connect: std::time::Duration,
    /// Time for the answer's head and for each read of its body.
    pub read: std::time::Duration,
    /// Time for the whole download.
    pub total: std::time::Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: MAX_JAR_BYTES,
            connect: std::time::Duration::from_secs(15),
            read: std::time::Duration::from_secs(30),
            total: std::time::Duration::from_secs(30 * 60),
        }
    }
}

/// One driver of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Name: the installed file is `NAME.jar`.
    pub name: String,
    /// What it is.
    pub description: String,
    /// Where it comes from, without the checksum suffix.
    pub url: String,
    /// The expected SHA-256, lower-case hex, when the list gives one.
    pub sha256: Option<String>,
    /// Its line in `jdbcList`.
    pub line: usize,
}

/// A line of `jdbcList` that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListProblem {
    /// Line number, from 1.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Whether `name` is a safe driver name: letters, digits, `.`, `_`, `-`; not `.` or `..`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Reads `jdbcList` text: the entries, and a problem for every bad line.
pub fn parse_list(text: &str) -> (Vec<Entry>, Vec<ListProblem>) {
    let mut entries: Vec<Entry> = Vec::new();
    let mut names = std::collections::HashSet::new();
    let mut problems = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let mut parts = l.splitn(3, ':');
        let (Some(name), Some(description), Some(url)) = (parts.next(), parts.next(), parts.next())
        else {
            problems.push(ListProblem {
                line,
                message: "a line is `name:description:url`".to_owned(),
            });
            continue;
        };
        let name = name.trim();
        if !valid_name(name) {
            problems.push(ListProblem {
                line,
                message: format!("`{name}` is not a driver name: use letters, digits, `.`, `_` and `-` (the jar is installed as NAME.jar in drivers/)"),
            });
            continue;
        }
        let (url, sha256) = match url.trim().rsplit_once("#sha256=") {
            Some((u, h)) => (u.trim().to_owned(), Some(h.trim().to_ascii_lowercase())),
            None => (url.trim().to_owned(), None),
        };
        if let Some(h) = &sha256
            && (h.len() != 64 || !h.chars().all(|c| c.is_ascii_hexdigit()))
        {
            problems.push(ListProblem {
                line,
                message: "`#sha256=` must be followed by 64 hexadecimal digits".to_owned(),
            });
            continue;
        }
        let scheme_ok = ["http://", "https://", "file:"]
            .iter()
            .any(|s| url.to_ascii_lowercase().starts_with(s));
        if !scheme_ok {
            problems.push(ListProblem {
                line,
                message: format!("`{url}` is not an http:, https: or file: URL"),
            });
            continue;
        }
        if !names.insert(name.to_owned()) {
            problems.push(ListProblem {
                line,
                message: format!("driver `{name}` is listed twice; the first one counts"),
            });
            continue;
        }
        entries.push(Entry {
            name: name.to_owned(),
            description: description.trim().to_owned(),
            url,
            sha256,
            line,
        });
    }
    (entries, problems)
}

/// An installed driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// Name (the file name without `.jar`).
    pub name: String,
    /// The jar.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
}

/// The drivers installed in `drivers`, by name.
pub fn installed(drivers: &Path) -> Vec<Installed> {
    let Ok(dir) = std::fs::read_dir(drivers) else {
        return Vec::new();
    };
    let mut v: Vec<Installed> = dir
        .filter_map(Result::ok)
        .filter_map(|e| {
            let path = e.path();
            let name = path.file_name()?.to_str()?.strip_suffix(".jar")?.to_owned();
            if name.starts_with('.') {
                return None;
            }
            let size = e.metadata().ok()?.len();
            Some(Installed { name, path, size })
        })
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

/// Why an install failed. Each cause has its own message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    /// The name would escape `drivers/`.
    #[error("`{0}` is not a driver name: use letters, digits, `.`, `_` and `-`")]
    BadName(String),
    /// Another jdbcManager installs the same driver right now.
    #[error("another jdbcManager is installing `{0}` right now; try again when it is done")]
    Busy(String),
    /// The host name could not be resolved.
    #[error("cannot resolve the host of {url}: {detail}")]
    Dns {
        /// The URL.
        url: String,
        /// What the resolver said.
        detail: String,
    },
    /// The server could not be reached.
    #[error("cannot connect to {url}: {detail}")]
    Connect {
        /// The URL.
        url: String,
        /// Why.
        detail: String,
    },
    /// TLS failed (certificate, handshake).
    #[error("the TLS connection to {url} failed: {detail}")]
    Tls {
        /// The URL.
        url: String,
        /// Why.
        detail: String,
    },
    /// The server answered with an error status.
    #[error("{url} answered HTTP {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
    },
    /// The download was cut short or failed while reading.
    #[error("the download of {url} failed: {detail}")]
    Transfer {
        /// The URL.
        url: String,
        /// Why.
        detail: String,
    },
    /// The file's checksum is not the one the list gives.
    #[error(
        "the checksum of {url} is {actual}, but jdbcList expects {expected}; nothing was installed"
    )]
    Checksum {
        /// The URL.
        url: String,
        /// From the list.
        expected: String,
        /// Of what arrived.
        actual: String,
    },
    /// A `file:` URL names a file that cannot be read.
    #[error("cannot read {path}: {source}")]
    Source {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A `file:` URL names something that is not a regular file.
    #[error("{path} is not a regular file (a device, a pipe or a folder cannot be installed)")]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// More than the limit ([`MAX_JAR_BYTES`]) arrived or were announced.
    #[error(
        "{url} is larger than {limit} bytes; a JDBC driver is not that large, nothing was installed"
    )]
    TooLarge {
        /// The URL.
        url: String,
        /// The limit.
        limit: u64,
    },
    /// What arrived is not a jar.
    #[error("{url} is not a JDBC driver jar ({detail}); nothing was installed")]
    NotAJar {
        /// The URL.
        url: String,
        /// Why.
        detail: String,
    },
    /// The drivers folder cannot be written.
    #[error("cannot write into {path}: {source}")]
    Write {
        /// The folder or file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// A temporary file that is removed unless it was renamed into place. While it exists it
/// is the one SIGINT or SIGTERM remove ([`on_signals_remove_partials`]).
struct Partial {
    path: PathBuf,
    keep: bool,
}

/// The partial files of installs in progress in this process.
static PARTIALS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

fn partials() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    PARTIALS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Partial {
    fn new(path: PathBuf) -> Self {
        partials().push(path.clone());
        Partial { path, keep: false }
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
        partials().retain(|p| *p != self.path);
    }
}

/// Makes SIGINT and SIGTERM remove the partial files of installs in progress and end the
/// process (exit 130 or 143), as a shell would. Call once, before installing.
///
/// # Errors
///
/// When the signal handlers cannot be installed.
pub fn on_signals_remove_partials() -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new()
        .name("jdbc-signals".to_owned())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                for p in partials().iter() {
                    let _ = std::fs::remove_file(p);
                }
                eprintln!("jdbcManager: interrupted; the partial download was removed");
                std::process::exit(128 + signal);
            }
        })?;
    Ok(())
}

/// Removes partial files (`.NAME.jar.part`) that no install holds any more: what a killed
/// install left. An install in progress holds a lock on its partial file, so a second
/// jdbcManager running at the same time keeps it. Returns what was removed.
pub fn clean_partials(drivers: &Path) -> Vec<PathBuf> {
    let Ok(dir) = std::fs::read_dir(drivers) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in dir.filter_map(Result::ok) {
        let path = e.path();
        let is_partial = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.') && n.ends_with(".jar.part"));
        if !is_partial {
            continue;
        }
        let abandoned = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .is_ok_and(|f| f.try_lock().is_ok());
        if abandoned && std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// The local path of a `file:` URL: `file:/p`, `file:///p` and `file://localhost/p` all
/// name `/p`; another host is refused (a share is mounted and named by its local path).
fn file_path(url: &str) -> Result<PathBuf, InstallError> {
    let rest = &url["file:".len()..];
    let path = match rest.strip_prefix("//") {
        None => rest,
        Some(after) => {
            let (host, path) = after.split_at(after.find('/').unwrap_or(after.len()));
            if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
                return Err(InstallError::Source {
                    path: PathBuf::from(url),
                    source: std::io::Error::other(format!(
                        "a file: URL names a file on this machine, not on host `{host}`; mount the share and give its local path (file:/mnt/share/driver.jar)"
                    )),
                });
            }
            path
        }
    };
    Ok(PathBuf::from(path))
}

/// Checks that the file at `path` is a jar: a zip archive naming a `.class` file or the
/// JDBC service file.
fn check_jar(path: &Path, url: &str) -> Result<(), InstallError> {
    let not = |detail: String| InstallError::NotAJar {
        url: url.to_owned(),
        detail,
    };
    let file = std::fs::File::open(path).map_err(|source| InstallError::Write {
        path: path.to_owned(),
        source,
    })?;
    let archive = zip::ZipArchive::new(file).map_err(|e| not(format!("not a zip archive: {e}")))?;
    let mut names = archive.file_names();
    if names
        .any(|n| n.is_ok_and(|n| n.ends_with(".class") || n == "META-INF/services/java.sql.Driver"))
    {
        Ok(())
    } else {
        Err(not(
            "the archive holds no .class file and no META-INF/services/java.sql.Driver".to_owned(),
        ))
    }
}

fn classify(url: &str, e: &reqwest::Error) -> InstallError {
    let detail = error_chain(e);
    let lower = detail.to_ascii_lowercase();
    if lower.contains("dns error")
        || lower.contains("failed to lookup address")
        || lower.contains("name or service not known")
    {
        InstallError::Dns {
            url: url.to_owned(),
            detail,
        }
    } else if lower.contains("certificate") || lower.contains("tls") || lower.contains("handshake")
    {
        InstallError::Tls {
            url: url.to_owned(),
            detail,
        }
    } else if e.is_connect() || e.is_timeout() {
        InstallError::Connect {
            url: url.to_owned(),
            detail,
        }
    } else if let Some(status) = e.status() {
        InstallError::Status {
            url: url.to_owned(),
            status: status.as_u16(),
        }
    } else {
        InstallError::Transfer {
            url: url.to_owned(),
            detail,
        }
    }
}

/// Installs `entry` into `drivers` as `NAME.jar`; `progress(done, total)` is called as bytes
/// arrive. Returns the installed jar.
///
/// # Errors
///
/// An [`InstallError`] saying which step failed; nothing is left in `drivers` then.
pub fn install(
    entry: &Entry,
    drivers: &Path,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<PathBuf, InstallError> {
    install_within(entry, drivers, Limits::default(), progress)
}

/// [`install`] within `limits`.
///
/// # Errors
///
/// As [`install`].
pub fn install_within(
    entry: &Entry,
    drivers: &Path,
    limits: Limits,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<PathBuf, InstallError> {
    if !valid_name(&entry.name) {
        return Err(InstallError::BadName(entry.name.clone()));
    }
    std::fs::create_dir_all(drivers).map_err(|source| InstallError::Write {
        path: drivers.to_owned(),
        source,
    })?;
    let target = drivers.join(format!("{}.jar", entry.name));
    let mut partial = Partial::new(drivers.join(format!(".{}.jar.part", entry.name)));
    // Opened without truncating and locked before anything is written: a second install
    // of the same driver meanwhile is refused instead of overwriting this one's file, and
    // `clean_partials` of another process leaves it alone.
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&partial.path)
        .map_err(|source| InstallError::Write {
            path: partial.path.clone(),
            source,
        })?;
    if out.try_lock().is_err() {
        // Not ours to remove.
        partial.keep = true;
        return Err(InstallError::Busy(entry.name.clone()));
    }
    out.set_len(0).map_err(|source| InstallError::Write {
        path: partial.path.clone(),
        source,
    })?;
    let started = std::time::Instant::now();
    let mut hasher = Sha256::new();
    let mut copy = |reader: &mut dyn Read,
                    total: Option<u64>,
                    progress: &mut dyn FnMut(u64, Option<u64>)|
     -> Result<(), InstallError> {
        let mut buf = vec![0u8; 64 * 1024];
        let mut done = 0u64;
        let too_large = || InstallError::TooLarge {
            url: entry.url.clone(),
            limit: limits.max_bytes,
        };
        if total.is_some_and(|t| t > limits.max_bytes) {
            return Err(too_large());
        }
        progress(0, total);
        loop {
            if started.elapsed() > limits.total {
                return Err(InstallError::Transfer {
                    url: entry.url.clone(),
                    detail: format!("it did not end within {} s", limits.total.as_secs()),
                });
            }
            let n = reader.read(&mut buf).map_err(|e| InstallError::Transfer {
                url: entry.url.clone(),
                detail: e.to_string(),
            })?;
            if n == 0 {
                break;
            }
            if done + n as u64 > limits.max_bytes {
                return Err(too_large());
            }
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n])
                .map_err(|source| InstallError::Write {
                    path: partial.path.clone(),
                    source,
                })?;
            done += n as u64;
            progress(done, total);
        }
        if let Some(t) = total.filter(|t| *t != done) {
            return Err(InstallError::Transfer {
                url: entry.url.clone(),
                detail: format!("{done} of {t} bytes arrived"),
            });
        }
        Ok(())
    };
    if entry.url.to_ascii_lowercase().starts_with("file:") {
        let path = file_path(&entry.url)?;
        // Asked before opening: opening a pipe would wait for a writer.
        let meta = std::fs::metadata(&path).map_err(|source| InstallError::Source {
            path: path.clone(),
            source,
        })?;
        if !meta.is_file() {
            return Err(InstallError::NotAFile { path });
        }
        let mut f = std::fs::File::open(&path).map_err(|source| InstallError::Source {
            path: path.clone(),
            source,
        })?;
        let meta = f.metadata().map_err(|source| InstallError::Source {
            path: path.clone(),
            source,
        })?;
        if !meta.is_file() {
            return Err(InstallError::NotAFile { path });
        }
        let total = Some(meta.len());
        copy(&mut f, total, progress)?;
    } else {
        weft::init_tls();
        let client = reqwest::blocking::Client::builder()
            .connect_timeout(limits.connect)
            // In the blocking client this bounds the wait for the answer's head and each
            // read of its body, not the whole download.
            .timeout(limits.read)
            .build()
            .map_err(|e| classify(&entry.url, &e))?;
        let mut resp = client
            .get(&entry.url)
            .send()
            .map_err(|e| classify(&entry.url, &e))?;
        if !resp.status().is_success() {
            return Err(InstallError::Status {
                url: entry.url.clone(),
                status: resp.status().as_u16(),
            });
        }
        let total = resp.content_length();
        copy(&mut resp, total, progress)?;
    }
    out.sync_all().map_err(|source| InstallError::Write {
        path: partial.path.clone(),
        source,
    })?;
    let actual: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if let Some(expected) = &entry.sha256
        && *expected != actual
    {
        return Err(InstallError::Checksum {
            url: entry.url.clone(),
            expected: expected.clone(),
            actual,
        });
    }
    check_jar(&partial.path, &entry.url)?;
    drop(out);
    std::fs::rename(&partial.path, &target).map_err(|source| InstallError::Write {
        path: target.clone(),
        source,
    })?;
    partial.keep = true;
    Ok(target)
}

/// Deletes installed driver `name`.
///
/// # Errors
///
/// When the name is not valid, not installed, or the file cannot be removed.
pub fn delete(name: &str, drivers: &Path) -> Result<PathBuf, String> {
    if !valid_name(name) {
        return Err(format!("`{name}` is not a driver name"));
    }
    let path = drivers.join(format!("{name}.jar"));
    if !path.is_file() {
        let names: Vec<String> = installed(drivers).into_iter().map(|i| i.name).collect();
        return Err(format!(
            "driver `{name}` is not installed (installed: {})",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ));
    }
    std::fs::remove_file(&path).map_err(|e| format!("cannot delete {}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests;
