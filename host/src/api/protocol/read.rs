//! The positional reader's parts for requests: `Fields`, an object whose members are
//! taken one by one (those left are unknown fields), and readers of the values a payload
//! holds, each a [`Problem`](weft_dsr::Problem) with its place when wrong, so that reading
//! goes on and an answer lists every problem. The envelope is read by `api::envelope`, each
//! payload by its command's file in `api::commands`.
//!
//! Values are read as leniently as SPEC 4.2 and the scripts need (ids and numbers as numbers
//! or strings, options as `true` or `"true"`), and no more: anything else is named with what
//! was found.

use weft_dsr::fields::{Dialect, Fields};
use weft_dsr::value::{Spanned, Value};
use weft_dsr::{Path, Problems, Severity};
use weft_engine::deploy;
use weft_protocol::commands::Variable;

/// The code of a problem with a field of the request.
pub const ENVELOPE: &str = weft_dsr::fields::REQUEST_CODE;
/// The code of a command this server does not know.
pub const UNKNOWN_COMMAND: &str = "request.unknown_command";
/// The code of a member given twice.
pub const DUPLICATE_FIELD: &str = "request.duplicate_field";

/// The code of a NUL character in a request's field or value.
pub const REQUEST_NUL: &str = "request.nul";

/// Reads `deployOptions` (also the client's `--option` text): `validate`, `dryRun`,
/// `intoFolder`; `null` keeps the defaults.
pub fn deploy_options(v: &Spanned, path: &Path, problems: &mut Problems) -> deploy::Options {
    let mut options = deploy::Options::default();
    if matches!(v.value, Value::Null) {
        return options;
    }
    let Some(mut fields) = object(v, path.clone(), "`deployOptions`", problems) else {
        return options;
    };
    for (key, slot) in [
        ("validate", &mut options.validate),
        ("dryRun", &mut options.dry_run),
    ] {
        if let Some((v, p)) = fields.optional(key)
            && let Some(b) = boolean(v, &p, key, problems)
        {
            *slot = b;
        }
    }
    if let Some((v, p)) = fields.optional("intoFolder") {
        options.into_folder = folder_id(v, &p, problems);
    }
    fields.finish_as(
        "unknown deploy option `{}`; the options are validate, dryRun, intoFolder",
        problems,
    );
    options
}

pub(crate) fn variable_list(v: &Spanned, path: &Path, problems: &mut Problems) -> Vec<Variable> {
    let items = match &v.value {
        Value::Null => return Vec::new(),
        Value::Array(items) => items,
        _ => {
            wrong(
                v,
                path,
                "`variableList` must be an array of {variableName, variableType, variableValue}",
                problems,
            );
            return Vec::new();
        }
    };
    let mut variables = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Some(mut fields) = object(
            item,
            path.index(i),
            "a variable {variableName, variableType, variableValue}",
            problems,
        ) else {
            continue;
        };
        let name = fields
            .required("variableName", problems)
            .and_then(|(v, p)| match text(v, &p, "variableName", problems) {
                Some(n) if n.trim().is_empty() => {
                    problems.error(ENVELOPE, "`variableName` is empty", v.span, &p);
                    None
                }
                n => n,
            });
        let kind = fields
            .optional("variableType")
            .and_then(|(v, p)| match &v.value {
                Value::Null => None,
                _ => text(v, &p, "variableType", problems),
            });
        let value = fields
            .required("variableValue", problems)
            .and_then(|(v, p)| match scalar(v) {
                Some(s) => Some(s),
                None => {
                    wrong(
                        v,
                        &p,
                        "`variableValue` must be a string, a number or a boolean",
                        problems,
                    );
                    None
                }
            });
        fields.finish(problems);
        if let (Some(name), Some(value)) = (name, value) {
            // What a run cannot set (a built-in) or cannot compute (a `${...}` of its value),
            // said at the value, before anything is stored.
            if let Some(why) = weft_core::variables::refused(&name, &value) {
                let at = match &item.value {
                    Value::Object(members) => members
                        .iter()
                        .find(|m| m.key == "variableValue")
                        .map_or(item.span, |m| m.value.span),
                    _ => item.span,
                };
                problems.error(ENVELOPE, why, at, &path.index(i).key("variableValue"));
                continue;
            }
            variables.push(Variable { name, kind, value });
        }
    }
    variables
}

/// The optional whole number `key` in `range`; `None` when it is absent or null, or wrong
/// (then the problem is said and `ok` cleared).
pub(crate) fn optional_whole(
    fields: &mut Fields<'_>,
    key: &'static str,
    range: std::ops::RangeInclusive<i64>,
    ok: &mut bool,
    problems: &mut Problems,
) -> Option<i64> {
    let (v, p) = fields
        .optional(key)
        .filter(|(v, _)| !matches!(v.value, Value::Null))?;
    let n = whole(v, &p, key, range, problems);
    *ok &= n.is_some();
    n
}

/// The payload `{batchInstanceId}` of `command`: the id.
pub(crate) fn instance_id(
    payload: &Spanned,
    path: Path,
    command: &str,
    problems: &mut Problems,
) -> Option<i64> {
    let what = format!("the {command} payload {{batchInstanceId}}");
    let mut fields = object(payload, path, what, problems)?;
    let id = fields
        .required("batchInstanceId", problems)
        .and_then(|(v, p)| whole(v, &p, "batchInstanceId", i64::MIN..=i64::MAX, problems));
    fields.finish(problems);
    id
}

/// The object `v` of a request at `path`, named `what` in messages, read by the request's
/// rules (`Dialect::Request`): an unknown field is refused.
pub(crate) fn object<'a>(
    v: &'a Spanned,
    path: Path,
    what: impl Into<std::borrow::Cow<'a, str>>,
    problems: &mut Problems,
) -> Option<Fields<'a>> {
    Fields::of(v, path, what, Dialect::Request, problems)
}

