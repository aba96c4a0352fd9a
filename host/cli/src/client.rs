//! What every client of a running server shares: finding the service and its token
//! ([`Service`]), sending one command of `weft_protocol` and reading its typed answer or the
//! service's refusal, the exit codes ([`Exit`]) and the `FILE:LINE:COLUMN: message` form of
//! a problem.

use std::path::Path;
use std::time::Duration;
use weft_core::keys::{self, KeyFile};
use weft_protocol::{Answer, Detail, ErrorBody, Request};

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
        ca: Option<&Path>,
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
        // The key file's token (and CA) go only to the server the key file names.
        let named = server_entry.filter(|e| same_origin(&e.url, &url));
        let ca_from_keyfile = named
            .as_ref()
            .and_then(|e| e.option("ca").map(std::path::PathBuf::from));
        let from_keyfile = named.and_then(|e| e.option("token").map(str::to_owned));
        let (token, token_from) = match (given, from_keyfile) {
            (Some(t), _) => (Some(t.to_owned()), "--token or WEFT_TOKEN"),
            (None, Some(t)) => (Some(t), "the key file"),
            (None, None) => (None, "none"),
        };
        // rustls with ring, for https URLs (the process's one crypto provider).
        weft::init_tls();
        let mut http = reqwest::blocking::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(3700));
        if let Some(ca) = ca.map(Path::to_path_buf).or(ca_from_keyfile) {
            let certs = std::fs::read(&ca)
                .map_err(|e| e.to_string())
                .and_then(|pem| {
                    reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| e.to_string())
                })
                .and_then(|certs| {
                    if certs.is_empty() {
                        Err("it holds no certificate".to_owned())
                    } else {
                        Ok(certs)
                    }
                })
                .map_err(|e| {
                    eprintln!("{who}: the CA file {} does not read: {e}", ca.display());
                    Exit::Usage
                })?;
            http = http.tls_certs_only(certs);
        }
        let http = http.build().map_err(|e| {
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

/// Whether URLs `a` and `b` have one origin (scheme, host, port).
fn same_origin(a: &str, b: &str) -> bool {
    match (reqwest::Url::parse(a), reqwest::Url::parse(b)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

/// An error with its sources, `outer: inner: innermost`.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

#[cfg(test)]
mod tests;
