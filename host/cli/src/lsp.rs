//! `weft lsp`: a language server over standard input and output for `.dsr` projects, so that an
//! editor shows what `weft check` finds as the text is typed.
//!
//! - **Problems**: at each change the project (the `.dsr` files below its directory, the
//!   editor's unsaved texts in place of the files', and the files their actions read) is
//!   deployed into a fresh repository as `weft check` does ([`crate::offline`]); every
//!   problem is published on its file at its line and column, with its code; an open
//!   document of the project hears of every check, and a file whose problems went away is
//!   cleared. Changes that arrive while a check runs are taken together.
//! - **Hover** ([`hover`]): what an action's attribute does, as table A or the module
//!   declares it; a module's description on its name; a data test's kind.
//! - **Go to definition** ([`definition`]): from a table's name to the actions that write it,
//!   from the data graph of the last check that deployed (a check with errors keeps the one
//!   before).
//! - **Formatting**: the document in `weft fmt`'s canonical form.
//!
//! The project's directory is `--project`, else `initializationOptions.project` (relative to
//! the workspace), else the workspace's root, else the directory of the first document
//! opened; documents deployed before the project (an environment's connections) are
//! `--with` or `initializationOptions.with`. Positions are counted in UTF-16 units, as the
//! protocol's default. Nothing but the protocol is written to standard output.

pub mod definition;
pub mod hover;
pub mod text;

use crate::offline::{Checked, Checker, Target};
use crate::project::{Named, action_files, project_files, read_content};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::Notification as _;
use lsp_types::request::Request as _;
use lsp_types::{
    Diagnostic, DiagnosticSeverity, GotoDefinitionResponse, Hover, HoverContents, Location,
    MarkupContent, MarkupKind, NumberOrString, Position, PublishDiagnosticsParams, Range,
    ServerCapabilities, TextDocumentSyncCapability, TextDocumentSyncKind, TextEdit, Uri,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use text::Lines;
use weft_dsr::model::TemplateModule;
use weft_protocol::Severity;

/// What the command line gives the server.
#[derive(Debug, Default)]
pub struct Options {
    /// The project's directory.
    pub project: Option<PathBuf>,
    /// Documents deployed before the project.
    pub with: Vec<PathBuf>,
}

/// The most bytes of one document the editor may hand over (as `weft check` reads files).
const MAX_DOCUMENT: usize = 64 << 20;

/// Serves one editor on standard input and output until it says `exit`.
///
/// # Errors
///
/// The connection failed (the editor went away without `exit`, or spoke something else).
pub fn serve(home: &Path, options: Options) -> Result<(), String> {
    let (connection, threads) = Connection::stdio();
    let capabilities = ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        hover_provider: Some(lsp_types::HoverProviderCapability::Simple(true)),
        definition_provider: Some(lsp_types::OneOf::Left(true)),
        document_formatting_provider: Some(lsp_types::OneOf::Left(true)),
        ..ServerCapabilities::default()
    };
    let capabilities = serde_json::to_value(capabilities).map_err(|e| e.to_string())?;
    let params = connection
        .initialize(capabilities)
        .map_err(|e| format!("the editor did not initialise the connection: {e}"))?;
    let params: lsp_types::InitializeParams =
        serde_json::from_value(params).map_err(|e| format!("initialize: {e}"))?;
    let mut server = Server::new(home, options, &params);
    let result = server.run(&connection);
    drop(connection);
    threads
        .join()
        .map_err(|e| format!("the connection to the editor failed: {e}"))?;
    result
}

/// The server's state between messages.
struct Server {
    checker: Checker,
    /// The project's directory, once known.
    project: Option<PathBuf>,
    /// Documents deployed before the project, as given (relative to the workspace).
    with: Vec<PathBuf>,
    /// The editor's texts of open documents, by path.
    open: BTreeMap<PathBuf, String>,
    /// The files problems were last published on.
    published: BTreeSet<PathBuf>,
    /// The last check that deployed the project, the documents it read, and the template
    /// modules they define (for hover).
    last: Option<(Checked, Named, Vec<TemplateModule>)>,
    /// Whether a change waits for a check.
    dirty: bool,
}

