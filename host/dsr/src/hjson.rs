//! A spanned HJSON reader.
//!
//! It follows the reference implementation (hjson-js 3) rule for rule: optional root braces,
//! quoteless keys and strings, `#`, `//` and `/* */` comments, optional commas, `'''`
//! multi-line strings with their indentation removed, and quoteless values that are read as
//! `true`/`false`/`null`/numbers only when nothing but a comment, a comma or a closing bracket
//! follows them on the line. It is checked against `../shared/hjson-suite` by a test.
//!
//! Unlike the reference, it keeps the byte span of every value and key ([`Spanned`]), so that
//! every later error names its place, and it caps nesting at [`MAX_DEPTH`] so that no input
//! can overflow the stack. A leading byte order mark is skipped; CRLF line ends are accepted.

use super::value::{Member, Span, Spanned, Value};

/// How deeply arrays and objects may nest before the reader refuses the text
/// (`dsr.too_deep`).
pub const MAX_DEPTH: usize = 256;

/// How many members one object may have (`dsr.too_many_keys`).
pub const MAX_KEYS: usize = 10_000;

/// How many values (objects, arrays, strings, numbers, literals) one text may hold
/// (`dsr.too_many_values`).
pub const MAX_VALUES: usize = 1_000_000;

/// A syntax error, or a limit passed: what is wrong and the byte offset where the reader
/// found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// `dsr.syntax`, or the code of the limit: `dsr.too_deep`, `dsr.too_many_keys`,
    /// `dsr.too_many_values`.
    pub code: &'static str,
    /// What is wrong, in words.
    pub message: String,
    /// Byte offset in the text.
    pub offset: usize,
}

impl SyntaxError {
    /// A syntax error.
    pub fn new(message: impl Into<String>, offset: usize) -> Self {
        SyntaxError {
            code: "dsr.syntax",
            message: message.into(),
            offset,
        }
    }
}

/// Counts what a reader has read against the limits shared by the HJSON and JSON readers.
#[derive(Debug, Default)]
pub(super) struct Budget {
    depth: usize,
    values: usize,
}

impl Budget {
    /// One more value at `offset`.
    pub(super) fn value(&mut self, offset: usize) -> Result<(), SyntaxError> {
        self.values += 1;
        if self.values > MAX_VALUES {
            return Err(SyntaxError {
                code: "dsr.too_many_values",
                message: format!("the text holds more than {MAX_VALUES} values"),
                offset,
            });
        }
        Ok(())
    }

    /// One level deeper at `offset`.
    pub(super) fn enter(&mut self, offset: usize) -> Result<(), SyntaxError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(SyntaxError {
                code: "dsr.too_deep",
                message: format!("nesting deeper than {MAX_DEPTH} levels"),
                offset,
            });
        }
        Ok(())
    }

    /// One level up.
    pub(super) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Starts over (the root is read a second time).
    pub(super) fn reset(&mut self) {
        *self = Budget::default();
    }

    /// Checks the member count of an object being read.
    pub(super) fn members(count: usize, offset: usize) -> Result<(), SyntaxError> {
        if count > MAX_KEYS {
            return Err(SyntaxError {
                code: "dsr.too_many_keys",
                message: format!("an object has more than {MAX_KEYS} members"),
                offset,
            });
        }
        Ok(())
    }
}

/// Reads an HJSON text (which may also be plain JSON).
///
/// # Errors
///
/// A [`SyntaxError`] with the offset of the first problem.
pub fn parse(text: &str) -> Result<Spanned, SyntaxError> {
    parse_with_comments(text).map(|(v, _)| v)
}

/// Reads an HJSON text as [`parse`] does, and answers the span of every comment too (`#`,
/// `//` to the end of its line, `/* */`), in the order of the text: what a formatter keeps.
///
/// # Errors
///
/// A [`SyntaxError`] with the offset of the first problem.
pub fn parse_with_comments(text: &str) -> Result<(Spanned, Vec<Span>), SyntaxError> {
    let start = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let mut r = Reader {
        text,
        b: text.as_bytes(),
        pos: start,
        budget: Budget::default(),
        swallowed: None,
        comments: Vec::new(),
    };
    let read = r.read();
    match read {
        Ok(v) => Ok((v, r.comments)),
        Err(e) => Err(r.explain(e)),
    }
}

