//! The ways out: e-mail through an SMTP server named in the key file (lettre: STARTTLS,
//! implicit TLS or, for a relay on this machine, none; authentication; several
//! recipients), and webhooks (an HTTP POST through reqwest, its body signed with
//! HMAC-SHA256 under a secret from the key file). Each send is bounded by a timeout; an
//! answer other than success is an error that says what the other side said.

use hmac::{Hmac, Mac as _};
use std::time::Duration;
use weft_core::keys::Entry;
use weft_repo::notifications::ChannelDef;

/// The header carrying a webhook's notification id (the same on every try: a receiver that
/// saw it already can drop the repeat).
pub const ID_HEADER: &str = "Weft-Notification-Id";
/// The header carrying the time the signature was made (seconds since 1970).
pub const TIMESTAMP_HEADER: &str = "Weft-Timestamp";
/// The header carrying `sha256=` and the hex HMAC-SHA256 of `TIMESTAMP.BODY`.
pub const SIGNATURE_HEADER: &str = "Weft-Signature";

/// The default time a send may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The signature of a webhook's `body` sent at `timestamp` under `secret`: `sha256=` and
/// the lowercase hex of HMAC-SHA256 over `TIMESTAMP.BODY`.
pub fn signature(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    // HMAC takes a key of any length.
    let mut mac = match Hmac::<sha2::Sha256>::new_from_slice(secret) {
        Ok(m) => m,
        Err(e) => return format!("invalid key: {e}"),
    };
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let bytes = mac.finalize().into_bytes();
    let mut out = String::with_capacity(7 + bytes.len() * 2);
    out.push_str("sha256=");
    for b in bytes {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// POSTs `body` (JSON) to the channel's URL with the notification's id and, with a
/// secret, its signature.
///
/// # Errors
///
/// What went wrong, in words: the URL, the connection, the timeout, or the answer's status
/// and its first line.
pub fn webhook(
    channel: &ChannelDef,
    secret: Option<&str>,
    id: i64,
    body: &str,
    now_unix: i64,
) -> Result<(), String> {
    let url = channel
        .url
        .as_deref()
        .ok_or("the webhook channel has no `url`")?;
    let timeout = channel
        .timeout_seconds
        .and_then(|s| u64::try_from(s).ok())
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs);
    let client = reqwest::blocking::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
    let mut request = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(
            reqwest::header::USER_AGENT,
            concat!("weft/", env!("CARGO_PKG_VERSION")),
        )
        .header(ID_HEADER, id.to_string())
        .header(TIMESTAMP_HEADER, now_unix.to_string());
    if let Some(secret) = secret {
        request = request.header(
            SIGNATURE_HEADER,
            signature(secret.as_bytes(), now_unix, body.as_bytes()),
        );
    }
    let response = request
        .body(body.to_owned())
        .send()
        .map_err(|e| format!("POST {}: {}", redact(url), chain(&e)))?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    // The first line of what it said, bounded.
    let text = response.text().unwrap_or_default();
    let first = text
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect::<String>();
    Err(format!(
        "POST {}: the receiver answered {status}{}",
        redact(url),
        if first.is_empty() {
            String::new()
        } else {
            format!(": {first}")
        }
    ))
}

/// A URL without its query (where hooks often carry a token), for messages.
fn redact(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            if u.query().is_some() {
                u.set_query(Some("..."));
            }
            let _ = u.set_password(None);
            u.to_string()
        }
        Err(_) => "(the channel's url)".to_owned(),
    }
}

/// An error with its causes, as one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

/// How an SMTP server is reached, from its key-file entry: `smtp://HOST[:PORT]` (STARTTLS,
/// required; port 587), `smtps://HOST[:PORT]` (TLS from the start; port 465); option
/// `tls=none` for a relay on this machine that has no TLS; option `ca=FILE` for a server
/// whose certificate a private CA signed (then only that CA is trusted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmtpServer {
    /// Host name (the certificate must name it).
    pub host: String,
    /// Port.
    pub port: u16,
    /// How TLS is used.
    pub tls: SmtpTls,
    /// The PEM file of the CA to trust instead of the public ones.
    pub ca: Option<String>,
    /// User and password, when the entry has a user.
    pub credentials: Option<(String, String)>,
}

/// How an SMTP connection uses TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpTls {
    /// STARTTLS, required.
    StartTls,
    /// TLS from the first byte (SMTPS).
    Implicit,
    /// None (a relay on this machine).
    None,
}

impl SmtpServer {
    /// Reads the key-file entry of an SMTP server (its password from its secret store's
    /// program, when it names one).
    ///
    /// # Errors
    ///
    /// What in the entry is wrong, or why its program failed.
    pub fn of(entry: &Entry) -> Result<SmtpServer, String> {
        let entry = entry.resolved().map_err(|e| e.to_string())?;
        let entry = entry.as_ref();
        let what = format!("key file entry `{}`", entry.key);
        let url = reqwest::Url::parse(&entry.url).map_err(|e| {
            format!(
                "{what}: `{}` is not a URL ({e}); write smtp://HOST:587 or smtps://HOST:465",
                entry.url
            )
        })?;
        let (mut tls, port) = match url.scheme() {
            "smtp" => (SmtpTls::StartTls, 587),
            "smtps" => (SmtpTls::Implicit, 465),
            other => {
                return Err(format!(
                    "{what}: scheme `{other}` is not smtp (STARTTLS) or smtps (TLS from the start)"
                ));
            }
        };
        match entry.option("tls") {
            None => {}
            Some("none") => tls = SmtpTls::None,
            Some("starttls") => tls = SmtpTls::StartTls,
            Some("implicit") => tls = SmtpTls::Implicit,
            Some(other) => {
                return Err(format!(
                    "{what}: option tls={other} is not none, starttls or implicit"
                ));
            }
        }
        let host = url
            .host_str()
            .ok_or_else(|| format!("{what}: `{}` names no host", entry.url))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        Ok(SmtpServer {
            host,
            port: url.port().unwrap_or(port),
            tls,
            ca: entry.option("ca").map(str::to_owned),
            credentials: (!entry.user.is_empty())
                .then(|| (entry.user.clone(), entry.password.clone())),
        })
    }
}

