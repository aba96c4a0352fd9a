//! A project: several `.dsr` documents (a tree of files in git) read as one document, so
//! that one deploy judges and writes them together, references between files resolved
//! whatever their order. Each file is read on its own (its syntax, its `version`, its
//! fields); their folders, connections, sheets, batches and template modules are then joined, in file order,
//! into one [`Document`].
//!
//! Every problem keeps its file. The files are joined into one text, each after the one
//! before and a newline, and each file's value tree is moved to its place in it, so that
//! spans point into the joined text and sort by file; a problem's path names an object by
//! its index in the joined lists. [`Project::details`] turns both back into the file's own:
//! its name, its line and column, and the object's index in that file.

use crate::model::Document;
use crate::problem::{Detail, Problem, Problems};
use crate::value::{LineIndex, Path, Span, Spanned, Value};
use crate::{hjson, read};

/// The lists of a document that a project joins, in their order in a path's
/// `transformationData.<list>[i]`.
const LISTS: [&str; 5] = ["folders", "connections", "sheets", "batches", "modules"];

/// One file's place in the joined text and in the joined lists.
#[derive(Debug, Clone)]
struct Placed {
    name: String,
    /// Its bytes in the joined text.
    start: u32,
    end: u32,
    /// Where its objects of each of [`LISTS`] begin in the joined lists, and how many it has.
    first: [usize; 5],
    count: [usize; 5],
    /// A file an action reads (`file`), not a document.
    attached: bool,
}

/// The files of a project as one text, and where each one is.
#[derive(Debug, Clone, Default)]
pub struct Project {
    text: String,
    files: Vec<Placed>,
}

impl Project {
    /// The joined text the spans of the joined document point into.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The name of the file that holds object `index` of `list` (`folders`, `connections`,
    /// `sheets`, `batches` or `modules`) of the joined document.
    pub fn file_of(&self, list: &str, index: usize) -> Option<&str> {
        let k = LISTS.iter().position(|l| *l == list)?;
        self.files
            .iter()
            .find(|f| index >= f.first[k] && index < f.first[k] + f.count[k])
            .map(|f| f.name.as_str())
    }

    /// Each problem as answered, in its file: the file's name, the line and column in it, and
    /// the path with the object's index in that file.
    pub fn details(&self, problems: Problems) -> Vec<Detail> {
        let indexes: Vec<LineIndex<'_>> = self
            .files
            .iter()
            .map(|f| LineIndex::new(&self.text[f.start as usize..f.end as usize]))
            .collect();
        problems.into_details_with(|p| {
            let by_span = p.span.and_then(|s| {
                self.files
                    .iter()
                    .position(|f| s.start >= f.start && s.start <= f.end)
            });
            let listed = listed(&p.path);
            let by_path = listed.and_then(|(k, i, _)| {
                self.files
                    .iter()
                    .position(|f| i >= f.first[k] && i < f.first[k] + f.count[k])
            });
            let Some(at) = by_span.or(by_path) else {
                return p.detail(&LineIndex::new(""));
            };
            let f = &self.files[at];
            // A problem in a file an action reads keeps the path of its action in the
            // document that names it.
            let home = &self.files[if f.attached {
                by_path.unwrap_or(at)
            } else {
                at
            }];
            let mut local = Problem {
                span: p.span.map(|s| {
                    Span::new(
                        s.start.saturating_sub(f.start) as usize,
                        s.end.saturating_sub(f.start) as usize,
                    )
                }),
                ..p.clone()
            };
            if let Some((k, i, rest)) = listed
                && i >= home.first[k]
            {
                local.path = format!(
                    "transformationData.{}[{}]{rest}",
                    LISTS[k],
                    i - home.first[k]
                );
            }
            let mut d = local.detail(&indexes[at]);
            d.file = Some(f.name.clone());
            d
        })
    }
}

impl Project {
    /// Places `content`, the file `name` an action reads, after the documents in the joined
    /// text: the span of its text there, so that problems in it are answered at its own
    /// line and column.
    pub fn attach(&mut self, name: &str, content: &str) -> Span {
        let start = u32::try_from(self.text.len()).unwrap_or(u32::MAX);
        self.text.push_str(content);
        let end = u32::try_from(self.text.len()).unwrap_or(u32::MAX);
        self.text.push('\n');
        let first = self.files.last().map_or([0; 5], |f| {
            let mut n = f.first;
            for (x, c) in n.iter_mut().zip(f.count) {
                *x += c;
            }
            n
        });
        self.files.push(Placed {
            name: name.to_owned(),
            start,
            end,
            first,
            count: [0; 5],
            attached: true,
        });
        Span::new(start as usize, end as usize)
    }
}