impl Server {
    fn new(home: &Path, options: Options, params: &lsp_types::InitializeParams) -> Self {
        let root = params
            .workspace_folders
            .as_ref()
            .and_then(|f| f.first())
            .and_then(|f| path_of(&f.uri))
            .or_else(|| {
                #[allow(deprecated)]
                params.root_uri.as_ref().and_then(path_of)
            });
        let init = params.initialization_options.as_ref();
        let relative = |p: PathBuf| match &root {
            Some(r) if p.is_relative() => r.join(p),
            _ => p,
        };
        let project = options
            .project
            .or_else(|| {
                init.and_then(|o| o.get("project"))
                    .and_then(|p| p.as_str())
                    .map(|p| relative(PathBuf::from(p)))
            })
            .or_else(|| root.clone());
        let mut with = options.with;
        if with.is_empty() {
            with = init
                .and_then(|o| o.get("with"))
                .and_then(|w| w.as_array())
                .map(|list| {
                    list.iter()
                        .filter_map(|p| p.as_str())
                        .map(|p| relative(PathBuf::from(p)))
                        .collect()
                })
                .unwrap_or_default();
        }
        Server {
            checker: Checker::new(home),
            project: project.map(|p| std::fs::canonicalize(&p).unwrap_or(p)),
            with,
            open: BTreeMap::new(),
            published: BTreeSet::new(),
            last: None,
            dirty: false,
        }
    }

    /// Answers messages until `exit`; after each batch of changes, checks once.
    fn run(&mut self, connection: &Connection) -> Result<(), String> {
        loop {
            let Ok(message) = connection.receiver.recv() else {
                return Err("the editor closed the connection without `exit`".to_owned());
            };
            if self.handle(connection, message)? {
                return Ok(());
            }
            // What came in meanwhile is taken before the check, so that a burst of keystrokes
            // is checked once.
            while let Ok(message) = connection.receiver.try_recv() {
                if self.handle(connection, message)? {
                    return Ok(());
                }
            }
            if self.dirty {
                self.dirty = false;
                self.check(connection);
            }
        }
    }

    /// Handles one message; `true` on `exit`.
    fn handle(&mut self, connection: &Connection, message: Message) -> Result<bool, String> {
        match message {
            Message::Request(request) => {
                if connection
                    .handle_shutdown(&request)
                    .map_err(|e| e.to_string())?
                {
                    // Answered, and `exit` came after it.
                    return Ok(true);
                }
                let response = self.answer(request);
                connection
                    .sender
                    .send(Message::Response(response))
                    .map_err(|e| e.to_string())?;
            }
            Message::Notification(n) if n.method == "exit" => return Ok(true),
            Message::Notification(n) => self.notified(n),
            Message::Response(_) => {}
        }
        Ok(false)
    }

    /// Takes an editor's change of its documents.
    fn notified(&mut self, n: Notification) {
        use lsp_types::notification::{
            DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument,
        };
        match n.method.as_str() {
            DidOpenTextDocument::METHOD => {
                if let Ok(p) =
                    serde_json::from_value::<lsp_types::DidOpenTextDocumentParams>(n.params)
                {
                    self.edited(&p.text_document.uri, Some(p.text_document.text));
                }
            }
            DidChangeTextDocument::METHOD => {
                if let Ok(mut p) =
                    serde_json::from_value::<lsp_types::DidChangeTextDocumentParams>(n.params)
                {
                    // Full synchronisation: the last change holds the whole text.
                    if let Some(change) = p.content_changes.pop() {
                        self.edited(&p.text_document.uri, Some(change.text));
                    }
                }
            }
            DidCloseTextDocument::METHOD => {
                if let Ok(p) =
                    serde_json::from_value::<lsp_types::DidCloseTextDocumentParams>(n.params)
                {
                    self.edited(&p.text_document.uri, None);
                }
            }
            DidSaveTextDocument::METHOD => self.dirty = true,
            _ => {}
        }
    }

    /// The editor's text of `uri` is now `text` (`None`: the file's own again).
    fn edited(&mut self, uri: &Uri, text: Option<String>) {
        let Some(path) = path_of(uri) else { return };
        if self.project.is_none() {
            self.project = path.parent().map(Path::to_path_buf);
        }
        match text {
            Some(t) if t.len() <= MAX_DOCUMENT => {
                self.open.insert(path, t);
            }
            _ => {
                self.open.remove(&path);
            }
        }
        self.dirty = true;
    }

    /// The answer to a request.
    fn answer(&mut self, request: Request) -> Response {
        use lsp_types::request::{Formatting, GotoDefinition, HoverRequest};
        let id = request.id.clone();
        let result = match request.method.as_str() {
            HoverRequest::METHOD => serde_json::from_value(request.params)
                .map(|p: lsp_types::HoverParams| serde_json::to_value(self.hover(&p)))
                .map_err(|e| e.to_string()),
            GotoDefinition::METHOD => serde_json::from_value(request.params)
                .map(|p: lsp_types::GotoDefinitionParams| serde_json::to_value(self.definition(&p)))
                .map_err(|e| e.to_string()),
            Formatting::METHOD => serde_json::from_value(request.params)
                .map(|p: lsp_types::DocumentFormattingParams| {
                    serde_json::to_value(self.format(&p.text_document.uri))
                })
                .map_err(|e| e.to_string()),
            other => {
                return Response::new_err(
                    id,
                    ErrorCode::MethodNotFound as i32,
                    format!("weft lsp does not answer {other}"),
                );
            }
        };
        match result {
            Ok(Ok(value)) => Response::new_ok(id, value),
            Ok(Err(e)) => error(id, e.to_string()),
            Err(e) => Response::new_err(id, ErrorCode::InvalidParams as i32, e),
        }
    }

