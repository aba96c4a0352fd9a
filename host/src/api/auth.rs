//! Who sends a request ([`Caller`]) and what they may do: a user's token (checked against its
//! Argon2id hash in the repository, the secrets verified kept as fingerprints,
//! `verified`), the key file's token (an admin), or nobody on a loopback server that asks
//! for no token (an admin too). Failed sign-ins are throttled per client (`throttle`);
//! every comparison of a secret takes the same time whatever it holds.
//!
//! A command's right ([`weft_protocol::Request::RIGHT`]) is checked by its name before its
//! payload is read ([`Caller::may`]); the folders a user's deploy and operate rights are
//! limited to are checked by the commands that know what they touch ([`Caller::may_in`]).

use super::error::ApiError;
use super::state::AppState;
use super::throttle;
use super::verified::constant_time_eq;
use axum::http::HeaderMap;
use std::net::IpAddr;
use std::sync::Arc;
use weft_protocol::rights::within_folder;
use weft_protocol::{Right, Role};

/// The address of the client a request came from, as the accept loop put it in the
/// request's extensions (absent in tests without a socket: loopback then).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub std::net::IpAddr);

/// How a caller was known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    /// No token: a loopback server that asks for none.
    Loopback,
    /// The key file's token (entry `weft_server`, option `token`).
    KeyFile,
    /// A user's token, by its id.
    Token(String),
}

impl Via {
    /// As the audit writes it.
    pub fn word(&self) -> String {
        match self {
            Via::Loopback => "loopback".to_owned(),
            Via::KeyFile => "keyfile".to_owned(),
            Via::Token(id) => format!("token {id}"),
        }
    }
}

/// Who sends a request and what they hold.
#[derive(Debug, Clone)]
pub struct Caller {
    /// A user's name, or `keyfile` / `loopback`.
    pub name: String,
    /// The role.
    pub role: Role,
    /// The folders (paths) its deploy and operate rights are limited to; empty: everywhere.
    pub folders: Vec<String>,
    /// How it was known.
    pub via: Via,
    /// From where.
    pub client: IpAddr,
}

impl Caller {
    /// An admin known without a user: the key file's token or loopback.
    fn admin(via: Via, client: IpAddr) -> Self {
        let name = match via {
            Via::Loopback => "loopback",
            _ => "keyfile",
        };
        Caller {
            name: name.to_owned(),
            role: Role::Admin,
            folders: Vec::new(),
            via,
            client,
        }
    }

    /// Who a run it starts records: a user by its name, whatever the request says; the key
    /// file's token or loopback by the `user` the request gives (free text, as before users),
    /// else their own name.
    pub fn run_user(&self, asked: &str) -> String {
        match self.via {
            Via::Token(_) => self.name.clone(),
            _ if asked.trim().is_empty() => self.name.clone(),
            _ => asked.to_owned(),
        }
    }

    /// Whether the caller may send `command`, which needs `right`.
    ///
    /// # Errors
    ///
    /// [`ApiError::NoRight`] (403) naming the right missing.
    pub fn may(&self, command: &str, right: Right) -> Result<(), ApiError> {
        // An admin limited to folders could lift its own limits: the admin commands (users,
        // the audit, the clock) are for admins without limits.
        if right == Right::Admin && self.role.holds(right) && !self.folders.is_empty() {
            return Err(ApiError::OutsideFolders {
                user: self.name.clone(),
                right,
                what: format!("`{command}` (users, the audit and the clock lie in no folder)"),
                folders: self.folders.clone(),
            });
        }
        if self.role.holds(right) {
            Ok(())
        } else {
            Err(ApiError::NoRight {
                command: command.to_owned(),
                right,
                user: self.name.clone(),
                role: self.role,
            })
        }
    }

