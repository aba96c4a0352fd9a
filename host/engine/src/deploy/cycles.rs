//! A deploy's look at the repository's data graph. It records which objects each changed
//! sheet's actions read and write with dependency `Y` (the repository keeps them beside the
//! sheets), then looks for a cycle through an action the deploy changed: a warning
//! (`deploy.cycle`), because no run holding every action of it can be ordered. A cycle
//! inside the elements of an enabled scheduled batch is an error (`deploy.cycle_in_batch`):
//! the batch's next start would be refused with `run.cycle`. A deployed batch whose
//! elements hold any cycle is refused the same way.
//!
//! The graph is read lazily, one action's neighbours at a time. A changed action that reads
//! nothing another writes, or writes nothing another reads, is on no cycle (a sheet that
//! only reads sources or only feeds reports costs two looks an action). A few others are
//! each searched from both ends at once (forward from what the action writes, backward
//! from what it reads), so a deploy reads about as much as the smaller side reaches; many
//! (a sheet of a long chain) are first sifted by one pass of Tarjan's algorithm over what
//! they reach, so that the cost stays linear.

use crate::validate::Catalog;
use std::collections::{BTreeMap, HashMap, HashSet};
use weft_core::plan::{self, ActionPlan, Element};
use weft_dsr::model::Document;
use weft_dsr::{Path, Problems};
use weft_repo::model::{ActionPlace, BatchScope, FlowRow, ObjectKey};
use weft_repo::{self as repo, DeployWriter};

/// The lines of the data graph for `plans`: each object read or written with dependency
/// `Y`, as its object type identifies it.
pub fn flow_rows(plans: &[ActionPlan], catalog: &dyn Catalog) -> Vec<FlowRow> {
    let key = |o: &weft_sdk::ObjectRef| {
        let (connection_id, schema, name) = catalog.identity(o);
        ObjectKey {
            connection_id,
            schema,
            name,
        }
    };
    let mut rows = Vec::new();
    for p in plans {
        let read = p.sources.iter().map(|o| (o, false));
        let written = p.targets.iter().map(|o| (o, true));
        for (o, writes) in read.chain(written) {
            if o.orders() {
                rows.push(FlowRow {
                    action_id: p.id,
                    object: key(&p.object_ref(o)),
                    writes,
                });
            }
        }
    }
    rows.sort();
    rows.dedup();
    rows
}

/// What a deploy changed, for [`check`].
pub struct Changed<'a> {
    /// The sheets created (`None`) or updated (with the nodes the new version no longer
    /// holds), by id.
    pub sheets: &'a HashMap<i64, Option<Vec<i64>>>,
    /// The batches created or updated, by id.
    pub batches: &'a HashSet<i64>,
}

