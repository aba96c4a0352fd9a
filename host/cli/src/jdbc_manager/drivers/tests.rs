//! Tests of jdbcList parsing and installs from `file:` URLs and a real HTTP server on
//! loopback (a few lines of std networking; the server answers what each path asks for).

use super::*;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;

fn sha(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A jar: a zip archive holding a class file.
fn jar_bytes() -> Vec<u8> {
    zip_of(&[("org/example/Driver.class", b"\xca\xfe\xba\xbe")])
}

/// A zip archive of `files`, stored.
fn zip_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, data) in files {
        w.start_file(
            *name,
            zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored),
        )
        .expect("entry");
        w.write_all(data).expect("data");
    }
    w.finish().expect("zip").into_inner()
}

/// Serves `/ok.jar` (the body), `/short.jar` (a body cut short), `/stall.jar` (the head
/// and a few bytes, then nothing), `/silent.jar` (no answer at all), anything else 404.
fn server(body: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut reader = BufReader::new(s.try_clone().expect("clone"));
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            loop {
                let mut l = String::new();
                if reader.read_line(&mut l).map_or(true, |n| n == 0) || l == "\r\n" {
                    break;
                }
            }
            let path = first.split_whitespace().nth(1).unwrap_or("/").to_owned();
            let _ = match path.as_str() {
                "/ok.jar" => s
                    .write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            body.len()
                        )
                        .as_bytes(),
                    )
                    .and_then(|()| s.write_all(&body)),
                "/stall.jar" | "/silent.jar" => {
                    if path == "/stall.jar" {
                        let _ = s.write_all(
                            b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nPK\x03\x04",
                        );
                    }
                    std::thread::sleep(std::time::Duration::from_secs(30));
                    Ok(())
                }
                "/short.jar" => s
                    .write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            body.len() + 100
                        )
                        .as_bytes(),
                    )
                    .and_then(|()| s.write_all(&body)),
                _ => s.write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                ),
            };
        }
    });
    format!("http://{addr}")
}

#[test]
fn parses_the_list_and_reports_bad_lines_with_their_number() {
    let text = "# drivers\n\npg:PostgreSQL 42.7 JDBC driver:https://example.org/pg.jar#sha256=ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789\nbad line\n../x:escape:file:/tmp/x.jar\nftp:nope:ftp://h/x.jar\nh2:H2:file:/usr/share/java/h2.jar\nh2:again:file:/x.jar\n";
    let (entries, problems) = parse_list(text);
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].name, "pg");
    assert_eq!(entries[0].description, "PostgreSQL 42.7 JDBC driver");
    assert_eq!(entries[0].url, "https://example.org/pg.jar");
    assert_eq!(
        entries[0].sha256.as_deref(),
        Some("abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789")
    );
    assert_eq!(entries[1].url, "file:/usr/share/java/h2.jar");
    let lines: Vec<usize> = problems.iter().map(|p| p.line).collect();
    assert_eq!(lines, vec![4, 5, 6, 8], "{problems:?}");
    assert!(problems[1].message.contains("not a driver name"));
}