/// The name in a project of the file `file` that the document `document` names (`file` of
/// an action): relative to the document's folder, `.` and `..` resolved, `/` between parts.
///
/// # Errors
///
/// Why it names no file of the project: absolute, empty, a backslash or a control
/// character, or above the project's top.
pub fn file_name(document: &str, file: &str) -> Result<String, String> {
    if file.trim().is_empty() {
        return Err("`file` is empty: name a file relative to this document".to_owned());
    }
    if file.starts_with('/') || file.contains('\\') {
        return Err(format!(
            "`file: {file}` is not a relative path with `/`: name a file of the project, relative to this document (a file on the server's host is read by a module, such as Seed's `path`)"
        ));
    }
    if file.chars().any(char::is_control) {
        return Err("`file` holds a control character".to_owned());
    }
    let mut parts: Vec<&str> = document.split('/').collect();
    parts.pop();
    for part in file.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(format!(
                        "`file: {file}` lies above the project's top folder"
                    ));
                }
            }
            p => parts.push(p),
        }
    }
    parts.retain(|p| !p.is_empty() && *p != ".");
    Ok(parts.join("/"))
}

/// What an action's `file` names: the sheet and node it is on, the file's name in the
/// project (or why it names none) and where `file` is written.
#[derive(Debug, Clone)]
pub struct FileRef {
    /// The sheet's index in the joined document.
    pub sheet: usize,
    /// The node's index in the sheet.
    pub node: usize,
    /// The file's name in the project ([`file_name`]), or why it names none.
    pub name: Result<String, String>,
    /// `file` as written.
    pub written: crate::model::At<String>,
}

impl FileRef {
    /// The path of its `file` in the joined document.
    pub fn path(&self) -> crate::Path {
        crate::Path::root()
            .key("transformationData")
            .key("sheets")
            .index(self.sheet)
            .key("nodes")
            .index(self.node)
            .key("attributes")
            .key("file")
    }
}

/// Every `file` of the actions of `doc`, a project's joined document, in order.
pub fn file_refs(doc: &Document, project: &Project) -> Vec<FileRef> {
    let mut out = Vec::new();
    for (i, s) in doc.sheets.iter().enumerate() {
        let document = project.file_of("sheets", i).unwrap_or_default();
        for (j, n) in s.nodes.iter().enumerate() {
            if let crate::model::NodeAttributes::Action(a) = &n.attributes
                && let Some(f) = &a.file
            {
                out.push(FileRef {
                    sheet: i,
                    node: j,
                    name: file_name(document, &f.v),
                    written: f.clone(),
                });
            }
        }
    }
    out
}

/// Gives each action of `doc` that names a `file` that file's content from `files` (by its
/// name in the project) as its text, placed in `project`'s text; a `file` that names none
/// of them, or no file of the project at all, is a problem at its place (`action.file`).
pub fn read_files(
    doc: &mut Document,
    project: &mut Project,
    files: &[(String, String)],
    problems: &mut Problems,
) {
    let refs = file_refs(doc, project);
    let mut placed: Vec<(String, Span)> = Vec::new();
    for r in refs {
        let path = r.path();
        let name = match r.name {
            Ok(n) => n,
            Err(why) => {
                problems.error("action.file", why, r.written.span, &path);
                continue;
            }
        };
        let Some((_, content)) = files.iter().find(|(n, _)| *n == name) else {
            problems.error(
                "action.file",
                format!(
                    "`file: {}` names {name} of the project, which this deploy does not carry (`weft deploy DIR` and `weft check DIR` send each file a project's actions name)",
                    r.written.v
                ),
                r.written.span,
                &path,
            );
            continue;
        };
        let span = match placed.iter().find(|(n, _)| *n == name) {
            Some((_, s)) => *s,
            None => {
                let s = project.attach(&name, content);
                placed.push((name, s));
                s
            }
        };
        if let crate::model::NodeAttributes::Action(a) =
            &mut doc.sheets[r.sheet].nodes[r.node].attributes
        {
            a.action = Some(crate::model::At::new(content.clone(), span));
            a.text_from_file = true;
        }
    }
}

