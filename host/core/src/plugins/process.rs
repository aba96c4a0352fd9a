//! Process modules: action modules that are programs in any language, found as folders of
//! `INSTALL/modules` and `HOME/modules` holding a manifest, [`MANIFEST`] (the module's
//! name, attributes and command). The host speaks JSON with such a program over its
//! standard input and output, one request per process (docs/process-modules.md, with a JSON
//! Schema in docs/process-module.schema.json): `validate` at deploy (problems with byte
//! offsets, the tables the action reads), `run` at run time (the action, its variables and
//! the key file entries of its connections; the answer carries its state, counts and
//! messages). The program runs in a process group of its own, which a timeout or a halt
//! kills; what it writes to stderr is kept for the error of a crash.

use serde::Deserialize;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use weft_sdk::{
    ActionModule, AttributeKind, AttributeSpec, AttributeValue, ModuleInfo, PluginError,
    PluginResult, Problem, RunContext, RunOutcome, TableName, ValidateInput, ValidateOutput,
};

/// The manifest's file name inside a module's folder.
pub const MANIFEST: &str = "weft-module.json";

/// The protocol version of the requests this host sends.
pub const PROTOCOL: u32 = 1;

/// The largest answer a module may write, in bytes.
pub const MAX_ANSWER: usize = 16 * 1024 * 1024;

/// How long a `validate` request may take.
pub const VALIDATE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a `run` request may take unless the manifest says otherwise.
pub const DEFAULT_RUN_TIMEOUT_SECONDS: u64 = 3600;

/// The longest `timeoutSeconds` (a week).
pub const MAX_RUN_TIMEOUT_SECONDS: u64 = 7 * 86_400;

/// How much of stderr's end an error names.
const STDERR_TAIL: usize = 2_000;

/// A module's manifest, as written.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    /// The module's name, as actions name it.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// The program and its arguments; a program with a `/` is relative to the folder.
    pub command: Vec<String>,
    /// How many sources an action may have: `[min, max]`.
    #[serde(default = "any_number")]
    pub sources: [u32; 2],
    /// How many targets: `[min, max]`.
    #[serde(default = "any_number")]
    pub targets: [u32; 2],
    /// The attributes it takes.
    #[serde(default)]
    pub attributes: Vec<ManifestAttribute>,
    /// How long a run may take, in seconds.
    #[serde(default)]
    pub timeout_seconds: Option<u64>,
}

fn any_number() -> [u32; 2] {
    [0, u32::MAX]
}

/// An attribute of a manifest.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ManifestAttribute {
    /// Its name.
    pub name: String,
    /// `boolean`, `integer` or `string`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its default, as text.
    #[serde(default)]
    pub default: Option<String>,
    /// Whether an action must write it.
    #[serde(default)]
    pub required: bool,
    /// What it is for.
    #[serde(default)]
    pub description: String,
}

/// A module found in a folder: its manifest and where it is.
#[derive(Debug, Clone)]
pub struct ProcessModule {
    /// The manifest.
    pub manifest: Manifest,
    /// The module's folder (the program's working directory).
    pub dir: PathBuf,
}

/// Reads the manifest in `dir`.
///
/// # Errors
///
/// Why it cannot be used, in one line.
pub fn read(dir: &Path) -> Result<ProcessModule, String> {
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read it: {e}"))?;
    let manifest: Manifest =
        serde_json::from_str(&text).map_err(|e| format!("it is not a valid manifest: {e}"))?;
    if manifest.name.is_empty()
        || !manifest
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(format!(
            "`name` must be letters, digits and `_`, not `{}`",
            manifest.name
        ));
    }
    let Some(program) = manifest.command.first().filter(|p| !p.is_empty()) else {
        return Err("`command` names no program".to_owned());
    };
    if program.contains('/') && !dir.join(program).is_file() {
        return Err(format!(
            "its program {} does not exist",
            dir.join(program).display()
        ));
    }
    if !program.contains('/')
        && !std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()))
    {
        return Err(format!("its program `{program}` is not on PATH"));
    }
    if let Some(t) = manifest.timeout_seconds
        && !(1..=MAX_RUN_TIMEOUT_SECONDS).contains(&t)
    {
        return Err(format!(
            "`timeoutSeconds` must be from 1 to {MAX_RUN_TIMEOUT_SECONDS}, not {t}"
        ));
    }
    for a in &manifest.attributes {
        if !matches!(a.kind.as_str(), "boolean" | "integer" | "string") {
            return Err(format!(
                "attribute `{}` has type `{}`; the types are boolean, integer, string",
                a.name, a.kind
            ));
        }
    }
    Ok(ProcessModule {
        manifest,
        dir: dir.to_path_buf(),
    })
}

