//! Validation against fakes of the repository (`Facts`) and the plugins (`Catalog`): each
//! rule family (`ids`, `folders`, `graph`, `actions`, `batches`, connections in `mod.rs`)
//! judged without a repository file or a plugin library.

use super::*;
use std::collections::BTreeMap;
use weft_repo::Result as RepoResult;

/// A repository as validation sees it: folders, and the sheet each taken node belongs to.
#[derive(Default)]
struct FakeFacts {
    folders: BTreeMap<i64, String>,
    nonempty: Vec<i64>,
    nodes: BTreeMap<i64, i64>,
    connections: BTreeMap<i64, String>,
}

impl Facts for FakeFacts {
    fn batch_exists(&self, _id: i64) -> RepoResult<bool> {
        Ok(false)
    }
    fn folder_path(&self, id: i64) -> RepoResult<Option<String>> {
        Ok(self.folders.get(&id).cloned())
    }
    fn sheet_folder(&self, _id: i64) -> RepoResult<Option<String>> {
        Ok(None)
    }
    fn folder_at(&self, path: &str) -> RepoResult<Option<i64>> {
        Ok(self
            .folders
            .iter()
            .find(|(_, p)| p.as_str() == path)
            .map(|(id, _)| *id))
    }
    fn node_sheet(&self, id: i64) -> RepoResult<Option<i64>> {
        Ok(self.nodes.get(&id).copied())
    }
    fn edge_sheet(&self, _id: i64) -> RepoResult<Option<i64>> {
        Ok(None)
    }
    fn folder_has_contents(&self, id: i64, _path: &str) -> RepoResult<bool> {
        Ok(self.nonempty.contains(&id))
    }
    fn connection_facts(&self, id: i64) -> RepoResult<Option<(String, Option<String>)>> {
        Ok(self.connections.get(&id).map(|kind| (kind.clone(), None)))
    }
    fn sheet_exists(&self, _id: i64) -> RepoResult<bool> {
        Ok(false)
    }
    fn action_exists(&self, _id: i64) -> RepoResult<bool> {
        Ok(false)
    }
    fn sheets_at(&self, _folder: &str, _sheet: &str) -> RepoResult<Vec<i64>> {
        Ok(Vec::new())
    }
    fn connections_named(&self, _name: &str) -> RepoResult<Vec<i64>> {
        Ok(Vec::new())
    }
    fn batches_named(&self, _name: &str) -> RepoResult<Vec<i64>> {
        Ok(Vec::new())
    }
    fn actions_at(&self, _folder: &str, _sheet: &str, _action: &str) -> RepoResult<Vec<i64>> {
        Ok(Vec::new())
    }
}

/// Plugins as validation sees them: module `Copy` (one source, one target, a string
/// attribute `keys`), which reports `sql.syntax` at the word `bad` of its action text, its
/// own `keys` at the word `nope` of its `keys`, and a warning `seen` whenever it is asked
/// about an action with `keys`; `Boom`, whose validation fails; the table object type; the
/// native connection type.
struct FakeCatalog;

