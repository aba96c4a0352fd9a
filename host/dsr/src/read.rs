//! From the spanned value tree to the typed model: every missing field, wrong type,
//! duplicate or unknown field becomes a [`Problem`](super::Problem) with its place, and reading goes on so
//! that one answer lists every problem of the document.

use super::fields::{Dialect, Fields};
use super::model::*;
use super::problem::Problems;
use super::value::{Path, Span, Spanned, Value};

/// Reads a document from its value tree. `text` is the source the spans point into.
/// Problems are added to `problems`; the returned model holds whatever could be read.
pub fn document(root: &Spanned, text: &str, problems: &mut Problems) -> Document {
    let mut doc = Document {
        complete: true,
        ..Document::default()
    };
    let path = Path::root();
    // A NUL comes into a value only as itself or as the escape `\u0000`: a text with
    // neither has none, and is not walked for one.
    if might_hold_nul(text) {
        problems.refuse_nul(root, "dsr.nul", &[]);
    }
    let Some(mut top) = Fields::of(root, &path, "the document", Dialect::Document, problems) else {
        doc.complete = false;
        return doc;
    };
    doc.version = top.int("version", true, text, problems);
    if let Some(v) = &doc.version
        && v.v != FORMAT_VERSION
    {
        problems.error(
            "dsr.version",
            format!(
                "format version {} is not supported; this weft reads version {FORMAT_VERSION}",
                v.v
            ),
            v.span,
            &path.key("version"),
        );
    }
    if let Some(td) = top.get("transformationData") {
        let td_path = path.key("transformationData");
        if let Some(mut td_obj) = Fields::of(
            td,
            &td_path,
            "transformationData",
            Dialect::Document,
            problems,
        ) {
            let mut complete = true;
            if let Some(list) = td_obj.array("folders", problems) {
                doc.folders = each(list, &td_path.key("folders"), &mut complete, |v, p| {
                    folder(v, p, text, problems)
                });
            }
            if let Some(list) = td_obj.array("connections", problems) {
                doc.connections = each(list, &td_path.key("connections"), &mut complete, |v, p| {
                    connection(v, p, text, problems)
                });
            }
            let mut inner = true;
            if let Some(list) = td_obj.array("sheets", problems) {
                doc.sheets = each(list, &td_path.key("sheets"), &mut complete, |v, p| {
                    sheet(v, p, text, problems, &mut inner)
                });
            }
            doc.complete = complete
                && inner
                && doc.sheets.iter().all(|s| {
                    s.nodes
                        .iter()
                        .all(|n| !matches!(n.attributes, NodeAttributes::Invalid))
                });
            if let Some(list) = td_obj.array("batches", problems) {
                doc.batches = each(list, &td_path.key("batches"), &mut complete, |v, p| {
                    batch(v, p, text, problems)
                });
                doc.complete &= complete;
            }
            if let Some(v) = td_obj.get("notifications") {
                doc.notifications = notifications(v, &td_path.key("notifications"), text, problems);
                doc.complete &= doc.notifications.is_some();
            }
            if let Some(list) = td_obj.array("modules", problems) {
                let mut ok = true;
                doc.modules = each(list, &td_path.key("modules"), &mut ok, |v, p| {
                    template_module(v, p, text, problems)
                });
                doc.complete &= ok;
            }
            // Unknown fields here and at the top are warned about; nothing stores them.
            let _ = td_obj.finish(problems);
        }
    } else {
        problems.error(
            "dsr.missing_field",
            "missing field `transformationData` (it holds the sheets, connections and folders)",
            Span::new(root.span.start as usize, root.span.start as usize),
            &path,
        );
    }
    let _ = top.finish(problems);
    doc
}

/// Whether a text may hold a NUL in a value: as the character itself, or escaped.
pub(crate) fn might_hold_nul(text: &str) -> bool {
    text.contains('\0') || text.contains("\\u0000")
}

/// Reads each element; clears `complete` when one cannot be read.
fn each<T>(
    list: &[Spanned],
    path: &Path,
    complete: &mut bool,
    mut f: impl FnMut(&Spanned, &Path) -> Option<T>,
) -> Vec<T> {
    let read: Vec<T> = list
        .iter()
        .enumerate()
        .filter_map(|(i, v)| f(v, &path.index(i)))
        .collect();
    if read.len() != list.len() {
        *complete = false;
    }
    read
}

