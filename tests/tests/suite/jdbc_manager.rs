//! End to end: `bin/jdbcManager list | add | delete` for scripts, on a temporary INSTALL
//! with its own jdbcList, from a `file:` URL, with the checksum checked.

use crate::common;

use common::*;
use std::process::Command;

/// A jar of about `size` bytes: a class file and stored filler.
fn jar(size: usize) -> Vec<u8> {
    use std::io::Write as _;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    w.start_file("org/example/Driver.class", stored)
        .expect("entry");
    w.write_all(b"\xca\xfe\xba\xbe").expect("class");
    w.start_file("filler.bin", stored).expect("entry");
    w.write_all(&vec![7u8; size]).expect("filler");
    w.finish().expect("zip").into_inner()
}

fn jdbc_manager(install: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(root().join("bin/jdbcManager"))
        .args(args)
        .env("WEFT_BIN", weft_bin())
        .env("WEFT_INSTALL", install)
        .output()
        .expect("jdbcManager")
}

#[test]
fn list_add_delete_for_scripts() {
    let install = tempfile::tempdir().expect("install");
    let jar = install.path().join("vendor.jar");
    std::fs::write(&jar, self::jar(100)).expect("jar");
    let sum: String = {
        use sha2::Digest as _;
        sha2::Sha256::digest(std::fs::read(&jar).expect("read"))
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    std::fs::write(
        install.path().join("jdbcList"),
        format!(
            "# test list\nvendor:Vendor driver:file:{}#sha256={sum}\nwrong:Wrong checksum:file:{}#sha256={}\nbroken line\n",
            jar.display(),
            jar.display(),
            "0".repeat(64)
        ),
    )
    .expect("list");
    let o = jdbc_manager(install.path(), &["list"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        out.contains("(none)") && out.contains("vendor") && out.contains("wrong"),
        "{out}"
    );
    assert!(
        err.contains("jdbcList:4:"),
        "a bad line is reported with its number: {err}"
    );
    let o = jdbc_manager(install.path(), &["add", "vendor"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(err.contains("100%"), "progress is shown: {err}");
    assert!(install.path().join("drivers/vendor.jar").is_file());
    let o = jdbc_manager(install.path(), &["add", "wrong"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("checksum"), "{:?}", text(&o));
    assert!(!install.path().join("drivers/wrong.jar").exists());
    let o = jdbc_manager(install.path(), &["list"]);
    assert!(
        text(&o).0.contains("vendor.jar") || text(&o).0.contains(" vendor "),
        "{:?}",
        text(&o)
    );
    let o = jdbc_manager(install.path(), &["delete", "vendor"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(!install.path().join("drivers/vendor.jar").exists());
    let o = jdbc_manager(install.path(), &["add", "nope"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).1.contains("not in"), "{:?}", text(&o));
}

/// What a terminal of 30 x 140 shows of everything the program wrote (a vt100 emulator).
struct Screen(std::sync::Arc<std::sync::Mutex<vt100::Parser>>);

impl Screen {
    fn text(&self) -> String {
        self.0.lock().expect("screen").screen().contents()
    }

    fn wait_for(&self, what: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            if self.text().contains(what) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "`{what}` never appeared; the screen:\n{}",
                self.text()
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

/// Serves `/driver.jar` (`body`) slowly, in 32 KiB pieces, so that progress can be seen.
fn slow_server(body: Vec<u8>) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut reader = BufReader::new(s.try_clone().expect("clone"));
            loop {
                let mut l = String::new();
                if reader.read_line(&mut l).map_or(true, |n| n == 0) || l == "\r\n" {
                    break;
                }
            }
            let _ = s.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )
                .as_bytes(),
            );
            for chunk in body.chunks(32 * 1024) {
                if s.write_all(chunk).is_err() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(40));
            }
        }
    });
    format!("http://{addr}/driver.jar")
}

#[test]
fn the_interactive_menu_adds_and_deletes_a_driver() {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    use std::io::{Read, Write};
    let install = tempfile::tempdir().expect("install");
    let body = jar(512 * 1024);
    std::fs::write(
        install.path().join("jdbcList"),
        format!(
            "# test\nvendor:Vendor driver:{}\n",
            slow_server(body.clone())
        ),
    )
    .expect("list");
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: 30,
            cols: 140,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("pty");
    let mut cmd = CommandBuilder::new(root().join("bin/jdbcManager"));
    cmd.env("WEFT_BIN", weft_bin());
    cmd.env("WEFT_INSTALL", install.path());
    cmd.env("TERM", "xterm-256color");
    let mut child = pair.slave.spawn_command(cmd).expect("spawn");
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().expect("reader");
    let mut keys = pair.master.take_writer().expect("writer");
    let screen = Screen(std::sync::Arc::new(std::sync::Mutex::new(
        vt100::Parser::new(30, 140, 0),
    )));
    let sink = std::sync::Arc::clone(&screen.0);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().expect("screen").process(&buf[..n]);
        }
    });
    let mut press = |k: &str| {
        keys.write_all(k.as_bytes()).expect("key");
        keys.flush().expect("flush");
    };
    // First start: nothing installed.
    screen.wait_for("no driver installed yet");
    // ADD: the list of jdbcList, Enter installs with a progress bar, then a dialog.
    press("a");
    screen.wait_for("ADD: drivers in jdbcList");
    screen.wait_for("Vendor driver");
    press("\r");
    screen.wait_for("installing vendor");
    screen.wait_for("%");
    screen.wait_for("Installed vendor");
    assert_eq!(
        std::fs::read(install.path().join("drivers/vendor.jar")).expect("installed jar"),
        body
    );
    press("\r");
    screen.wait_for("vendor");
    screen.wait_for(&format!("{} bytes", body.len()));
    // DELETE, confirmed.
    press("d");
    screen.wait_for("DELETE: installed drivers");
    press("\r");
    screen.wait_for("Delete vendor?");
    press("y");
    screen.wait_for("Deleted vendor.");
    assert!(!install.path().join("drivers/vendor.jar").exists());
    press("\r");
    screen.wait_for("no driver installed yet");
    press("q");
    let status = child.wait().expect("exit");
    assert!(status.success(), "{status:?}");
}