/// Sends a plain-text mail with `subject` and `body` from the channel's sender to its
/// recipients through `server`.
///
/// # Errors
///
/// What went wrong: an address, the CA file, the connection, TLS, authentication, or the
/// server's answer.
pub fn email(
    channel: &ChannelDef,
    server: &SmtpServer,
    subject: &str,
    body: &str,
    timeout: Duration,
) -> Result<(), String> {
    use lettre::Transport as _;
    use lettre::message::{Mailbox, header::ContentType};
    use lettre::transport::smtp::client::{Certificate, CertificateStore, Tls, TlsParameters};
    let from: Mailbox = channel
        .from
        .as_deref()
        .ok_or("the e-mail channel has no `from`")?
        .parse()
        .map_err(|e| format!("`from` is not an address: {e}"))?;
    let mut message = lettre::Message::builder()
        .from(from)
        .subject(subject.replace(['\r', '\n'], " "))
        .header(ContentType::TEXT_PLAIN);
    for to in &channel.to {
        let mailbox: Mailbox = to
            .parse()
            .map_err(|e| format!("recipient `{to}` is not an address: {e}"))?;
        message = message.to(mailbox);
    }
    let message = message
        .body(body.to_owned())
        .map_err(|e| format!("the mail cannot be made: {e}"))?;
    let params = || -> Result<TlsParameters, String> {
        let mut b = TlsParameters::builder(server.host.clone());
        if let Some(ca) = &server.ca {
            let pem = std::fs::read(ca).map_err(|e| format!("CA file {ca}: {e}"))?;
            if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
                return Err(format!("CA file {ca} holds no PEM certificate"));
            }
            let cert = Certificate::from_pem(&pem).map_err(|e| format!("CA file {ca}: {e}"))?;
            b = b
                .certificate_store(CertificateStore::None)
                .add_root_certificate(cert);
        }
        b.build()
            .map_err(|e| format!("TLS for {}: {e}", server.host))
    };
    let tls = match server.tls {
        SmtpTls::StartTls => Tls::Required(params()?),
        SmtpTls::Implicit => Tls::Wrapper(params()?),
        SmtpTls::None => Tls::None,
    };
    let mut transport = lettre::SmtpTransport::builder_dangerous(server.host.as_str())
        .port(server.port)
        .tls(tls)
        .timeout(Some(timeout));
    if let Some((user, password)) = &server.credentials {
        transport =
            transport.credentials(lettre::transport::smtp::authentication::Credentials::new(
                user.clone(),
                password.clone(),
            ));
    }
    transport
        .build()
        .send(&message)
        .map(|_| ())
        .map_err(|e| format!("SMTP {}:{}: {}", server.host, server.port, chain(&e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_the_hmac_of_the_timestamp_and_the_body() {
        // Computed independently, with Python's hmac module:
        // hmac.new(b"s3cret", b'1700000000.{"a":1}', hashlib.sha256).hexdigest()
        assert_eq!(
            signature(b"s3cret", 1_700_000_000, br#"{"a":1}"#),
            "sha256=1698a50bc74d1ff1db85c4e0a5297c2ad9fdba245d5737cdb789e4cc6e098940"
        );
    }

    fn entry(url: &str, user: &str, options: &[(&str, &str)]) -> Entry {
        Entry {
            key: "mail".to_owned(),
            kind: "smtp".to_owned(),
            url: url.to_owned(),
            user: user.to_owned(),
            password: "pw".to_owned(),
            options: options
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    #[test]
    fn an_smtp_entry_says_how_to_reach_the_server() {
        let s = SmtpServer::of(&entry("smtp://mail.example.com", "weft", &[])).expect("ok");
        assert_eq!((s.port, s.tls), (587, SmtpTls::StartTls));
        assert_eq!(s.credentials, Some(("weft".to_owned(), "pw".to_owned())));
        let s = SmtpServer::of(&entry("smtps://mail.example.com", "", &[("ca", "/x.pem")]))
            .expect("ok");
        assert_eq!(
            (s.port, s.tls, s.ca.as_deref()),
            (465, SmtpTls::Implicit, Some("/x.pem"))
        );
        assert_eq!(s.credentials, None);
        let s =
            SmtpServer::of(&entry("smtp://127.0.0.1:2525", "", &[("tls", "none")])).expect("ok");
        assert_eq!(
            (s.host.as_str(), s.port, s.tls),
            ("127.0.0.1", 2525, SmtpTls::None)
        );
        let e = SmtpServer::of(&entry("http://x", "", &[])).expect_err("scheme");
        assert!(
            e.contains("key file entry `mail`") && e.contains("`http`"),
            "{e}"
        );
        let e = SmtpServer::of(&entry("smtp://x", "", &[("tls", "maybe")])).expect_err("tls");
        assert!(e.contains("tls=maybe"), "{e}");
    }
}
