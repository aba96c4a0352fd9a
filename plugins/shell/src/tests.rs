//! The Shell module with a real `/bin/sh`: output into the log, exit codes, variables in the
//! environment, the cap on what is kept, a timeout and a halt that kill the whole process
//! group (a background child of the script included).

use super::*;
use weft_sdk::HaltSignal;
use weft_sdk::testing::{RecordedLog, Run};

fn run(script: &str, attrs: &[(&str, AttributeValue)]) -> (PluginResult<RunOutcome>, RecordedLog) {
    run_with(script, attrs, HaltSignal::new())
}

fn run_with(
    script: &str,
    attrs: &[(&str, AttributeValue)],
    halt: HaltSignal,
) -> (PluginResult<RunOutcome>, RecordedLog) {
    let mut r = Run::new(script)
        .variable("batch_name", "nightly")
        .variable("not a name", "x")
        .halt(halt);
    for (k, v) in attrs {
        r = r.attribute(k, v.clone());
    }
    let (mut ctx, log) = r.build();
    (Shell.run(&mut ctx), log)
}

/// Whether process `pid` still exists (a zombie counts as gone).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.split(") ")
            .nth(1)
            .is_some_and(|rest| rest.starts_with('Z'))
    })
}

#[test]
fn output_goes_to_the_log_and_variables_to_the_environment() {
    let (out, log) = run(
        "echo \"hello $batch_name\"; echo 'to stderr' >&2; printf 'no newline'",
        &[],
    );
    assert_eq!(out.expect("exit 0"), RunOutcome::default());
    let lines = log.lines();
    for want in [
        "stdout: hello nightly",
        "stderr: to stderr",
        "stdout: no newline",
    ] {
        assert!(lines.iter().any(|l| l == want), "{want}: {lines:?}");
    }
    assert!(
        lines.last().is_some_and(|l| l.contains("exited with 0")),
        "{lines:?}"
    );
}

#[test]
fn a_non_zero_exit_fails_with_the_code_and_the_end_of_stderr() {
    let (out, _) = run("echo 'first' >&2; echo 'the reason' >&2; exit 3", &[]);
    let e = out.expect_err("exit 3");
    assert!(
        e.message()
            .starts_with("the script exited with code 3; the end of its stderr: first\nthe reason"),
        "{}",
        e.message()
    );
    let (out, _) = run("kill -TERM $$", &[]);
    assert!(
        out.expect_err("a signal")
            .message()
            .contains("killed by signal 15")
    );
}

#[test]
fn what_is_kept_of_a_stream_is_capped_and_the_log_says_so() {
    // 4,000 lines of 100 bytes: 400,000 bytes, more than the 256 KiB kept.
    let (out, log) = run(
        "i=0; while [ $i -lt 4000 ]; do printf '%099d\\n' $i; i=$((i+1)); done",
        &[],
    );
    out.expect("exit 0");
    let lines = log.lines();
    let kept = lines.iter().filter(|l| l.starts_with("stdout: 0")).count();
    assert_eq!(kept, MAX_KEPT / 100, "{} lines kept", kept);
    assert!(
        lines.iter().any(|l| l.starts_with("stdout: ")
            && l.contains("more byte(s) were not kept (the log keeps 262144 bytes")),
        "{:?}",
        &lines[lines.len() - 3..]
    );
}

#[test]
fn a_timeout_kills_the_process_group_and_fails() {
    let dir = tempfile::tempdir().expect("dir");
    let pidfile = dir.path().join("pid");
    let script = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    let (out, _) = run(&script, &[("timeout", AttributeValue::integer(1))]);
    let e = out.expect_err("timed out");
    assert!(
        e.message().contains("longer than its timeout of 1 s"),
        "{}",
        e.message()
    );
    let pid = std::fs::read_to_string(&pidfile).expect("the child's pid");
    assert!(
        !alive(pid.trim()),
        "the background child of the script was killed"
    );
}

#[test]
fn a_halt_kills_the_process_group_at_once() {
    let dir = tempfile::tempdir().expect("dir");
    let pidfile = dir.path().join("pid");
    let halt = HaltSignal::new();
    let raise = halt.clone();
    let watched = pidfile.clone();
    // The halt comes once the script runs: when its child's pid is written.
    let raiser = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !std::fs::read_to_string(&watched).is_ok_and(|s| s.ends_with('\n')) {
            assert!(Instant::now() < deadline, "the script never started");
            std::thread::yield_now();
        }
        raise.raise();
    });
    let script = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    let started = Instant::now();
    let (out, _) = run_with(&script, &[], halt);
    raiser.join().expect("raiser");
    let e = out.expect_err("halted");
    assert_eq!(e.kind(), ErrorKind::Halted, "{}", e.message());
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "it did not wait for the sleep"
    );
    let pid = std::fs::read_to_string(&pidfile).expect("pid");
    assert!(!alive(pid.trim()));
}

#[test]
fn validation_wants_a_script_and_a_sane_timeout() {
    let problems = |script: Option<&str>, timeout: i64| {
        let input = weft_sdk::testing::Validate::new(script)
            .attribute("timeout", AttributeValue::integer(timeout))
            .build();
        Shell
            .validate(&input)
            .problems()
            .iter()
            .map(|p| p.message().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(problems(Some("true"), 10), Vec::<String>::new());
    assert_eq!(problems(None, 10), ["the action has no script (`action`)"]);
    assert_eq!(
        problems(Some("true"), 0),
        ["`timeout` must be from 1 to 604800 seconds, found 0"]
    );
}

#[test]
fn variables_cannot_set_what_the_shell_or_the_loader_act_on() {
    let dir = tempfile::tempdir().expect("dir");
    // A `date` of the caller's that would run instead of the real one if PATH were taken.
    let fake = dir.path().join("date");
    std::fs::write(&fake, "#!/bin/sh\necho hijacked\n").expect("fake");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("mode");
    let (mut ctx, log) = Run::new(
        "date +%Y >/dev/null && echo date-ok; echo \"preload=${LD_PRELOAD:-none} ifs=${IFS:+set} tag=${WEFT_SERVER_HOME:-none} mine=$mine\"",
    )
    .variable("PATH", &dir.path().display().to_string())
    .variable("LD_PRELOAD", "/nonexistent/evil.so")
    .variable("IFS", "x")
    .variable("BASH_ENV", "/nonexistent/evil.sh")
    .variable("WEFT_SERVER_HOME", "/elsewhere")
    .variable("mine", "kept")
    .build();
    let out = Shell.run(&mut ctx);
    let lines = log.lines();
    assert!(out.is_ok(), "{out:?}: {lines:?}");
    assert!(lines.iter().any(|l| l == "stdout: date-ok"), "{lines:?}");
    assert!(!lines.iter().any(|l| l.contains("hijacked")), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("stdout: preload=none ifs=set") && l.ends_with("mine=kept")),
        "{lines:?}"
    );
    let said = lines
        .iter()
        .find(|l| l.starts_with("variables not put into the script's environment"))
        .unwrap_or_else(|| panic!("{lines:?}"));
    for name in ["PATH", "LD_PRELOAD", "IFS", "BASH_ENV", "WEFT_SERVER_HOME"] {
        assert!(said.contains(name), "{said}");
    }
    assert!(!said.contains("mine"), "{said}");
}
