//! The plan of a run: what an action is made of, taken from a sheet ([`ActionPlan`]:
//! module, text, attributes, sources and targets), the order actions wait for each other in
//! ([`dependencies`]), the one cycle finder of validation and runs ([`find_cycle`]), and the
//! stored form of a plan ([`StoredPlan`]) kept with each deployed sheet and each instance.
//! Used by validate, deploy, exec and the scheduler alike; it knows no repository and no
//! running.

use crate::plugins::Registry;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use weft_dsr::model::{Node, NodeAttributes, Sheet};
use weft_sdk::{AttributeValue, Dialect, ObjectRef};

/// One element of `elementList` (a run's or a scheduled batch's), as the protocol has it.
pub use weft_protocol::Element;

/// An action with everything its module needs.
#[derive(Debug, Clone)]
pub struct ActionPlan {
    /// The action node's id.
    pub id: i64,
    /// Its index in the sheet's nodes (for paths in messages).
    pub index: usize,
    /// Its name.
    pub name: String,
    /// Its module.
    pub module: String,
    /// The action text.
    pub text: Option<String>,
    /// Attributes beyond table A.
    pub attributes: Vec<(String, AttributeValue)>,
    /// Source objects (edges object -> action), with their `dependency` letters.
    pub sources: Vec<(ObjectRef, String)>,
    /// Target objects (edges action -> object).
    pub targets: Vec<(ObjectRef, String)>,
    /// The default schema of each of its connections that names one (the connection's
    /// `schema`), set by whoever runs it from the repository; empty in a fresh plan.
    pub schemas: BTreeMap<i64, String>,
}

impl ActionPlan {
    /// The attributes as they cross the plugin boundary: those the action writes, and the
    /// default of each one `module` declares that it does not write.
    pub fn sdk_attributes(
        &self,
        module: Option<&weft_sdk::ModuleInfo>,
    ) -> Vec<(String, AttributeValue)> {
        let mut all = self.attributes.clone();
        for spec in module.map_or(&[][..], |m| m.attributes()) {
            if !self.attributes.iter().any(|(k, _)| k == spec.name())
                && let Some(v) = spec.default_value()
            {
                all.push((spec.name().to_owned(), v));
            }
        }
        all
    }

    /// The source objects as they cross the plugin boundary.
    pub fn source_refs(&self) -> Vec<ObjectRef> {
        self.sources.iter().map(|(o, _)| o.clone()).collect()
    }

    /// The target objects as they cross the plugin boundary.
    pub fn target_refs(&self) -> Vec<ObjectRef> {
        self.targets.iter().map(|(o, _)| o.clone()).collect()
    }

    /// The connections the action writes: those of its targets, or, with none, that of its
    /// first source (an action without targets runs where it reads).
    pub fn written_connections(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self
            .targets
            .iter()
            .map(|(o, _)| o.connection_id())
            .collect();
        if ids.is_empty() {
            ids.extend(self.sources.first().map(|(o, _)| o.connection_id()));
        }
        ids
    }
}

/// The object nodes of `sheet`, as plugins see them.
pub fn objects_of(sheet: &Sheet, dialect: &dyn Fn(i64) -> Dialect) -> Vec<ObjectRef> {
    sheet
        .nodes
        .iter()
        .filter_map(|n| object_ref(n, dialect))
        .collect()
}

/// Object node `n` as plugins see it; `None` for an action node.
fn object_ref(n: &Node, dialect: &dyn Fn(i64) -> Dialect) -> Option<ObjectRef> {
    let o = n.object()?;
    Some(ObjectRef::new(
        n.id.v,
        o.object_type_id.v,
        o.connection_id.v,
        &o.field1.v,
        o.field2.as_deref(),
        dialect(o.connection_id.v),
    ))
}

/// The actions of `sheet` with their sources and targets; `dialect` names the dialect of a
/// connection number.
pub fn actions_of(sheet: &Sheet, dialect: &dyn Fn(i64) -> Dialect) -> Vec<ActionPlan> {
    let objects: HashMap<i64, (ObjectRef, String)> = sheet
        .nodes
        .iter()
        .filter_map(|n| {
            let dependency = n.object()?.dependency.v.clone();
            Some((n.id.v, (object_ref(n, dialect)?, dependency)))
        })
        .collect();
    // Each action's edges in and out, in the sheet's edge order: one pass over the edges,
    // so a sheet of n actions costs O(n + edges), not O(n * edges).
    let mut into: HashMap<i64, Vec<i64>> = HashMap::new();
    let mut out_of: HashMap<i64, Vec<i64>> = HashMap::new();
    for e in &sheet.edges {
        into.entry(e.to.v).or_default().push(e.from.v);
        out_of.entry(e.from.v).or_default().push(e.to.v);
    }
    let linked = |edges: &HashMap<i64, Vec<i64>>, node: i64| -> Vec<(ObjectRef, String)> {
        edges
            .get(&node)
            .map(|ends| {
                ends.iter()
                    .filter_map(|id| objects.get(id).cloned())
                    .collect()
            })
            .unwrap_or_default()
    };
    sheet
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(index, n)| {
            let NodeAttributes::Action(a) = &n.attributes else {
                return None;
            };
            let sources = linked(&into, n.id.v);
            let targets = linked(&out_of, n.id.v);
            Some(ActionPlan {
                id: n.id.v,
                index,
                name: a.name.v.clone(),
                module: a.module.v.clone(),
                text: a.action.as_ref().map(|t| t.v.clone()),
                attributes: a
                    .extra
                    .iter()
                    .filter_map(|(k, v)| Some((k.v.clone(), attribute_value(&v.value)?)))
                    .collect(),
                sources,
                targets,
                schemas: BTreeMap::new(),
            })
        })
        .collect()
}