/// Records the data graph of the changed sheets (and of sheets stored before there was
/// one), then adds a warning for each cycle through a changed action and an error for each
/// cycle inside an enabled batch, each at its place in `doc`.
///
/// # Errors
///
/// A repository error.
pub fn check(
    doc: &Document,
    changed: &Changed<'_>,
    w: &dyn DeployWriter,
    catalog: &dyn Catalog,
    problems: &mut Problems,
) -> repo::Result<()> {
    let dialect = |id| catalog.dialect(id, None);
    let td = Path::root().key("transformationData");
    // Each changed action's place in the document.
    let mut at: BTreeMap<i64, (usize, usize)> = BTreeMap::new();
    // Whether each reads and whether it writes an object that orders actions.
    let mut ends: HashMap<i64, (bool, bool)> = HashMap::new();
    for (i, s) in doc.sheets.iter().enumerate() {
        let Some(gone) = changed.sheets.get(&s.id.v) else {
            continue;
        };
        let plans = plan::actions_of(s, &dialect);
        let rows = flow_rows(&plans, catalog);
        // An updated sheet's earlier lines: of its actions, and of those it no longer holds.
        let clear: Vec<i64> = match gone {
            Some(gone) => plans
                .iter()
                .map(|p| p.id)
                .chain(gone.iter().copied())
                .collect(),
            None => Vec::new(),
        };
        w.record_flow(&clear, &rows)?;
        for r in &rows {
            if let Some(j) = s.nodes.iter().position(|n| n.id.v == r.action_id) {
                at.insert(r.action_id, (i, j));
            }
            let e = ends.entry(r.action_id).or_default();
            if r.writes {
                e.1 = true;
            } else {
                e.0 = true;
            }
        }
    }
    for (sheet, stored) in w.unrecorded_flow()? {
        let mut plans = stored.unwrap_or_default();
        for p in &mut plans {
            p.set_dialects(&dialect);
        }
        w.record_unrecorded_flow(sheet, &flow_rows(&plans, catalog))?;
    }
    let node_path = |(i, j): (usize, usize)| td.key("sheets").index(i).key("nodes").index(j);
    let mut graph = Graph::new(w);
    let mut cycles: Vec<(i64, Vec<Step>)> = Vec::new();
    let mut seen: HashSet<i64> = HashSet::new();
    // Only an action that both reads what another writes and writes what another reads can
    // be on a cycle (one that reads or writes nothing that orders actions is not even
    // looked up). Of many such, one pass over what they reach finds those on a cycle
    // (a search from each would cost the square of a long chain's length); a few are
    // searched from both ends each, which reads less of a large graph.
    let mut candidates: Vec<i64> = Vec::new();
    for &action in at.keys() {
        if ends.get(&action) == Some(&(true, true))
            && !graph.neighbours(action, true)?.is_empty()
            && !graph.neighbours(action, false)?.is_empty()
        {
            candidates.push(action);
        }
    }
    let on_cycles = if candidates.len() > SEARCHES {
        Some(graph.on_cycles(candidates.iter().copied())?)
    } else {
        None
    };
    for &action in &candidates {
        if seen.contains(&action) || on_cycles.as_ref().is_some_and(|on| !on.contains(&action)) {
            continue;
        }
        let place = at[&action];
        if let Some(cycle) = graph.cycle_through(action, &Scope::All)? {
            seen.extend(cycle.iter().map(|s| s.reader));
            problems.warning(
                "deploy.cycle",
                format!(
                    "action {action} is now in a cycle of the repository's data: {}; no run that holds all of these actions can order them (it is refused with run.cycle)",
                    graph.describe(&cycle)?
                ),
                doc.sheets[place.0].nodes[place.1].span,
                &node_path(place),
            );
            cycles.push((action, cycle));
        }
    }
    if cycles.is_empty() && changed.batches.is_empty() {
        return Ok(());
    }
    for batch in w.batch_scopes()?.into_iter().filter(|b| b.enabled) {
        let scope = Scope::of(&batch, w)?;
        let deployed = doc
            .batches
            .iter()
            .position(|b| b.id.v == batch.id && changed.batches.contains(&b.id.v));
        let found = match deployed {
            Some(_) => graph.any_cycle(&batch, &scope)?,
            None => {
                let mut found = None;
                for (action, _) in &cycles {
                    if graph.member(&scope, *action)? {
                        found = graph.cycle_through(*action, &scope)?;
                        if found.is_some() {
                            break;
                        }
                    }
                }
                found
            }
        };
        let Some(cycle) = found else { continue };
        let message = format!(
            "batch {} `{}` runs every action of a cycle in the repository's data, so its next start would be refused (run.cycle): {}; break the cycle, or leave one of these actions out of the batch's elements",
            batch.id,
            batch.name,
            graph.describe(&cycle)?
        );
        match deployed {
            Some(k) => problems.error(
                "deploy.cycle_in_batch",
                message,
                doc.batches[k].span,
                &td.key("batches").index(k).key("elements"),
            ),
            None => {
                // At the first changed action of the cycle.
                let place = cycle.iter().find_map(|s| at.get(&s.reader).copied());
                let (span, path) = match place {
                    Some(p) => (doc.sheets[p.0].nodes[p.1].span, node_path(p)),
                    None => (weft_dsr::Span::default(), td.key("sheets")),
                };
                problems.error("deploy.cycle_in_batch", message, span, &path);
            }
        }
    }
    Ok(())
}

