//! `GetLineageGraph {table?, schema?, depth?}`: the repository's data graph, whole or
//! upstream and downstream of a table, for the web page's lineage graph.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{ENVELOPE, object, optional_whole, text};
use crate::api::state::AppState;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use weft_dsr::Problems;
use weft_dsr::value::Value;
use weft_protocol::commands::{
    GetLineageGraph, GraphAction, LineageEdge, LineageGraph, LineageTable,
};
use weft_repo::model::{LineageRow, ObjectKey};

/// The most lines of the data graph read for one answer.
const MOST_LINES: i64 = 200_000;

impl Handler for GetLineageGraph {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the GetLineageGraph payload {table?, schema?, depth?}",
            problems,
        )?;
        let mut ok = true;
        let mut name = |key: &'static str, fields: &mut weft_dsr::fields::Fields<'_>| {
            let (v, p) = fields
                .optional(key)
                .filter(|(v, _)| !matches!(v.value, Value::Null))?;
            match text(v, &p, key, problems) {
                Some(t) if !t.trim().is_empty() && t.chars().count() <= 200 => {
                    Some(t.trim().to_owned())
                }
                Some(_) => {
                    problems.error(
                        ENVELOPE,
                        format!("`{key}` is a name: 1 to 200 characters"),
                        v.span,
                        &p,
                    );
                    ok = false;
                    None
                }
                None => {
                    ok = false;
                    None
                }
            }
        };
        let table = name("table", &mut fields);
        let schema = name("schema", &mut fields);
        let depth = optional_whole(&mut fields, "depth", 1..=10, &mut ok, problems).unwrap_or(2);
        fields.finish(problems);
        ok.then_some(GetLineageGraph {
            table,
            schema,
            depth,
        })
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<LineageGraph, ApiError> {
        let repo = Arc::clone(state.executor.repo());
        let lines =
            tokio::task::spawn_blocking(move || repo.lineage_graph(MOST_LINES + 1)).await??;
        let read_all = lines.len() as i64 <= MOST_LINES;
        let mut graph = around(&lines, &self);
        graph.truncated |= !read_all;
        Ok(graph)
    }
}

/// A table's identity in any case.
fn key(o: &ObjectKey) -> (i64, String, String) {
    (
        o.connection_id,
        o.schema.to_lowercase(),
        o.name.to_lowercase(),
    )
}

/// The graph of `lines` that `asked` wants: all of it, or what lies upstream and downstream
/// of its table within its depth.
fn around(lines: &[LineageRow], asked: &GetLineageGraph) -> LineageGraph {
    type Key = (i64, String, String);
    let mut writers: HashMap<Key, Vec<usize>> = HashMap::new();
    let mut readers: HashMap<Key, Vec<usize>> = HashMap::new();
    let mut by_action: HashMap<i64, Vec<usize>> = HashMap::new();
    for (i, l) in lines.iter().enumerate() {
        let k = key(&l.object);
        if l.writes { &mut writers } else { &mut readers }
            .entry(k)
            .or_default()
            .push(i);
        by_action.entry(l.action_id).or_default().push(i);
    }
    // The lines kept, by their place in `lines`.
    let kept: BTreeSet<usize> = match &asked.table {
        None => (0..lines.len()).collect(),
        Some(table) => {
            let wanted = table.to_lowercase();
            let schema = asked.schema.as_ref().map(|s| s.to_lowercase());
            let centre: BTreeSet<Key> = writers
                .keys()
                .chain(readers.keys())
                .filter(|k| k.2 == wanted && schema.as_ref().is_none_or(|s| *s == k.1))
                .cloned()
                .collect();
            let mut kept = BTreeSet::new();
            // Upstream: a table's writers and what they read; downstream: its readers and
            // what they write; `depth` actions each way.
            for (towards, onwards) in [(&writers, false), (&readers, true)] {
                let mut tables = centre.clone();
                let mut seen: BTreeSet<Key> = centre.clone();
                // Each action's lines are walked once a direction, however many of the
                // tables reached it reads or writes.
                let mut walked: BTreeSet<i64> = BTreeSet::new();
                for _ in 0..asked.depth {
                    let mut next = BTreeSet::new();
                    for t in &tables {
                        for &i in towards.get(t).map_or(&[][..], Vec::as_slice) {
                            kept.insert(i);
                            if !walked.insert(lines[i].action_id) {
                                continue;
                            }
                            let of_action = by_action.get(&lines[i].action_id);
                            for &j in of_action.map_or(&[][..], Vec::as_slice) {
                                if lines[j].writes == onwards {
                                    kept.insert(j);
                                    let k = key(&lines[j].object);
                                    if seen.insert(k.clone()) {
                                        next.insert(k);
                                    }
                                }
                            }
                        }
                    }
                    tables = next;
                }
            }
            kept
        }
    };
    let mut graph = LineageGraph {
        tables: Vec::new(),
        actions: Vec::new(),
        edges: Vec::new(),
        truncated: false,
    };
    let mut table_at: BTreeMap<Key, usize> = BTreeMap::new();
    let mut actions: BTreeMap<i64, GraphAction> = BTreeMap::new();
    for i in kept {
        if graph.edges.len() >= GetLineageGraph::MAX_EDGES {
            graph.truncated = true;
            break;
        }
        let l = &lines[i];
        let at = *table_at.entry(key(&l.object)).or_insert_with(|| {
            graph.tables.push(LineageTable {
                connection_id: l.object.connection_id,
                schema: l.object.schema.clone(),
                table: l.object.name.clone(),
            });
            graph.tables.len() - 1
        });
        actions.entry(l.action_id).or_insert_with(|| GraphAction {
            action_id: l.action_id,
            action_name: l.action_name.clone(),
            sheet_id: l.sheet_id,
            sheet_name: l.sheet_name.clone(),
            folder: l.folder.clone(),
        });
        graph.edges.push(LineageEdge {
            action_id: l.action_id,
            table: at,
            writes: l.writes,
        });
    }
    graph.actions = actions.into_values().collect();
    graph
}