impl Catalog for FakeCatalog {
    fn module(&self, name: &str) -> Option<weft_sdk::ModuleInfo> {
        let keys = weft_sdk::AttributeSpec::new(
            "keys",
            weft_sdk::AttributeKind::String,
            None,
            "key columns",
        );
        let mode = weft_sdk::AttributeSpec::new(
            "mode",
            weft_sdk::AttributeKind::String,
            Some("fast"),
            "how to copy",
        );
        let keys = if name == "Strict" {
            keys.required()
        } else {
            keys
        };
        ["Copy", "Boom", "Strict"].contains(&name).then(|| {
            weft_sdk::ModuleInfo::new(name, "copies")
                .sources(1, 1)
                .targets(1, 1)
                .attribute(keys)
                .attribute(mode)
        })
    }
    fn module_names(&self) -> Vec<String> {
        vec!["Boom".to_owned(), "Copy".to_owned(), "Strict".to_owned()]
    }
    fn validate_action(
        &self,
        name: &str,
        input: &weft_sdk::ValidateInput,
    ) -> Result<weft_sdk::ValidateOutput, String> {
        if name == "Boom" {
            return Err("it panicked: index out of bounds".to_owned());
        }
        let mut out = weft_sdk::ValidateOutput::default();
        // The host gives the declared default of an attribute the action does not write.
        if input.text("mode").is_none() {
            out.push(weft_sdk::Problem::error("mode", "no mode", None));
        }
        if let Some(at) = input.action().as_ref().and_then(|t| t.find("bad")) {
            out.push(weft_sdk::Problem::error(
                "sql.syntax",
                "syntax error near `bad`",
                Some(at as u32),
            ));
        }
        if let Some(keys) = input.attribute("keys") {
            out.push(weft_sdk::Problem::warning("seen", "asked", None));
            if let Some(at) = keys.as_str().and_then(|k| k.find("nope")) {
                out.push(
                    weft_sdk::Problem::error("keys", "`nope` is no column", Some(at as u32))
                        .on_attribute("keys"),
                );
            }
        }
        Ok(out)
    }
    fn object_type(&self, id: i64) -> bool {
        id == 1
    }
    fn object_type_names(&self) -> Vec<String> {
        vec!["1 (table)".to_owned()]
    }
    fn connection_types(&self) -> Vec<String> {
        vec!["sqlite".to_owned(), "bridge".to_owned()]
    }
    /// A `bridge` connection has no key file entry: its database is not known.
    fn dialect(&self, _id: i64, kind: Option<&str>) -> weft_sdk::Dialect {
        match kind {
            Some("bridge") => weft_sdk::Dialect::Unknown,
            _ => weft_sdk::Dialect::Sqlite,
        }
    }
    fn check_objects(
        &self,
        _objects: &[weft_sdk::ObjectRef],
        _schemas: &std::collections::BTreeMap<i64, String>,
    ) -> Vec<(i64, String)> {
        Vec::new()
    }
}

const FULL: Options = Options {
    full: true,
    check_ids: true,
};

fn codes(problems: &Problems) -> Vec<&str> {
    let mut c: Vec<&str> = problems
        .as_slice()
        .iter()
        .map(|p| p.code.as_ref())
        .collect();
    c.sort_unstable();
    c
}

/// The problems of validating `text` against `facts`: both halves, as a deploy runs them.
fn judge(text: &str, facts: &FakeFacts) -> Problems {
    let (doc, mut problems) = weft_dsr::parse(text);
    let doc = doc.expect("the test document parses");
    let kinds: HashMap<i64, Option<String>> = doc
        .connections
        .iter()
        .map(|c| (c.id.v, Some(c.kind.v.clone())))
        .chain([(1, Some("sqlite".to_owned()))])
        .collect();
    sheets(
        &doc,
        text,
        &FakeCatalog,
        &kinds,
        FULL,
        &Default::default(),
        &mut problems,
    );
    document(&doc, facts, &FakeCatalog, FULL, &mut problems).expect("fake facts do not fail");
    problems
}

fn sheet(nodes: &str, edges: &str) -> String {
    format!(
        "{{version: 1, transformationData: {{sheets: [{{id: 5, attributes: {{name: \"s\", folder_id: 10, folder: \"/etl\"}}, nodes: [{nodes}], edges: [{edges}]}}]}}}}"
    )
}

const OBJECTS: &str = "{id: 51, type: 1, attributes: {field1: \"a\", objectTypeId: 1, connectionId: 1}}, {id: 52, type: 1, attributes: {field1: \"b\", objectTypeId: 1, connectionId: 1}}";

fn etl() -> FakeFacts {
    FakeFacts {
        folders: [(10, "/etl".to_owned())].into_iter().collect(),
        ..FakeFacts::default()
    }
}

#[test]
fn a_good_sheet_against_the_fakes_has_no_problem() {
    let text = sheet(
        &format!("{{id: 50, type: 0, attributes: {{module: \"Copy\", name: \"c\"}}}}, {OBJECTS}"),
        "{id: 1, from: 51, to: 50}, {id: 2, from: 50, to: 52}",
    );
    let p = judge(&text, &etl());
    assert!(codes(&p).is_empty(), "{:?}", p.as_slice());
}

