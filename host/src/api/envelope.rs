//! Reading the command envelope and the `DeployRepository` payload from a raw body, with a
//! line, column and path for every problem.

use super::error::ApiError;
use crate::deploy;
use crate::dsr::value::{Member, Spanned, Value};
use crate::dsr::{Detail, LineIndex, Path, Problems, json};
use axum::http::StatusCode;

/// A read envelope.
#[derive(Debug)]
pub struct Request {
    /// The body text.
    pub text: String,
    /// `command`.
    pub command: String,
    /// `payload`.
    pub payload: Spanned,
    /// `variableList`, when given.
    pub variable_list: Option<Spanned>,
}

/// A read `DeployRepository` payload.
#[derive(Debug)]
pub struct DeployRequest {
    /// The `.dsr` text.
    pub content: String,
    /// The deploy options.
    pub options: deploy::Options,
}

fn details(text: &str, problems: Problems) -> Vec<Detail> {
    problems.into_details(&LineIndex::new(text))
}

fn members(v: &Spanned) -> &[Member] {
    match &v.value {
        Value::Object(m) => m,
        _ => &[],
    }
}

/// Reads the envelope of `body`.
///
/// # Errors
///
/// 400 for a body that is not UTF-8, not JSON, or not an envelope.
pub fn read(body: &[u8]) -> Result<Request, ApiError> {
    let text = match std::str::from_utf8(body) {
        Ok(t) => t,
        Err(e) => {
            let valid = &body[..e.valid_up_to()];
            // The prefix is valid UTF-8 by definition of `valid_up_to`.
            let prefix = std::str::from_utf8(valid).unwrap_or_default();
            let pos = LineIndex::new(prefix).position(prefix.len() as u32);
            return Err(ApiError::client(
                StatusCode::BAD_REQUEST,
                "request.encoding",
                format!(
                    "the request body is not UTF-8: invalid byte at {pos} (byte offset {})",
                    e.valid_up_to()
                ),
            )
            .with_details(vec![Detail {
                severity: crate::dsr::Severity::Error,
                code: "request.encoding".to_owned(),
                message: format!("invalid UTF-8 at byte offset {}", e.valid_up_to()),
                line: Some(pos.line),
                column: Some(pos.column),
                path: String::new(),
                more: None,
            }]));
        }
    };
    let root = json::parse(text).map_err(|e| {
        let pos = LineIndex::new(text).position(e.offset as u32);
        // A syntax error is `request.json`; a limit passed keeps its own code.
        let code = if e.code == "dsr.syntax" {
            "request.json"
        } else {
            e.code
        };
        ApiError::client(
            StatusCode::BAD_REQUEST,
            code,
            format!("the request body is not valid JSON: {} at {pos}", e.message),
        )
        .with_details(vec![Detail {
            severity: crate::dsr::Severity::Error,
            code: code.to_owned(),
            message: e.message,
            line: Some(pos.line),
            column: Some(pos.column),
            path: String::new(),
            more: None,
        }])
    })?;
    let mut problems = Problems::default();
    let root_path = Path::root();
    duplicates(&root, &mut problems);
    if !matches!(root.value, Value::Object(_)) {
        problems.error(
            "request.envelope",
            format!(
                "the request must be an object {{command, payload, variableList?}}, found {}",
                root.value.kind()
            ),
            root.span,
            &root_path,
        );
    }
    let mut command = None;
    let mut payload = None;
    let mut variable_list = None;
    for m in members(&root) {
        let path = root_path.key(&m.key);
        match m.key.as_str() {
            "command" => match &m.value.value {
                Value::String(s) => command = Some(s.clone()),
                other => problems.error("request.envelope", format!("`command` must be a string, found {}", other.kind()), m.value.span, &path),
            },
            "payload" => match &m.value.value {
                Value::Object(_) => payload = Some(m.value.clone()),
                other => problems.error("request.envelope", format!("`payload` must be an object, found {}", other.kind()), m.value.span, &path),
            },
            "variableList" => {
                variable_list = Some(m.value.clone());
                if !matches!(m.value.value, Value::Array(_) | Value::Null) {
                    problems.error("request.envelope", format!("`variableList` must be an array, found {}", m.value.value.kind()), m.value.span, &path);
                }
            }
            other => problems.error(
                "request.envelope",
                format!("unknown field `{other}` in the request; expected command, payload, variableList"),
                m.key_span,
                &path,
            ),
        }
    }
    if matches!(root.value, Value::Object(_)) {
        for (field, missing) in [
            ("command", command.is_none()),
            ("payload", payload.is_none()),
        ] {
            if missing && !members(&root).iter().any(|m| m.key == field) {
                problems.error(
                    "request.envelope",
                    format!("missing field `{field}` in the request"),
                    root.span,
                    &root_path.key(field),
                );
            }
        }
    }
    match (command, payload) {
        (Some(command), Some(payload)) if !problems.has_errors() => Ok(Request {
            text: text.to_owned(),
            command,
            payload,
            variable_list,
        }),
        _ => Err(envelope_error(text, problems)),
    }
}

