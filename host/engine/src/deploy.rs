//! The deploy service behind `DeployRepository`: read the `.dsr` content, copy it into a
//! folder when `intoFolder` asks, validate it against the repository and write it, all in
//! one transaction. A rejected deploy and a dry run change nothing.
//!
//! # A deploy, from request to repository
//!
//! The detail behind docs/ARCHITECTURE.md's map.
//!
//! Data flows one way: `api` -> `deploy` -> `dsr` -> `validate` -> `repo`.
//!
//! 1. **`server::http`** accepts connections (hyper's HTTP/1 connection builder, not
//!    `axum::serve`, for its header timeout): at most `max_connections` open, one past the cap
//!    answered 503; a head (and a kept-alive connection's next head) within
//!    `header_timeout_seconds`; accept failures (descriptors used up) logged, with a growing
//!    pause and the idle SQLite pool closed, never a silent spin. `ErrorBodies` wraps each
//!    connection's stream so that hyper's own 400/431/414 answers carry weft's error
//!    shape. **`api`** (axum) serves the route `POST /weft/service` (and `GET /metrics`, behind
//!    the same guard and token, and the monitoring page: `api::page` serves the files of
//!    `host/web/`, embedded at build time, at `/` and `/ui/FILE`; the page reads everything
//!    through the commands, from the browser). `api::guard` refuses
//!    what a web page in a browser could send (a foreign `Host` or `Origin`, `Sec-Fetch-Site`
//!    of another site, a body not declared JSON) before anything is read. It reads the body
//!    raw within `body_timeout_seconds` (so that a malformed body still gets weft's error
//!    shape), checks the bearer token when the server listens beyond loopback, and parses the body with the strict JSON reader of `dsr::json`,
//!    which accepts the raw TABs that SPEC 4.2's content encoding leaves in strings. Every
//!    command is a type of `weft_protocol`, one file per command in
//!    `host/protocol/src/commands/` (its payload struct, its answer, and `impl Request` naming
//!    the two), listed once in `weft_protocol::for_each_command!`, from which `Command`, its
//!    envelope and `COMMANDS` are made; `api::protocol` re-exports them and adds what needs the
//!    host. On the server each command has its file in `host/src/api/commands/`: an
//!    `impl Handler` that reads its payload from the spanned value tree (with the parts of
//!    `api::protocol::read`: `object` (the one positioned reader `dsr::fields::Fields` by the
//!    request's rules), numbers, texts, each problem with line, column and path,
//!    reading on after one so that the answer lists them all) and answers it, typed request in,
//!    typed answer out. `api::commands` makes the reading and answering by name from the same
//!    list, so a listed command without its handler does not compile and an unlisted name is
//!    refused before its payload is read. `api/envelope.rs` puts UTF-8, JSON and the envelope
//!    `{command, payload, variableList?}` together, refusing a field given twice anywhere
//!    (`Problems::refuse_nul` refuses a NUL anywhere, as the document reader does). `api::waits` bounds the
//!    `WaitBatchInstance` requests (a quarter of `max_connections`) and gives each waited-for
//!    instance one watcher, which reads only when `exec::changes` counted a change: this
//!    host's own, and on PostgreSQL every host's (`repo::postgres::changes`, a connection
//!    listening for the notices schema version 12's triggers send at each commit); a waiter
//!    takes only a read made after the changes it knew of when it came. The services run on blocking
//!    threads, and `api` never touches SQL. `ApiError` (`api/error.rs`) is an enum of every
//!    refusal, the services' errors converting into it with `?`; it knows its status, code,
//!    message and details, and `Reply` is the one `IntoResponse` of success and refusal:
//!    `{requestId, payload}` or `{requestId, error: {code, message, details}}`, 4xx for the
//!    client's mistakes, 5xx only for the server's faults, whose details go to the log.
//! 2. **`deploy`** is the service behind `DeployRepository`: it reads the content, refuses
//!    `intoFolder` outside a development environment, runs the checks that need nothing of the
//!    repository but the connection types (`validate::sheets`: graph, modules, each module's SQL
//!    validation) and checks the objects against their connections where the key file names
//!    them (warnings only) before the repository is locked, as these may take a while, and does
//!    everything else inside one repository transaction: the `intoFolder` move into the folder, validation (of the ids as
//!    written), the renumbering of a copy (fresh ids after the repository's maxima), and the
//!    writes. It commits only when something really changed and the deploy
//!    is not a dry run, so a rejected deploy, a dry run and an identical redeploy leave the file
//!    byte-identical.
//! 3. **`dsr`** turns text into the typed model. `dsr::hjson` is a spanned HJSON reader written for
//!    this project (it follows hjson-js rule for rule and passes the whole public conformance suite
//!    in `../shared/hjson-suite`); every value keeps its byte span, and `LineIndex` turns a span
//!    into line and column only when a problem needs it. Both readers (HJSON and the strict JSON of
//!    request bodies) share a `Budget`: 256 levels, 10,000 members per object, 1,000,000 values
//!    per text, each with its own code, so no input costs more than time linear in its size
//!    (duplicate keys are found with a set). `Problems::into_details` lists at most 100
//!    problems and counts the rest per code. `dsr::read` turns the value tree into the
//!    model of `dsr::model` through `dsr::fields::Fields`, the one positioned reader of objects
//!    that request payloads are read with too (each member taken once by name; the names asked
//!    for are the fields the object knows, so no list of them is written twice; two dialects:
//!    a document keeps an unknown field with a warning, a request refuses it),
//!    collecting every missing, mistyped, duplicate and unknown field as a
//!    `Problem` with a stable code and a path such as `transformationData.sheets[0].edges[1].to`.
//!    A field the format does not have is a warning and is kept in the object's `Extra` (and so
//!    in the stored definition), unless it is a near-miss of a known name (`typo_of`), which is
//!    an error. A syntax error stops reading; other problems do not.
//! 4. **`validate`** judges the model (what modules parse at once is bounded by
//!    `validate::budget`: 2 MiB of text over all deploys in flight, 2 MiB at most an action) (`validate::sheets` outside the lock, `validate::document`
//!    inside it): ids unique and not taken by another sheet, folders and their
//!    paths, each sheet's graph (edges within the sheet, object to action or action to object, no
//!    cycle), dependency letters, modules and their attributes, object and connection types, and
//!    connection references. It asks the repository through the `Facts` trait, inside the deploy's
//!    transaction, so it knows no SQL, and the loaded plugins through the `Catalog` trait
//!    (`validate::PluginCatalog`): which modules exist and the attributes they declare, object and
//!    connection types, the dialect of each connection (from its key file entry), and each
//!    module's own `validate` hook (`validate::actions`). The host first checks each attribute
//!    against the module's declaration (type, `required`, unknown names, `module.attribute`),
//!    gives the module the declared default of every attribute the action does not write, and
//!    does not call the module's `validate` for an action whose attributes it refused. A
//!    module's problems carry byte offsets in the action text, or, with `on_attribute(name)`, in
//!    that attribute's value (`place_in_string`); `dsr::hjson::string_source_map` turns them
//!    into places in the `.dsr` file, through escapes and the indentation of `'''` strings. A
//!    module's own codes are answered namespaced with its name (`Upsert.keys`), the shared
//!    `sql.*` and `module.*` codes as they are (`module_code`); a panic in `validate` is
//!    `module.failed` with the plugin's file and line. Every table the action text reads must be one of the
//!    action's objects. With `validate=false` only the checks that keep the repository consistent
//!    run (ids, folders, attribute types of known modules).
//! 5. **`repo`** owns the repository: the SQLite file (`HOME/repository.db`, WAL,
//!    `synchronous=NORMAL`, a busy timeout, foreign keys; all writes through one writer
//!    connection in `BEGIN IMMEDIATE` transactions) or the PostgreSQL database of the key
//!    file's entry 0 (a deploy's transaction under an advisory lock). A deploy writes in one
//!    transaction that no other deploy runs beside (`Repository::write`). `repo::DeployWriter` (`repo::writer::Writer`, on any backend's `repo::sql::Session`) creates, updates or finds unchanged each
//!    folder, connection and sheet; a sheet's canonical JSON (`sheets.definition`) tells an
//!    identical redeploy from a change; a redeployed sheet's nodes and edges are replaced and what
//!    it lacks is deleted and reported. `deploy_history` gets a row for every real change.
//!    `repo::flow` keeps the data graph (`data_flow`: which objects each action reads and
//!    writes with dependency `Y`); after the writes, `deploy::cycles` records the changed
//!    sheets' lines and searches it from each changed action in both directions, reading
//!    neighbours lazily, for a cycle it closes (a warning; an error inside an enabled
//!    scheduled batch's elements).
//!    On SQLite the writer does not checkpoint the WAL in its commits
//!    (`wal_autocheckpoint = 0`): a background thread with its own connection runs a `PASSIVE`
//!    checkpoint every 500 ms, which never blocks writers, so no request pays for copying the
//!    log.

