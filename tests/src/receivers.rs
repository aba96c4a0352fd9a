//! Real receivers of notifications for the end-to-end tests: an HTTP server (Python's
//! `http.server`) that checks each webhook's HMAC-SHA256 signature with Python's own `hmac`
//! and keeps every request it got, and (in `Smtp`) a real SMTP server (aiosmtpd, Debian's
//! python3-aiosmtpd) that keeps every mail. Each runs as its own process, killed on drop.

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The webhook receiver's program: keeps the first HANG requests waiting 10 s and answers
/// nothing (a receiver that hangs), answers 503 to the next FAIL (a receiver that is down),
/// then 204 to a request whose signature is right and 401 to one whose is not;
/// appends every request (headers, body, whether the signature held, the answer) to LOG as
/// a JSON line (header names in lowercase).
const WEBHOOK: &str = r#"
import hashlib, hmac, http.server, json, sys, threading, time
secret, log, fail, hang = sys.argv[1].encode(), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
lock = threading.Lock()
seen = [0]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        ts = self.headers.get("Weft-Timestamp", "")
        want = "sha256=" + hmac.new(secret, ts.encode() + b"." + body, hashlib.sha256).hexdigest()
        valid = hmac.compare_digest(want, self.headers.get("Weft-Signature", ""))
        with lock:
            seen[0] += 1
            n = seen[0]
        if n <= hang:
            time.sleep(10)
            return
        with lock:
            status = 503 if n <= hang + fail else (204 if valid else 401)
            with open(log, "a") as f:
                f.write(json.dumps({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body.decode("utf-8", "replace"), "valid": valid, "status": status}) + "\n")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

