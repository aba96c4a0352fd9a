//! The command line's clients of a running server, speaking `api::protocol`'s types: `weft
//! deploy` (behind `bin/deploySheet.sh`: sends a `.dsr` file and reports the answer as
//! `FILE:LINE:COLUMN: message` lines), `weft run` (starts a batch instance and follows it
//! with `--wait`), `weft next-runs`, `weft hosts` and `weft plugins --url`.
//!
//! Exit codes ([`Exit`]): 0 deployed, 1 content invalid, 2 usage, 3 service unreachable,
//! 4 request refused for another reason, 5 service failure.

use crate::api::protocol::{
    Answer, BatchExecution, DeployRepository, ErrorBody, ListHosts, ListPlugins, NextRuns,
    PluginList, Request, RunElements, Variable, WaitBatchInstance, read,
};
use crate::deploy;
use crate::dsr::{Detail, LineIndex};
use crate::keys::{self, KeyFile};
use crate::plan::Element;
use crate::repo::model::{ActionState, InstanceState};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Exit codes of the client commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// Deployed (or, with `--test`, would deploy).
    Ok = 0,
    /// The content is invalid; each problem was printed.
    Invalid = 1,
    /// Wrong arguments, unreadable file, bad `--option`.
    Usage = 2,
    /// The service could not be reached.
    Unreachable = 3,
    /// The service refused the request (not the content): 400, 401, 403, 413, ...
    Refused = 4,
    /// The service failed (5xx) or did not answer as weft does.
    ServerError = 5,
}

/// What `weft deploy` was asked.
#[derive(Debug, Clone)]
pub struct DeployArgs {
    /// `--url`; default the key file's `weft_server` entry, else the local default address.
    pub url: Option<String>,
    /// `--token` or `WEFT_TOKEN`: the bearer token for a server beyond loopback.
    pub token: Option<String>,
    /// `--test`: dry run.
    pub test: bool,
    /// `--verbose`.
    pub verbose: bool,
    /// `--option` JSON object.
    pub option: Option<String>,
    /// `--file`; default standard input.
    pub file: Option<PathBuf>,
    /// HOME, for the key file.
    pub home: PathBuf,
}

/// The address a client uses when neither `--url` nor the key file names one (SPEC 4.4:
/// "usually the local default address").
pub const DEFAULT_URL: &str = "http://localhost:17491/weft/service";

/// The service a client talks to: its URL, the bearer token, and an HTTP client.
pub struct Service {
    /// The endpoint.
    pub url: String,
    /// Where the URL came from, for `--verbose`.
    pub url_from: String,
    token: Option<String>,
    /// Where the token came from (never the token itself), for `--verbose`.
    pub token_from: &'static str,
    http: reqwest::blocking::Client,
    who: &'static str,
}