use crate::validate;
use std::collections::{BTreeMap, HashMap, HashSet};
use weft_core::settings::Environment;
use weft_dsr::model::{At, Document};
use weft_dsr::{self as dsr, Detail, LineIndex, Path, Problem, Problems, Severity};
use weft_protocol::commands::{DeleteObjects, Deleted, DeletedObject};
use weft_repo::{self as repo, Change, ChangeKind, DeployWriter, IdTable, ObjectKind, Repository};

mod cycles;
pub mod delete;
pub mod export;
mod names;
pub mod scope;

pub use scope::Deployer;

/// The deploy options of SPEC 4.2 and a deploy's report: `weft_protocol`'s types.
pub use weft_protocol::deploys::{IdMap, Options, Report, Touched};

/// A repository change as a deploy's report names it.
fn touched(c: Change) -> Touched {
    Touched {
        kind: c.kind,
        id: c.id,
        sheet_id: c.sheet_id,
        file: None,
    }
}

/// Why a deploy was not done.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The content has errors; every problem is listed (warnings too).
    #[error("the content is invalid: {} error(s)", .0.iter().filter(|d| d.severity == weft_protocol::Severity::Error).count())]
    Invalid(Vec<Detail>),
    /// `intoFolder` outside a development environment.
    #[error(
        "intoFolder copies sheets with fresh ids, which only a development environment allows; this server runs as {0} (setting `environment`)"
    )]
    IntoFolderRefused(Environment),
    /// A delete names objects that do not exist, or names one ambiguously; each is listed.
    #[error("{}", first_message(.0))]
    NotFound(Vec<Detail>),
    /// A delete would leave references to what it removes, or a folder's contents behind;
    /// each is listed.
    #[error("{}", first_message(.0))]
    Referenced(Vec<Detail>),
    /// An export names a folder that does not exist.
    #[error(
        "no folder `{0}` in the repository (a folder is named by its path, such as `/sales/daily`)"
    )]
    NoFolder(String),
    /// A user whose deploy right is limited to folders touched something outside them.
    #[error("{0}")]
    OutsideFolders(String),
    /// The repository failed.
    #[error(transparent)]
    Repo(#[from] repo::Error),
}

