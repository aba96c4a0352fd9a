//! The deploy service behind `DeployRepository`: read the `.dsr` content, copy it into a
//! folder when `intoFolder` asks, validate it against the repository and write it, all in
//! one transaction. A rejected deploy and a dry run change nothing.

use crate::dsr::model::{At, Document};
use crate::dsr::{self, Detail, LineIndex, Path, Problem, Problems, Severity};
use crate::repo::{self, Change, ChangeKind, DeployWriter, IdTable, ObjectKind, Repository};
use crate::settings::Environment;
use crate::validate;
use std::collections::{BTreeMap, HashMap, HashSet};

mod cycles;

/// The deploy options of SPEC 4.2 and a deploy's report: `weft_protocol`'s types.
pub use weft_protocol::deploys::{IdMap, Options, Report, Touched};

impl From<Change> for Touched {
    fn from(c: Change) -> Self {
        Touched {
            kind: c.kind,
            id: c.id,
            sheet_id: c.sheet_id,
        }
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
    /// The repository failed.
    #[error(transparent)]
    Repo(#[from] repo::Error),
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
) -> Result<Report, Error> {
    if opts.into_folder.is_some() && env != Environment::Development {
        return Err(Error::IntoFolderRefused(env));
    }
    let index = LineIndex::new(content);
    let details = |problems: Problems| -> Vec<Detail> { problems.into_details(&index) };
    let (doc, mut problems) = dsr::parse(content);
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
    {
        problems.warning(
            "dsr.empty",
            "the document holds no folder, connection, sheet or batch; nothing was deployed",
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
    let kinds = repo.read(|w| validate::connection_kinds(&doc, w))?;
    let vopts = validate::Options {
        full: opts.validate,
        check_ids: opts.into_folder.is_none(),
    };
    validate::sheets(&doc, content, catalog, &kinds, vopts, &mut problems);
    if opts.validate && doc.complete && !problems.has_errors() {
        // Each connection's default schema: as the document deploys it, else as deployed.
        let mut schemas = crate::repo::SheetStore::connection_schemas(repo)?;
        for c in &doc.connections {
            match c.schema.as_ref().filter(|s| !s.v.is_empty()) {
                Some(s) => schemas.insert(c.id.v, s.v.clone()),
                None => schemas.remove(&c.id.v),
            };
        }
        object_warnings(&doc, catalog, &schemas, &mut problems);
    }
    repo.write(|w| {
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
        // ids are replaced afterwards, so they need not be free.
        validate::document(&doc, w, catalog, vopts, &mut problems)?;
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
        if !doc.batches.is_empty() {
            let time = crate::sched::clock::current();
            let now = time.clock.now();
            let td = crate::dsr::Path::root().key("transformationData");
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
        let changed = cycles::Changed {
            sheets: &sheets,
            batches: &batches,
        };
        cycles::check(&doc, &changed, w, catalog, &mut problems)?;
        if problems.has_errors() {
            return invalid(&mut problems);
        }
        let wrote = changes.iter().any(|c| c.change != ChangeKind::Unchanged);
        for c in changes {
            let list = match c.change {
                ChangeKind::Created => &mut report.created,
                ChangeKind::Updated => &mut report.updated,
                ChangeKind::Unchanged => &mut report.unchanged,
                ChangeKind::Deleted => &mut report.deleted,
            };
            list.push(c.into());
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
    for (i, s) in doc.sheets.iter().enumerate() {
        let objects: Vec<weft_sdk::ObjectRef> =
            crate::plan::objects_of(s, &|id| catalog.dialect(id, None));
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
        for n in &mut s.nodes {
            let Some(id) = fresh(1) else {
                return Ok(Err(vec![overflow()]));
            };
            nodes.insert(n.id.v, id);
            map.nodes.insert(n.id.v.to_string(), id);
            n.id.v = id;
        }
        for (j, e) in s.edges.iter_mut().enumerate() {
            let Some(id) = fresh(2) else {
                return Ok(Err(vec![overflow()]));
            };
            let old = e.id.v;
            map.edges.insert(old.to_string(), id);
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
    Ok(if problems.is_empty() {
        Ok(map)
    } else {
        Err(problems)
    })
}

#[cfg(test)]
mod tests;