/// Waits until a file whose name ends with `suffix` appears in `dir`.
fn appears(dir: &std::path::Path, suffix: &str) -> std::path::PathBuf {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(p) = std::fs::read_dir(dir).ok().and_then(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .find(|p| p.to_string_lossy().ends_with(suffix))
        }) {
            return p;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {suffix} in {}",
            dir.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn an_interrupted_install_leaves_no_partial_file() {
    let install = tempfile::tempdir().expect("install");
    // 8 MiB at 32 KiB per 40 ms: ten seconds, time enough to interrupt it.
    let url = slow_server(jar(8 * 1024 * 1024));
    std::fs::write(
        install.path().join("jdbcList"),
        format!("vendor:Vendor driver:{url}\n"),
    )
    .expect("list");
    let drivers = install.path().join("drivers");
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let child = Command::new(root().join("bin/jdbcManager"))
            .args(["add", "vendor"])
            .env("WEFT_BIN", weft_bin())
            .env("WEFT_INSTALL", install.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("jdbcManager");
        let partial = appears(&drivers, ".jar.part");
        let sent = Command::new("kill")
            .arg(signal)
            .arg(child.id().to_string())
            .status()
            .expect("kill");
        assert!(sent.success());
        let o = child.wait_with_output().expect("wait");
        assert_eq!(o.status.code(), Some(code), "{signal}: {:?}", text(&o));
        assert!(!partial.exists(), "{signal}: the partial file was removed");
        assert!(!drivers.join("vendor.jar").exists());
    }
    // Killed outright, it cannot clean up: the next start does, and says so.
    let mut child = Command::new(root().join("bin/jdbcManager"))
        .args(["add", "vendor"])
        .env("WEFT_BIN", weft_bin())
        .env("WEFT_INSTALL", install.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("jdbcManager");
    let partial = appears(&drivers, ".jar.part");
    child.kill().expect("kill -9");
    let _ = child.wait();
    assert!(partial.exists(), "a killed install leaves its partial file");
    let o = jdbc_manager(install.path(), &["list"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(
        text(&o).1.contains("left by an install that was stopped"),
        "{:?}",
        text(&o)
    );
    assert!(!partial.exists(), "the next start removed it");
}
