//! Who holds a host id of a shared repository. A host's id lives in `HOME/host-id`, so a
//! copied HOME (a cloned VM, a restored backup) carries the id of a host that may still
//! run. Each process that registers an id writes its [`Process`] (the machine's boot id,
//! its process id and start time) beside its heartbeat; a starting host [`judge`]s the row
//! it finds: free when silent for a lease or left by a dead process of this machine,
//! refused when a live process holds it, else it waits and watches the heartbeat (one that
//! goes on belongs to a live process elsewhere). And [`boot_ms`] is the clock by which a
//! host judges its own lease: it counts a stopped process and a suspended machine alike.

pub use weft_repo::work::Holder;

/// The process holding a host id: the machine's boot (`/proc/sys/kernel/random/boot_id`,
/// new at every boot and on every machine), its process id, and its start time in clock
/// ticks since the boot (so that a reused process id is not taken for it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    /// The boot id of its machine.
    pub boot: String,
    /// Its process id.
    pub pid: i32,
    /// Its start, in clock ticks after the boot.
    pub started: u64,
}

impl Process {
    /// This process.
    #[must_use]
    pub fn this() -> Process {
        let pid = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
        Process {
            boot: boot_id(),
            pid,
            started: started(pid).unwrap_or(0),
        }
    }

    /// As stored in the repository: `BOOT/PID/STARTED`.
    #[must_use]
    pub fn text(&self) -> String {
        format!("{}/{}/{}", self.boot, self.pid, self.started)
    }

    /// Reads [`Process::text`]; `None` for anything else.
    #[must_use]
    pub fn parse(text: &str) -> Option<Process> {
        let mut parts = text.rsplitn(3, '/');
        let started = parts.next()?.parse().ok()?;
        let pid = parts.next()?.parse().ok()?;
        let boot = parts.next()?.to_owned();
        Some(Process { boot, pid, started })
    }

    /// Whether this process still runs (asked on its own machine only).
    #[must_use]
    pub fn is_alive_here(&self) -> bool {
        started(self.pid).is_some_and(|s| s == self.started)
    }

    /// Whether it is of this machine and process namespace, where its pid means a process
    /// this one can see (an unknown boot is no machine's).
    #[must_use]
    pub fn is_of_this_machine(&self) -> bool {
        !self.boot.is_empty() && self.boot == boot_id()
    }
}

/// What a starting host does about the row of its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Nobody holds it: start.
    Free,
    /// Someone may: look again in a moment.
    Wait,
    /// A live process holds it: do not start, for this reason.
    Refuse(String),
}

/// Judges the row `seen` of this host's id for process `me`, with the lease, `first` being
/// the row as first seen while waiting (a heartbeat that moved since is a live process's).
#[must_use]
pub fn judge(
    me: &Process,
    seen: Option<&Holder>,
    first: Option<&Holder>,
    lease_ms: i64,
    alive: impl Fn(&Process) -> bool,
) -> Verdict {
    let Some(seen) = seen else {
        return Verdict::Free;
    };
    if seen.silent_ms >= lease_ms {
        return Verdict::Free;
    }
    let holder = seen.process.as_deref().and_then(Process::parse);
    if let Some(p) = &holder
        && !me.boot.is_empty()
        && p.boot == me.boot
    {
        if p.pid == me.pid && p.started == me.started {
            return Verdict::Free;
        }
        return if alive(p) {
            Verdict::Refuse(format!(
                "process {} on this machine holds it (a copy of this HOME runs there)",
                p.pid
            ))
        } else {
            // The last process of this id on this machine died: nothing else beats for it.
            Verdict::Free
        };
    }
    match first {
        Some(f) if seen.heartbeat_ms != f.heartbeat_ms => Verdict::Refuse(format!(
            "its heartbeat goes on ({} ms ago), recorded by {}: a live process on another machine holds it (a cloned machine, or a copy of this HOME)",
            seen.silent_ms,
            seen.process
                .as_deref()
                .unwrap_or("a process of an older weft")
        )),
        _ => Verdict::Wait,
    }
}