fn folder(v: &Spanned, path: &Path, text: &str, problems: &mut Problems) -> Option<Folder> {
    let mut o = Fields::of(v, path, "a folder", Dialect::Document, problems)?;
    let id = o.named_id("id", v.span, text, problems);
    let folder_path = o.string("path", true, text, problems);
    let documentation = o.nullable_string("documentation", text, problems);
    let extra = o.finish(problems);
    Some(Folder {
        id: id?,
        path: folder_path?,
        documentation,
        span: v.span,
        extra,
    })
}

fn batch(v: &Spanned, path: &Path, text: &str, problems: &mut Problems) -> Option<Batch> {
    let mut o = Fields::of(v, path, "a batch", Dialect::Document, problems)?;
    let id = o.named_id("id", v.span, text, problems);
    let name = o.string("name", true, text, problems);
    let renamed_from = o.string("renamedFrom", false, text, problems);
    let schedule = o.string("schedule", true, text, problems);
    let mut elements = Vec::new();
    let mut ok = true;
    match o.array("elements", problems) {
        Some(list) => {
            for (i, e) in list.iter().enumerate() {
                let epath = path.key("elements").index(i);
                let Some(mut eo) =
                    Fields::of(e, &epath, "a batch element", Dialect::Document, problems)
                else {
                    ok = false;
                    continue;
                };
                let kind = eo.string("elementType", true, text, problems);
                // An id, or a path (`/folder`, `/folder/sheet`, `/folder/sheet/action`).
                let (eid, epath_text) = match eo.get("elementId") {
                    Some(Spanned {
                        value: Value::String(p),
                        span,
                    }) => (
                        Some(At::new(UNNAMED, *span)),
                        Some(At::new(p.clone(), *span)),
                    ),
                    _ => (eo.int("elementId", true, text, problems), None),
                };
                let mut flag = |key: &'static str| match eo.get(key) {
                    None => false,
                    Some(Spanned {
                        value: Value::Bool(b),
                        ..
                    }) => *b,
                    Some(other) => {
                        eo.wrong(key, "true or false", other, problems);
                        false
                    }
                };
                let skip = flag("skip");
                let halted = flag("halted");
                let _ = eo.finish(problems);
                match (kind, eid) {
                    (Some(kind), Some(id)) => elements.push(BatchElement {
                        kind,
                        id,
                        path: epath_text,
                        skip,
                        halted,
                    }),
                    _ => ok = false,
                }
            }
        }
        None if !o.has("elements") => o.missing("elements", problems),
        None => ok = false,
    }
    let mut variables = Vec::new();
    if let Some(list) = o.array("variables", problems) {
        for (i, e) in list.iter().enumerate() {
            let vpath = path.key("variables").index(i);
            let Some(mut vo) =
                Fields::of(e, &vpath, "a batch variable", Dialect::Document, problems)
            else {
                ok = false;
                continue;
            };
            let name = vo.string("variableName", true, text, problems);
            let _kind = vo.string("variableType", false, text, problems);
            let value = vo.string("variableValue", true, text, problems);
            let _ = vo.finish(problems);
            match (name, value) {
                (Some(n), Some(v)) => variables.push((n.v, v.v)),
                _ => ok = false,
            }
        }
    }
    let enabled = match o.get("enabled") {
        None => true,
        Some(Spanned {
            value: Value::Bool(b),
            ..
        }) => *b,
        Some(other) => {
            o.wrong("enabled", "true or false", other, problems);
            true
        }
    };
    let if_running = o.string("ifRunning", false, text, problems);
    let spring_gap = o.string("springGap", false, text, problems);
    let autumn_overlap = o.string("autumnOverlap", false, text, problems);
    let mut after = Vec::new();
    if let Some(list) = o.array("after", problems) {
        for (i, e) in list.iter().enumerate() {
            match &e.value {
                Value::Int(id) => after.push(At::new(*id, e.span)),
                _ => {
                    problems.error(
                        "dsr.wrong_type",
                        "an entry of `after` is a batch id (a whole number)",
                        e.span,
                        &path.key("after").index(i),
                    );
                    ok = false;
                }
            }
        }
    }
    let after_timeout_minutes = o.int("afterTimeoutMinutes", false, text, problems);
    let after_timeout = o.string("afterTimeout", false, text, problems);
    let manual_runs = o.string("manualRuns", false, text, problems);
    let retry = retry(&mut o, path, text, problems);
    let mut notifications = Vec::new();
    if let Some(list) = o.array("notifications", problems) {
        notifications = each(list, &path.key("notifications"), &mut ok, |v, p| {
            rule(v, p, text, problems)
        });
    }
    let documentation = o.nullable_string("documentation", text, problems);
    let extra = o.finish(problems);
    if !ok {
        return None;
    }
    Some(Batch {
        after,
        after_timeout_minutes,
        after_timeout,
        manual_runs,
        notifications,
        retry,
        id: id?,
        name: name?,
        schedule: schedule?,
        renamed_from,
        elements,
        variables,
        enabled,
        if_running,
        spring_gap,
        autumn_overlap,
        documentation,
        span: v.span,
        extra,
    })
}