/// A member given twice anywhere in the request is refused (as in `.dsr` files), rather
/// than the last one silently winning (`"dryRun":true,"dryRun":false`). The walk keeps the
/// path as a stack of borrowed segments and writes it out only for a problem (each key cut
/// to 64 characters), so its time is linear in the body whatever the keys' lengths.
pub fn duplicates(root: &Spanned, problems: &mut Problems) {
    enum Seg<'a> {
        Key(&'a str),
        Index(usize),
    }
    fn path_of(segs: &[Seg<'_>]) -> Path {
        segs.iter().fold(Path::root(), |p, s| match s {
            Seg::Key(k) => p.key(&cut(k, 64)),
            Seg::Index(i) => p.index(*i),
        })
    }
    fn walk<'a>(v: &'a Spanned, segs: &mut Vec<Seg<'a>>, problems: &mut Problems) {
        match &v.value {
            Value::Object(members) => {
                let repeated = weft_dsr::value::repeated_keys(members);
                for (m, again) in members.iter().zip(repeated) {
                    segs.push(Seg::Key(&m.key));
                    if again && !problems.keeps_more() {
                        problems.count(DUPLICATE_FIELD, Severity::Error);
                    } else if again {
                        problems.error(
                            DUPLICATE_FIELD,
                            format!("field `{}` is given twice", cut(&m.key, 64)),
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

/// A problem at `v`: `message`, and what was found.
pub(crate) fn wrong(v: &Spanned, path: &Path, message: &str, problems: &mut Problems) {
    problems.error(
        ENVELOPE,
        format!("{message}, found {}", found(v)),
        v.span,
        path,
    );
}

/// What a value is, for a message: a scalar as written (cut, control characters escaped),
/// a container by its kind.
fn found(v: &Spanned) -> String {
    match &v.value {
        Value::String(s) => format!("\"{}\"", cut(s, 40).escape_debug()),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Bool(b) => b.to_string(),
        other => other.kind().to_owned(),
    }
}

pub(crate) use weft_dsr::fields::cut;

/// A string.
pub(crate) fn text(v: &Spanned, path: &Path, key: &str, problems: &mut Problems) -> Option<String> {
    match &v.value {
        Value::String(s) => Some(s.clone()),
        _ => {
            wrong(v, path, &format!("`{key}` must be a string"), problems);
            None
        }
    }
}

/// A scalar as text: variable values may come as strings, numbers or booleans.
pub(crate) fn scalar(v: &Spanned) -> Option<String> {
    match &v.value {
        Value::String(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        Value::Float(f) => Some(f.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A whole number in `range`, as a number or a string of digits.
pub(crate) fn whole(
    v: &Spanned,
    path: &Path,
    key: &str,
    range: std::ops::RangeInclusive<i64>,
    problems: &mut Problems,
) -> Option<i64> {
    let n = match &v.value {
        Value::Int(i) => Some(*i),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    match n {
        Some(n) if range.contains(&n) => Some(n),
        _ => {
            let expected = if *range.start() == i64::MIN && *range.end() == i64::MAX {
                format!("`{key}` must be a whole number")
            } else {
                format!(
                    "`{key}` must be a whole number from {} to {}",
                    range.start(),
                    range.end()
                )
            };
            wrong(v, path, &expected, problems);
            None
        }
    }
}

/// `true`, `false`, `"true"`, `"false"` (any case); `null` keeps the default.
/// A payload's switch `key`: `true` or `false` (or their text); `null` is `false`.
pub(crate) fn flag(v: &Spanned, path: &Path, key: &str, problems: &mut Problems) -> Option<bool> {
    match &v.value {
        Value::Null => Some(false),
        _ => boolean(v, path, key, problems),
    }
}

fn boolean(v: &Spanned, path: &Path, key: &str, problems: &mut Problems) -> Option<bool> {
    match &v.value {
        Value::Bool(b) => Some(*b),
        Value::Null => None,
        Value::String(s) if s.eq_ignore_ascii_case("true") => Some(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Some(false),
        _ => {
            wrong(
                v,
                path,
                &format!("option `{key}` must be true or false (or \"true\"/\"false\")"),
                problems,
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
            wrong(
                v,
                path,
                "option `intoFolder` must be the id of a folder (a positive integer) or null",
                problems,
            );
            None
        }
    }
}

/// A time as the repository stores it: a day (its midnight), an ISO 8601 time in UTC, or a
/// time as the repository writes it (`YYYY-MM-DD HH:MM:SS[.mmm]`, UTC).
pub(crate) fn utc_time(t: &str) -> Option<String> {
    if let Ok(day) = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return Some(format!("{day} 00:00:00"));
    }
    if let Some(stored) = weft_repo::parse_stored_time(t) {
        return Some(if t.contains('.') {
            weft_repo::stored_time(stored)
        } else {
            stored.format("%Y-%m-%d %H:%M:%S").to_string()
        });
    }
    chrono::DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|d| weft_repo::stored_time(d.with_timezone(&chrono::Utc)))
}

/// The required field `batch`: a batch's id or name.
pub(crate) fn batch_name(
    fields: &mut weft_dsr::fields::Fields<'_>,
    problems: &mut Problems,
) -> Option<weft_protocol::commands::ObjectName> {
    use weft_protocol::commands::ObjectName;
    fields
        .required("batch", problems)
        .and_then(|(v, p)| match &v.value {
            Value::Int(id) => Some(ObjectName::Id(*id)),
            Value::String(s) if !s.trim().is_empty() => Some(ObjectName::Name(s.clone())),
            _ => {
                wrong(v, &p, "`batch` is a batch's id or name", problems);
                None
            }
        })
}