/// The first detail's message, and how many more there are.
fn first_message(details: &[Detail]) -> String {
    let total: usize = details.iter().map(|d| d.more.unwrap_or(1)).sum();
    match details.first() {
        Some(d) if total > 1 => format!("{} (and {} more)", d.message, total - 1),
        Some(d) => d.message.clone(),
        None => "refused".to_owned(),
    }
}

/// Deletes the folders, sheets, connections and batches `request` names, in one
/// transaction, or nothing: every name not found and every reference that would be left is
/// listed at once. A dry run reports what would go.
///
/// # Errors
///
/// [`Error::NotFound`], [`Error::Referenced`], or a repository error.
pub fn delete(
    repo: &Repository,
    request: &DeleteObjects,
    by: Deployer<'_>,
) -> Result<Deleted, Error> {
    let details = |problems: Vec<Problem>| {
        let mut all = Problems::default();
        all.extend(problems);
        all.into_details(&LineIndex::new(""))
    };
    repo.write(by.name, |w| {
        let payload = Path::root().key("payload");
        let mut missing = Vec::new();
        let mut doomed = Vec::new();
        for (kind, names, key) in [
            (ObjectKind::Folder, &request.folders, "folders"),
            (ObjectKind::Sheet, &request.sheets, "sheets"),
            (ObjectKind::Connection, &request.connections, "connections"),
            (ObjectKind::Batch, &request.batches, "batches"),
            (ObjectKind::Module, &request.modules, "modules"),
        ] {
            doomed.extend(delete::find(
                w,
                kind,
                names,
                &payload.key(key),
                &mut missing,
            )?);
        }
        if !missing.is_empty() {
            return Ok((Err(Error::NotFound(details(missing))), false));
        }
        let objects = match delete::plan(w, doomed, request.recursive)? {
            Ok(objects) => objects,
            Err(problems) => return Ok((Err(Error::Referenced(details(problems))), false)),
        };
        if let Some(what) = scope::outside_delete(w, &objects, &by)? {
            return Ok((Err(Error::OutsideFolders(by.refusal(&what))), false));
        }
        if !request.dry_run {
            w.delete(&objects)?;
        }
        let answer = Deleted {
            dry_run: request.dry_run,
            deleted: objects
                .into_iter()
                .map(|(kind, n)| DeletedObject {
                    kind,
                    id: n.id,
                    name: n.name,
                })
                .collect(),
            deploy_id: w.deploy_id().filter(|_| !request.dry_run),
        };
        let commit = answer.deploy_id.is_some();
        Ok((Ok(answer), commit))
    })?
}