impl Service {
    /// Finds the service: `url`, else key file entry `weft_server` of `home`, else
    /// [`DEFAULT_URL`]; the token: `token` (`--token` or `WEFT_TOKEN`), else the option
    /// `token` of that key file entry when its URL is the one used. `who` prefixes messages
    /// (`deploySheet`, `weft run`).
    ///
    /// # Errors
    ///
    /// [`Exit::ServerError`] when the HTTP client cannot be set up, after printing why.
    pub fn locate(
        url: Option<&str>,
        token: Option<&str>,
        home: &Path,
        who: &'static str,
    ) -> Result<Self, Exit> {
        let keyfile_path = KeyFile::path_in(home);
        let keyfile = KeyFile::load(&keyfile_path);
        let server_entry = keyfile
            .as_ref()
            .ok()
            .and_then(|k| k.get(keys::SERVER_KEY).cloned());
        let (url, url_from) = match (url, &server_entry) {
            (Some(u), _) => (u.to_owned(), "--url".to_owned()),
            (None, Some(e)) => (
                e.url.clone(),
                format!(
                    "key file entry {} in {}",
                    keys::SERVER_KEY,
                    keyfile_path.display()
                ),
            ),
            (None, None) => {
                let why = match &keyfile {
                    Err(e) => e.to_string(),
                    Ok(_) => format!("the key file has no entry `{}`", keys::SERVER_KEY),
                };
                (DEFAULT_URL.to_owned(), format!("the default ({why})"))
            }
        };
        let given = token.map(str::trim).filter(|t| !t.is_empty());
        // The key file's token goes only to the server the key file names.
        let from_keyfile = server_entry
            .filter(|e| same_origin(&e.url, &url))
            .and_then(|e| e.option("token").map(str::to_owned));
        let (token, token_from) = match (given, from_keyfile) {
            (Some(t), _) => (Some(t.to_owned()), "--token or WEFT_TOKEN"),
            (None, Some(t)) => (Some(t), "the key file"),
            (None, None) => (None, "none"),
        };
        // rustls with ring, for https URLs (the process's one crypto provider).
        crate::init_tls();
        let http = reqwest::blocking::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(3700))
            .build()
            .map_err(|e| {
                eprintln!("{who}: cannot set up the HTTP client: {e}");
                Exit::ServerError
            })?;
        Ok(Service {
            url,
            url_from,
            token,
            token_from,
            http,
            who,
        })
    }

    /// Sends one command; its answer, or the service's refusal.
    ///
    /// # Errors
    ///
    /// [`Exit::Unreachable`] or [`Exit::ServerError`] (no answer in weft's shape), after
    /// printing why.
    pub fn call<R: Request>(&self, request: R) -> Result<Result<R::Answer, Refusal>, Exit> {
        let (who, url) = (self.who, &self.url);
        let mut http = self.http.post(url).json(&request.into());
        if let Some(t) = &self.token {
            http = http.bearer_auth(t);
        }
        let response = http.send().map_err(|e| {
            let what = if e.is_connect() {
                "cannot connect"
            } else if e.is_timeout() {
                "no answer in time"
            } else {
                "request failed"
            };
            eprintln!(
                "{who}: the service at {url} (from {}) cannot be reached ({what}): {}",
                self.url_from,
                error_chain(&e)
            );
            eprintln!("{who}: is the server running? Start it with `weft serve`, or give --url");
            Exit::Unreachable
        })?;
        let status = response.status();
        let answer: Answer<R::Answer> = response.json().map_err(|e| {
            eprintln!(
                "{who}: the service at {url} answered {status} with a body that is not weft's answer to {}: {}",
                R::NAME,
                error_chain(&e)
            );
            Exit::ServerError
        })?;
        match (answer.payload, answer.error) {
            (Some(payload), None) if status.is_success() => Ok(Ok(payload)),
            (_, Some(error)) if !status.is_success() => Ok(Err(Refusal { status, error })),
            _ => {
                eprintln!(
                    "{who}: the service at {url} answered {status} to {} without weft's payload or error",
                    R::NAME
                );
                Err(Exit::ServerError)
            }
        }
    }
}

/// A command the service refused: the status and weft's error.
#[derive(Debug)]
pub struct Refusal {
    /// The HTTP status.
    pub status: reqwest::StatusCode,
    /// Code, message and details.
    pub error: ErrorBody,
}

impl Refusal {
    /// The exit code: a fault of the service, or a refusal of the request.
    pub fn exit(&self) -> Exit {
        if self.status.is_server_error() {
            Exit::ServerError
        } else {
            Exit::Refused
        }
    }
}

/// Reads `--option`, a JSON object of deploy options, with the server's own reader: each
/// problem with its line and column in the option's text.
fn deploy_options(text: &str) -> Result<deploy::Options, String> {
    let root = crate::dsr::json::parse(text).map_err(|e| {
        let pos = LineIndex::new(text).position(e.offset as u32);
        format!("--option is not valid JSON: {} at {pos}", e.message)
    })?;
    let mut problems = crate::dsr::Problems::default();
    read::duplicates(&root, &mut problems);
    let options = read::deploy_options(&root, &crate::dsr::Path::root(), &mut problems);
    if problems.has_errors() {
        let lines: Vec<String> = problems
            .into_details(&LineIndex::new(text))
            .iter()
            .map(|d| format_detail("--option", d, ""))
            .collect();
        return Err(format!(
            "--option must be a JSON object such as {{\"validate\": \"true\"}}:\n{}",
            lines.join("\n")
        ));
    }
    Ok(options)
}