#[test]
fn ids_of_another_sheet_are_taken() {
    let text = sheet(
        &format!("{{id: 50, type: 0, attributes: {{module: \"Copy\", name: \"c\"}}}}, {OBJECTS}"),
        "{id: 1, from: 51, to: 50}, {id: 2, from: 50, to: 52}",
    );
    let mut facts = etl();
    facts.nodes.insert(51, 99);
    assert_eq!(codes(&judge(&text, &facts)), vec!["id.taken"]);
    // The sheet's own nodes are not taken from it.
    facts.nodes.insert(51, 5);
    assert!(codes(&judge(&text, &facts)).is_empty());
}

#[test]
fn the_graph_rules_judge_modules_cycles_and_edges() {
    // An unknown module, with the loaded ones named.
    let text = sheet(
        &format!("{{id: 50, type: 0, attributes: {{module: \"Cpy\", name: \"c\"}}}}, {OBJECTS}"),
        "{id: 1, from: 51, to: 50}, {id: 2, from: 50, to: 52}",
    );
    let p = judge(&text, &etl());
    assert_eq!(codes(&p), vec!["node.unknown_module"]);
    assert!(
        p.as_slice()[0].message.contains("Copy"),
        "{:?}",
        p.as_slice()
    );
    // Object to object, and an edge to a node that is not there.
    let text = sheet(
        &format!("{{id: 50, type: 0, attributes: {{module: \"Copy\", name: \"c\"}}}}, {OBJECTS}"),
        "{id: 1, from: 51, to: 52}, {id: 2, from: 50, to: 77}",
    );
    let judged = judge(&text, &etl());
    let c = codes(&judged);
    assert!(
        c.contains(&"edge.object_to_object") && c.contains(&"edge.unknown_node"),
        "{c:?}"
    );
    // A cycle through two actions.
    let text = sheet(
        &format!(
            "{{id: 50, type: 0, attributes: {{module: \"Copy\", name: \"c\"}}}}, {{id: 60, type: 0, attributes: {{module: \"Copy\", name: \"d\"}}}}, {OBJECTS}"
        ),
        "{id: 1, from: 51, to: 50}, {id: 2, from: 50, to: 52}, {id: 3, from: 52, to: 60}, {id: 4, from: 60, to: 51}",
    );
    assert!(codes(&judge(&text, &etl())).contains(&"sheet.cycle"));
}

#[test]
fn folder_rules_ask_the_repository() {
    let folder = |id: i64, path: &str| {
        format!("{{version: 1, transformationData: {{folders: [{{id: {id}, path: \"{path}\"}}]}}}}")
    };
    let mut facts = etl();
    // A path another folder has.
    assert_eq!(
        codes(&judge(&folder(11, "/etl"), &facts)),
        vec!["folder.path_taken"]
    );
    // A parent that exists neither in the document nor in the repository.
    assert_eq!(
        codes(&judge(&folder(12, "/nowhere/x"), &facts)),
        vec!["folder.parent_missing"]
    );
    // Renaming a folder that holds sheets.
    facts.nonempty.push(10);
    assert_eq!(
        codes(&judge(&folder(10, "/elt"), &facts)),
        vec!["folder.rename_nonempty"]
    );
    // A child of a known folder is fine.
    assert!(codes(&judge(&folder(13, "/etl/marts"), &facts)).is_empty());
}

