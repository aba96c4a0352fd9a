//! Reading a request body into a [`Command`]: UTF-8, then strict JSON, then the envelope
//! `{command, payload, variableList?}` and the command's payload by its reader in
//! `api::commands`, so that every problem of the body is answered at once with its line,
//! column and path.

use super::commands;
use super::error::ApiError;
use super::protocol::read::{
    ENVELOPE, REQUEST_NUL, UNKNOWN_COMMAND, cut, duplicates, object, text, variable_list,
};
use weft_dsr::value::Spanned;
use weft_dsr::{Detail, LineIndex, Path, Problems, json};
use weft_protocol::Severity;
use weft_protocol::commands::{COMMANDS, Command};

/// Reads the command of `body`, asking `gate` whether the caller may send it (by its name
/// and right) before its payload is read.
///
/// # Errors
///
/// What `gate` answers (403); [`ApiError::Request`] (400) for a body that is not UTF-8, not JSON, not an envelope, a
/// command this server does not know, or a payload with missing, mistyped, unknown or
/// repeated fields; each problem is a detail with its place.
pub fn read(
    body: &[u8],
    gate: &dyn Fn(&str, weft_protocol::Right) -> Result<(), ApiError>,
) -> Result<Command, ApiError> {
    let text = match std::str::from_utf8(body) {
        Ok(t) => t,
        Err(e) => {
            let valid = &body[..e.valid_up_to()];
            // The prefix is valid UTF-8 by definition of `valid_up_to`.
            let prefix = std::str::from_utf8(valid).unwrap_or_default();
            let pos = LineIndex::new(prefix).position(prefix.len() as u32);
            return Err(ApiError::Request {
                code: "request.encoding",
                message: format!(
                    "the request body is not UTF-8: invalid byte at {pos} (byte offset {})",
                    e.valid_up_to()
                ),
                details: vec![Detail {
                    severity: Severity::Error,
                    code: "request.encoding".to_owned(),
                    message: format!("invalid UTF-8 at byte offset {}", e.valid_up_to()),
                    file: None,
                    line: Some(pos.line),
                    column: Some(pos.column),
                    path: String::new(),
                    more: None,
                }],
            });
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
        ApiError::Request {
            code,
            message: format!("the request body is not valid JSON: {} at {pos}", e.message),
            details: vec![Detail {
                severity: Severity::Error,
                code: code.to_owned(),
                message: e.message,
                file: None,
                line: Some(pos.line),
                column: Some(pos.column),
                path: String::new(),
                more: None,
            }],
        }
    })?;
    // The caller's right to the command, before its payload is read.
    if let weft_dsr::value::Value::Object(members) = &root.value {
        for m in members.iter().filter(|m| m.key == "command") {
            if let weft_dsr::value::Value::String(name) = &m.value.value
                && let Some((_, right)) = weft_protocol::RIGHTS.iter().find(|(n, _)| n == name)
            {
                gate(name, *right)?;
            }
        }
    }
    let mut problems = Problems::default();
    match request(&root, &mut problems) {
        Some(command) if !problems.has_errors() => Ok(command),
        _ => Err(refusal(text, problems)),
    }
}

/// Reads a request `{command, payload, variableList?}`: the command, or `None` with the
/// problems in `problems` (a command this server does not know is one, coded
/// [`UNKNOWN_COMMAND`], and its payload is not read).
pub fn request(root: &Spanned, problems: &mut Problems) -> Option<Command> {
    duplicates(root, problems);
    // A document's own text is judged by the document reader, at its place in the document.
    problems.refuse_nul(root, REQUEST_NUL, &["payload", "content"]);
    let path = Path::root();
    let mut envelope = object(
        root,
        path.clone(),
        "the request {command, payload, variableList?}",
        problems,
    )?;
    let command = envelope
        .required("command", problems)
        .and_then(|(v, p)| text(v, &p, "command", problems).map(|t| (t, v.span, p)));
    let payload = envelope.required("payload", problems);
    let variables = envelope.optional("variableList");
    envelope.finish(problems);
    let (name, span, command_path) = command?;
    if !COMMANDS.contains(&name.as_str()) {
        problems.error(
            UNKNOWN_COMMAND,
            format!(
                "unknown command `{}`; known commands: {}",
                cut(&name, 64),
                COMMANDS.join(", ")
            ),
            span,
            &command_path,
        );
        return None;
    }
    // Read for every command (its problems are the request's); only RunElements takes it.
    let variables = variables.map_or_else(Vec::new, |(v, p)| variable_list(v, &p, problems));
    let (payload, payload_path) = payload?;
    let command = commands::read(
        &name,
        commands::Payload {
            value: payload,
            path: payload_path,
            variables,
        },
        problems,
    )?;
    (!problems.has_errors()).then_some(command)
}

/// The answer to a request with problems: `request.unknown_command` when it names a command
/// this server does not know, else `request.envelope`, the first problem in the message.
fn refusal(text: &str, problems: Problems) -> ApiError {
    let details = problems.into_details(&LineIndex::new(text));
    let unknown = details.iter().find(|d| d.code == UNKNOWN_COMMAND);
    let (code, message) = match unknown {
        Some(d) => (UNKNOWN_COMMAND, d.message.clone()),
        None => {
            let first = details
                .first()
                .map_or_else(String::new, |d| match (d.line, d.column) {
                    (Some(l), Some(c)) => format!("{} (at {l}:{c})", d.message),
                    _ => d.message.clone(),
                });
            let more = details
                .iter()
                .map(|d| d.more.unwrap_or(1))
                .sum::<usize>()
                .saturating_sub(1);
            let more = match more {
                0 => String::new(),
                1 => "; and 1 more problem".to_owned(),
                n => format!("; and {n} more problems"),
            };
            (
                ENVELOPE,
                format!("the request is not a valid command: {first}{more}"),
            )
        }
    };
    ApiError::Request {
        code,
        message,
        details,
    }
}
