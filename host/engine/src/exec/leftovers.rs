//! The processes a killed server's actions left running. `weft serve` puts [`TAG`] (its HOME)
//! into its own environment before anything starts, so every process an action starts (a
//! Shell script and whatever it starts, a process module, a plugin's helper) carries it. The
//! next server on that HOME kills each process that carries it, and the process groups they
//! lead, before it settles what the last server left running: an action settled as "may have
//! run" is not still running as an orphan beside its next attempt.

use std::path::{Path, PathBuf};

/// The environment variable that marks a process as started by the server of a HOME.
pub const TAG: &str = "WEFT_SERVER_HOME";

/// How often the processes are looked for again while some are found (a dying script may
/// start another before its turn comes).
const ROUNDS: usize = 20;

/// The value of [`TAG`] for `home`: its canonical path (links resolved), so that `--home
/// /h/`, `--home /h` and a link to it name one HOME; its absolute path where it does not
/// exist yet.
#[must_use]
pub fn tag(home: &Path) -> PathBuf {
    std::fs::canonicalize(home)
        .or_else(|_| std::path::absolute(home))
        .unwrap_or_else(|_| home.to_path_buf())
}

/// Kills every process on this machine (that this user may see) whose environment carries
/// `TAG=tag(home)`, except this process, and the process group each one leads. Answers the
/// ids of the processes killed.
#[must_use]
pub fn kill_left(home: &Path) -> Vec<i32> {
    let mut wanted = format!("{TAG}=").into_bytes();
    wanted.extend_from_slice(tag(home).as_os_str().as_encoded_bytes());
    let me = std::process::id();
    let my_group = nix::unistd::getpgrp();
    let mut killed = Vec::new();
    for _ in 0..ROUNDS {
        let found = tagged(&wanted, me);
        if found.is_empty() {
            break;
        }
        for (pid, group) in found {
            use nix::sys::signal::{Signal, kill, killpg};
            use nix::unistd::Pid;
            // The group first: a script's children that cleared their environment go too.
            if let Some(g) = group.filter(|g| *g == pid && Pid::from_raw(*g) != my_group) {
                let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
            }
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            if !killed.contains(&pid) {
                killed.push(pid);
            }
        }
        // A killed process stays in /proc until its parent reaps it (init, for an orphan):
        // give that a moment before looking again.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    killed
}

/// The live processes (not zombies) whose environment holds the entry `wanted`, with the
/// process group each is in.
fn tagged(wanted: &[u8], me: u32) -> Vec<(i32, Option<i32>)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if u32::try_from(pid).is_ok_and(|p| p == me) {
            continue;
        }
        // Another user's process, or one that ended meanwhile: not ours to kill.
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if !environ.split(|b| *b == 0).any(|e| e == wanted) {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let (state, group) = state_and_group(&stat);
        if state == Some('Z') {
            continue;
        }
        found.push((pid, group));
    }
    found
}

/// A process's state letter and process group from its `/proc/PID/stat` line (the name in
/// parentheses may hold spaces and parentheses: the fields follow the last `)`).
fn state_and_group(stat: &str) -> (Option<char>, Option<i32>) {
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return (None, None);
    };
    let mut fields = rest.split_whitespace();
    let state = fields.next().and_then(|s| s.chars().next());
    let group = fields.nth(1).and_then(|g| g.parse().ok());
    (state, group)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    #[test]
    fn reads_the_state_and_group_past_a_name_with_parentheses() {
        assert_eq!(
            state_and_group("42 (a (b) c) S 1 4242 4242 0 -1"),
            (Some('S'), Some(4242))
        );
        assert_eq!(state_and_group("garbage"), (None, None));
    }

    #[test]
    fn kills_the_tagged_processes_and_their_groups_and_no_other() {
        let home = tempfile::tempdir().expect("home");
        let other = tempfile::tempdir().expect("other home");
        let pids = home.path().join("pids");
        // A tagged script in a group of its own, with a child that clears its environment.
        let mut tagged = Command::new("/bin/sh")
            .arg("-c")
            .arg(format!(
                "env -i /bin/sleep 300 & echo $! > {}; exec /bin/sleep 300",
                pids.display()
            ))
            .env(TAG, tag(home.path()))
            .process_group(0)
            .spawn()
            .expect("spawn");
        // The same tag for another HOME, and no tag at all: both left alone.
        let mut foreign = Command::new("/bin/sleep")
            .arg("300")
            .env(TAG, tag(other.path()))
            .spawn()
            .expect("spawn");
        let mut plain = Command::new("/bin/sleep")
            .arg("300")
            .env_remove(TAG)
            .spawn()
            .expect("spawn");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let child: i32 = loop {
            if let Some(pid) = std::fs::read_to_string(&pids)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                break pid;
            }
            assert!(std::time::Instant::now() < deadline, "the script never ran");
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        let killed = kill_left(home.path());
        let script = i32::try_from(tagged.id()).expect("pid");
        assert!(killed.contains(&script), "{killed:?}");
        let status = tagged.wait().expect("wait");
        assert!(!status.success(), "killed: {status:?}");
        // The child without the tag went with its group.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while nix::sys::signal::kill(nix::unistd::Pid::from_raw(child), None).is_ok()
            && !std::fs::read_to_string(format!("/proc/{child}/stat"))
                .is_ok_and(|s| state_and_group(&s).0 == Some('Z'))
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the group's child lives"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(
            foreign.try_wait().expect("try_wait").is_none(),
            "another HOME's"
        );
        assert!(plain.try_wait().expect("try_wait").is_none(), "untagged");
        let _ = foreign.kill();
        let _ = plain.kill();
        let _ = foreign.wait();
        let _ = plain.wait();
    }
}
