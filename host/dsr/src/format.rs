//! A `.dsr` text in one canonical form, its comments kept: what `weft fmt` writes.
//!
//! The form is the export's ([`crate::write`]): two spaces of indentation a level, root
//! braces, keys without quotes where HJSON allows them, every single-line string quoted as
//! JSON quotes it, text of several lines as a `'''` block. Two things the export does not
//! need are added: an object or array that holds no comment and no text of several lines is
//! written on one line (`{ unique: "id" }`, `["a", "b"]`) when that line stays within
//! [`WIDTH`] columns, and a single blank line between members or items is kept where the
//! text had one or more. Comments stay where they were: on their own lines before what
//! followed them, or at the end of the line of the value they followed.
//!
//! The form depends only on the value and its comments (not on how the text was laid out
//! beyond blank lines), so formatting is idempotent, and what it writes reads back as the
//! same value.

use crate::hjson::{self, SyntaxError};
use crate::value::{Span, Spanned, Value};
use crate::write::{block, indent, key, lines};

/// The widest line an object or array is written on when it fits.
pub const WIDTH: usize = 100;

/// `text` in the canonical form, ending with a newline.
///
/// # Errors
///
/// The [`SyntaxError`] of a text that does not read (nothing is written then), or
/// `dsr.format` when the form would not read back as the same value and comments (a block
/// comment left open at the end of the text, which a closing bracket after it would fall
/// into): the text is then left as it is.
pub fn format(text: &str) -> Result<String, SyntaxError> {
    let (root, comments) = hjson::parse_with_comments(text)?;
    let written = write(text, &root, comments.clone());
    // What is written must read back as what was read: the same value, the same comments.
    let same = match hjson::parse_with_comments(&written) {
        Ok((again, again_comments)) => {
            again.value.to_json() == root.value.to_json()
                && texts(&written, &again_comments) == texts(text, &comments)
        }
        Err(_) => false,
    };
    if !same {
        let open = comments.iter().find(|c| {
            text[c.start as usize..c.end as usize].starts_with("/*")
                && !text[c.start as usize..c.end as usize].ends_with("*/")
        });
        return Err(SyntaxError {
            code: "dsr.format",
            message: match open {
                Some(_) => "a block comment is not closed (`/*` without `*/`): close it, and weft fmt can write the file".to_owned(),
                None => "the canonical form would not read back as this text does; the file is left as it is".to_owned(),
            },
            offset: open.map_or(0, |c| c.start as usize),
        });
    }
    Ok(written)
}

/// The comments' texts, trimmed.
fn texts(text: &str, comments: &[Span]) -> Vec<String> {
    comments
        .iter()
        .map(|c| text[c.start as usize..c.end as usize].trim().to_owned())
        .collect()
}

/// `root`, read from `text` with `comments`, in the canonical form.
fn write(text: &str, root: &Spanned, comments: Vec<Span>) -> String {
    let mut f = Formatter {
        text,
        comments,
        next: 0,
        last: 0,
        out: String::with_capacity(text.len() + text.len() / 8),
    };
    let mut first = true;
    f.leading(root.span.start, 0, &mut first);
    f.line(0);
    match &root.value {
        Value::Object(_) | Value::Array(_) => f.broken(root, 0),
        _ => f.value(root, 0, 0),
    }
    // A root without braces ends with its last member (`broken` noted where); one with
    // braces or a single value ends with its span.
    let braced = matches!(
        text.as_bytes().get(root.span.start as usize),
        Some(b'{' | b'[')
    );
    if braced || !matches!(root.value, Value::Object(_)) {
        f.last = root.span.end;
        f.trailing(root.span.end);
    }
    // After the root, a blank line before a comment is kept as anywhere else.
    let mut after_root = false;
    f.leading(u32::MAX, 0, &mut after_root);
    f.out.push('\n');
    f.out
}

struct Formatter<'a> {
    text: &'a str,
    /// Every comment of the text, in order.
    comments: Vec<Span>,
    /// The first comment not yet written.
    next: usize,
    /// Where in the text the last thing written ended: a blank line after it is kept.
    last: u32,
    out: String,
}