#[test]
fn a_connection_whose_database_is_not_known_here_is_warned_of_once_per_sheet() {
    let objects = OBJECTS.replace("connectionId: 1", "connectionId: 3");
    let text = format!(
        "{{version: 1, transformationData: {{connections: [{{id: 3, name: \"w\", type: \"bridge\"}}], sheets: [{{id: 5, attributes: {{name: \"s\", folder_id: 10, folder: \"/etl\"}},\n nodes: [{{id: 50, type: 0, attributes: {{module: \"Copy\", name: \"c\"}}}},\n {objects}], edges: [{{id: 1, from: 51, to: 50}}, {{id: 2, from: 50, to: 52}}]}}]}}}}"
    );
    let p = judge(&text, &etl());
    assert_eq!(
        codes(&p),
        vec!["node.connection_unknown"],
        "{:?}",
        p.as_slice()
    );
    let w = &p.as_slice()[0];
    assert_eq!(w.severity, weft_dsr::Severity::Warning);
    assert!(
        w.message
            .contains("node 51: connection 3 (type `bridge`) has no entry"),
        "{}",
        w.message
    );
    let at = text.find("connectionId: 3").expect("first object") + "connectionId: ".len();
    assert_eq!(w.span.map(|s| s.start as usize), Some(at), "{w:?}");
}

#[test]
fn a_connection_type_no_plugin_provides_is_an_error() {
    let text =
        "{version: 1, transformationData: {connections: [{id: 3, name: \"w\", type: \"oracle\"}]}}";
    assert_eq!(codes(&judge(text, &etl())), vec!["connection.type"]);
}

#[test]
fn a_module_problem_is_placed_in_the_action_text_and_a_failing_module_is_named() {
    // `bad` stands on the second line of the action text, at its sixth column.
    let text = sheet(
        &format!(
            "{{id: 50, type: 0, attributes: {{module: \"Copy\", name: \"c\", action: \"SELECT 1\\nFROM bad\"}}}}, {OBJECTS}"
        ),
        "{id: 1, from: 51, to: 50}, {id: 2, from: 50, to: 52}",
    );
    let p = judge(&text, &etl());
    assert_eq!(codes(&p), vec!["sql.syntax"]);
    let problem = &p.as_slice()[0];
    assert!(problem.message.starts_with("action 50: "), "{problem:?}");
    let at = text.find("bad").expect("bad") as u32;
    assert_eq!(problem.span.map(|s| s.start), Some(at), "{problem:?}");
    // A module whose validation fails: named, with why.
    let text = sheet(
        &format!("{{id: 50, type: 0, attributes: {{module: \"Boom\", name: \"c\"}}}}, {OBJECTS}"),
        "{id: 1, from: 51, to: 50}, {id: 2, from: 50, to: 52}",
    );
    let p = judge(&text, &etl());
    assert_eq!(codes(&p), vec!["module.failed"]);
    assert!(
        p.as_slice()[0].message.contains("Boom failed")
            && p.as_slice()[0].message.contains("panicked"),
        "{:?}",
        p.as_slice()
    );
    // The host enforces the module's number of sources (and object 51 now hangs alone).
    let text = sheet(
        &format!("{{id: 50, type: 0, attributes: {{module: \"Copy\", name: \"c\"}}}}, {OBJECTS}"),
        "{id: 2, from: 50, to: 52}",
    );
    assert_eq!(
        codes(&judge(&text, &etl())),
        vec!["module.sources", "node.unconnected"]
    );
}

#[test]
fn a_module_problem_about_an_attribute_is_placed_in_its_value_with_the_module_code() {
    // `nope` inside the value of `keys`, on the line after the action's.
    let text = sheet(
        &format!(
            "{{id: 50, type: 0, attributes: {{module: \"Copy\", name: \"c\",\n keys: \"id, nope\"}}}}, {OBJECTS}"
        ),
        "{id: 1, from: 51, to: 50}, {id: 2, from: 50, to: 52}",
    );
    let p = judge(&text, &etl());
    assert_eq!(codes(&p), vec!["Copy.keys", "Copy.seen"]);
    let keys = p
        .as_slice()
        .iter()
        .find(|x| x.code == "Copy.keys")
        .expect("keys problem");
    let at = text.find("nope").expect("nope") as u32;
    assert_eq!(keys.span.map(|s| s.start), Some(at), "{keys:?}");
    assert!(keys.path.ends_with("attributes.keys"), "{keys:?}");
    // An attribute the host refuses is reported once, by the host: the module is not asked.
    let text = sheet(
        &format!(
            "{{id: 50, type: 0, attributes: {{module: \"Copy\", name: \"c\", keys: 5}}}}, {OBJECTS}"
        ),
        "{id: 1, from: 51, to: 50}, {id: 2, from: 50, to: 52}",
    );
    assert_eq!(codes(&judge(&text, &etl())), vec!["dsr.wrong_type"]);
}

