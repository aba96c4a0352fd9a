//! The one positioned reader of objects, for `.dsr` documents and command payloads alike.
//! [`Fields`] is an object of the spanned value tree being read: each member is taken at
//! most once, by name, and every name asked for (present or not) is a field the object
//! knows, so that [`Fields::finish`] judges the members left over without a second list of
//! the fields. A missing field, a value of the wrong kind, a field given twice and an unknown
//! field are each a problem with its place; reading goes on after one, so that one answer
//! lists every problem.
//!
//! The two [`Dialect`]s differ only where documents and requests do: a document warns about
//! a field it does not know and keeps it (an error only when it is almost certainly a typo
//! of a known one), a request refuses it; a document says a repeated field at its object, a
//! request in one walk over the whole body (`api::protocol::read::duplicates`); and each has
//! its own problem codes. What a value may be (a whole number written as a string, a
//! quoteless text) is the caller's rule, read from the member this type hands out.

use super::model::Extra;
use super::problem::Problems;
use super::value::{Member, Path, Span, Spanned, Value, repeated_keys};
use std::borrow::Cow;

/// Whose rules an object is read by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// A `.dsr` document: unknown fields are kept with a warning.
    Document,
    /// A command's request: unknown fields are refused.
    Request,
}

impl Dialect {
    fn wrong_type(self) -> &'static str {
        match self {
            Dialect::Document => "dsr.wrong_type",
            Dialect::Request => REQUEST_CODE,
        }
    }

    fn missing(self) -> &'static str {
        match self {
            Dialect::Document => "dsr.missing_field",
            Dialect::Request => REQUEST_CODE,
        }
    }

    fn unknown(self) -> &'static str {
        match self {
            Dialect::Document => "dsr.unknown_field",
            Dialect::Request => REQUEST_CODE,
        }
    }
}

impl<'a> From<&'a Path> for Cow<'a, Path> {
    fn from(p: &'a Path) -> Self {
        Cow::Borrowed(p)
    }
}

impl From<Path> for Cow<'_, Path> {
    fn from(p: Path) -> Self {
        Cow::Owned(p)
    }
}

/// The code of every problem with a field of a request (`request.envelope`).
pub const REQUEST_CODE: &str = "request.envelope";

/// An object being read.
pub struct Fields<'a> {
    members: &'a [Member],
    used: Vec<bool>,
    repeated: Vec<bool>,
    known: Vec<&'static str>,
    span: Span,
    path: Cow<'a, Path>,
    what: Cow<'a, str>,
    dialect: Dialect,
}

impl<'a> Fields<'a> {
    /// The object `v` at `path`, named `what` in messages ("a sheet", "the GetSheet payload
    /// {sheetId}"); `None` after a problem saying it is not an object. A document's fields
    /// given twice are said here.
    pub fn of(
        v: &'a Spanned,
        path: impl Into<Cow<'a, Path>>,
        what: impl Into<Cow<'a, str>>,
        dialect: Dialect,
        problems: &mut Problems,
    ) -> Option<Self> {
        let (path, what) = (path.into(), what.into());
        let Value::Object(members) = &v.value else {
            problems.error(
                dialect.wrong_type(),
                format!("{what} must be an object, found {}", v.value.kind()),
                v.span,
                &path,
            );
            return None;
        };
        let repeated = repeated_keys(members);
        if dialect == Dialect::Document {
            for (m, _) in members.iter().zip(&repeated).filter(|(_, r)| **r) {
                problems.error(
                    "dsr.duplicate_field",
                    format!("field `{}` is given twice in {what}", m.key),
                    m.key_span,
                    &path.key(&m.key),
                );
            }
        }
        Some(Fields {
            members,
            used: vec![false; members.len()],
            repeated,
            known: Vec::new(),
            span: v.span,
            path,
            what,
            dialect,
        })
    }

    /// The object's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The object's name in messages.
    pub fn what(&self) -> &str {
        &self.what
    }

    fn know(&mut self, key: &'static str) {
        if !self.known.contains(&key) {
            self.known.push(key);
        }
    }

    /// Whether member `key` is there (a field the object knows, taken or not).
    pub fn has(&mut self, key: &'static str) -> bool {
        self.know(key);
        self.members.iter().any(|m| m.key == key)
    }