fn notifications(
    v: &Spanned,
    path: &Path,
    text: &str,
    problems: &mut Problems,
) -> Option<Notifications> {
    let mut o = Fields::of(v, path, "the notifications", Dialect::Document, problems)?;
    let mut ok = true;
    let mut channels = Vec::new();
    if let Some(list) = o.array("channels", problems) {
        channels = each(list, &path.key("channels"), &mut ok, |v, p| {
            channel(v, p, text, problems)
        });
    }
    let mut rules = Vec::new();
    if let Some(list) = o.array("rules", problems) {
        rules = each(list, &path.key("rules"), &mut ok, |v, p| {
            rule(v, p, text, problems)
        });
    }
    let extra = o.finish(problems);
    ok.then_some(Notifications {
        channels,
        rules,
        span: v.span,
        extra,
    })
}

/// Whether `name` may name a template module or one of its attributes: a letter or `_`,
/// then letters, digits and `_`, at most 64 bytes (a name a template can read).
pub fn plain_name(name: &str) -> bool {
    name.len() <= 64
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A template module (`transformationData.modules[i]`).
pub fn template_module(
    v: &Spanned,
    path: &Path,
    text: &str,
    problems: &mut Problems,
) -> Option<TemplateModule> {
    let mut o = Fields::of(v, path, "a template module", Dialect::Document, problems)?;
    let name = o.string("name", true, text, problems);
    let description = o.string("description", false, text, problems);
    let runs = o.string("runs", false, text, problems);
    let template = o.string("template", true, text, problems);
    let mut ok = true;
    let mut attributes = Vec::new();
    if let Some(list) = o.array("attributes", problems) {
        attributes = each(list, &path.key("attributes"), &mut ok, |v, p| {
            template_attribute(v, p, text, problems)
        });
    }
    let extra = o.finish(problems);
    if let Some(n) = &name
        && !plain_name(&n.v)
    {
        problems.error(
            "module.name",
            format!(
                "`{}` cannot name a module: a letter, then letters, digits and `_` (64 at most)",
                n.v
            ),
            n.span,
            &path.key("name"),
        );
        ok = false;
    }
    let mut declared = std::collections::HashSet::new();
    for (i, a) in attributes.iter().enumerate() {
        if !declared.insert(a.name.v.as_str()) {
            problems.error(
                "module.attribute",
                format!("the attribute `{}` is declared twice", a.name.v),
                a.name.span,
                &path.key("attributes").index(i).key("name"),
            );
            ok = false;
        }
    }
    if !ok {
        return None;
    }
    Some(TemplateModule {
        name: name?,
        description,
        runs,
        attributes,
        template: template?,
        span: v.span,
        extra,
    })
}

/// An attribute of a template module.
fn template_attribute(
    v: &Spanned,
    path: &Path,
    text: &str,
    problems: &mut Problems,
) -> Option<TemplateAttribute> {
    let mut o = Fields::of(
        v,
        path,
        "a template module's attribute",
        Dialect::Document,
        problems,
    )?;
    let name = o.string("name", true, text, problems);
    let kind = o.string("type", true, text, problems);
    let default = o.get("default").cloned();
    let required = match o.get("required") {
        None => false,
        Some(Spanned {
            value: Value::Bool(b),
            ..
        }) => *b,
        Some(other) => {
            o.wrong("required", "true or false", other, problems);
            return None;
        }
    };
    let description = o.string("description", false, text, problems);
    let _ = o.finish(problems);
    let (name, kind) = (name?, kind?);
    if !plain_name(&name.v) || ACTION_ATTRIBUTES.contains(&name.v.as_str()) {
        problems.error(
            "module.attribute",
            format!(
                "`{}` cannot name an attribute: a letter or `_`, then letters, digits and `_`, and none of the attributes every action has ({})",
                name.v,
                ACTION_ATTRIBUTES.join(", ")
            ),
            name.span,
            &path.key("name"),
        );
        return None;
    }
    if !TEMPLATE_ATTRIBUTE_TYPES.contains(&kind.v.as_str()) {
        problems.error(
            "module.attribute",
            format!(
                "`type: {}` is not one of {}",
                kind.v,
                TEMPLATE_ATTRIBUTE_TYPES.join(", ")
            ),
            kind.span,
            &path.key("type"),
        );
        return None;
    }
    let default = match default {
        None => None,
        Some(d) => {
            let fits = matches!(
                (kind.v.as_str(), &d.value),
                ("text", Value::String(_))
                    | ("integer", Value::Int(_))
                    | ("boolean", Value::Bool(_))
            );
            if !fits {
                problems.error(
                    "module.attribute",
                    format!(
                        "the default of `{}` is {}, not of its type `{}`",
                        name.v,
                        d.value.kind(),
                        kind.v
                    ),
                    d.span,
                    &path.key("default"),
                );
                return None;
            }
            Some(At::new(d.value.to_json(), d.span))
        }
    };
    Some(TemplateAttribute {
        name,
        kind,
        default,
        required,
        description,
        span: v.span,
    })
}

/// The strings of array `key` (absent: none); an entry that is no string is a problem.
fn strings(
    o: &mut Fields<'_>,
    key: &'static str,
    required: bool,
    path: &Path,
    problems: &mut Problems,
) -> Option<Vec<At<String>>> {
    let Some(list) = o.array(key, problems) else {
        if required && !o.has(key) {
            o.missing(key, problems);
        }
        return (!o.has(key) && !required).then(Vec::new);
    };
    let mut out = Vec::with_capacity(list.len());
    for (i, e) in list.iter().enumerate() {
        match &e.value {
            Value::String(s) => out.push(At::new(s.clone(), e.span)),
            _ => {
                problems.error(
                    "dsr.wrong_type",
                    format!("an entry of `{key}` is a string"),
                    e.span,
                    &path.key(key).index(i),
                );
                return None;
            }
        }
    }
    Some(out)
}

fn channel(v: &Spanned, path: &Path, text: &str, problems: &mut Problems) -> Option<Channel> {
    let mut o = Fields::of(v, path, "a channel", Dialect::Document, problems)?;
    let name = o.string("name", true, text, problems);
    let kind = o.string("type", true, text, problems);
    let server = o.string("server", false, text, problems);
    let from = o.string("from", false, text, problems);
    let to = strings(&mut o, "to", false, path, problems);
    let url = o.string("url", false, text, problems);
    let secret = o.string("secret", false, text, problems);
    let timeout_seconds = o.int("timeoutSeconds", false, text, problems);
    let subject = o.string("subject", false, text, problems);
    let body = o.string("body", false, text, problems);
    let extra = o.finish(problems);
    Some(Channel {
        name: name?,
        kind: kind?,
        server,
        from,
        to: to?,
        url,
        secret,
        timeout_seconds,
        subject,
        body,
        span: v.span,
        extra,
    })
}

fn rule(v: &Spanned, path: &Path, text: &str, problems: &mut Problems) -> Option<NotificationRule> {
    let mut o = Fields::of(v, path, "a notification rule", Dialect::Document, problems)?;
    let on = strings(&mut o, "on", true, path, problems);
    let to = strings(&mut o, "to", true, path, problems);
    let late_at = o.string("lateAt", false, text, problems);
    let longer_than_minutes = o.int("longerThanMinutes", false, text, problems);
    let subject = o.string("subject", false, text, problems);
    let body = o.string("body", false, text, problems);
    let extra = o.finish(problems);
    Some(NotificationRule {
        on: on?,
        to: to?,
        late_at,
        longer_than_minutes,
        subject,
        body,
        span: v.span,
        extra,
    })
}

fn connection(v: &Spanned, path: &Path, text: &str, problems: &mut Problems) -> Option<Connection> {
    let mut o = Fields::of(v, path, "a connection", Dialect::Document, problems)?;
    let id = match o.get("id") {
        None => Some(At::new(UNNAMED, v.span)),
        Some(_) => o.int("id", true, text, problems),
    };
    if let Some(id) = &id
        && id.v < 0
        && id.v != UNNAMED
    {
        problems.error(
            "dsr.wrong_type",
            format!("connection number {} is negative; use 0 or more", id.v),
            id.span,
            &path.key("id"),
        );
    }
    let name = o.string("name", true, text, problems);
    let schema = o.nullable_at_string("schema", text, problems);
    let kind = o.string("type", true, text, problems);
    let extra = o.finish(problems);
    Some(Connection {
        id: id?,
        name: name?,
        schema,
        kind: kind?,
        span: v.span,
        extra,
    })
}

fn sheet(
    v: &Spanned,
    path: &Path,
    text: &str,
    problems: &mut Problems,
    complete: &mut bool,
) -> Option<Sheet> {
    let mut o = Fields::of(v, path, "a sheet", Dialect::Document, problems)?;
    let id = o.named_id("id", v.span, text, problems);
    let attributes = match o.get("attributes") {
        Some(a) => sheet_attributes(a, &path.key("attributes"), text, problems),
        None => {
            o.missing("attributes", problems);
            None
        }
    };
    // Without its nodes or edges a sheet cannot be judged: mark the document incomplete.
    let nodes = match o.array("nodes", problems) {
        Some(list) => each(list, &path.key("nodes"), complete, |v, p| {
            node(v, p, text, problems)
        }),
        None => {
            if !o.has("nodes") {
                o.missing("nodes", problems);
            }
            *complete = false;
            Vec::new()
        }
    };
    let edges = match o.array("edges", problems) {
        Some(list) => each(list, &path.key("edges"), complete, |v, p| {
            edge(v, p, text, problems)
        }),
        None => {
            if o.has("edges") {
                *complete = false;
            }
            Vec::new()
        }
    };
    let extra = o.finish(problems);
    Some(Sheet {
        id: id?,
        attributes: attributes?,
        nodes,
        edges,
        span: v.span,
        extra,
    })
}

fn sheet_attributes(
    v: &Spanned,
    path: &Path,
    text: &str,
    problems: &mut Problems,
) -> Option<SheetAttributes> {
    let mut o = Fields::of(v, path, "sheet attributes", Dialect::Document, problems)?;
    let documentation = o.nullable_string("documentation", text, problems);
    let name = o.string("name", true, text, problems);
    let order = o.string("order", false, text, problems);
    let folder_id = o.named_id("folder_id", v.span, text, problems);
    let renamed_from = o.string("renamedFrom", false, text, problems);
    let folder = o.string("folder", true, text, problems);
    let connection = name_or_id(&mut o, "connection", path, problems);
    let extra = o.finish(problems);
    Some(SheetAttributes {
        documentation,
        name: name?,
        order,
        folder_id: folder_id?,
        folder: folder?,
        connection,
        renamed_from,
        span: v.span,
        extra,
    })
}

/// The attributes of table A.
pub const ACTION_ATTRIBUTES: &[&str] = &[
    "module",
    "documentation",
    "name",
    "action",
    "priority",
    "retries",
    "retryDelaySeconds",
    "retryOn",
    "after",
    "connection",
    "file",
    "tests",
    "renamedFrom",
    "template",
];

/// The most `retries` an action or batch may ask for.
pub const MAX_RETRIES: i64 = 20;
/// The longest `retryDelaySeconds`: an hour (also the longest pause after doubling).
pub const MAX_RETRY_DELAY: i64 = 3600;

/// `retries`, `retryDelaySeconds` and `retryOn` of an action's attributes or a batch.
fn retry(o: &mut Fields<'_>, path: &Path, text: &str, problems: &mut Problems) -> Retry {
    let retries = o.int("retries", false, text, problems);
    let delay_seconds = o.int("retryDelaySeconds", false, text, problems);
    let on = o.string("retryOn", false, text, problems);
    for (key, v, most) in [
        ("retries", &retries, MAX_RETRIES),
        ("retryDelaySeconds", &delay_seconds, MAX_RETRY_DELAY),
    ] {
        if let Some(v) = v
            && !(0..=most).contains(&v.v)
        {
            problems.error(
                "retry.policy",
                format!("`{key}` is {}; use 0 to {most}", v.v),
                v.span,
                &path.key(key),
            );
        }
    }
    if let Some(on) = &on
        && !matches!(on.v.as_str(), "connection" | "all" | "none")
    {
        problems.error(
            "retry.policy",
            format!(
                "`retryOn` is `{}`; use connection (the default: a connection lost or not opened, a deadlock, a lock not had), all or none",
                on.v
            ),
            on.span,
            &path.key("retryOn"),
        );
    }
    Retry {
        retries,
        delay_seconds,
        on,
    }
}

/// The highest `priority` an action may have.
pub const MAX_PRIORITY: i64 = 1000;
/// The attributes of table B.
pub const OBJECT_ATTRIBUTES: &[&str] = &[
    "field1",
    "field2",
    "field3",
    "objectTypeId",
    "connectionId",
    "dependency",
];

fn node(v: &Spanned, path: &Path, text: &str, problems: &mut Problems) -> Option<Node> {
    let mut o = Fields::of(v, path, "a node", Dialect::Document, problems)?;
    let id = o.named_id("id", v.span, text, problems);
    // Without `type`: an action when its attributes name a module, else an object.
    let kind = match o.get("type") {
        Some(_) => o.int("type", true, text, problems),
        None => {
            let module = match o.get("attributes").map(|a| &a.value) {
                Some(Value::Object(members)) => members.iter().any(|m| m.key == "module"),
                _ => false,
            };
            Some(At::new(
                if module { NODE_ACTION } else { NODE_OBJECT },
                v.span,
            ))
        }
    };
    let layout = match o.get("layout") {
        Some(l) => layout(l, &path.key("layout"), text, problems),
        None => Layout::default(),
    };
    let attributes = match (o.get("attributes"), &kind) {
        (None, _) => {
            o.missing("attributes", problems);
            NodeAttributes::Invalid
        }
        (Some(_), None) => NodeAttributes::Invalid,
        (Some(a), Some(k)) => match k.v {
            NODE_ACTION => action_attributes(a, &path.key("attributes"), text, problems)
                .map_or(NodeAttributes::Invalid, |a| {
                    NodeAttributes::Action(Box::new(a))
                }),
            NODE_OBJECT => object_attributes(a, &path.key("attributes"), text, problems)
                .map_or(NodeAttributes::Invalid, NodeAttributes::Object),
            other => {
                problems.error(
                    "dsr.node_type",
                    format!("node type {other} is not known: 0 is an action (table A), 1 a source or target object (table B)"),
                    k.span,
                    &path.key("type"),
                );
                NodeAttributes::Invalid
            }
        },
    };
    let extra = o.finish(problems);
    Some(Node {
        id: id?,
        kind: kind?,
        layout,
        attributes,
        span: v.span,
        extra,
    })
}

fn layout(v: &Spanned, path: &Path, text: &str, problems: &mut Problems) -> Layout {
    let Some(mut o) = Fields::of(v, path, "a layout", Dialect::Document, problems) else {
        return Layout::default();
    };
    let mut get = |k: &'static str| o.int(k, false, text, problems).map_or(0, |a| a.v);
    let (x, y, width, height) = (get("x"), get("y"), get("width"), get("height"));
    let extra = o.finish(problems);
    Layout {
        x,
        y,
        width,
        height,
        extra,
    }
}

fn action_attributes(
    v: &Spanned,
    path: &Path,
    text: &str,
    problems: &mut Problems,
) -> Option<ActionAttributes> {
    let mut o = Fields::of(v, path, "action attributes", Dialect::Document, problems)?;
    let module = o.string("module", true, text, problems);
    let documentation = o.nullable_string("documentation", text, problems);
    let name = o.string("name", true, text, problems);
    let action = o.nullable_at_string("action", text, problems);
    let priority = o.int("priority", false, text, problems);
    let retry = retry(&mut o, path, text, problems);
    let after = after(&mut o, path, problems);
    let connection = name_or_id(&mut o, "connection", path, problems);
    let file = o.string("file", false, text, problems);
    let tests = o.get("tests").cloned();
    let renamed_from = o.string("renamedFrom", false, text, problems);
    let template = match o.get("template") {
        None => false,
        Some(Spanned {
            value: Value::Bool(b),
            ..
        }) => *b,
        Some(other) => {
            o.wrong("template", "true or false", other, problems);
            false
        }
    };
    if let (Some(f), Some(t)) = (&file, &action) {
        problems.error(
            "action.file",
            format!(
                "the action has both its text (`action`) and `file: {}`; keep one",
                f.v
            ),
            t.span,
            &path.key("action"),
        );
    }
    if let Some(p) = &priority
        && !(0..=MAX_PRIORITY).contains(&p.v)
    {
        problems.error(
            "node.priority",
            format!(
                "`priority` is {}; use 0 (the default) to {MAX_PRIORITY}",
                p.v
            ),
            p.span,
            &path.key("priority"),
        );
    }
    let mut extra = Vec::new();
    for m in o.take_rest(|_| true) {
        if OBJECT_ATTRIBUTES.contains(&m.key.as_str()) {
            problems.error(
                "dsr.attribute_of_other_type",
                format!(
                    "`{}` is an attribute of object nodes (type 1); this node has type 0 (an action), whose attributes are module, documentation, name, action and those of its module",
                    m.key
                ),
                m.key_span,
                &path.key(&m.key),
            );
        } else {
            extra.push((At::new(m.key.clone(), m.key_span), m.value.clone()));
        }
    }
    // Every other member became a module attribute above (judged by the module).
    let _ = o.finish(problems);
    Some(ActionAttributes {
        module: module?,
        documentation,
        name: name?,
        action,
        priority,
        retry,
        after,
        connection,
        file,
        tests,
        renamed_from,
        template,
        rendered: false,
        text_from_file: false,
        defines: Vec::new(),
        checks: Vec::new(),
        extra,
    })
}

/// `key` as a connection's id (a number) or name (a string).
fn name_or_id(
    o: &mut Fields<'_>,
    key: &'static str,
    path: &Path,
    problems: &mut Problems,
) -> Option<At<NameOrId>> {
    let v = o.get(key)?;
    match &v.value {
        Value::Int(id) => Some(At::new(NameOrId::Id(*id), v.span)),
        Value::String(s) if !s.trim().is_empty() => {
            Some(At::new(NameOrId::Name(s.trim().to_owned()), v.span))
        }
        _ => {
            problems.error(
                "dsr.wrong_type",
                format!("`{key}` is a connection: its id (a number) or its name"),
                v.span,
                &path.key(key),
            );
            None
        }
    }
}

/// The most entries an action's `after` may hold.
pub const MAX_AFTER: usize = 1000;

/// `after`: one action or a list, each an id or a name or path.
fn after(o: &mut Fields<'_>, path: &Path, problems: &mut Problems) -> Vec<After> {
    let Some(v) = o.get("after") else {
        return Vec::new();
    };
    let key = path.key("after");
    let entries: Vec<(&Spanned, Path)> = match &v.value {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, e)| (e, key.index(i)))
            .collect(),
        _ => vec![(v, key.clone())],
    };
    if entries.len() > MAX_AFTER {
        problems.error(
            "action.after",
            format!(
                "`after` names {} actions; at most {MAX_AFTER}",
                entries.len()
            ),
            v.span,
            &key,
        );
        return Vec::new();
    }
    let mut out = Vec::with_capacity(entries.len());
    for (e, at) in entries {
        let written = match &e.value {
            Value::Int(id) => NameOrId::Id(*id),
            Value::String(s) if !s.trim().is_empty() => NameOrId::Name(s.trim().to_owned()),
            _ => {
                problems.error(
                    "action.after",
                    "an entry of `after` is an action: its id (a number), its name in this sheet, or its path `/folder/sheet/action`",
                    e.span,
                    &at,
                );
                continue;
            }
        };
        let resolved = match written {
            NameOrId::Id(id) => Some(id),
            NameOrId::Name(_) => None,
        };
        out.push(After {
            written: At::new(written, e.span),
            resolved,
        });
    }
    out
}

