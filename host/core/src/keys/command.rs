//! A secret store's program, run when a connection opens to print an entry's password (or
//! the whole entry): datasqill's replaceable credential program. It is started without a
//! shell (the option's words; `{key}` in them becomes the entry's key, which the program
//! also finds in `WEFT_KEY`), with nothing on its standard input and its standard error
//! dropped; what it prints is read up to [`MAX_OUTPUT`] bytes and never logged; it must end
//! within its time ([`DEFAULT_TIMEOUT_SECONDS`] unless the entry says otherwise), else its
//! process group is killed.

use std::io::Read as _;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The most bytes the program may print.
pub const MAX_OUTPUT: usize = 64 << 10;

/// How long the program may take when the entry does not say (`commandTimeoutSeconds`).
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 30;

/// What `command` (the option's text) prints for the entry `key`, one trailing line end
/// removed; run within `timeout`.
///
/// # Errors
///
/// Why not, without anything it printed: it could not start, ran out of time, ended with
/// another status than 0, printed more than [`MAX_OUTPUT`] bytes or what is not UTF-8.
pub fn output(command: &str, key: &str, timeout: Duration) -> Result<String, String> {
    let words: Vec<String> = command
        .split_whitespace()
        .map(|w| w.replace("{key}", key))
        .collect();
    let Some(program) = words.first() else {
        return Err("the command is empty".to_owned());
    };
    let mut child = Command::new(program)
        .args(&words[1..])
        .env("WEFT_KEY", key)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("`{program}` could not start: {e}"))?;
    let group = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let stdout = child.stdout.take();
    let (printed, read) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stdout {
            let _ = s.take(MAX_OUTPUT as u64 + 1).read_to_end(&mut buf);
        }
        let _ = printed.send(buf);
    });
    let started = Instant::now();
    let kill = || {
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    };
    // Its output ends (stdout closed) and it exits, in either order, within its time.
    let mut out: Option<Vec<u8>> = None;
    let mut exited: Option<(std::process::ExitStatus, Instant)> = None;
    loop {
        if out.is_none() {
            match read.recv_timeout(Duration::from_millis(20)) {
                Ok(buf) => out = Some(buf),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => out = Some(Vec::new()),
            }
        } else {
            std::thread::sleep(Duration::from_millis(5));
        }
        if out.as_ref().is_some_and(|o| o.len() > MAX_OUTPUT) {
            kill();
            let _ = child.wait();
            return Err(format!("`{program}` printed more than {MAX_OUTPUT} bytes"));
        }
        if exited.is_none()
            && let Ok(Some(status)) = child.try_wait()
        {
            exited = Some((status, Instant::now()));
        }
        match (&out, exited) {
            (Some(_), Some(_)) => break,
            // It ended, and what it left behind in its group still holds its output: those
            // go (the group still has members, so its id cannot have been taken again).
            (None, Some((_, at))) if at.elapsed() > Duration::from_millis(200) => {
                kill();
                match read.recv_timeout(Duration::from_secs(1)) {
                    Ok(buf) => {
                        out = Some(buf);
                        break;
                    }
                    Err(_) => {
                        return Err(format!(
                            "`{program}` ended, but a process it started outside its group still holds its output"
                        ));
                    }
                }
            }
            _ => {}
        }
        if started.elapsed() >= timeout {
            kill();
            let _ = child.wait();
            return Err(format!(
                "`{program}` did not finish within {} s; it was killed",
                timeout.as_secs()
            ));
        }
    }
    let (Some(out), Some((status, _))) = (out, exited) else {
        return Err(format!("`{program}` ended without an answer"));
    };
    if !status.success() {
        return Err(format!("`{program}` ended with {status}"));
    }
    let text = String::from_utf8(out)
        .map_err(|_| format!("`{program}` printed what is not UTF-8 text"))?;
    let text = text.strip_suffix('\n').unwrap_or(&text);
    Ok(text.strip_suffix('\r').unwrap_or(text).to_owned())
}
