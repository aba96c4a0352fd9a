//! Settings and the two places of DESIGN.md section 1.
//!
//! HOME (data) is `--home DIR`, else `$WEFT_HOME`, else the default HOME of an installed
//! tree, else `weft-home` in the current directory ([`home_and_source`], the one rule;
//! docs/install.md explains it to users). INSTALL (code) is [`install_dir`].
//! Settings come from `HOME/weft.toml`, overridden by `WEFT_*` environment variables,
//! overridden by command-line flags. Unknown keys in `weft.toml` are errors, so a typo does
//! not silently leave a default in force.

use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The default of the setting `max_waiting_instances`: instances stored and queued for a
/// coordinator before `RunElements` answers 429.
pub const DEFAULT_MAX_WAITING: usize = 1000;

/// The kind of installation; `intoFolder` and other development helpers need `development`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Environment {
    /// A developer's repository (the default).
    #[default]
    Development,
    /// A test installation.
    Test,
    /// Production.
    Production,
}

impl fmt::Display for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Environment::Development => "development",
            Environment::Test => "test",
            Environment::Production => "production",
        })
    }
}

impl FromStr for Environment {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "development" => Ok(Environment::Development),
            "test" => Ok(Environment::Test),
            "production" => Ok(Environment::Production),
            other => Err(format!(
                "`{other}` is not an environment; use development, test or production"
            )),
        }
    }
}

/// The default request body limit: 8 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// The settings in force.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// development, test or production.
    pub environment: Environment,
    /// The service time zone (IANA name); used by the scheduler of a later issue.
    pub timezone: Option<String>,
    /// How many actions run at once; default the number of cores.
    pub max_parallel_actions: Option<usize>,
    /// Where the JVM is, for the JDBC bridge of a later issue.
    pub java_home: Option<PathBuf>,
    /// The largest request body the endpoint accepts, in bytes.
    pub max_body_bytes: usize,
    /// Host names beyond `localhost` and the loopback addresses under which clients reach
    /// this server (a proxy's name); requests naming any other host are refused.
    pub allowed_hosts: Vec<String>,
    /// Connections open at once; one more gets a 503.
    pub max_connections: usize,
    /// Seconds a client has to send a request's head; an idle keep-alive connection is
    /// closed after the same time.
    pub header_timeout_seconds: u64,
    /// Seconds a client has to send a request's body once its head arrived.
    pub body_timeout_seconds: u64,
    /// Batch instances that may wait for a free slot; one more `RunElements` is answered
    /// 429.
    pub max_waiting_instances: usize,
    /// Seconds a host tries again to record an action's end in a failing repository (a
    /// full disk) before each failure is logged as an error; it goes on trying until the
    /// end is recorded.
    pub repository_retry_seconds: u64,
    /// With the repository on PostgreSQL: seconds a host may be silent before the other
    /// hosts take over its running actions (it beats every quarter of it).
    pub host_lease_seconds: u64,
    /// With the repository on PostgreSQL: milliseconds between a host's looks at the
    /// repository for ready actions and halts asked on other hosts.
    pub host_poll_ms: u64,
    /// Whether Shell actions (scripts run on this machine as the service user) may be
    /// deployed and run; off unless set.
    pub shell_modules: bool,
    /// Whether requests over loopback need the bearer token too (a machine that other
    /// people or programs share); off by default: beyond loopback it is always needed.
    pub require_token_on_loopback: bool,
    /// Days an ended batch instance (with its actions) is kept; 0 keeps them for ever.
    pub keep_runs_days: u64,
    /// Days the log lines of an ended instance's actions are kept (the instance stays);
    /// 0 keeps them as long as the instance.
    pub keep_logs_days: u64,
    /// Days the deploy history is kept (each object's newest line always stays: an export
    /// and a comparison need it); 0 keeps it for ever.
    pub keep_deploys_days: u64,
    /// Seconds between two rounds of pruning what the `keep_*` settings let go (each round
    /// removes at most a bounded number of rows of each kind).
    pub prune_interval_seconds: u64,
    /// Minutes a notification is tried again (with back-off) after its event before it is
    /// given up, its last error kept.
    pub notify_give_up_minutes: u64,
    /// Seconds before a notification whose send failed is tried the first time again; each
    /// further try waits twice as long, at most 15 minutes (or this, when longer).
    pub notify_retry_seconds: u64,
    /// The certificate chain (PEM) the server answers TLS with; with `tls_key_file` the
    /// server speaks HTTPS only. A relative path is HOME's. Read again when it changes.
    pub tls_cert_file: Option<PathBuf>,
    /// The private key (PEM) of `tls_cert_file`.
    pub tls_key_file: Option<PathBuf>,
    /// The web page's address as the people notified reach it (`https://weft.example.com/`),
    /// for the link to a run; default: this server's own address.
    pub page_url: Option<String>,
    /// Where OpenLineage run events of every action are sent (an HTTP endpoint such as
    /// Marquez's `http://marquez:5000/api/v1/lineage`); none by default.
    pub openlineage_url: Option<String>,
    /// The namespace of the jobs in those events; default `weft`.
    pub openlineage_namespace: Option<String>,
}

