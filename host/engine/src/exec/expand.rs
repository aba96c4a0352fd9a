//! What a run starts with: the actions `RunElements` names (sheets, actions, folders), from
//! the plans the repository stores with each deployed sheet, and the words for a cycle among
//! them. No threads, no writes.

use super::error::NoSuchElement;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use weft_core::plan::{ActionPlan, Element};
use weft_core::plugins::Registry;
use weft_protocol::Selection;
use weft_repo::model::SheetPlans;
use weft_repo::{self as repo, SheetStore};
use weft_sdk::Dialect;

/// What a run starts with: each action's plan (objects with the dialects of their
/// connections), its sheet, and the version of the sheet's plans it was read from (the
/// instance names it, and runs it), in parallel and in run order.
#[derive(Debug, Default)]
pub struct Expanded {
    /// The plans.
    pub plans: Vec<ActionPlan>,
    /// Each plan's sheet.
    pub sheets: Vec<i64>,
    /// The version of each plan's sheet's plans.
    pub versions: Vec<i64>,
}

/// The actions the elements name, from the repository's current state: each sheet's stored
/// plans (read once per run), each object with the dialect of its connection. An element
/// that names nothing is the inner `Err`. The repository is asked once per
/// element (and once per sheet), never once per action.
pub fn expand(
    sheets_store: &dyn SheetStore,
    elements: &[Element],
    select: Selection,
    dialect: &dyn Fn(i64) -> Dialect,
) -> repo::Result<Result<Expanded, NoSuchElement>> {
    let mut sheets: Vec<(i64, Option<i64>)> = Vec::new();
    let mut stored: HashMap<i64, (i64, Arc<SheetPlans>)> = HashMap::new();
    // A sheet's plans, read once per run; false when the sheet does not exist.
    let load =
        |stored: &mut HashMap<i64, (i64, Arc<SheetPlans>)>, sheet: i64| -> repo::Result<bool> {
            if stored.contains_key(&sheet) {
                return Ok(true);
            }
            let Some(plans) = sheets_store.plans(sheet)? else {
                return Ok(false);
            };
            stored.insert(sheet, plans);
            Ok(true)
        };
    for e in elements {
        match e.kind {
            'S' => {
                if !load(&mut stored, e.id)? {
                    return Ok(Err(NoSuchElement::Sheet(e.id)));
                }
                sheets.push((e.id, None));
            }
            'A' => match sheets_store.node(e.id)? {
                Some((sheet, 0)) => sheets.push((sheet, Some(e.id))),
                Some((_, _)) => {
                    return Ok(Err(NoSuchElement::NotAnAction(e.id)));
                }
                None => {
                    return Ok(Err(NoSuchElement::Action(e.id)));
                }
            },
            'F' => match sheets_store.sheets_below(e.id)? {
                Some(ids) => sheets.extend(ids.into_iter().map(|s| (s, None))),
                None => {
                    return Ok(Err(NoSuchElement::Folder(e.id)));
                }
            },
            other => {
                return Ok(Err(NoSuchElement::Kind(other)));
            }
        }
    }
    // What follows the named actions, or what they follow, by the data graph: one look per
    // named action that an earlier look did not reach already.
    if select != Selection::Named {
        let downstream = select == Selection::Downstream;
        let mut named: Vec<i64> = Vec::new();
        for (sheet, only) in &sheets {
            match only {
                Some(a) => named.push(*a),
                None if load(&mut stored, *sheet)? => {
                    if let Some((_, plans)) = stored.get(sheet) {
                        named.extend(plans.plans().iter().map(|p| p.id));
                    }
                }
                None => {}
            }
        }
        let mut reached: HashSet<i64> = HashSet::new();
        let mut added = Vec::new();
        for seed in named {
            if reached.contains(&seed) {
                continue;
            }
            for (action, sheet) in sheets_store.related_actions(seed, downstream)? {
                if reached.insert(action) {
                    added.push((sheet, Some(action)));
                }
            }
        }
        sheets.extend(added);
    }
    let mut out = Expanded::default();
    let mut seen: HashSet<i64> = HashSet::new();
    for (sheet, only) in sheets {
        if !load(&mut stored, sheet)? {
            continue;
        }
        // The repository keeps a sheet's plans parsed between runs: each plan of this run
        // is a copy (made for a plan not seen yet in the run).
        let Some((version, plans)) = stored.get(&sheet) else {
            continue;
        };
        for p in plans
            .plans()
            .iter()
            .filter(|p| only.is_none_or(|a| p.id == a))
        {
            if seen.insert(p.id) {
                let mut plan = p.clone();
                plan.set_dialects(dialect);
                out.plans.push(plan);
                out.sheets.push(sheet);
                out.versions.push(*version);
            }
        }
    }
    Ok(Ok(out))
}

/// What a cycle of waiting actions `c` (each waits for the next) means: which object each
/// reads that the next writes.
pub fn describe_cycle(registry: &Registry, plans: &[ActionPlan], c: &[i64]) -> String {
    let by_id: HashMap<i64, &ActionPlan> = plans.iter().map(|p| (p.id, p)).collect();
    let mut parts = Vec::new();
    for w in c.windows(2) {
        let (waiter, writer) = (w[0], w[1]);
        let shared: Vec<String> = match (by_id.get(&waiter), by_id.get(&writer)) {
            (Some(a), Some(b)) => a
                .sources
                .iter()
                .filter(|o| {
                    b.targets
                        .iter()
                        .any(|t| b.identity(registry, t) == a.identity(registry, o))
                })
                .map(|o| format!("{} (connection {})", o.name, o.connection))
                .collect(),
            _ => Vec::new(),
        };
        let name = |id: i64| {
            by_id
                .get(&id)
                .map_or(String::new(), |p| format!(" `{}`", p.name))
        };
        parts.push(format!(
            "action {waiter}{} reads {} that action {writer}{} writes",
            name(waiter),
            shared.join(", "),
            name(writer)
        ));
    }
    format!(
        "the actions wait for each other in a cycle, so none can start: {}",
        parts.join("; ")
    )
}
