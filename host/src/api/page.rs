//! The monitoring web page: its files (`host/web/`), embedded in the binary at build time
//! and served at the root of the server's address (`GET /`, `GET /ui/FILE`). The page asks
//! for its data with the service's own commands from the browser, so it gets nothing the
//! API does not give, under the same guard and token; the files themselves hold no data and
//! no secret.
//!
//! Every answer forbids what the page never needs: scripts and styles from anywhere but
//! this server, inline scripts, being framed by another page (a Halt button under someone
//! else's page), and content sniffing.

use super::guard;
use super::{error::ApiError, state::AppState};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// One embedded file: its name under `/ui/`, its type and its bytes.
struct Asset {
    name: &'static str,
    kind: &'static str,
    body: &'static str,
}

const INDEX: &str = include_str!("../../web/index.html");

const ASSETS: &[Asset] = &[
    Asset {
        name: "app.js",
        kind: "text/javascript; charset=utf-8",
        body: include_str!("../../web/app.js"),
    },
    Asset {
        name: "app.css",
        kind: "text/css; charset=utf-8",
        body: include_str!("../../web/app.css"),
    },
    Asset {
        name: "favicon.svg",
        kind: "image/svg+xml",
        body: include_str!("../../web/favicon.svg"),
    },
];

/// The policy of every answer: only this server's own files, no inline script, no frames.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// `GET /`: the page.
pub async fn index(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    // A link to the page followed from another site (a chat, a mail) is a top-level
    // navigation: it gets the page, which then reads everything through the commands, which
    // refuse other sites as ever. Framing or fetching it from another site stays refused.
    if let Err(e) = guard::check_navigation(&state.hosts, &headers) {
        return state.refuse(e);
    }
    serve(&state, &headers, "text/html; charset=utf-8", INDEX)
}

/// `GET /ui/{file}`: a file of the page; 404 for any other name.
pub async fn asset(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Response {
    match ASSETS.iter().find(|a| a.name == name) {
        Some(a) => serve(&state, &headers, a.kind, a.body),
        None => state.refuse(ApiError::NoSuchPath),
    }
}

fn serve(
    state: &AppState,
    headers: &HeaderMap,
    kind: &'static str,
    body: &'static str,
) -> Response {
    // The files hold no data, but a page of another site has no business loading them, and
    // a foreign Host is a DNS rebinding.
    if !guard::is_navigation(headers)
        && let Err(e) = guard::check_origin(&state.hosts, headers)
    {
        return state.refuse(e);
    }
    let mut resp = (StatusCode::OK, body).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    // A new server version serves new files: the browser asks again each time.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}
