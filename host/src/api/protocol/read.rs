//! The positional reader of a request: the spanned value tree of the body to a [`Command`],
//! every missing, mistyped, unknown or repeated field a [`Problem`](crate::dsr::Problem) with
//! its place, and reading goes on after one so that an answer lists them all.
//!
//! Values are read as leniently as SPEC 4.2 and the scripts need (ids and numbers as numbers
//! or strings, options as `true` or `"true"`), and no more: anything else is named with what
//! was found.

use crate::deploy;
use crate::dsr::value::{Member, Spanned, Value};
use crate::dsr::{Path, Problems, Severity, Span};
use crate::plan::Element;
use weft_protocol::commands::{
    AdvanceClock, BatchExecution, Command, DeployRepository, GetBatchInstance, GetDeployChange,
    GetSheet, HaltBatchInstance, ListBatchInstances, ListBatches, ListDeploys, ListHosts,
    ListPlugins, ListSheets, NextRuns, RestartBatchInstance, RunElements, Variable,
    WaitBatchInstance,
};

/// The code of a problem with a field of the request.
pub const ENVELOPE: &str = "request.envelope";
/// The code of a command this server does not know.
pub const UNKNOWN_COMMAND: &str = "request.unknown_command";
/// The code of a member given twice.
pub const DUPLICATE_FIELD: &str = "request.duplicate_field";

/// The code of a NUL character in a request's field or value.
pub const REQUEST_NUL: &str = "request.nul";

