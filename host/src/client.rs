//! `weft deploy`, the client behind `bin/deploySheet.sh`: sends a `.dsr` file to the service
//! and reports the answer as `FILE:LINE:COLUMN: message` lines.
//!
//! Exit codes ([`Exit`]): 0 deployed, 1 content invalid, 2 usage, 3 service unreachable,
//! 4 request refused for another reason, 5 service failure.

use crate::dsr::Detail;
use crate::keys::{self, KeyFile};
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

    /// Sends one command envelope; the status and the JSON answer.
    ///
    /// # Errors
    ///
    /// [`Exit::Unreachable`] or [`Exit::ServerError`], after printing why.
    pub fn call(
        &self,
        body: &serde_json::Value,
    ) -> Result<(reqwest::StatusCode, serde_json::Value), Exit> {
        let (who, url) = (self.who, &self.url);
        let mut request = self.http.post(url).json(body);
        if let Some(t) = &self.token {
            request = request.bearer_auth(t);
        }
        let response = request.send().map_err(|e| {
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
        let answer: serde_json::Value = response.json().map_err(|e| {
            eprintln!("{who}: the service at {url} answered {status} with a body that is not weft's JSON: {e}");
            Exit::ServerError
        })?;
        Ok((status, answer))
    }
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
    let mut options = match &args.option {
        None => serde_json::Map::new(),
        Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(m)) => m,
            Ok(other) => {
                eprintln!(
                    "deploySheet: --option must be a JSON object such as {{\"validate\": \"true\"}}, got {other}"
                );
                return Exit::Usage;
            }
            Err(e) => {
                eprintln!("deploySheet: --option is not valid JSON: {e}");
                return Exit::Usage;
            }
        },
    };
    if args.test {
        options.insert("dryRun".to_owned(), serde_json::Value::Bool(true));
    }
    let (name, content) = match read_content(args.file.as_deref()) {
        Ok(x) => x,
        Err(msg) => {
            eprintln!("deploySheet: {msg}");
            return Exit::Usage;
        }
    };
    if args.verbose {
        // The options in force, defaults included.
        let mut effective = serde_json::Map::new();
        effective.insert("validate".to_owned(), serde_json::Value::Bool(true));
        effective.insert("dryRun".to_owned(), serde_json::Value::Bool(false));
        effective.insert("intoFolder".to_owned(), serde_json::Value::Null);
        effective.extend(options.clone());
        eprintln!("url: {url} (from {})", service.url_from);
        eprintln!("token: {}", service.token_from);
        eprintln!("options: {}", serde_json::Value::Object(effective));
        eprintln!("file: {name} ({} bytes)", content.len());
    }
    let body = serde_json::json!({
        "command": "DeployRepository",
        "payload": { "content": content, "deployOptions": options },
    });
    let (status, answer) = match service.call(&body) {
        Ok(x) => x,
        Err(code) => return code,
    };
    if status.is_success() {
        let payload = &answer["payload"];
        for w in details(&payload["warnings"]) {
            eprintln!("{}", format_detail(&name, &w, "warning: "));
        }
        println!("Deployment without errors");
        if payload["dryRun"] == serde_json::Value::Bool(true) {
            println!("(test only: the repository was not changed)");
        }
        if args.verbose {
            for kind in ["created", "updated", "unchanged", "deleted"] {
                let list: Vec<String> = payload[kind]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|c| format!("{} {}", c["kind"].as_str().unwrap_or("?"), c["id"]))
                            .collect()
                    })
                    .unwrap_or_default();
                if !list.is_empty() {
                    println!("{kind}: {}", list.join(", "));
                }
            }
            if let Some(map) = payload.get("idMap") {
                println!("idMap: {map}");
            }
        }
        return Exit::Ok;
    }
    let error = &answer["error"];
    let code = error["code"].as_str().unwrap_or("");
    let message = error["message"].as_str().unwrap_or("no message");
    let list = details(&error["details"]);
    if code == "deploy.invalid" {
        for d in &list {
            let prefix = if d.severity == crate::dsr::Severity::Warning {
                "warning: "
            } else {
                ""
            };
            eprintln!("{}", format_detail(&name, d, prefix));
        }
        eprintln!("deploySheet: {name} was not deployed: {message}");
        return Exit::Invalid;
    }
    eprintln!("deploySheet: the service refused the request ({status}, {code}): {message}");
    for d in &list {
        eprintln!("{}", format_detail("request", d, ""));
    }
    if status.is_server_error() {
        Exit::ServerError
    } else {
        Exit::Refused
    }
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

