//! Data tests attached to an action (`tests: [...]`): each entry becomes an action of the
//! `Test` module on the table the action writes, made by the deploy as objects from the SQL
//! are (`derive`): stored as nodes with negative ids from the owner's
//! (`-(owner * 1000 + 400 + k)`; a relationship's parent table `440 + k`; their edges
//! `900 + 2k - 1` and `900 + 2k`), the same at every deploy, left out of exports. An entry is
//! an object whose first member is the test, `KIND: COLUMN` (`{ unique: "id" }`;
//! `{ no_rows: "SELECT ..." }` the query; an object value holds the test's attributes), and
//! whose other members are the test's attributes (`values`, `to`, `min`, `max`, `severity`,
//! `where`, `table` to choose among several targets, `name`); a list becomes a
//! comma-separated text. The `Test` module judges the rest at the entry's place.

use std::collections::HashSet;
use weft_dsr::model::{
    ActionAttributes, At, Edge, Extra, Layout, Node, NodeAttributes, ObjectAttributes, Retry,
};
use weft_dsr::value::{Spanned, Value};
use weft_dsr::{Path, Problems, Span};

/// The most tests one action may carry.
pub const MAX_TESTS: usize = 40;

/// A target of the owner: its node id, connection, schema and name.
struct Target {
    node: i64,
    connection: i64,
    schema: Option<String>,
    name: String,
}