/// Reads a request `{command, payload, variableList?}`: the command, or `None` with the
/// problems in `problems` (a command this server does not know is one, coded
/// [`UNKNOWN_COMMAND`], and its payload is not read).
pub fn request(root: &Spanned, problems: &mut Problems) -> Option<Command> {
    duplicates(root, problems);
    // A document's own text is judged by the document reader, at its place in the document.
    problems.refuse_nul(root, &Path::root(), REQUEST_NUL, &|p| {
        p.as_str() == "payload.content"
    });
    let path = Path::root();
    let mut envelope = Fields::of(
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
    envelope.finish(&["command", "payload", "variableList"], problems);
    let (name, span, command_path) = command?;
    if !weft_protocol::COMMANDS.contains(&name.as_str()) {
        problems.error(
            UNKNOWN_COMMAND,
            format!(
                "unknown command `{}`; known commands: {}",
                cut(&name, 64),
                weft_protocol::COMMANDS.join(", ")
            ),
            span,
            &command_path,
        );
        return None;
    }
    let (payload, payload_path) = payload?;
    if name != "RunElements"
        && let Some((v, p)) = &variables
    {
        variable_list(v, p, problems);
    }
    let command = match name.as_str() {
        "DeployRepository" => {
            Command::DeployRepository(deploy_repository(payload, payload_path, problems)?)
        }
        "RunElements" => {
            let mut run = run_elements(payload, payload_path, problems);
            let vars = variables.map_or_else(Vec::new, |(v, p)| variable_list(v, &p, problems));
            if let Some(run) = &mut run {
                run.variables = vars;
            }
            Command::RunElements(run?)
        }
        "GetBatchInstance" => Command::GetBatchInstance(GetBatchInstance {
            batch_instance_id: instance_only(payload, payload_path, &name, problems)?,
        }),
        "HaltBatchInstance" => Command::HaltBatchInstance(HaltBatchInstance {
            batch_instance_id: instance_only(payload, payload_path, &name, problems)?,
        }),
        "RestartBatchInstance" => Command::RestartBatchInstance(RestartBatchInstance {
            batch_instance_id: instance_only(payload, payload_path, &name, problems)?,
        }),
        "WaitBatchInstance" => {
            Command::WaitBatchInstance(wait_instance(payload, payload_path, problems)?)
        }
        "ListBatchInstances" => {
            Command::ListBatchInstances(list_instances(payload, payload_path, problems)?)
        }
        "NextRuns" => Command::NextRuns(next_runs(payload, payload_path, problems)?),
        "ListPlugins" => {
            Fields::of(
                payload,
                payload_path,
                "the ListPlugins payload {}",
                problems,
            )?
            .finish(&[], problems);
            Command::ListPlugins(ListPlugins {})
        }
        "ListSheets" => {
            let mut fields = Fields::of(
                payload,
                payload_path,
                "the ListSheets payload {limit?}",
                problems,
            )?;
            let mut ok = true;
            let mut list = ListSheets::default();
            if let Some(n) = optional_whole(&mut fields, "limit", 1..=20_000, &mut ok, problems) {
                list.limit = n;
            }
            fields.finish(&["limit"], problems);
            Command::ListSheets(ok.then_some(list)?)
        }
        "GetSheet" => {
            let mut fields = Fields::of(
                payload,
                payload_path,
                "the GetSheet payload {sheetId}",
                problems,
            )?;
            let id = fields
                .required("sheetId", problems)
                .and_then(|(v, p)| whole(v, &p, "sheetId", i64::MIN..=i64::MAX, problems));
            fields.finish(&["sheetId"], problems);
            Command::GetSheet(GetSheet { sheet_id: id? })
        }
        "ListBatches" => {
            Fields::of(
                payload,
                payload_path,
                "the ListBatches payload {}",
                problems,
            )?
            .finish(&[], problems);
            Command::ListBatches(ListBatches {})
        }
        "ListDeploys" => Command::ListDeploys(list_deploys(payload, payload_path, problems)?),
        "GetDeployChange" => {
            let mut fields = Fields::of(
                payload,
                payload_path,
                "the GetDeployChange payload {historyId}",
                problems,
            )?;
            let id = fields
                .required("historyId", problems)
                .and_then(|(v, p)| whole(v, &p, "historyId", i64::MIN..=i64::MAX, problems));
            fields.finish(&["historyId"], problems);
            Command::GetDeployChange(GetDeployChange { history_id: id? })
        }
        "ListHosts" => {
            Fields::of(payload, payload_path, "the ListHosts payload {}", problems)?
                .finish(&[], problems);
            Command::ListHosts(ListHosts {})
        }
        "AdvanceClock" => Command::AdvanceClock(advance_clock(payload, payload_path, problems)?),
        // A name in COMMANDS without an arm here: refused, never read as another command.
        _ => {
            problems.error(
                UNKNOWN_COMMAND,
                format!("command `{name}` is listed but this server cannot read it"),
                span,
                &command_path,
            );
            return None;
        }
    };
    (!problems.has_errors()).then_some(command)
}

/// Reads `deployOptions` (also the client's `--option` text): `validate`, `dryRun`,
/// `intoFolder`; `null` keeps the defaults.
pub fn deploy_options(v: &Spanned, path: &Path, problems: &mut Problems) -> deploy::Options {
    let mut options = deploy::Options::default();
    if matches!(v.value, Value::Null) {
        return options;
    }
    let Some(mut fields) = Fields::of(v, path.clone(), "`deployOptions`", problems) else {
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
        &["validate", "dryRun", "intoFolder"],
        "unknown deploy option `{}`; the options are validate, dryRun, intoFolder",
        problems,
    );
    options
}

fn deploy_repository(
    payload: &Spanned,
    path: Path,
    problems: &mut Problems,
) -> Option<DeployRepository> {
    let mut fields = Fields::of(payload, path, "the DeployRepository payload", problems)?;
    let content = fields
        .required("content", problems)
        .and_then(|(v, p)| match &v.value {
            Value::String(s) => Some(s.clone()),
            other => {
                problems.error(
                    ENVELOPE,
                    format!(
                        "`content` must be a string holding the .dsr text, found {}",
                        other.kind()
                    ),
                    v.span,
                    &p,
                );
                None
            }
        });
    let deploy_options = fields
        .optional("deployOptions")
        .map(|(v, p)| deploy_options(v, &p, problems))
        .unwrap_or_default();
    fields.finish(&["content", "deployOptions"], problems);
    Some(DeployRepository {
        content: content?,
        deploy_options,
    })
}

fn run_elements(payload: &Spanned, path: Path, problems: &mut Problems) -> Option<RunElements> {
    let mut fields = Fields::of(payload, path, "the RunElements payload", problems)?;
    let execution = fields.required("batchExecution", problems);
    fields.finish(&["batchExecution"], problems);
    let (v, path) = execution?;
    let mut fields = Fields::of(
        v,
        path,
        "`batchExecution` {batchName, user, elementList}",
        problems,
    )?;
    let batch_name = fields
        .required("batchName", problems)
        .and_then(|(v, p)| text(v, &p, "batchName", problems));
    let user = fields
        .required("user", problems)
        .and_then(|(v, p)| text(v, &p, "user", problems));
    let elements = fields
        .required("elementList", problems)
        .and_then(|(v, p)| element_list(v, &p, problems));
    fields.finish(&["batchName", "user", "elementList"], problems);
    Some(RunElements {
        batch_execution: BatchExecution {
            batch_name: batch_name?,
            user: user?,
            element_list: elements?,
        },
        variables: Vec::new(),
    })
}

fn element_list(v: &Spanned, path: &Path, problems: &mut Problems) -> Option<Vec<Element>> {
    let Value::Array(items) = &v.value else {
        wrong(v, path, "`elementList` must be an array", problems);
        return None;
    };
    if items.is_empty() {
        problems.error(
            ENVELOPE,
            "elementList is empty: name at least one sheet (S), action (A) or folder (F)",
            v.span,
            path,
        );
        return None;
    }
    let mut elements = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let ipath = path.index(i);
        let Some(mut fields) =
            Fields::of(item, ipath, "an element {elementType, elementId}", problems)
        else {
            continue;
        };
        let kind = fields
            .required("elementType", problems)
            .and_then(|(v, p)| match &v.value {
                Value::String(s) if matches!(s.as_str(), "S" | "A" | "F") => s.chars().next(),
                _ => {
                    wrong(
                        v,
                        &p,
                        "`elementType` must be S (sheet), A (action) or F (folder)",
                        problems,
                    );
                    None
                }
            });
        let id = fields
            .required("elementId", problems)
            .and_then(|(v, p)| whole(v, &p, "elementId", i64::MIN..=i64::MAX, problems));
        fields.finish(&["elementType", "elementId"], problems);
        if let (Some(kind), Some(id)) = (kind, id) {
            elements.push(Element { kind, id });
        }
    }
    Some(elements)
}