/// The module folders of `dirs` that hold a manifest, each folder's in name order.
pub fn folders(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(d) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join(MANIFEST).is_file())
            .collect();
        found.sort();
        out.extend(found);
    }
    out
}

impl ProcessModule {
    /// What it declares, as a native module would.
    pub fn info(&self) -> ModuleInfo {
        let m = &self.manifest;
        let mut info = ModuleInfo::new(&m.name, &m.description)
            .sources(m.sources[0], m.sources[1])
            .targets(m.targets[0], m.targets[1]);
        for a in &m.attributes {
            let kind = match a.kind.as_str() {
                "boolean" => AttributeKind::Bool,
                "integer" => AttributeKind::Integer,
                _ => AttributeKind::String,
            };
            let mut spec = AttributeSpec::new(&a.name, kind, a.default.as_deref(), &a.description);
            if a.required {
                spec = spec.required();
            }
            info = info.attribute(spec);
        }
        info
    }

    /// How long a run may take.
    pub fn run_timeout(&self) -> Duration {
        Duration::from_secs(
            self.manifest
                .timeout_seconds
                .unwrap_or(DEFAULT_RUN_TIMEOUT_SECONDS),
        )
    }

    /// Sends `request` to a new process of the module and reads its answer, within
    /// `timeout`; `halted` is asked every 20 ms while it runs.
    ///
    /// # Errors
    ///
    /// When the program cannot start, runs out of time or is halted (its process group
    /// killed), ends without a JSON answer (with the end of its stderr), or answers more than
    /// [`MAX_ANSWER`] bytes.
    pub fn call(
        &self,
        request: &serde_json::Value,
        timeout: Duration,
        halted: &dyn Fn() -> bool,
        secrets: &[String],
    ) -> Result<serde_json::Value, PluginError> {
        let name = &self.manifest.name;
        let program = &self.manifest.command[0];
        let program = if program.contains('/') {
            self.dir.join(program)
        } else {
            PathBuf::from(program)
        };
        let mut child = Command::new(&program)
            .args(&self.manifest.command[1..])
            .current_dir(&self.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| {
                PluginError::new(format!(
                    "process module {name}: {} could not start: {e}",
                    program.display()
                ))
            })?;
        let group = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        let kill = || {
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        };
        // Write the request and read both streams on threads of their own, so that a module
        // that writes before it reads cannot block the host.
        let body = serde_json::to_vec(request).unwrap_or_default();
        let mut stdin = child.stdin.take();
        let writer = std::thread::spawn(move || {
            if let Some(s) = stdin.as_mut() {
                let _ = s.write_all(&body);
            }
        });
        let stdout = child.stdout.take();
        let (answered, answer) = std::sync::mpsc::channel::<Vec<u8>>();
        let reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(s) = stdout {
                let _ = s.take(MAX_ANSWER as u64 + 1).read_to_end(&mut buf);
            }
            let _ = answered.send(buf);
        });
        // All of stderr is read (a module blocked on a full pipe would hang), its end kept.
        let stderr = child.stderr.take();
        let errors = std::thread::spawn(move || {
            let mut kept: Vec<u8> = Vec::new();
            let mut chunk = [0u8; 8192];
            if let Some(mut s) = stderr {
                while let Ok(n) = s.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    kept.extend_from_slice(&chunk[..n]);
                    if kept.len() > 2 * STDERR_KEPT {
                        kept.drain(..kept.len() - STDERR_KEPT);
                    }
                }
            }
            kept
        });
        let started = Instant::now();
        let mut stopped = None;
        let mut out: Option<Vec<u8>> = None;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) => {}
                Err(_) => break None,
            }
            if halted() {
                stopped = Some(PluginError::of(
                    weft_sdk::ErrorKind::Halted,
                    format!("halted: process module {name} was killed"),
                ));
            } else if started.elapsed() >= timeout {
                stopped = Some(PluginError::new(format!(
                    "process module {name} did not answer within {} s; it was killed",
                    timeout.as_secs()
                )));
            }
            if stopped.is_some() {
                kill();
                let _ = child.wait();
                break None;
            }
            // Its answer's end (stdout closed) comes just before its exit: wait for that,
            // and look again at once; after it, in short steps.
            match out {
                None => {
                    if let Ok(buf) = answer.recv_timeout(Duration::from_millis(20)) {
                        out = Some(buf);
                    }
                }
                Some(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        };
        // Children of the module that keep its pipes go with the group; one that left the
        // group (setsid) and holds a pipe is not waited for past a few seconds.
        kill();
        let deadline = Instant::now() + Duration::from_secs(5);
        if finished_by(&writer, deadline) {
            let _ = writer.join();
        }
        if finished_by(&reader, deadline) {
            let _ = reader.join();
        }
        let out = out.or_else(|| answer.try_recv().ok()).unwrap_or_default();
        let err = if finished_by(&errors, deadline) {
            errors.join().unwrap_or_default()
        } else {
            Vec::new()
        };
        let tail = redact(&stderr_tail(&err), secrets);
        if let Some(e) = stopped {
            return Err(e);
        }
        if out.len() > MAX_ANSWER {
            return Err(PluginError::new(format!(
                "process module {name} answered more than {MAX_ANSWER} bytes{tail}"
            )));
        }
        let exit = status.and_then(|s| s.code());
        if exit != Some(0) {
            return Err(PluginError::new(format!(
                "process module {name} exited with {}{tail}",
                exit.map_or_else(|| "a signal".to_owned(), |c| format!("code {c}"))
            )));
        }
        match serde_json::from_slice::<serde_json::Value>(&out) {
            Ok(v) if v.is_object() => Ok(v),
            Ok(_) => Err(PluginError::new(format!(
                "process module {name} answered JSON that is not an object{tail}"
            ))),
            Err(e) => Err(PluginError::new(format!(
                "process module {name} answered no valid JSON ({e}; it wrote {} byte(s){}){tail}",
                out.len(),
                if out.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", beginning `{}`",
                        redact(&String::from_utf8_lossy(&out), secrets)
                            .chars()
                            .take(80)
                            .collect::<String>()
                    )
                }
            ))),
        }
    }
}