/// A path `transformationData.<list>[i]...` as the list's place in [`LISTS`], `i` and the
/// rest.
fn listed(path: &str) -> Option<(usize, usize, &str)> {
    let rest = path.strip_prefix("transformationData.")?;
    let (list, rest) = rest.split_once('[')?;
    let k = LISTS.iter().position(|l| *l == list)?;
    let (i, rest) = rest.split_once(']')?;
    Some((k, i.parse().ok()?, rest))
}

/// Moves every span of `v` `by` bytes on.
fn shift(v: &mut Spanned, by: u32) {
    v.span.start = v.span.start.saturating_add(by);
    v.span.end = v.span.end.saturating_add(by);
    match &mut v.value {
        Value::Array(items) => items.iter_mut().for_each(|i| shift(i, by)),
        Value::Object(members) => {
            for m in members {
                m.key_span.start = m.key_span.start.saturating_add(by);
                m.key_span.end = m.key_span.end.saturating_add(by);
                shift(&mut m.value, by);
            }
        }
        _ => {}
    }
}

/// How many objects of each of [`LISTS`] a document's tree holds as written.
fn counts(root: &Spanned) -> [usize; 5] {
    let mut out = [0; 5];
    let Value::Object(top) = &root.value else {
        return out;
    };
    let Some(td) = top.iter().find(|m| m.key == "transformationData") else {
        return out;
    };
    let Value::Object(members) = &td.value.value else {
        return out;
    };
    for (k, list) in LISTS.iter().enumerate() {
        if let Some(Value::Array(items)) = members
            .iter()
            .find(|m| m.key == *list)
            .map(|m| &m.value.value)
        {
            out[k] = items.len();
        }
    }
    out
}