impl Formatter<'_> {
    /// Starts a new line indented to `level` (no line break before the first).
    fn line(&mut self, level: usize) {
        if !self.out.is_empty() {
            self.out.push('\n');
        }
        indent(level, &mut self.out);
    }

    /// A blank line when the text had one between what was written last and `at`, except
    /// before the first line of a block.
    fn gap(&mut self, at: u32, first: &mut bool) {
        let blank = !*first
            && self.last < at
            && self
                .text
                .get(self.last as usize..at as usize)
                .is_some_and(|between| {
                    let lines: Vec<&str> = between.split('\n').collect();
                    lines.len() > 2
                        && lines[1..lines.len() - 1]
                            .iter()
                            .any(|l| l.trim().is_empty())
                });
        if blank && !self.out.is_empty() {
            self.out.push('\n');
        }
        *first = false;
    }

    /// The comments that stand before `before`, each on its own line at `level`.
    fn leading(&mut self, before: u32, level: usize, first: &mut bool) {
        while let Some(c) = self.comments.get(self.next).copied() {
            if c.start >= before {
                break;
            }
            self.gap(c.start, first);
            self.line(level);
            self.out
                .push_str(&self.text[c.start as usize..c.end as usize]);
            self.last = c.end;
            self.next += 1;
        }
    }

    /// The comment that follows `after` on its line, if any, at the end of the line written.
    fn trailing(&mut self, after: u32) {
        let Some(c) = self.comments.get(self.next).copied() else {
            return;
        };
        let between = self
            .text
            .get(after as usize..c.start as usize)
            .unwrap_or("\n");
        let comment = &self.text[c.start as usize..c.end as usize];
        if c.start >= after && !between.contains('\n') && !comment.contains('\n') {
            self.out.push(' ');
            self.out.push_str(comment);
            self.last = c.end;
            self.next += 1;
        }
    }

    /// Whether a comment not yet written stands inside `span`.
    fn holds_comment(&self, span: Span) -> bool {
        self.comments[self.next..]
            .iter()
            .take_while(|c| c.start < span.end)
            .any(|c| c.start > span.start)
    }

    /// An object or array over several lines; its opening bracket at the cursor, its
    /// closing one at `level`.
    fn broken(&mut self, v: &Spanned, level: usize) {
        // The closing bracket's place (a root without braces ends with the text).
        // (A root without braces ends with its last member: comments after it stay after the
        // root.)
        let close = match (self.text.as_bytes().get(v.span.start as usize), &v.value) {
            (Some(b'{' | b'['), _) => v.span.end.saturating_sub(1),
            (_, Value::Object(members)) => {
                members.last().map_or(v.span.start, |m| m.value.span.end)
            }
            _ => v.span.end,
        };
        let mut first = true;
        match &v.value {
            Value::Object(members) => {
                if members.is_empty() && !self.holds_comment(v.span) {
                    self.out.push_str("{}");
                    return;
                }
                self.out.push('{');
                self.last = v.span.start;
                for m in members {
                    self.leading(m.value.span.start, level + 1, &mut first);
                    self.gap(m.key_span.start, &mut first);
                    self.line(level + 1);
                    key(&m.key, &mut self.out);
                    self.out.push(':');
                    let column = 2 * (level + 1) + self.key_width(&m.key) + 2;
                    match &m.value.value {
                        Value::String(s) if block(s) => {
                            self.out.push('\n');
                            indent(level + 2, &mut self.out);
                            lines(s, level + 2, &mut self.out);
                        }
                        _ => {
                            self.out.push(' ');
                            self.value(&m.value, level + 1, column);
                        }
                    }
                    self.last = m.value.span.end;
                    self.trailing(m.value.span.end);
                }
                self.leading(close, level + 1, &mut first);
                self.line(level);
                self.out.push('}');
            }
            Value::Array(items) => {
                if items.is_empty() && !self.holds_comment(v.span) {
                    self.out.push_str("[]");
                    return;
                }
                self.out.push('[');
                self.last = v.span.start;
                for item in items {
                    self.leading(item.span.start, level + 1, &mut first);
                    self.gap(item.span.start, &mut first);
                    self.line(level + 1);
                    match &item.value {
                        Value::String(s) if block(s) => lines(s, level + 1, &mut self.out),
                        _ => self.value(item, level + 1, 2 * (level + 1)),
                    }
                    self.last = item.span.end;
                    self.trailing(item.span.end);
                }
                self.leading(close, level + 1, &mut first);
                self.line(level);
                self.out.push(']');
            }
            _ => self.value(v, level, 0),
        }
    }

    /// How wide `k` is written.
    fn key_width(&self, k: &str) -> usize {
        let mut written = String::new();
        key(k, &mut written);
        written.chars().count()
    }

    /// A value at the cursor, which stands at `column`: an object or array on one line when
    /// it fits, else over several lines closing at `level`.
    fn value(&mut self, v: &Spanned, level: usize, column: usize) {
        match &v.value {
            Value::Object(_) | Value::Array(_) => {
                let room = WIDTH.saturating_sub(column);
                match (!self.holds_comment(v.span))
                    .then(|| self.inline(v, room))
                    .flatten()
                {
                    Some(one_line) => self.out.push_str(&one_line),
                    None => self.broken(v, level),
                }
            }
            _ => {
                let scalar = self.scalar(v);
                self.out.push_str(&scalar);
            }
        }
    }

    /// `v` on one line of at most `room` characters, if it fits: no text of several lines.
    fn inline(&self, v: &Spanned, room: usize) -> Option<String> {
        let mut out = String::new();
        self.inline_into(v, room, &mut out)?;
        Some(out)
    }

    fn inline_into(&self, v: &Spanned, room: usize, out: &mut String) -> Option<()> {
        match &v.value {
            Value::Object(members) if members.is_empty() => out.push_str("{}"),
            Value::Object(members) => {
                out.push_str("{ ");
                for (i, m) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    key(&m.key, out);
                    out.push_str(": ");
                    self.inline_into(&m.value, room, out)?;
                    if out.chars().count() > room {
                        return None;
                    }
                }
                out.push_str(" }");
            }
            Value::Array(items) if items.is_empty() => out.push_str("[]"),
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.inline_into(item, room, out)?;
                    if out.chars().count() > room {
                        return None;
                    }
                }
                out.push(']');
            }
            Value::String(s) if s.contains(['\n', '\r']) => return None,
            _ => out.push_str(&self.scalar(v)),
        }
        (out.chars().count() <= room).then_some(())
    }

    /// A value that is not an object or array, as written.
    fn scalar(&self, v: &Spanned) -> String {
        match &v.value {
            Value::Null => "null".to_owned(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => match serde_json::Number::from_f64(*f) {
                Some(n) => n.to_string(),
                // Beyond what a double holds: as the text wrote it.
                None => self.text[v.span.start as usize..v.span.end as usize].to_owned(),
            },
            Value::String(s) => serde_json::Value::String(s.clone()).to_string(),
            Value::Array(_) | Value::Object(_) => String::new(),
        }
    }
}

#[cfg(test)]
mod tests;
