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

/// Serves `/ok.jar` (the body), `/short.jar` (a body cut short), anything else 404.
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
    let jar = b"PK\x03\x04 not really a jar, but bytes".to_vec();
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