/// Reads `files` (name and text each) as one project: the joined document (none after a
/// syntax error in any file; every file is read, so that all are reported), every problem
/// of every file (in the joined text's places: [`Project::details`] answers them), and the
/// project that places them.
pub fn read(files: &[(String, String)]) -> (Option<Document>, Problems, Project) {
    let mut project = Project::default();
    let mut problems = Problems::default();
    let mut trees = Vec::with_capacity(files.len());
    let mut first = [0usize; 5];
    let mut syntax = false;
    for (name, content) in files {
        let start = u32::try_from(project.text.len()).unwrap_or(u32::MAX);
        project.text.push_str(content);
        let end = u32::try_from(project.text.len()).unwrap_or(u32::MAX);
        project.text.push('\n');
        let mut placed = Placed {
            name: name.clone(),
            start,
            end,
            first,
            count: [0; 5],
            attached: false,
        };
        match hjson::parse(content) {
            Ok(mut root) => {
                shift(&mut root, start);
                placed.count = counts(&root);
                trees.push(Some(root));
            }
            Err(e) => {
                syntax = true;
                problems.push(Problem::error(
                    e.code,
                    e.message,
                    Span::new(start as usize + e.offset, start as usize + e.offset),
                    &Path::root(),
                ));
                trees.push(None);
            }
        }
        for (f, c) in first.iter_mut().zip(placed.count) {
            *f += c;
        }
        project.files.push(placed);
    }
    if syntax {
        return (None, problems, project);
    }
    let mut doc = Document {
        complete: true,
        ..Document::default()
    };
    for (tree, placed) in trees.iter().zip(&project.files) {
        let Some(root) = tree else { continue };
        let mut own = Problems::default();
        let one = read::document(root, &project.text, &mut own);
        // The file's paths name its own objects; the joined document's are the joined lists'.
        for mut p in own.into_sorted() {
            if let Some((k, i, rest)) = listed(&p.path) {
                p.path = format!(
                    "transformationData.{}[{}]{rest}",
                    LISTS[k],
                    i + placed.first[k]
                );
            }
            problems.push(p);
        }
        if doc.version.is_none() {
            doc.version = one.version;
        }
        doc.folders.extend(one.folders);
        doc.connections.extend(one.connections);
        doc.sheets.extend(one.sheets);
        doc.batches.extend(one.batches);
        doc.modules.extend(one.modules);
        if let Some(n) = one.notifications {
            match &doc.notifications {
                Some(first) => problems.error(
                    "dsr.duplicate",
                    format!(
                        "the notifications are set up twice in the project: once in {}, again here; keep one",
                        project
                            .files
                            .iter()
                            .find(|f| first.span.start >= f.start && first.span.start <= f.end)
                            .map_or("another file", |f| f.name.as_str())
                    ),
                    n.span,
                    &crate::Path::root().key("transformationData").key("notifications"),
                ),
                None => doc.notifications = Some(n),
            }
        }
        doc.complete &= one.complete;
    }
    (Some(doc), problems, project)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, c)| ((*n).to_owned(), (*c).to_owned()))
            .collect()
    }

    #[test]
    fn objects_of_every_file_are_joined_in_file_order() {
        let (doc, problems, project) = read(&files(&[
            (
                "a.dsr",
                "{version: 1, transformationData: {folders: [{id: 1, path: \"/a\"}]}}",
            ),
            (
                "b.dsr",
                "{version: 1, transformationData: {folders: [{id: 2, path: \"/b\"}, {id: 3, path: \"/c\"}]}}",
            ),
        ]));
        assert!(!problems.has_errors(), "{:?}", problems.as_slice());
        let doc = doc.expect("a document");
        let ids: Vec<i64> = doc.folders.iter().map(|f| f.id.v).collect();
        assert_eq!(ids, [1, 2, 3]);
        assert_eq!(project.file_of("folders", 0), Some("a.dsr"));
        assert_eq!(project.file_of("folders", 2), Some("b.dsr"));
        assert_eq!(project.file_of("sheets", 0), None);
    }

    #[test]
    fn a_problem_is_answered_in_its_file_with_its_line_column_and_own_path() {
        let (_, problems, project) = read(&files(&[
            (
                "one.dsr",
                "{version: 1, transformationData: {folders: [{id: 1, path: \"/a\"}]}}",
            ),
            (
                "two.dsr",
                "{\n  version: 1\n  transformationData: {\n    folders: [\n      {id: 2, path: \"/b\", colour: \"red\"}\n    ]\n  }\n}",
            ),
        ]));
        let details = project.details(problems);
        let unknown = details
            .iter()
            .find(|d| d.message.contains("colour"))
            .expect("the unknown field");
        assert_eq!(unknown.file.as_deref(), Some("two.dsr"));
        assert_eq!((unknown.line, unknown.column), (Some(5), Some(27)));
        assert_eq!(unknown.path, "transformationData.folders[0].colour");
    }

    #[test]
    fn a_problem_found_later_by_its_joined_path_goes_back_to_its_file() {
        let (_, _, project) = read(&files(&[
            (
                "one.dsr",
                "{version: 1, transformationData: {sheets: [], folders: [{id: 1, path: \"/a\"}]}}",
            ),
            (
                "two.dsr",
                "{version: 1, transformationData: {folders: [{id: 2, path: \"/b\"}]}}",
            ),
        ]));
        let mut later = Problems::default();
        later.push(Problem {
            span: None,
            ..Problem::error(
                "folder.x",
                "judged later",
                Span::default(),
                &Path::root()
                    .key("transformationData")
                    .key("folders")
                    .index(1)
                    .key("id"),
            )
        });
        let d = project.details(later);
        assert_eq!(d[0].file.as_deref(), Some("two.dsr"));
        assert_eq!(d[0].path, "transformationData.folders[0].id");
        assert_eq!(d[0].line, None);
    }

    #[test]
    fn syntax_errors_of_every_file_are_reported_and_nothing_is_joined() {
        let (doc, problems, project) = read(&files(&[
            ("ok.dsr", "{version: 1, transformationData: {}}"),
            ("bad1.dsr", "{version: 1,\n transformationData: {]}"),
            ("bad2.dsr", "{\"version\": 1,,}"),
        ]));
        assert!(doc.is_none());
        let details = project.details(problems);
        let files: Vec<Option<&str>> = details.iter().map(|d| d.file.as_deref()).collect();
        assert_eq!(files, [Some("bad1.dsr"), Some("bad2.dsr")]);
        assert_eq!(details[0].line, Some(2));
    }
}
