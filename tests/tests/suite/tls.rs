//! HTTPS with the real binary and real TLS clients (issue 28, item 5): `weft serve
//! --tls-cert --tls-key` with a certificate of a private CA made by `openssl`; curl
//! (OpenSSL) and the `weft` client with `--ca` speak to it, a client that does not trust the
//! CA is refused in the handshake, plain HTTP gets no answer; the certificate renewed on
//! disk is served without a restart, a broken renewal keeps the last good one, and a start
//! with a key that is not the certificate's fails naming both files.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `openssl ARGS` in `dir`, which must succeed.
fn openssl(dir: &Path, args: &[&str]) {
    let o = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl (Debian package openssl)");
    assert!(
        o.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A private CA `NAME-ca.pem` and a server certificate `NAME.pem` (key `NAME.key`) it
/// signed for localhost and 127.0.0.1, in `dir`.
fn certificates(dir: &Path, name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let ca_key = format!("{name}-ca.key");
    let ca = format!("{name}-ca.pem");
    let mut args = vec!["req", "-x509"];
    args.extend(ec);
    args.extend(["-keyout", &ca_key, "-out", &ca, "-days", "2"]);
    let subject = format!("/CN=weft test CA {name}");
    args.extend(["-subj", &subject]);
    openssl(dir, &args);
    let key = format!("{name}.key");
    let csr = format!("{name}.csr");
    let mut args = vec!["req"];
    args.extend(ec);
    args.extend(["-keyout", &key, "-out", &csr, "-subj", "/CN=localhost"]);
    openssl(dir, &args);
    let ext = format!("{name}.ext");
    std::fs::write(
        dir.join(&ext),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .expect("ext");
    let cert = format!("{name}.pem");
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-out",
            &cert,
            "-days",
            "2",
            "-extfile",
            &ext,
        ],
    );
    (dir.join(ca), dir.join(cert), dir.join(key))
}

/// `curl` POSTing `ListHosts` to `url` trusting `ca` (or nothing but the system's roots):
/// its exit code and what it printed.
fn curl(url: &str, ca: Option<&Path>) -> (Option<i32>, String) {
    let mut c = Command::new("curl");
    c.args(["-sS", "--max-time", "10", "-X", "POST"])
        .args(["-H", "content-type: application/json"])
        .args(["-d", r#"{"command": "ListHosts", "payload": {}}"#]);
    if let Some(ca) = ca {
        c.arg("--cacert").arg(ca);
    }
    let o = c.arg(url).output().expect("curl (Debian package curl)");
    let (out, err) = text(&o);
    (o.status.code(), format!("{out}{err}"))
}

/// Replaces `to` by `from`'s bytes in one rename, as a renewal tool does.
fn replace(from: &Path, to: &Path) {
    let next = to.with_extension("next");
    std::fs::copy(from, &next).expect("copy");
    std::fs::rename(&next, to).expect("rename");
}

#[test]
fn https_with_a_private_ca_is_spoken_by_curl_and_weft_and_a_renewed_certificate_is_served() {
    let dir = tempfile::tempdir().expect("dir");
    let (ca1, cert1, key1) = certificates(dir.path(), "first");
    let (ca2, cert2, key2) = certificates(dir.path(), "second");
    // What the server reads: copies, which a renewal replaces.
    let (cert, key) = (dir.path().join("server.pem"), dir.path().join("server.key"));
    replace(&cert1, &cert);
    replace(&key1, &key);
    let w = Weft::start_with(
        &[
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            &cert.display().to_string(),
            "--tls-key",
            &key.display().to_string(),
        ],
        &[],
    );
    assert!(w.url.starts_with("https://127.0.0.1:"), "{}", w.url);
    // curl trusting the CA: the answer; not trusting it: refused in the handshake.
    let (code, out) = curl(&w.url, Some(&ca1));
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("\"thisHost\""), "{out}");
    let (code, out) = curl(&w.url, None);
    assert_eq!(code, Some(60), "an unknown CA is refused: {out}");
    // Plain HTTP gets no HTTP answer.
    let plain = w.url.replace("https://", "http://");
    let (code, out) = curl(&plain, None);
    assert_ne!(code, Some(0), "{out}");
    assert!(!out.contains("thisHost"), "{out}");
    // The weft client: with --ca, and without (the system's roots do not hold the CA).
    let ca1_text = ca1.display().to_string();
    let (code, out, err) = w.cli(&["hosts", "--url", &w.url, "--ca", &ca1_text]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("(this)"), "{out}");
    let (code, _, err) = w.cli(&["hosts", "--url", &w.url]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.to_lowercase().contains("certificate"), "{err}");
    // The key file's entry names the https address; its option ca is the CA to trust.
    let (code, url, _) = w.cli(&["getkey", "weft_server"]);
    assert_eq!((code, url.trim()), (Some(0), w.url.as_str()));
    let (code, _, err) = w.cli(&["hosts", "--ca", "/nonexistent/ca.pem"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("the CA file /nonexistent/ca.pem does not read"),
        "{err}"
    );
    // Renewed on disk: served from the next handshake after the server looked (at most a
    // second), without a restart; the old CA no longer fits.
    replace(&cert2, &cert);
    replace(&key2, &key);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while curl(&w.url, Some(&ca2)).0 != Some(0) {
        assert!(
            std::time::Instant::now() < deadline,
            "the renewed certificate was not served"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(curl(&w.url, Some(&ca1)).0, Some(60));
    // A renewal that does not read keeps the last good pair, and says so in the log.
    std::fs::write(&cert, "-----BEGIN CERTIFICATE-----\nnot base64\n").expect("break");
    let logs = || -> String {
        std::fs::read_dir(w.home.path().join("logs"))
            .expect("logs")
            .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !logs().contains("does not read; the last good one is served") {
        assert!(
            std::time::Instant::now() < deadline,
            "the broken renewal was not noticed"
        );
        let _ = curl(&w.url, Some(&ca2));
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let (code, out) = curl(&w.url, Some(&ca2));
    assert_eq!(code, Some(0), "{out}");
    // A start with a key that is not the certificate's fails, naming both files.
    let home = tempfile::tempdir().expect("home");
    let o = Command::new(weft_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--tls-cert"])
        .arg(&cert1)
        .arg("--tls-key")
        .arg(&key2)
        .env("WEFT_HOME", home.path())
        .output()
        .expect("weft serve");
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("is not the key of the certificate") && err.contains("second.key"),
        "{err}"
    );
}