fn attribute_value(v: &weft_dsr::value::Value) -> Option<AttributeValue> {
    use weft_dsr::value::Value;
    match v {
        Value::Bool(b) => Some(AttributeValue::bool(*b)),
        Value::Int(i) => Some(AttributeValue::integer(*i)),
        Value::String(s) => Some(AttributeValue::string(s.as_str())),
        _ => None,
    }
}

/// The identity of an object as its object type sees it (connection, schema, name): two
/// references with one identity are the same object.
pub fn identity(registry: &Registry, o: &ObjectRef) -> (i64, String, String) {
    if let Some(t) = registry.object_type(o.object_type_id())
        && let Ok(id) = t.object_type.identity(o).into_result()
    {
        return (
            id.connection_id(),
            id.schema().to_string(),
            id.name().to_string(),
        );
    }
    plain_identity(o)
}

/// The identity of an object whose type is not loaded: the connection, and the schema and
/// name in lower case.
pub fn plain_identity(o: &ObjectRef) -> (i64, String, String) {
    let schema = o
        .schema()
        .as_ref()
        .map(|s| s.to_lowercase())
        .unwrap_or_default();
    (o.connection_id(), schema, o.name().to_lowercase())
}

/// For each action, the actions it waits for: X waits for Y when a `Y`-dependency source of
/// X is a `Y`-dependency target of Y (never for itself).
pub fn dependencies(registry: &Registry, plans: &[ActionPlan]) -> BTreeMap<i64, Vec<i64>> {
    let mut writers: HashMap<(i64, String, String), Vec<i64>> = HashMap::new();
    for p in plans {
        for (o, dep) in &p.targets {
            if dep == "Y" {
                writers.entry(identity(registry, o)).or_default().push(p.id);
            }
        }
    }
    let mut deps = BTreeMap::new();
    for p in plans {
        let mut d: Vec<i64> = p
            .sources
            .iter()
            .filter(|(_, dep)| dep == "Y")
            .flat_map(|(o, _)| {
                writers
                    .get(&identity(registry, o))
                    .cloned()
                    .unwrap_or_default()
            })
            .filter(|w| *w != p.id)
            .collect();
        d.sort_unstable();
        d.dedup();
        deps.insert(p.id, d);
    }
    deps
}

/// A cycle of the directed graph over `nodes` (visited in the order given) whose edges
/// `next` gives, as the nodes along it with the first repeated at the end. Edges to nodes
/// outside `nodes` are ignored. Iterative, so a long chain cannot overflow the stack.
pub fn find_cycle<'a>(
    nodes: impl IntoIterator<Item = i64>,
    next: impl Fn(i64) -> &'a [i64],
) -> Option<Vec<i64>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let order: Vec<i64> = nodes.into_iter().collect();
    let mut mark: HashMap<i64, Mark> = order.iter().map(|&n| (n, Mark::New)).collect();
    for n in order {
        if mark.get(&n) != Some(&Mark::New) {
            continue;
        }
        // Depth first; `stack` holds (node, index of its next successor).
        let mut stack: Vec<(i64, usize)> = vec![(n, 0)];
        mark.insert(n, Mark::Open);
        while let Some(&mut (node, ref mut i)) = stack.last_mut() {
            if let Some(&to) = next(node).get(*i) {
                *i += 1;
                match mark.get(&to).copied() {
                    Some(Mark::New) => {
                        mark.insert(to, Mark::Open);
                        stack.push((to, 0));
                    }
                    Some(Mark::Open) => {
                        let from = stack.iter().position(|(id, _)| *id == to).unwrap_or(0);
                        let mut cycle: Vec<i64> = stack[from..].iter().map(|(id, _)| *id).collect();
                        cycle.push(to);
                        return Some(cycle);
                    }
                    _ => {}
                }
            } else {
                mark.insert(node, Mark::Done);
                stack.pop();
            }
        }
    }
    None
}