    /// The text of `path`: the editor's, else the file's.
    fn text(&self, path: &Path) -> Option<String> {
        match self.open.get(path) {
            Some(t) => Some(t.clone()),
            None => read_content(Some(path)).ok().map(|(_, t)| t),
        }
    }

    fn hover(&self, p: &lsp_types::HoverParams) -> Option<Hover> {
        let uri = &p.text_document_position_params.text_document.uri;
        let text = self.text(&path_of(uri)?)?;
        let root = weft_dsr::hjson::parse(&text).ok()?;
        let offset = Lines::new(&text).offset(p.text_document_position_params.position);
        // The template modules of this document, and of the project as last checked.
        let mut templates = weft_dsr::parse(&text)
            .0
            .map(|d| d.modules)
            .unwrap_or_default();
        if let Some((_, _, checked)) = &self.last {
            templates.extend(checked.iter().cloned());
        }
        let modules = hover::Modules {
            registry: self.checker.registry(),
            templates: &templates,
        };
        let markdown = hover::hover(&root, u32::try_from(offset).ok()?, &modules)?;
        Some(Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value: markdown,
            }),
            range: None,
        })
    }

    fn definition(&self, p: &lsp_types::GotoDefinitionParams) -> Option<GotoDefinitionResponse> {
        let (checked, documents, _) = self.last.as_ref()?;
        let project = self.project.as_ref()?;
        let uri = &p.text_document_position_params.text_document.uri;
        let text = self.text(&path_of(uri)?)?;
        let offset = Lines::new(&text).offset(p.text_document_position_params.position);
        let mut locations = Vec::new();
        for writer in definition::writers(&checked.repo, &text, offset) {
            let Some((file, span)) = definition::locate(documents, &writer) else {
                continue;
            };
            let path = project.join(&file);
            let Some(target) = documents.iter().find(|(n, _)| *n == file).map(|(_, t)| t) else {
                continue;
            };
            let lines = Lines::new(target);
            let Some(uri) = uri_of(&path) else { continue };
            locations.push(Location {
                uri,
                range: Range::new(
                    lines.position(span.start as usize),
                    lines.position(span.end as usize),
                ),
            });
        }
        (!locations.is_empty()).then_some(GotoDefinitionResponse::Array(locations))
    }

    fn format(&self, uri: &Uri) -> Option<Vec<TextEdit>> {
        let text = self.text(&path_of(uri)?)?;
        let formatted = weft_dsr::format::format(&text).ok()?;
        if formatted == text {
            return Some(Vec::new());
        }
        let end = Lines::new(&text).position(text.len());
        Some(vec![TextEdit::new(
            Range::new(Position::new(0, 0), end),
            formatted,
        )])
    }

    /// Checks the project and publishes every file's problems.
    fn check(&mut self, connection: &Connection) {
        let Some(dir) = self.project.clone() else {
            return;
        };
        let (documents, files) = match self.read(&dir) {
            Ok(read) => read,
            Err(e) => {
                log(connection, &format!("weft lsp: {e}"));
                return;
            }
        };
        let mut with = Vec::new();
        for path in &self.with {
            match read_content(Some(path)) {
                Ok(named) => with.push(named),
                Err(e) => {
                    log(connection, &format!("weft lsp: --with {e}"));
                    return;
                }
            }
        }
        let target = Target::Project {
            documents: &documents,
            files: &files,
        };
        let checked = match self.checker.check(&with, target, false) {
            Ok(c) => c,
            Err(e) => {
                log(connection, &format!("weft lsp: {e}"));
                return;
            }
        };
        let texts: BTreeMap<&str, &str> = documents
            .iter()
            .chain(&files)
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        let mut by_file: BTreeMap<PathBuf, Vec<Diagnostic>> = BTreeMap::new();
        for d in &checked.details {
            // What no one file holds is shown at the top of the first document.
            let file = d
                .file
                .clone()
                .or_else(|| documents.first().map(|(n, _)| n.clone()))
                .unwrap_or_default();
            let text = texts.get(file.as_str()).copied().unwrap_or("");
            by_file
                .entry(dir.join(&file))
                .or_default()
                .push(diagnostic(d, text));
        }
        // An open document of the project hears of every check, problems or none.
        for path in self.open.keys().filter(|p| p.starts_with(&dir)) {
            by_file.entry(path.clone()).or_default();
        }
        let cleared: Vec<PathBuf> = self
            .published
            .iter()
            .filter(|p| !by_file.contains_key(*p))
            .cloned()
            .collect();
        for path in cleared {
            publish(connection, &path, Vec::new());
        }
        self.published = by_file.keys().cloned().collect();
        for (path, diagnostics) in by_file {
            publish(connection, &path, diagnostics);
        }
        if checked.deployed {
            let templates = documents
                .iter()
                .filter_map(|(_, t)| weft_dsr::parse(t).0)
                .flat_map(|d| d.modules)
                .collect();
            self.last = Some((checked, documents, templates));
        }
    }

    /// The project's documents and the files their actions read, the editor's texts in place
    /// of the files'.
    fn read(&self, dir: &Path) -> Result<(Named, Named), String> {
        // A directory that holds no document yet is one the editor's documents fill; any
        // other failure (a file that is not UTF-8, one that cannot be read) stops the check,
        // which would otherwise call everything in the other files unknown.
        let mut documents = match project_files(dir) {
            Ok(found) => found,
            Err(e) if e.ends_with("holds no .dsr file") => Vec::new(),
            Err(e) => return Err(e),
        };
        for (path, text) in &self.open {
            let Ok(relative) = path.strip_prefix(dir) else {
                continue;
            };
            let name = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            if !name.ends_with(".dsr") || name.split('/').any(|part| part.starts_with('.')) {
                continue;
            }
            match documents.iter_mut().find(|(n, _)| *n == name) {
                Some(doc) => doc.1.clone_from(text),
                None => documents.push((name, text.clone())),
            }
        }
        if documents.is_empty() {
            return Err(format!("{} holds no .dsr file", dir.display()));
        }
        documents.sort();
        let mut files = action_files(dir, &documents)?;
        for (name, text) in &mut files {
            if let Some(open) = self.open.get(&dir.join(&*name)) {
                text.clone_from(open);
            }
        }
        Ok((documents, files))
    }
}

