//! Hover documentation: on a key of an action's attributes, what the attribute does (table A's
//! from the format, a module's from the module's own declaration, so that a plugin's
//! attributes are documented as it declares them); on the module's name, the module and its
//! attributes; on a key of an attached test (`tests: [{ unique: "id" }]`), the `Test`
//! module's.

use weft_core::plugins::Registry;
use weft_dsr::model::{TemplateAttribute, TemplateModule};
use weft_dsr::value::{Member, Spanned, Value};
use weft_sdk::{AttributeKind, AttributeSpec, ModuleInfo};

/// The attributes every action may write (table A), with what they do.
const TABLE_A: &[(&str, &str)] = &[
    (
        "module",
        "The module that runs the action (`weft plugins` lists them). Required.",
    ),
    (
        "name",
        "The action's name, unique in its sheet: `/folder/sheet/name` in runs, batches and `after`. Required.",
    ),
    ("documentation", "Free text about the action."),
    (
        "action",
        "The action's text: SQL for most modules, checked at deploy in the connection's dialect.",
    ),
    (
        "file",
        "The action's text from a file of the project, relative to this document (`models/orders.sql`); problems in it are shown at its own lines.",
    ),
    (
        "template",
        "`true`: the text is a Jinja template (minijinja), rendered at deploy; the rendered SQL is checked, stored and run.",
    ),
    (
        "connection",
        "The connection (a name or an id) the action's SQL runs on when it has no object nodes: its tables are then taken from the SQL.",
    ),
    (
        "after",
        "Actions that must end before this one starts, by name in the sheet, path (`/folder/sheet/action`) or id: for what the data cannot say.",
    ),
    (
        "tests",
        "Data tests of the table the action writes: `{ unique: \"id\" }`, `{ not_null: \"a, b\" }`, `{ accepted_values: \"status\", values: [...] }`, `{ relationships: \"customer_id\", to: \"customers.id\" }`, `{ row_count: 1 }`, `severity: warn`. Readers of the table wait for them and are skipped when one fails.",
    ),
    (
        "renamedFrom",
        "The action's former name: it keeps its id (and its history) through the rename.",
    ),
    (
        "priority",
        "0 to 1000, default 0: when slots are scarce, ready actions of the highest priority are claimed first.",
    ),
    (
        "retries",
        "How many times a failure is tried again (default 0).",
    ),
    (
        "retryDelaySeconds",
        "Seconds before a retry (doubled at each).",
    ),
    (
        "retryOn",
        "Which failures are retried: the words of their messages (default all).",
    ),
    (
        "loopQuery",
        "A query: the action runs once per row, with the row's columns as variables.",
    ),
    (
        "errorIfLoopEmpty",
        "`true`: a loop query that returns no row fails the action.",
    ),
    (
        "loopContinueOnError",
        "`true`: a failed turn of the loop does not end the loop.",
    ),
];

/// The kinds of data test an entry of `tests` names by its first key.
const TEST_KINDS: &[(&str, &str)] = &[
    (
        "unique",
        "No two rows with the same values of the columns (comma-separated); NULLs left out.",
    ),
    (
        "not_null",
        "No NULL in any of the columns (comma-separated).",
    ),
    (
        "accepted_values",
        "No value of the column outside `values`; NULLs left out.",
    ),
    (
        "relationships",
        "Every value of the column is one of `to` (`table.column`); NULLs left out.",
    ),
    (
        "row_count",
        "The table holds from `min` to `max` rows (the value: at least so many).",
    ),
    ("no_rows", "The query must return no row."),
];

/// The modules hover knows: the loaded plugins', and the template modules of the project.
pub struct Modules<'a> {
    /// The loaded plugins.
    pub registry: &'a Registry,
    /// The template modules the project's documents define.
    pub templates: &'a [TemplateModule],
}