fn object_attributes(
    v: &Spanned,
    path: &Path,
    text: &str,
    problems: &mut Problems,
) -> Option<ObjectAttributes> {
    let mut o = Fields::of(v, path, "object attributes", Dialect::Document, problems)?;
    let field1 = o.string("field1", true, text, problems);
    let field2 = o.nullable_string("field2", text, problems);
    let field3 = o.nullable_string("field3", text, problems);
    let object_type_id = o.int("objectTypeId", true, text, problems);
    let connection_id = o.int("connectionId", true, text, problems);
    let dependency = o
        .string("dependency", false, text, problems)
        .unwrap_or_else(|| At::new("Y".to_owned(), v.span));
    for m in o.take_rest(|key| ACTION_ATTRIBUTES.contains(&key)) {
        problems.error(
            "dsr.attribute_of_other_type",
            format!(
                "`{}` is an attribute of action nodes (type 0); this node has type 1 (an object), whose attributes are {}",
                m.key,
                OBJECT_ATTRIBUTES.join(", ")
            ),
            m.key_span,
            &path.key(&m.key),
        );
    }
    let extra = o.finish(problems);
    Some(ObjectAttributes {
        extra,
        field1: field1?,
        field2,
        field3,
        object_type_id: object_type_id?,
        connection_id: connection_id?,
        dependency,
    })
}