/// `d` as the protocol says a problem: from its place to the end of the name there (at
/// least one character).
fn diagnostic(d: &weft_protocol::Detail, text: &str) -> Diagnostic {
    let lines = Lines::new(text);
    let start = lines.from_weft(d.line.unwrap_or(1), d.column.unwrap_or(1));
    let offset = lines.offset(start);
    let end = match text::name_at(text, offset) {
        Some((s, e)) if s == offset => lines.position(e),
        _ => Position::new(start.line, start.character + 1),
    };
    let message = if d.path.is_empty() {
        d.message.clone()
    } else {
        format!("{} ({})", d.message, d.path)
    };
    Diagnostic {
        range: Range::new(start, end),
        severity: Some(if d.severity == Severity::Warning {
            DiagnosticSeverity::WARNING
        } else {
            DiagnosticSeverity::ERROR
        }),
        code: Some(NumberOrString::String(d.code.clone())),
        source: Some("weft".to_owned()),
        message,
        ..Diagnostic::default()
    }
}

/// Publishes `diagnostics` as the problems of `path`.
fn publish(connection: &Connection, path: &Path, diagnostics: Vec<Diagnostic>) {
    use lsp_types::notification::PublishDiagnostics;
    let Some(uri) = uri_of(path) else { return };
    let params = PublishDiagnosticsParams::new(uri, diagnostics, None);
    if let Ok(params) = serde_json::to_value(params) {
        let _ = connection
            .sender
            .send(Message::Notification(Notification::new(
                PublishDiagnostics::METHOD.to_owned(),
                params,
            )));
    }
}

/// Tells the editor's log `message`.
fn log(connection: &Connection, message: &str) {
    use lsp_types::notification::LogMessage;
    let params = lsp_types::LogMessageParams {
        typ: lsp_types::MessageType::WARNING,
        message: message.to_owned(),
    };
    if let Ok(params) = serde_json::to_value(params) {
        let _ = connection
            .sender
            .send(Message::Notification(Notification::new(
                LogMessage::METHOD.to_owned(),
                params,
            )));
    }
}

/// A request that could not be answered.
fn error(id: RequestId, message: String) -> Response {
    Response::new_err(id, ErrorCode::InternalError as i32, message)
}

/// The file a `file:` URI names (its directory resolved through links where it exists).
fn path_of(uri: &Uri) -> Option<PathBuf> {
    let path = url::Url::parse(uri.as_str()).ok()?.to_file_path().ok()?;
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => Some(
            std::fs::canonicalize(dir)
                .unwrap_or_else(|_| dir.to_path_buf())
                .join(name),
        ),
        _ => Some(path),
    }
}

/// The `file:` URI of `path`.
fn uri_of(path: &Path) -> Option<Uri> {
    url::Url::from_file_path(path).ok()?.as_str().parse().ok()
}