/// Deploys `content` with `opts` into `repo`.
///
/// # Errors
///
/// [`Error::Invalid`] with every problem, [`Error::IntoFolderRefused`], or a repository error.
pub fn deploy(
    repo: &Repository,
    catalog: &dyn validate::Catalog,
    content: &str,
    opts: Options,
    env: Environment,
    by: Deployer<'_>,
) -> Result<Report, Error> {
    if opts.into_folder.is_some() && env != Environment::Development {
        return Err(Error::IntoFolderRefused(env));
    }
    let index = LineIndex::new(content);
    let (doc, mut problems) = dsr::parse(content);
    if let Some(doc) = &doc {
        for r in dsr::project::file_refs(doc, &dsr::project::Project::default()) {
            problems.error(
                "action.file",
                format!(
                    "`file: {}`: an action's text is read from a file only in a project deploy, which carries the file (`weft deploy DIR` or `weft deploy FILE`, DeployProject)",
                    r.written.v
                ),
                r.written.span,
                &r.path(),
            );
        }
    }
    let read = Read {
        text: content,
        details: &|problems: Problems| problems.into_details(&index),
        prune: &[],
        by,
    };
    deploy_read(repo, catalog, read, doc, problems, opts)
}

/// The repository (or, `folder`, that folder by path, what is below it and the connections
/// its sheets use) as `.dsr` files, each its name (a path with `/`) and text, in the
/// canonical form of [`export` the module](mod@export).
///
/// # Errors
///
/// [`Error::NoFolder`] for a folder that does not exist, or a repository error.
pub fn export(repo: &Repository, folder: Option<&str>) -> Result<Vec<(String, String)>, Error> {
    let exported = repo.read(|w| {
        if let Some(path) = folder
            && w.folder_at(path)?.is_none()
        {
            return Ok(None);
        }
        w.exported(folder).map(Some)
    })?;
    match exported {
        Some(e) => Ok(export::files(&e)),
        None => Err(Error::NoFolder(folder.unwrap_or_default().to_owned())),
    }
}

/// A project as a deploy takes it: its `.dsr` documents and the files its actions read,
/// each its name (its path in the project's tree) and text, and the folders to prune.
#[derive(Debug, Clone, Copy)]
pub struct Project<'a> {
    /// The `.dsr` documents.
    pub documents: &'a [(String, String)],
    /// The files actions read (`file:`).
    pub files: &'a [(String, String)],
    /// The folders (paths) below which what the documents do not hold is deleted.
    pub prune: &'a [String],
}

