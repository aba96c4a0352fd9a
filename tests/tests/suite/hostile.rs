//! End to end: what a web page in a browser on the same machine, or a hostile client on a raw
//! socket, can try against the real server, and what it gets: cross-site and DNS-rebinding
//! requests refused, half-sent and idle connections closed, connections past the cap
//! answered 503, and the repository unchanged by every refusal.

use crate::common;

use common::*;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// `host:port` of the server's URL.
fn authority(w: &Weft) -> String {
    w.url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("authority")
        .to_owned()
}

fn connect(w: &Weft) -> TcpStream {
    let s = TcpStream::connect(authority(w)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    s
}

/// Sends `head` + `body` on a fresh connection and reads the whole answer (the server
/// closes or the answer's length is reached); answers status and body.
fn exchange(w: &Weft, head: &str, body: &[u8]) -> (u16, String) {
    let mut s = connect(w);
    s.write_all(head.as_bytes()).expect("head");
    s.write_all(body).expect("body");
    read_answer(&mut s)
}

fn read_answer(s: &mut TcpStream) -> (u16, String) {
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = s.read(&mut buf).unwrap_or(0);
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(usize::MAX);
            if body.len() >= len {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, text)
}

fn folder_body() -> String {
    serde_json::json!({"command": "DeployRepository", "payload": {"content":
        "{ version: 1, transformationData: { folders: [ { id: 66, path: \"/owned\" } ] } }"}})
    .to_string()
}

fn request(w: &Weft, headers: &[&str], body: &str) -> String {
    let mut head = format!(
        "POST /weft/service HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
        authority(w),
        body.len()
    );
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head
}

fn answers_with(text: &str, code: &str) -> bool {
    text.contains(&format!("\"code\":\"{code}\""))
}

#[test]
fn requests_a_web_page_can_send_are_refused_and_change_nothing() {
    let w = Weft::start();
    let before = w.dump();
    let body = folder_body();
    // A "simple" cross-site POST, which a browser sends without a preflight.
    let (st, text) = exchange(
        &w,
        &request(
            &w,
            &[
                "Content-Type: text/plain",
                "Origin: http://evil.example",
                "Sec-Fetch-Site: cross-site",
            ],
            &body,
        ),
        body.as_bytes(),
    );
    assert_eq!(st, 403, "{text}");
    assert!(answers_with(&text, "request.cross_site"), "{text}");
    // The same from a form, with JSON declared but the page's origin foreign.
    let (st, text) = exchange(
        &w,
        &request(
            &w,
            &[
                "Content-Type: application/json",
                "Origin: http://evil.example",
            ],
            &body,
        ),
        body.as_bytes(),
    );
    assert_eq!(st, 403, "{text}");
    // Same-site (another port of localhost) is another site's page too.
    let (st, _) = exchange(
        &w,
        &request(
            &w,
            &[
                "Content-Type: application/json",
                "Sec-Fetch-Site: same-site",
            ],
            &body,
        ),
        body.as_bytes(),
    );
    assert_eq!(st, 403);
    // DNS rebinding: the page's own name resolves to 127.0.0.1.
    let rebound = format!(
        "POST /weft/service HTTP/1.1\r\nHost: evil.example:17491\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let (st, text) = exchange(&w, &rebound, body.as_bytes());
    assert_eq!(st, 403, "{text}");
    assert!(answers_with(&text, "request.host"), "{text}");
    // A body not declared as JSON.
    let (st, text) = exchange(
        &w,
        &request(
            &w,
            &["Content-Type: application/x-www-form-urlencoded"],
            &body,
        ),
        body.as_bytes(),
    );
    assert_eq!(st, 415, "{text}");
    assert!(answers_with(&text, "request.content_type"), "{text}");
    assert_eq!(before, w.dump(), "a refusal changed the repository");
    // The same request from a script (no Origin, JSON declared) is served.
    let (st, text) = exchange(
        &w,
        &request(&w, &["Content-Type: application/json"], &body),
        body.as_bytes(),
    );
    assert_eq!(st, 200, "{text}");
    assert!(w.dump().contains("/owned"));
}

/// Reads until the server closes the connection; answers what came and how long it took.
fn until_closed(s: &mut TcpStream) -> (String, Duration) {
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    (String::from_utf8_lossy(&got).into_owned(), start.elapsed())
}

#[test]
fn idle_and_half_sent_connections_are_closed() {
    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0"],
        &[
            ("WEFT_HEADER_TIMEOUT_SECONDS", "1"),
            ("WEFT_BODY_TIMEOUT_SECONDS", "1"),
        ],
    );
    // Nothing sent at all.
    let mut idle = connect(&w);
    // Half a head.
    let mut half_head = connect(&w);
    half_head
        .write_all(b"POST /weft/service HTTP/1.1\r\nHost: localhost\r\n")
        .expect("half head");
    // A whole head, half a body.
    let mut half_body = connect(&w);
    half_body
        .write_all(
            b"POST /weft/service HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"command\":",
        )
        .expect("half body");
    let (text, took) = until_closed(&mut idle);
    assert!(text.is_empty(), "{text}");
    assert!(took < Duration::from_secs(20), "idle closed after {took:?}");
    let (_, took) = until_closed(&mut half_head);
    assert!(
        took < Duration::from_secs(20),
        "half head closed after {took:?}"
    );
    let (text, took) = until_closed(&mut half_body);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(answers_with(&text, "request.timeout"), "{text}");
    assert!(
        took < Duration::from_secs(20),
        "half body closed after {took:?}"
    );
    // A keep-alive connection that served a request and then idles is closed too.
    let body = serde_json::json!({"command": "ListBatchInstances", "payload": {}}).to_string();
    let mut kept = connect(&w);
    kept.write_all(
        format!(
            "POST /weft/service HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
    .expect("request");
    let (st, _) = read_answer(&mut kept);
    assert_eq!(st, 200);
    let (rest, took) = until_closed(&mut kept);
    assert!(rest.is_empty(), "{rest}");
    assert!(
        took < Duration::from_secs(20),
        "kept-alive closed after {took:?}"
    );
    // The server still answers.
    let (st, _) = post(&w.url, body.into_bytes());
    assert_eq!(st, 200);
}

#[test]
fn connections_past_the_cap_get_503_and_the_server_recovers() {
    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0"],
        &[("WEFT_MAX_CONNECTIONS", "4")],
    );
    let body = serde_json::json!({"command": "ListBatchInstances", "payload": {}}).to_string();
    let held: Vec<TcpStream> = (0..4).map(|_| connect(&w)).collect();
    // The four are accepted before the fifth: one request on each proves it.
    let mut held = held;
    for s in &mut held {
        s.write_all(
            format!(
                "POST /weft/service HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .expect("request");
        assert_eq!(read_answer(s).0, 200);
    }
    let mut fifth = connect(&w);
    fifth
        .write_all(b"POST /weft/service HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .expect("request");
    let (text, _) = until_closed(&mut fifth);
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("retry-after: 1"),
        "{text}"
    );
    assert!(answers_with(&text, "server.busy"), "{text}");
    drop(held);
    // Once they are closed, new connections are served again.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (st, _) = exchange(
            &w,
            &format!(
                "POST /weft/service HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            ),
            body.as_bytes(),
        );
        if st == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the server did not recover");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn what_hyper_cannot_read_is_answered_in_the_error_shape() {
    let w = Weft::start();
    let (st, text) = exchange(&w, "GARBAGE / NONSENSE\r\n\r\n", b"");
    assert_eq!(st, 400, "{text}");
    assert!(answers_with(&text, "request.malformed"), "{text}");
    let huge = format!(
        "POST /weft/service HTTP/1.1\r\nHost: localhost\r\nX-Big: {}\r\n\r\n",
        "a".repeat(1024 * 1024)
    );
    let (st, text) = exchange(&w, &huge, b"");
    assert!(st == 431 || st == 400, "{text}");
    assert!(
        answers_with(&text, "request.headers_too_large")
            || answers_with(&text, "request.malformed"),
        "{text}"
    );
}

fn command(w: &Weft, body: &str) -> (u16, serde_json::Value) {
    post(&w.url, body.as_bytes().to_vec())
}

#[test]
fn envelopes_and_payloads_are_read_strictly() {
    let w = Weft::start();
    let before = w.dump();
    // A key given twice: the last would win, and deploy for real.
    let content = serde_json::to_string(
        "{ version: 1, transformationData: { folders: [ { id: 66, path: \"/twice\" } ] } }",
    )
    .expect("json");
    let (st, v) = command(
        &w,
        &format!(
            r#"{{"command": "DeployRepository", "payload": {{"content": {content}, "deployOptions": {{"dryRun": true, "dryRun": false}}}}}}"#
        ),
    );
    assert_eq!(st, 400, "{v}");
    assert_eq!(
        v["error"]["details"][0]["code"], "request.duplicate_field",
        "{v}"
    );
    assert_eq!(
        v["error"]["details"][0]["path"],
        "payload.deployOptions.dryRun"
    );
    // Payload fields are checked.
    for body in [
        r#"{"command": "ListBatchInstances", "payload": {"limit": "x"}}"#,
        r#"{"command": "ListBatchInstances", "payload": {"limit": 20, "bogus": 1}}"#,
        r#"{"command": "ListBatchInstances", "payload": {"limit": 0}}"#,
        r#"{"command": "NextRuns", "payload": {"batchId": 1, "bogus": 1}}"#,
        r#"{"command": "GetBatchInstance", "payload": {"batchInstanceId": 1, "batchInstanceId": 2}}"#,
    ] {
        let (st, v) = command(&w, body);
        assert_eq!(st, 400, "{body}: {v}");
    }
    // A whole number past 2^63 - 1 is named as written, not as a rounded float.
    let (st, v) = command(
        &w,
        r#"{"command": "GetBatchInstance", "payload": {"batchInstanceId": 9223372036854775808}}"#,
    );
    assert_eq!(st, 400, "{v}");
    assert!(
        v["error"]["message"]
            .to_string()
            .contains("9223372036854775808"),
        "{v}"
    );
    // Folder paths are clean.
    for bad in [
        "/..",
        "/.",
        "/sales/..",
        "/a\\\\b",
        "/a\\u0000b",
        "/sales/./x",
    ] {
        let doc = format!(
            "{{\"version\": 1, \"transformationData\": {{\"folders\": [{{\"id\": 67, \"path\": \"{bad}\"}}]}}}}"
        );
        let (st, v) = post(&w.url, deploy_body(&doc));
        assert_eq!(st, 422, "{bad}: {v}");
        let codes: Vec<&str> = v["error"]["details"]
            .as_array()
            .expect("details")
            .iter()
            .filter_map(|d| d["code"].as_str())
            .collect();
        // A NUL is refused as such first, wherever it stands (`dsr.nul`).
        let want: &[&str] = if bad.contains("u0000") {
            &["dsr.nul", "folder.path"]
        } else {
            &["folder.path"]
        };
        assert_eq!(codes, want, "{bad}: {v}");
    }
    // Names with a NUL or a line break (they are shown in logs and messages, where these
    // cut strings or forge lines), each refused at its place.
    for bad in ["a\\u0000b", "a\\nINFO forged line", "\\t"] {
        for (doc, code, path) in [
            (
                common::sheet(68).replace("\"sheet 68\"", &format!("\"{bad}\"")),
                "sheet.name",
                "transformationData.sheets[0].attributes.name",
            ),
            (
                format!(
                    "{{\"version\": 1, \"transformationData\": {{\"connections\": [{{\"id\": 69, \"name\": \"{bad}\", \"type\": \"sqlite\"}}]}}}}"
                ),
                "connection.name",
                "transformationData.connections[0].name",
            ),
            (
                format!(
                    "{{\"version\": 1, \"transformationData\": {{\"batches\": [{{\"id\": 69, \"name\": \"{bad}\", \"schedule\": \"daily 22:00\", \"elements\": [{{\"elementType\": \"F\", \"elementId\": 10}}]}}]}}}}"
                ),
                "batch.name",
                "transformationData.batches[0].name",
            ),
        ] {
            let (st, v) = post(&w.url, deploy_body(&doc));
            assert_eq!(st, 422, "{bad}: {v}");
            let details = v["error"]["details"].as_array().expect("details");
            assert!(
                details
                    .iter()
                    .any(|d| d["code"] == code && d["path"] == path && d["line"].is_u64()),
                "{code} at {path}: {v}"
            );
        }
    }
    assert_eq!(before, w.dump(), "a refusal changed the repository");
}

#[test]
fn documents_with_many_keys_or_problems_are_answered_fast_and_small() {
    let w = Weft::start();
    let before = w.dump();
    // A field given 9,001 times in one object: 9,000 problems, of which 100 are listed.
    let fields = "folders: []\n".repeat(9_001);
    let doc = format!("{{ version: 1, transformationData: {{ {fields} }} }}");
    let start = Instant::now();
    weft::init_tls();
    let resp = reqwest::blocking::Client::new()
        .post(&w.url)
        .header("content-type", "application/json")
        .body(deploy_body(&doc))
        .send()
        .expect("request");
    assert_eq!(resp.status().as_u16(), 422);
    let text = resp.text().expect("body");
    let took = start.elapsed();
    assert!(text.len() < 64 * 1024, "{} bytes answered", text.len());
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let details = v["error"]["details"].as_array().expect("details");
    // 100 listed with their place, then one entry per code with how many more.
    assert!(details[..100].iter().all(|d| d["line"].is_u64()), "{text}");
    assert!(
        details.len() > 100 && details[100..].iter().all(|d| d["more"].is_u64()),
        "{text}"
    );
    assert_eq!(details[100]["code"], "dsr.duplicate_field");
    let repeated: u64 = details
        .iter()
        .filter(|d| d["code"] == "dsr.duplicate_field")
        .map(|d| d["more"].as_u64().unwrap_or(1))
        .sum();
    assert_eq!(repeated, 9_000, "every repeated field is counted");
    let errors: u64 = details
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| d["more"].as_u64().unwrap_or(1))
        .sum();
    let message = v["error"]["message"].to_string();
    assert!(message.contains(&format!("{errors} error(s)")), "{message}");
    // Past 10,000 members one object is refused with its own code.
    let fields: String = (0..10_001).map(|i| format!("f{i}: 1\n")).collect();
    let doc = format!("{{ version: 1, transformationData: {{ {fields} }} }}");
    let (st, v) = post(&w.url, deploy_body(&doc));
    assert_eq!(st, 422, "{v}");
    assert_eq!(v["error"]["details"][0]["code"], "dsr.too_many_keys", "{v}");
    assert!(took < Duration::from_secs(10), "answered in {took:?}");
    assert_eq!(before, w.dump());
}
