//! The plan of a run: what an action is made of, taken from a sheet ([`ActionPlan`]:
//! module, text, attributes, sources and targets), the order actions wait for each other in
//! ([`dependencies`]), and the one cycle finder of validation and runs ([`find_cycle`]).
//!
//! One plan type, host-native and serde: the repository stores it as JSON with each deployed
//! sheet (so that a run reads its sheets' plans without reading their definitions again)
//! and with each instance (the repository state the run came from), and the executor runs
//! it. Its objects ([`Object`]) and attribute values ([`Attr`]) become the sdk's types only
//! where a plugin is called ([`ActionPlan::source_refs`], [`ActionPlan::sdk_attributes`],
//! [`ActionPlan::identity`]), each object with the dialect of its connection, which is not
//! stored (it comes from the key file of the host that uses the plan). Used by validate,
//! deploy, exec and the scheduler alike; it knows no repository and no running.

use crate::plugins::Registry;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use weft_dsr::model::{Node, NodeAttributes, Sheet};
use weft_sdk::{AttributeValue, Dialect, ObjectRef};

/// One element of `elementList` (a run's or a scheduled batch's), as the protocol has it.
pub use weft_protocol::Element;

/// An object an action reads or writes: the object node, its type, connection, name and
/// schema, and the edge's `dependency` letter (`Y`: the order waits for it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Object {
    /// The object node's id.
    pub node: i64,
    /// Its object type.
    pub object_type: i64,
    /// Its connection.
    pub connection: i64,
    /// Its name (`field1`).
    pub name: String,
    /// Its schema (`field2`), if named.
    pub schema: Option<String>,
    /// The edge's dependency letter.
    pub dependency: String,
    /// Whether the action's text defines this target (DDL: creates, drops or alters it), as
    /// its module told the deploy: the other actions of a run that read or write it wait.
    #[serde(default, skip_serializing_if = "is_false")]
    pub defines: bool,
    /// Whether the action checks this source (a data test), as its module told the deploy:
    /// the other actions of a run that read it without writing it wait, and are skipped when
    /// the check fails.
    #[serde(default, skip_serializing_if = "is_false")]
    pub checked: bool,
}

/// Whether a flag is off (the default).
fn is_false(b: &bool) -> bool {
    !*b
}

impl Object {
    /// The object as plugins see it, in `dialect`.
    pub fn to_ref(&self, dialect: Dialect) -> ObjectRef {
        ObjectRef::new(
            self.node,
            self.object_type,
            self.connection,
            &self.name,
            self.schema.as_deref(),
            dialect,
        )
    }

    /// Whether the order of a run waits for this edge.
    pub fn orders(&self) -> bool {
        self.dependency == "Y"
    }
}

/// An attribute's value as a plan keeps it (the sdk's `AttributeValue` at the plugin call).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Attr {
    /// `true` or `false`.
    Bool(bool),
    /// Text.
    String(String),
    /// A whole number.
    Integer(i64),
}

impl Attr {
    /// The value as it crosses the plugin boundary.
    pub fn to_value(&self) -> AttributeValue {
        match self {
            Attr::Bool(b) => AttributeValue::bool(*b),
            Attr::String(s) => AttributeValue::string(s.as_str()),
            Attr::Integer(i) => AttributeValue::integer(*i),
        }
    }

    /// The text, for a text value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Attr::String(s) => Some(s),
            _ => None,
        }
    }

    /// The flag, for a boolean value.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Attr::Bool(b) => Some(*b),
            _ => None,
        }
    }

    fn of(v: &weft_dsr::value::Value) -> Option<Attr> {
        use weft_dsr::value::Value;
        match v {
            Value::Bool(b) => Some(Attr::Bool(*b)),
            Value::Int(i) => Some(Attr::Integer(*i)),
            Value::String(s) => Some(Attr::String(s.clone())),
            _ => None,
        }
    }
}

