//! The tokens of named users (issue 28): made here, shown once, kept in the repository only
//! as a slow hash.
//!
//! A token reads `weft_ID_SECRET`: `ID` (16 hex digits) names the token's row, so that a
//! server finds the one hash to check instead of trying every user's; `SECRET` (64 hex
//! digits, 256 random bits) is what proves it. The repository keeps the Argon2id hash of the
//! secret as a PHC string (its salt and parameters inside), never the secret. Checking one
//! costs tens of milliseconds on purpose; a server keeps the secrets it verified as SHA-256
//! fingerprints ([`fingerprint`]) beside the hash they matched, so that each request does
//! not pay it again while a changed or revoked row still counts at once.

use argon2::password_hash::{PasswordHash, PasswordHasher as _, PasswordVerifier as _, SaltString};
use sha2::Digest as _;

/// How every user token begins.
pub const PREFIX: &str = "weft_";

/// Hex digits of a token's id.
const ID_DIGITS: usize = 16;

/// Hex digits of a token's secret.
const SECRET_DIGITS: usize = 64;

/// A token just made: its full text, shown once to whoever asked for it, and what the
/// repository keeps of it.
#[derive(Clone)]
pub struct NewToken {
    /// Its id, the row it is kept in (not secret).
    pub id: String,
    /// The whole token, `weft_ID_SECRET`.
    pub text: String,
    /// The Argon2id hash of the secret, a PHC string.
    pub hash: String,
}

impl std::fmt::Debug for NewToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewToken")
            .field("id", &self.id)
            .field("text", &"<secret>")
            .finish_non_exhaustive()
    }
}

/// A token that could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The system's random source failed.
    #[error("no random bytes for a token: {0}")]
    Random(String),
    /// Hashing failed (it does not, with the parameters used).
    #[error("a token's hash could not be made: {0}")]
    Hash(String),
}

/// Makes a token: a random id and secret, and the secret's hash.
///
/// # Errors
///
/// The random source or the hash failed.
pub fn issue() -> Result<NewToken, TokenError> {
    let mut bytes = [0u8; ID_DIGITS / 2 + SECRET_DIGITS / 2 + 16];
    getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
    let (id, rest) = bytes.split_at(ID_DIGITS / 2);
    let (secret, salt) = rest.split_at(SECRET_DIGITS / 2);
    let (id, secret) = (hex(id), hex(secret));
    let salt = SaltString::encode_b64(salt).map_err(|e| TokenError::Hash(e.to_string()))?;
    let hash = argon2::Argon2::default()
        .hash_password(secret.as_bytes(), &salt)
        .map_err(|e| TokenError::Hash(e.to_string()))?
        .to_string();
    Ok(NewToken {
        text: format!("{PREFIX}{id}_{secret}"),
        id,
        hash,
    })
}

/// The id and the secret of a token text in the users' form, or `None` for any other text
/// (the key file's token, a typo).
pub fn parse(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix(PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    let hexes = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    (hexes(id, ID_DIGITS) && hexes(secret, SECRET_DIGITS)).then_some((id, secret))
}

/// Whether `secret` is the one `hash` (a PHC string made by [`issue`]) was made from. Slow
/// on purpose (Argon2id); a hash that does not read is no match.
pub fn verify(hash: &str, secret: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        argon2::Argon2::default()
            .verify_password(secret.as_bytes(), &parsed)
            .is_ok()
    })
}

/// A secret's SHA-256, what a server keeps of the secrets it verified.
pub fn fingerprint(secret: &str) -> [u8; 32] {
    sha2::Sha256::digest(secret.as_bytes()).into()
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::{issue, parse, verify};

    #[test]
    fn a_token_made_is_read_back_and_only_its_own_secret_matches_its_hash() {
        let token = issue().expect("token");
        let (id, secret) = parse(&token.text).expect("its own form");
        assert_eq!(id, token.id);
        assert!(token.hash.starts_with("$argon2id$"), "{}", token.hash);
        assert!(!token.hash.contains(secret), "the hash holds no secret");
        assert!(verify(&token.hash, secret));
        let mut wrong = secret.to_owned();
        wrong.replace_range(0..1, if secret.starts_with('0') { "1" } else { "0" });
        assert!(!verify(&token.hash, &wrong));
        assert!(!verify("not a hash", secret));
        let other = issue().expect("token");
        assert_ne!(other.id, token.id);
        assert!(!format!("{token:?}").contains(secret), "Debug hides it");
    }

    #[test]
    fn only_the_users_form_parses() {
        let id = "0123456789abcdef";
        let secret = "a".repeat(64);
        assert!(parse(&format!("weft_{id}_{secret}")).is_some());
        for bad in [
            String::new(),
            "s3cret".to_owned(),
            format!("weft_{id}{secret}"),
            format!("weft_{id}_{}", "a".repeat(63)),
            format!("weft_{}_{secret}", "g".repeat(16)),
            format!("weft_{id}_{secret}_"),
            format!("WEFT_{id}_{secret}"),
        ] {
            assert!(parse(&bad).is_none(), "{bad}");
        }
    }
}
