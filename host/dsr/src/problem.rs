//! Problems found in a document: errors and warnings, each with a stable code, a message,
//! a place (span, hence line and column) and a path inside the document.

use super::value::{LineIndex, Path, Span, Spanned, Value};

use std::borrow::Cow;
/// How bad a problem is: an error rejects the deploy, a warning is only reported. One enum
/// for the host's problems and those a plugin reports (the sdk's); answered as `error` or
/// `warning`.
pub use weft_sdk::Severity;

/// One problem of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// Error or warning.
    pub severity: Severity,
    /// A stable code such as `edge.unknown_node` (see `docs/dsr-format.md`), or a module's
    /// own (`Upsert.keys`).
    pub code: Cow<'static, str>,
    /// What is wrong, naming the thing.
    pub message: String,
    /// Where in the text, when known.
    pub span: Option<Span>,
    /// Where in the document, e.g. `transformationData.sheets[0].edges[1].to`.
    pub path: String,
}

impl Problem {
    /// An error at `span`.
    pub fn error(
        code: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
        span: Span,
        path: &Path,
    ) -> Self {
        Problem {
            severity: Severity::Error,
            code: code.into(),
            message: message.into(),
            span: Some(span),
            path: path.as_str().to_owned(),
        }
    }

    /// A warning at `span`.
    pub fn warning(
        code: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
        span: Span,
        path: &Path,
    ) -> Self {
        Problem {
            severity: Severity::Warning,
            ..Problem::error(code, message, span, path)
        }
    }

    /// Places the problem in `text`: line, column and the rest, ready to serialise.
    pub fn detail(&self, index: &LineIndex<'_>) -> Detail {
        let pos = self.span.map(|s| index.position(s.start));
        Detail {
            severity: answered(self.severity),
            code: self.code.to_string(),
            message: self.message.clone(),
            file: None,
            line: pos.map(|p| p.line),
            column: pos.map(|p| p.column),
            path: self.path.clone(),
            more: None,
        }
    }
}

/// A problem placed in its text, as the API answers it; the most one answer lists.
pub use weft_protocol::problems::{Detail, MAX_DETAILS};

/// The severity a problem is answered with: a severity this host does not know (from a
/// newer plugin) counts as an error.
pub fn answered(severity: Severity) -> weft_protocol::Severity {
    match severity {
        Severity::Warning => weft_protocol::Severity::Warning,
        _ => weft_protocol::Severity::Error,
    }
}

/// The most problems kept with their message and place; past that they are only counted
/// per code, so that a hostile document cannot fill the memory with problems.
pub const MAX_KEPT: usize = 1_000;

/// Problems collected while reading and validating one document.
#[derive(Debug, Default)]
pub struct Problems {
    list: Vec<Problem>,
    /// Problems past [`MAX_KEPT`]: code, the worst severity, how many.
    counted: Vec<(Cow<'static, str>, Severity, usize)>,
}

impl Problems {
    /// An error `code` at every key and string under `root` that holds a NUL character,
    /// except under the path of keys `skip` (`["payload", "content"]`; empty: nothing is
    /// skipped): no repository stores one (PostgreSQL's text cannot hold it), so it is
    /// refused where it stands, the same on every backend. The walk keeps the path as a
    /// stack of borrowed segments and writes it out only for a problem, so a document
    /// without a NUL costs no allocation however large it is.
    pub fn refuse_nul(&mut self, root: &Spanned, code: &'static str, skip: &[&str]) {
        enum Seg<'a> {
            Key(&'a str),
            Index(usize),
        }
        fn path_of(segs: &[Seg<'_>]) -> Path {
            segs.iter().fold(Path::root(), |p, s| match s {
                Seg::Key(k) => p.key(&k.chars().take(64).collect::<String>()),
                Seg::Index(i) => p.index(*i),
            })
        }
        fn skipped(segs: &[Seg<'_>], skip: &[&str]) -> bool {
            !skip.is_empty()
                && segs.len() == skip.len()
                && segs
                    .iter()
                    .zip(skip)
                    .all(|(s, k)| matches!(s, Seg::Key(key) if key == k))
        }
        fn walk<'a>(
            problems: &mut Problems,
            v: &'a Spanned,
            segs: &mut Vec<Seg<'a>>,
            code: &'static str,
            skip: &[&str],
        ) {
            if skipped(segs, skip) {
                return;
            }
            match &v.value {
                Value::String(s) if s.contains('\0') => problems.error(
                    code,
                    "a NUL character (U+0000) cannot be stored; remove it",
                    v.span,
                    &path_of(segs),
                ),
                Value::Object(members) => {
                    for m in members {
                        segs.push(Seg::Key(&m.key));
                        if m.key.contains('\0') {
                            problems.error(
                                code,
                                "a NUL character (U+0000) cannot be stored in a field's name",
                                m.key_span,
                                &path_of(segs),
                            );
                        }
                        walk(problems, &m.value, segs, code, skip);
                        segs.pop();
                    }
                }
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        segs.push(Seg::Index(i));
                        walk(problems, item, segs, code, skip);
                        segs.pop();
                    }
                }
                _ => {}
            }
        }
        walk(self, root, &mut Vec::new(), code, skip);
    }

