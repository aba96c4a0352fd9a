//! Actions against their modules: attributes of the declared kinds, the module's number of
//! sources and targets, its own validation (SQL included) with positions in the `.dsr`
//! text, and objects checked against their connections.

use super::catalog::Catalog;
use weft_dsr::model::*;
use weft_dsr::{Path, Problems, Span};

/// Checks an action's module and the attributes it takes; an unknown module is an error only
/// when `module_required` (full validation).
pub(super) fn action(
    a: &ActionAttributes,
    apath: &Path,
    module_required: bool,
    catalog: &dyn Catalog,
    problems: &mut Problems,
) {
    let Some(m) = catalog.module(&a.module.v) else {
        if module_required {
            problems.error(
                "node.unknown_module",
                format!(
                    "module `{}` is not provided by any loaded plugin; known modules: {}",
                    a.module.v,
                    catalog.module_names().join(", ")
                ),
                a.module.span,
                &apath.key("module"),
            );
        }
        return;
    };
    if let Some(why) = catalog.module_refusal(&a.module.v) {
        problems.error("node.module_off", why, a.module.span, &apath.key("module"));
    }
    for spec in m.attributes().iter().filter(|s| s.is_required()) {
        if !a.extra.iter().any(|(k, _)| k.v == spec.name()) {
            problems.error(
                "node.module_attribute",
                format!(
                    "module {} needs attribute `{}` ({})",
                    m.name(),
                    spec.name(),
                    spec.description()
                ),
                a.module.span,
                &apath.key(spec.name()),
            );
        }
    }
    for (key, value) in &a.extra {
        let Some(spec) = m.attributes().iter().find(|s| s.name() == key.v.as_str()) else {
            let mut names: Vec<&str> = m.attributes().iter().map(|s| s.name()).collect();
            names.sort_unstable();
            let takes = if names.is_empty() {
                String::new()
            } else {
                format!(" and {}", names.join(", "))
            };
            problems.error(
                "node.module_attribute",
                format!("unknown attribute `{}` for module {}; it takes module, documentation, name, action{takes}", key.v, m.name()),
                key.span,
                &apath.key(&key.v),
            );
            continue;
        };
        if let Some(expected) = wrong_kind(spec.kind(), &value.value) {
            problems.error(
                "dsr.wrong_type",
                format!(
                    "`{}` of module {} must be {expected}, found {}",
                    key.v,
                    m.name(),
                    value.value.kind()
                ),
                value.span,
                &apath.key(&key.v),
            );
        }
    }
}

/// What an attribute's value should be, when it is not of the declared `kind`.
fn wrong_kind(
    kind: weft_sdk::AttributeKind,
    value: &weft_dsr::value::Value,
) -> Option<&'static str> {
    use weft_dsr::value::Value;
    use weft_sdk::AttributeKind;
    let (fits, expected) = match kind {
        AttributeKind::Bool => (matches!(value, Value::Bool(_)), "true or false"),
        AttributeKind::String => (matches!(value, Value::String(_)), "a string"),
        AttributeKind::Integer => (matches!(value, Value::Int(_)), "a whole number"),
        // Declared by a plugin built against a newer sdk: this host cannot make one.
        _ => (false, "of a type this weft does not know (update weft)"),
    };
    (!fits).then_some(expected)
}

/// Whether every attribute of `a` is one `m` takes, of its kind ([`action`] reports those
/// that are not; the module is not asked about an action whose attributes it would not get).
fn attributes_fit(a: &ActionAttributes, m: &weft_sdk::ModuleInfo) -> bool {
    let written = |name: &str| a.extra.iter().any(|(k, _)| k.v == name);
    m.attributes()
        .iter()
        .all(|s| !s.is_required() || written(s.name()))
        && a.extra.iter().all(|(key, value)| {
            m.attributes()
                .iter()
                .find(|s| s.name() == key.v.as_str())
                .is_some_and(|spec| wrong_kind(spec.kind(), &value.value).is_none())
        })
}