/// The default of `max_connections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// The default of `header_timeout_seconds`.
pub const DEFAULT_HEADER_TIMEOUT_SECONDS: u64 = 20;
/// The default of `body_timeout_seconds`.
pub const DEFAULT_BODY_TIMEOUT_SECONDS: u64 = 30;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            environment: Environment::Development,
            timezone: None,
            max_parallel_actions: None,
            java_home: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            allowed_hosts: Vec::new(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_timeout_seconds: DEFAULT_HEADER_TIMEOUT_SECONDS,
            body_timeout_seconds: DEFAULT_BODY_TIMEOUT_SECONDS,
            max_waiting_instances: DEFAULT_MAX_WAITING,
            repository_retry_seconds: 60,
            host_lease_seconds: 10,
            host_poll_ms: 250,
            shell_modules: false,
            require_token_on_loopback: false,
            keep_runs_days: 180,
            keep_logs_days: 30,
            keep_deploys_days: 0,
            prune_interval_seconds: 300,
            notify_give_up_minutes: 1440,
            notify_retry_seconds: 30,
            page_url: None,
            tls_cert_file: None,
            tls_key_file: None,
            openlineage_url: None,
            openlineage_namespace: None,
        }
    }
}

/// A settings error, naming the file or variable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `weft.toml` could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `weft.toml` is not valid.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the TOML reader said (with line and column).
        message: String,
    },
    /// An environment variable has a bad value.
    #[error("environment variable {name}: {message}")]
    Env {
        /// The variable.
        name: &'static str,
        /// What is wrong.
        message: String,
    },
}