impl Reader<'_> {
    /// The whole text.
    fn read(&mut self) -> Result<Spanned, SyntaxError> {
        let r = self;
        r.white();
        match r.cur() {
            Some(b'{') | Some(b'[') => {
                let v = r.value()?;
                r.trailing()?;
                Ok(v)
            }
            _ => {
                let root_start = r.pos;
                match r.object(true).and_then(|v| r.trailing().map(|()| v)) {
                    Ok(v) => Ok(v),
                    Err(first) => {
                        // A single value (string, number, literal) at the root instead.
                        let culprit = r.swallowed.take();
                        r.pos = root_start;
                        r.budget.reset();
                        r.comments.retain(|c| (c.start as usize) < root_start);
                        match r.value().and_then(|v| r.trailing().map(|()| v)) {
                            Ok(v) => Ok(v),
                            Err(_) => {
                                r.swallowed = culprit;
                                Err(first)
                            }
                        }
                    }
                }
            }
        }
    }

    /// `e` told as what most likely caused it: HJSON's trap, a quoteless string that ran to
    /// the end of its line and took in a `}` or `]` meant to close something (`{name: a}`,
    /// `module: Sql, name: load}`). The error is then placed on that value, which it names.
    fn explain(&self, e: SyntaxError) -> SyntaxError {
        let Some((start, end, key)) = &self.swallowed else {
            return e;
        };
        if e.code != "dsr.syntax" || *start > e.offset {
            return e;
        }
        let raw = &self.text[*start..*end];
        let line = self.text[..e.offset].matches('\n').count() + 1;
        let what = match key {
            Some(k) => format!("the value of `{k}`"),
            None => "an entry of an array".to_owned(),
        };
        let shown: String = raw.chars().take(60).collect();
        let ellipsis = if raw.chars().count() > 60 { "..." } else { "" };
        let closer = if raw.matches('}').count() > raw.matches('{').count() {
            '}'
        } else {
            ']'
        };
        SyntaxError::new(
            format!(
                "{what}, `{shown}{ellipsis}`, has no quotes: it runs to the end of its line, taking in the `{closer}` meant to close; quote it, or end the line after it (the reader stopped on line {line}: {})",
                e.message
            ),
            *start,
        )
    }
}

struct Reader<'a> {
    text: &'a str,
    b: &'a [u8],
    pos: usize,
    budget: Budget,
    /// The last quoteless string whose closing brackets outnumber its opening ones, as
    /// (start, end, its key): where a later syntax error most likely comes from.
    swallowed: Option<(usize, usize, Option<String>)>,
    /// The comments skipped so far, in the order of the text.
    comments: Vec<Span>,
}

/// Whether quoteless text `raw` closes more `}` or `]` than it opens.
fn closes_more(raw: &str) -> bool {
    let count = |c: char| raw.chars().filter(|x| *x == c).count();
    count('}') > count('{') || count(']') > count('[')
}

fn is_punctuator(c: u8) -> bool {
    matches!(c, b'{' | b'}' | b'[' | b']' | b',' | b':')
}