    /// Member `key` (its first occurrence), taken.
    pub fn get(&mut self, key: &'static str) -> Option<&'a Spanned> {
        self.know(key);
        let i = self.members.iter().position(|m| m.key == key)?;
        self.used[i] = true;
        Some(&self.members[i].value)
    }

    /// Member `key` with its path, taken.
    pub fn optional(&mut self, key: &'static str) -> Option<(&'a Spanned, Path)> {
        let v = self.get(key)?;
        Some((v, self.path.key(key)))
    }

    /// Member `key` with its path, or a problem at the object saying it is missing.
    pub fn required(
        &mut self,
        key: &'static str,
        problems: &mut Problems,
    ) -> Option<(&'a Spanned, Path)> {
        let found = self.optional(key);
        if found.is_none() {
            self.missing(key, problems);
        }
        found
    }

    /// The problem of a missing field `key`, at the object's start.
    pub fn missing(&self, key: &str, problems: &mut Problems) {
        problems.error(
            self.dialect.missing(),
            format!("missing field `{key}` in {}", self.what),
            Span::new(self.span.start as usize, self.span.start as usize + 1),
            &self.path.key(key),
        );
    }

    /// The problem of member `key` being `found` where `expected` ("an integer") belongs.
    pub fn wrong(&self, key: &str, expected: &str, found: &Spanned, problems: &mut Problems) {
        problems.error(
            self.dialect.wrong_type(),
            format!("`{key}` must be {expected}, found {}", found.value.kind()),
            found.span,
            &self.path.key(key),
        );
    }

    /// Takes the members not taken (a field given twice aside) whose name `keep` accepts:
    /// what an object hands on as a whole, such as an action's module attributes.
    pub fn take_rest(&mut self, keep: impl Fn(&str) -> bool) -> Vec<&'a Member> {
        let mut taken = Vec::new();
        for (i, m) in self.members.iter().enumerate() {
            if !self.used[i] && !self.repeated[i] && keep(&m.key) {
                self.used[i] = true;
                taken.push(m);
            }
        }
        taken
    }

    /// Judges the members not taken, against the fields asked for. A document warns about
    /// each and keeps it (returned), unless it is almost certainly a typo of a known field
    /// (equal but for case, or one or two letters off), which is an error saying what was
    /// meant. A request refuses each, naming the fields it expected.
    pub fn finish(self, problems: &mut Problems) -> Extra {
        self.finish_with(problems, |what, known, key| {
            format!(
                "unknown field `{key}` in {what}; expected {}",
                known.join(", ")
            )
        })
    }

    /// As [`Fields::finish`], a request's message `template` with `{}` for the field.
    pub fn finish_as(self, template: &str, problems: &mut Problems) -> Extra {
        self.finish_with(problems, |_, _, key| template.replace("{}", key))
    }

    /// Judges the members left; `refusal` (the object's name, the known fields, the key)
    /// words a request's refusal, and is called only for a member left.
    fn finish_with(
        self,
        problems: &mut Problems,
        refusal: impl Fn(&str, &[&str], &str) -> String,
    ) -> Extra {
        let mut kept = Vec::new();
        for ((m, used), again) in self.members.iter().zip(&self.used).zip(&self.repeated) {
            // Taken, given twice (said as such), or looked at and left on purpose.
            if *used || *again || self.known.contains(&m.key.as_str()) {
                continue;
            }
            let key = cut(&m.key, 64);
            let path = self.path.key(&key);
            let meant = typo_of(&m.key, &self.known);
            match self.dialect {
                Dialect::Document => match meant {
                    Some(meant) => problems.error(
                        self.dialect.unknown(),
                        format!(
                            "unknown field `{}` in {}; did you mean `{meant}`?",
                            m.key, self.what
                        ),
                        m.key_span,
                        &path,
                    ),
                    None => {
                        problems.warning(
                            self.dialect.unknown(),
                            format!(
                                "field `{}` in {} is not one weft knows (it knows {}); it is kept as written",
                                m.key,
                                self.what,
                                self.known.join(", ")
                            ),
                            m.key_span,
                            &path,
                        );
                        kept.push((m.key.clone(), m.value.value.to_json()));
                    }
                },
                Dialect::Request => {
                    let mut text = refusal(&self.what, &self.known, &key);
                    if let Some(meant) = meant {
                        text.push_str(&format!("; did you mean `{meant}`?"));
                    }
                    problems.error(self.dialect.unknown(), text, m.key_span, &path);
                }
            }
        }
        Extra(kept)
    }
}