    /// Adds a problem (or counts it, past [`MAX_KEPT`]).
    pub fn push(&mut self, p: Problem) {
        if self.keeps_more() {
            self.list.push(p);
        } else {
            self.count(p.code, p.severity);
        }
    }

    /// Whether a further problem is kept whole; a caller whose message or path is costly
    /// to make asks first and else only [`Problems::count`]s it.
    pub fn keeps_more(&self) -> bool {
        self.list.len() < MAX_KEPT
    }

    /// Counts a problem that is not kept.
    pub fn count(&mut self, code: impl Into<Cow<'static, str>>, severity: Severity) {
        let code = code.into();
        match self.counted.iter_mut().find(|(c, _, _)| *c == code) {
            Some((_, s, n)) => {
                *n += 1;
                if severity == Severity::Error {
                    *s = Severity::Error;
                }
            }
            None => self.counted.push((code, severity, 1)),
        }
    }

    /// Adds several problems.
    pub fn extend(&mut self, ps: impl IntoIterator<Item = Problem>) {
        for p in ps {
            self.push(p);
        }
    }

    /// Adds an error.
    pub fn error(
        &mut self,
        code: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
        span: Span,
        path: &Path,
    ) {
        self.push(Problem::error(code, message, span, path));
    }

    /// Adds a warning.
    pub fn warning(
        &mut self,
        code: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
        span: Span,
        path: &Path,
    ) {
        self.push(Problem::warning(code, message, span, path));
    }

    /// Whether any problem is an error.
    pub fn has_errors(&self) -> bool {
        self.list.iter().any(|p| p.severity == Severity::Error)
            || self.counted.iter().any(|(_, s, _)| *s == Severity::Error)
    }

    /// The problems placed in `index`'s text, in document order, at most
    /// [`MAX_DETAILS`]: past that, one more entry per code says how many more of that code
    /// there are (`and 39900 more problems of code dsr.duplicate_field`).
    pub fn into_details(self, index: &LineIndex<'_>) -> Vec<Detail> {
        self.into_details_with(|p| p.detail(index))
    }

    /// [`Problems::into_details`] with each listed problem placed by `place` (a project's
    /// problems, each in its file).
    pub fn into_details_with(self, place: impl Fn(&Problem) -> Detail) -> Vec<Detail> {
        let counted = self.counted.clone();
        let sorted = self.into_sorted();
        let mut details: Vec<Detail> = sorted.iter().take(MAX_DETAILS).map(place).collect();
        // Codes of what was left out, in the order they first appear.
        let mut more: Vec<(Cow<'static, str>, Severity, usize)> = Vec::new();
        for p in sorted.iter().skip(MAX_DETAILS) {
            match more.iter_mut().find(|(c, _, _)| *c == p.code) {
                Some((_, severity, n)) => {
                    *n += 1;
                    if p.severity == Severity::Error {
                        *severity = Severity::Error;
                    }
                }
                None => more.push((p.code.clone(), p.severity, 1)),
            }
        }
        for (code, severity, n) in counted {
            match more.iter_mut().find(|(c, _, _)| *c == code) {
                Some((_, s, m)) => {
                    *m += n;
                    if severity == Severity::Error {
                        *s = Severity::Error;
                    }
                }
                None => more.push((code, severity, n)),
            }
        }
        details.extend(more.into_iter().map(|(code, severity, n)| Detail {
            severity: answered(severity),
            code: code.to_string(),
            message: format!(
                "and {n} more problem{} of code {code}, not listed",
                if n == 1 { "" } else { "s" }
            ),
            file: None,
            line: None,
            column: None,
            path: String::new(),
            more: Some(n),
        }));
        details
    }

    /// All problems in document order (by position, then as found).
    pub fn into_sorted(mut self) -> Vec<Problem> {
        self.list
            .sort_by_key(|p| p.span.map_or(u32::MAX, |s| s.start));
        self.list
    }

    /// The problems so far.
    pub fn as_slice(&self) -> &[Problem] {
        &self.list
    }
}
