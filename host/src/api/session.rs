//! The web page's sign-in and sign-out (issue 28): `POST /weft/session {token}` checks the
//! token as a request's would be (throttled alike) and answers who it is, setting the
//! session cookie that carries it from then on (`HttpOnly`: no script of any page reads it;
//! `SameSite=Strict`: no other site's request carries it; `Secure` over TLS; no expiry, so
//! the browser forgets it when it closes, and every tab of the browser shares it). `DELETE
//! /weft/session` signs out. Both pass the same guard of `Host` and `Origin` as the
//! commands. The token never appears in an address.

use super::auth::{self, Peer, SESSION_COOKIE};
use super::error::ApiError;
use super::guard;
use super::state::AppState;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The path of the session.
pub const SESSION_PATH: &str = "/weft/session";

/// The largest sign-in body read.
const MOST: usize = 4096;

/// The sign-in's body.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SignIn {
    token: String,
}

/// `POST /weft/session {token}`.
pub async fn sign_in(
    State(state): State<Arc<AppState>>,
    peer: Option<axum::Extension<Peer>>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let peer = peer.map(|axum::Extension(p)| p);
    let answer = async {
        guard::check_origin(&state.hosts, &headers)?;
        guard::check_content_type(&headers)?;
        let seconds = state.settings.body_timeout_seconds;
        let bytes = tokio::time::timeout(
            std::time::Duration::from_secs(seconds),
            axum::body::to_bytes(body, MOST),
        )
        .await
        .map_err(|_| ApiError::BodyTimeout(seconds))?
        .map_err(|_| ApiError::TooLarge(MOST))?;
        let asked: SignIn = serde_json::from_slice(&bytes).map_err(|e| ApiError::Request {
            code: "request.envelope",
            message: format!("the sign-in is {{\"token\": \"...\"}}: {e}"),
            details: Vec::new(),
        })?;
        let token = asked.token.trim().to_owned();
        // What a cookie can carry as it is: a token never needs more.
        if token.is_empty()
            || !token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(ApiError::Unauthorized);
        }
        let caller = auth::authorize_token(&state, token.clone(), peer).await?;
        Ok((caller, token))
    };
    match answer.await {
        Ok((caller, token)) => {
            let who = super::commands::identity(&caller);
            let secure = if state.secure_cookies { "; Secure" } else { "" };
            let cookie =
                format!("{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict{secure}");
            with_cookie(axum::Json(who).into_response(), &cookie)
        }
        Err(e) => {
            if matches!(e, ApiError::Unauthorized | ApiError::TokenRefused(_)) {
                let client =
                    peer.map_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), |p| p.0);
                super::audit::refused_unknown(
                    &state,
                    client,
                    format!("page sign-in: {}", e.message()),
                )
                .await;
            }
            state.refuse(e)
        }
    }
}

/// `DELETE /weft/session`: the cookie goes.
pub async fn sign_out(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if let Err(e) = guard::check_origin(&state.hosts, &headers) {
        return state.refuse(e);
    }
    let secure = if state.secure_cookies { "; Secure" } else { "" };
    let cookie = format!("{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}");
    with_cookie(axum::Json(serde_json::json!({})).into_response(), &cookie)
}

fn with_cookie(mut response: Response, cookie: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(cookie) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
