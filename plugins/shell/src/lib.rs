//! The `Shell` action module: the action text is a script that `/bin/sh` runs as the
//! service user, in its own process group, with the run's variables in its environment.
//! What it writes to stdout and stderr goes to the action's log line by line as it comes
//! (at most [`MAX_KEPT`] bytes of each; the rest is counted, and the log says so); an exit
//! code other than 0 fails the action with the end of its stderr. `timeout` (seconds) and a
//! halt kill the whole process group. The host allows the module only on a server whose
//! setting `shell_modules` is true (docs/modules/shell.md).

// `export_plugin!` expands to abi_stable's export code, which is unsafe; this crate writes
// no unsafe code of its own.
#![allow(unsafe_code)]

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use weft_sdk::{
    ActionModule, AttributeKind, AttributeSpec, AttributeValue, ErrorKind, ModuleInfo, PluginError,
    PluginResult, Problem, RunContext, RunOutcome, ValidateInput, ValidateOutput, export_plugin,
};

/// The `Shell` module.
#[derive(Debug, Default)]
pub struct Shell;

/// The bytes of each stream (stdout, stderr) the log keeps; what comes after is counted.
pub const MAX_KEPT: usize = 256 * 1024;

/// The longest `timeout`, in seconds (a week).
pub const MAX_TIMEOUT: i64 = 7 * 86_400;

/// How much of stderr's end a failure names.
const STDERR_TAIL: usize = 2_000;

/// The shell that runs the script.
pub const SHELL: &str = "/bin/sh";

impl ActionModule for Shell {
    fn info(&self) -> ModuleInfo {
        ModuleInfo::new(
            "Shell",
            "Runs the action text as a /bin/sh script on the server's machine (allowed by the setting shell_modules).",
        )
        .sources(0, u32::MAX)
        .targets(0, u32::MAX)
        .attribute(AttributeSpec::new(
            "timeout",
            AttributeKind::Integer,
            None,
            "seconds the script may run before its process group is killed and the action fails; default none",
        ))
    }

    fn validate(&self, input: &ValidateInput) -> ValidateOutput {
        let mut out = ValidateOutput::default();
        if input.action().is_none_or(|a| a.trim().is_empty()) {
            out.push(Problem::error(
                "shell.missing",
                "the action has no script (`action`)",
                None,
            ));
        }
        if let Some(n) = input
            .attribute("timeout")
            .and_then(AttributeValue::as_integer)
            && !(1..=MAX_TIMEOUT).contains(&n)
        {
            out.push(
                Problem::error(
                    "module.attribute",
                    format!("`timeout` must be from 1 to {MAX_TIMEOUT} seconds, found {n}"),
                    None,
                )
                .on_attribute("timeout"),
            );
        }
        out
    }

    fn run(&self, ctx: &mut RunContext) -> PluginResult<RunOutcome> {
        let timeout = ctx
            .integer("timeout")
            .filter(|n| *n > 0)
            .map(|n| Duration::from_secs(n.min(MAX_TIMEOUT).unsigned_abs()));
        let mut command = Command::new(SHELL);
        command
            .arg("-c")
            .arg(ctx.action())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut kept_out = Vec::new();
        for (name, value) in ctx.variables() {
            if !is_env_name(name) {
                continue;
            }
            if is_guarded(name) {
                kept_out.push(name.to_owned());
            } else {
                command.env(name, value);
            }
        }
        if !kept_out.is_empty() {
            ctx.log(&format!(
                "variables not put into the script's environment (names that the shell, the loader or the server act on; use ${{name}} in the text): {}",
                kept_out.join(", ")
            ));
        }
        let mut child = command
            .spawn()
            .map_err(|e| PluginError::new(format!("{SHELL} could not start: {e}")))?;
        let group = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        // Bounded: a script that writes faster than the log takes waits for it.
        let (tx, rx) = mpsc::sync_channel::<Output>(1024);
        let readers: Vec<_> = [
            child
                .stdout
                .take()
                .map(|s| (Stream::Out, Box::new(s) as Box<dyn Read + Send>)),
            child
                .stderr
                .take()
                .map(|s| (Stream::Err, Box::new(s) as Box<dyn Read + Send>)),
        ]
        .into_iter()
        .flatten()
        .map(|(stream, pipe)| {
            let tx = tx.clone();
            std::thread::spawn(move || read_lines(stream, pipe, &tx))
        })
        .collect();
        drop(tx);
        ctx.log(&format!("{SHELL} started (process group {group})."));
        let started = Instant::now();
        let mut kept = [0usize; 2];
        let mut dropped = [0usize; 2];
        let mut tail = String::new();
        let mut stopped: Option<PluginError> = None;
        let status = loop {
            // What the script wrote so far, into the log.
            while let Ok(out) = rx.try_recv() {
                take(ctx, out, &mut kept, &mut dropped, &mut tail);
            }
            if let Some(status) = child
                .try_wait()
                .map_err(|e| PluginError::new(format!("waiting for {SHELL}: {e}")))?
            {
                break status;
            }
            if stopped.is_none() {
                if ctx.halted() {
                    stopped = Some(PluginError::of(
                        ErrorKind::Halted,
                        "halted: the script's process group was killed",
                    ));
                } else if timeout.is_some_and(|t| started.elapsed() >= t) {
                    stopped = Some(PluginError::new(format!(
                        "the script ran longer than its timeout of {} s; its process group was killed",
                        timeout.map_or(0, |t| t.as_secs())
                    )));
                }
                if stopped.is_some() {
                    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
                }
            }
            // The next output or 50 ms, whichever comes first; once both streams are closed
            // (a script may close them and go on), 20 ms steps.
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(out) => take(ctx, out, &mut kept, &mut dropped, &mut tail),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        };
        // A child of the script may still hold the pipes: it goes with the group. One that
        // left the group (setsid) and holds them is not waited for past a few seconds.
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(out) => take(ctx, out, &mut kept, &mut dropped, &mut tail),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() >= deadline => {
                    ctx.log("a process outside the script's group still holds its output; it is no longer read");
                    break;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
        for reader in readers {
            if reader.is_finished() {
                let _ = reader.join();
            }
        }
        for (i, name) in ["stdout", "stderr"].iter().enumerate() {
            if dropped[i] > 0 {
                ctx.log(&format!(
                    "{name}: {} more byte(s) were not kept (the log keeps {MAX_KEPT} bytes of each stream)",
                    dropped[i]
                ));
            }
        }
        if let Some(e) = stopped {
            return Err(e);
        }
        match (status.code(), status.signal()) {
            (Some(0), _) => {
                ctx.log(&format!(
                    "{SHELL} exited with 0 after {:.1} s.",
                    started.elapsed().as_secs_f64()
                ));
                Ok(RunOutcome::default())
            }
            (Some(code), _) => Err(PluginError::new(format!(
                "the script exited with code {code}{}",
                stderr_tail(&tail)
            ))),
            (None, signal) => Err(PluginError::new(format!(
                "the script was killed by signal {}{}",
                signal.unwrap_or_default(),
                stderr_tail(&tail)
            ))),
        }
    }
}

/// Which stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Out = 0,
    Err = 1,
}