/// Deploys the `.dsr` documents of `project` as one document in one transaction: all or
/// nothing, every problem of every file answered in its file, references between files
/// resolved whatever their order. With `prune`, the sheets and folders below each of those
/// folders (by path) that the files do not hold are deleted in the same transaction
/// (refused, as [`delete()`] is, while anything that stays refers to them). Each object of
/// the report names its file.
///
/// # Errors
///
/// As [`deploy`]; a prune that is refused is [`Error::Invalid`] with every reason.
pub fn deploy_project(
    repo: &Repository,
    catalog: &dyn validate::Catalog,
    project: Project<'_>,
    opts: Options,
    env: Environment,
    by: Deployer<'_>,
) -> Result<Report, Error> {
    let Project {
        documents: files,
        files: data,
        prune,
    } = project;
    if opts.into_folder.is_some() && env != Environment::Development {
        return Err(Error::IntoFolderRefused(env));
    }
    let (mut doc, mut problems, mut project) = dsr::project::read(files);
    // The files the actions read (`file`), each its text.
    if let Some(doc) = &mut doc {
        dsr::project::read_files(doc, &mut project, data, &mut problems);
    }
    // The file of each object, for the report.
    let mut homes: HashMap<(ObjectKind, i64), String> = HashMap::new();
    if let Some(doc) = &doc {
        let lists: [(&str, ObjectKind, Vec<i64>); 4] = [
            (
                "folders",
                ObjectKind::Folder,
                doc.folders.iter().map(|f| f.id.v).collect(),
            ),
            (
                "connections",
                ObjectKind::Connection,
                doc.connections.iter().map(|c| c.id.v).collect(),
            ),
            (
                "sheets",
                ObjectKind::Sheet,
                doc.sheets.iter().map(|s| s.id.v).collect(),
            ),
            (
                "batches",
                ObjectKind::Batch,
                doc.batches.iter().map(|b| b.id.v).collect(),
            ),
        ];
        for (list, kind, ids) in lists {
            for (i, id) in ids.into_iter().enumerate() {
                if let Some(file) = project.file_of(list, i) {
                    homes.entry((kind, id)).or_insert_with(|| file.to_owned());
                }
            }
        }
    }
    let read = Read {
        text: project.text(),
        details: &|problems: Problems| project.details(problems),
        prune,
        by,
    };
    let mut report = deploy_read(repo, catalog, read, doc, problems, opts)?;
    for t in report
        .created
        .iter_mut()
        .chain(&mut report.updated)
        .chain(&mut report.unchanged)
        .chain(&mut report.deleted)
    {
        let home = match t.sheet_id {
            Some(sheet) => (ObjectKind::Sheet, sheet),
            None => (t.kind, t.id),
        };
        t.file = homes.get(&home).cloned();
    }
    Ok(report)
}

/// What a deploy read: the text its spans point into, how its problems are answered, and
/// the folders a project deploy prunes.
struct Read<'a> {
    text: &'a str,
    details: &'a dyn Fn(Problems) -> Vec<Detail>,
    prune: &'a [String],
    /// Who deploys: the deploy's row names it; its folders bound what it may touch.
    by: Deployer<'a>,
}