/// Whether thread `h` has ended, waiting for it until `deadline`.
fn finished_by<T>(h: &std::thread::JoinHandle<T>, deadline: Instant) -> bool {
    while !h.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    h.is_finished()
}

/// How much of stderr's end is kept while it is read.
const STDERR_KEPT: usize = 64 * 1024;

/// `text` with each of `secrets` replaced by `***`: as written, as JSON escapes it, and with
/// every non-ASCII character as `\uXXXX` (Python's `json.dumps`).
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for s in secrets.iter().filter(|s| !s.is_empty()) {
        let escaped = serde_json::to_string(s).unwrap_or_default();
        let escaped = escaped.trim_matches('"').to_owned();
        let ascii: String = escaped
            .chars()
            .map(|c| {
                if c.is_ascii() {
                    c.to_string()
                } else {
                    let mut units = [0u16; 2];
                    c.encode_utf16(&mut units)
                        .iter()
                        .map(|u| format!("\\u{u:04x}"))
                        .collect()
                }
            })
            .collect();
        for form in [s.as_str(), escaped.as_str(), ascii.as_str()] {
            out = out.replace(form, "***");
        }
    }
    out
}

/// The end of stderr for an error message.
fn stderr_tail(err: &[u8]) -> String {
    let text = String::from_utf8_lossy(err);
    let t = text.trim_end();
    if t.is_empty() {
        return String::new();
    }
    let start = t.len().saturating_sub(STDERR_TAIL);
    let start = (start..t.len())
        .find(|c| t.is_char_boundary(*c))
        .unwrap_or(0);
    format!("; the end of its stderr: {}", &t[start..])
}

/// An object as the requests describe it.
pub fn object_json(o: &weft_sdk::ObjectRef) -> serde_json::Value {
    serde_json::json!({
        "nodeId": o.node_id(),
        "objectTypeId": o.object_type_id(),
        "connectionId": o.connection_id(),
        "name": o.name(),
        "schema": o.schema(),
        "dialect": dialect_code(o.dialect()),
    })
}