impl Settings {
    /// Loads `HOME/weft.toml` (if present), then applies `WEFT_*` environment variables.
    ///
    /// # Errors
    ///
    /// When the file cannot be read or parsed, or a variable has a bad value.
    pub fn load(home: &Path) -> Result<Self, Error> {
        let path = home.join("weft.toml");
        let mut s = match std::fs::read_to_string(&path) {
            Ok(text) => toml::from_str::<Settings>(&text).map_err(|e| Error::Parse {
                path: path.clone(),
                message: e.to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Settings::default(),
            Err(source) => return Err(Error::Read { path, source }),
        };
        if let Some(v) = var("WEFT_ENVIRONMENT") {
            s.environment = v.parse().map_err(|message| Error::Env {
                name: "WEFT_ENVIRONMENT",
                message,
            })?;
        }
        if let Some(v) = var("WEFT_TIMEZONE") {
            s.timezone = Some(v);
        }
        if let Some(v) = var("WEFT_MAX_PARALLEL_ACTIONS") {
            s.max_parallel_actions = Some(v.parse().map_err(|_| Error::Env {
                name: "WEFT_MAX_PARALLEL_ACTIONS",
                message: format!("`{v}` is not a whole number"),
            })?);
        }
        if let Some(v) = var("WEFT_TLS_CERT_FILE") {
            s.tls_cert_file = Some(PathBuf::from(v));
        }
        if let Some(v) = var("WEFT_TLS_KEY_FILE") {
            s.tls_key_file = Some(PathBuf::from(v));
        }
        if s.tls_cert_file.is_some() != s.tls_key_file.is_some() {
            return Err(Error::Env {
                name: "tls_cert_file",
                message: "TLS needs both tls_cert_file and tls_key_file (or WEFT_TLS_CERT_FILE and WEFT_TLS_KEY_FILE), or neither".to_owned(),
            });
        }
        if let Some(v) = var("WEFT_JAVA_HOME") {
            s.java_home = Some(PathBuf::from(v));
        }
        if let Some(v) = var("WEFT_MAX_BODY_BYTES") {
            s.max_body_bytes = v.parse().map_err(|_| Error::Env {
                name: "WEFT_MAX_BODY_BYTES",
                message: format!("`{v}` is not a whole number of bytes"),
            })?;
        }
        number("WEFT_MAX_CONNECTIONS", &mut s.max_connections)?;
        number("WEFT_HEADER_TIMEOUT_SECONDS", &mut s.header_timeout_seconds)?;
        number("WEFT_BODY_TIMEOUT_SECONDS", &mut s.body_timeout_seconds)?;
        number("WEFT_MAX_WAITING_INSTANCES", &mut s.max_waiting_instances)?;
        number(
            "WEFT_REPOSITORY_RETRY_SECONDS",
            &mut s.repository_retry_seconds,
        )?;
        number("WEFT_HOST_LEASE_SECONDS", &mut s.host_lease_seconds)?;
        number("WEFT_HOST_POLL_MS", &mut s.host_poll_ms)?;
        number("WEFT_KEEP_RUNS_DAYS", &mut s.keep_runs_days)?;
        number("WEFT_KEEP_LOGS_DAYS", &mut s.keep_logs_days)?;
        number("WEFT_KEEP_DEPLOYS_DAYS", &mut s.keep_deploys_days)?;
        number("WEFT_PRUNE_INTERVAL_SECONDS", &mut s.prune_interval_seconds)?;
        number("WEFT_NOTIFY_GIVE_UP_MINUTES", &mut s.notify_give_up_minutes)?;
        number("WEFT_NOTIFY_RETRY_SECONDS", &mut s.notify_retry_seconds)?;
        if let Some(v) = var("WEFT_PAGE_URL") {
            s.page_url = Some(v);
        }
        if let Some(v) = var("WEFT_OPENLINEAGE_URL") {
            s.openlineage_url = Some(v);
        }
        if let Some(v) = var("WEFT_OPENLINEAGE_NAMESPACE") {
            s.openlineage_namespace = Some(v);
        }
        if let Some(u) = &s.openlineage_url
            && !(u.starts_with("http://") || u.starts_with("https://"))
        {
            return Err(Error::Env {
                name: "openlineage_url",
                message: format!("`{u}` is not an http:// or https:// address"),
            });
        }
        for (name, target) in [
            ("WEFT_SHELL_MODULES", &mut s.shell_modules),
            (
                "WEFT_REQUIRE_TOKEN_ON_LOOPBACK",
                &mut s.require_token_on_loopback,
            ),
        ] {
            if let Some(v) = var(name) {
                *target = match v.to_ascii_lowercase().as_str() {
                    "true" | "1" | "yes" => true,
                    "false" | "0" | "no" => false,
                    _ => {
                        return Err(Error::Env {
                            name,
                            message: format!("`{v}` is not true or false"),
                        });
                    }
                };
            }
        }
        for (name, value, most) in [
            ("max_connections", s.max_connections as u64, 1_000_000),
            ("header_timeout_seconds", s.header_timeout_seconds, 86_400),
            ("body_timeout_seconds", s.body_timeout_seconds, 86_400),
            (
                "repository_retry_seconds",
                s.repository_retry_seconds,
                86_400,
            ),
            ("host_lease_seconds", s.host_lease_seconds, 3_600),
            ("host_poll_ms", s.host_poll_ms, 60_000),
            ("prune_interval_seconds", s.prune_interval_seconds, 86_400),
            ("notify_give_up_minutes", s.notify_give_up_minutes, 10_080),
            ("notify_retry_seconds", s.notify_retry_seconds, 3_600),
        ] {
            if !(1..=most).contains(&value) {
                return Err(Error::Parse {
                    path: path.clone(),
                    message: format!("setting `{name}` must be from 1 to {most}, not {value}"),
                });
            }
        }
        for (name, value) in [
            ("keep_runs_days", s.keep_runs_days),
            ("keep_logs_days", s.keep_logs_days),
            ("keep_deploys_days", s.keep_deploys_days),
        ] {
            if value > 36_500 {
                return Err(Error::Parse {
                    path: path.clone(),
                    message: format!(
                        "setting `{name}` must be from 0 (keep for ever) to 36500 days, not {value}"
                    ),
                });
            }
        }
        if let Some(v) = var("WEFT_ALLOWED_HOSTS") {
            s.allowed_hosts = v
                .split(',')
                .map(str::trim)
                .filter(|h| !h.is_empty())
                .map(str::to_owned)
                .collect();
        }
        Ok(s)
    }
}

/// Sets `target` from the variable `name` when it is set.
fn number<T: FromStr>(name: &'static str, target: &mut T) -> Result<(), Error> {
    if let Some(v) = var(name) {
        *target = v.parse().map_err(|_| Error::Env {
            name,
            message: format!("`{v}` is not a whole number"),
        })?;
    }
    Ok(())
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Where HOME came from (see [`home_and_source`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HomeSource {
    /// The flag `--home`.
    Flag,
    /// The variable `WEFT_HOME`.
    Variable,
    /// The file `INSTALL/default-home` of an installed tree, named here.
    Installation(PathBuf),
    /// `./weft-home` of the current directory.
    Default,
}

impl HomeSource {
    /// Whether HOME was named on purpose for this command (`--home`, `WEFT_HOME`). Where it was
    /// not, a missing repository is created only by `weft serve` and `weft schema --init`.
    pub fn is_explicit(&self) -> bool {
        matches!(self, HomeSource::Flag | HomeSource::Variable)
    }
}

impl fmt::Display for HomeSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HomeSource::Flag => f.write_str("--home"),
            HomeSource::Variable => f.write_str("WEFT_HOME"),
            HomeSource::Installation(file) => {
                write!(f, "the installation's default in {}", file.display())
            }
            HomeSource::Default => f.write_str("the default, weft-home in the current directory"),
        }
    }
}

/// The name of the file of an installed tree that gives its default HOME (one line, a path;
/// relative paths are relative to INSTALL). `bin/install.sh` writes it.
pub const DEFAULT_HOME_FILE: &str = "default-home";

/// HOME and where it came from, the one rule of every command and script (docs/install.md):
/// `--home DIR`, else `$WEFT_HOME`, else the path in `INSTALL/default-home` when weft runs
/// from an installed tree that has one, else `weft-home` in the current directory. Made
/// absolute.
///
/// # Errors
///
/// `INSTALL/default-home` exists but cannot be read: what is wrong, naming the file (taken
/// for "no file", the command would use `./weft-home` and make a new, empty repository).
pub fn home_and_source(flag: Option<&Path>) -> Result<(PathBuf, HomeSource), String> {
    let (dir, source) = match (flag, var("WEFT_HOME")) {
        (Some(f), _) => (f.to_path_buf(), HomeSource::Flag),
        (None, Some(v)) => (PathBuf::from(v), HomeSource::Variable),
        (None, None) => match install_dir()
            .map(|i| installed_home(&i))
            .transpose()?
            .flatten()
        {
            Some((dir, file)) => (dir, HomeSource::Installation(file)),
            None => (PathBuf::from("weft-home"), HomeSource::Default),
        },
    };
    Ok((std::path::absolute(&dir).unwrap_or(dir), source))
}

/// The default HOME that `INSTALL/default-home` names, with that file's path: its first line
/// that is neither blank nor a `#` comment.
fn installed_home(install: &Path) -> Result<Option<(PathBuf, PathBuf)>, String> {
    let file = install.join(DEFAULT_HOME_FILE);
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(format!(
                "cannot read {} ({e}), which names this installation's HOME; make it readable (chmod 644 {}) or give --home DIR or WEFT_HOME",
                file.display(),
                file.display()
            ));
        }
    };
    Ok(text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|line| (install.join(line), file)))
}