/// The deploy of a document read (one file's, or a project's joined).
fn deploy_read(
    repo: &Repository,
    catalog: &dyn validate::Catalog,
    read: Read<'_>,
    doc: Option<Document>,
    mut problems: Problems,
    opts: Options,
) -> Result<Report, Error> {
    let content = read.text;
    let details = read.details;
    // Validation also runs after reading problems, so that one answer lists them all, unless
    // an object could not be read at all: rules would then judge a sheet with parts missing.
    let Some(mut doc) = doc.filter(|d| d.complete || !problems.has_errors()) else {
        return Err(Error::Invalid(details(problems)));
    };
    for s in &mut doc.sheets {
        if s.attributes.order.is_none() {
            let derived = s.attributes.name.v.to_uppercase();
            s.attributes.order = Some(At::new(derived, s.attributes.name.span));
        }
    }
    if doc.folders.is_empty()
        && doc.connections.is_empty()
        && doc.sheets.is_empty()
        && doc.batches.is_empty()
        && doc.notifications.is_none()
        && doc.modules.is_empty()
    {
        problems.warning(
            "dsr.empty",
            "the document holds no folder, connection, sheet, batch, notifications or template module; nothing was deployed",
            dsr::Span::default(),
            &Path::root().key("transformationData"),
        );
    }
    // What needs nothing of the repository but the connection types runs before the
    // repository is locked: the graph, each module's validation (SQL parsing), and what the
    // data holds (a table that does not exist yet is a warning; it may mean opening
    // connections).
    if !opts.validate && !doc.sheets.is_empty() {
        problems.warning(
            "deploy.not_validated",
            "validate=false: the sheets' graphs, modules, SQL and objects were not checked (only ids, folders and the types of known modules' attributes); they may fail when they run",
            dsr::Span::default(),
            &Path::root().key("transformationData").key("sheets"),
        );
    }
    // Ids for what is written by name.
    repo.read(|w| names::assign(&mut doc, w, &mut problems))?;
    // Actions of template modules expanded, and templates rendered, before anything reads
    // their SQL.
    let wanted = validate::wanted_template_modules(&doc, catalog);
    let stored = repo.read(|w| {
        let mut found = std::collections::BTreeMap::new();
        for name in &wanted {
            if let Some(m) = w
                .stored_template_module(name)?
                .as_deref()
                .and_then(validate::read_template_module)
            {
                found.insert(name.clone(), m);
            }
        }
        Ok(found)
    })?;
    let mut budget = validate::RenderBudget::default();
    let mut unrendered = validate::expand_template_modules(
        &mut doc,
        catalog,
        &stored,
        content,
        &mut budget,
        &mut problems,
    );
    unrendered.extend(validate::render_templates(
        &mut doc,
        content,
        &mut budget,
        &mut problems,
    ));
    // Objects from the SQL, for the actions that have none and name their connection.
    let mut conns = repo.read(|w| validate::action_connections(&doc, w, &mut problems))?;
    conns.unfound.extend(unrendered);
    let refused = validate::derive_objects(&mut doc, catalog, &conns, content, &mut problems);
    // Tests attached to actions, on the tables they write (derived ones too).
    validate::attach_tests(&mut doc, &refused, &mut problems);
    let used = repo.read(|w| validate::used_connections(&doc, w))?;
    let vopts = validate::Options {
        full: opts.validate,
        check_ids: opts.into_folder.is_none(),
    };
    let defines = validate::sheets(
        &doc,
        content,
        catalog,
        &used.kinds,
        vopts,
        &refused,
        &mut problems,
    );
    validate::note_defines(&mut doc, &defines);
    if opts.validate && doc.complete && !problems.has_errors() {
        // Each connection's default schema: as the document deploys it, else as deployed.
        object_warnings(&doc, catalog, &used.schemas, &mut problems);
    }
    repo.write(read.by.name, |w| {
        let invalid = |problems: &mut Problems| {
            Ok((
                Err(Error::Invalid(details(std::mem::take(problems)))),
                false,
            ))
        };
        if let Some(folder) = opts.into_folder
            && let Err(p) = move_into(&mut doc, folder, w)?
        {
            problems.push(p);
            return invalid(&mut problems);
        }
        // Validation judges the ids as written, so that its messages name them; a copy's
        // ids are replaced afterwards, so they need not be free. What it asks of the
        // repository by id is read ahead in one round trip.
        w.prefetch(&doc.sheets)?;
        validate::document(&doc, w, catalog, vopts, &mut problems)?;
        validate::resolve_after(&mut doc, w, &mut problems)?;
        if problems.has_errors() {
            return invalid(&mut problems);
        }
        let id_map = match opts.into_folder {
            Some(_) => match renumber(&mut doc, w)? {
                Ok(map) => Some(map),
                Err(p) => {
                    problems.extend(p);
                    return invalid(&mut problems);
                }
            },
            None => None,
        };
        let mut report = Report {
            dry_run: opts.dry_run,
            validated: opts.validate,
            id_map,
            ..Report::default()
        };
        let stood = scope::before(w, &doc, &read.by)?;
        let mut changes = Vec::new();
        for f in &doc.folders {
            changes.push(w.folder(f)?);
        }
        for c in &doc.connections {
            changes.push(w.connection(c)?);
        }
        for s in &doc.sheets {
            changes.extend(w.sheet(s)?);
        }
        if let Some(n) = &doc.notifications {
            changes.push(w.notifications(n)?);
        }
        for m in &doc.modules {
            changes.push(w.template_module(m)?);
        }
        if !doc.batches.is_empty() {
            let time = weft_core::sched::clock::current();
            let now = time.clock.now();
            let td = weft_dsr::Path::root().key("transformationData");
            for (i, b) in doc.batches.iter().enumerate() {
                // Validation read every schedule already; nothing is reported twice.
                let mut again = Problems::default();
                if let Some(schedule) =
                    validate::batch_schedule(b, &td.key("batches").index(i), &mut again)
                {
                    let first = schedule.first_after(time.zone, now);
                    changes.push(w.batch(b, &schedule, first)?);
                }
            }
        }
        // The sheets created (no lines yet) or updated (with the nodes they no longer hold),
        // and the batches created or updated.
        let mut sheets: HashMap<i64, Option<Vec<i64>>> = HashMap::new();
        let mut batches: HashSet<i64> = HashSet::new();
        for c in &changes {
            match (c.kind, c.change) {
                (ObjectKind::Sheet, ChangeKind::Created) => {
                    sheets.insert(c.id, None);
                }
                (ObjectKind::Sheet, ChangeKind::Updated) => {
                    sheets.insert(c.id, Some(Vec::new()));
                }
                (ObjectKind::Node, ChangeKind::Deleted) => {
                    if let Some(Some(gone)) = c.sheet_id.and_then(|s| sheets.get_mut(&s)) {
                        gone.push(c.id);
                    }
                }
                (ObjectKind::Batch, ChangeKind::Created | ChangeKind::Updated) => {
                    batches.insert(c.id);
                }
                _ => {}
            }
        }
        // A project's prune: what the files no longer hold below the folders named goes.
        if !read.prune.is_empty() {
            match delete::prune(w, &doc, read.prune)? {
                Ok(gone) => changes.extend(gone),
                Err(refused) => {
                    problems.extend(refused);
                    return invalid(&mut problems);
                }
            }
        }
        let changed = cycles::Changed {
            sheets: &sheets,
            batches: &batches,
        };
        cycles::check(&doc, &changed, w, catalog, &mut problems)?;
        if problems.has_errors() {
            return invalid(&mut problems);
        }
        if let Some(what) = scope::outside(w, &changes, &stood, read.prune, &read.by)? {
            return Ok((Err(Error::OutsideFolders(read.by.refusal(&what))), false));
        }
        let wrote = changes.iter().any(|c| c.change != ChangeKind::Unchanged);
        for c in changes {
            let list = match c.change {
                ChangeKind::Created => &mut report.created,
                ChangeKind::Updated => &mut report.updated,
                ChangeKind::Unchanged => &mut report.unchanged,
                ChangeKind::Deleted => &mut report.deleted,
            };
            list.push(touched(c));
        }
        report.warnings = details(std::mem::take(&mut problems));
        report.deploy_id = w.deploy_id().filter(|_| !opts.dry_run);
        // Commit only real changes: an identical redeploy and a dry run leave the file as it was.
        Ok((Ok(report), wrote && !opts.dry_run))
    })?
}