#[test]
fn installs_from_file_and_http_and_checks_the_checksum() {
    let dir = tempfile::tempdir().expect("dir");
    let drivers = dir.path().join("drivers");
    let jar = jar_bytes();
    let src = dir.path().join("src.jar");
    std::fs::write(&src, &jar).expect("src");
    let e = |name: &str, url: String, sha: Option<String>| Entry {
        name: name.to_owned(),
        description: String::new(),
        url,
        sha256: sha,
        line: 1,
    };
    let mut seen = Vec::new();
    let p = install(
        &e("local", format!("file:{}", src.display()), Some(sha(&jar))),
        &drivers,
        &mut |d, t| seen.push((d, t)),
    )
    .expect("file install");
    assert_eq!(std::fs::read(&p).expect("jar"), jar);
    assert_eq!(
        seen.last(),
        Some(&(jar.len() as u64, Some(jar.len() as u64))),
        "progress reached the end"
    );
    let base = server(jar.clone());
    install(
        &e("remote", format!("{base}/ok.jar"), Some(sha(&jar))),
        &drivers,
        &mut |_, _| {},
    )
    .expect("http install");
    assert_eq!(
        installed(&drivers)
            .iter()
            .map(|i| i.name.as_str())
            .collect::<Vec<_>>(),
        vec!["local", "remote"]
    );
    // Each failure has its own error, and leaves nothing behind.
    let before: Vec<_> = std::fs::read_dir(&drivers)
        .expect("dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    let err = install(
        &e("bad", format!("{base}/ok.jar"), Some("0".repeat(64))),
        &drivers,
        &mut |_, _| {},
    )
    .expect_err("checksum");
    assert!(matches!(err, InstallError::Checksum { .. }), "{err}");
    let err = install(
        &e("bad", format!("{base}/missing.jar"), None),
        &drivers,
        &mut |_, _| {},
    )
    .expect_err("404");
    assert!(
        matches!(err, InstallError::Status { status: 404, .. }),
        "{err}"
    );
    let err = install(
        &e("bad", format!("{base}/short.jar"), None),
        &drivers,
        &mut |_, _| {},
    )
    .expect_err("cut short");
    assert!(matches!(err, InstallError::Transfer { .. }), "{err}");
    let closed = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let err = install(
        &e("bad", format!("http://127.0.0.1:{closed}/x.jar"), None),
        &drivers,
        &mut |_, _| {},
    )
    .expect_err("refused");
    assert!(matches!(err, InstallError::Connect { .. }), "{err}");
    let err = install(
        &e("bad", "file:/no/such/file.jar".to_owned(), None),
        &drivers,
        &mut |_, _| {},
    )
    .expect_err("missing file");
    assert!(matches!(err, InstallError::Source { .. }), "{err}");
    let err = install(
        &e("../escape", format!("file:{}", src.display()), None),
        &drivers,
        &mut |_, _| {},
    )
    .expect_err("name");
    assert!(matches!(err, InstallError::BadName(_)), "{err}");
    let after: Vec<_> = std::fs::read_dir(&drivers)
        .expect("dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(before, after, "failed installs leave nothing behind");
    // Delete.
    delete("remote", &drivers).expect("delete");
    assert!(
        delete("remote", &drivers)
            .expect_err("gone")
            .contains("not installed")
    );
    assert!(delete("../x", &drivers).is_err());
}

fn entry(name: &str, url: String) -> Entry {
    Entry {
        name: name.to_owned(),
        description: String::new(),
        url,
        sha256: None,
        line: 1,
    }
}

#[test]
fn only_regular_files_that_are_jars_are_installed() {
    let dir = tempfile::tempdir().expect("dir");
    let drivers = dir.path().join("drivers");
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    for (what, path) in [
        ("a device", PathBuf::from("/dev/zero")),
        ("a folder", dir.path().to_owned()),
        ("a pipe (opening it would wait for a writer)", fifo),
    ] {
        let err = install(
            &entry("dev", format!("file:{}", path.display())),
            &drivers,
            &mut |_, _| {},
        )
        .expect_err(what);
        assert!(
            matches!(err, InstallError::NotAFile { .. }),
            "{what}: {err}"
        );
    }
    let keyfile = dir.path().join("keyfile");
    std::fs::write(&keyfile, "0|sqlite|/srv/weft/repository.db|||\n").expect("keyfile");
    let no_class = dir.path().join("docs.zip");
    std::fs::write(&no_class, zip_of(&[("README.txt", b"hello")])).expect("zip");
    for (what, path) in [
        ("a key file", &keyfile),
        ("a zip without classes", &no_class),
    ] {
        let err = install(
            &entry("notjar", format!("file:{}", path.display())),
            &drivers,
            &mut |_, _| {},
        )
        .expect_err(what);
        assert!(matches!(err, InstallError::NotAJar { .. }), "{what}: {err}");
    }
    // The JDBC service file alone is enough.
    let service = dir.path().join("service.jar");
    std::fs::write(
        &service,
        zip_of(&[("META-INF/services/java.sql.Driver", b"org.example.Driver\n")]),
    )
    .expect("jar");
    install(
        &entry("service", format!("file:{}", service.display())),
        &drivers,
        &mut |_, _| {},
    )
    .expect("a jar with the service file");
    let names: Vec<String> = installed(&drivers).into_iter().map(|i| i.name).collect();
    assert_eq!(names, vec!["service"], "nothing else was installed");
    let left: Vec<_> = std::fs::read_dir(&drivers)
        .expect("dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 1, "no partial file left: {left:?}");
}

#[test]
fn downloads_are_bounded_in_size_and_time() {
    let dir = tempfile::tempdir().expect("dir");
    let drivers = dir.path().join("drivers");
    let jar = jar_bytes();
    let base = server(jar.clone());
    let small = Limits {
        max_bytes: jar.len() as u64 - 1,
        ..Limits::default()
    };
    let err = install_within(
        &entry("big", format!("{base}/ok.jar")),
        &drivers,
        small,
        &mut |_, _| {},
    )
    .expect_err("too large");
    assert!(matches!(err, InstallError::TooLarge { .. }), "{err}");
    let big = dir.path().join("big.jar");
    std::fs::write(&big, &jar).expect("jar");
    let err = install_within(
        &entry("big", format!("file:{}", big.display())),
        &drivers,
        small,
        &mut |_, _| {},
    )
    .expect_err("too large from a file");
    assert!(matches!(err, InstallError::TooLarge { .. }), "{err}");
    let quick = Limits {
        read: std::time::Duration::from_millis(500),
        ..Limits::default()
    };
    for path in ["/stall.jar", "/silent.jar"] {
        let started = std::time::Instant::now();
        let err = install_within(
            &entry("slow", format!("{base}{path}")),
            &drivers,
            quick,
            &mut |_, _| {},
        )
        .expect_err(path);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{path}: gave up after {:?}",
            started.elapsed()
        );
        assert!(
            matches!(
                err,
                InstallError::Transfer { .. } | InstallError::Connect { .. }
            ),
            "{path}: {err}"
        );
    }
    assert!(installed(&drivers).is_empty());
    assert_eq!(
        std::fs::read_dir(&drivers).expect("dir").count(),
        0,
        "no partial file left"
    );
}

#[test]
fn a_second_install_of_the_same_driver_at_once_is_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let drivers = dir.path().join("drivers");
    std::fs::create_dir_all(&drivers).expect("drivers");
    let src = dir.path().join("src.jar");
    std::fs::write(&src, jar_bytes()).expect("jar");
    // The first install holds its partial file.
    let partial = drivers.join(".twice.jar.part");
    std::fs::write(&partial, b"first half").expect("partial");
    let held = std::fs::OpenOptions::new()
        .write(true)
        .open(&partial)
        .expect("open");
    held.lock().expect("lock");
    let err = install(
        &entry("twice", format!("file:{}", src.display())),
        &drivers,
        &mut |_, _| {},
    )
    .expect_err("busy");
    assert!(matches!(err, InstallError::Busy(_)), "{err}");
    assert_eq!(
        std::fs::read(&partial).expect("partial"),
        b"first half",
        "the first install's file is untouched"
    );
    drop(held);
    install(
        &entry("twice", format!("file:{}", src.display())),
        &drivers,
        &mut |_, _| {},
    )
    .expect("once the first is done");
    assert!(!partial.exists());
}