/// An action with everything its module needs. Serialised (the repository's stored form)
/// without `index`, `schemas` and `dialects`, which belong to where the plan is used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionPlan {
    /// The action node's id.
    pub id: i64,
    /// Its index in the sheet's nodes (for paths in messages); 0 in a stored plan.
    #[serde(skip)]
    pub index: usize,
    /// Its name.
    pub name: String,
    /// Its module.
    pub module: String,
    /// The action text.
    pub text: Option<String>,
    /// Attributes beyond table A.
    pub attributes: Vec<(String, Attr)>,
    /// Its priority when slots are scarce (0 to 1000; higher first).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: i64,
    /// How a failure of it is tried again, as its attributes say (a batch's default fills
    /// what they leave out).
    #[serde(default, skip_serializing_if = "RetryPlan::is_empty")]
    pub retry: RetryPlan,
    /// The actions it runs after when a run holds them (`after`, resolved to ids at deploy).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<i64>,
    /// Its path, `/folder/sheet/action`, as deployed (lineage events name it so; plans
    /// stored before it was kept have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Source objects (edges object -> action).
    pub sources: Vec<Object>,
    /// Target objects (edges action -> object).
    pub targets: Vec<Object>,
    /// The default schema of each of its connections that names one (the connection's
    /// `schema`), set by whoever runs it from the repository; empty in a fresh plan.
    #[serde(skip)]
    pub schemas: BTreeMap<i64, String>,
    /// The dialect of each of its connections, set by whoever uses the plan
    /// ([`ActionPlan::set_dialects`]); a connection not in it is `Dialect::Unknown`.
    #[serde(skip)]
    pub dialects: BTreeMap<i64, Dialect>,
}

/// How a failed action is tried again; each field unset leaves it to the batch's default,
/// else to weft's (no retries, 60 s, `connection`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryPlan {
    /// How many times at most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<i64>,
    /// The first pause, seconds.
    #[serde(
        default,
        rename = "delaySeconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub delay_seconds: Option<i64>,
    /// Which failures: `connection`, `all`, `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
}

impl RetryPlan {
    /// Whether it says nothing.
    pub fn is_empty(&self) -> bool {
        self.retries.is_none() && self.delay_seconds.is_none() && self.on.is_none()
    }

    /// The retry of a `.dsr` action or batch.
    pub fn of(r: &weft_dsr::model::Retry) -> Self {
        RetryPlan {
            retries: r.retries.as_ref().map(|v| v.v),
            delay_seconds: r.delay_seconds.as_ref().map(|v| v.v),
            on: r.on.as_ref().map(|v| v.v.clone()),
        }
    }
}

/// Whether a priority is the default one.
fn is_zero(p: &i64) -> bool {
    *p == 0
}

impl ActionPlan {
    /// Sets the dialect of each connection the plan's objects are on.
    pub fn set_dialects(&mut self, dialect: &dyn Fn(i64) -> Dialect) {
        for o in self.sources.iter().chain(&self.targets) {
            self.dialects
                .entry(o.connection)
                .or_insert_with(|| dialect(o.connection));
        }
    }

    /// The dialect of `connection`.
    pub fn dialect(&self, connection: i64) -> Dialect {
        self.dialects
            .get(&connection)
            .copied()
            .unwrap_or(Dialect::Unknown)
    }

    /// The attributes as they cross the plugin boundary: those the action writes, and the
    /// default of each one `module` declares that it does not write.
    pub fn sdk_attributes(
        &self,
        module: Option<&weft_sdk::ModuleInfo>,
    ) -> Vec<(String, AttributeValue)> {
        let mut all: Vec<(String, AttributeValue)> = self
            .attributes
            .iter()
            .map(|(k, v)| (k.clone(), v.to_value()))
            .collect();
        for spec in module.map_or(&[][..], |m| m.attributes()) {
            if !self.attributes.iter().any(|(k, _)| k == spec.name())
                && let Some(v) = spec.default_value()
            {
                all.push((spec.name().to_owned(), v));
            }
        }
        all
    }

    /// An attribute's value, by name.
    pub fn attribute(&self, name: &str) -> Option<&Attr> {
        self.attributes
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }

    /// An object of the plan as plugins see it, with its connection's dialect.
    pub fn object_ref(&self, o: &Object) -> ObjectRef {
        o.to_ref(self.dialect(o.connection))
    }

    /// The source objects as they cross the plugin boundary.
    pub fn source_refs(&self) -> Vec<ObjectRef> {
        self.sources.iter().map(|o| self.object_ref(o)).collect()
    }

    /// The target objects as they cross the plugin boundary.
    pub fn target_refs(&self) -> Vec<ObjectRef> {
        self.targets.iter().map(|o| self.object_ref(o)).collect()
    }

    /// The identity of one of the plan's objects as its object type sees it.
    pub fn identity(&self, registry: &Registry, o: &Object) -> (i64, String, String) {
        identity(registry, &self.object_ref(o))
    }

