//! A strict, spanned JSON reader for request bodies.
//!
//! Strict JSON, with one deliberate exception: raw control characters (TAB above all) are
//! accepted inside strings, because the content encoding of SPEC 4.2 leaves them raw and
//! strict parsers reject them. It shares the value tree of the HJSON reader, so that an
//! envelope error (a missing `payload`, a mistyped option) names its line and column too.

use super::hjson::{Budget, SyntaxError};
use super::value::{Member, Span, Spanned, Value};

/// Reads a JSON text.
///
/// # Errors
///
/// A [`SyntaxError`] with the offset of the first problem.
pub fn parse(text: &str) -> Result<Spanned, SyntaxError> {
    let mut r = Reader {
        text,
        b: text.as_bytes(),
        pos: 0,
        budget: Budget::default(),
    };
    r.ws();
    let v = r.value()?;
    r.ws();
    if r.pos < r.b.len() {
        return r.err("unexpected characters after the JSON value");
    }
    Ok(v)
}

struct Reader<'a> {
    text: &'a str,
    b: &'a [u8],
    pos: usize,
    budget: Budget,
}

impl Reader<'_> {
    fn err<T>(&self, message: impl Into<String>) -> Result<T, SyntaxError> {
        Err(SyntaxError::new(message, self.pos))
    }

    fn cur(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while matches!(self.cur(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn expected(&self, what: &str) -> SyntaxError {
        let found = match self.text.get(self.pos..).and_then(|s| s.chars().next()) {
            None => "the end of the input (is the JSON truncated?)".to_owned(),
            Some(c) => format!("'{}'", c.escape_default()),
        };
        SyntaxError::new(format!("expected {what}, found {found}"), self.pos)
    }

    fn value(&mut self) -> Result<Spanned, SyntaxError> {
        let start = self.pos;
        self.budget.value(start)?;
        let value = match self.cur() {
            Some(b'{') => return self.object(),
            Some(b'[') => return self.array(),
            Some(b'"') => Value::String(self.string()?),
            Some(b't') => self.word("true", Value::Bool(true))?,
            Some(b'f') => self.word("false", Value::Bool(false))?,
            Some(b'n') => self.word("null", Value::Null)?,
            Some(b'-' | b'0'..=b'9') => self.number()?,
            _ => return Err(self.expected("a JSON value")),
        };
        Ok(Spanned {
            value,
            span: Span::new(start, self.pos),
        })
    }

    fn word(&mut self, word: &str, value: Value) -> Result<Value, SyntaxError> {
        if self.b[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.expected("a JSON value"))
        }
    }

    fn number(&mut self) -> Result<Value, SyntaxError> {
        let start = self.pos;
        while matches!(
            self.cur(),
            Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
        ) {
            self.pos += 1;
        }
        let raw = &self.text[start..self.pos];
        let strict = !raw.ends_with('.') && !raw.contains(".e") && !raw.contains(".E");
        let whole = !raw.contains(['.', 'e', 'E']);
        match super::hjson::parse_number(raw) {
            // A whole number past i64 would silently lose digits as a float.
            Some(Value::Float(_)) if strict && whole => {
                self.pos = start;
                self.err(format!(
                    "the whole number {raw} is out of range (from -9223372036854775808 to 9223372036854775807)"
                ))
            }
            Some(v) if strict => Ok(v),
            _ => {
                self.pos = start;
                self.err(format!("'{raw}' is not a valid JSON number"))
            }
        }
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
        let open = self.pos;
        self.pos += 1;
        let mut out = String::new();
        let mut run = self.pos;
        loop {
            match self.cur() {
                None => {
                    self.pos = open;
                    return self.err("unterminated string (is the JSON truncated?)");
                }
                Some(b'"') => {
                    out.push_str(&self.text[run..self.pos]);
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    out.push_str(&self.text[run..self.pos]);
                    self.pos += 1;
                    self.escape(&mut out)?;
                    run = self.pos;
                }
                Some(_) => self.pos += 1,
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), SyntaxError> {
        let found = self
            .text
            .get(self.pos..)
            .and_then(|s| s.chars().next())
            .map_or_else(String::new, |c| c.escape_default().to_string());
        super::hjson::unescape(self.b, &mut self.pos, out, false).map_err(|message| SyntaxError {
            code: "dsr.syntax",
            message: message.replace("{}", &found),
            offset: self.pos,
        })
    }

    fn enter(&mut self) -> Result<(), SyntaxError> {
        self.budget.enter(self.pos)
    }

    fn object(&mut self) -> Result<Spanned, SyntaxError> {
        let start = self.pos;
        self.enter()?;
        self.pos += 1;
        let mut members = Vec::new();
        self.ws();
        if self.cur() == Some(b'}') {
            self.pos += 1;
        } else {
            loop {
                self.ws();
                if self.cur() != Some(b'"') {
                    return Err(self.expected("a quoted member name"));
                }
                let key_start = self.pos;
                let key = self.string()?;
                let key_span = Span::new(key_start, self.pos);
                self.ws();
                if self.cur() != Some(b':') {
                    return Err(self.expected("':'"));
                }
                self.pos += 1;
                self.ws();
                let value = self.value()?;
                members.push(Member {
                    key,
                    key_span,
                    value,
                });
                Budget::members(members.len(), key_start)?;
                self.ws();
                match self.cur() {
                    Some(b',') => self.pos += 1,
                    Some(b'}') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(self.expected("',' or '}'")),
                }
            }
        }
        self.budget.leave();
        Ok(Spanned {
            value: Value::Object(members),
            span: Span::new(start, self.pos),
        })
    }

    fn array(&mut self) -> Result<Spanned, SyntaxError> {
        let start = self.pos;
        self.enter()?;
        self.pos += 1;
        let mut items = Vec::new();
        self.ws();
        if self.cur() == Some(b']') {
            self.pos += 1;
        } else {
            loop {
                self.ws();
                items.push(self.value()?);
                self.ws();
                match self.cur() {
                    Some(b',') => self.pos += 1,
                    Some(b']') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(self.expected("',' or ']'")),
                }
            }
        }
        self.budget.leave();
        Ok(Spanned {
            value: Value::Array(items),
            span: Span::new(start, self.pos),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_json_with_raw_tabs_in_strings() {
        let v = parse("{\"a\": \"x\ty\", \"b\": [1, 2.5, true, null]}").expect("parses");
        assert_eq!(
            v.value.to_json(),
            serde_json::json!({"a": "x\ty", "b": [1, 2.5, true, null]})
        );
    }

    #[test]
    fn rejects_what_is_not_json() {
        for bad in [
            "{a: 1}",
            "{\"a\": 1,}",
            "[1 2]",
            "{\"a\": 01}",
            "{\"a\": 1.}",
            "{\"a\": \"x",
            "",
            "{\"a\": tru}",
            "{\"a\": \"\\q\"}",
            "[1] [2]",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn truncated_input_says_so() {
        let e = parse("{\"command\": \"DeployRepository\", \"payload\": {").expect_err("truncated");
        assert!(e.message.contains("truncated"), "{}", e.message);
    }
}