impl<'a> Reader<'a> {
    fn cur(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn peek(&self, ahead: usize) -> Option<u8> {
        self.b.get(self.pos + ahead).copied()
    }

    fn err<T>(&self, message: impl Into<String>) -> Result<T, SyntaxError> {
        Err(SyntaxError::new(message, self.pos))
    }

    /// The character at the current position, for messages.
    fn cur_char(&self) -> String {
        match self.text.get(self.pos..).and_then(|s| s.chars().next()) {
            Some(c) if c.is_control() => c.escape_default().to_string(),
            Some(c) => c.to_string(),
            None => "end of input".to_owned(),
        }
    }

    /// Skips white space and comments.
    fn white(&mut self) {
        loop {
            while matches!(self.cur(), Some(c) if c <= b' ') {
                self.pos += 1;
            }
            match (self.cur(), self.peek(1)) {
                (Some(b'#'), _) | (Some(b'/'), Some(b'/')) => {
                    let start = self.pos;
                    while matches!(self.cur(), Some(c) if c != b'\n') {
                        self.pos += 1;
                    }
                    self.comment(start);
                }
                (Some(b'/'), Some(b'*')) => {
                    let start = self.pos;
                    self.pos += 2;
                    while self.pos < self.b.len()
                        && !(self.b[self.pos] == b'*' && self.peek(1) == Some(b'/'))
                    {
                        self.pos += 1;
                    }
                    self.pos = (self.pos + 2).min(self.b.len());
                    self.comment(start);
                }
                _ => return,
            }
        }
    }

    /// Notes the comment from `start` to here (once, though a second reading of the root
    /// passes it again), without the carriage return of a CRLF line end.
    fn comment(&mut self, start: usize) {
        let mut end = self.pos;
        if self.b[start] != b'/' || self.b.get(start + 1) != Some(&b'*') {
            while end > start && self.b[end - 1] == b'\r' {
                end -= 1;
            }
        }
        if self
            .comments
            .last()
            .is_none_or(|c| (c.start as usize) < start)
        {
            self.comments.push(Span::new(start, end));
        }
    }

    fn trailing(&mut self) -> Result<(), SyntaxError> {
        self.white();
        if self.cur().is_some() {
            return self.err(format!(
                "Syntax error, found trailing characters ('{}')",
                self.cur_char()
            ));
        }
        Ok(())
    }

    fn enter(&mut self) -> Result<(), SyntaxError> {
        self.budget.enter(self.pos)
    }

    /// Notes `v` when it is a quoteless string that took in a closing bracket.
    fn note_quoteless(&mut self, v: &Spanned, key: Option<&str>) {
        if let Value::String(_) = &v.value {
            let (start, end) = (v.span.start as usize, v.span.end as usize);
            let raw = self.text.get(start..end).unwrap_or("");
            let quoted = matches!(raw.as_bytes().first(), Some(b'"' | b'\''));
            if !quoted && closes_more(raw) {
                self.swallowed = Some((start, end, key.map(str::to_owned)));
            }
        }
    }

    fn value(&mut self) -> Result<Spanned, SyntaxError> {
        self.white();
        self.budget.value(self.pos)?;
        match self.cur() {
            Some(b'{') => self.object(false),
            Some(b'[') => self.array(),
            Some(q @ (b'"' | b'\'')) => {
                let start = self.pos;
                let s = self.string(q, true)?;
                Ok(Spanned {
                    value: Value::String(s),
                    span: Span::new(start, self.pos),
                })
            }
            _ => self.quoteless(),
        }
    }

    fn object(&mut self, without_braces: bool) -> Result<Spanned, SyntaxError> {
        let start = self.pos;
        let mut members = Vec::new();
        if !without_braces {
            self.enter()?;
            self.pos += 1;
        }
        self.white();
        if !without_braces && self.cur() == Some(b'}') {
            self.pos += 1;
            self.budget.leave();
            return Ok(Spanned {
                value: Value::Object(members),
                span: Span::new(start, self.pos),
            });
        }
        while self.cur().is_some() {
            let key_start = self.pos;
            let key = self.key()?;
            let key_span = Span::new(key_start, self.pos);
            self.white();
            if self.cur() != Some(b':') {
                return self.err(format!("Expected ':' instead of '{}'", self.cur_char()));
            }
            self.pos += 1;
            let value = self.value()?;
            self.note_quoteless(&value, Some(&key));
            members.push(Member {
                key,
                key_span,
                value,
            });
            Budget::members(members.len(), key_start)?;
            self.white();
            if self.cur() == Some(b',') {
                self.pos += 1;
                self.white();
            }
            if !without_braces && self.cur() == Some(b'}') {
                self.pos += 1;
                self.budget.leave();
                return Ok(Spanned {
                    value: Value::Object(members),
                    span: Span::new(start, self.pos),
                });
            }
            self.white();
        }
        if without_braces {
            Ok(Spanned {
                value: Value::Object(members),
                span: Span::new(start, self.pos),
            })
        } else {
            self.err("End of input while parsing an object (missing '}')")
        }
    }

    fn array(&mut self) -> Result<Spanned, SyntaxError> {
        let start = self.pos;
        self.enter()?;
        self.pos += 1;
        let mut items = Vec::new();
        self.white();
        if self.cur() == Some(b']') {
            self.pos += 1;
            self.budget.leave();
            return Ok(Spanned {
                value: Value::Array(items),
                span: Span::new(start, self.pos),
            });
        }
        while self.cur().is_some() {
            let item = self.value()?;
            self.note_quoteless(&item, None);
            items.push(item);
            self.white();
            if self.cur() == Some(b',') {
                self.pos += 1;
                self.white();
            }
            if self.cur() == Some(b']') {
                self.pos += 1;
                self.budget.leave();
                return Ok(Spanned {
                    value: Value::Array(items),
                    span: Span::new(start, self.pos),
                });
            }
            self.white();
        }
        self.err("End of input while parsing an array (missing ']')")
    }

    fn key(&mut self) -> Result<String, SyntaxError> {
        if let Some(q @ (b'"' | b'\'')) = self.cur() {
            return self.string(q, false);
        }
        let start = self.pos;
        let mut space: Option<usize> = None;
        loop {
            match self.cur() {
                None => {
                    return self.err("Found EOF while looking for a key name (check your syntax)");
                }
                Some(b':') => {
                    let end = space.unwrap_or(self.pos);
                    if end == start {
                        return self
                            .err("Found ':' but no key name (for an empty key name use quotes)");
                    }
                    if let Some(sp) = space {
                        // Anything but white space after the first white space is an error.
                        if self.b[sp..self.pos].iter().any(|&c| c > b' ') {
                            self.pos = sp;
                            return self
                                .err("Found whitespace in your key name (use quotes to include)");
                        }
                    }
                    return Ok(self.text[start..end].to_owned());
                }
                Some(c) if c <= b' ' => {
                    if space.is_none() {
                        space = Some(self.pos);
                    }
                }
                Some(c) if is_punctuator(c) => {
                    return self.err(format!(
                        "Found '{}' where a key name was expected (check your syntax)",
                        c as char
                    ));
                }
                Some(_) => {}
            }
            self.pos += 1;
        }
    }

    /// A quoted string; the current byte is the quote. `'''` starts a multi-line string
    /// where `allow_multiline` is set.
    fn string(&mut self, quote: u8, allow_multiline: bool) -> Result<String, SyntaxError> {
        self.pos += 1;
        let mut out = String::new();
        let mut run_start = self.pos;
        loop {
            let Some(c) = self.cur() else {
                return self.err("Bad string: end of input before the closing quote");
            };
            match c {
                _ if c == quote => {
                    out.push_str(&self.text[run_start..self.pos]);
                    self.pos += 1;
                    if allow_multiline
                        && quote == b'\''
                        && out.is_empty()
                        && self.cur() == Some(b'\'')
                    {
                        self.pos += 1;
                        return self.multiline();
                    }
                    return Ok(out);
                }
                b'\\' => {
                    out.push_str(&self.text[run_start..self.pos]);
                    self.pos += 1;
                    self.escape(&mut out)?;
                    run_start = self.pos;
                }
                b'\n' | b'\r' => {
                    return self.err("Bad string: a line break inside a quoted string");
                }
                _ => self.pos += 1,
            }
        }
    }

    /// Decodes the escape after a backslash (the current byte is the escaped one).
    fn escape(&mut self, out: &mut String) -> Result<(), SyntaxError> {
        unescape(self.b, &mut self.pos, out, true).map_err(|message| SyntaxError {
            code: "dsr.syntax",
            message: message.replace("{}", &self.cur_char()),
            offset: self.pos,
        })
    }

    /// A `'''` string; the position is just after the opening quotes.
    fn multiline(&mut self) -> Result<String, SyntaxError> {
        // The indent is the number of characters before the opening quotes on their line.
        let quotes = self.pos - 3;
        let line_start = self.b[..quotes]
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |i| i + 1);
        let indent = self.text[line_start..quotes].chars().count();
        let mut out = String::new();
        while matches!(self.cur(), Some(c) if c <= b' ' && c != b'\n') {
            self.pos += 1;
        }
        if self.cur() == Some(b'\n') {
            self.pos += 1;
            self.skip_indent(indent);
        }
        let mut triple = 0;
        loop {
            let Some(c) = self.cur() else {
                return self.err("Bad multiline string: end of input before the closing '''");
            };
            if c == b'\'' {
                triple += 1;
                self.pos += 1;
                if triple == 3 {
                    if out.ends_with('\n') {
                        out.pop();
                    }
                    return Ok(out);
                }
                continue;
            }
            for _ in 0..triple {
                out.push('\'');
            }
            triple = 0;
            if c == b'\n' {
                out.push('\n');
                self.pos += 1;
                self.skip_indent(indent);
            } else {
                let run_end = self.b[self.pos..]
                    .iter()
                    .position(|&c| c == b'\'' || c == b'\n' || c == b'\r')
                    .map_or(self.b.len(), |i| self.pos + i);
                if run_end == self.pos {
                    // A carriage return: dropped.
                    self.pos += 1;
                } else {
                    out.push_str(&self.text[self.pos..run_end]);
                    self.pos = run_end;
                }
            }
        }
    }

