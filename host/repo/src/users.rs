//! Users and their tokens in the repository (issue 28): a user's name, role, the folders its
//! deploy and operate rights are limited to, whether it is disabled; each token's id and the
//! Argon2id hash of its secret (never the secret), its expiry, revocation and last use. Every
//! host reads a token's row at each request ([`sign_in`]), so that a user disabled or a
//! token revoked on one host is refused on all at once.

use crate::error::{Error, Result, now_utc};
use crate::sql::{Session, args};

/// A token to store: its id and hash (what `weft_core::tokens::issue` made) and when it
/// expires (stored UTC text), if ever.
#[derive(Debug, Clone)]
pub struct TokenToStore<'a> {
    /// The token's id.
    pub id: &'a str,
    /// The hash of its secret.
    pub hash: &'a str,
    /// When it stops counting.
    pub expires_at: Option<&'a str>,
}

/// A user as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRow {
    /// The name.
    pub name: String,
    /// The role's word.
    pub role: String,
    /// The folders its deploy and operate rights are limited to (none: everywhere).
    pub folders: Vec<String>,
    /// When it was disabled.
    pub disabled_at: Option<String>,
    /// When it was made, and by whom.
    pub created_at: String,
    /// Who made it.
    pub created_by: String,
    /// Its tokens, oldest first.
    pub tokens: Vec<TokenRow>,
}

/// A token as listed (never its hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRow {
    /// Its id.
    pub id: String,
    /// When it was made.
    pub created_at: String,
    /// Who made it.
    pub created_by: String,
    /// When it stops counting.
    pub expires_at: Option<String>,
    /// When it was revoked.
    pub revoked_at: Option<String>,
    /// When it was last used (recorded at most every few minutes).
    pub last_used_at: Option<String>,
}

/// What a server needs to admit a request with a token: its hash and state, and its user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignIn {
    /// The hash of the token's secret.
    pub hash: String,
    /// When it stops counting.
    pub expires_at: Option<String>,
    /// Whether it was revoked.
    pub revoked: bool,
    /// When it was last used.
    pub last_used_at: Option<String>,
    /// Its user's name.
    pub user: String,
    /// Its user's role's word.
    pub role: String,
    /// Its user's folders.
    pub folders: Vec<String>,
    /// Whether its user is disabled.
    pub disabled: bool,
}

/// What a change of a user sets; `None` leaves it.
#[derive(Debug, Clone, Default)]
pub struct UserChange<'a> {
    /// A new role's word.
    pub role: Option<&'a str>,
    /// New folders (empty: everywhere).
    pub folders: Option<&'a [String]>,
    /// Disabled (true) or enabled again (false).
    pub disabled: Option<bool>,
}

fn folders_text(folders: &[String]) -> Result<String> {
    serde_json::to_string(folders)
        .map_err(|e| Error::Corrupt(format!("a user's folders could not be written: {e}")))
}

fn folders_of(text: &str) -> Result<Vec<String>> {
    serde_json::from_str(text)
        .map_err(|e| Error::Corrupt(format!("a user's folders `{text}` do not read: {e}")))
}

/// Adds user `name` with `role` and `folders`, made by `by`, with its first token; false
/// (nothing written) when a user of that name exists.
///
/// # Errors
///
/// A repository error.
pub fn add(
    tx: &dyn Session,
    (name, role, folders): (&str, &str, &[String]),
    by: &str,
    token: &TokenToStore<'_>,
) -> Result<bool> {
    let now = now_utc();
    // A user of the name (made meanwhile by another host, too) answers no row.
    let Some(id) = tx.value::<i64>(
        "INSERT INTO users (name, role, folders, created_at, created_by, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?4) ON CONFLICT (name) DO NOTHING RETURNING id",
        args![name, role, folders_text(folders)?, now, by],
    )?
    else {
        return Ok(false);
    };
    store_token(tx, id, by, token, &now)?;
    Ok(true)
}

fn store_token(
    tx: &dyn Session,
    user: i64,
    by: &str,
    token: &TokenToStore<'_>,
    now: &str,
) -> Result<()> {
    tx.execute(
        "INSERT INTO user_tokens (id, user_id, hash, created_at, created_by, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        args![token.id, user, token.hash, now, by, token.expires_at],
    )?;
    Ok(())
}

/// Changes user `name`; false when there is none.
///
/// # Errors
///
/// A repository error.
pub fn change(tx: &dyn Session, name: &str, change: &UserChange<'_>) -> Result<bool> {
    let now = now_utc();
    let folders = change.folders.map(folders_text).transpose()?;
    let n = tx.execute(
        "UPDATE users SET role = COALESCE(?2, role), folders = COALESCE(?3, folders),
                disabled_at = CASE WHEN ?4 = 1 THEN COALESCE(disabled_at, ?5)
                                   WHEN ?4 = 0 THEN NULL ELSE disabled_at END,
                updated_at = ?5
          WHERE name = ?1",
        args![
            name,
            change.role,
            folders,
            change.disabled.map(i64::from),
            now
        ],
    )?;
    Ok(n > 0)
}