fn object_warnings(
    doc: &Document,
    catalog: &dyn validate::Catalog,
    schemas: &BTreeMap<i64, String>,
    problems: &mut Problems,
) {
    let td = Path::root().key("transformationData");
    // A table an action of this deploy creates (its SQL's DDL) need not exist yet: a run
    // makes it.
    let mut written: HashSet<(i64, String)> = HashSet::new();
    for s in &doc.sheets {
        for n in &s.nodes {
            let weft_dsr::model::NodeAttributes::Action(a) = &n.attributes else {
                continue;
            };
            if a.defines.is_empty() {
                continue;
            }
            for e in s.edges.iter().filter(|e| e.from.v == n.id.v) {
                if let Some(o) = s
                    .nodes
                    .iter()
                    .find(|t| t.id.v == e.to.v)
                    .and_then(|t| t.object())
                    && a.defines
                        .iter()
                        .any(|(_, name)| name.eq_ignore_ascii_case(&o.field1.v))
                {
                    written.insert((o.connection_id.v, o.field1.v.to_lowercase()));
                }
            }
        }
    }
    for (i, s) in doc.sheets.iter().enumerate() {
        let objects: Vec<weft_sdk::ObjectRef> =
            weft_core::plan::objects_of(s, &|id| catalog.dialect(id, None))
                .into_iter()
                .filter(|o| !written.contains(&(o.connection_id(), o.name().to_lowercase())))
                .collect();
        for (node_id, message) in catalog.check_objects(&objects, schemas) {
            if let Some((j, n)) = s.nodes.iter().enumerate().find(|(_, n)| n.id.v == node_id) {
                problems.warning(
                    "object.missing",
                    format!("node {node_id}: {message}"),
                    n.span,
                    &td.key("sheets").index(i).key("nodes").index(j),
                );
            }
        }
    }
}

/// Moves the document's sheets into `folder` (the first half of an `intoFolder` copy).
fn move_into(
    doc: &mut Document,
    folder: i64,
    w: &dyn DeployWriter,
) -> repo::Result<Result<(), Problem>> {
    let Some(path) = w.folder_path(folder)? else {
        return Ok(Err(Problem {
            severity: Severity::Error,
            code: "deploy.into_folder_missing".into(),
            message: format!(
                "intoFolder names folder {folder}, which does not exist in the repository"
            ),
            span: None,
            path: "payload.deployOptions.intoFolder".to_owned(),
        }));
    };
    for s in &mut doc.sheets {
        s.attributes.folder_id.v = folder;
        s.attributes.folder.v = path.clone();
    }
    Ok(Ok(()))
}