/// A member given twice anywhere in the request is refused (as in `.dsr` files), rather
/// than the last one silently winning (`"dryRun":true,"dryRun":false`). The walk keeps the
/// path as a stack of borrowed segments and writes it out only for a problem (each key cut
/// to 64 characters), so its time is linear in the body whatever the keys' lengths.
fn duplicates(root: &Spanned, problems: &mut Problems) {
    enum Seg<'a> {
        Key(&'a str),
        Index(usize),
    }
    fn path_of(segs: &[Seg<'_>]) -> Path {
        segs.iter().fold(Path::root(), |p, s| match s {
            Seg::Key(k) => p.key(&k.chars().take(64).collect::<String>()),
            Seg::Index(i) => p.index(*i),
        })
    }
    fn walk<'a>(v: &'a Spanned, segs: &mut Vec<Seg<'a>>, problems: &mut Problems) {
        match &v.value {
            Value::Object(members) => {
                let repeated = crate::dsr::value::repeated_keys(members);
                for (m, again) in members.iter().zip(repeated) {
                    segs.push(Seg::Key(&m.key));
                    if again && !problems.keeps_more() {
                        problems.count("request.duplicate_field", crate::dsr::Severity::Error);
                    } else if again {
                        let key: String = m.key.chars().take(64).collect();
                        problems.error(
                            "request.duplicate_field",
                            format!("field `{key}` is given twice"),
                            m.key_span,
                            &path_of(segs),
                        );
                    }
                    walk(&m.value, segs, problems);
                    segs.pop();
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    segs.push(Seg::Index(i));
                    walk(item, segs, problems);
                    segs.pop();
                }
            }
            _ => {}
        }
    }
    walk(root, &mut Vec::new(), problems);
}

fn envelope_error(text: &str, problems: Problems) -> ApiError {
    let details = details(text, problems);
    let first = details
        .first()
        .map(|d| d.message.clone())
        .unwrap_or_default();
    ApiError::client(
        StatusCode::BAD_REQUEST,
        "request.envelope",
        format!("the request is not a valid command: {first}"),
    )
    .with_details(details)
}

/// Reads the payload of `DeployRepository`.
///
/// # Errors
///
/// 400 naming every missing, mistyped or unknown field.
pub fn deploy_request(req: &Request) -> Result<DeployRequest, ApiError> {
    let mut problems = Problems::default();
    let ppath = Path::root().key("payload");
    let mut content = None;
    let mut options = deploy::Options::default();
    for m in members(&req.payload) {
        let path = ppath.key(&m.key);
        match m.key.as_str() {
            "content" => match &m.value.value {
                Value::String(s) => content = Some(s.clone()),
                other => problems.error(
                    "request.envelope",
                    format!("`content` must be a string holding the .dsr text, found {}", other.kind()),
                    m.value.span,
                    &path,
                ),
            },
            "deployOptions" => read_options(&m.value, &path, &mut options, &mut problems),
            other => problems.error(
                "request.envelope",
                format!("unknown field `{other}` in the DeployRepository payload; expected content, deployOptions"),
                m.key_span,
                &path,
            ),
        }
    }
    if content.is_none() && !members(&req.payload).iter().any(|m| m.key == "content") {
        problems.error(
            "request.envelope",
            "missing field `content` in the DeployRepository payload",
            req.payload.span,
            &ppath.key("content"),
        );
    }
    match content {
        Some(content) if !problems.has_errors() => Ok(DeployRequest { content, options }),
        _ => Err(envelope_error(&req.text, problems)),
    }
}

fn read_options(v: &Spanned, path: &Path, options: &mut deploy::Options, problems: &mut Problems) {
    match &v.value {
        Value::Null => return,
        Value::Object(_) => {}
        other => {
            problems.error(
                "request.envelope",
                format!("`deployOptions` must be an object, found {}", other.kind()),
                v.span,
                path,
            );
            return;
        }
    }
    for m in members(v) {
        let opath = path.key(&m.key);
        match m.key.as_str() {
            "validate" => {
                if let Some(b) = boolean(&m.value, &m.key, &opath, problems) {
                    options.validate = b;
                }
            }
            "dryRun" => {
                if let Some(b) = boolean(&m.value, &m.key, &opath, problems) {
                    options.dry_run = b;
                }
            }
            "intoFolder" => options.into_folder = folder_id(&m.value, &opath, problems),
            other => problems.error(
                "request.envelope",
                format!(
                    "unknown deploy option `{other}`; the options are validate, dryRun, intoFolder"
                ),
                m.key_span,
                &opath,
            ),
        }
    }
}

/// `true`, `false`, `"true"`, `"false"` (any case); `null` keeps the default.
fn boolean(v: &Spanned, key: &str, path: &Path, problems: &mut Problems) -> Option<bool> {
    match &v.value {
        Value::Bool(b) => Some(*b),
        Value::Null => None,
        Value::String(s) if s.eq_ignore_ascii_case("true") => Some(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Some(false),
        other => {
            let found = match other {
                Value::String(s) => format!("\"{s}\""),
                o => o.kind().to_owned(),
            };
            problems.error(
                "request.envelope",
                format!(
                    "option `{key}` must be true or false (or \"true\"/\"false\"), found {found}"
                ),
                v.span,
                path,
            );
            None
        }
    }
}

/// A positive folder id as a number or a string; `null`, `"null"` or `""` for none.
fn folder_id(v: &Spanned, path: &Path, problems: &mut Problems) -> Option<i64> {
    let parsed = match &v.value {
        Value::Null => return None,
        Value::Int(i) => Some(*i),
        Value::String(s) if s.trim().is_empty() || s.trim() == "null" => return None,
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    match parsed {
        Some(i) if i > 0 => Some(i),
        _ => {
            problems.error(
                "request.envelope",
                "option `intoFolder` must be the id of a folder (a positive integer) or null",
                v.span,
                path,
            );
            None
        }
    }
}