fn variable_list(v: &Spanned, path: &Path, problems: &mut Problems) -> Vec<Variable> {
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
        let Some(mut fields) = Fields::of(
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
        fields.finish(&["variableName", "variableType", "variableValue"], problems);
        if let (Some(name), Some(value)) = (name, value) {
            variables.push(Variable { name, kind, value });
        }
    }
    variables
}

fn instance_only(
    payload: &Spanned,
    path: Path,
    command: &str,
    problems: &mut Problems,
) -> Option<i64> {
    let what = format!("the {command} payload {{batchInstanceId}}");
    let mut fields = Fields::of(payload, path, what, problems)?;
    let id = fields
        .required("batchInstanceId", problems)
        .and_then(|(v, p)| whole(v, &p, "batchInstanceId", i64::MIN..=i64::MAX, problems));
    fields.finish(&["batchInstanceId"], problems);
    id
}

fn wait_instance(
    payload: &Spanned,
    path: Path,
    problems: &mut Problems,
) -> Option<WaitBatchInstance> {
    let mut fields = Fields::of(
        payload,
        path,
        "the WaitBatchInstance payload {batchInstanceId, timeoutSeconds?, changedFrom?}",
        problems,
    )?;
    let id = fields
        .required("batchInstanceId", problems)
        .and_then(|(v, p)| whole(v, &p, "batchInstanceId", i64::MIN..=i64::MAX, problems));
    let timeout = fields.optional("timeoutSeconds").and_then(|(v, p)| {
        let seconds = match &v.value {
            Value::Null => return None,
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        let ok = seconds.filter(|t| t.is_finite() && *t >= 0.0);
        if ok.is_none() {
            wrong(
                v,
                &p,
                "`timeoutSeconds` must be a number of seconds (0 or more)",
                problems,
            );
        }
        ok
    });
    let changed_from = match fields.optional("changedFrom") {
        Some((v, _)) if matches!(v.value, Value::Null) => Some(None),
        Some((v, p)) => match text(v, &p, "changedFrom", problems) {
            Some(t) if t.len() <= 64 => Some(Some(t)),
            Some(_) => {
                wrong(
                    v,
                    &p,
                    "`changedFrom` is the `version` of an earlier answer (at most 64 characters)",
                    problems,
                );
                None
            }
            None => None,
        },
        None => Some(None),
    };
    fields.finish(
        &["batchInstanceId", "timeoutSeconds", "changedFrom"],
        problems,
    );
    Some(WaitBatchInstance {
        batch_instance_id: id?,
        timeout_seconds: timeout,
        changed_from: changed_from?,
    })
}

fn list_instances(
    payload: &Spanned,
    path: Path,
    problems: &mut Problems,
) -> Option<ListBatchInstances> {
    let mut fields = Fields::of(
        payload,
        path,
        "the ListBatchInstances payload {limit?, state?, name?, before?, batchId?}",
        problems,
    )?;
    let mut list = ListBatchInstances::default();
    let mut ok = true;
    let limit = optional_whole(&mut fields, "limit", 1..=1000, &mut ok, problems);
    list.limit = limit.unwrap_or(list.limit);
    if let Some((v, p)) = fields.optional("state")
        && !matches!(v.value, Value::Null)
    {
        let word = text(v, &p, "state", problems);
        match word
            .as_deref()
            .map(crate::repo::model::InstanceState::from_word)
        {
            Some(Some(state)) => list.state = Some(state),
            Some(None) => {
                problems.error(
                    ENVELOPE,
                    format!(
                        "`state` must be one of waiting, running, finished, failed, halted, interrupted, not `{}`",
                        word.unwrap_or_default().chars().take(40).collect::<String>()
                    ),
                    v.span,
                    &p,
                );
                ok = false;
            }
            None => ok = false,
        }
    }
    if let Some((v, p)) = fields.optional("name")
        && !matches!(v.value, Value::Null)
    {
        match text(v, &p, "name", problems) {
            Some(n) if n.chars().count() <= 200 => list.name = Some(n).filter(|n| !n.is_empty()),
            Some(_) => {
                problems.error(ENVELOPE, "`name` is at most 200 characters", v.span, &p);
                ok = false;
            }
            None => ok = false,
        }
    }
    list.before = optional_whole(&mut fields, "before", 1..=i64::MAX, &mut ok, problems);
    list.batch_id = optional_whole(
        &mut fields,
        "batchId",
        i64::MIN..=i64::MAX,
        &mut ok,
        problems,
    );
    fields.finish(&["limit", "state", "name", "before", "batchId"], problems);
    ok.then_some(list)
}

fn list_deploys(payload: &Spanned, path: Path, problems: &mut Problems) -> Option<ListDeploys> {
    let mut fields = Fields::of(
        payload,
        path,
        "the ListDeploys payload {limit?, before?, changes?}",
        problems,
    )?;
    let mut list = ListDeploys::default();
    let mut ok = true;
    if let Some(n) = optional_whole(&mut fields, "limit", 1..=200, &mut ok, problems) {
        list.limit = n;
    }
    if let Some(n) = optional_whole(&mut fields, "changes", 0..=200, &mut ok, problems) {
        list.changes = n;
    }
    list.before = optional_whole(&mut fields, "before", 1..=i64::MAX, &mut ok, problems);
    fields.finish(&["limit", "before", "changes"], problems);
    ok.then_some(list)
}

/// The optional whole number `key` in `range`; `None` when it is absent or null, or wrong
/// (then the problem is said and `ok` cleared).
fn optional_whole(
    fields: &mut Fields<'_>,
    key: &str,
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

fn next_runs(payload: &Spanned, path: Path, problems: &mut Problems) -> Option<NextRuns> {
    let mut fields = Fields::of(
        payload,
        path,
        "the NextRuns payload {batchId, count?}",
        problems,
    )?;
    let id = fields
        .required("batchId", problems)
        .and_then(|(v, p)| whole(v, &p, "batchId", i64::MIN..=i64::MAX, problems));
    let count = match fields.optional("count") {
        Some((v, p)) if !matches!(v.value, Value::Null) => {
            whole(v, &p, "count", 1..=1000, problems).map(|n| n as usize)
        }
        _ => Some(10),
    };
    fields.finish(&["batchId", "count"], problems);
    Some(NextRuns {
        batch_id: id?,
        count: count?,
    })
}

fn advance_clock(payload: &Spanned, path: Path, problems: &mut Problems) -> Option<AdvanceClock> {
    let mut fields = Fields::of(
        payload,
        path.clone(),
        "the AdvanceClock payload {seconds} or {to}",
        problems,
    )?;
    let seconds = fields.optional("seconds");
    let to = fields.optional("to");
    fields.finish(&["seconds", "to"], problems);
    match (seconds, to) {
        (Some((v, p)), None) => Some(AdvanceClock::By {
            seconds: whole(v, &p, "seconds", 0..=AdvanceClock::MAX_SECONDS, problems)?,
        }),
        (None, Some((v, p))) => {
            let to = text(v, &p, "to", problems)?;
            // The zone matters only for the wall-clock form, not for its syntax.
            if let Err(e) = crate::sched::clock::parse_timestamp(&to, chrono_tz::UTC) {
                problems.error(ENVELOPE, format!("`to`: {e}"), v.span, &p);
                return None;
            }
            Some(AdvanceClock::To { to })
        }
        _ => {
            problems.error(
                ENVELOPE,
                "the AdvanceClock payload is {seconds} or {to}: seconds a whole number, to a timestamp (RFC 3339, or YYYY-MM-DD HH:MM[:SS] in the service time zone)",
                payload.span,
                &path,
            );
            None
        }
    }
}

/// An object of the request being read: each member is taken at most once, and those not
/// taken are unknown fields.
struct Fields<'a> {
    members: &'a [Member],
    used: Vec<bool>,
    span: Span,
    path: Path,
    what: String,
}

impl<'a> Fields<'a> {
    /// The object `v`, or `None` after a problem saying it is not one.
    fn of(
        v: &'a Spanned,
        path: Path,
        what: impl Into<String>,
        problems: &mut Problems,
    ) -> Option<Self> {
        let what = what.into();
        let Value::Object(members) = &v.value else {
            problems.error(
                ENVELOPE,
                format!("{what} must be an object, found {}", v.value.kind()),
                v.span,
                &path,
            );
            return None;
        };
        Some(Fields {
            members,
            used: vec![false; members.len()],
            span: v.span,
            path,
            what,
        })
    }

    /// Member `key` (its first occurrence; a repeated one is a problem of its own).
    fn optional(&mut self, key: &str) -> Option<(&'a Spanned, Path)> {
        let i = self.members.iter().position(|m| m.key == key)?;
        self.used[i] = true;
        Some((&self.members[i].value, self.path.key(key)))
    }

    /// Member `key`, or a problem at the object saying it is missing.
    fn required(&mut self, key: &str, problems: &mut Problems) -> Option<(&'a Spanned, Path)> {
        let found = self.optional(key);
        if found.is_none() {
            problems.error(
                ENVELOPE,
                format!("missing field `{key}` in {}", self.what),
                Span::new(self.span.start as usize, self.span.start as usize + 1),
                &self.path.key(key),
            );
        }
        found
    }

    /// Each member not taken is an unknown field.
    fn finish(self, allowed: &[&str], problems: &mut Problems) {
        let what = self.what.clone();
        let expected = allowed.join(", ");
        self.finish_with(allowed, problems, |key| {
            format!("unknown field `{key}` in {what}; expected {expected}")
        });
    }

    /// As [`Fields::finish`], the message `template` with `{}` for the key.
    fn finish_as(self, allowed: &[&str], template: &str, problems: &mut Problems) {
        self.finish_with(allowed, problems, |key| template.replace("{}", key));
    }

    fn finish_with(
        self,
        allowed: &[&str],
        problems: &mut Problems,
        message: impl Fn(&str) -> String,
    ) {
        // A repeated member is a problem of its own (`duplicates`), not a second unknown one.
        let repeated = crate::dsr::value::repeated_keys(self.members);
        for ((m, used), again) in self.members.iter().zip(&self.used).zip(repeated) {
            if *used || again || allowed.contains(&m.key.as_str()) {
                continue;
            }
            let key = cut(&m.key, 64);
            let mut text = message(&key);
            if let Some(meant) = crate::dsr::read::typo_of(&m.key, allowed) {
                text.push_str(&format!("; did you mean `{meant}`?"));
            }
            problems.error(ENVELOPE, text, m.key_span, &self.path.key(&key));
        }
    }
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
                let repeated = crate::dsr::value::repeated_keys(members);
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
fn wrong(v: &Spanned, path: &Path, message: &str, problems: &mut Problems) {
    problems.error(
        ENVELOPE,
        format!("{message}, found {}", found(v)),
        v.span,
        path,
    );
}

/// What a value is, for a message: a scalar as written (cut), a container by its kind.
fn found(v: &Spanned) -> String {
    match &v.value {
        Value::String(s) => format!("\"{}\"", cut(s, 40)),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Bool(b) => b.to_string(),
        other => other.kind().to_owned(),
    }
}

fn cut(s: &str, most: usize) -> String {
    s.chars().take(most).collect()
}

/// A string.
fn text(v: &Spanned, path: &Path, key: &str, problems: &mut Problems) -> Option<String> {
    match &v.value {
        Value::String(s) => Some(s.clone()),
        _ => {
            wrong(v, path, &format!("`{key}` must be a string"), problems);
            None
        }
    }
}

/// A scalar as text: variable values may come as strings, numbers or booleans.
fn scalar(v: &Spanned) -> Option<String> {
    match &v.value {
        Value::String(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        Value::Float(f) => Some(f.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A whole number in `range`, as a number or a string of digits.
fn whole(
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