/// At most `most` characters of `s`: a name as a message quotes it.
pub fn cut(s: &str, most: usize) -> String {
    s.chars().take(most).collect()
}

/// The known field that `key` almost certainly means: equal but for case, or at most one
/// slip away (a letter added, left out, changed, or two neighbours swapped; two slips for
/// names of six letters or more).
fn typo_of<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    let lower = key.to_lowercase();
    known.iter().copied().find(|a| {
        let a_lower = a.to_lowercase();
        let most = if a.len() >= 6 { 2 } else { 1 };
        a_lower == lower || edits(&lower, &a_lower) <= most
    })
}

/// The edit distance between `a` and `b` (insertions, deletions, substitutions, and the swap
/// of two neighbouring letters, a typist's commonest slip), stopping early past 3: only small
/// distances matter here.
fn edits(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > 3 || a.len() > 64 || b.len() > 64 {
        return usize::MAX;
    }
    // d[i][j]: the distance between a[..i] and b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;

    fn read(text: &str, dialect: Dialect) -> (Vec<String>, Extra) {
        let root = json::parse(text).expect("json");
        let mut problems = Problems::default();
        let mut f =
            Fields::of(&root, Path::root(), "a thing", dialect, &mut problems).expect("object");
        let _ = f.get("name");
        // Looked at, not taken: known, and not judged at the end.
        let _ = f.has("size");
        let extra = f.finish(&mut problems);
        let messages = problems
            .into_details(&crate::LineIndex::new(text))
            .into_iter()
            .map(|d| format!("{} {}: {}", d.code, d.path, d.message))
            .collect();
        (messages, extra)
    }

    #[test]
    fn the_fields_asked_for_are_the_fields_known_to_both_dialects() {
        let text = r#"{"name": 1, "colour": 2, "nme": 3, "size": 4}"#;
        let (document, extra) = read(text, Dialect::Document);
        assert_eq!(
            document,
            [
                "dsr.unknown_field colour: field `colour` in a thing is not one weft knows (it knows name, size); it is kept as written",
                "dsr.unknown_field nme: unknown field `nme` in a thing; did you mean `name`?",
            ]
        );
        assert_eq!(extra.0, [("colour".to_owned(), serde_json::json!(2))]);
        let (request, extra) = read(text, Dialect::Request);
        assert_eq!(
            request,
            [
                "request.envelope colour: unknown field `colour` in a thing; expected name, size",
                "request.envelope nme: unknown field `nme` in a thing; expected name, size; did you mean `name`?",
            ]
        );
        assert!(extra.0.is_empty());
    }

    #[test]
    fn a_repeated_field_is_said_at_a_documents_object_and_never_as_unknown() {
        let text = r#"{"name": 1, "name": 2, "other": 3, "other": 4}"#;
        let (document, _) = read(text, Dialect::Document);
        assert_eq!(
            document,
            [
                "dsr.duplicate_field name: field `name` is given twice in a thing",
                "dsr.unknown_field other: field `other` in a thing is not one weft knows (it knows name, size); it is kept as written",
                "dsr.duplicate_field other: field `other` is given twice in a thing",
            ]
        );
        // A request's repeated fields are said by its walk over the whole body.
        let (request, _) = read(text, Dialect::Request);
        assert_eq!(
            request,
            ["request.envelope other: unknown field `other` in a thing; expected name, size"]
        );
    }

    #[test]
    fn a_typo_is_near_a_known_name_and_nothing_else_is() {
        assert_eq!(typo_of("Name", &["name"]), Some("name"));
        assert_eq!(typo_of("schedul", &["schedule"]), Some("schedule"));
        assert_eq!(typo_of("x", &["name"]), None);
        assert_eq!(edits("kitten", "sitting"), 3);
        // Two neighbours swapped are one slip.
        assert_eq!(edits("edgse", "edges"), 1);
        assert_eq!(typo_of("nmae", &["name"]), Some("name"));
    }
}