/// Adds a token to user `name`, made by `by`; with `replace`, revokes the user's other
/// tokens in the same transaction (a rotation); false when there is no such user.
///
/// # Errors
///
/// A repository error.
pub fn add_token(
    tx: &dyn Session,
    name: &str,
    by: &str,
    token: &TokenToStore<'_>,
    replace: bool,
) -> Result<bool> {
    let Some(user) = tx.value::<i64>("SELECT id FROM users WHERE name = ?1", args![name])? else {
        return Ok(false);
    };
    let now = now_utc();
    if replace {
        tx.execute(
            "UPDATE user_tokens SET revoked_at = ?2 WHERE user_id = ?1 AND revoked_at IS NULL",
            args![user, now],
        )?;
    }
    store_token(tx, user, by, token, &now)?;
    Ok(true)
}

/// Revokes token `id`; its user's name, or `None` when there is no such token.
///
/// # Errors
///
/// A repository error.
pub fn revoke_token(tx: &dyn Session, id: &str) -> Result<Option<String>> {
    let user: Option<String> = tx.value(
        "SELECT u.name FROM user_tokens t JOIN users u ON u.id = t.user_id WHERE t.id = ?1",
        args![id],
    )?;
    if user.is_some() {
        tx.execute(
            "UPDATE user_tokens SET revoked_at = COALESCE(revoked_at, ?2) WHERE id = ?1",
            args![id, now_utc()],
        )?;
    }
    Ok(user)
}

/// Every user with its tokens, by name.
///
/// # Errors
///
/// A repository error.
pub fn list(c: &dyn Session) -> Result<Vec<UserRow>> {
    let mut users: Vec<(i64, UserRow, String)> = c.rows(
        "SELECT id, name, role, folders, disabled_at, created_at, created_by FROM users
          ORDER BY name",
        args![],
        |r| {
            Ok((
                r.get(0)?,
                UserRow {
                    name: r.get(1)?,
                    role: r.get(2)?,
                    folders: Vec::new(),
                    disabled_at: r.get(4)?,
                    created_at: r.get(5)?,
                    created_by: r.get(6)?,
                    tokens: Vec::new(),
                },
                r.get(3)?,
            ))
        },
    )?;
    for (_, user, folders) in &mut users {
        user.folders = folders_of(folders)?;
    }
    let tokens: Vec<(i64, TokenRow)> = c.rows(
        "SELECT user_id, id, created_at, created_by, expires_at, revoked_at, last_used_at
           FROM user_tokens ORDER BY created_at, id",
        args![],
        |r| {
            Ok((
                r.get(0)?,
                TokenRow {
                    id: r.get(1)?,
                    created_at: r.get(2)?,
                    created_by: r.get(3)?,
                    expires_at: r.get(4)?,
                    revoked_at: r.get(5)?,
                    last_used_at: r.get(6)?,
                },
            ))
        },
    )?;
    for (user, token) in tokens {
        if let Some((_, u, _)) = users.iter_mut().find(|(id, _, _)| *id == user) {
            u.tokens.push(token);
        }
    }
    Ok(users.into_iter().map(|(_, u, _)| u).collect())
}

/// What admitting a request with token `id` needs, or `None` when there is no such token.
///
/// # Errors
///
/// A repository error.
pub fn sign_in(c: &dyn Session, id: &str) -> Result<Option<SignIn>> {
    let row: Option<(SignIn, String)> = c
        .rows(
            "SELECT t.hash, t.expires_at, t.revoked_at, t.last_used_at,
                    u.name, u.role, u.folders, u.disabled_at
               FROM user_tokens t JOIN users u ON u.id = t.user_id WHERE t.id = ?1",
            args![id],
            |r| {
                Ok((
                    SignIn {
                        hash: r.get(0)?,
                        expires_at: r.get(1)?,
                        revoked: r.get::<Option<String>>(2)?.is_some(),
                        last_used_at: r.get(3)?,
                        user: r.get(4)?,
                        role: r.get(5)?,
                        folders: Vec::new(),
                        disabled: r.get::<Option<String>>(7)?.is_some(),
                    },
                    r.get(6)?,
                ))
            },
        )?
        .into_iter()
        .next();
    row.map(|(mut sign_in, folders)| {
        sign_in.folders = folders_of(&folders)?;
        Ok(sign_in)
    })
    .transpose()
}

/// Records that token `id` was used at `at`.
///
/// # Errors
///
/// A repository error.
pub fn used(tx: &dyn Session, id: &str, at: &str) -> Result<()> {
    tx.execute(
        "UPDATE user_tokens SET last_used_at = ?2 WHERE id = ?1",
        args![id, at],
    )?;
    Ok(())
}