    /// The connections the action writes: those of its targets, or, with none, that of its
    /// first source (an action without targets runs where it reads).
    pub fn written_connections(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self.targets.iter().map(|o| o.connection).collect();
        if ids.is_empty() {
            ids.extend(self.sources.first().map(|o| o.connection));
        }
        ids
    }
}

/// The object nodes of `sheet`, as plugins see them.
pub fn objects_of(sheet: &Sheet, dialect: &dyn Fn(i64) -> Dialect) -> Vec<ObjectRef> {
    sheet
        .nodes
        .iter()
        .filter_map(|n| Some(object(n)?.to_ref(dialect(n.object()?.connection_id.v))))
        .collect()
}

/// Object node `n` as a plan keeps it; `None` for an action node.
fn object(n: &Node) -> Option<Object> {
    let o = n.object()?;
    Some(Object {
        node: n.id.v,
        object_type: o.object_type_id.v,
        connection: o.connection_id.v,
        name: o.field1.v.clone(),
        schema: o.field2.clone(),
        dependency: o.dependency.v.clone(),
        defines: false,
        checked: false,
    })
}

/// The actions of `sheet` with their sources and targets; `dialect` names the dialect of a
/// connection number.
pub fn actions_of(sheet: &Sheet, dialect: &dyn Fn(i64) -> Dialect) -> Vec<ActionPlan> {
    let mut plans = stored_plans(sheet);
    for p in &mut plans {
        p.set_dialects(dialect);
    }
    plans
}

/// The actions of `sheet` as the repository stores them: with their sources and targets, no
/// dialects.
pub fn stored_plans(sheet: &Sheet) -> Vec<ActionPlan> {
    let objects: HashMap<i64, Object> = sheet
        .nodes
        .iter()
        .filter_map(|n| Some((n.id.v, object(n)?)))
        .collect();
    // Each action's edges in and out, in the sheet's edge order: one pass over the edges,
    // so a sheet of n actions costs O(n + edges), not O(n * edges).
    let mut into: HashMap<i64, Vec<i64>> = HashMap::new();
    let mut out_of: HashMap<i64, Vec<i64>> = HashMap::new();
    for e in &sheet.edges {
        into.entry(e.to.v).or_default().push(e.from.v);
        out_of.entry(e.from.v).or_default().push(e.to.v);
    }
    let linked = |edges: &HashMap<i64, Vec<i64>>, node: i64| -> Vec<Object> {
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
            Some(ActionPlan {
                id: n.id.v,
                index,
                name: a.name.v.clone(),
                module: a.module.v.clone(),
                text: a.action.as_ref().map(|t| t.v.clone()),
                priority: a.priority.as_ref().map_or(0, |p| p.v),
                retry: RetryPlan::of(&a.retry),
                after: a.after.iter().filter_map(|x| x.resolved).collect(),
                path: Some(format!(
                    "{}/{}/{}",
                    sheet.attributes.folder.v.trim_end_matches('/'),
                    sheet.attributes.name.v,
                    a.name.v
                )),
                // The module sees `file` too (the name of the file its text was read from).
                attributes: a
                    .extra
                    .iter()
                    .filter_map(|(k, v)| Some((k.v.clone(), Attr::of(&v.value)?)))
                    .chain(
                        a.file
                            .as_ref()
                            .map(|f| ("file".to_owned(), Attr::String(f.v.clone()))),
                    )
                    .collect(),
                sources: marked(linked(&into, n.id.v), &a.checks, |o| &mut o.checked),
                targets: marked(linked(&out_of, n.id.v), &a.defines, |o| &mut o.defines),
                schemas: BTreeMap::new(),
                dialects: BTreeMap::new(),
            })
        })
        .collect()
}