    /// Whether the caller may use `right` on what lies in the folders `paths` (each a
    /// folder's path, `/etl/daily`): a user limited to folders may only inside them (a
    /// folder and what is below it). `what` names the thing for the refusal; `None` in
    /// `paths` is something in no folder (a connection, a batch, the notification setup),
    /// which only a user without limits may touch.
    ///
    /// # Errors
    ///
    /// [`ApiError::OutsideFolders`] (403) naming the first outside.
    pub fn may_in(
        &self,
        right: Right,
        paths: impl IntoIterator<Item = (String, Option<String>)>,
    ) -> Result<(), ApiError> {
        if self.folders.is_empty() || right == Right::Read {
            return Ok(());
        }
        for (what, path) in paths {
            let inside = path
                .as_deref()
                .is_some_and(|p| self.folders.iter().any(|f| within_folder(p, f)));
            if !inside {
                return Err(ApiError::OutsideFolders {
                    user: self.name.clone(),
                    right,
                    what,
                    folders: self.folders.clone(),
                });
            }
        }
        Ok(())
    }
}

impl Caller {
    /// Whether the caller may run `elements` (blocking: asks the repository their folders).
    ///
    /// # Errors
    ///
    /// [`ApiError::OutsideFolders`], or a repository error.
    pub fn may_run(
        &self,
        repo: &weft_repo::Repository,
        elements: &[weft_protocol::Element],
    ) -> Result<(), ApiError> {
        if self.folders.is_empty() {
            return Ok(());
        }
        let asked: Vec<(char, i64)> = elements.iter().map(|e| (e.kind, e.id)).collect();
        let paths = repo.folders_of_elements(&asked)?;
        self.may_in(
            Right::Operate,
            asked.iter().zip(paths).map(|((kind, id), path)| {
                let what = match kind {
                    'F' => "folder",
                    'S' => "sheet",
                    _ => "action",
                };
                let at = path
                    .as_deref()
                    .map_or(String::new(), |p| format!(" in {p}"));
                (format!("{what} {id}{at}"), path)
            }),
        )
    }

    /// Whether the caller may operate (halt, restart) instance `id`: each sheet it ran lies
    /// in the caller's folders (blocking).
    ///
    /// # Errors
    ///
    /// [`ApiError::OutsideFolders`], or a repository error.
    pub fn may_operate_instance(
        &self,
        repo: &weft_repo::Repository,
        id: i64,
    ) -> Result<(), ApiError> {
        if self.folders.is_empty() {
            return Ok(());
        }
        let sheets = repo.folders_of_instance(id)?;
        self.may_in(
            Right::Operate,
            sheets.into_iter().map(|(sheet, path)| {
                let at = path
                    .as_deref()
                    .map_or_else(|| " (deleted since)".to_owned(), |p| format!(" in {p}"));
                (format!("sheet {sheet}{at} of batch instance {id}"), path)
            }),
        )
    }
}

/// Who sends the request, with failed sign-ins throttled per client (`throttle`): a right
/// token always passes (a client sharing its address with a guesser is not locked out); a
/// wrong one from a blocked client is refused with 429, not counted.
///
/// # Errors
///
/// [`ApiError::Unauthorized`], [`ApiError::TokenRefused`], [`ApiError::Throttled`], or a
/// fault reading the key file or the repository.
pub async fn authorize(
    state: &Arc<AppState>,
    headers: &HeaderMap,
    peer: Option<Peer>,
) -> Result<Caller, ApiError> {
    // `Authorization: Bearer`, else the page's session cookie.
    let given = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .or_else(|| session_cookie(headers))
        .unwrap_or_default();
    authorize_token(state, given, peer).await
}

/// The name of the page's session cookie: the token itself, `HttpOnly` (no script reads
/// it), `SameSite=Strict` (no other site's request carries it), for the browser session.
pub const SESSION_COOKIE: &str = "weft_session";

/// Whether the request carries a token at all (a header or the page's cookie).
pub fn token_given(headers: &HeaderMap) -> bool {
    headers.contains_key(axum::http::header::AUTHORIZATION) || session_cookie(headers).is_some()
}

/// The page's session token from the `Cookie` headers, if any.
fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.trim().to_owned())
        .filter(|t| !t.is_empty())
}

