//! A PostgreSQL client for weft's plain threads, shared by the `postgresql` bridge plugin
//! (plugins/postgres) and the host's PostgreSQL repository:
//!
//! - [`session`]: a tokio-postgres client and its connection driven from a plain thread;
//! - [`tls`]: the rustls configurations of the `sslmode`s;
//! - [`target`]: what a key file entry asks for (URL, user, password and the connection
//!   options `sslmode`, `sslrootcert`, `application_name`, `connect_timeout`), the options it
//!   does not know handed back to the caller;
//! - [`describe_error`]: PostgreSQL's error with its message, detail, hint and position.

pub mod session;
pub mod tls;

pub use session::Session;
pub use tokio_postgres;

use std::str::FromStr;
use std::time::Duration;
use tokio_postgres::config::{Host, SslMode};

/// What an error says, with its causes: `tokio_postgres::Error` shows only its kind
/// ("db error"), so the server's message, detail, hint and position, or the I/O cause, are
/// added here.
pub fn describe_error(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut m = format!("{} ({})", db.message(), db.code().code());
        if let Some(d) = db.detail() {
            m.push_str(&format!("; {d}"));
        }
        if let Some(h) = db.hint() {
            m.push_str(&format!("; hint: {h}"));
        }
        if let Some(tokio_postgres::error::ErrorPosition::Original(p)) = db.position() {
            m.push_str(&format!("; at character {p}"));
        }
        return m;
    }
    let mut m = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        m.push_str(&format!(": {c}"));
        cause = c.source();
    }
    m
}

/// What `SslMode` an `sslmode` option asks for.
pub fn ssl_mode_of(mode: &str) -> Option<SslMode> {
    match mode {
        "disable" => Some(SslMode::Disable),
        "prefer" => Some(SslMode::Prefer),
        "require" | "verify-full" => Some(SslMode::Require),
        _ => None,
    }
}

/// What an entry asks for, read from its URL and connection options.
pub struct Target {
    /// The client's configuration.
    pub config: tokio_postgres::Config,
    /// The TLS connector its `sslmode` asks for.
    pub tls: tokio_postgres_rustls::MakeRustlsConnect,
    /// `host:port`, for messages.
    pub place: String,
}

/// Options as `(name, value)`, in the entry's order.
pub type Options<'a> = Vec<(&'a str, &'a str)>;

/// The options [`target`] reads; any other is the caller's.
pub const CONNECTION_OPTIONS: &[&str] = &[
    "sslmode",
    "sslrootcert",
    "application_name",
    "connect_timeout",
];

/// Reads an entry: `url` is `postgresql://HOST:PORT/DATABASE` or a libpq `host=... dbname=...`
/// string; `user` and `password`, when not empty, replace the URL's; of `options`, those in
/// [`CONNECTION_OPTIONS`] are read here (`application_name` defaults to `weft`,
/// `connect_timeout` to 10 seconds, `sslmode` to `prefer`) and the others come back in order.
///
/// # Errors
///
/// What is wrong, said without the password: a URL that is neither form, an option value
/// that is not one, a root certificate file that cannot be read.
pub fn target<'a>(
    url: &str,
    user: &str,
    password: &str,
    options: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<(Target, Options<'a>), String> {
    let mut config = tokio_postgres::Config::from_str(url.trim()).map_err(|e| {
        format!(
            "the URL is not a PostgreSQL URL (postgresql://HOST:PORT/DATABASE) or `host=... dbname=...` string: {}",
            describe_error(&e)
        )
    })?;
    if !user.is_empty() {
        config.user(user);
    }
    if !password.is_empty() {
        config.password(password);
    }
    config.application_name("weft");
    config.connect_timeout(Duration::from_secs(10));
    let mut mode = "prefer".to_owned();
    let mut root_cert = None;
    let mut rest = Vec::new();
    for (k, v) in options {
        match k {
            "sslmode" => mode = v.trim().to_owned(),
            "sslrootcert" => root_cert = Some(v.trim().to_owned()),
            "application_name" => {
                config.application_name(v);
            }
            "connect_timeout" => {
                let secs: u64 = v
                    .trim()
                    .parse()
                    .map_err(|_| format!("connect_timeout is a number of seconds, not `{v}`"))?;
                config.connect_timeout(Duration::from_secs(secs.max(1)));
            }
            _ => rest.push((k, v)),
        }
    }
    let (ssl, tls) = tls::connector(&mode, root_cert.as_deref())?;
    config.ssl_mode(ssl);
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    Ok((
        Target {
            config,
            tls,
            place: format!("{host}:{port}"),
        },
        rest,
    ))
}

#[cfg(test)]
mod tests {
    use super::target;

    #[test]
    fn an_entry_s_connection_options_are_read_and_the_rest_handed_back() {
        let (t, rest) = target(
            "postgresql://db.example:5433/w",
            "etl",
            "pw",
            [
                ("sslmode", "disable"),
                ("idle_timeout", "5"),
                ("connect_timeout", "3"),
                ("search_path", "a"),
            ],
        )
        .expect("target");
        assert_eq!(t.place, "db.example:5433");
        assert_eq!(t.config.get_user(), Some("etl"));
        assert_eq!(
            t.config.get_connect_timeout(),
            Some(&std::time::Duration::from_secs(3))
        );
        assert_eq!(rest, vec![("idle_timeout", "5"), ("search_path", "a")]);
        let (t, _) = target("host=10.0.0.5 dbname=s", "", "", []).expect("libpq form");
        assert_eq!(t.place, "10.0.0.5:5432");
    }

    #[test]
    fn a_bad_value_is_named_and_the_password_never() {
        for (url, options, expect) in [
            ("nonsense://x", vec![], "not a PostgreSQL URL"),
            (
                "postgresql://h/d",
                vec![("sslmode", "maybe")],
                "sslmode is disable",
            ),
            (
                "postgresql://h/d",
                vec![("connect_timeout", "soon")],
                "connect_timeout is a number",
            ),
        ] {
            let e = target(url, "u", "s3cret", options).err().expect("refused");
            assert!(e.contains(expect) && !e.contains("s3cret"), "{e}");
        }
    }
}