/// Up to this many changed actions that may be on a cycle are each searched from both ends;
/// more are first sifted by one pass over what they reach ([`Graph::on_cycles`]).
pub(super) const SEARCHES: usize = 32;

/// One edge of the data graph: `writer` writes `object`, which `reader` reads.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Step {
    writer: i64,
    object: ObjectKey,
    reader: i64,
}

/// Which actions a search may pass through.
enum Scope {
    /// The whole repository.
    All,
    /// A batch's elements: actions by id, sheets by id, folders by path (and below).
    Batch {
        actions: HashSet<i64>,
        sheets: HashSet<i64>,
        folders: Vec<String>,
    },
}

impl Scope {
    fn of(batch: &BatchScope, w: &dyn DeployWriter) -> repo::Result<Scope> {
        let (mut actions, mut sheets, mut folders) = (HashSet::new(), HashSet::new(), Vec::new());
        for e in &batch.elements {
            match e.kind {
                'A' => {
                    actions.insert(e.id);
                }
                'S' => {
                    sheets.insert(e.id);
                }
                'F' => folders.extend(w.folder_path(e.id)?),
                _ => {}
            }
        }
        Ok(Scope::Batch {
            actions,
            sheets,
            folders,
        })
    }
}

/// The state of [`Graph::on_cycles`]: Tarjan's algorithm with the path as a stack of its own.
#[derive(Default)]
struct Tarjan {
    /// Each visited action's index and the lowest index it reaches on the stack.
    marks: HashMap<i64, (usize, usize)>,
    stack: Vec<i64>,
    on_stack: HashSet<i64>,
    /// The path being explored: each action with its successors and the next to take.
    path: Vec<(i64, Vec<i64>, usize)>,
    /// The actions found on a cycle.
    out: HashSet<i64>,
}

impl Tarjan {
    fn enter(&mut self, graph: &mut Graph<'_>, v: i64) -> repo::Result<()> {
        let n = self.marks.len();
        self.marks.insert(v, (n, n));
        self.stack.push(v);
        self.on_stack.insert(v);
        let next = graph
            .neighbours(v, true)?
            .into_iter()
            .map(|(w, _)| w)
            .collect();
        self.path.push((v, next, 0));
        Ok(())
    }

    fn lower(&mut self, u: i64, to: usize) {
        if let Some(m) = self.marks.get_mut(&u) {
            m.1 = m.1.min(to);
        }
    }

    /// `u` has no successor left: its component is closed if it is the component's root.
    fn leave(&mut self, u: i64) {
        self.path.pop();
        let Some(&(index, low)) = self.marks.get(&u) else {
            return;
        };
        if let Some(&(parent, _, _)) = self.path.last() {
            self.lower(parent, low);
        }
        if low != index {
            return;
        }
        let mut component = Vec::new();
        while let Some(w) = self.stack.pop() {
            self.on_stack.remove(&w);
            component.push(w);
            if w == u {
                break;
            }
        }
        if component.len() > 1 {
            self.out.extend(component);
        }
    }
}

/// The data graph as far as a deploy has read it.
struct Graph<'w> {
    w: &'w dyn DeployWriter,
    next: HashMap<(i64, bool), Vec<(i64, ObjectKey)>>,
    places: HashMap<i64, Option<ActionPlace>>,
}

impl<'w> Graph<'w> {
    fn new(w: &'w dyn DeployWriter) -> Self {
        Graph {
            w,
            next: HashMap::new(),
            places: HashMap::new(),
        }
    }