impl Target {
    fn qualified(&self) -> String {
        match &self.schema {
            Some(s) => format!("{s}.{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// A value as a module attribute: scalars as they are, a list as comma-separated text.
fn scalar(v: &Spanned) -> Option<Spanned> {
    let value = match &v.value {
        Value::String(_) | Value::Int(_) | Value::Bool(_) => v.value.clone(),
        Value::Float(f) => Value::String(f.to_string()),
        Value::Array(items) => Value::String(
            items
                .iter()
                .map(|i| match &i.value {
                    Value::String(s) => Some(s.clone()),
                    Value::Int(n) => Some(n.to_string()),
                    Value::Float(f) => Some(f.to_string()),
                    Value::Bool(b) => Some(b.to_string()),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?
                .join(", "),
        ),
        _ => return None,
    };
    Some(Spanned {
        value,
        span: v.span,
    })
}

/// Adds to each sheet of `doc` a `Test` action for each test its actions carry (those in
/// `refused`, whose text was refused, are left alone: they have no table).
pub fn attach(doc: &mut weft_dsr::Document, refused: &HashSet<i64>, problems: &mut Problems) {
    for (i, s) in doc.sheets.iter_mut().enumerate() {
        let mut nodes = Vec::new();
        let mut edges = Vec::new();
        for (j, n) in s.nodes.iter().enumerate() {
            let NodeAttributes::Action(a) = &n.attributes else {
                continue;
            };
            let Some(tests) = &a.tests else { continue };
            if refused.contains(&n.id.v) {
                continue;
            }
            let apath = Path::node_attributes(i, j).key("tests");
            let Value::Array(entries) = &tests.value else {
                problems.error(
                    "action.tests",
                    "`tests` is a list of tests, each `{ KIND: COLUMN, ... }` (`{ unique: \"id\" }`)",
                    tests.span,
                    &apath,
                );
                continue;
            };
            if entries.len() > MAX_TESTS {
                problems.error(
                    "action.tests",
                    format!(
                        "action {}: {} tests; an action carries at most {MAX_TESTS}: write the others as actions of module Test",
                        n.id.v,
                        entries.len()
                    ),
                    tests.span,
                    &apath,
                );
                continue;
            }
            let targets: Vec<Target> = s
                .edges
                .iter()
                .filter(|e| e.from.v == n.id.v)
                .filter_map(|e| {
                    let t = s.nodes.iter().find(|m| m.id.v == e.to.v)?;
                    let o = t.object()?;
                    Some(Target {
                        node: t.id.v,
                        connection: o.connection_id.v,
                        schema: o.field2.clone().filter(|s| !s.is_empty()),
                        name: o.field1.v.clone(),
                    })
                })
                .collect();
            // The ids made here stay exact in JavaScript's numbers (the page shows them).
            let Some(base) =
                n.id.v
                    .checked_mul(1000)
                    .filter(|b| b.checked_add(1000).is_some_and(|end| end < 1 << 53))
            else {
                problems.error(
                    "action.tests",
                    format!("action {}: its id is too large to carry tests: write them as actions of module Test", n.id.v),
                    tests.span,
                    &apath,
                );
                continue;
            };
            for (k, entry) in entries.iter().enumerate() {
                let k = k as i64 + 1;
                let epath = apath.index(k as usize - 1);
                match test_node(n, entry, &targets, base, k, &epath, problems) {
                    Some((test, parent, from)) => {
                        let id = test.id.v;
                        edges.push(edge(-(base + 900 + 2 * k - 1), from, id, entry.span));
                        if let Some(p) = parent {
                            edges.push(edge(-(base + 900 + 2 * k), p.id.v, id, entry.span));
                            nodes.push(p);
                        }
                        nodes.push(test);
                    }
                    None => continue,
                }
            }
        }
        s.nodes.extend(nodes);
        s.edges.extend(edges);
    }
}

fn edge(id: i64, from: i64, to: i64, span: Span) -> Edge {
    Edge {
        id: At::new(id, span),
        from: At::new(from, span),
        to: At::new(to, span),
        from_name: None,
        to_name: None,
        span,
        extra: Extra::default(),
    }
}

/// The `Test` action of one entry, its parent table's node (for a relationship), and the
/// node of the table it tests.
fn test_node(
    owner: &Node,
    entry: &Spanned,
    targets: &[Target],
    base: i64,
    k: i64,
    epath: &Path,
    problems: &mut Problems,
) -> Option<(Node, Option<Node>, i64)> {
    let span = entry.span;
    let NodeAttributes::Action(a) = &owner.attributes else {
        return None;
    };
    let Value::Object(members) = &entry.value else {
        problems.error(
            "action.tests",
            "a test is an object whose first member names it: `{ unique: \"id\" }`, `{ accepted_values: \"status\", values: [a, b] }`",
            span,
            epath,
        );
        return None;
    };
    let Some((first, rest)) = members.split_first() else {
        problems.error(
            "action.tests",
            "an empty test: its first member names it, `{ not_null: \"id\" }`",
            span,
            epath,
        );
        return None;
    };
    let kind = first.key.clone();
    let at = |v: &str| At::new(v.to_owned(), first.key_span);
    let mut extra: Vec<(At<String>, Spanned)> = vec![(
        at("test"),
        Spanned {
            value: Value::String(kind.clone()),
            span: first.key_span,
        },
    )];
    let mut text: Option<At<String>> = None;
    let mut subject = String::new();
    let mut name: Option<String> = None;
    let mut table: Option<(String, Span)> = None;
    let mut push = |key: &str, key_span: Span, v: &Spanned, problems: &mut Problems| match key {
        "name" => match &v.value {
            Value::String(s) => name = Some(s.clone()),
            _ => problems.error("action.tests", "`name` is a text", v.span, &epath.key(key)),
        },
        "table" => match &v.value {
            Value::String(s) => table = Some((s.clone(), v.span)),
            _ => problems.error("action.tests", "`table` is a text", v.span, &epath.key(key)),
        },
        _ => match scalar(v) {
            Some(value) => extra.push((At::new(key.to_owned(), key_span), value)),
            None => problems.error(
                "action.tests",
                format!("`{key}` of a test is a text, a number, true or false, or a list of them"),
                v.span,
                &epath.key(key),
            ),
        },
    };
    match &first.value.value {
        Value::String(s) if kind == "no_rows" => text = Some(At::new(s.clone(), first.value.span)),
        Value::String(s) => {
            subject = s.clone();
            push("column", first.key_span, &first.value, problems);
        }
        Value::Object(inner) => {
            for m in inner {
                if m.key == "column"
                    && let Value::String(s) = &m.value.value
                {
                    subject = s.clone();
                }
                push(&m.key, m.key_span, &m.value, problems);
            }
        }
        Value::Bool(true) | Value::Null => {}
        _ => problems.error(
            "action.tests",
            format!("`{kind}`: the column it looks at (a text), or its attributes (an object)"),
            first.value.span,
            &epath.key(&kind),
        ),
    }
    for m in rest {
        push(&m.key, m.key_span, &m.value, problems);
    }
    // The table: the owner's one target, or the one `table` names.
    let target = match &table {
        Some((t, tspan)) => match targets
            .iter()
            .find(|x| x.qualified().eq_ignore_ascii_case(t) || x.name.eq_ignore_ascii_case(t))
        {
            Some(x) => x,
            None => {
                problems.error(
                    "action.tests",
                    format!(
                        "`table: {t}` is none of the tables action {} writes ({})",
                        owner.id.v,
                        targets
                            .iter()
                            .map(Target::qualified)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    *tspan,
                    &epath.key("table"),
                );
                return None;
            }
        },
        None => match targets {
            [one] => one,
            [] => {
                problems.error(
                    "action.tests",
                    format!(
                        "action {} writes no table its tests could test (give it a target, or `connection` and SQL that writes one)",
                        owner.id.v
                    ),
                    span,
                    epath,
                );
                return None;
            }
            several => {
                problems.error(
                    "action.tests",
                    format!(
                        "action {} writes {} tables: say which one this test tests with `table` ({})",
                        owner.id.v,
                        several.len(),
                        several.iter().map(Target::qualified).collect::<Vec<_>>().join(", ")
                    ),
                    span,
                    epath,
                );
                return None;
            }
        },
    };
    extra.push((
        at("table"),
        Spanned {
            value: Value::String(target.qualified()),
            span,
        },
    ));
    // A relationship's parent, on the target's connection, so that the test runs after it.
    let parent = extra
        .iter()
        .find(|(key, _)| key.v == "to")
        .and_then(|(_, v)| match &v.value {
            Value::String(s) => s.trim().rsplit_once('.').map(|(t, _)| t.to_owned()),
            _ => None,
        })
        .and_then(|t| table_name(&t))
        .map(|(schema, table)| Node {
            id: At::new(-(base + 440 + k), span),
            kind: At::new(weft_dsr::model::NODE_OBJECT, span),
            layout: Layout {
                x: owner.layout.x.saturating_add(240),
                y: owner.layout.y.saturating_add(100 + 80 * k),
                width: 160,
                height: 60,
                extra: Extra::default(),
            },
            attributes: NodeAttributes::Object(ObjectAttributes {
                field1: At::new(table, span),
                field2: schema,
                field3: None,
                object_type_id: At::new(1, span),
                connection_id: At::new(target.connection, span),
                dependency: At::new("Y".to_owned(), span),
                extra: Extra::default(),
            }),
            span,
            extra: Extra::default(),
        });
    let title = if subject.is_empty() {
        kind.clone()
    } else {
        format!("{kind}({subject})")
    };
    let node = Node {
        id: At::new(-(base + 400 + k), span),
        kind: At::new(weft_dsr::model::NODE_ACTION, span),
        layout: Layout {
            x: owner.layout.x,
            y: owner.layout.y.saturating_add(100 + 80 * k),
            width: 160,
            height: 60,
            extra: Extra::default(),
        },
        attributes: NodeAttributes::Action(Box::new(ActionAttributes {
            module: At::new("Test".to_owned(), first.key_span),
            documentation: None,
            name: At::new(
                name.unwrap_or_else(|| format!("{}: {title}", a.name.v)),
                first.key_span,
            ),
            action: text,
            priority: a.priority.clone(),
            retry: Retry::default(),
            after: Vec::new(),
            connection: None,
            file: None,
            tests: None,
            renamed_from: None,
            template: false,
            rendered: false,
            text_from_file: false,
            defines: Vec::new(),
            checks: Vec::new(),
            extra,
        })),
        span,
        extra: Extra::default(),
    };
    Some((node, parent, target.node))
}

/// `schema.name` or `name`.
fn table_name(text: &str) -> Option<(Option<String>, String)> {
    match text.trim().split_once('.') {
        None if !text.trim().is_empty() => Some((None, text.trim().to_owned())),
        Some((s, n)) if !s.is_empty() && !n.is_empty() => Some((Some(s.to_owned()), n.to_owned())),
        _ => None,
    }
}