/// A dialect as the protocol names it.
pub fn dialect_code(d: weft_sdk::Dialect) -> &'static str {
    use weft_sdk::Dialect;
    match d {
        Dialect::Sqlite => "sqlite",
        Dialect::Postgres => "postgresql",
        Dialect::MySql => "mysql",
        Dialect::MsSql => "mssql",
        Dialect::H2 => "h2",
        Dialect::Hsqldb => "hsqldb",
        Dialect::Generic => "generic",
        _ => "unknown",
    }
}

/// An action's attributes as the requests carry them: an object of their values.
pub fn attribute_json<'a>(
    attributes: impl Iterator<Item = (&'a str, &'a AttributeValue)>,
) -> serde_json::Value {
    let mut map = serde_json::Map::new();
    for (k, v) in attributes {
        let value = match (v.as_bool(), v.as_integer(), v.as_str()) {
            (Some(b), _, _) => serde_json::Value::from(b),
            (_, Some(i), _) => serde_json::Value::from(i),
            (_, _, Some(s)) => serde_json::Value::from(s),
            _ => serde_json::Value::Null,
        };
        map.insert(k.to_owned(), value);
    }
    serde_json::Value::Object(map)
}

/// The `validate` answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ValidateAnswer {
    #[serde(default)]
    problems: Vec<AnswerProblem>,
    #[serde(default)]
    reads: Vec<AnswerTable>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerProblem {
    severity: String,
    code: String,
    message: String,
    #[serde(default)]
    offset: Option<u32>,
    #[serde(default)]
    attribute: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerTable {
    #[serde(default)]
    schema: Option<String>,
    name: String,
    #[serde(default)]
    offset: Option<u32>,
}

impl ActionModule for ProcessModule {
    fn info(&self) -> ModuleInfo {
        ProcessModule::info(self)
    }

    fn validate(&self, input: &ValidateInput) -> ValidateOutput {
        let mut out = ValidateOutput::default();
        let dialect = input
            .targets()
            .first()
            .or_else(|| input.sources().first())
            .map_or("unknown", |o| dialect_code(o.dialect()));
        let request = serde_json::json!({
            "weftModuleProtocol": PROTOCOL,
            "request": "validate",
            "module": self.manifest.name,
            "action": {
                "id": input.action_id(),
                "text": input.action(),
                "attributes": attribute_json(input.attributes()),
            },
            "sources": input.sources().iter().map(object_json).collect::<Vec<_>>(),
            "targets": input.targets().iter().map(object_json).collect::<Vec<_>>(),
            "dialect": dialect,
        });
        let answer = self
            .call(&request, VALIDATE_TIMEOUT, &|| false, &[])
            .and_then(|v| {
                serde_json::from_value::<ValidateAnswer>(v).map_err(|e| {
                    PluginError::new(format!(
                        "process module {}: its validate answer is not as the protocol says: {e}",
                        self.manifest.name
                    ))
                })
            });
        match answer {
            Ok(a) => {
                for p in a.problems {
                    let mut problem = if p.severity == "warning" {
                        Problem::warning(&p.code, p.message, p.offset)
                    } else {
                        Problem::error(&p.code, p.message, p.offset)
                    };
                    if let Some(attr) = &p.attribute {
                        problem = problem.on_attribute(attr);
                    }
                    out.push(problem);
                }
                for t in a.reads {
                    out.read(TableName::new(t.schema.as_deref(), &t.name, t.offset));
                }
            }
            Err(e) => out.push(Problem::error("process.failed", e.message(), None)),
        }
        out
    }

    /// Never called: the host runs process modules itself (`exec::process::run`), without opening
    /// connections for them.
    fn run(&self, _ctx: &mut RunContext) -> PluginResult<RunOutcome> {
        Err(PluginError::new(format!(
            "process module {} is run by the host, not through a context",
            self.manifest.name
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn secrets_are_hidden_as_written_and_as_json_escapes_them() {
        let secrets = vec!["pa\"ss wörd".to_owned(), String::new()];
        assert_eq!(redact("x pa\"ss wörd y", &secrets), "x *** y");
        // serde_json's escape of the quote, and Python's of the ö as well.
        assert_eq!(
            redact(r#"{"password": "pa\"ss wörd"}"#, &secrets),
            r#"{"password": "***"}"#
        );
        assert_eq!(
            redact(r#"{"password": "pa\"ss w\u00f6rd"}"#, &secrets),
            r#"{"password": "***"}"#
        );
        assert_eq!(redact("nothing here", &secrets), "nothing here");
    }
}