    fn skip_indent(&mut self, indent: usize) {
        let mut skip = indent;
        while skip > 0 && matches!(self.cur(), Some(c) if c <= b' ' && c != b'\n') {
            self.pos += 1;
            skip -= 1;
        }
    }

    /// A quoteless value: a string to the end of the line, or a literal or number when only a
    /// comma, closing bracket or comment follows it.
    fn quoteless(&mut self) -> Result<Spanned, SyntaxError> {
        let start = self.pos;
        match self.cur() {
            None => return self.err("Found end of input where a value was expected"),
            Some(c) if is_punctuator(c) => {
                return self.err(format!(
                    "Found a punctuator character '{}' when expecting a quoteless string (check your syntax)",
                    c as char
                ));
            }
            _ => {}
        }
        self.pos += 1;
        loop {
            let c = self.cur();
            let eol = matches!(c, None | Some(b'\n') | Some(b'\r'));
            let stop = eol
                || matches!(c, Some(b',') | Some(b'}') | Some(b']') | Some(b'#'))
                || (c == Some(b'/') && matches!(self.peek(1), Some(b'/') | Some(b'*')));
            if stop {
                let raw = self.text[start..self.pos].trim_end();
                // `raw` is empty when the value was only Unicode white space (U+00A0, ...),
                // which the reader does not skip but the trim removes: an empty string.
                let literal = match raw.as_bytes().first() {
                    Some(b't') if raw == "true" => Some(Value::Bool(true)),
                    Some(b'f') if raw == "false" => Some(Value::Bool(false)),
                    Some(b'n') if raw == "null" => Some(Value::Null),
                    Some(b'-' | b'0'..=b'9') => parse_number(raw),
                    _ => None,
                };
                if let Some(value) = literal {
                    return Ok(Spanned {
                        value,
                        span: Span::new(start, start + raw.len()),
                    });
                }
                if eol {
                    return Ok(Spanned {
                        value: Value::String(raw.to_owned()),
                        span: Span::new(start, start + raw.len()),
                    });
                }
            }
            self.pos += 1;
            // Stay on a character boundary: multi-byte characters are never stops.
            while self.pos < self.b.len() && !self.text.is_char_boundary(self.pos) {
                self.pos += 1;
            }
        }
    }
}

