//! weft's statements take positional `?` parameters (as SQLite and JDBC do); PostgreSQL
//! numbers them (`$1`, `$2`, ...). A statement given parameters has its `?` numbered, outside
//! string literals, quoted identifiers, dollar-quoted bodies and comments. A statement without
//! parameters is left as it is, so that the `jsonb` operators `?`, `?|` and `?&` keep working
//! in statements that need no parameters.

/// `sql` with each `?` that is a placeholder replaced by `$1`, `$2`, ...
pub fn numbered(sql: &str) -> String {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        match b[i] {
            b'\'' | b'"' => {
                let q = b[i];
                i += 1;
                while i < b.len() {
                    if b[i] == q {
                        // A doubled quote is one quote inside the literal.
                        if b.get(i + 1) == Some(&q) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 2;
            }
            b'$' => {
                // A dollar quote: $tag$ ... $tag$ (the tag may be empty).
                let tag_end = b[i + 1..]
                    .iter()
                    .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
                    .map(|p| i + 1 + p);
                match tag_end {
                    Some(e)
                        if b[e] == b'$' && !b[i + 1..e].first().is_some_and(u8::is_ascii_digit) =>
                    {
                        let tag = &sql[i..=e];
                        match sql[e + 1..].find(tag) {
                            Some(p) => i = e + 1 + p + tag.len(),
                            None => i = b.len(),
                        }
                    }
                    _ => i += 1,
                }
            }
            b'?' => {
                n += 1;
                out.push_str(&sql[copied..i]);
                out.push_str(&format!("${n}"));
                i += 1;
                copied = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&sql[copied.min(sql.len())..]);
    out
}

#[cfg(test)]
mod tests {
    use super::numbered;

    #[test]
    fn placeholders_are_numbered_outside_literals_and_comments() {
        assert_eq!(
            numbered("INSERT INTO t VALUES (?, ?)"),
            "INSERT INTO t VALUES ($1, $2)"
        );
        assert_eq!(
            numbered("SELECT '?', \"a?\", x FROM t WHERE y = ? -- ?\n AND z = ? /* ? */"),
            "SELECT '?', \"a?\", x FROM t WHERE y = $1 -- ?\n AND z = $2 /* ? */"
        );
        assert_eq!(numbered("SELECT 'it''s ?' , ?"), "SELECT 'it''s ?' , $1");
        assert_eq!(
            numbered("SELECT $f$ ? $f$, $$?$$, ?, $1"),
            "SELECT $f$ ? $f$, $$?$$, $1, $1"
        );
        assert_eq!(numbered("no placeholders"), "no placeholders");
        assert_eq!(numbered("unterminated '?"), "unterminated '?");
    }
}
