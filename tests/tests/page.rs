//! End to end: the monitoring page as the real `weft serve` serves it over HTTP: the page and
//! its files at the root, with the headers that keep other sites from using them (a script
//! policy of the server's own files only, no frames, no sniffing), a foreign `Host` or
//! `Origin` refused, unknown files 404 and other methods 405, the page the same beyond
//! loopback (it holds no data; its commands need the token as every client does).

mod common;

use common::*;

/// GET `path` of the server of service URL `url` with extra headers: status, headers, body.
fn get(
    url: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, reqwest::header::HeaderMap, String) {
    weft::init_tls();
    let base = url.trim_end_matches("/weft/service");
    let mut req = reqwest::blocking::Client::new().get(format!("{base}{path}"));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().expect("request");
    let status = resp.status().as_u16();
    let h = resp.headers().clone();
    (status, h, resp.text().expect("body"))
}

fn header<'a>(h: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    h.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

#[test]
fn the_page_and_its_files_are_served_with_a_strict_policy() {
    let w = Weft::start();
    let (st, h, body) = get(&w.url, "/", &[]);
    assert_eq!(st, 200, "{body}");
    assert_eq!(header(&h, "content-type"), "text/html; charset=utf-8");
    assert!(
        body.contains(r#"<script type="module" src="/ui/app.js">"#),
        "{body}"
    );
    let csp = header(&h, "content-security-policy");
    for rule in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
        "connect-src 'self'",
    ] {
        assert!(csp.contains(rule), "{rule} in {csp}");
    }
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
        "{csp}"
    );
    assert_eq!(header(&h, "x-frame-options"), "DENY");
    assert_eq!(header(&h, "x-content-type-options"), "nosniff");
    // Every file the page names is there, with its type.
    for (path, kind) in [
        ("/ui/app.js", "text/javascript; charset=utf-8"),
        ("/ui/app.css", "text/css; charset=utf-8"),
        ("/ui/favicon.svg", "image/svg+xml"),
    ] {
        assert!(body.contains(path), "the page names {path}");
        let (st, h, text) = get(&w.url, path, &[]);
        assert_eq!(st, 200, "{path}: {text}");
        assert_eq!(header(&h, "content-type"), kind, "{path}");
        assert!(!text.is_empty(), "{path}");
    }
    // The script puts what the server says on the page as text only.
    let (_, _, js) = get(&w.url, "/ui/app.js", &[]);
    assert!(
        !js.contains("innerHTML") && !js.contains("eval("),
        "no markup from data"
    );
    // Anything else is 404 or 405 in the error shape; no file outside the embedded ones.
    for path in [
        "/ui/nothing.js",
        "/ui/..%2Fsrc%2Flib.rs",
        "/ui/",
        "/index.html",
    ] {
        let (st, _, body) = get(&w.url, path, &[]);
        assert_eq!(st, 404, "{path}: {body}");
        assert!(
            body.contains("request.not_found") || body.contains("\"error\""),
            "{path}: {body}"
        );
    }
    weft::init_tls();
    let resp = reqwest::blocking::Client::new()
        .post(w.url.trim_end_matches("/weft/service").to_owned() + "/")
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .expect("request");
    assert_eq!(resp.status().as_u16(), 405);
    // A page of another site cannot load it, nor can a rebound name.
    let (st, _, body) = get(&w.url, "/", &[("origin", "http://evil.example")]);
    assert_eq!(st, 403, "{body}");
    let (st, _, body) = get(&w.url, "/ui/app.js", &[("host", "evil.example")]);
    assert_eq!(st, 403, "{body}");
}

#[test]
fn beyond_loopback_the_page_loads_and_its_commands_need_the_token() {
    let w = Weft::start_with(&["--listen", "0.0.0.0:0"], &[]);
    let (st, _, body) = get(&w.url, "/", &[]);
    assert_eq!(st, 200, "{body}");
    let (st, _, body) = get(&w.url, "/ui/app.js", &[]);
    assert_eq!(st, 200, "{body}");
    // What the page asks first: refused without the token, so the page shows its sign-in.
    let (st, v) = command(&w, "ListBatchInstances", serde_json::json!({"limit": 50}));
    assert_eq!(st, 401, "{v}");
    assert!(
        body.contains("Unauthorized") && body.contains("sessionStorage"),
        "the page signs in"
    );
}