/// The JSON lines a receiver kept in `log`.
fn json_lines(log: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The lines of `log` once `done` holds of them, for 30 s at most (then as they are, for the
/// caller's assertion to say what is missing). The receiver writes each line as it gets it.
fn wait_for_lines(
    log: &std::path::Path,
    done: impl Fn(&[serde_json::Value]) -> bool,
) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = json_lines(log);
        if done(&got) || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A webhook receiver.
pub struct Webhook {
    child: Child,
    log: PathBuf,
    /// Its URL.
    pub url: String,
    _dir: tempfile::TempDir,
}

impl Webhook {
    /// Starts one that checks signatures under `secret` and answers 503 to the first
    /// `fail_first` requests.
    pub fn start(secret: &str, fail_first: usize) -> Webhook {
        Self::start_hanging(secret, 0, fail_first)
    }

    /// Starts one that keeps the first `hang_first` requests waiting without an answer, then
    /// answers 503 to `fail_first`, then takes them.
    pub fn start_hanging(secret: &str, hang_first: usize, fail_first: usize) -> Webhook {
        let dir = tempfile::tempdir().expect("receiver dir");
        let script = dir.path().join("webhook.py");
        std::fs::write(&script, WEBHOOK).expect("script");
        let log = dir.path().join("requests.jsonl");
        let mut child = Command::new("python3")
            .arg(&script)
            .arg(secret)
            .arg(&log)
            .arg(fail_first.to_string())
            .arg(hang_first.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the webhook receiver");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the receiver's port");
        let port: u16 = line.trim().parse().expect("a port");
        Webhook {
            child,
            log,
            url: format!("http://127.0.0.1:{port}/hook?token=abc"),
            _dir: dir,
        }
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        json_lines(&self.log)
    }

    /// The requests once `done` holds of them (for 30 s at most; then they are answered as
    /// they are, for the caller's assertion to say what is missing).
    pub fn wait_for(&self, done: impl Fn(&[serde_json::Value]) -> bool) -> Vec<serde_json::Value> {
        wait_for_lines(&self.log, done)
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The SMTP server's program (aiosmtpd): MODE `starttls` (STARTTLS required before
/// anything, authentication only after it) or `implicit` (TLS from the first byte), the
/// certificate and key, where to keep the mails (a JSON line each: sender, recipients, the
/// message as sent and its subject, `To` and body decoded, whether it came over TLS and who
/// authenticated), the one user and password it
/// takes, and how many mails to refuse first (451, a relay that is not ready).
const SMTP: &str = r#"
import email, email.policy, json, socket, ssl, sys, time
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
mode, cert, key, log, user, password, fail = sys.argv[1:8]
class Handler:
    def __init__(self):
        self.n = 0
    async def handle_DATA(self, server, session, envelope):
        self.n += 1
        if self.n <= int(fail):
            return "451 4.3.0 not ready, try again later"
        mail = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with open(log, "a") as f:
            f.write(json.dumps({"from": envelope.mail_from, "to": envelope.rcpt_tos,
                "message": envelope.content.decode("utf-8", "replace"),
                "subject": str(mail["subject"]), "header_to": str(mail["to"]),
                "body": mail.get_content().replace("\r\n", "\n"),
                "tls": server.transport.get_extra_info("ssl_object") is not None,
                "user": session.auth_data.login.decode() if session.authenticated else None}) + "\n")
        return "250 2.0.0 kept"
def authenticate(server, session, envelope, mechanism, data):
    ok = isinstance(data, LoginPassword) and data.login == user.encode() and data.password == password.encode()
    # handled=False: aiosmtpd answers a refusal with 535 itself.
    return AuthResult(success=ok, auth_data=data if ok else None, handled=False)
ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
ctx.load_cert_chain(cert, key)
s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
if mode == "starttls":
    c = Controller(Handler(), hostname="127.0.0.1", port=port, tls_context=ctx, require_starttls=True,
                   authenticator=authenticate, auth_require_tls=True)
else:
    c = Controller(Handler(), hostname="127.0.0.1", port=port, ssl_context=ctx,
                   authenticator=authenticate, auth_require_tls=False)
c.start()
print(port, flush=True)
while True:
    time.sleep(3600)
"#;

/// How the SMTP test server speaks TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpMode {
    /// STARTTLS, required.
    StartTls,
    /// TLS from the first byte.
    Implicit,
}

/// A real SMTP server (aiosmtpd) with a certificate for `localhost` signed by its own CA.
pub struct Smtp {
    child: Child,
    log: PathBuf,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// The CA's certificate (PEM) that signed the server's.
    pub ca: PathBuf,
    dir: tempfile::TempDir,
}

impl Smtp {
    /// Starts one in `mode` that takes `user` with `password` and refuses the first
    /// `fail_first` mails.
    pub fn start(mode: SmtpMode, user: &str, password: &str, fail_first: usize) -> Smtp {
        let dir = tempfile::tempdir().expect("smtp dir");
        crate::postgres::certificates(dir.path(), None).expect("certificates");
        let script = dir.path().join("smtp.py");
        std::fs::write(&script, SMTP).expect("script");
        let log = dir.path().join("mails.jsonl");
        // Debian's aiosmtpd is installed for Debian's Python.
        let python = if std::path::Path::new("/usr/bin/python3").exists() {
            "/usr/bin/python3"
        } else {
            "python3"
        };
        let mut child = Command::new(python)
            .arg(&script)
            .arg(match mode {
                SmtpMode::StartTls => "starttls",
                SmtpMode::Implicit => "implicit",
            })
            .arg(dir.path().join("server.crt"))
            .arg(dir.path().join("server.key"))
            .arg(&log)
            .arg(user)
            .arg(password)
            .arg(fail_first.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs aiosmtpd (Debian: python3-aiosmtpd)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the SMTP server's port");
        let port: u16 = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the SMTP server did not start: `{line}`"));
        Smtp {
            child,
            log,
            port,
            ca: dir.path().join("ca.pem"),
            dir,
        }
    }

    /// Every mail kept so far.
    pub fn mails(&self) -> Vec<serde_json::Value> {
        json_lines(&self.log)
    }

    /// The mails once `done` holds of them (30 s at most).
    pub fn wait_for(&self, done: impl Fn(&[serde_json::Value]) -> bool) -> Vec<serde_json::Value> {
        wait_for_lines(&self.log, done)
    }

    /// The folder holding its certificates.
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }
}

impl Drop for Smtp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
