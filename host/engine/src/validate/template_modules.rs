//! Template modules: modules defined in documents (`transformationData.modules`) as a Jinja
//! template of SQL with typed attributes, as datasqill's template modules are defined in
//! HJSON. An action that names one in `module` is expanded at deploy, before anything reads
//! its SQL: its attributes are checked against the declared ones (type, required, unknown),
//! defaults filled in, the template rendered with them (and `name`, the action's name, and
//! `action`, its own text, when it has one), and the action becomes one of the module the
//! template `runs` (default `Sql`) with the rendered text, which is checked, stored and run
//! as any. Attributes the running module declares (`truncateBefore`, `materialize`) pass
//! through to it.
//!
//! A deploy's own modules are checked here (their name free of the plugins', `runs` a loaded
//! module, the template readable) and stored by the deploy; an action may also name one
//! stored by an earlier deploy, which the deploy reads from the repository ([`wanted`]).

use super::actions::place_in_string;
use super::catalog::Catalog;
use super::templates::{Failure, RenderBudget, render_str};
use std::collections::{BTreeMap, HashMap, HashSet};
use weft_dsr::model::{At, Document, NodeAttributes, TemplateModule};
use weft_dsr::value::Value;
use weft_dsr::{Path, Problems};

/// The module a template module runs when it does not say.
pub const DEFAULT_RUNS: &str = "Sql";

/// The names the actions of `doc` give in `module` that neither a loaded plugin nor `doc`'s
/// own template modules provide: the stored template modules the deploy looks for.
pub fn wanted(doc: &Document, catalog: &dyn Catalog) -> Vec<String> {
    let own: HashSet<&str> = doc.modules.iter().map(|t| t.name.v.as_str()).collect();
    let mut asked: HashSet<&str> = HashSet::new();
    let mut out: Vec<String> = Vec::new();
    for n in doc.sheets.iter().flat_map(|s| &s.nodes) {
        let NodeAttributes::Action(a) = &n.attributes else {
            continue;
        };
        let m = a.module.v.as_str();
        // Only a name a template module can have is looked for (no stray byte reaches the
        // repository's query).
        if weft_dsr::read::plain_name(m)
            && !own.contains(m)
            && asked.insert(m)
            && catalog.module(m).is_none()
        {
            out.push(m.to_owned());
        }
    }
    out
}

/// A stored template module's definition (the JSON the deploy stored) read back; `None` when
/// it does not read (it was checked when deployed).
pub fn read_stored(definition: &str) -> Option<TemplateModule> {
    let root = weft_dsr::hjson::parse(definition).ok()?;
    let mut problems = Problems::default();
    let m = weft_dsr::read::template_module(&root, &Path::root(), definition, &mut problems)?;
    (!problems.has_errors()).then_some(m)
}

/// Checks `doc`'s template modules, then expands every action that names one of them or of
/// `stored` (by name). Answers the actions that could not be expanded (said at their place),
/// for the checks that follow to leave alone.
pub fn expand(
    doc: &mut Document,
    catalog: &dyn Catalog,
    stored: &BTreeMap<String, TemplateModule>,
    text: &str,
    budget: &mut RenderBudget,
    problems: &mut Problems,
) -> HashSet<i64> {
    let td = Path::root().key("transformationData");
    let mut usable: BTreeMap<String, Usable> = stored
        .iter()
        .map(|(name, m)| (name.clone(), Usable::new(m.clone(), true)))
        .collect();
    let mut broken: HashSet<String> = HashSet::new();
    let mut defined: HashSet<&str> = HashSet::new();
    for (i, m) in doc.modules.iter().enumerate() {
        let mpath = td.key("modules").index(i);
        let again = !defined.insert(m.name.v.as_str());
        if check(m, again, catalog, text, &mpath, problems) {
            usable.insert(m.name.v.clone(), Usable::new(m.clone(), false));
        } else {
            broken.insert(m.name.v.clone());
        }
    }
    let mut failed = HashSet::new();
    for (i, s) in doc.sheets.iter_mut().enumerate() {
        for (j, n) in s.nodes.iter_mut().enumerate() {
            let NodeAttributes::Action(a) = &mut n.attributes else {
                continue;
            };
            let apath = Path::node_attributes(i, j);
            if broken.contains(&a.module.v) {
                failed.insert(n.id.v);
                continue;
            }
            let Some(m) = usable.get(&a.module.v) else {
                continue;
            };
            if !expand_one(n.id.v, a, m, catalog, &apath, budget, problems) {
                failed.insert(n.id.v);
            }
        }
    }
    failed
}