/// For the string value whose literal starts at byte `start` of `text` (quoted, `'''`
/// multi-line or quoteless), the byte offset in `text` of every byte of the decoded string,
/// plus one entry for its end. Used to place a problem found inside a string (a SQL syntax
/// error in an action) at its line and column in the document.
pub fn string_source_map(text: &str, start: usize) -> Vec<usize> {
    let b = text.as_bytes();
    let mut map = Vec::new();
    let char_len = |pos: usize| {
        text.get(pos..)
            .and_then(|s| s.chars().next())
            .map_or(1, char::len_utf8)
    };
    if b[start..].starts_with(b"'''") {
        let line_start = b[..start]
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |i| i + 1);
        let indent = text[line_start..start].chars().count();
        let skip_indent = |pos: &mut usize| {
            let mut n = indent;
            while n > 0 && *pos < b.len() && b[*pos] <= b' ' && b[*pos] != b'\n' {
                *pos += 1;
                n -= 1;
            }
        };
        let mut pos = start + 3;
        while pos < b.len() && b[pos] <= b' ' && b[pos] != b'\n' {
            pos += 1;
        }
        if pos < b.len() && b[pos] == b'\n' {
            pos += 1;
            skip_indent(&mut pos);
        }
        let mut quotes: Vec<usize> = Vec::new();
        while pos < b.len() {
            let c = b[pos];
            if c == b'\'' {
                quotes.push(pos);
                pos += 1;
                if quotes.len() == 3 {
                    break;
                }
                continue;
            }
            map.append(&mut quotes);
            if c == b'\n' {
                map.push(pos);
                pos += 1;
                skip_indent(&mut pos);
            } else if c == b'\r' {
                pos += 1;
            } else {
                let len = char_len(pos);
                map.extend(std::iter::repeat_n(pos, len));
                pos += len;
            }
        }
        let end = quotes.first().copied().unwrap_or(pos);
        // The decoded string drops its last line break.
        if map.last().is_some_and(|&p| b[p] == b'\n') {
            map.pop();
        }
        map.push(end);
        return map;
    }
    if let Some(&q) = b.get(start).filter(|&&c| c == b'"' || c == b'\'') {
        let mut pos = start + 1;
        while pos < b.len() && b[pos] != q {
            if b[pos] == b'\\' {
                let mut out = String::new();
                let mut p = pos + 1;
                if unescape(b, &mut p, &mut out, true).is_err() {
                    break;
                }
                map.extend(std::iter::repeat_n(pos, out.len()));
                pos = p;
            } else {
                let len = char_len(pos);
                map.extend(std::iter::repeat_n(pos, len));
                pos += len;
            }
        }
        map.push(pos);
        return map;
    }
    let end = b[start..]
        .iter()
        .position(|&c| c == b'\n' || c == b'\r')
        .map_or(b.len(), |i| start + i);
    map.extend(start..=end);
    map
}