fn details(v: &serde_json::Value) -> Vec<Detail> {
    serde_json::from_value(v.clone()).unwrap_or_default()
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
        ("S", &args.sheets),
        ("A", &args.actions),
        ("F", &args.folders),
    ] {
        elements.extend(
            ids.iter()
                .map(|id| serde_json::json!({"elementType": kind, "elementId": id})),
        );
    }
    if elements.is_empty() {
        eprintln!(
            "weft run: name something to run: --sheet ID, --action ID or --folder ID (each may be repeated)"
        );
        return Exit::Usage;
    }
    let mut body = serde_json::json!({"command": "RunElements", "payload": {"batchExecution": {
        "batchName": args.batch_name, "user": args.user, "elementList": elements}}});
    if !args.vars.is_empty() {
        body["variableList"] = args
            .vars
            .iter()
            .map(|(n, v)| serde_json::json!({"variableName": n, "variableType": "String", "variableValue": v}))
            .collect();
    }
    let (status, answer) = match service.call(&body) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let Some(id) = answer["payload"]["batchInstanceId"]
        .as_i64()
        .filter(|_| status.is_success())
    else {
        eprintln!(
            "weft run: the service refused the run ({status}, {}): {}",
            answer["error"]["code"].as_str().unwrap_or(""),
            answer["error"]["message"].as_str().unwrap_or("no message")
        );
        return if status.is_server_error() {
            Exit::ServerError
        } else {
            Exit::Refused
        };
    };
    println!("batch instance {id} started");
    if !args.wait {
        return Exit::Ok;
    }
    let mut last = String::new();
    loop {
        let body = serde_json::json!({"command": "WaitBatchInstance", "payload": {"batchInstanceId": id, "timeoutSeconds": 1}});
        let (status, answer) = match service.call(&body) {
            Ok(x) => x,
            Err(code) => return code,
        };
        if !status.is_success() {
            eprintln!(
                "weft run: cannot follow instance {id}: {}",
                answer["error"]["message"].as_str().unwrap_or("")
            );
            return Exit::Refused;
        }
        let p = &answer["payload"];
        let actions = p["actions"].as_array().cloned().unwrap_or_default();
        let mut counts: std::collections::BTreeMap<String, usize> =
            std::collections::BTreeMap::new();
        for a in &actions {
            *counts
                .entry(a["state"].as_str().unwrap_or("?").to_owned())
                .or_default() += 1;
        }
        let running: Vec<String> = actions
            .iter()
            .filter(|a| a["state"] == "R")
            .map(|a| format!("{} {}", a["actionId"], a["name"].as_str().unwrap_or("")))
            .collect();
        let line = format!(
            "instance {id} {}: {}{}",
            p["state"].as_str().unwrap_or("?"),
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
        if p["state"] != "running" && p["state"] != "waiting" {
            for a in &actions {
                let mut l = format!(
                    "  {} {:<24} {}  read {} written {} updated {}",
                    a["state"].as_str().unwrap_or("?"),
                    format!("{} {}", a["actionId"], a["name"].as_str().unwrap_or("")),
                    a["module"].as_str().unwrap_or(""),
                    a["rowsRead"],
                    a["rowsWritten"],
                    a["rowsUpdated"]
                );
                if let Some(e) = a["error"].as_str() {
                    l.push_str(&format!("\n      error: {e}"));
                }
                println!("{l}");
            }
            println!("batch instance {id} {}", p["state"].as_str().unwrap_or("?"));
            return if p["state"] == "finished" {
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
    let body =
        serde_json::json!({"command": "NextRuns", "payload": {"batchId": batch, "count": count}});
    let (status, answer) = match service.call(&body) {
        Ok(x) => x,
        Err(code) => return code,
    };
    if !status.is_success() {
        eprintln!(
            "weft next-runs: {} ({status})",
            answer["error"]["message"].as_str().unwrap_or("no message")
        );
        return if status.is_server_error() {
            Exit::ServerError
        } else {
            Exit::Refused
        };
    }
    let p = &answer["payload"];
    let text = |v: &serde_json::Value| v.as_str().unwrap_or("").to_owned();
    println!(
        "batch {} `{}`: {} in {}, springGap {}, autumnOverlap {}{}",
        p["batchId"],
        text(&p["name"]),
        text(&p["schedule"]),
        text(&p["timeZone"]),
        text(&p["springGap"]),
        text(&p["autumnOverlap"]),
        if p["enabled"] == false {
            " (disabled)"
        } else {
            ""
        }
    );
    let starts = p["starts"].as_array().cloned().unwrap_or_default();
    if let Some(problem) = p["problem"].as_str() {
        println!("  {problem}");
    } else if starts.is_empty() {
        println!("  no planned start");
    }
    for s in starts {
        let note = s["clockChange"]
            .as_str()
            .map(|n| format!("  {n}"))
            .unwrap_or_default();
        println!(
            "  {}  UTC{}  {}{}",
            text(&s["local"]),
            text(&s["utcOffset"]),
            text(&s["utc"]),
            note
        );
    }
    Exit::Ok
}

#[cfg(test)]
mod tests;