/// The code a module's problem is answered with: the shared `sql.*` and `module.*` codes
/// as they are, a code already namespaced by the module as it is, any other as
/// `Module.code`. At most 80 characters of letters, digits, `.`, `_` and `-`.
pub(super) fn module_code(module: &str, code: &str) -> std::borrow::Cow<'static, str> {
    let clean: String = code
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    let shared = clean.starts_with("sql.") || clean.starts_with("module.");
    let own = clean
        .split_once('.')
        .is_some_and(|(first, _)| first == module);
    if clean.is_empty() {
        format!("{module}.problem").into()
    } else if shared || own {
        clean.into()
    } else {
        format!("{module}.{clean}").into()
    }
}

/// The place of byte `offset` of the string literal that starts at `start` in `text`; the
/// end of the string is just after its last character (the literal's closing quotes may
/// stand on a later line).
pub(super) fn place_in_string(text: &str, start: usize, offset: u32) -> usize {
    let map = weft_dsr::hjson::string_source_map(text, start);
    let o = offset as usize;
    if o + 1 >= map.len() && map.len() >= 2 {
        let last = map[map.len() - 2];
        last + text[last..].chars().next().map_or(1, char::len_utf8)
    } else {
        map.get(o).copied().unwrap_or(start)
    }
}

/// The place in the document of a module's problem about action `a` (at `apath`): an offset
/// in its text, or in the value of one of its attributes; else its module.
pub(super) fn place(
    a: &ActionAttributes,
    apath: &Path,
    text: &str,
    offset: Option<u32>,
    attribute: Option<&str>,
) -> (Span, Path) {
    if let Some(name) = attribute {
        return match a.extra.iter().find(|(k, _)| k.v == name) {
            Some((_, value)) => {
                let at = match (&value.value, offset) {
                    (weft_dsr::value::Value::String(_), Some(o)) => {
                        let at = place_in_string(text, value.span.start as usize, o);
                        Span::new(at, at)
                    }
                    _ => value.span,
                };
                (at, apath.key(name))
            }
            // Not written: the module's default; the problem is the module's.
            None => (a.module.span, apath.key("module")),
        };
    }
    match (offset, &a.action) {
        // What a template rendered has no place in the document: its start stands for it
        // (`report` names the rendered line).
        (Some(_), Some(t)) if a.rendered => {
            let at = t.span.start as usize;
            (Span::new(at, at), apath.key("action"))
        }
        // A file's text stands in the joined text as it is.
        (Some(o), Some(t)) if a.text_from_file => {
            let at = (t.span.start as usize + o as usize).min(t.span.end as usize);
            (Span::new(at, at), apath.key("action"))
        }
        (Some(o), Some(t)) => {
            let at = place_in_string(text, t.span.start as usize, o);
            (Span::new(at, at), apath.key("action"))
        }
        _ => (a.module.span, apath.key("module")),
    }
}

/// Reports each problem a module found in action `id` (`a`, at `apath`), at its place in
/// `text`.
pub(super) fn report(
    out: &weft_sdk::ValidateOutput,
    id: i64,
    a: &ActionAttributes,
    apath: &Path,
    text: &str,
    problems: &mut Problems,
) {
    for p in out.problems().iter() {
        let (span, ppath) = place(a, apath, text, p.offset(), p.attribute());
        let mut message = format!("action {id}: {}", p.message());
        if a.rendered
            && p.attribute().is_none()
            && let (Some(o), Some(t)) = (p.offset(), &a.action)
        {
            let o = (o as usize).min(t.v.len());
            let before = t.v.get(..o).unwrap_or_default();
            let line = before.matches('\n').count() + 1;
            let start = before.rfind('\n').map_or(0, |i| i + 1);
            let shown: String = t.v[start..]
                .lines()
                .next()
                .unwrap_or_default()
                .trim()
                .chars()
                .take(80)
                .collect();
            message.push_str(&format!(
                " (line {line}, column {} of the rendered template: `{shown}`)",
                o - start + 1
            ));
        }
        let code = module_code(&a.module.v, p.code());
        // A severity this host does not know (from a newer plugin) counts as an error.
        if p.severity() == weft_dsr::Severity::Warning {
            problems.warning(code, message, span, &ppath);
        } else {
            problems.error(code, message, span, &ppath);
        }
    }
}