/// Decodes the escape whose letter is at `b[*pos]` (just after the backslash) into `out`
/// and moves `pos` past it: JSON's escapes, with `\uXXXX` surrogate pairs joined, and `\'`
/// where `single_quote` allows it (HJSON). On error, `pos` is left on the offending byte and
/// the message has `{}` where the caller names the character found.
pub(crate) fn unescape(
    b: &[u8],
    pos: &mut usize,
    out: &mut String,
    single_quote: bool,
) -> Result<(), &'static str> {
    let c = match b.get(*pos) {
        Some(b'"') => '"',
        Some(b'\'') if single_quote => '\'',
        Some(b'\\') => '\\',
        Some(b'/') => '/',
        Some(b'b') => '\u{8}',
        Some(b'f') => '\u{c}',
        Some(b'n') => '\n',
        Some(b'r') => '\r',
        Some(b't') => '\t',
        Some(b'u') => {
            *pos += 1;
            let first = hex4(b, pos)?;
            let mut code = first;
            if (0xD800..0xDC00).contains(&first) && b[*pos..].starts_with(b"\\u") {
                let save = *pos;
                *pos += 2;
                let second = hex4(b, pos)?;
                if (0xDC00..0xE000).contains(&second) {
                    code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                } else {
                    *pos = save;
                }
            }
            out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
            return Ok(());
        }
        _ => {
            return Err(
                "Bad escape '\\{}' in a string (a backslash that stands for itself is written \\\\)",
            );
        }
    };
    out.push(c);
    *pos += 1;
    Ok(())
}

fn hex4(b: &[u8], pos: &mut usize) -> Result<u32, &'static str> {
    let mut code = 0u32;
    for _ in 0..4 {
        let Some(d) = b.get(*pos).and_then(|&c| (c as char).to_digit(16)) else {
            return Err("Bad \\u escape: four hexadecimal digits expected");
        };
        code = code * 16 + d;
        *pos += 1;
    }
    Ok(code)
}

/// Reads `raw` as an HJSON number: JSON's grammar, except that `1.` is allowed; leading zeros
/// (`01`), a missing integer part (`.5`, `-.5`) and non-finite results are not numbers.
pub(crate) fn parse_number(raw: &str) -> Option<Value> {
    let b = raw.as_bytes();
    let mut i = 0;
    if b.first() == Some(&b'-') {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - int_start;
    if int_digits == 0 || (int_digits > 1 && b[int_start] == b'0') {
        return None;
    }
    let mut integral = true;
    if i < b.len() && b[i] == b'.' {
        integral = false;
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        integral = false;
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    if integral && let Ok(n) = raw.parse::<i64>() {
        return Some(Value::Int(n));
    }
    let f: f64 = raw.parse().ok()?;
    f.is_finite().then_some(Value::Float(f))
}

#[cfg(test)]
pub(crate) mod tests;