/// `objects`, each marked (the flag `flag` gives) when it is one of `tables` (the same name,
/// and schema where both name one, in any case).
fn marked(
    mut objects: Vec<Object>,
    tables: &[(Option<String>, String)],
    flag: impl Fn(&mut Object) -> &mut bool,
) -> Vec<Object> {
    for t in &mut objects {
        *flag(t) = tables.iter().any(|(schema, name)| {
            name.eq_ignore_ascii_case(&t.name)
                && match (schema, &t.schema) {
                    (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
                    _ => true,
                }
        });
    }
    objects
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
/// X is a `Y`-dependency target of Y, or when X names Y in `after` and the run holds Y (never
/// for itself).
///
/// Each object type is asked once for each distinct object (type, connection, schema and
/// name, which are all an identity may depend on), not once per edge: a table read by
/// 10,000 actions costs one call.
pub fn dependencies(registry: &Registry, plans: &[ActionPlan]) -> BTreeMap<i64, Vec<i64>> {
    let mut numbers = Identities {
        registry,
        known: HashMap::new(),
        identities: HashMap::new(),
    };
    let mut identity_of = |p, o| numbers.number(p, o);
    let mut writers: HashMap<usize, Vec<i64>> = HashMap::new();
    let mut definers: HashMap<usize, Vec<i64>> = HashMap::new();
    for p in plans {
        for o in p.targets.iter().filter(|o| o.orders()) {
            let n = identity_of(p, o);
            writers.entry(n).or_default().push(p.id);
            if o.defines {
                definers.entry(n).or_default().push(p.id);
            }
        }
    }
    // Who checks what (data tests): by identity.
    let mut checkers: HashMap<usize, Vec<i64>> = HashMap::new();
    for p in plans {
        for o in p.sources.iter().filter(|o| o.orders() && o.checked) {
            let n = identity_of(p, o);
            checkers.entry(n).or_default().push(p.id);
        }
    }
    let in_run: std::collections::HashSet<i64> = plans.iter().map(|p| p.id).collect();
    let mut deps = BTreeMap::new();
    for p in plans {
        let mut d: Vec<i64> = p
            .after
            .iter()
            .copied()
            .filter(|a| *a != p.id && in_run.contains(a))
            .collect();
        for o in p.sources.iter().filter(|o| o.orders()) {
            if let Some(w) = writers.get(&identity_of(p, o)) {
                d.extend(w.iter().filter(|w| **w != p.id));
            }
        }
        d.sort_unstable();
        d.dedup();
        deps.insert(p.id, d);
    }
    // Checks before readers: an action that reads a table without writing or checking it
    // waits for the run's checks of it, unless such a check already waits for it (a check
    // of a relationship to a table the reader makes): no cycle is made.
    if !checkers.is_empty() {
        for p in plans {
            let mut wanted: Vec<i64> = Vec::new();
            for o in p.sources.iter().filter(|o| o.orders() && !o.checked) {
                let n = identity_of(p, o);
                if writers.get(&n).is_some_and(|w| w.contains(&p.id)) {
                    continue;
                }
                if let Some(c) = checkers.get(&n) {
                    wanted.extend(c.iter().filter(|c| **c != p.id));
                }
            }
            add_unless_cycle(&mut deps, p.id, wanted);
        }
    }
    if definers.is_empty() {
        return deps;
    }
    // DDL first: an action that reads or writes a table another action of the run defines
    // waits for it, unless that one already waits for it (its data or `after` come first:
    // an order that held before stays, and no cycle is made).
    for p in plans {
        let mut wanted: Vec<i64> = Vec::new();
        for o in p.sources.iter().chain(&p.targets).filter(|o| o.orders()) {
            if let Some(ds) = definers.get(&identity_of(p, o))
                && !ds.contains(&p.id)
            {
                wanted.extend(ds);
            }
        }
        add_unless_cycle(&mut deps, p.id, wanted);
    }
    deps
}

/// Makes `id` wait for each of `wanted` it does not wait for yet, unless that one waits for
/// `id` already (directly or through others).
fn add_unless_cycle(deps: &mut BTreeMap<i64, Vec<i64>>, id: i64, mut wanted: Vec<i64>) {
    wanted.sort_unstable();
    wanted.dedup();
    for d in wanted {
        if deps.get(&id).is_some_and(|w| w.contains(&d)) || waits_for(deps, d, id) {
            continue;
        }
        if let Some(w) = deps.get_mut(&id) {
            w.push(d);
            w.sort_unstable();
        }
    }
}

/// Whether `from` waits, directly or through others, for `to` in `deps`.
fn waits_for(deps: &BTreeMap<i64, Vec<i64>>, from: i64, to: i64) -> bool {
    let mut seen: std::collections::HashSet<i64> = std::collections::HashSet::new();
    let mut stack = vec![from];
    while let Some(a) = stack.pop() {
        if a == to {
            return true;
        }
        if seen.insert(a) {
            stack.extend(deps.get(&a).into_iter().flatten().copied());
        }
    }
    false
}

/// Each distinct object of a run, and each distinct identity (objects written differently
/// may be one: `T` and `t`), numbered; the order is worked out on the numbers.
struct Identities<'a> {
    registry: &'a Registry,
    /// Object type, connection, schema and name: the identity's number.
    known: HashMap<(i64, i64, Option<&'a str>, &'a str), usize>,
    identities: HashMap<(i64, String, String), usize>,
}

impl<'a> Identities<'a> {
    /// The number of `o`'s identity; its object type is asked the first time only.
    fn number(&mut self, p: &'a ActionPlan, o: &'a Object) -> usize {
        let key = (
            o.object_type,
            o.connection,
            o.schema.as_deref(),
            o.name.as_str(),
        );
        if let Some(n) = self.known.get(&key) {
            return *n;
        }
        let next = self.identities.len();
        let n = *self
            .identities
            .entry(p.identity(self.registry, o))
            .or_insert(next);
        self.known.insert(key, n);
        n
    }
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

    /// A plan of `id` reading `sources` and writing `targets`, each `(connection, schema,
    /// name, dependency letter)`.
    fn plan(
        id: i64,
        sources: &[(i64, Option<&str>, &str, &str)],
        targets: &[(i64, Option<&str>, &str, &str)],
    ) -> ActionPlan {
        let objects = |list: &[(i64, Option<&str>, &str, &str)]| -> Vec<serde_json::Value> {
            list.iter()
                .enumerate()
                .map(|(i, (connection, schema, name, dependency))| {
                    serde_json::json!({"node": id * 100 + i as i64, "object_type": 1, "connection": connection,
                        "name": name, "schema": schema, "dependency": dependency})
                })
                .collect()
        };
        serde_json::from_value(serde_json::json!({"id": id, "name": format!("a{id}"), "module": "Sql",
            "text": null, "attributes": [], "sources": objects(sources), "targets": objects(targets)}))
        .expect("a plan")
    }

    #[test]
    fn an_action_waits_for_the_writers_of_what_it_reads_however_the_names_are_written() {
        let plans = [
            plan(1, &[], &[(1, None, "T", "Y")]),
            plan(2, &[(1, None, "t", "Y")], &[(1, Some("DW"), "u", "Y")]),
            // Read by two: the identity is asked once, both wait.
            plan(3, &[(1, Some("dw"), "U", "Y"), (1, None, "t", "Y")], &[]),
            plan(4, &[(1, Some("dw"), "u", "Y")], &[(1, None, "t", "Y")]),
            // Another connection, and an edge that does not order.
            plan(5, &[(2, None, "t", "Y"), (1, None, "t", "N")], &[]),
        ];
        let deps = dependencies(&Registry::default(), &plans);
        assert_eq!(deps[&1], Vec::<i64>::new());
        assert_eq!(deps[&2], vec![1, 4]);
        assert_eq!(deps[&3], vec![1, 2, 4]);
        assert_eq!(deps[&4], vec![2]);
        assert_eq!(deps[&5], Vec::<i64>::new());
    }

    #[test]
    fn an_action_waits_for_what_it_runs_after_when_the_run_holds_it() {
        let mut create = plan(1, &[], &[(1, None, "t", "Y")]);
        let mut load = plan(2, &[], &[(1, None, "t", "Y")]);
        // Two writers of one table: no order from the data.
        assert_eq!(
            dependencies(&Registry::default(), &[create.clone(), load.clone()])[&2],
            Vec::<i64>::new()
        );
        load.after = vec![1, 99, 2];
        let deps = dependencies(&Registry::default(), &[create.clone(), load.clone()]);
        // Not for itself, nor for an action the run does not hold.
        assert_eq!(deps[&2], vec![1]);
        assert_eq!(deps[&1], Vec::<i64>::new());
        // An `after` against the data's order is a cycle, refused as one.
        create.after = vec![2];
        let deps = dependencies(&Registry::default(), &[create, load]);
        assert!(dependency_cycle(&deps).is_some());
    }

    #[test]
    fn ddl_goes_before_the_other_actions_of_its_table_unless_they_come_first() {
        let mut create = plan(1, &[], &[(1, None, "t", "Y")]);
        create.targets[0].defines = true;
        let load = plan(2, &[], &[(1, None, "T", "Y")]);
        let read = plan(3, &[(1, None, "t", "Y")], &[]);
        let deps = dependencies(
            &Registry::default(),
            &[create.clone(), load.clone(), read.clone()],
        );
        assert_eq!(deps[&1], Vec::<i64>::new());
        assert_eq!(deps[&2], vec![1]);
        assert_eq!(deps[&3], vec![1, 2]);
        // The DDL reads what the load writes elsewhere: the data's order stands, no cycle.
        let mut create_late = create.clone();
        create_late.sources = plan(9, &[(1, None, "u", "Y")], &[]).sources;
        let mut load_first = load.clone();
        load_first
            .targets
            .push(plan(9, &[], &[(1, None, "u", "Y")]).targets[0].clone());
        let deps = dependencies(&Registry::default(), &[create_late, load_first]);
        assert_eq!(deps[&1], vec![2]);
        assert_eq!(deps[&2], Vec::<i64>::new());
        assert!(dependency_cycle(&deps).is_none());
        // Two that define one table are left as they were.
        let mut again = load;
        again.targets[0].defines = true;
        let deps = dependencies(&Registry::default(), &[create, again]);
        assert_eq!((deps[&1].len(), deps[&2].len()), (0, 0));
    }

    #[test]
    fn checks_go_between_a_table_s_writers_and_its_readers_without_a_cycle() {
        let model = plan(1, &[(1, None, "raw", "Y")], &[(1, None, "t", "Y")]);
        let mut test = plan(2, &[(1, None, "t", "Y")], &[]);
        test.sources[0].checked = true;
        let reader = plan(3, &[(1, None, "T", "Y")], &[(1, None, "u", "Y")]);
        // Writes what it reads: not a reader to hold back.
        let in_place = plan(4, &[(1, None, "t", "Y")], &[(1, None, "t", "Y")]);
        let deps = dependencies(
            &Registry::default(),
            &[
                model.clone(),
                test.clone(),
                reader.clone(),
                in_place.clone(),
            ],
        );
        assert_eq!(deps[&2], vec![1, 4]);
        assert_eq!(deps[&3], vec![1, 2, 4]);
        assert_eq!(deps[&4], vec![1]);
        // A relationship to what the reader makes: the test waits for the reader, which
        // then does not wait for the test.
        let mut related = test.clone();
        related
            .sources
            .push(plan(9, &[(1, None, "u", "Y")], &[]).sources[0].clone());
        let deps = dependencies(&Registry::default(), &[model, related, reader]);
        assert_eq!(deps[&2], vec![1, 3]);
        assert_eq!(deps[&3], vec![1]);
        assert!(dependency_cycle(&deps).is_none());
    }

    /// The stored form is the one the repository has kept since schema version 1: a plan
    /// stored by an older weft reads as it was written, and is written the same way again.
    #[test]
    fn a_plan_reads_and_writes_its_stored_form_unchanged() {
        let stored = r#"{"id":7,"name":"load","module":"Sql","text":"INSERT INTO t SELECT * FROM s","attributes":[["keys",{"String":"id"}],["fast",{"Bool":true}],["n",{"Integer":3}]],"sources":[{"node":5,"object_type":1,"connection":2,"name":"s","schema":null,"dependency":"Y"}],"targets":[{"node":6,"object_type":1,"connection":3,"name":"t","schema":"dw","dependency":"N"}]}"#;
        let mut plan: ActionPlan = serde_json::from_str(stored).expect("a stored plan");
        assert_eq!(serde_json::to_string(&plan).expect("json"), stored);
        assert_eq!(plan.attribute("n"), Some(&Attr::Integer(3)));
        assert!(plan.sources[0].orders() && !plan.targets[0].orders());
        // Dialects come from where the plan is used, never from the stored text.
        assert_eq!(plan.source_refs()[0].dialect(), Dialect::Unknown);
        plan.set_dialects(&|c| {
            if c == 2 {
                Dialect::Postgres
            } else {
                Dialect::Sqlite
            }
        });
        assert_eq!(plan.source_refs()[0].dialect(), Dialect::Postgres);
        assert_eq!(plan.target_refs()[0].schema(), Some("dw"));
        assert_eq!(plan.target_refs()[0].dialect(), Dialect::Sqlite);
        assert_eq!(serde_json::to_string(&plan).expect("json"), stored);
        assert_eq!(plan.written_connections(), [3]);
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