/// Markdown about the place `offset` of the document `root` stands on, if it is a key of an
/// action's attributes or of an attached test, or the module's name.
pub fn hover(root: &Spanned, offset: u32, modules: &Modules<'_>) -> Option<String> {
    let registry = modules.registry;
    let mut chain = Vec::new();
    let (member, on_key) = find(root, offset, &mut chain)?;
    let keys: Vec<&str> = chain.iter().map(|s| s.key).collect();
    // `... nodes[j].attributes.KEY` or `... nodes[j].attributes.tests[k].KEY`.
    let n = keys.len();
    if n >= 2 && keys[n - 1] == "attributes" && keys[n - 2] == "nodes" {
        let attributes = chain[n - 1].members;
        let module = text_of(attributes, "module");
        if member.key == "module" && !on_key {
            let module = module?;
            if let Some(t) = modules.templates.iter().find(|t| t.name.v == module) {
                return Some(template_doc(t));
            }
            return registry.module(module).map(|m| module_doc(&m.info));
        }
        if !on_key {
            return None;
        }
        if let Some(t) = module.and_then(|m| modules.templates.iter().find(|t| t.name.v == m)) {
            if let Some(a) = t.attributes.iter().find(|a| a.name.v == member.key) {
                return Some(template_attribute_doc(a, &t.name.v));
            }
            // What the module that runs it takes passes through.
            let runs = t.runs.as_ref().map_or("Sql", |r| r.v.as_str());
            return attribute_doc(&member.key, Some(runs), registry);
        }
        return attribute_doc(&member.key, module, registry);
    }
    // (An array's item steps with its array's key: `attributes`, `tests`, `tests`.)
    if n >= 3
        && keys[n - 1] == "tests"
        && keys[n - 2] == "tests"
        && keys[n - 3] == "attributes"
        && on_key
    {
        if let Some((kind, what)) = TEST_KINDS.iter().find(|(k, _)| *k == member.key) {
            return Some(format!("**{kind}** (data test)\n\n{what}"));
        }
        return attribute_doc(&member.key, Some("Test"), registry);
    }
    None
}

/// A step from an object to the member whose value holds the place.
struct Step<'a> {
    /// The member's key (an array's item takes its array's).
    key: &'a str,
    /// The members of the object the step reaches (empty when it reaches an array or a
    /// scalar).
    members: &'a [Member],
}

/// The innermost member whose key or value holds `offset`, with whether it is the key, and
/// the chain of keys to it.
fn find<'a>(v: &'a Spanned, offset: u32, chain: &mut Vec<Step<'a>>) -> Option<(&'a Member, bool)> {
    match &v.value {
        Value::Object(members) => {
            for m in members {
                if m.key_span.start <= offset && offset <= m.key_span.end {
                    return Some((m, true));
                }
                if m.value.span.start <= offset && offset <= m.value.span.end {
                    let members = match &m.value.value {
                        Value::Object(inner) => inner.as_slice(),
                        _ => &[],
                    };
                    chain.push(Step {
                        key: &m.key,
                        members,
                    });
                    if let found @ Some(_) = find(&m.value, offset, chain) {
                        return found;
                    }
                    chain.pop();
                    return Some((m, false));
                }
            }
            None
        }
        Value::Array(items) => {
            let key = chain.last().map_or("", |s| s.key);
            for item in items {
                if item.span.start <= offset && offset <= item.span.end {
                    let members = match &item.value {
                        Value::Object(inner) => inner.as_slice(),
                        _ => &[],
                    };
                    chain.push(Step { key, members });
                    let found = find(item, offset, chain);
                    if found.is_none() {
                        chain.pop();
                    }
                    return found;
                }
            }
            None
        }
        _ => None,
    }
}

/// The text of member `key` of `members`, if it is text.
fn text_of<'a>(members: &'a [Member], key: &str) -> Option<&'a str> {
    members
        .iter()
        .find(|m| m.key == key)
        .and_then(|m| match &m.value.value {
            Value::String(s) => Some(s.as_str()),
            _ => None,
        })
}

/// What attribute `key` of an action of `module` does.
fn attribute_doc(key: &str, module: Option<&str>, registry: &Registry) -> Option<String> {
    if let Some((_, what)) = TABLE_A.iter().find(|(k, _)| *k == key) {
        return Some(format!("**{key}** (every action)\n\n{what}"));
    }
    let info = &registry.module(module?)?.info;
    info.attribute_spec(key)
        .map(|spec| spec_doc(spec, info.name()))
}

/// A template module and its attributes.
fn template_doc(t: &TemplateModule) -> String {
    let runs = t.runs.as_ref().map_or("Sql", |r| r.v.as_str());
    let mut out = format!(
        "**{}** (template module, runs `{runs}`)\n\n{}",
        t.name.v,
        t.description.as_ref().map_or("", |d| d.v.as_str())
    );
    if !t.attributes.is_empty() {
        out.push_str("\n\nAttributes:");
        for a in &t.attributes {
            let what = a.description.as_ref().map_or("", |d| d.v.as_str());
            out.push_str(&format!("\n- `{}` ({}): {what}", a.name.v, a.kind.v));
        }
    }
    out
}