    /// With `forward`, the actions that read what `action` writes; else those that write
    /// what it reads; each with the object between.
    fn neighbours(&mut self, action: i64, forward: bool) -> repo::Result<Vec<(i64, ObjectKey)>> {
        if let Some(n) = self.next.get(&(action, forward)) {
            return Ok(n.clone());
        }
        let n = self.w.flow_neighbours(action, forward)?;
        self.next.insert((action, forward), n.clone());
        Ok(n)
    }

    fn place(&mut self, action: i64) -> repo::Result<Option<ActionPlace>> {
        if let Some(p) = self.places.get(&action) {
            return Ok(p.clone());
        }
        let p = self.w.action_place(action)?;
        self.places.insert(action, p.clone());
        Ok(p)
    }

    fn member(&mut self, scope: &Scope, action: i64) -> repo::Result<bool> {
        let Scope::Batch {
            actions,
            sheets,
            folders,
        } = scope
        else {
            return Ok(true);
        };
        if actions.contains(&action) {
            return Ok(true);
        }
        let Some(place) = self.place(action)? else {
            return Ok(false);
        };
        Ok(sheets.contains(&place.sheet_id)
            || folders.iter().any(|f| {
                f == "/"
                    || place.folder == *f
                    || place
                        .folder
                        .strip_prefix(f.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            }))
    }

    /// Of the actions reachable from `starts` (reading what one of them writes, and so on),
    /// those on a cycle of the whole repository's data: in a strongly connected component of
    /// more than one action, or reading what they write. Tarjan's algorithm, iterative (a
    /// long chain cannot overflow the stack); each action's neighbours are read once.
    fn on_cycles(&mut self, starts: impl IntoIterator<Item = i64>) -> repo::Result<HashSet<i64>> {
        let mut t = Tarjan::default();
        for start in starts {
            if t.marks.contains_key(&start) {
                continue;
            }
            t.enter(self, start)?;
            while let Some((u, next, i)) = t.path.last_mut() {
                let u = *u;
                if let Some(&v) = next.get(*i) {
                    *i += 1;
                    if v == u {
                        t.out.insert(u);
                    }
                    match t.marks.get(&v).copied() {
                        None => t.enter(self, v)?,
                        Some((index, _)) if t.on_stack.contains(&v) => t.lower(u, index),
                        Some(_) => {}
                    }
                    continue;
                }
                t.leave(u);
            }
        }
        Ok(t.out)
    }

    /// A cycle through `start` within `scope`, as its steps from `start` round to it; the
    /// search runs from both ends and stops when either side has nothing left to reach.
    fn cycle_through(&mut self, start: i64, scope: &Scope) -> repo::Result<Option<Vec<Step>>> {
        // Reached forward: action -> (the action before it, the object between).
        let mut ahead: HashMap<i64, Option<(i64, ObjectKey)>> = HashMap::from([(start, None)]);
        // Reached backward: action -> (the action after it, the object between).
        let mut behind: HashMap<i64, Option<(i64, ObjectKey)>> = HashMap::from([(start, None)]);
        let (mut front_ahead, mut front_behind) = (vec![start], vec![start]);
        while !front_ahead.is_empty() && !front_behind.is_empty() {
            let forward = front_ahead.len() <= front_behind.len();
            let frontier = std::mem::take(if forward {
                &mut front_ahead
            } else {
                &mut front_behind
            });
            let mut reached = Vec::new();
            for u in frontier {
                for (v, object) in self.neighbours(u, forward)? {
                    if !self.member(scope, v)? {
                        continue;
                    }
                    let (step, other, mine) = if forward {
                        let step = Step {
                            writer: u,
                            object: object.clone(),
                            reader: v,
                        };
                        (step, &behind, &mut ahead)
                    } else {
                        let step = Step {
                            writer: v,
                            object: object.clone(),
                            reader: u,
                        };
                        (step, &ahead, &mut behind)
                    };
                    if other.contains_key(&v) {
                        return Ok(Some(join(&ahead, &behind, step)));
                    }
                    if let std::collections::hash_map::Entry::Vacant(e) = mine.entry(v) {
                        e.insert(Some((u, object)));
                        reached.push(v);
                    }
                }
            }
            if forward {
                front_ahead = reached;
            } else {
                front_behind = reached;
            }
        }
        Ok(None)
    }

    /// Any cycle among the actions of `batch` (read whole: a batch's deploy is rare).
    fn any_cycle(&mut self, batch: &BatchScope, scope: &Scope) -> repo::Result<Option<Vec<Step>>> {
        let mut members: Vec<i64> = Vec::new();
        for e in &batch.elements {
            match e {
                Element { kind: 'A', id } => members.push(*id),
                Element { kind: 'S', id } => members.extend(self.w.flow_actions_in_sheet(*id)?),
                Element { kind: 'F', id } => {
                    for sheet in self.w.sheets_below(*id)?.unwrap_or_default() {
                        members.extend(self.w.flow_actions_in_sheet(sheet)?);
                    }
                }
                _ => {}
            }
        }
        members.sort_unstable();
        members.dedup();
        let mut next: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
        let mut objects: HashMap<(i64, i64), ObjectKey> = HashMap::new();
        for &a in &members {
            let mut to = Vec::new();
            for (v, object) in self.neighbours(a, true)? {
                if self.member(scope, v)? && members.binary_search(&v).is_ok() {
                    objects.entry((a, v)).or_insert(object);
                    to.push(v);
                }
            }
            to.dedup();
            next.insert(a, to);
        }
        let Some(cycle) = plan::find_cycle(members.iter().copied(), |a| {
            next.get(&a).map_or(&[][..], Vec::as_slice)
        }) else {
            return Ok(None);
        };
        Ok(Some(
            cycle
                .windows(2)
                .map(|p| Step {
                    writer: p[0],
                    object: objects.get(&(p[0], p[1])).cloned().unwrap_or(ObjectKey {
                        connection_id: 0,
                        schema: String::new(),
                        name: String::new(),
                    }),
                    reader: p[1],
                })
                .collect(),
        ))
    }

    /// The words for a cycle: who writes what that whom reads, round the cycle.
    fn describe(&mut self, cycle: &[Step]) -> repo::Result<String> {
        let mut parts = Vec::with_capacity(cycle.len());
        for s in cycle {
            let writer = self.name(s.writer)?;
            let reader = self.name(s.reader)?;
            let o = &s.object;
            let object = if o.schema.is_empty() {
                o.name.clone()
            } else {
                format!("{}.{}", o.schema, o.name)
            };
            parts.push(format!(
                "{writer} writes {object} (connection {}), which {reader} reads",
                o.connection_id
            ));
        }
        Ok(parts.join("; "))
    }

    fn name(&mut self, action: i64) -> repo::Result<String> {
        Ok(match self.place(action)? {
            Some(p) => format!("action {action} `{}` (sheet {})", p.name, p.sheet_id),
            None => format!("action {action}"),
        })
    }
}

/// The cycle through the start of both searches that `middle` closes: its writer was
/// reached forward (or is the start), its reader backward (or is the start).
fn join(
    ahead: &HashMap<i64, Option<(i64, ObjectKey)>>,
    behind: &HashMap<i64, Option<(i64, ObjectKey)>>,
    middle: Step,
) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut node = middle.writer;
    while let Some(Some((before, object))) = ahead.get(&node) {
        steps.push(Step {
            writer: *before,
            object: object.clone(),
            reader: node,
        });
        node = *before;
    }
    steps.reverse();
    let mut node = middle.reader;
    steps.push(middle);
    while let Some(Some((after, object))) = behind.get(&node) {
        steps.push(Step {
            writer: node,
            object: object.clone(),
            reader: *after,
        });
        node = *after;
    }
    steps
}