/// What the deploy read: the text its spans point into, and the actions whose text their
/// module refused while their objects were taken from it (said then, not again).
#[derive(Debug, Clone, Copy)]
pub struct Read<'a> {
    /// The deploy's text.
    pub text: &'a str,
    /// Those actions' ids.
    pub refused: &'a std::collections::HashSet<i64>,
}

/// What each action's module said of the tables of its text, by action id
/// (`validate::sheets` answers it).
pub type Defines = std::collections::HashMap<i64, Noted>;

/// What a module said of an action's tables, each `(schema, name)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Noted {
    /// The tables its text defines (DDL: creates, drops, alters).
    pub defines: Vec<(Option<String>, String)>,
    /// The tables it checks (a data test).
    pub checks: Vec<(Option<String>, String)>,
}

/// Asks each action's module to validate it, places the module's problems in the document,
/// and checks that every table the action text reads is one of the action's objects; notes
/// in `defines` the tables each action's text defines (DDL), as its module says.
pub(super) fn plugin_checks(
    s: &Sheet,
    path: &Path,
    dialect: &dyn Fn(i64) -> weft_sdk::Dialect,
    catalog: &dyn Catalog,
    read: Read<'_>,
    problems: &mut Problems,
    defines: &mut Defines,
) {
    let Read { text, refused } = read;
    for plan in weft_core::plan::actions_of(s, dialect) {
        // Its text was refused while its objects were taken from it, and said so then.
        if refused.contains(&plan.id) {
            continue;
        }
        let node = &s.nodes[plan.index];
        let NodeAttributes::Action(a) = &node.attributes else {
            continue;
        };
        let apath = path.key("nodes").index(plan.index).key("attributes");
        let Some(info) = catalog.module(&plan.module) else {
            continue;
        };
        // Attributes the host refused are reported once, by `action`; the module is asked
        // about the action once they are right.
        if !attributes_fit(a, &info) {
            continue;
        }
        let input = weft_sdk::ValidateInput::new(
            plan.id,
            plan.text.as_deref(),
            plan.sdk_attributes(Some(&info)),
            plan.source_refs(),
            plan.target_refs(),
        );
        // What the module parses, bounded: refused past the most a module is asked to
        // check, and parsed within the budget shared by every deploy in flight.
        let weight = input.action().map_or(0, str::len)
            + input
                .attributes()
                .filter_map(|(_, v)| v.as_str())
                .map(str::len)
                .sum::<usize>();
        if weight > super::budget::MAX_CHECKED {
            let (span, at) = match &a.action {
                Some(t) => (t.span, apath.key("action")),
                None => (a.module.span, apath.key("module")),
            };
            problems.error(
                "module.text_too_long",
                format!(
                    "action {}: its text is {weight} bytes, more than the {} bytes a module is asked to check; split it into smaller actions, or deploy it with validate=false",
                    plan.id,
                    super::budget::MAX_CHECKED
                ),
                span,
                &at,
            );
            continue;
        }
        let share = super::budget::take(weight);
        let checked = catalog.validate_action(&plan.module, &input);
        let writes = catalog.writes_of(&plan.module, &input);
        let defined: Vec<(Option<String>, String)> = writes
            .iter()
            .filter(|w| w.defines())
            .map(|w| {
                (
                    w.table().schema().map(str::to_owned),
                    w.table().name().to_owned(),
                )
            })
            .collect();
        let checks: Vec<(Option<String>, String)> = catalog
            .checks_of(&plan.module, &input)
            .iter()
            .map(|t| (t.schema().map(str::to_owned), t.name().to_owned()))
            .collect();
        drop(share);
        if !defined.is_empty() || !checks.is_empty() {
            defines.insert(
                plan.id,
                Noted {
                    defines: defined,
                    checks,
                },
            );
        }
        let out = match checked {
            Ok(out) => out,
            Err(e) => {
                problems.error(
                    "module.failed",
                    format!(
                        "action {}: module {} failed while validating it: {e}",
                        plan.id, plan.module
                    ),
                    a.module.span,
                    &apath.key("module"),
                );
                continue;
            }
        };
        let place = |offset: Option<u32>, attribute: Option<&str>| {
            place(a, &apath, text, offset, attribute)
        };
        report(&out, plan.id, a, &apath, text, problems);
        // A table the SQL writes that is none of the action's objects: the order does not
        // know it (a warning: documents that deployed before keep deploying).
        for w in &writes {
            let t = w.table();
            let known = plan
                .targets
                .iter()
                .chain(&plan.sources)
                .any(|o| o.name.eq_ignore_ascii_case(t.name()));
            if !known {
                let (span, ppath) = place(t.offset(), None);
                problems.warning(
                    "sql.undeclared_write",
                    format!(
                        "action {}: its SQL writes `{}`, which is none of its objects, so no run orders by it: add it as a target, or leave the objects out and name the `connection` for weft to take them from the SQL",
                        plan.id,
                        t.name()
                    ),
                    span,
                    &ppath,
                );
            }
        }
        // The host enforces what the module declares.
        {
            let range = |min: u32, max: u32| match (min, max) {
                (a, b) if a == b => format!("exactly {a}"),
                (a, u32::MAX) => format!("at least {a}"),
                (a, b) => format!("{a} to {b}"),
            };
            let (ns, nt) = (plan.sources.len() as u32, plan.targets.len() as u32);
            let (min_sources, max_sources) = info.source_range();
            let (min_targets, max_targets) = info.target_range();
            if ns < min_sources || ns > max_sources {
                problems.error(
                    "module.sources",
                    format!(
                        "action {}: {} takes {} source object(s); this action has {ns}",
                        plan.id,
                        plan.module,
                        range(min_sources, max_sources)
                    ),
                    a.module.span,
                    &apath.key("module"),
                );
            }
            if nt < min_targets || nt > max_targets {
                problems.error(
                    "module.targets",
                    format!(
                        "action {}: {} takes {} target object(s); this action has {nt}",
                        plan.id,
                        plan.module,
                        range(min_targets, max_targets)
                    ),
                    a.module.span,
                    &apath.key("module"),
                );
            }
        }
        // A read matches a source, or a target on a connection the sources are on (an action
        // may read what it writes), or any object when the action has no sources.
        let source_connections: Vec<i64> = plan.sources.iter().map(|o| o.connection).collect();
        let readable = plan.sources.iter().chain(plan.targets.iter().filter(|o| {
            source_connections.is_empty() || source_connections.contains(&o.connection)
        }));
        let readable: Vec<&weft_core::plan::Object> = readable.collect();
        for read in out.reads().iter() {
            let schema = read.schema();
            let known = readable.iter().any(|o| {
                o.name.eq_ignore_ascii_case(read.name())
                    && match (schema, o.schema.as_deref()) {
                        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
                        _ => true,
                    }
            });
            if !known {
                let shown = match schema {
                    Some(sc) => format!("{sc}.{}", read.name()),
                    None => read.name().to_string(),
                };
                let (span, ppath) = place(read.offset(), None);
                problems.error(
                    "sql.unknown_table",
                    format!(
                        "action {} reads `{shown}`, which is not one of its source objects; add a source node for it (the execution order depends on it)",
                        plan.id
                    ),
                    span,
                    &ppath,
                );
            }
        }
    }
}