/// An attribute as a template module declares it.
fn template_attribute_doc(a: &TemplateAttribute, module: &str) -> String {
    let default = match (a.required, &a.default) {
        (true, _) => ", required".to_owned(),
        (false, Some(d)) => format!(", default `{}`", d.v),
        (false, None) => String::new(),
    };
    format!(
        "**{}** ({}{default}) of template module `{module}`\n\n{}",
        a.name.v,
        a.kind.v,
        a.description.as_ref().map_or("", |d| d.v.as_str())
    )
}

/// An attribute as its module declares it.
fn spec_doc(spec: &AttributeSpec, module: &str) -> String {
    let kind = match spec.kind() {
        AttributeKind::Bool => "true or false",
        AttributeKind::String => "text",
        AttributeKind::Integer => "a whole number",
        _ => "a value",
    };
    let default = match (spec.is_required(), spec.default()) {
        (true, _) => ", required".to_owned(),
        (false, Some(d)) => format!(", default `{d}`"),
        (false, None) => String::new(),
    };
    format!(
        "**{}** ({kind}{default}) of `{module}`\n\n{}",
        spec.name(),
        spec.description()
    )
}

/// A module and its attributes.
fn module_doc(info: &ModuleInfo) -> String {
    let mut out = format!("**{}**\n\n{}", info.name(), info.description());
    if !info.attributes().is_empty() {
        out.push_str("\n\nAttributes:");
        for spec in info.attributes() {
            out.push_str(&format!("\n- `{}`: {}", spec.name(), spec.description()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"{
  version: 1
  transformationData: {
    sheets: [
      {
        attributes: { name: "s", folder: "/f" }
        nodes: [
          { attributes: { module: "Nope", name: "a", tests: [{ unique: "id", severity: "warn" }] } }
        ]
      }
    ]
  }
}"#;

    fn at(needle: &str) -> u32 {
        u32::try_from(DOC.find(needle).expect("in the document") + 1).expect("small")
    }

    #[test]
    fn table_a_and_test_kinds_are_documented_without_plugins() {
        let root = weft_dsr::hjson::parse(DOC).expect("reads");
        let registry = Registry::default();
        let modules = Modules {
            registry: &registry,
            templates: &[],
        };
        let registry = &modules;
        let name = hover(&root, at("name: \"a\""), registry).expect("name");
        assert!(name.starts_with("**name** (every action)"), "{name}");
        let tests = hover(&root, at("tests:"), registry).expect("tests");
        assert!(tests.contains("Readers of the table wait"), "{tests}");
        let unique = hover(&root, at("unique:"), registry).expect("unique");
        assert!(unique.starts_with("**unique** (data test)"), "{unique}");
        // A sheet's attributes are not an action's; an unknown module has no attributes.
        assert_eq!(hover(&root, at("name: \"s\""), registry), None);
        assert_eq!(hover(&root, at("\"Nope\""), registry), None);
        assert_eq!(hover(&root, at("version"), registry), None);
    }

    #[test]
    fn a_template_modules_attributes_are_documented_as_it_declares_them() {
        let text = r#"{
  version: 1
  transformationData: {
    modules: [
      {
        name: "Pivot"
        description: "Pivots a measure."
        attributes: [{ name: "source", type: "text", required: true, description: "the table pivoted" }]
        template: "SELECT 1 FROM {{ source }}"
      }
    ]
    sheets: [{ attributes: { name: "s", folder: "/f" }, nodes: [{ attributes: { module: "Pivot", name: "p", source: "t" } }] }]
  }
}"#;
        let (doc, _) = weft_dsr::parse(text);
        let templates = doc.expect("reads").modules;
        let registry = Registry::default();
        let modules = Modules {
            registry: &registry,
            templates: &templates,
        };
        let root = weft_dsr::hjson::parse(text).expect("reads");
        let at = |needle: &str| u32::try_from(text.find(needle).expect("in") + 1).expect("small");
        let source = hover(&root, at("source: \"t\""), &modules).expect("source");
        assert_eq!(
            source,
            "**source** (text, required) of template module `Pivot`\n\nthe table pivoted"
        );
        let module = hover(&root, at("\"Pivot\", name"), &modules).expect("module");
        assert!(
            module.starts_with("**Pivot** (template module, runs `Sql`)\n\nPivots a measure.")
                && module.contains("- `source` (text): the table pivoted"),
            "{module}"
        );
    }
}