/// Who holds `given` (empty: no token), as [`authorize`] says.
///
/// # Errors
///
/// As [`authorize`].
pub async fn authorize_token(
    state: &Arc<AppState>,
    given: String,
    peer: Option<Peer>,
) -> Result<Caller, ApiError> {
    let ip = peer.map_or(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), |p| p.0);
    if !state.require_token && given.is_empty() {
        return Ok(Caller::admin(Via::Loopback, ip));
    }
    let now = std::time::Instant::now();
    let shared = Arc::clone(state);
    let known = tokio::task::spawn_blocking(move || identify(&shared, &given, ip)).await?;
    match known {
        Ok(caller) => {
            state.throttle.succeeded(ip, now);
            Ok(caller)
        }
        Err(ApiError::Unauthorized) => {
            state.throttle.check(ip, now).map_err(ApiError::Throttled)?;
            if state.throttle.failed(ip, now) {
                tracing::warn!(
                    message = "A client sent too many requests without the right token; it is refused for a while.",
                    client = %ip,
                    failures = throttle::MAX_FAILURES,
                    seconds = throttle::BLOCK.as_secs()
                );
            }
            Err(ApiError::Unauthorized)
        }
        Err(e) => Err(e),
    }
}

/// The caller a token names: a user's (its form, `weft_ID_SECRET`), else the key file's.
fn identify(state: &AppState, given: &str, ip: IpAddr) -> Result<Caller, ApiError> {
    if let Some((id, secret)) = weft_core::tokens::parse(given) {
        return user(state, id, secret, ip);
    }
    let keyfile = match state.keys.as_ref().map(|k| k.current()) {
        Some(Ok(kf)) => Some(kf),
        Some(Err(e)) => {
            return Err(ApiError::internal(format!(
                "the key file cannot be read: {e}"
            )));
        }
        None => None,
    };
    let expected = keyfile.and_then(|kf| {
        kf.get(weft_core::keys::SERVER_KEY)
            .and_then(|e| e.option("token").map(str::to_owned))
    });
    // Without a key file token only users' tokens sign in.
    let Some(expected) = expected.filter(|t| !t.is_empty()) else {
        return Err(ApiError::Unauthorized);
    };
    if constant_time_eq(given.as_bytes(), expected.as_bytes()) {
        Ok(Caller::admin(Via::KeyFile, ip))
    } else {
        Err(ApiError::Unauthorized)
    }
}

/// The user of token `id` when `secret` is its own and it counts.
fn user(state: &AppState, id: &str, secret: &str, ip: IpAddr) -> Result<Caller, ApiError> {
    let Some(row) = state.repo.sign_in(id)? else {
        // The same work as a real check, so that an unknown id is not told by the time.
        return match state.verified.check(state.verified.decoy(), secret) {
            None => Err(ApiError::SignInsBusy),
            Some(_) => Err(ApiError::Unauthorized),
        };
    };
    let verified = state.verified.knows(id, &row.hash, secret)
        || match state.verified.check(&row.hash, secret) {
            None => return Err(ApiError::SignInsBusy),
            Some(ok) => ok,
        };
    if !verified {
        return Err(ApiError::Unauthorized);
    }
    // Kept as verified before it is judged: a revoked or expired token replayed costs a
    // look-up, not another slow check.
    let use_due = state.verified.keep(id, &row.hash, secret);
    let refused = |why: String| Err(ApiError::TokenRefused(why));
    if row.revoked {
        return refused(format!("token {id} of user `{}` was revoked", row.user));
    }
    if row.disabled {
        return refused(format!("user `{}` is disabled", row.user));
    }
    if let Some(expired) = row
        .expires_at
        .as_deref()
        .filter(|at| weft_repo::parse_stored_time(at).is_some_and(|t| t <= chrono::Utc::now()))
    {
        return refused(format!(
            "token {id} of user `{}` expired at {}",
            row.user,
            weft_repo::instances::iso(expired)
        ));
    }
    let Some(role) = Role::from_word(&row.role) else {
        return Err(ApiError::internal(format!(
            "user `{}` has the unknown role `{}` in the repository",
            row.user, row.role
        )));
    };
    if use_due && let Err(e) = state.repo.token_used(id, &weft_repo::now_utc()) {
        tracing::warn!(message = "A token's last use could not be recorded.", token = id, error = %e);
    }
    Ok(Caller {
        name: row.user,
        role,
        folders: row.folders,
        via: Via::Token(id.to_owned()),
        client: ip,
    })
}
