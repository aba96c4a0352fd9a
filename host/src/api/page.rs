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

/// One embedded file: its path under `/ui/` (and `host/web/`) and its text.
struct Asset {
    name: &'static str,
    body: &'static str,
}

const INDEX: &str = include_str!("../../web/index.html");

/// An embedded file of `host/web/` by its path there, typed by its extension.
macro_rules! asset {
    ($name:literal) => {
        Asset {
            name: $name,
            body: include_str!(concat!("../../web/", $name)),
        }
    };
}

/// The type of a file of the page by its extension.
fn kind_of(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, e)| e) {
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

/// Every file the page loads: the entry module, the modules it imports (the router, the
/// shared `lib/` and one file a view), the style sheet and the icon. A test checks that every
/// file of `host/web/` the browser may load is listed here.
const ASSETS: &[Asset] = &[
    asset!("app.js"),
    asset!("router.js"),
    asset!("lib/actions.js"),
    asset!("lib/api.js"),
    asset!("lib/axis.js"),
    asset!("lib/confirm.js"),
    asset!("lib/days.js"),
    asset!("lib/diff.js"),
    asset!("lib/dom.js"),
    asset!("lib/elements.js"),
    asset!("lib/errors.js"),
    asset!("lib/graph.js"),
    asset!("lib/heat.js"),
    asset!("lib/layered.js"),
    asset!("lib/order.js"),
    asset!("lib/panzoom.js"),
    asset!("lib/session.js"),
    asset!("lib/time.js"),
    asset!("lib/types.js"),
    asset!("views/audit.js"),
    asset!("views/batch.js"),
    asset!("views/deploys.js"),
    asset!("views/grid.js"),
    asset!("views/lineage.js"),
    asset!("views/notifications.js"),
    asset!("views/run-action.js"),
    asset!("views/run-timeline.js"),
    asset!("views/run.js"),
    asset!("views/runs.js"),
    asset!("views/schedules.js"),
    asset!("views/sheets.js"),
    asset!("app.css"),
    asset!("favicon.svg"),
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
        Some(a) => serve(&state, &headers, kind_of(a.name), a.body),
        None => state.refuse(ApiError::NoSuchPath),
    }
}

/// A file's entity tag: the server's version and a hash of the file (the same in every process
/// of one build).
fn etag(body: &str) -> String {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::hash::DefaultHasher::new();
    body.hash(&mut h);
    format!("\"{}-{:016x}\"", env!("CARGO_PKG_VERSION"), h.finish())
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
    // The file's version: the browser asks again each time (no-cache) and is told "not
    // modified" while the file is the one it has.
    let tag = etag(body);
    let unchanged = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag));
    let mut resp = if unchanged {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (StatusCode::OK, body).into_response()
    };
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&tag) {
        h.insert(header::ETAG, v);
    }
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

#[cfg(test)]
mod tests {
    use super::ASSETS;

    /// Every script, style and image under `host/web/` is embedded (a module left out would
    /// fail to load only in a browser), and every embedded file is there.
    #[test]
    fn every_file_of_the_page_is_embedded() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("web");
        let mut found = Vec::new();
        let mut dirs = vec![root.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("host/web") {
                let path = entry.expect("an entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path
                    .extension()
                    .is_some_and(|e| e == "js" || e == "css" || e == "svg")
                {
                    let name = path.strip_prefix(&root).expect("under web");
                    found.push(name.to_string_lossy().replace('\\', "/"));
                }
            }
        }
        found.sort();
        let mut listed: Vec<String> = ASSETS.iter().map(|a| a.name.to_owned()).collect();
        listed.sort();
        assert_eq!(found, listed);
    }
}
