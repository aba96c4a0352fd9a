//! Who may send a command: the checks that keep a web page in a browser on the same machine
//! from using the endpoint (cross-site requests and DNS rebinding), made before anything of
//! the body is read.
//!
//! - `Host` must name this server: `localhost`, a loopback address, the address it listens
//!   on, or a name in the setting `allowed_hosts` (for a proxy in front). A server listening
//!   beyond loopback is protected by its bearer token instead, so there `Host` is checked
//!   only when `allowed_hosts` is set. A request without `Host` (not a browser's) passes.
//! - `Origin`, when a browser sends one, must name an allowed host the same way; `Origin:
//!   null` (a sandboxed frame, a `file:` page) is refused.
//! - `Sec-Fetch-Site`, when sent, must be `same-origin` or `none` (typed by the user).
//! - The body must be declared `application/json`: the forms a page may send without a
//!   CORS preflight (`text/plain`, `application/x-www-form-urlencoded`,
//!   `multipart/form-data`) are refused.

use super::error::ApiError;
use axum::http::{HeaderMap, header};
use std::net::{IpAddr, SocketAddr};

/// Where the server listens and which further host names it answers to.
#[derive(Debug, Clone)]
pub struct HostRules {
    /// The address it listens on; `None` in tests without a socket (loopback then).
    pub listen: Option<SocketAddr>,
    /// The setting `allowed_hosts`, lower case, without ports.
    pub allowed: Vec<String>,
    /// Whether every request carries a bearer token (listening beyond loopback).
    pub token_required: bool,
}

impl HostRules {
    /// The rules for a server listening on `listen` with the setting `allowed_hosts`.
    pub fn new(listen: Option<SocketAddr>, allowed_hosts: &[String], token_required: bool) -> Self {
        HostRules {
            listen,
            allowed: allowed_hosts
                .iter()
                .map(|h| strip_port(h.trim()).to_ascii_lowercase())
                .filter(|h| !h.is_empty())
                .collect(),
            token_required,
        }
    }

    /// Whether `host` (a `Host` value or the authority of an `Origin`, port included or not)
    /// names this server.
    fn allows(&self, host: &str) -> bool {
        let name = strip_port(host).to_ascii_lowercase();
        if name == "localhost" || self.allowed.contains(&name) {
            return true;
        }
        let bare = name.trim_start_matches('[').trim_end_matches(']');
        match bare.parse::<IpAddr>() {
            Ok(ip) if ip.is_loopback() => true,
            Ok(ip) => self.listen.is_some_and(|l| {
                // A wildcard listener answers on every address of the machine; an address
                // (unlike a name) cannot be rebound by DNS.
                l.ip() == ip || l.ip().is_unspecified()
            }),
            Err(_) => false,
        }
    }

    /// Whether `Host` is checked at all (see the module's comment).
    fn checks_host(&self) -> bool {
        !self.token_required || !self.allowed.is_empty()
    }
}

/// `host:port`, `[v6]:port`, `host` or `[v6]` without the port.
fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    match host.rsplit_once(':') {
        // More than one colon: a bare IPv6 address, no port.
        Some((name, _)) if !name.contains(':') => name,
        _ => host,
    }
}

fn refused(code: &'static str, message: String) -> ApiError {
    ApiError::Forbidden { code, message }
}

/// Whether the request is a browser's top-level navigation to a document (a link followed,
/// an address typed): `Sec-Fetch-Mode: navigate` with `Sec-Fetch-Dest: document`, which a
/// page of another site cannot forge (fetches, frames and forms say otherwise).
pub fn is_navigation(headers: &HeaderMap) -> bool {
    let is = |name: &str, want: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case(want))
    };
    is("sec-fetch-mode", "navigate") && is("sec-fetch-dest", "document")
}

/// For the page itself: a top-level navigation from anywhere (a link in a chat) checks only
/// the `Host` (a foreign one is a DNS rebinding); anything else is checked as
/// [`check_origin`] says.
///
/// # Errors
///
/// As [`check_origin`].
pub fn check_navigation(rules: &HostRules, headers: &HeaderMap) -> Result<(), ApiError> {
    if is_navigation(headers) {
        check_host(rules, headers)
    } else {
        check_origin(rules, headers)
    }
}

/// Checks `Host`, `Origin` and `Sec-Fetch-Site`.
///
/// # Errors
///
/// 403 `request.host` for a foreign `Host`, 403 `request.cross_site` for a request a page
/// of another site made.
pub fn check_origin(rules: &HostRules, headers: &HeaderMap) -> Result<(), ApiError> {
    check_host(rules, headers)?;
    check_site(rules, headers)
}

/// Checks `Host` alone.
fn check_host(rules: &HostRules, headers: &HeaderMap) -> Result<(), ApiError> {
    if rules.checks_host()
        && let Some(host) = headers.get(header::HOST)
    {
        let host = host.to_str().unwrap_or("");
        if !rules.allows(host) {
            return Err(refused(
                "request.host",
                format!(
                    "the Host header `{}` does not name this server; use localhost or a loopback address, or add the name to the setting allowed_hosts (for a proxy in front of weft)",
                    host.chars().take(100).collect::<String>()
                ),
            ));
        }
    }
    Ok(())
}

