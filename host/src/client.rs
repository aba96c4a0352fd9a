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
    /// `--url`; default the key file's `weft_server` entry.
    pub url: Option<String>,
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

/// Runs `weft deploy`, printing to standard output and error; returns the exit code.
pub fn deploy(args: &DeployArgs) -> Exit {
    let keyfile = KeyFile::load(&KeyFile::path_in(&args.home));
    let server_entry = keyfile
        .as_ref()
        .ok()
        .and_then(|k| k.get(keys::SERVER_KEY).cloned());
    let url = match (&args.url, &server_entry) {
        (Some(u), _) => u.clone(),
        (None, Some(e)) => e.url.clone(),
        (None, None) => {
            let why = match &keyfile {
                Err(e) => e.to_string(),
                Ok(_) => format!("the key file has no entry `{}`", keys::SERVER_KEY),
            };
            eprintln!("deploySheet: no --url given and the service address is unknown: {why}");
            return Exit::Usage;
        }
    };
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
        eprintln!("url: {url}");
        eprintln!("options: {}", serde_json::Value::Object(options.clone()));
        eprintln!("file: {name} ({} bytes)", content.len());
    }
    let body = serde_json::json!({
        "command": "DeployRepository",
        "payload": { "content": content, "deployOptions": options },
    });
    // The token goes only to the server the key file names.
    let token = server_entry
        .filter(|e| same_origin(&e.url, &url))
        .and_then(|e| e.option("token").map(str::to_owned));
    let client = match reqwest::blocking::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(600))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("deploySheet: cannot set up the HTTP client: {e}");
            return Exit::ServerError;
        }
    };
    let mut request = client.post(&url).json(&body);
    if let Some(t) = token {
        request = request.bearer_auth(t);
    }
    let response = match request.send() {
        Ok(r) => r,
        Err(e) => {
            let what = if e.is_connect() {
                "cannot connect"
            } else if e.is_timeout() {
                "no answer in time"
            } else {
                "request failed"
            };
            eprintln!(
                "deploySheet: the service at {url} cannot be reached ({what}): {}",
                error_chain(&e)
            );
            eprintln!(
                "deploySheet: is the server running? Start it with `weft serve`, or give --url"
            );
            return Exit::Unreachable;
        }
    };
    let status = response.status();
    let answer: serde_json::Value = match response.json() {
        Ok(v) => v,
        Err(e) => {
            eprintln!(
                "deploySheet: the service at {url} answered {status} with a body that is not weft's JSON: {e}"
            );
            return Exit::ServerError;
        }
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