#[test]
fn partial_files_of_stopped_installs_are_cleaned_and_running_ones_kept() {
    let dir = tempfile::tempdir().expect("dir");
    let stale = dir.path().join(".old.jar.part");
    std::fs::write(&stale, b"half").expect("stale");
    let running = dir.path().join(".busy.jar.part");
    let held = std::fs::File::create(&running).expect("running");
    held.lock().expect("lock");
    let jar = dir.path().join("kept.jar");
    std::fs::write(&jar, b"x").expect("jar");
    let removed = clean_partials(dir.path());
    assert_eq!(removed, vec![stale.clone()]);
    assert!(!stale.exists());
    assert!(running.exists(), "an install in progress keeps its file");
    assert!(jar.exists());
    drop(held);
}

#[test]
fn file_urls_name_local_files_whatever_their_form() {
    let dir = tempfile::tempdir().expect("dir");
    let drivers = dir.path().join("drivers");
    let src = dir.path().join("src.jar");
    std::fs::write(&src, jar_bytes()).expect("jar");
    for (name, url) in [
        ("a", format!("file:{}", src.display())),
        ("b", format!("file://{}", src.display())),
        ("c", format!("file://localhost{}", src.display())),
        ("d", format!("FILE://LocalHost{}", src.display())),
    ] {
        install(&entry(name, url.clone()), &drivers, &mut |_, _| {})
            .unwrap_or_else(|e| panic!("{url}: {e}"));
    }
    let err = install(
        &entry("e", format!("file://fileserver{}", src.display())),
        &drivers,
        &mut |_, _| {},
    )
    .expect_err("another host");
    assert!(
        err.to_string().contains("not on host `fileserver`"),
        "{err}"
    );
}