/// Milliseconds on the machine's boot clock (`CLOCK_BOOTTIME`): unlike the monotonic
/// clock it goes on while the machine is suspended, and like it while the process is
/// stopped, so a host that was paused finds its lease's age true.
#[must_use]
pub fn boot_ms() -> i64 {
    use nix::time::{ClockId, clock_gettime};
    clock_gettime(ClockId::CLOCK_BOOTTIME)
        .map(|t| t.tv_sec() * 1_000 + t.tv_nsec() / 1_000_000)
        .unwrap_or(0)
}

/// The machine's boot id with this process's pid namespace (containers on one machine share
/// the boot but not the pids); empty where either cannot be read (then no row is judged as
/// this machine's).
fn boot_id() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let namespace = std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    if boot.is_empty() || namespace.is_empty() {
        return String::new();
    }
    format!("{boot}:{namespace}")
}

/// A live (not zombie) process's start time in clock ticks after the boot.
fn started(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state (3rd field of the line), ..., starttime (22nd).
    if fields.first() == Some(&"Z") {
        return None;
    }
    fields.get(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(process: Option<&Process>, heartbeat_ms: i64, silent_ms: i64) -> Holder {
        Holder {
            process: process.map(Process::text),
            heartbeat_ms,
            silent_ms,
        }
    }

    #[test]
    fn this_process_reads_back_and_is_alive() {
        let me = Process::this();
        assert!(!me.boot.is_empty());
        assert!(me.started > 0);
        assert_eq!(Process::parse(&me.text()), Some(me.clone()));
        assert!(me.is_alive_here());
        let gone = Process {
            started: me.started + 1,
            ..me.clone()
        };
        assert!(
            !gone.is_alive_here(),
            "a reused process id is another process"
        );
        assert_eq!(Process::parse("garbage"), None);
    }

    #[test]
    fn judges_every_holder() {
        let me = Process::this();
        let lease = 10_000;
        let here = Process {
            pid: 1,
            started: 7,
            ..me.clone()
        };
        let elsewhere = Process {
            boot: "another-machine".to_owned(),
            ..here.clone()
        };
        let alive = |_: &Process| true;
        let dead = |_: &Process| false;
        // No row, or one silent for a lease: free.
        assert_eq!(judge(&me, None, None, lease, alive), Verdict::Free);
        let old = holder(Some(&elsewhere), 5, lease);
        assert_eq!(judge(&me, Some(&old), None, lease, alive), Verdict::Free);
        // A fresh row of this machine: refused while its process lives, free once it died.
        let fresh = holder(Some(&here), 5, 100);
        assert!(matches!(
            judge(&me, Some(&fresh), None, lease, alive),
            Verdict::Refuse(why) if why.contains("process 1 on this machine")
        ));
        assert_eq!(judge(&me, Some(&fresh), None, lease, dead), Verdict::Free);
        // A fresh row of another machine (or of an older weft): wait and watch.
        let there = holder(Some(&elsewhere), 5, 100);
        assert_eq!(judge(&me, Some(&there), None, lease, dead), Verdict::Wait);
        assert_eq!(
            judge(&me, Some(&there), Some(&there), lease, dead),
            Verdict::Wait,
            "a heartbeat that stands still"
        );
        let moved = holder(Some(&elsewhere), 2_505, 10);
        assert!(matches!(
            judge(&me, Some(&moved), Some(&there), lease, dead),
            Verdict::Refuse(why) if why.contains("another machine")
        ));
        let unknown = holder(None, 5, 100);
        assert_eq!(
            judge(&me, Some(&unknown), None, lease, alive),
            Verdict::Wait
        );
        // A machine whose boot cannot be read knows no row as its own: it waits and watches.
        let blind = Process {
            boot: String::new(),
            ..me.clone()
        };
        let blind_row = holder(
            Some(&Process {
                pid: 1,
                ..blind.clone()
            }),
            5,
            100,
        );
        assert_eq!(
            judge(&blind, Some(&blind_row), None, lease, dead),
            Verdict::Wait
        );
    }

    #[test]
    fn the_boot_clock_moves_on() {
        let a = boot_ms();
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(boot_ms() >= a + 5);
    }
}