#[test]
fn a_required_attribute_is_asked_for_and_a_default_is_given_to_the_module() {
    // `Strict` needs `keys`: the host says so at the module, and does not ask the module.
    let text = sheet(
        &format!("{{id: 50, type: 0, attributes: {{module: \"Strict\", name: \"c\"}}}}, {OBJECTS}"),
        "{id: 1, from: 51, to: 50}, {id: 2, from: 50, to: 52}",
    );
    let p = judge(&text, &etl());
    assert_eq!(codes(&p), vec!["node.module_attribute"]);
    assert!(
        p.as_slice()[0]
            .message
            .contains("module Strict needs attribute `keys` (key columns)"),
        "{:?}",
        p.as_slice()
    );
    // `mode` is not written: the module gets its default (else it reports `no mode`).
    let text = sheet(
        &format!(
            "{{id: 50, type: 0, attributes: {{module: \"Strict\", name: \"c\", keys: \"id\"}}}}, {OBJECTS}"
        ),
        "{id: 1, from: 51, to: 50}, {id: 2, from: 50, to: 52}",
    );
    assert_eq!(codes(&judge(&text, &etl())), vec!["Strict.seen"]);
}

#[test]
fn a_module_code_is_namespaced_unless_it_is_shared_or_already_the_modules() {
    use super::actions::module_code;
    assert_eq!(module_code("Upsert", "keys"), "Upsert.keys");
    assert_eq!(module_code("Upsert", "Upsert.keys"), "Upsert.keys");
    assert_eq!(module_code("Upsert", "sql.syntax"), "sql.syntax");
    assert_eq!(
        module_code("Upsert", "module.attribute"),
        "module.attribute"
    );
    assert_eq!(module_code("Upsert", ""), "Upsert.problem");
    assert_eq!(module_code("Upsert", "a b\n<c>"), "Upsert.a_b__c_");
    assert_eq!(module_code("M", &"x".repeat(500)).len(), 2 + 80);
}

#[test]
fn batches_need_a_readable_schedule_and_elements_that_exist() {
    let batch = |schedule: &str, elements: &str| {
        format!(
            "{{version: 1, transformationData: {{batches: [{{id: 7, name: \"nightly\", schedule: \"{schedule}\", elements: [{elements}]}}]}}}}"
        )
    };
    let mut facts = etl();
    assert_eq!(
        codes(&judge(
            &batch("hourly", "{elementType: \"F\", elementId: 10}"),
            &facts
        )),
        vec!["batch.schedule"]
    );
    assert_eq!(
        codes(&judge(
            &batch("daily 22:00", "{elementType: \"S\", elementId: 99}"),
            &facts
        )),
        vec!["batch.element_missing"]
    );
    assert_eq!(
        codes(&judge(
            &batch("daily 22:00", "{elementType: \"X\", elementId: 10}"),
            &facts
        )),
        vec!["batch.element_type"]
    );
    // A folder in the repository, and a sheet in the document, are there.
    assert!(
        codes(&judge(
            &batch("daily 22:00", "{elementType: \"F\", elementId: 10}"),
            &facts
        ))
        .is_empty()
    );
    facts.folders.insert(11, "/etl/b".to_owned());
    let text = sheet(
        &format!("{{id: 50, type: 0, attributes: {{module: \"Copy\", name: \"c\"}}}}, {OBJECTS}"),
        "{id: 1, from: 51, to: 50}, {id: 2, from: 50, to: 52}",
    )
    .replacen(
        "]}}",
        "], batches: [{id: 7, name: \"n\", schedule: \"every 15 minutes\", elements: [{elementType: \"S\", elementId: 5}]}]}}",
        1,
    );
    let p = judge(&text, &facts);
    assert!(codes(&p).is_empty(), "{:?}", p.as_slice());
}