fn edge(v: &Spanned, path: &Path, text: &str, problems: &mut Problems) -> Option<Edge> {
    let mut o = Fields::of(v, path, "an edge", Dialect::Document, problems)?;
    let id = o.named_id("id", v.span, text, problems);
    // A node's id, or its name: an action's name, an object's table.
    let mut end = |key: &'static str| match o.get(key) {
        Some(Spanned {
            value: Value::String(n),
            span,
        }) => (
            Some(At::new(UNNAMED, *span)),
            Some(At::new(n.clone(), *span)),
        ),
        _ => (o.int(key, true, text, problems), None),
    };
    let (from, from_name) = end("from");
    let (to, to_name) = end("to");
    let extra = o.finish(problems);
    Some(Edge {
        id: id?,
        from: from?,
        to: to?,
        from_name,
        to_name,
        span: v.span,
        extra,
    })
}

/// The values of a document's fields: integers, ids and texts as the format writes them.
trait DocumentValues<'a> {
    /// An integer; `None` when absent (a problem when `required`) or of another kind.
    fn int(
        &mut self,
        key: &'static str,
        required: bool,
        text: &str,
        problems: &mut Problems,
    ) -> Option<At<i64>>;
    /// A required positive id.
    fn id(&mut self, key: &'static str, text: &str, problems: &mut Problems) -> Option<At<i64>>;
    /// A positive id, or [`UNNAMED`] at `whole` when left out: the deploy finds or makes it
    /// from the object's name.
    fn named_id(
        &mut self,
        key: &'static str,
        whole: crate::Span,
        text: &str,
        problems: &mut Problems,
    ) -> Option<At<i64>> {
        if self.has_key(key) {
            self.id(key, text, problems)
        } else {
            Some(At::new(UNNAMED, whole))
        }
    }
    /// Whether the object has `key`.
    fn has_key(&mut self, key: &'static str) -> bool;
    /// A string; a quoteless number or literal counts as the text it was written as.
    fn string(
        &mut self,
        key: &'static str,
        required: bool,
        text: &str,
        problems: &mut Problems,
    ) -> Option<At<String>>;
    /// An optional string that may be `null`.
    fn nullable_at_string(
        &mut self,
        key: &'static str,
        text: &str,
        problems: &mut Problems,
    ) -> Option<At<String>>;
    /// As [`DocumentValues::nullable_at_string`], without the place.
    fn nullable_string(
        &mut self,
        key: &'static str,
        text: &str,
        problems: &mut Problems,
    ) -> Option<String> {
        self.nullable_at_string(key, text, problems).map(|a| a.v)
    }
    /// An array's items.
    fn array(&mut self, key: &'static str, problems: &mut Problems) -> Option<&'a [Spanned]>;
}

impl<'a> DocumentValues<'a> for Fields<'a> {
    fn int(
        &mut self,
        key: &'static str,
        required: bool,
        _text: &str,
        problems: &mut Problems,
    ) -> Option<At<i64>> {
        let Some(v) = self.get(key) else {
            if required {
                self.missing(key, problems);
            }
            return None;
        };
        match &v.value {
            Value::Int(i) => Some(At::new(*i, v.span)),
            _ => {
                self.wrong(key, "an integer", v, problems);
                None
            }
        }
    }

    fn has_key(&mut self, key: &'static str) -> bool {
        self.has(key)
    }

    fn id(&mut self, key: &'static str, text: &str, problems: &mut Problems) -> Option<At<i64>> {
        let id = self.int(key, true, text, problems)?;
        if id.v <= 0 {
            problems.error(
                "dsr.wrong_type",
                format!("`{key}` must be a positive integer, found {}", id.v),
                id.span,
                &self.path().key(key),
            );
            return None;
        }
        Some(id)
    }

    fn string(
        &mut self,
        key: &'static str,
        required: bool,
        text: &str,
        problems: &mut Problems,
    ) -> Option<At<String>> {
        let Some(v) = self.get(key) else {
            if required {
                self.missing(key, problems);
            }
            return None;
        };
        match &v.value {
            Value::String(s) => Some(At::new(s.clone(), v.span)),
            Value::Int(_) | Value::Float(_) | Value::Bool(_)
                if !text[v.span.start as usize..].starts_with(['"', '\'']) =>
            {
                Some(At::new(
                    text[v.span.start as usize..v.span.end as usize].to_owned(),
                    v.span,
                ))
            }
            _ => {
                self.wrong(key, "a string", v, problems);
                None
            }
        }
    }

    fn nullable_at_string(
        &mut self,
        key: &'static str,
        text: &str,
        problems: &mut Problems,
    ) -> Option<At<String>> {
        match self.get(key) {
            Some(v) if v.value == Value::Null => None,
            Some(_) => self.string(key, false, text, problems),
            None => None,
        }
    }

    fn array(&mut self, key: &'static str, problems: &mut Problems) -> Option<&'a [Spanned]> {
        let v = self.get(key)?;
        match &v.value {
            Value::Array(items) => Some(items),
            _ => {
                self.wrong(key, "an array", v, problems);
                None
            }
        }
    }
}