/// Gives the document's sheets, nodes and edges fresh ids after the largest in the
/// repository, and remaps the edges (the second half of an `intoFolder` copy).
fn renumber(doc: &mut Document, w: &dyn DeployWriter) -> repo::Result<Result<IdMap, Vec<Problem>>> {
    let mut next = [
        w.max_id(IdTable::Sheets)?,
        w.max_id(IdTable::Nodes)?,
        w.max_id(IdTable::Edges)?,
    ];
    let mut fresh = |kind: usize| -> Option<i64> {
        next[kind] = next[kind].checked_add(1)?;
        Some(next[kind])
    };
    let overflow = || Problem {
        severity: Severity::Error,
        code: "deploy.ids_exhausted".into(),
        message: "the repository holds an id so large that a copy cannot get fresh ids after it"
            .to_owned(),
        span: None,
        path: "payload.deployOptions.intoFolder".to_owned(),
    };
    let mut map = IdMap::default();
    let mut problems = Vec::new();
    let td = Path::root().key("transformationData");
    for (i, s) in doc.sheets.iter_mut().enumerate() {
        let Some(id) = fresh(0) else {
            return Ok(Err(vec![overflow()]));
        };
        map.sheets.insert(s.id.v.to_string(), id);
        s.id.v = id;
        let mut nodes = HashMap::new();
        for n in s.nodes.iter_mut().filter(|n| !validate::is_derived(n.id.v)) {
            let Some(id) = fresh(1) else {
                return Ok(Err(vec![overflow()]));
            };
            nodes.insert(n.id.v, id);
            map.nodes.insert(n.id.v.to_string(), id);
            n.id.v = id;
        }
        // Objects taken from an action's SQL take their ids from its new one.
        let follow = |nodes: &HashMap<i64, i64>, old: i64| -> Option<i64> {
            let action = nodes.get(&(old.checked_neg()? / 1000))?;
            action
                .checked_mul(1000)?
                .checked_add(old.checked_neg()? % 1000)
                .map(|v| -v)
        };
        for n in s.nodes.iter_mut().filter(|n| validate::is_derived(n.id.v)) {
            let Some(id) = follow(&nodes, n.id.v) else {
                return Ok(Err(vec![overflow()]));
            };
            nodes.insert(n.id.v, id);
            n.id.v = id;
        }
        for (j, e) in s.edges.iter_mut().enumerate() {
            let fresh_id = if validate::is_derived(e.id.v) {
                follow(&nodes, e.id.v)
            } else {
                fresh(2)
            };
            let Some(id) = fresh_id else {
                return Ok(Err(vec![overflow()]));
            };
            let old = e.id.v;
            if !validate::is_derived(old) {
                map.edges.insert(old.to_string(), id);
            }
            e.id.v = id;
            for (end, at) in [("from", &mut e.from), ("to", &mut e.to)] {
                match nodes.get(&at.v) {
                    Some(&new) => at.v = new,
                    // Even unvalidated, a copy must not join an edge to a stranger's node.
                    None => problems.push(Problem::error(
                        "edge.unknown_node",
                        format!("edge {old}: `{end}` names node {}, which is not a node of the copied sheet", at.v),
                        at.span,
                        &td.key("sheets").index(i).key("edges").index(j).key(end),
                    )),
                }
            }
        }
    }
    // `after` entries that name an action of the copy follow it to its new id.
    for s in &mut doc.sheets {
        for n in &mut s.nodes {
            if let weft_dsr::model::NodeAttributes::Action(a) = &mut n.attributes {
                for entry in &mut a.after {
                    if let Some(new) = entry.resolved.and_then(|id| map.nodes.get(&id.to_string()))
                    {
                        entry.resolved = Some(*new);
                        if let weft_dsr::model::NameOrId::Id(id) = &mut entry.written.v {
                            *id = *new;
                        }
                    }
                }
            }
        }
    }
    Ok(if problems.is_empty() {
        Ok(map)
    } else {
        Err(problems)
    })
}

#[cfg(test)]
mod tests;