/// Checks `Origin` and `Sec-Fetch-Site`.
fn check_site(rules: &HostRules, headers: &HeaderMap) -> Result<(), ApiError> {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("null");
        let authority = origin
            .split_once("://")
            .map(|(_, rest)| rest.split('/').next().unwrap_or(""));
        let same = authority.is_some_and(|a| {
            if rules.checks_host() {
                rules.allows(a)
            } else {
                // Beyond loopback without allowed_hosts: the page must come from the host
                // the request is sent to.
                headers
                    .get(header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .is_some_and(|h| h.eq_ignore_ascii_case(a))
            }
        });
        if !same {
            return Err(refused(
                "request.cross_site",
                format!(
                    "a request from the web page of another site (Origin `{}`) is refused",
                    origin.chars().take(100).collect::<String>()
                ),
            ));
        }
    }
    if let Some(site) = headers.get("sec-fetch-site") {
        let site = site.to_str().unwrap_or("");
        if !site.eq_ignore_ascii_case("same-origin") && !site.eq_ignore_ascii_case("none") {
            return Err(refused(
                "request.cross_site",
                format!(
                    "a request from the web page of another site (Sec-Fetch-Site `{}`) is refused",
                    site.chars().take(40).collect::<String>()
                ),
            ));
        }
    }
    Ok(())
}

/// Checks that the body is declared `application/json` (parameters such as `charset` may
/// follow).
///
/// # Errors
///
/// 415 `request.content_type` otherwise.
pub fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let given = headers
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or("?"));
    let json = given.is_some_and(|v| {
        v.split(';')
            .next()
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
    });
    if json {
        return Ok(());
    }
    Err(ApiError::ContentType(match given {
        Some(v) => format!(
            "the body is declared `{}`; send it as `Content-Type: application/json`",
            v.chars().take(100).collect::<String>()
        ),
        None => "the request has no Content-Type; send `Content-Type: application/json`".to_owned(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().expect("header value"));
        }
        h
    }

    fn loopback() -> HostRules {
        HostRules::new(Some("127.0.0.1:17491".parse().expect("addr")), &[], false)
    }

    #[test]
    fn hosts_that_name_this_server() {
        let r = loopback();
        for ok in [
            "localhost",
            "LOCALHOST:17491",
            "127.0.0.1:17491",
            "127.0.0.2",
            "[::1]:17491",
            "[::1]",
        ] {
            assert!(check_origin(&r, &headers(&[("host", ok)])).is_ok(), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:17491",
            "localhost.evil.example",
            "10.0.0.1:17491",
            "",
        ] {
            let e = check_origin(&r, &headers(&[("host", bad)])).expect_err(bad);
            assert_eq!(
                (e.status(), e.code()),
                (StatusCode::FORBIDDEN, "request.host")
            );
        }
        let proxied = HostRules::new(
            Some("127.0.0.1:1".parse().expect("addr")),
            &["ETL.corp.example:443".to_owned()],
            false,
        );
        assert!(check_origin(&proxied, &headers(&[("host", "etl.corp.example")])).is_ok());
        // Beyond loopback the token protects; Host is checked only when names are listed.
        let wide = HostRules::new(Some("0.0.0.0:1".parse().expect("addr")), &[], true);
        assert!(check_origin(&wide, &headers(&[("host", "etl.corp.example")])).is_ok());
        let listed = HostRules::new(
            Some("0.0.0.0:1".parse().expect("addr")),
            &["etl".to_owned()],
            true,
        );
        assert!(check_origin(&listed, &headers(&[("host", "10.1.2.3:1")])).is_ok());
        assert!(check_origin(&listed, &headers(&[("host", "other")])).is_err());
    }

    #[test]
    fn cross_site_requests_are_refused() {
        let r = loopback();
        for (pairs, ok) in [
            (vec![("origin", "http://evil.example")], false),
            (vec![("origin", "null")], false),
            (vec![("origin", "http://localhost:17491")], true),
            (vec![("origin", "http://127.0.0.1:17491")], true),
            (vec![("sec-fetch-site", "cross-site")], false),
            (vec![("sec-fetch-site", "same-site")], false),
            (vec![("sec-fetch-site", "same-origin")], true),
            (vec![("sec-fetch-site", "none")], true),
        ] {
            let got = check_origin(&r, &headers(&pairs));
            assert_eq!(got.is_ok(), ok, "{pairs:?}");
            if let Err(e) = got {
                assert_eq!(e.code(), "request.cross_site");
            }
        }
        // Beyond loopback the page must come from the host it talks to.
        let wide = HostRules::new(Some("0.0.0.0:1".parse().expect("addr")), &[], true);
        let same = headers(&[("host", "etl:1"), ("origin", "http://etl:1")]);
        assert!(check_origin(&wide, &same).is_ok());
        let other = headers(&[("host", "etl:1"), ("origin", "http://evil.example")]);
        assert!(check_origin(&wide, &other).is_err());
    }

    #[test]
    fn only_json_bodies() {
        for ok in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/json;charset=UTF-8",
        ] {
            assert!(
                check_content_type(&headers(&[("content-type", ok)])).is_ok(),
                "{ok}"
            );
        }
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonp",
        ] {
            let e = check_content_type(&headers(&[("content-type", bad)])).expect_err(bad);
            assert_eq!(
                (e.status(), e.code()),
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "request.content_type")
            );
        }
        assert!(check_content_type(&HeaderMap::new()).is_err());
    }
}