/// Runs `weft deploy`, printing to standard output and error; returns the exit code.
pub fn deploy(args: &DeployArgs) -> Exit {
    let service = match Service::locate(
        args.url.as_deref(),
        args.token.as_deref(),
        &args.home,
        "deploySheet",
    ) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let url = service.url.clone();
    let mut options = match args.option.as_deref().map(deploy_options) {
        None => deploy::Options::default(),
        Some(Ok(o)) => o,
        Some(Err(message)) => {
            eprintln!("deploySheet: {message}");
            return Exit::Usage;
        }
    };
    if args.test {
        options.dry_run = true;
    }
    let (name, content) = match read_content(args.file.as_deref()) {
        Ok(x) => x,
        Err(msg) => {
            eprintln!("deploySheet: {msg}");
            return Exit::Usage;
        }
    };
    let request = DeployRepository {
        content,
        deploy_options: options,
    };
    if args.verbose {
        // The options in force, defaults included, as they are sent.
        let sent = serde_json::to_value(&request).unwrap_or_default();
        eprintln!("url: {url} (from {})", service.url_from);
        eprintln!("token: {}", service.token_from);
        eprintln!("options: {}", sent["deployOptions"]);
        eprintln!("file: {name} ({} bytes)", request.content.len());
    }
    let refusal = match service.call(request) {
        Ok(Ok(report)) => {
            for w in &report.warnings {
                eprintln!("{}", format_detail(&name, w, "warning: "));
            }
            println!("Deployment without errors");
            if report.dry_run {
                println!("(test only: the repository was not changed)");
            }
            if args.verbose {
                for (kind, list) in [
                    ("created", &report.created),
                    ("updated", &report.updated),
                    ("unchanged", &report.unchanged),
                    ("deleted", &report.deleted),
                ] {
                    if !list.is_empty() {
                        let list: Vec<String> = list
                            .iter()
                            .map(|c| format!("{} {}", c.kind, c.id))
                            .collect();
                        println!("{kind}: {}", list.join(", "));
                    }
                }
                if let Some(map) = &report.id_map {
                    println!("idMap: {}", serde_json::to_string(map).unwrap_or_default());
                }
            }
            return Exit::Ok;
        }
        Ok(Err(refusal)) => refusal,
        Err(code) => return code,
    };
    let Refusal { status, error } = &refusal;
    if error.code == "deploy.invalid" {
        for d in &error.details {
            let prefix = if d.severity == weft_protocol::Severity::Warning {
                "warning: "
            } else {
                ""
            };
            eprintln!("{}", format_detail(&name, d, prefix));
        }
        eprintln!("deploySheet: {name} was not deployed: {}", error.message);
        return Exit::Invalid;
    }
    eprintln!(
        "deploySheet: the service refused the request ({status}, {}): {}",
        error.code, error.message
    );
    for d in &error.details {
        eprintln!("{}", format_detail("request", d, ""));
    }
    refusal.exit()
}