/// A line of output (its end of line dropped), or bytes past the cap, counted.
struct Output {
    stream: Stream,
    line: String,
}

/// Reads `pipe` line by line into `tx` until it closes; lines longer than the cap are cut.
fn read_lines(stream: Stream, pipe: Box<dyn Read + Send>, tx: &mpsc::SyncSender<Output>) {
    let mut reader = BufReader::new(pipe);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match (&mut reader)
            .take(MAX_KEPT as u64 + 1)
            .read_until(b'\n', &mut buf)
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                    buf.pop();
                }
                let line = String::from_utf8_lossy(&buf).into_owned();
                if tx.send(Output { stream, line }).is_err() {
                    return;
                }
            }
        }
    }
}

/// Logs `out` within the cap of its stream, and keeps the end of stderr for a failure.
fn take(
    ctx: &mut RunContext,
    out: Output,
    kept: &mut [usize; 2],
    dropped: &mut [usize; 2],
    tail: &mut String,
) {
    let i = out.stream as usize;
    let size = out.line.len() + 1;
    if out.stream == Stream::Err {
        tail.push_str(&out.line);
        tail.push('\n');
        if tail.len() > 2 * STDERR_TAIL {
            let cut = tail.len() - STDERR_TAIL;
            let cut = (cut..tail.len())
                .find(|c| tail.is_char_boundary(*c))
                .unwrap_or(tail.len());
            tail.drain(..cut);
        }
    }
    if kept[i] + size > MAX_KEPT {
        dropped[i] += size;
        return;
    }
    kept[i] += size;
    let name = if out.stream == Stream::Out {
        "stdout"
    } else {
        "stderr"
    };
    ctx.log(&format!("{name}: {}", out.line));
}

/// The end of stderr for an error message, if it wrote anything.
fn stderr_tail(tail: &str) -> String {
    let t = tail.trim_end();
    if t.is_empty() {
        return String::new();
    }
    let start = t.len().saturating_sub(STDERR_TAIL);
    let start = (start..t.len())
        .find(|c| t.is_char_boundary(*c))
        .unwrap_or(0);
    format!("; the end of its stderr: {}", &t[start..])
}

/// Whether `name` may be an environment variable's name (letters, digits and `_`, not
/// starting with a digit).
/// Environment names a run's variables never set: what the shell, the dynamic loader, common
/// interpreters and the server itself act on (a variable `PATH` would choose which program
/// `date` runs; `LD_PRELOAD` would load a library into every program the script starts).
const GUARDED: &[&str] = &[
    "PATH",
    "IFS",
    "ENV",
    "BASH_ENV",
    "CDPATH",
    "HOME",
    "SHELL",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "GLOBIGNORE",
    "TMPDIR",
    "GCONV_PATH",
    "HOSTALIASES",
    "LOCALDOMAIN",
    "RES_OPTIONS",
    "NLSPATH",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PERL5LIB",
    "PERL5OPT",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "NODE_OPTIONS",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
];

/// Prefixes of guarded names: the dynamic loader's, exported shell functions, and weft's own
/// (`WEFT_SERVER_HOME` marks what a server's actions start).
const GUARDED_PREFIXES: &[&str] = &["LD_", "DYLD_", "BASH_FUNC_", "MALLOC_", "WEFT_"];

/// Whether a run's variable `name` is kept out of the script's environment.
fn is_guarded(name: &str) -> bool {
    GUARDED.contains(&name) || GUARDED_PREFIXES.iter().any(|p| name.starts_with(p))
}

fn is_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

export_plugin! {
    modules: [Shell],
    object_types: [],
    bridges: [],
}

#[cfg(test)]
mod tests;