/// A template module an action may name, with its attributes by name.
struct Usable {
    module: TemplateModule,
    /// Its attributes, by name: the index in `module.attributes`.
    by_name: HashMap<String, usize>,
    /// Whether it was stored by an earlier deploy (not defined in this one).
    stored: bool,
}

impl Usable {
    fn new(module: TemplateModule, stored: bool) -> Self {
        let by_name = module
            .attributes
            .iter()
            .enumerate()
            .map(|(i, a)| (a.name.v.clone(), i))
            .collect();
        Usable {
            module,
            by_name,
            stored,
        }
    }
}

/// Whether template module `m` (at `mpath`) can be used: its name is no plugin's and not
/// taken by one before it (`again`), what it runs is loaded, its template reads.
fn check(
    m: &TemplateModule,
    again: bool,
    catalog: &dyn Catalog,
    text: &str,
    mpath: &Path,
    problems: &mut Problems,
) -> bool {
    let mut ok = true;
    if catalog.module(&m.name.v).is_some() {
        problems.error(
            "module.name",
            format!(
                "`{}` is a module of a loaded plugin; a template module takes another name",
                m.name.v
            ),
            m.name.span,
            &mpath.key("name"),
        );
        ok = false;
    }
    if again {
        problems.error(
            "module.name",
            format!("the template module `{}` is defined twice", m.name.v),
            m.name.span,
            &mpath.key("name"),
        );
        ok = false;
    }
    let runs = m.runs.as_ref().map_or(DEFAULT_RUNS, |r| r.v.as_str());
    if catalog.module(runs).is_none() {
        let span = m.runs.as_ref().map_or(m.name.span, |r| r.span);
        problems.error(
            "module.runs",
            format!(
                "`runs: {runs}`: no loaded plugin provides that module; known modules: {}",
                catalog.module_names().join(", ")
            ),
            span,
            &mpath.key("runs"),
        );
        ok = false;
    }
    if let Err(e) = minijinja::Environment::new().template_from_str(&m.template.v) {
        let Failure {
            offset,
            message: what,
        } = Failure::of(&e, &m.template.v);
        let at = offset.map_or(m.template.span.start as usize, |o| {
            place_in_string(
                text,
                m.template.span.start as usize,
                u32::try_from(o).unwrap_or(0),
            )
        });
        problems.error(
            "module.template",
            format!("the template of `{}` does not read: {what}", m.name.v),
            weft_dsr::Span::new(at, at),
            &mpath.key("template"),
        );
        ok = false;
    }
    ok
}