/// A cycle among the actions of `deps` (each action's list of those it waits for).
pub fn dependency_cycle(deps: &BTreeMap<i64, Vec<i64>>) -> Option<Vec<i64>> {
    find_cycle(deps.keys().copied(), |a| {
        deps.get(&a).map_or(&[][..], Vec::as_slice)
    })
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum Attr {
    Bool(bool),
    String(String),
    Integer(i64),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Obj {
    node: i64,
    object_type: i64,
    connection: i64,
    name: String,
    schema: Option<String>,
    dependency: String,
}

/// An action's plan as stored: with each deployed sheet (so that a run reads its sheets'
/// plans without reading their definitions again) and with each instance (the repository
/// state the run came from). Objects are stored without their dialect, which comes from the
/// key file when the plan is used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredPlan {
    id: i64,
    name: String,
    module: String,
    text: Option<String>,
    attributes: Vec<(String, Attr)>,
    sources: Vec<Obj>,
    targets: Vec<Obj>,
}

impl StoredPlan {
    /// The module that runs the action.
    pub fn module(&self) -> &str {
        &self.module
    }
}

fn obj_out(o: &ObjectRef, dep: &str) -> Obj {
    Obj {
        node: o.node_id(),
        object_type: o.object_type_id(),
        connection: o.connection_id(),
        name: o.name().to_owned(),
        schema: o.schema().map(str::to_owned),
        dependency: dep.to_owned(),
    }
}

fn obj_in(o: &Obj, dialect: &dyn Fn(i64) -> Dialect) -> (ObjectRef, String) {
    (
        ObjectRef::new(
            o.node,
            o.object_type,
            o.connection,
            &o.name,
            o.schema.as_deref(),
            dialect(o.connection),
        ),
        o.dependency.clone(),
    )
}

impl StoredPlan {
    /// The stored form of `p`.
    pub fn from_plan(p: &ActionPlan) -> Self {
        StoredPlan {
            id: p.id,
            name: p.name.clone(),
            module: p.module.clone(),
            text: p.text.clone(),
            attributes: p
                .attributes
                .iter()
                .map(|(k, v)| {
                    // The host makes every attribute value, so each is of a kind it knows.
                    let a = match (v.as_bool(), v.as_integer()) {
                        (Some(b), _) => Attr::Bool(b),
                        (_, Some(i)) => Attr::Integer(i),
                        _ => Attr::String(v.as_str().unwrap_or_default().to_owned()),
                    };
                    (k.clone(), a)
                })
                .collect(),
            sources: p.sources.iter().map(|(o, d)| obj_out(o, d)).collect(),
            targets: p.targets.iter().map(|(o, d)| obj_out(o, d)).collect(),
        }
    }

    /// The plan again, each object with the dialect of its connection.
    pub fn to_plan(&self, dialect: &dyn Fn(i64) -> Dialect) -> ActionPlan {
        ActionPlan {
            id: self.id,
            index: 0,
            name: self.name.clone(),
            module: self.module.clone(),
            text: self.text.clone(),
            attributes: self
                .attributes
                .iter()
                .map(|(k, a)| {
                    let v = match a {
                        Attr::Bool(b) => AttributeValue::bool(*b),
                        Attr::String(s) => AttributeValue::string(s.as_str()),
                        Attr::Integer(i) => AttributeValue::integer(*i),
                    };
                    (k.clone(), v)
                })
                .collect(),
            sources: self.sources.iter().map(|o| obj_in(o, dialect)).collect(),
            targets: self.targets.iter().map(|o| obj_in(o, dialect)).collect(),
            schemas: BTreeMap::new(),
        }
    }

    /// The action's id.
    pub fn id(&self) -> i64 {
        self.id
    }
}

/// The stored plans of a sheet's actions, in node order.
pub fn stored_plans(sheet: &Sheet) -> Vec<StoredPlan> {
    actions_of(sheet, &|_| Dialect::Unknown)
        .iter()
        .map(StoredPlan::from_plan)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(i64, i64)]) -> BTreeMap<i64, Vec<i64>> {
        let mut g: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
        for &(a, b) in edges {
            g.entry(a).or_default().push(b);
            g.entry(b).or_default();
        }
        g
    }

    #[test]
    fn finds_a_cycle_with_its_path_and_none_in_a_dag() {
        assert_eq!(
            dependency_cycle(&graph(&[(1, 2), (2, 3), (3, 1), (4, 1)])),
            Some(vec![1, 2, 3, 1])
        );
        assert_eq!(
            dependency_cycle(&graph(&[(1, 2), (1, 3), (2, 4), (3, 4)])),
            None
        );
        assert_eq!(dependency_cycle(&graph(&[(5, 5)])), Some(vec![5, 5]));
    }

    #[test]
    fn edges_out_of_the_graph_are_ignored_and_long_chains_do_not_overflow() {
        let g: BTreeMap<i64, Vec<i64>> = [(1, vec![99])].into_iter().collect();
        assert_eq!(dependency_cycle(&g), None);
        let n = 200_000;
        let mut chain: BTreeMap<i64, Vec<i64>> = (0..n).map(|i| (i, vec![i + 1])).collect();
        chain.insert(n, vec![]);
        assert_eq!(dependency_cycle(&chain), None);
        chain.insert(n, vec![0]);
        assert_eq!(
            dependency_cycle(&chain).map(|c| c.len()),
            Some(n as usize + 2)
        );
    }
}
