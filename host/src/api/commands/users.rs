//! What the commands of users share (`AddUser`, `ChangeUser`, `CreateToken`, `ListUsers`):
//! reading a name, a role, folders and an expiry, making a token and storing it, and a user
//! as answered.

use crate::api::error::ApiError;
use crate::api::protocol::read::{text, whole, wrong};
use weft_dsr::value::{Spanned, Value};
use weft_dsr::{Path, Problems};
use weft_protocol::Role;
use weft_protocol::commands::{NewToken, TokenView, UserView};

/// The longest a user's name may be.
const MAX_NAME: usize = 64;

/// The most folders a user may be limited to.
const MAX_FOLDERS: usize = 100;

/// The longest a token may live, in days (ten years).
pub(super) const MAX_DAYS: i64 = 3660;

/// Names weft gives callers that are not users: no user may take one.
const RESERVED: [&str; 5] = ["keyfile", "loopback", "scheduler", "none", "backfill"];

/// A user's name: 1 to 64 letters, digits, `.`, `_`, `-`, `@`, not one of weft's own.
pub(super) fn name(v: &Spanned, path: &Path, key: &str, problems: &mut Problems) -> Option<String> {
    let n = text(v, path, key, problems)?;
    let fine = !n.is_empty()
        && n.len() <= MAX_NAME
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'));
    if !fine {
        wrong(
            v,
            path,
            &format!(
                "`{key}` is a user's name: 1 to {MAX_NAME} letters, digits, `.`, `_`, `-` or `@`"
            ),
            problems,
        );
        return None;
    }
    if RESERVED.contains(&n.as_str()) {
        wrong(
            v,
            path,
            &format!(
                "`{n}` is a name weft gives callers that are not users ({}); choose another",
                RESERVED.join(", ")
            ),
            problems,
        );
        return None;
    }
    Some(n)
}

/// A role's name.
pub(super) fn role(v: &Spanned, path: &Path, problems: &mut Problems) -> Option<Role> {
    let word = text(v, path, "role", problems)?;
    let role = Role::from_word(&word);
    if role.is_none() {
        wrong(
            v,
            path,
            "`role` is viewer, operator, deployer or admin",
            problems,
        );
    }
    role
}

/// Folders by path: each `/` and names, without `..`, at most [`MAX_FOLDERS`].
pub(super) fn folders(v: &Spanned, path: &Path, problems: &mut Problems) -> Option<Vec<String>> {
    let Value::Array(items) = &v.value else {
        wrong(
            v,
            path,
            "`folders` is an array of folder paths such as \"/etl\"",
            problems,
        );
        return None;
    };
    if items.len() > MAX_FOLDERS {
        wrong(
            v,
            path,
            &format!("`folders` holds at most {MAX_FOLDERS} paths"),
            problems,
        );
        return None;
    }
    let mut out = Vec::with_capacity(items.len());
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let p = path.index(i);
        let Some(f) = text(item, &p, "a folder", problems) else {
            ok = false;
            continue;
        };
        let trimmed = if f.len() > 1 {
            f.trim_end_matches('/')
        } else {
            &f
        };
        if !trimmed.starts_with('/')
            || trimmed.len() > 2000
            || trimmed
                .split('/')
                .skip(1)
                .any(|s| s.is_empty() && trimmed != "/" || s == "..")
        {
            wrong(
                item,
                &p,
                "a folder is its path, such as \"/etl/daily\"",
                problems,
            );
            ok = false;
            continue;
        }
        out.push(trimmed.to_owned());
    }
    ok.then_some(out)
}

/// Days until a token expires.
pub(super) fn days(v: &Spanned, path: &Path, problems: &mut Problems) -> Option<i64> {
    whole(v, path, "expiresInDays", 1..=MAX_DAYS, problems)
}

/// Makes a token for `user` that expires after `days`, has `store` keep it (false: there is
/// nothing to keep it with, `refused`), and answers it, shown this once.
pub(super) fn issue(
    user: String,
    days: Option<i64>,
    store: impl FnOnce(&weft_repo::users::TokenToStore<'_>) -> weft_repo::Result<bool>,
    refused: impl FnOnce(String) -> ApiError,
) -> Result<NewToken, ApiError> {
    let token = weft_core::tokens::issue().map_err(|e| ApiError::internal(e.to_string()))?;
    let expires =
        days.map(|d| weft_repo::stored_time(chrono::Utc::now() + chrono::Duration::days(d)));
    let stored = weft_repo::users::TokenToStore {
        id: &token.id,
        hash: &token.hash,
        expires_at: expires.as_deref(),
    };
    if !store(&stored)? {
        return Err(refused(user));
    }
    Ok(NewToken {
        user,
        token_id: token.id.clone(),
        token: token.text.clone(),
        expires_at: expires.as_deref().map(weft_repo::instances::iso),
    })
}

/// A user as answered.
pub(super) fn view(u: weft_repo::users::UserRow) -> Result<UserView, ApiError> {
    let iso = |t: &str| weft_repo::instances::iso(t);
    let now = chrono::Utc::now();
    Ok(UserView {
        role: Role::from_word(&u.role).ok_or_else(|| {
            ApiError::internal(format!(
                "user `{}` has the unknown role `{}`",
                u.name, u.role
            ))
        })?,
        name: u.name,
        folders: u.folders,
        disabled_at: u.disabled_at.as_deref().map(iso),
        created_at: iso(&u.created_at),
        created_by: u.created_by,
        tokens: u
            .tokens
            .into_iter()
            .map(|t| {
                let expired = t
                    .expires_at
                    .as_deref()
                    .and_then(weft_repo::parse_stored_time)
                    .is_some_and(|at| at <= now);
                TokenView {
                    state: if t.revoked_at.is_some() {
                        "revoked"
                    } else if expired {
                        "expired"
                    } else {
                        "active"
                    }
                    .to_owned(),
                    id: t.id,
                    created_at: iso(&t.created_at),
                    created_by: t.created_by,
                    expires_at: t.expires_at.as_deref().map(iso),
                    revoked_at: t.revoked_at.as_deref().map(iso),
                    last_used_at: t.last_used_at.as_deref().map(iso),
                }
            })
            .collect(),
    })
}