fn read_content(file: Option<&Path>) -> Result<(String, String), String> {
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

/// `FILE:LINE:COLUMN: message`, or `FILE: message` without a position.
pub fn format_detail(file: &str, d: &Detail, prefix: &str) -> String {
    let path = if d.path.is_empty() {
        String::new()
    } else {
        format!(" ({})", d.path)
    };
    match (d.line, d.column) {
        (Some(l), Some(c)) => format!("{file}:{l}:{c}: {prefix}{}{path} [{}]", d.message, d.code),
        _ => format!("{file}: {prefix}{}{path} [{}]", d.message, d.code),
    }
}

fn same_origin(a: &str, b: &str) -> bool {
    match (reqwest::Url::parse(a), reqwest::Url::parse(b)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

/// What `weft run` was asked.
#[derive(Debug, Clone, Default)]
pub struct RunArgs {
    /// `--url`.
    pub url: Option<String>,
    /// `--token` or `WEFT_TOKEN`.
    pub token: Option<String>,
    /// `--sheet` ids.
    pub sheets: Vec<i64>,
    /// `--action` ids.
    pub actions: Vec<i64>,
    /// `--folder` ids.
    pub folders: Vec<i64>,
    /// `--var NAME=VALUE`.
    pub vars: Vec<(String, String)>,
    /// `--name`.
    pub batch_name: String,
    /// `--user`.
    pub user: String,
    /// `--wait`.
    pub wait: bool,
    /// HOME, for the key file.
    pub home: PathBuf,
}

/// Runs `weft run`: starts a batch instance; with `--wait`, shows the actions' states while
/// it runs and exits 0 when it finished, 1 when it failed, was halted or interrupted.
pub fn run(args: &RunArgs) -> Exit {
    use std::io::Write as _;
    let service = match Service::locate(
        args.url.as_deref(),
        args.token.as_deref(),
        &args.home,
        "weft run",
    ) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let mut elements = Vec::new();
    for (kind, ids) in [
        ('S', &args.sheets),
        ('A', &args.actions),
        ('F', &args.folders),
    ] {
        elements.extend(ids.iter().map(|&id| Element { kind, id }));
    }
    if elements.is_empty() {
        eprintln!(
            "weft run: name something to run: --sheet ID, --action ID or --folder ID (each may be repeated)"
        );
        return Exit::Usage;
    }
    let request = RunElements {
        batch_execution: BatchExecution {
            batch_name: args.batch_name.clone(),
            user: args.user.clone(),
            element_list: elements,
        },
        variables: args
            .vars
            .iter()
            .map(|(name, value)| Variable {
                name: name.clone(),
                kind: Some("String".to_owned()),
                value: value.clone(),
            })
            .collect(),
    };
    let id = match service.call(request) {
        Ok(Ok(started)) => started.batch_instance_id,
        Ok(Err(refusal)) => {
            eprintln!(
                "weft run: the service refused the run ({}, {}): {}",
                refusal.status, refusal.error.code, refusal.error.message
            );
            return refusal.exit();
        }
        Err(code) => return code,
    };
    println!("batch instance {id} started");
    if !args.wait {
        return Exit::Ok;
    }
    let mut last = String::new();
    loop {
        let wait = WaitBatchInstance {
            batch_instance_id: id,
            timeout_seconds: Some(1.0),
            changed_from: None,
        };
        let instance = match service.call(wait) {
            Ok(Ok(waited)) => waited.instance,
            Ok(Err(refusal)) => {
                eprintln!(
                    "weft run: cannot follow instance {id}: {}",
                    refusal.error.message
                );
                return Exit::Refused;
            }
            Err(code) => return code,
        };
        let state = instance.summary.state;
        let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
        for a in &instance.actions {
            *counts.entry(a.state.code()).or_default() += 1;
        }
        let running: Vec<String> = instance
            .actions
            .iter()
            .filter(|a| a.state == ActionState::Running)
            .map(|a| format!("{} {}", a.action_id, a.name))
            .collect();
        let line = format!(
            "instance {id} {state}: {}{}",
            counts
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
            if running.is_empty() {
                String::new()
            } else {
                format!("; running: {}", running.join(", "))
            }
        );
        if line != last {
            eprintln!("{line}");
            let _ = std::io::stderr().flush();
            last = line;
        }
        if !state.is_ongoing() {
            for a in &instance.actions {
                let mut l = format!(
                    "  {} {:<24} {}  read {} written {} updated {}",
                    a.state,
                    format!("{} {}", a.action_id, a.name),
                    a.module,
                    a.rows_read,
                    a.rows_written,
                    a.rows_updated
                );
                if a.rows_deleted > 0 {
                    l.push_str(&format!(" deleted {}", a.rows_deleted));
                }
                if let Some(e) = &a.error {
                    l.push_str(&format!("\n      error: {e}"));
                }
                println!("{l}");
            }
            println!("batch instance {id} {state}");
            return if state == InstanceState::Finished {
                Exit::Ok
            } else {
                Exit::Invalid
            };
        }
    }
}

/// Runs `weft next-runs`: prints the next planned starts of a scheduled batch, one a line:
/// local time, UTC offset, UTC, and what a clock change does to it.
pub fn next_runs(
    url: Option<&str>,
    token: Option<&str>,
    home: &Path,
    batch: i64,
    count: usize,
) -> Exit {
    let service = match Service::locate(url, token, home, "weft next-runs") {
        Ok(s) => s,
        Err(code) => return code,
    };
    let p = match service.call(NextRuns {
        batch_id: batch,
        count,
    }) {
        Ok(Ok(p)) => p,
        Ok(Err(refusal)) => {
            eprintln!(
                "weft next-runs: {} ({})",
                refusal.error.message, refusal.status
            );
            return refusal.exit();
        }
        Err(code) => return code,
    };
    println!(
        "batch {} `{}`: {} in {}, springGap {}, autumnOverlap {}{}",
        p.batch_id,
        p.name,
        p.schedule,
        p.time_zone,
        p.spring_gap,
        p.autumn_overlap,
        if p.enabled { "" } else { " (disabled)" }
    );
    if let Some(problem) = &p.problem {
        println!("  {problem}");
    } else if p.starts.is_empty() {
        println!("  no planned start");
    }
    for s in &p.starts {
        let note = s
            .clock_change
            .as_deref()
            .map(|n| format!("  {n}"))
            .unwrap_or_default();
        println!(
            "  {}  UTC{}  {}{}",
            s.local,
            s.utc_offset.as_deref().unwrap_or(""),
            s.utc,
            note
        );
    }
    Exit::Ok
}

/// Runs `weft hosts`: one line a host, the answering one marked, with how long ago its
/// heartbeat was recorded.
pub fn hosts(url: Option<&str>, token: Option<&str>, home: &Path) -> Exit {
    let service = match Service::locate(url, token, home, "weft hosts") {
        Ok(s) => s,
        Err(code) => return code,
    };
    let list = match service.call(ListHosts {}) {
        Ok(Ok(list)) => list,
        Ok(Err(refusal)) => {
            eprintln!("weft hosts: {} ({})", refusal.error.message, refusal.status);
            return refusal.exit();
        }
        Err(code) => return code,
    };
    println!("HOST\tURL\tSLOTS\tRUNNING\tSTARTED\tLAST HEARTBEAT");
    for h in &list.hosts {
        let this = if h.host == list.this_host {
            " (this)"
        } else {
            ""
        };
        println!(
            "{}{this}\t{}\t{}\t{}\t{}\t{:.1} s ago",
            h.host,
            h.url,
            h.slots,
            h.running,
            h.started,
            h.silent_ms as f64 / 1000.0
        );
    }
    Exit::Ok
}

/// Runs `weft plugins --url`: what the running server loaded, as `weft plugins` prints it.
pub fn plugins(url: &str, token: Option<&str>, home: &Path) -> Exit {
    let service = match Service::locate(Some(url), token, home, "weft plugins") {
        Ok(s) => s,
        Err(code) => return code,
    };
    match service.call(ListPlugins {}) {
        Ok(Ok(list)) => {
            print_plugins(&list);
            Exit::Ok
        }
        Ok(Err(refusal)) => {
            eprintln!(
                "weft plugins: {} ({})",
                refusal.error.message, refusal.status
            );
            refusal.exit()
        }
        Err(code) => code,
    }
}

/// A module and its attributes, indented by `indent`.
fn print_module(m: &crate::api::protocol::ModuleView, indent: &str) {
    println!("{indent}{}: {} ({})", m.name, m.description, m.objects);
    for a in &m.attributes {
        let mut what = a.kind.clone();
        if let Some(d) = &a.default {
            what.push_str(&format!(", default {d}"));
        }
        if a.required {
            what.push_str(", required");
        }
        println!("{indent}  {} ({what}): {}", a.name, a.description);
    }
}

/// Prints what a plugin list holds: each library with its modules (their attributes
/// below them), object types and connection types, the process modules, then the refusals.
pub fn print_plugins(list: &PluginList) {
    println!("weft sdk {}", list.sdk_version);
    for lib in &list.libraries {
        println!("{} {} ({})", lib.name, lib.version, lib.path);
        if !lib.modules.is_empty() {
            let names: Vec<&str> = lib.modules.iter().map(|m| m.name.as_str()).collect();
            println!("  modules: {}", names.join(", "));
            for m in &lib.modules {
                print_module(m, "    ");
            }
        }
        if !lib.object_types.is_empty() {
            println!("  object types: {}", lib.object_types.join(", "));
        }
        if !lib.connection_types.is_empty() {
            println!("  connection types: {}", lib.connection_types.join(", "));
        }
    }
    for p in &list.process_modules {
        println!(
            "process module {} ({}: {})",
            p.module.name, p.path, p.command
        );
        print_module(&p.module, "  ");
    }
    println!(
        "native connection types: {}",
        list.native_connection_types.join(", ")
    );
    for r in &list.refused {
        println!("refused: {}", r.reason);
    }
}

#[cfg(test)]
mod tests;