/// INSTALL, the place of weft's code (`bin/`, `plugins/`, `drivers/`, `jdbcList`):
/// `$WEFT_INSTALL`, else found from the running executable by [`install_of`].
pub fn install_dir() -> Option<PathBuf> {
    if let Some(d) = var("WEFT_INSTALL") {
        return Some(PathBuf::from(d));
    }
    install_of(&std::env::current_exe().ok()?)
}

/// The first directory at or above `exe`'s directory that holds `jdbcList`; when that is a
/// `bin` directory (an installed tree, where SPEC 4.6 puts the list beside the scripts),
/// its parent. In a checkout that is the root (from `target/release/weft`); in a tree that
/// `bin/install.sh PREFIX` made, PREFIX.
pub fn install_of(exe: &Path) -> Option<PathBuf> {
    let dir = exe
        .ancestors()
        .skip(1)
        .find(|d| d.join("jdbcList").is_file())?;
    match (dir.file_name(), dir.parent()) {
        (Some(name), Some(parent)) if name == "bin" => Some(parent.to_path_buf()),
        _ => Some(dir.to_path_buf()),
    }
}

/// The driver list of INSTALL: `INSTALL/bin/jdbcList` in an installed tree (beside the
/// scripts), else `INSTALL/jdbcList` (a checkout).
pub fn jdbc_list(install: &Path) -> PathBuf {
    let in_bin = install.join("bin").join("jdbcList");
    if in_bin.is_file() {
        in_bin
    } else {
        install.join("jdbcList")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_weft_toml_and_refuses_unknown_keys() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(
            Settings::load(dir.path()).expect("defaults"),
            Settings::default()
        );
        std::fs::write(
            dir.path().join("weft.toml"),
            "environment = \"production\"\nmax_body_bytes = 1024\n",
        )
        .expect("write");
        let s = Settings::load(dir.path()).expect("loads");
        assert_eq!(s.environment, Environment::Production);
        assert_eq!(s.max_body_bytes, 1024);
        std::fs::write(
            dir.path().join("weft.toml"),
            "enviroment = \"production\"\n",
        )
        .expect("write");
        let e = Settings::load(dir.path()).expect_err("typo");
        let msg = e.to_string();
        assert!(
            msg.contains("weft.toml") && msg.contains("enviroment"),
            "{msg}"
        );
    }

    #[test]
    fn environment_names() {
        assert_eq!(
            "Production".parse::<Environment>(),
            Ok(Environment::Production)
        );
        assert!("prod".parse::<Environment>().is_err());
    }

    #[test]
    fn install_is_found_above_the_binary_and_an_installed_tree_gives_its_home() {
        let dir = tempfile::tempdir().expect("tempdir");
        // A checkout: the list at the root, the binary in target/release.
        let checkout = dir.path().join("checkout");
        std::fs::create_dir_all(checkout.join("target/release")).expect("mkdir");
        std::fs::create_dir_all(checkout.join("bin")).expect("mkdir");
        std::fs::write(checkout.join("jdbcList"), "").expect("list");
        assert_eq!(
            install_of(&checkout.join("target/release/weft")),
            Some(checkout.clone())
        );
        assert_eq!(jdbc_list(&checkout), checkout.join("jdbcList"));
        assert_eq!(installed_home(&checkout), Ok(None));
        // An installed tree: the list beside the scripts in PREFIX/bin.
        let prefix = dir.path().join("opt/weft");
        std::fs::create_dir_all(prefix.join("bin")).expect("mkdir");
        std::fs::write(prefix.join("bin/jdbcList"), "").expect("list");
        assert_eq!(install_of(&prefix.join("bin/weft")), Some(prefix.clone()));
        assert_eq!(jdbc_list(&prefix), prefix.join("bin/jdbcList"));
        // No list anywhere: no INSTALL.
        assert_eq!(install_of(&dir.path().join("elsewhere/weft")), None);
        // default-home: the first line that says something, relative to INSTALL.
        let file = prefix.join(DEFAULT_HOME_FILE);
        std::fs::write(&file, "# the service user's data\n\nhome\n").expect("write");
        assert_eq!(
            installed_home(&prefix),
            Ok(Some((prefix.join("home"), file.clone())))
        );
        std::fs::write(&file, "/var/lib/weft\n").expect("write");
        assert_eq!(
            installed_home(&prefix),
            Ok(Some((PathBuf::from("/var/lib/weft"), file.clone())))
        );
        std::fs::write(&file, "# nothing\n").expect("write");
        assert_eq!(installed_home(&prefix), Ok(None));
        // There but unreadable (here: a folder; for the service user: root's 0600 file) is an
        // error naming it, not "no file".
        std::fs::remove_file(&file).expect("remove");
        std::fs::create_dir(&file).expect("a folder in its place");
        let e = installed_home(&prefix).expect_err("unreadable");
        assert!(
            e.contains(&file.display().to_string()) && e.contains("chmod 644"),
            "{e}"
        );
        let source = HomeSource::Installation(file.clone());
        assert!(!source.is_explicit());
        assert!(source.to_string().contains(&file.display().to_string()));
    }
}