/// Expands action `id` (`a`, at `apath`), which names template module `u`; whether it could.
fn expand_one(
    id: i64,
    a: &mut weft_dsr::model::ActionAttributes,
    u: &Usable,
    catalog: &dyn Catalog,
    apath: &Path,
    budget: &mut RenderBudget,
    problems: &mut Problems,
) -> bool {
    let m = &u.module;
    let runs = m
        .runs
        .as_ref()
        .map_or(DEFAULT_RUNS, |r| r.v.as_str())
        .to_owned();
    let runs_info = catalog.module(&runs);
    let mut ok = true;
    let mut context: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    let mut kept = Vec::new();
    for (key, value) in std::mem::take(&mut a.extra) {
        // An attribute the running module takes goes to it too (a Model's `table` that the
        // template also reads).
        let runs_takes = runs_info
            .as_ref()
            .is_some_and(|i| i.attribute_spec(&key.v).is_some());
        if let Some(decl) = u.by_name.get(&key.v).map(|&i| &m.attributes[i]) {
            let fits = match (decl.kind.v.as_str(), &value.value) {
                ("text", Value::String(s)) => Some(serde_json::Value::String(s.clone())),
                ("integer", Value::Int(i)) => Some(serde_json::Value::from(*i)),
                ("boolean", Value::Bool(b)) => Some(serde_json::Value::Bool(*b)),
                _ => None,
            };
            match fits {
                Some(v) => {
                    context.insert(key.v.clone(), v);
                    if runs_takes {
                        kept.push((key, value));
                    }
                }
                None => {
                    problems.error(
                        "module.attribute",
                        format!(
                            "action {id}: `{}` of template module `{}` is {}, found {}",
                            key.v,
                            m.name.v,
                            decl.kind.v,
                            value.value.kind()
                        ),
                        value.span,
                        &apath.key(&key.v),
                    );
                    ok = false;
                }
            }
        } else if runs_takes {
            kept.push((key, value));
        } else {
            let mut names: Vec<&str> = m.attributes.iter().map(|d| d.name.v.as_str()).collect();
            names.sort_unstable();
            problems.error(
                "module.attribute",
                format!(
                    "action {id}: unknown attribute `{}` for template module `{}`; it takes {} (and what `{runs}`, which runs it, takes)",
                    key.v,
                    m.name.v,
                    if names.is_empty() { "none of its own".to_owned() } else { names.join(", ") }
                ),
                key.span,
                &apath.key(&key.v),
            );
            ok = false;
        }
    }
    for decl in &m.attributes {
        if context.contains_key(&decl.name.v) {
            continue;
        }
        match (&decl.default, decl.required) {
            (Some(d), _) => {
                context.insert(decl.name.v.clone(), d.v.clone());
            }
            (None, true) => {
                let what = decl
                    .description
                    .as_ref()
                    .map_or_else(String::new, |d| format!(" ({})", d.v));
                problems.error(
                    "module.attribute",
                    format!(
                        "action {id}: template module `{}` needs attribute `{}`{what}",
                        m.name.v, decl.name.v
                    ),
                    a.module.span,
                    &apath.key(&decl.name.v),
                );
                ok = false;
            }
            (None, false) => {
                context.insert(decl.name.v.clone(), serde_json::Value::Null);
            }
        }
    }
    a.extra = kept;
    let own_text = a.action.take();
    // However it ends, the action is now one of the module that runs the template, so that
    // the checks after this one do not call its module unknown.
    let module_span = a.module.span;
    a.module = At::new(runs, module_span);
    if !ok {
        return false;
    }
    context.insert(
        "name".to_owned(),
        serde_json::Value::String(a.name.v.clone()),
    );
    if let Some(t) = &own_text {
        context.insert("action".to_owned(), serde_json::Value::String(t.v.clone()));
    }
    match render_str(
        &m.template.v,
        minijinja::Value::from_serialize(&context),
        budget,
    ) {
        Ok(rendered) => {
            a.action = Some(At::new(rendered, module_span));
            a.rendered = true;
            a.text_from_file = false;
            true
        }
        Err(e) => {
            let line = e.offset.map_or_else(String::new, |o| {
                let line = m.template.v[..o.min(m.template.v.len())]
                    .matches('\n')
                    .count()
                    + 1;
                format!(" (line {line} of its template)")
            });
            let whose = if u.stored {
                format!(
                    "the stored template module `{}` (deployed earlier)",
                    m.name.v
                )
            } else {
                format!("template module `{}`", m.name.v)
            };
            problems.error(
                "module.template",
                format!("action {id}: {whose} does not render{line}: {}", e.message),
                module_span,
                &apath.key("module"),
            );
            false
        }
    }
}
