//! Tests of the deploy service against a real SQLite repository in a temporary directory:
//! every validation rule, with its code, position and path; transactions; dry runs;
//! identical redeploys; `intoFolder`.

use super::*;
use weft_core::settings::Environment;
use weft_protocol::Severity;
use weft_repo::Repository;

const FOLDER: &str = include_str!("fixtures/one-upsert-sheet/folder.dsr");
const CONNECTION: &str = include_str!("fixtures/one-upsert-sheet/connection.dsr");
const SHEET: &str = include_str!("fixtures/one-upsert-sheet/sheet.dsr");

fn catalog() -> crate::validate::PluginCatalog<'static> {
    crate::validate::PluginCatalog {
        registry: weft_core::plugins::test_registry(),
        keys: None,
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    repo: Repository,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = Repository::open(&dir.path().join("repository.db")).expect("open");
        Fixture { _dir: dir, repo }
    }

    /// A repository holding the quickstart folder and connection.
    fn with_base() -> Self {
        let f = Self::new();
        f.ok(FOLDER);
        f.ok(CONNECTION);
        f
    }

    fn deploy(&self, text: &str, opts: Options) -> Result<Report, Error> {
        deploy(
            &self.repo,
            &catalog(),
            text,
            opts,
            Environment::Development,
            Deployer::anyone("tests"),
        )
    }

    fn ok(&self, text: &str) -> Report {
        match self.deploy(text, Options::default()) {
            Ok(r) => r,
            Err(Error::Invalid(d)) => panic!("deploy rejected: {d:#?}"),
            Err(e) => panic!("deploy failed: {e}"),
        }
    }

    fn invalid(&self, text: &str) -> Vec<Detail> {
        self.invalid_with(text, Options::default())
    }

    fn invalid_with(&self, text: &str, opts: Options) -> Vec<Detail> {
        let before = self.dump();
        let d = match self.deploy(text, opts) {
            Err(Error::Invalid(d)) => d,
            Ok(r) => panic!("deploy accepted: {r:#?}"),
            Err(e) => panic!("unexpected error: {e}"),
        };
        assert_eq!(
            before,
            self.dump(),
            "a rejected deploy changed the repository"
        );
        d
    }

    fn dump(&self) -> String {
        let conn = weft_repo::connect(self.repo.path().expect("a file")).expect("connect");
        weft_repo::dump(&conn).expect("dump")
    }
}

fn errors(details: &[Detail]) -> Vec<&Detail> {
    details
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect()
}

fn find<'a>(details: &'a [Detail], code: &str) -> &'a Detail {
    details
        .iter()
        .find(|d| d.code == code)
        .unwrap_or_else(|| panic!("no problem {code} in {details:#?}"))
}

/// The position of the first occurrence of `needle` in `text`, as (line, column).
fn pos_of(text: &str, needle: &str) -> (Option<u32>, Option<u32>) {
    let offset = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in text"));
    let p = LineIndex::new(text).position(offset as u32);
    (Some(p.line), Some(p.column))
}

/// The quickstart as a new user deploys it (the other tests judge their own fixtures).
#[test]
fn the_quickstart_as_published_deploys_in_its_order() {
    let f = Fixture::new();
    for text in [
        include_str!("../../../../examples/quickstart/1-folder.dsr"),
        include_str!("../../../../examples/quickstart/2-connection.dsr"),
        include_str!("../../../../examples/quickstart/3-sheet.dsr"),
    ] {
        let r = f.ok(text);
        assert_eq!(r.created.len(), 1, "{r:?}");
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }
}

#[test]
fn deploys_the_quickstart_and_reports_created_then_unchanged() {
    let f = Fixture::with_base();
    let r = f.ok(SHEET);
    assert_eq!(
        r.created
            .iter()
            .map(|c| (c.kind.word(), c.id))
            .collect::<Vec<_>>(),
        vec![("sheet", 100)]
    );
    assert!(r.updated.is_empty() && r.unchanged.is_empty());
    let after_first = f.dump();
    assert!(after_first.contains("upsert customers"), "{after_first}");
    let again = f.ok(SHEET);
    assert_eq!(
        again.unchanged.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![100]
    );
    assert!(again.created.is_empty() && again.updated.is_empty());
    assert_eq!(
        after_first,
        f.dump(),
        "an identical redeploy must write nothing"
    );
    let folder_again = f.ok(FOLDER);
    assert_eq!(folder_again.unchanged.len(), 1);
}

#[test]
fn stores_nodes_edges_and_derived_order() {
    let f = Fixture::with_base();
    let text = SHEET.replace("          order: LOAD CUSTOMERS\n", "");
    f.ok(&text);
    let conn = weft_repo::connect(f.repo.path().expect("a file")).expect("connect");
    let order: String = conn
        .query_row("SELECT order_key FROM sheets WHERE id = 100", [], |r| {
            r.get(0)
        })
        .expect("sheet");
    assert_eq!(order, "LOAD CUSTOMERS");
    let (module, action, attrs): (String, String, String) = conn
        .query_row(
            "SELECT module, action, attributes FROM nodes WHERE id = 102",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("node");
    assert_eq!(module, "Upsert");
    assert!(
        action.starts_with("SELECT id, name, email\n  FROM stg_customers"),
        "{action:?}"
    );
    assert_eq!(attrs, r#"{"keys":"id"}"#);
    let edges: Vec<(i64, i64)> = conn
        .prepare("SELECT from_node, to_node FROM edges WHERE sheet_id = 100 ORDER BY id")
        .expect("prepare")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(edges, vec![(101, 102), (102, 103)]);
}

#[test]
fn a_redeploy_replaces_nodes_and_says_what_it_deleted() {
    let f = Fixture::with_base();
    f.ok(SHEET);
    // The same sheet without its target node and that node's edge, its action renamed.
    let text = include_str!("fixtures/cases/the-target-dropped-and-the-action-renamed.dsr");
    // Without its target the Upsert would be invalid; the graph is not what this tests.
    let r = f
        .deploy(
            text,
            Options {
                validate: false,
                ..Options::default()
            },
        )
        .expect("accepted");
    assert_eq!(
        r.updated.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![100]
    );
    let deleted: Vec<(&str, i64)> = r.deleted.iter().map(|c| (c.kind.word(), c.id)).collect();
    assert_eq!(deleted, vec![("node", 103), ("edge", 105)]);
    let dump = f.dump();
    assert!(dump.contains("upsert all customers"));
    assert!(
        !dump.contains("\"customers\"|"),
        "node 103 should be gone: {dump}"
    );
}

#[test]
fn syntax_error_deep_in_a_sheet_has_its_line_and_column() {
    let f = Fixture::with_base();
    let text = include_str!("fixtures/cases/a-key-with-a-space-deep-in-a-sheet.dsr");
    let d = f.invalid(text);
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0].code, "dsr.syntax");
    assert_eq!((d[0].line, d[0].column), pos_of(text, " key: 1"));
    assert!(
        d[0].message.contains("whitespace in your key name"),
        "{}",
        d[0].message
    );
}

#[test]
fn unknown_missing_and_mistyped_fields_are_all_reported_with_paths() {
    let f = Fixture::with_base();
    // Two fields weft does not know, an edge end naming no node, an object without its
    // connection.
    let text = include_str!("fixtures/cases/unknown-missing-and-mistyped-fields.dsr");
    let d = f.invalid(text);
    // A field weft does not know is a warning and is kept...
    let kept = d
        .iter()
        .find(|x| x.code == "dsr.unknown_field" && x.severity == Severity::Warning)
        .expect("a warning for colour");
    assert_eq!(kept.path, "transformationData.sheets[0].attributes.colour");
    assert_eq!((kept.line, kept.column), pos_of(text, "colour"));
    assert!(kept.message.contains("kept as written"), "{}", kept.message);
    // ...unless it is almost certainly a typo of one it knows.
    let typo = errors(&d)
        .into_iter()
        .find(|x| x.code == "dsr.unknown_field")
        .expect("an error for orderr");
    assert_eq!(typo.path, "transformationData.sheets[0].attributes.orderr");
    assert!(
        typo.message.contains("did you mean `order`?"),
        "{}",
        typo.message
    );
    // A text where a node's id goes is a node's name (`"one"`): found once the document is
    // whole, which an object without its connection is not.
    let missing = find(&d, "dsr.missing_field");
    assert_eq!(
        missing.path,
        "transformationData.sheets[0].nodes[2].attributes.connectionId"
    );
    assert_eq!(errors(&d).len(), 2, "{d:#?}");
    let whole = text.replace("objectTypeId: 1", "objectTypeId: 1, connectionId: 1");
    if whole != text {
        let d = f.invalid(&whole);
        let wrong = find(&d, "edge.unknown_node");
        assert_eq!(wrong.path, "transformationData.sheets[0].edges[0].from");
        assert_eq!((wrong.line, wrong.column), pos_of(&whole, "\"one\""));
    }
}

#[test]
fn fields_weft_does_not_know_are_kept_through_the_repository() {
    let f = Fixture::with_base();
    // `owner` on the sheet and `exportedBy` at the top of the document.
    let text =
        include_str!("fixtures/cases/fields-weft-does-not-know-on-the-sheet-and-the-document.dsr");
    let report = f.ok(text);
    let warnings: Vec<&str> = report.warnings.iter().map(|w| w.path.as_str()).collect();
    assert!(
        warnings.contains(&"transformationData.sheets[0].attributes.owner")
            && warnings.contains(&"exportedBy"),
        "{warnings:?}"
    );
    let conn = weft_repo::connect(f.repo.path().expect("a file")).expect("connect");
    let definition: String = conn
        .query_row("SELECT definition FROM sheets WHERE id = 100", [], |r| {
            r.get(0)
        })
        .expect("sheet");
    assert!(
        definition.contains("\"owner\":\"etl-team\""),
        "{definition}"
    );
    // The same document again is an identical redeploy.
    let again = f.ok(text);
    assert!(
        again.created.is_empty() && again.updated.is_empty(),
        "{again:#?}"
    );
}

#[test]
fn attributes_must_match_the_node_type() {
    let f = Fixture::with_base();
    let text = include_str!(
        "fixtures/cases/an-object-attribute-on-the-action-and-a-module-on-the-target.dsr"
    );
    let d = f.invalid(text);
    let other: Vec<&Detail> = d
        .iter()
        .filter(|x| x.code == "dsr.attribute_of_other_type")
        .collect();
    assert_eq!(other.len(), 2, "{d:#?}");
    assert_eq!(
        other[0].path,
        "transformationData.sheets[0].nodes[1].attributes.field1"
    );
    assert_eq!(
        other[1].path,
        "transformationData.sheets[0].nodes[2].attributes.module"
    );
    let text = SHEET.replacen("type: 1", "type: 7", 1);
    let d = f.invalid(&text);
    assert_eq!(
        find(&d, "dsr.node_type").path,
        "transformationData.sheets[0].nodes[0].type"
    );
}

#[test]
fn graph_rules() {
    let f = Fixture::with_base();
    // An edge to a node of no sheet, an object-to-object and an action-to-action edge.
    let text = SHEET.replace(
        "          { id: 105, from: 102, to: 103 }\n",
        "          { id: 105, from: 102, to: 103 }\n          { id: 106, from: 101, to: 103 }\n          { id: 107, from: 102, to: 102 }\n          { id: 108, from: 102, to: 999 }\n",
    );
    let d = f.invalid(&text);
    assert_eq!(
        find(&d, "edge.object_to_object").path,
        "transformationData.sheets[0].edges[2]"
    );
    assert_eq!(
        find(&d, "edge.action_to_action").path,
        "transformationData.sheets[0].edges[3]"
    );
    let unknown = find(&d, "edge.unknown_node");
    assert_eq!(unknown.path, "transformationData.sheets[0].edges[4].to");
    assert_eq!((unknown.line, unknown.column), pos_of(&text, "999"));
    // A cycle: target back into the action.
    let text = SHEET.replace(
        "          { id: 105, from: 102, to: 103 }\n",
        "          { id: 105, from: 102, to: 103 }\n          { id: 106, from: 103, to: 102 }\n",
    );
    let d = f.invalid(&text);
    let cycle = find(&d, "sheet.cycle");
    assert!(
        cycle.message.contains("102 -> 103 -> 102"),
        "{}",
        cycle.message
    );
    // More than one node and no edges.
    let start = SHEET.find("        edges: [").expect("edges");
    let end = SHEET[start..].find("        ]\n").expect("end") + start + "        ]\n".len();
    let text = SHEET[..start].to_owned() + &SHEET[end..];
    let d = f.invalid(&text);
    assert_eq!(
        find(&d, "sheet.no_edges").path,
        "transformationData.sheets[0].edges"
    );
}

#[test]
fn folder_rules() {
    let f = Fixture::with_base();
    let d = f.invalid(&SHEET.replace("folder: /sales", "folder: /marketing"));
    let p = find(&d, "sheet.folder_path");
    assert!(
        p.message.contains("`/marketing`") && p.message.contains("`/sales`"),
        "{}",
        p.message
    );
    let d = f.invalid(&SHEET.replace("folder_id: 10", "folder_id: 11"));
    assert_eq!(
        find(&d, "sheet.folder_missing").path,
        "transformationData.sheets[0].attributes.folder_id"
    );
    // A folder deployed in the same document counts.
    let both = "{version: 1, transformationData: {folders: [{id: 11, path: \"/hr\"}]}}";
    f.ok(both);
    f.ok(include_str!(
        "fixtures/cases/the-sheet-in-the-folder-hr.dsr"
    ));
    // Nesting needs the parent; a taken path is refused.
    let d = f.invalid("{version: 1, transformationData: {folders: [{id: 12, path: \"/a/b\"}]}}");
    find(&d, "folder.parent_missing");
    let d = f.invalid("{version: 1, transformationData: {folders: [{id: 13, path: \"/sales\"}]}}");
    find(&d, "folder.path_taken");
    let d = f.invalid("{version: 1, transformationData: {folders: [{id: 14, path: \"sales/\"}]}}");
    find(&d, "folder.path");
    f.ok("{version: 1, transformationData: {folders: [{id: 12, path: \"/sales/daily\"}]}}");
}

#[test]
fn ids_are_unique_and_cannot_be_taken_from_another_sheet() {
    let f = Fixture::with_base();
    f.ok(SHEET);
    let other = SHEET.replace("id: 100", "id: 200");
    let d = f.invalid(&other);
    let taken: Vec<&Detail> = d.iter().filter(|x| x.code == "id.taken").collect();
    assert_eq!(
        taken.len(),
        5,
        "3 nodes and 2 edges belong to sheet 100: {d:#?}"
    );
    assert!(taken[0].message.contains("belongs to sheet 100"));
    // Also with validation off.
    let d = f.invalid_with(
        &other,
        Options {
            validate: false,
            ..Options::default()
        },
    );
    assert_eq!(d.iter().filter(|x| x.code == "id.taken").count(), 5);
    // Twice in one document.
    let dup = SHEET.replace(
        "{ id: 105, from: 102, to: 103 }",
        "{ id: 104, from: 102, to: 103 }",
    );
    let d = Fixture::with_base().invalid(&dup);
    let p = find(&d, "id.duplicate");
    assert_eq!(p.path, "transformationData.sheets[0].edges[1].id");
}

#[test]
fn node_rules_dependency_module_object_type_connection() {
    let f = Fixture::with_base();
    let text =
        include_str!("fixtures/cases/a-bad-dependency-module-object-type-and-connection.dsr");
    let d = f.invalid(text);
    assert_eq!(
        find(&d, "node.dependency").path,
        "transformationData.sheets[0].nodes[0].attributes.dependency"
    );
    let m = find(&d, "node.unknown_module");
    assert!(
        m.message
            .contains("History, Insert, Model, Seed, Shell, Sql, Test, Transfer, Upsert"),
        "{}",
        m.message
    );
    assert_eq!((m.line, m.column), pos_of(text, "Upsrt"));
    find(&d, "node.object_type");
    assert_eq!(
        find(&d, "node.connection_missing").path,
        "transformationData.sheets[0].nodes[2].attributes.connectionId"
    );
    assert_eq!(errors(&d).len(), 4, "{d:#?}");
    // A module attribute the module does not take, and one of the wrong type.
    let d = f.invalid(&SHEET.replace(
        "keys: id",
        "keys: id\n              batchRows: 5\n              validateSql: maybe",
    ));
    assert!(
        find(&d, "node.module_attribute")
            .message
            .contains("batchRows")
    );
    assert_eq!(
        find(&d, "dsr.wrong_type").path,
        "transformationData.sheets[0].nodes[1].attributes.validateSql"
    );
}

#[test]
fn validate_false_skips_graph_and_module_checks_only() {
    let f = Fixture::with_base();
    let text = include_str!("fixtures/cases/an-unknown-module-and-an-object-to-object-edge.dsr");
    f.invalid(text);
    let r = f
        .deploy(
            text,
            Options {
                validate: false,
                ..Options::default()
            },
        )
        .expect("accepted without validation");
    assert!(!r.validated);
    // Types are still checked.
    let d = f.invalid_with(
        &SHEET.replace("id: 100", "id: hundred"),
        Options {
            validate: false,
            ..Options::default()
        },
    );
    find(&d, "dsr.wrong_type");
}

#[test]
fn order_that_differs_is_a_warning() {
    let f = Fixture::with_base();
    let r = f.ok(&SHEET.replace("order: LOAD CUSTOMERS", "order: 01 LOAD"));
    assert_eq!(r.warnings.len(), 1);
    assert_eq!(r.warnings[0].code, "sheet.order");
    assert_eq!(r.warnings[0].severity, Severity::Warning);
}

#[test]
fn dry_run_changes_nothing_even_when_valid() {
    let f = Fixture::with_base();
    let before = f.dump();
    let r = f
        .deploy(
            SHEET,
            Options {
                dry_run: true,
                ..Options::default()
            },
        )
        .expect("valid");
    assert!(r.dry_run);
    assert_eq!(r.created.len(), 1, "a dry run says what it would create");
    assert_eq!(before, f.dump());
}

#[test]
fn a_deploy_is_one_transaction() {
    let f = Fixture::with_base();
    // A valid folder and an invalid sheet in one document: nothing is written.
    let text = include_str!("fixtures/cases/a-valid-folder-and-a-sheet-in-a-missing-folder.dsr");
    let d = f.invalid(text);
    find(&d, "sheet.folder_missing");
    assert!(!f.dump().contains("/finance"));
}

#[test]
fn into_folder_copies_with_fresh_ids() {
    let f = Fixture::with_base();
    f.ok(SHEET);
    f.ok("{version: 1, transformationData: {folders: [{id: 12, path: \"/sales/copy\"}]}}");
    let r = f
        .deploy(
            SHEET,
            Options {
                into_folder: Some(12),
                ..Options::default()
            },
        )
        .expect("copy");
    let map = r.id_map.expect("id map");
    let new_sheet = map.sheets["100"];
    assert_ne!(new_sheet, 100);
    assert_eq!(map.nodes.len(), 3);
    assert_eq!(map.edges.len(), 2);
    for old in ["101", "102", "103"] {
        assert_ne!(map.nodes[old].to_string(), old);
    }
    let conn = weft_repo::connect(f.repo.path().expect("a file")).expect("connect");
    let (folder, n): (i64, i64) = conn
        .query_row(
            "SELECT folder_id, (SELECT COUNT(*) FROM nodes WHERE sheet_id = s.id) FROM sheets s WHERE id = ?1",
            [new_sheet],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("copy stored");
    assert_eq!((folder, n), (12, 3));
    let (from, to): (i64, i64) = conn
        .query_row(
            "SELECT from_node, to_node FROM edges WHERE id = ?1",
            [map.edges["104"]],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("edge");
    assert_eq!(
        (from, to),
        (map.nodes["101"], map.nodes["102"]),
        "edges are remapped"
    );
    // The original is untouched.
    let count: i64 = conn
        .query_row("SELECT COUNT(*) FROM nodes WHERE sheet_id = 100", [], |r| {
            r.get(0)
        })
        .expect("count");
    assert_eq!(count, 3);
    // A missing folder, and a production server, are refused.
    let d = f.invalid_with(
        SHEET,
        Options {
            into_folder: Some(77),
            ..Options::default()
        },
    );
    find(&d, "deploy.into_folder_missing");
    let e = deploy(
        &f.repo,
        &catalog(),
        SHEET,
        Options {
            into_folder: Some(12),
            ..Options::default()
        },
        Environment::Production,
        Deployer::anyone("tests"),
    )
    .expect_err("refused");
    assert!(matches!(
        e,
        Error::IntoFolderRefused(Environment::Production)
    ));
}

#[test]
fn every_problem_of_a_document_comes_in_one_answer() {
    let f = Fixture::with_base();
    let text = include_str!(
        "fixtures/cases/a-typo-field-an-unknown-module-a-bad-dependency-and-an-edge-to-no-node.dsr"
    );
    let d = f.invalid(text);
    let codes: Vec<&str> = errors(&d).iter().map(|x| x.code.as_str()).collect();
    assert_eq!(codes.len(), 4, "{d:#?}");
    for code in [
        "dsr.unknown_field",
        "node.unknown_module",
        "node.dependency",
        "edge.unknown_node",
    ] {
        assert!(codes.contains(&code), "{code} missing from {codes:?}");
    }
    // Problems come in document order.
    let lines: Vec<u32> = d.iter().filter_map(|x| x.line).collect();
    let mut sorted = lines.clone();
    sorted.sort_unstable();
    assert_eq!(lines, sorted);
}

#[test]
fn unknown_versions_are_refused() {
    let f = Fixture::with_base();
    let d = f.invalid("{version: 2, transformationData: {}}");
    find(&d, "dsr.version");
    let d = f.invalid("{transformationData: {}}");
    assert_eq!(find(&d, "dsr.missing_field").path, "version");
}

fn next_run(f: &Fixture, batch: i64) -> Option<String> {
    let conn = weft_repo::connect(f.repo.path().expect("a file")).expect("connect");
    conn.query_row(
        "SELECT start_dt FROM service_batch_next_run WHERE batch_id = ?1",
        [batch],
        |r| r.get(0),
    )
    .ok()
}

fn batch_doc(schedule: &str, extra: &str) -> String {
    serde_json::json!({"version": 1, "transformationData": {"batches": [{
        "id": 7, "name": "night load", "schedule": schedule,
        "elements": [{"elementType": "S", "elementId": 100}, {"elementType": "F", "elementId": 10}],
        "variables": [{"variableName": "since", "variableType": "String", "variableValue": "2026-01-01"}]
    }]}})
    .to_string()
    .replacen("}]}}", &format!("{extra}}}]}}}}"), 1)
}

#[test]
fn a_batch_deploys_with_its_first_planned_start_and_keeps_a_shift_across_redeploys() {
    let f = Fixture::with_base();
    f.ok(SHEET);
    let r = f.ok(&batch_doc("daily 22:00", ""));
    assert_eq!(
        r.created
            .iter()
            .map(|c| (c.kind.word(), c.id))
            .collect::<Vec<_>>(),
        vec![("batch", 7)]
    );
    let first = next_run(&f, 7).expect("a planned start");
    assert!(first.ends_with(" 22:00:00"), "{first}");
    // An identical redeploy writes nothing.
    let before = f.dump();
    let r = f.ok(&batch_doc("daily 22:00", ""));
    assert_eq!(r.unchanged.len(), 1);
    assert_eq!(before, f.dump());
    // A sheet shifts the start by a day; an unrelated change keeps the shift.
    let conn = weft_repo::connect(f.repo.path().expect("a file")).expect("connect");
    conn.execute(
        "UPDATE service_batch_next_run SET start_dt = datetime(start_dt, '+1 day') WHERE batch_id = 7",
        [],
    )
    .expect("shift");
    let shifted = next_run(&f, 7).expect("shifted");
    let r = f.ok(&batch_doc(
        "daily 22:00",
        ", ifRunning: \"wait\", documentation: \"moved\"",
    ));
    assert_eq!(r.updated.len(), 1);
    assert_eq!(next_run(&f, 7).as_deref(), Some(shifted.as_str()));
    // A changed schedule starts afresh.
    f.ok(&batch_doc(
        "daily 21:30",
        ", ifRunning: \"wait\", documentation: \"moved\"",
    ));
    let fresh = next_run(&f, 7).expect("fresh");
    assert!(
        fresh.ends_with(" 21:30:00") && fresh < shifted,
        "{fresh} after {shifted}"
    );
    // So does a changed clock-change policy.
    conn.execute(
        "UPDATE service_batch_next_run SET start_dt = '2099-01-01 21:30:00' WHERE batch_id = 7",
        [],
    )
    .expect("far");
    f.ok(&batch_doc(
        "daily 21:30",
        ", ifRunning: \"wait\", documentation: \"moved\", springGap: \"skip\"",
    ));
    assert_ne!(next_run(&f, 7).as_deref(), Some("2099-01-01 21:30:00"));
    // A batch that lost its planned start gets it back from a redeploy.
    conn.execute("DELETE FROM service_batch_next_run WHERE batch_id = 7", [])
        .expect("delete");
    f.ok(&batch_doc(
        "daily 21:30",
        ", ifRunning: \"wait\", documentation: \"moved\", springGap: \"skip\"",
    ));
    assert!(next_run(&f, 7).is_some_and(|s| s.ends_with(" 21:30:00")));
}

#[test]
fn a_wrong_batch_is_refused_with_every_problem_in_its_place() {
    let f = Fixture::with_base();
    let text = "{version: 1, transformationData: {batches: [\n\
        {id: 7, name: \" \", schedule: \"daily 25:00\", elements: [{elementType: \"S\", elementId: 999}, {elementType: \"X\", elementId: 1}], ifRunning: \"later\", springGap: \"maybe\", autumnOverlap: \"never\"}\n\
        {id: 7, name: \"twin\", schedule: \"weekly moon 10:00\", elements: []}\n\
        ]}}";
    let d = f.invalid(text);
    let s = find(&d, "batch.schedule");
    assert_eq!((s.line, s.column), (Some(2), Some(37)), "{s:?}");
    assert!(
        s.message.contains("`25:00` is not a time of day"),
        "{}",
        s.message
    );
    let missing = find(&d, "batch.element_missing");
    assert!(
        missing.message.contains("sheet 999 does not exist"),
        "{}",
        missing.message
    );
    assert_eq!(
        missing.path,
        "transformationData.batches[0].elements[0].elementId"
    );
    find(&d, "batch.element_type");
    find(&d, "batch.name");
    assert_eq!(d.iter().filter(|x| x.code == "batch.policy").count(), 3);
    assert_eq!(
        find(&d, "id.duplicate").path,
        "transformationData.batches[1].id"
    );
    find(&d, "batch.elements");
    let weekly = d
        .iter()
        .filter(|x| x.code == "batch.schedule")
        .nth(1)
        .expect("second schedule problem");
    assert_eq!(
        (weekly.line, weekly.column),
        (Some(3), Some(41)),
        "{weekly:?}"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Whatever a user does to a valid sheet (cut it short, splice in characters), the deploy
    /// answers with a verdict and never panics; a rejected deploy changes nothing.
    #[test]
    fn mangled_sheets_never_panic(cut in 0usize..2000, at in 0usize..2000, junk in "[{}\\[\\]:,'\"#/ a-z0-9\n]{0,8}") {
        let f = Fixture::with_base();
        let mut text = SHEET.to_owned();
        let at = at.min(text.len());
        if text.is_char_boundary(at) {
            text.insert_str(at, &junk);
        }
        let cut = cut.min(text.len());
        if text.is_char_boundary(cut) && cut > 0 {
            text.truncate(text.len() - cut / 4);
        }
        let before = f.dump();
        match f.deploy(&text, Options::default()) {
            Ok(_) => {}
            Err(Error::Invalid(d)) => {
                proptest::prop_assert!(!d.is_empty());
                proptest::prop_assert_eq!(before, f.dump());
            }
            Err(e) => proptest::prop_assert!(false, "unexpected error: {}", e),
        }
    }
}

#[test]
fn into_folder_judges_the_ids_as_written() {
    let f = Fixture::with_base();
    // A typo in an edge (1 for 101) must not be hidden by the renumbering.
    let typo = SHEET.replace(
        "{ id: 104, from: 101, to: 102 }",
        "{ id: 104, from: 1, to: 102 }",
    );
    let d = f.invalid_with(
        &typo,
        Options {
            into_folder: Some(10),
            ..Options::default()
        },
    );
    let p = find(&d, "edge.unknown_node");
    assert!(p.message.contains("names node 1,"), "{}", p.message);
    // Even without validation, a copy refuses an edge to a node outside the sheet.
    let d = f.invalid_with(
        &typo,
        Options {
            into_folder: Some(10),
            validate: false,
            ..Options::default()
        },
    );
    assert_eq!(
        find(&d, "edge.unknown_node").path,
        "transformationData.sheets[0].edges[0].from"
    );
    // Duplicate node ids are found before they get distinct new ids.
    let dup = SHEET.replace("id: 103", "id: 101");
    let d = f.invalid_with(
        &dup,
        Options {
            into_folder: Some(10),
            ..Options::default()
        },
    );
    find(&d, "id.duplicate");
}

#[test]
fn into_folder_refuses_when_ids_are_exhausted() {
    let f = Fixture::with_base();
    f.ok(include_str!(
        "fixtures/cases/the-target-at-the-largest-id.dsr"
    ));
    let d = f.invalid_with(
        SHEET.replace("id: 100", "id: 300").as_str(),
        Options {
            into_folder: Some(10),
            ..Options::default()
        },
    );
    find(&d, "deploy.ids_exhausted");
}

#[test]
fn without_validation_module_attributes_are_still_typed() {
    let f = Fixture::with_base();
    let opts = Options {
        validate: false,
        ..Options::default()
    };
    let d = f.invalid_with(
        &SHEET.replace("keys: id", "keys: id\n              colour: blue"),
        opts,
    );
    assert_eq!(
        find(&d, "node.module_attribute").path,
        "transformationData.sheets[0].nodes[1].attributes.colour"
    );
    let d = f.invalid_with(&SHEET.replace("keys: id", "keys: 12"), opts);
    find(&d, "dsr.wrong_type");
    // An unknown module's attributes cannot be judged without validation: kept as written.
    f.deploy(&SHEET.replace("module: Upsert", "module: Custom"), opts)
        .expect("accepted");
}

#[test]
fn a_folder_that_holds_something_cannot_be_renamed() {
    let f = Fixture::with_base();
    f.ok("{version: 1, transformationData: {folders: [{id: 12, path: \"/sales/daily\"}]}}");
    let d =
        f.invalid("{version: 1, transformationData: {folders: [{id: 10, path: \"/revenue\"}]}}");
    let p = find(&d, "folder.rename_nonempty");
    assert!(
        p.message.contains("`/sales` to `/revenue`"),
        "{}",
        p.message
    );
    // An empty folder can.
    let r =
        f.ok("{version: 1, transformationData: {folders: [{id: 12, path: \"/sales/weekly\"}]}}");
    assert_eq!(r.updated.len(), 1);
}

#[test]
fn mistyped_nodes_or_edges_give_only_the_reader_problem() {
    let f = Fixture::with_base();
    let start = SHEET.find("        nodes: [").expect("nodes");
    let end = SHEET.find("        edges: [").expect("edges");
    let text = format!("{}        nodes: 5\n{}", &SHEET[..start], &SHEET[end..]);
    let d = f.invalid(&text);
    assert_eq!(errors(&d).len(), 1, "{d:#?}");
    assert_eq!(
        find(&d, "dsr.wrong_type").path,
        "transformationData.sheets[0].nodes"
    );
}

#[test]
fn a_sql_syntax_error_points_into_the_dsr_file() {
    let f = Fixture::with_base();
    let text = SHEET.replace("SELECT id, name, email", "SELECT id, name,, email");
    let d = f.invalid(&text);
    let p = find(&d, "sql.syntax");
    let (line_no, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(",,"))
        .expect("line");
    assert_eq!(p.line, Some(line_no as u32 + 1), "{p:#?}");
    assert_eq!(
        p.column,
        Some(line.find(",,").expect("col") as u32 + 2),
        "{p:#?}"
    );
    assert_eq!(
        p.path,
        "transformationData.sheets[0].nodes[1].attributes.action"
    );
    assert!(p.message.contains("SQLite"), "{}", p.message);
    // validateSql: false skips the parse.
    f.ok(&text.replace("keys: id", "keys: id\n              validateSql: false"));
}

#[test]
fn every_table_the_sql_reads_is_a_source() {
    let f = Fixture::with_base();
    let text = SHEET.replace(
        "  FROM stg_customers",
        "  FROM stg_customers JOIN regions r ON r.id = ${region}",
    );
    let d = f.invalid(&text);
    let p = find(&d, "sql.unknown_table");
    assert!(
        p.message.contains("`regions`") && p.message.contains("action 102"),
        "{}",
        p.message
    );
    let (line_no, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("JOIN regions"))
        .expect("line");
    assert_eq!(
        (p.line, p.column),
        (
            Some(line_no as u32 + 1),
            Some(line.find("regions").expect("col") as u32 + 1)
        )
    );
    // Reading the target (an upsert that looks at what is there) is fine.
    f.ok(&SHEET.replace(
        "WHERE loaded_at >= '${since}'",
        "WHERE loaded_at >= '${since}' AND id NOT IN (SELECT id FROM customers)",
    ));
}

#[test]
fn module_rules_come_from_the_plugins() {
    let f = Fixture::with_base();
    // Insert takes one query; Transfer needs a source.
    let d = f.invalid(include_str!(
        "fixtures/cases/an-insert-with-a-delete-before-its-query.dsr"
    ));
    find(&d, "sql.not_a_query");
    let d = f.invalid(include_str!(
        "fixtures/cases/a-transfer-without-a-source.dsr"
    ));
    assert!(find(&d, "module.sources").message.contains("at least 1"));
    // An attribute of the wrong declared type.
    let d = f.invalid(include_str!(
        "fixtures/cases/a-transfer-whose-batch-rows-is-not-a-number.dsr"
    ));
    find(&d, "dsr.wrong_type");
}

#[test]
fn on_a_connection_of_unknown_dialect_a_parse_error_is_a_warning() {
    let f = Fixture::with_base();
    // No bridge serves jdbc before the JDBC plugin; deployed unvalidated, it stands for a
    // connection whose dialect weft does not know.
    f.deploy(
        "{version: 1, transformationData: {connections: [{id: 2, name: \"dwh\", type: \"jdbc\"}]}}",
        Options {
            validate: false,
            ..Options::default()
        },
    )
    .expect("connection");
    let r = f.ok(include_str!(
        "fixtures/cases/a-sql-syntax-error-on-connection-2.dsr"
    ));
    let w = find(&r.warnings, "sql.unchecked");
    assert_eq!(w.severity, Severity::Warning);
    assert!(
        w.message.contains("not checked: `SELECT id, name,, email`")
            && w.message.contains("unknown database"),
        "{}",
        w.message
    );
    // The key file has no entry for connection 2: said once, at its first object.
    let w = find(&r.warnings, "node.connection_unknown");
    assert!(
        w.message
            .contains("connection 2 (type `jdbc`) has no entry"),
        "{}",
        w.message
    );
    assert_eq!(
        r.warnings
            .iter()
            .filter(|p| p.code == "node.connection_unknown")
            .count(),
        1
    );
}

#[test]
fn insert_refuses_sources_on_another_connection_and_eof_errors_are_placed() {
    let f = Fixture::with_base();
    f.ok("{version: 1, transformationData: {connections: [{id: 2, name: \"other\", type: \"sqlite\"}]}}");
    let d = f.invalid(include_str!(
        "fixtures/cases/an-insert-whose-source-is-on-connection-2.dsr"
    ));
    assert!(
        find(&d, "module.sources").message.contains("use Transfer"),
        "{d:#?}"
    );
    // A statement cut short is placed at its end, inside the action text.
    let text = SHEET.replace(" WHERE loaded_at >= '${since}'", " WHERE");
    let d = f.invalid(&text);
    let p = find(&d, "sql.syntax");
    assert_eq!(
        p.path,
        "transformationData.sheets[0].nodes[1].attributes.action"
    );
    let (line_no, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.trim_end().ends_with(" WHERE"))
        .expect("line");
    assert_eq!(
        (p.line, p.column),
        (
            Some(line_no as u32 + 1),
            Some(line.trim_end().chars().count() as u32 + 1)
        ),
        "{p:#?}"
    );
}

#[test]
fn batch_rows_is_bounded() {
    let f = Fixture::with_base();
    let d = f.invalid(include_str!(
        "fixtures/cases/a-transfer-with-too-many-batch-rows.dsr"
    ));
    assert!(
        find(&d, "module.attribute")
            .message
            .contains("from 1 to 1000000"),
        "{d:#?}"
    );
}

#[test]
fn a_lone_sql_action_is_told_what_to_add() {
    let f = Fixture::with_base();
    let d = f.invalid(
        r#"{"version": 1, "transformationData": {"sheets": [{"id": 300, "attributes": {"name": "lone", "folder_id": 10, "folder": "/sales"},
            "nodes": [{"id": 301, "type": 0, "attributes": {"module": "Sql", "name": "lone", "action": "DELETE FROM t"}}]}]}}"#,
    );
    let e = find(&d, "module.targets");
    assert!(
        e.message.contains("add a node of type 1") && e.message.contains("an edge from the action"),
        "{e:?}"
    );
}

#[test]
fn an_upsert_key_the_query_does_not_return_is_named_at_its_place_in_keys() {
    let f = Fixture::with_base();
    let text = SHEET.replace("keys: id", "keys: id, emial");
    let d = f.invalid(&text);
    let p = find(&d, "Upsert.keys");
    assert!(
        p.message
            .contains("key `emial` is not a column of the query, which returns id, name, email"),
        "{p:#?}"
    );
    let line = text
        .lines()
        .position(|l| l.contains("keys: id, emial"))
        .expect("keys line");
    let column = text
        .lines()
        .nth(line)
        .expect("line")
        .find("emial")
        .expect("emial")
        + 1;
    assert_eq!(
        (p.line, p.column),
        (Some(line as u32 + 1), Some(column as u32)),
        "{p:#?}"
    );
    assert!(p.path.ends_with("attributes.keys"), "{p:#?}");
    // A query that does not name its columns cannot be judged: no problem.
    let star = text.replace("SELECT id, name, email", "SELECT *");
    f.ok(&star);
}

/// A sheet `id` in folder 10 whose one Upsert action (node `id + 2`) reads `from` and
/// writes `to` (both with dependency `dependency`).
fn copy_sheet(id: i64, from: &str, to: &str, dependency: &str) -> String {
    let object = |node: i64, name: &str| {
        serde_json::json!({"id": node, "type": 1,
            "layout": {"x": 0, "y": 0, "width": 10, "height": 10},
            "attributes": {"field1": name, "field2": "main", "field3": null,
                "objectTypeId": 1, "connectionId": 1, "dependency": dependency}})
    };
    serde_json::json!({"version": 1, "transformationData": {"sheets": [{
        "id": id,
        "attributes": {"name": format!("copy {from} to {to}"), "folder_id": 10, "folder": "/sales"},
        "nodes": [
            object(id + 1, from),
            {"id": id + 2, "type": 0, "layout": {"x": 0, "y": 0, "width": 10, "height": 10},
             "attributes": {"module": "Upsert", "name": format!("{from} into {to}"),
                "action": format!("SELECT id FROM {from}"), "keys": "id"}},
            object(id + 3, to)
        ],
        "edges": [{"id": id + 4, "from": id + 1, "to": id + 2}, {"id": id + 5, "from": id + 2, "to": id + 3}]
    }]}})
    .to_string()
}

fn warnings<'a>(r: &'a Report, code: &str) -> Vec<&'a Detail> {
    r.warnings.iter().filter(|d| d.code == code).collect()
}

#[test]
fn a_deploy_that_closes_a_cycle_between_sheets_is_warned_with_the_whole_cycle() {
    let f = Fixture::with_base();
    // a -> b -> c: a chain, no cycle.
    assert!(warnings(&f.ok(&copy_sheet(200, "a", "b", "Y")), "deploy.cycle").is_empty());
    assert!(warnings(&f.ok(&copy_sheet(300, "b", "c", "Y")), "deploy.cycle").is_empty());
    // A reader of c writing b with dependency N orders nothing: no cycle.
    assert!(warnings(&f.ok(&copy_sheet(400, "c", "b", "N")), "deploy.cycle").is_empty());
    // With dependency Y it closes b -> c -> b.
    let text = copy_sheet(400, "c", "b", "Y");
    let r = f.ok(&text);
    let w = warnings(&r, "deploy.cycle");
    assert_eq!(w.len(), 1, "{:#?}", r.warnings);
    assert_eq!(w[0].path, "transformationData.sheets[0].nodes[1]");
    assert!(
        w[0].message.contains(
            "action 402 `c into b` (sheet 400) writes main.b (connection 1), which action 302 `b into c` (sheet 300) reads; action 302 `b into c` (sheet 300) writes main.c (connection 1), which action 402 `c into b` (sheet 400) reads"
        ),
        "{}",
        w[0].message
    );
    assert!(w[0].message.contains("run.cycle"), "{}", w[0].message);
    // The deploy went through; redeploying the other side names the same cycle, and an
    // identical redeploy (nothing changed) says nothing.
    assert!(
        weft_repo::SheetStore::plans(&f.repo, 400)
            .expect("plans")
            .is_some()
    );
    let r = f.ok(&copy_sheet(300, "b", "c", "Y"));
    assert!(warnings(&r, "deploy.cycle").is_empty(), "unchanged: {r:#?}");
    let r = f.ok(&copy_sheet(300, "B", "c", "Y").replace("\"name\":\"copy B", "\"name\":\"copy b"));
    assert_eq!(warnings(&r, "deploy.cycle").len(), 1, "{:#?}", r.warnings);
    // Breaking the cycle ends the warnings.
    let r = f.ok(&copy_sheet(400, "c", "d", "Y"));
    assert!(warnings(&r, "deploy.cycle").is_empty());
    let r = f.ok(&copy_sheet(300, "b", "c", "Y"));
    assert!(warnings(&r, "deploy.cycle").is_empty(), "{:#?}", r.warnings);
}

/// A sheet `id` whose `n` Upsert actions copy `t0` into `t1`, `t1` into `t2`, and so on.
fn chain_sheet(id: i64, n: i64) -> String {
    let layout = serde_json::json!({"x": 0, "y": 0, "width": 10, "height": 10});
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    for t in 0..=n {
        nodes.push(
            serde_json::json!({"id": id + 1 + t, "type": 1, "layout": layout,
            "attributes": {"field1": format!("t{t}"), "field2": "main", "field3": null,
                "objectTypeId": 1, "connectionId": 1, "dependency": "Y"}}),
        );
    }
    for i in 0..n {
        let action = id + 1000 + i;
        nodes.push(
            serde_json::json!({"id": action, "type": 0, "layout": layout,
            "attributes": {"module": "Upsert", "name": format!("step {i}"),
                "action": format!("SELECT id FROM t{i}"), "keys": "id"}}),
        );
        edges.push(serde_json::json!({"id": id + 2000 + 2 * i, "from": id + 1 + i, "to": action}));
        edges.push(serde_json::json!({"id": id + 2001 + 2 * i, "from": action, "to": id + 2 + i}));
    }
    serde_json::json!({"version": 1, "transformationData": {"sheets": [{
        "id": id,
        "attributes": {"name": format!("chain {id}"), "folder_id": 10, "folder": "/sales"},
        "nodes": nodes, "edges": edges}]}})
    .to_string()
}

#[test]
fn a_long_chain_is_sifted_in_one_pass_and_a_cycle_closing_it_is_warned_once() {
    let f = Fixture::with_base();
    // More changed actions in the middle of the graph than are searched one by one.
    let n = super::cycles::SEARCHES as i64 + 8;
    let r = f.ok(&chain_sheet(500, n));
    assert!(warnings(&r, "deploy.cycle").is_empty(), "{:#?}", r.warnings);
    // Another sheet copies the chain's end back to its start: a cycle through both sheets,
    // warned at its one changed action; the chain deployed again (its actions changed, more
    // than are searched one by one) closes the same cycle, warned once.
    let back = copy_sheet(9000, &format!("t{n}"), "t0", "Y");
    assert_eq!(warnings(&f.ok(&back), "deploy.cycle").len(), 1);
    let r = f.ok(&chain_sheet(500, n).replace("chain 500", "the chain"));
    let w = warnings(&r, "deploy.cycle");
    assert_eq!(
        w.len(),
        1,
        "one warning for the one cycle: {:#?}",
        r.warnings
    );
    assert!(
        w[0].message.contains("`step 0`")
            && w[0].message.contains(&format!("`step {}`", n - 1))
            && w[0].message.contains("sheet 9000"),
        "{}",
        w[0].message
    );
}

#[test]
fn a_cycle_inside_an_enabled_batch_is_refused_and_outside_one_only_warned() {
    let f = Fixture::with_base();
    f.ok(&copy_sheet(200, "a", "b", "Y"));
    f.ok(&copy_sheet(300, "b", "a", "N"));
    // The nightly runs folder /sales (10): every sheet above.
    let batch = |enabled: bool, elements: serde_json::Value| {
        serde_json::json!({"version": 1, "transformationData": {"batches": [{
            "id": 7, "name": "nightly", "schedule": "daily 02:00", "enabled": enabled,
            "elements": elements, "variables": []}]}})
        .to_string()
    };
    f.ok(&batch(
        true,
        serde_json::json!([{"elementType": "F", "elementId": 10}]),
    ));
    // Closing a cycle among its actions is refused, the repository unchanged.
    let d = f.invalid(&copy_sheet(300, "b", "a", "Y"));
    let e = find(&d, "deploy.cycle_in_batch");
    assert_eq!(e.path, "transformationData.sheets[0].nodes[1]");
    assert!(
        e.message
            .starts_with("batch 7 `nightly` runs every action of a cycle"),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("action 202 `a into b` (sheet 200)"),
        "{}",
        e.message
    );
    // A batch that runs only one side: a warning, the deploy goes through.
    f.ok(&batch(
        true,
        serde_json::json!([{"elementType": "S", "elementId": 200}]),
    ));
    let r = f.ok(&copy_sheet(300, "b", "a", "Y"));
    assert_eq!(warnings(&r, "deploy.cycle").len(), 1, "{:#?}", r.warnings);
    // Deploying the batch over both sides is refused at its elements, even though the
    // cycle was there before; disabled, it deploys.
    let both = serde_json::json!([{"elementType": "S", "elementId": 200}, {"elementType": "A", "elementId": 302}]);
    let d = f.invalid(&batch(true, both.clone()));
    let e = find(&d, "deploy.cycle_in_batch");
    assert_eq!(e.path, "transformationData.batches[0].elements");
    assert!(
        e.message.contains("action 302 `b into a` (sheet 300)"),
        "{}",
        e.message
    );
    f.ok(&batch(false, both.clone()));
    // Enabling it again is refused too; the folder's root holds everything.
    find(&f.invalid(&batch(true, both)), "deploy.cycle_in_batch");
    let root =
        f.ok(r#"{"version": 1, "transformationData": {"folders": [{"id": 1, "path": "/"}]}}"#);
    assert!(root.warnings.is_empty(), "{root:#?}");
    find(
        &f.invalid(&batch(
            true,
            serde_json::json!([{"elementType": "F", "elementId": 1}]),
        )),
        "deploy.cycle_in_batch",
    );
}

#[test]
fn sheets_stored_before_the_data_graph_join_it_at_the_next_deploy() {
    let mut f = Fixture::with_base();
    f.ok(&copy_sheet(200, "a", "b", "Y"));
    // As a repository upgraded to version 11 holds it: no lines, not recorded; the upgrade
    // is made when a server opens the repository.
    let path = f.repo.path().expect("a file").to_path_buf();
    let conn = weft_repo::connect(&path).expect("connect");
    conn.execute_batch("DELETE FROM data_flow; UPDATE sheets SET flow_recorded = NULL;")
        .expect("forget the data graph");
    f.repo = Repository::open(&path).expect("open again");
    let r = f.ok(&copy_sheet(300, "b", "a", "Y"));
    let w = warnings(&r, "deploy.cycle");
    assert_eq!(w.len(), 1, "{:#?}", r.warnings);
    assert!(
        w[0].message.contains("action 202 `a into b`"),
        "{}",
        w[0].message
    );
    let unrecorded: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sheets WHERE flow_recorded IS NULL",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(unrecorded, 0);
}

#[test]
fn a_long_chain_is_searched_from_its_short_side() {
    // 300 sheets in a chain; the last one closes it round to the first.
    let f = Fixture::with_base();
    for i in 0..300 {
        let r = f.ok(&copy_sheet(
            1000 + 10 * i,
            &format!("t{i}"),
            &format!("t{}", i + 1),
            "Y",
        ));
        assert!(warnings(&r, "deploy.cycle").is_empty());
    }
    let r = f.ok(&copy_sheet(9000, "t300", "t0", "Y"));
    let w = warnings(&r, "deploy.cycle");
    assert_eq!(w.len(), 1);
    assert_eq!(
        w[0].message.matches(" writes ").count(),
        301,
        "{}",
        w[0].message
    );
}

#[test]
fn a_redeploy_replaces_the_lines_of_the_actions_it_drops() {
    let f = Fixture::with_base();
    f.ok(&copy_sheet(200, "a", "b", "Y"));
    f.ok(&copy_sheet(300, "b", "a", "Y"));
    // Sheet 300 again, its action renumbered 352 (302 is gone) and reading c instead.
    let text = copy_sheet(300, "c", "a", "Y").replace("302", "352");
    let r = f.ok(&text);
    assert!(warnings(&r, "deploy.cycle").is_empty(), "{:#?}", r.warnings);
    let conn = weft_repo::connect(f.repo.path().expect("a file")).expect("connect");
    let lines: Vec<(i64, i64, String)> = conn
        .prepare("SELECT action_id, writes, object_name FROM data_flow ORDER BY 1, 2")
        .and_then(|mut st| {
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<_, _>>()
        })
        .expect("lines");
    assert_eq!(
        lines,
        [
            (202, 0, "a".to_owned()),
            (202, 1, "b".to_owned()),
            (352, 0, "c".to_owned()),
            (352, 1, "a".to_owned())
        ]
    );
}

/// Two sheets of `/sales`: `setup` (action 201 `create`, a second action 202 named `create`
/// too when `twice`) and `load` (action 301 `load`, whose `after` is `after`).
fn after_doc(after: &str, twice: bool) -> String {
    let second = if twice {
        r#"{id: 202, type: 0, attributes: {module: "Sql", name: "create", action: "SELECT 2"}}
           {id: 205, type: 1, attributes: {field1: "t2", objectTypeId: 1, connectionId: 1}}"#
    } else {
        ""
    };
    let second_edge = if twice {
        "{id: 206, from: 202, to: 205}"
    } else {
        ""
    };
    format!(
        r#"{{version: 1, transformationData: {{sheets: [
  {{id: 200, attributes: {{name: "setup", folder_id: 10, folder: "/sales"}},
    nodes: [
      {{id: 201, type: 0, attributes: {{module: "Sql", name: "create", action: "CREATE TABLE IF NOT EXISTS t (n INTEGER)"}}}}
      {{id: 203, type: 1, attributes: {{field1: "t", objectTypeId: 1, connectionId: 1}}}}
      {second}
    ]
    edges: [{{id: 204, from: 201, to: 203}} {second_edge}]}}
  {{id: 300, attributes: {{name: "load", folder_id: 10, folder: "/sales"}},
    nodes: [
      {{id: 301, type: 0, attributes: {{module: "Sql", name: "load", action: "INSERT INTO t VALUES (1)", after: {after}}}}}
      {{id: 302, type: 0, attributes: {{module: "Sql", name: "other", action: "INSERT INTO t VALUES (2)"}}}}
      {{id: 303, type: 1, attributes: {{field1: "t", objectTypeId: 1, connectionId: 1}}}}
    ]
    edges: [{{id: 304, from: 301, to: 303}}, {{id: 305, from: 302, to: 303}}]}}
]}}}}"#
    )
}

/// The `after` ids of action `id` in the plans stored for its sheet.
fn stored_after(f: &Fixture, sheet: i64, id: i64) -> Vec<i64> {
    let conn = weft_repo::connect(f.repo.path().expect("a file")).expect("connect");
    let plans: String = conn
        .query_row(
            "SELECT plans FROM sheet_plans WHERE sheet_id = ?1 ORDER BY version DESC LIMIT 1",
            [sheet],
            |r| r.get(0),
        )
        .expect("plans");
    let plans: Vec<weft_core::plan::ActionPlan> = serde_json::from_str(&plans).expect("json");
    plans
        .into_iter()
        .find(|p| p.id == id)
        .map(|p| p.after)
        .unwrap_or_default()
}

#[test]
fn after_names_an_action_by_id_name_or_path_and_is_stored_as_its_id() {
    let f = Fixture::with_base();
    f.ok(&after_doc(
        r#"[201, "other", "/sales/setup/create"]"#,
        false,
    ));
    assert_eq!(stored_after(&f, 300, 301), vec![201, 302, 201]);
    // A path into the repository, from a document that holds only the later sheet.
    let doc = after_doc(r#""/sales/setup/create""#, false);
    let load_only = doc
        .split_once("  {id: 300")
        .map(|(_, rest)| {
            format!("{{version: 1, transformationData: {{sheets: [\n  {{id: 300{rest}")
        })
        .expect("the load sheet");
    f.ok(&load_only);
    assert_eq!(stored_after(&f, 300, 301), vec![201]);
    // Exported as written: names stay names.
    let conn = weft_repo::connect(f.repo.path().expect("a file")).expect("connect");
    let definition: String = conn
        .query_row("SELECT definition FROM sheets WHERE id = 300", [], |r| {
            r.get(0)
        })
        .expect("definition");
    assert!(
        definition.contains(r#""after":["/sales/setup/create"]"#),
        "{definition}"
    );
}

#[test]
fn an_after_that_names_no_one_action_is_refused_at_its_place() {
    let f = Fixture::with_base();
    for (after, twice, says) in [
        (
            r#""nobody""#,
            false,
            "this sheet has no action named `nobody`",
        ),
        (r#""load""#, false, "action 301 cannot run after itself"),
        ("301", false, "action 301 cannot run after itself"),
        ("999", false, "no action has id 999"),
        ("303", false, "no action has id 303"),
        (
            r#""/sales/setup/create""#,
            true,
            "`/sales/setup/create` names 2 actions (201, 202)",
        ),
        (
            r#""/sales/nowhere/create""#,
            false,
            "no action `create` in a sheet `nowhere` of folder `/sales`",
        ),
        (r#""/create""#, false, "is not an action's path"),
        ("[true]", false, "an entry of `after` is an action"),
    ] {
        let text = after_doc(after, twice);
        let d = f.invalid(&text);
        let p = find(&d, "action.after");
        assert!(p.message.contains(says), "{after}: {}", p.message);
        assert!(
            p.path
                .starts_with("transformationData.sheets[1].nodes[0].attributes.after"),
            "{after}: {}",
            p.path
        );
        assert!(p.line.is_some(), "{after}: {p:?}");
    }
}

/// Sheet 400 of `/sales` whose actions name no objects: the sheet's `connection` is
/// `connection`; action 401 creates `stage_orders`, action 402 loads `orders` from it
/// through a CTE.
fn derived_doc(connection: &str) -> String {
    format!(
        r#"{{version: 1, transformationData: {{sheets: [
  {{id: 400, attributes: {{name: "orders", folder_id: 10, folder: "/sales", connection: {connection}}},
    nodes: [
      {{id: 401, type: 0, attributes: {{module: "Sql", name: "create", action: "CREATE TABLE IF NOT EXISTS stage_orders (id INTEGER)"}}}}
      {{id: 402, type: 0, attributes: {{module: "Sql", name: "load", action: "INSERT INTO orders WITH x AS (SELECT id FROM stage_orders) SELECT id FROM x"}}}}
    ]
    edges: []}}
]}}}}"#
    )
}

#[test]
fn objects_come_from_the_sql_of_actions_that_name_their_connection() {
    let f = Fixture::with_base();
    let r = f.ok(&derived_doc(r#""sales""#));
    // No warning that the tables are missing: actions of this deploy write them.
    assert!(
        r.warnings.iter().all(|w| w.code != "object.missing"),
        "{:#?}",
        r.warnings
    );
    let conn = weft_repo::connect(f.repo.path().expect("a file")).expect("connect");
    let nodes: Vec<(i64, String)> = conn
        .prepare(
            "SELECT id, attributes FROM nodes WHERE sheet_id = 400 AND type = 1 ORDER BY id DESC",
        )
        .expect("prepare")
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get::<_, Option<String>>(1)?.unwrap_or_default(),
            ))
        })
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(
        nodes.iter().map(|n| n.0).collect::<Vec<_>>(),
        vec![-401001, -402001, -402002],
        "{nodes:?}"
    );
    let plans: String = conn
        .query_row(
            "SELECT plans FROM sheet_plans WHERE sheet_id = 400",
            [],
            |r| r.get(0),
        )
        .expect("plans");
    let plans: Vec<weft_core::plan::ActionPlan> = serde_json::from_str(&plans).expect("json");
    let names =
        |o: &[weft_core::plan::Object]| o.iter().map(|o| o.name.clone()).collect::<Vec<_>>();
    assert_eq!(
        (names(&plans[0].sources), names(&plans[0].targets)),
        (vec![], vec!["stage_orders".to_owned()])
    );
    assert!(plans[0].targets[0].defines);
    assert_eq!(
        (names(&plans[1].sources), names(&plans[1].targets)),
        (vec!["stage_orders".to_owned()], vec!["orders".to_owned()])
    );
    let deps = weft_core::plan::dependencies(&weft_core::plugins::Registry::default(), &plans);
    assert_eq!(deps[&402], vec![401]);
    // The same text again changes nothing; an export leaves the derived objects out.
    let again = f.ok(&derived_doc(r#""sales""#));
    assert!(
        again.created.is_empty() && again.updated.is_empty(),
        "{again:#?}"
    );
    let files = export(&f.repo, Some("/sales")).expect("export");
    let (_, text) = files
        .iter()
        .find(|(n, _)| n.ends_with("orders.dsr"))
        .expect("the sheet");
    assert!(
        !text.contains("-40") && text.contains(r#"connection: "sales""#),
        "{text}"
    );
    // By id too; an unknown name is refused at its place.
    f.ok(&derived_doc("1"));
    let d = f.invalid(&derived_doc(r#""nowhere""#));
    let p = find(&d, "action.connection");
    assert!(
        p.message.contains("no connection is named `nowhere`"),
        "{}",
        p.message
    );
    assert_eq!(p.path, "transformationData.sheets[0].attributes.connection");
}

#[test]
fn a_table_the_sql_writes_that_is_no_object_is_a_warning_at_its_place() {
    let f = Fixture::with_base();
    let text = r#"{version: 1, transformationData: {sheets: [
  {id: 500, attributes: {name: "w", folder_id: 10, folder: "/sales"},
    nodes: [
      {id: 501, type: 0, attributes: {module: "Sql", name: "load", action: "INSERT INTO t VALUES (1); DELETE FROM elsewhere"}}
      {id: 502, type: 1, attributes: {field1: "t", objectTypeId: 1, connectionId: 1}}
    ]
    edges: [{id: 503, from: 501, to: 502}]}
]}}"#;
    let r = f.ok(text);
    let w = find(&r.warnings, "sql.undeclared_write");
    assert!(w.message.contains("writes `elsewhere`"), "{}", w.message);
    assert_eq!((w.line, w.column), pos_of(text, "elsewhere"));
    assert_eq!(
        r.warnings
            .iter()
            .filter(|w| w.code == "sql.undeclared_write")
            .count(),
        1
    );
}

#[test]
fn objects_from_the_sql_are_bounded_and_a_connection_is_an_id_or_a_name() {
    let f = Fixture::with_base();
    // 400 tables read: more than an action's SQL may give.
    let tables: Vec<String> = (0..400).map(|i| format!("t{i}")).collect();
    let sql = format!("INSERT INTO wide SELECT 1 FROM {}", tables.join(", "));
    let text = derived_doc(r#""sales""#)
        .replace("CREATE TABLE IF NOT EXISTS stage_orders (id INTEGER)", &sql);
    let d = f.invalid(&text);
    let p = find(&d, "action.objects");
    assert!(
        p.message.contains("names 401 tables; at most 399"),
        "{}",
        p.message
    );
    // Neither an id nor a name.
    let d = f.invalid(&derived_doc("[1]"));
    let p = find(&d, "dsr.wrong_type");
    assert_eq!(p.path, "transformationData.sheets[0].attributes.connection");
    // An id no connection has, on the action itself.
    let text = derived_doc(r#""sales""#).replace(
        r#"name: "create", action:"#,
        r#"name: "create", connection: 77, action:"#,
    );
    let d = f.invalid(&text);
    let p = find(&d, "action.connection");
    assert!(
        p.message.contains("no connection has id 77"),
        "{}",
        p.message
    );
    assert_eq!(
        p.path,
        "transformationData.sheets[0].nodes[0].attributes.connection"
    );
}

#[test]
fn an_after_cycle_is_refused_at_deploy() {
    let f = Fixture::with_base();
    let text = after_doc(r#""other""#, false).replace(
        r#"name: "other", action: "INSERT INTO t VALUES (2)""#,
        r#"name: "other", action: "INSERT INTO t VALUES (2)", after: "load""#,
    );
    let d = f.invalid(&text);
    let p = find(&d, "action.after");
    assert!(
        p.message.contains("makes a cycle, 301 after 302 after 301"),
        "{}",
        p.message
    );
}

#[test]
fn an_after_of_more_than_1000_entries_is_refused() {
    let f = Fixture::with_base();
    let many = format!("[{}]", vec!["201"; 1001].join(", "));
    let d = f.invalid(&after_doc(&many, false));
    let p = find(&d, "action.after");
    assert!(
        p.message.contains("names 1001 actions; at most 1000"),
        "{}",
        p.message
    );
}

/// A template module with typed attributes, and a sheet of actions that use it.
const SNAPSHOT_MODULE: &str = r#"{
  version: 1
  transformationData: {
    modules: [
      {
        name: "Snapshot"
        description: "Copies a table into its dated snapshot."
        attributes: [
          { name: "source", type: "text", required: true, description: "the table copied" }
          { name: "columns", type: "text", default: "*" }
          { name: "keepDays", type: "integer", default: 7 }
          { name: "full", type: "boolean" }
        ]
        template:
          '''
          CREATE TABLE IF NOT EXISTS {{ source }}_snapshot AS SELECT {{ columns }}, '' AS taken FROM {{ source }} WHERE 0;
          {% if full %}DELETE FROM {{ source }}_snapshot;{% endif %}
          INSERT INTO {{ source }}_snapshot SELECT {{ columns }}, date('now') FROM {{ source }};
          DELETE FROM {{ source }}_snapshot WHERE taken < date('now', '-{{ keepDays }} days');
          '''
      }
    ]
  }
}"#;

fn snapshot_sheet(attributes: &str) -> String {
    format!(
        r#"{{
  version: 1
  transformationData: {{
    sheets: [
      {{
        attributes: {{ name: "snapshots", folder: "/sales", connection: 1 }}
        nodes: [
          {{ attributes: {{ module: "Snapshot", name: "orders snapshot", {attributes} }} }}
        ]
      }}
    ]
  }}
}}"#
    )
}

#[test]
fn a_template_module_deployed_earlier_renders_its_actions_with_their_typed_attributes() {
    let f = Fixture::with_base();
    let report = f.ok(SNAPSHOT_MODULE);
    assert!(
        report.created.iter().any(|c| c.kind == ObjectKind::Module),
        "{report:#?}"
    );
    f.ok(&snapshot_sheet(
        r#"source: "orders", keepDays: 30, full: true"#,
    ));
    let conn = weft_repo::connect(f.repo.path().expect("a file")).expect("connect");
    let (module, action): (String, String) = conn
        .query_row(
            "SELECT module, action FROM nodes WHERE name = 'orders snapshot'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("node");
    assert_eq!(module, "Sql", "stored as the module that runs it");
    assert_eq!(
        action,
        "CREATE TABLE IF NOT EXISTS orders_snapshot AS SELECT *, '' AS taken FROM orders WHERE 0;\nDELETE FROM orders_snapshot;\nINSERT INTO orders_snapshot SELECT *, date('now') FROM orders;\nDELETE FROM orders_snapshot WHERE taken < date('now', '-30 days');"
    );
    // The objects come from the rendered SQL: orders read, orders_snapshot written.
    let objects: Vec<String> = conn
        .prepare("SELECT field1 FROM nodes WHERE type = 1 ORDER BY field1")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(objects, vec!["orders", "orders_snapshot"]);
    // The same module again changes nothing.
    let again = f.ok(SNAPSHOT_MODULE);
    assert!(
        again.created.is_empty() && again.updated.is_empty() && again.unchanged.len() == 1,
        "{again:#?}"
    );
}

#[test]
fn a_template_modules_attributes_are_checked_at_their_places() {
    let f = Fixture::with_base();
    // Defined and used in one document: wrong type, unknown, required missing.
    let both = |attributes: &str| {
        let sheet = snapshot_sheet(attributes);
        let sheets =
            &sheet[sheet.find("    sheets:").expect("sheets")..sheet.rfind("  }\n}").expect("end")];
        SNAPSHOT_MODULE.replacen("    modules: [", &format!("{sheets}    modules: ["), 1)
    };
    let text = both(r#"source: "orders", keepDays: "thirty", colour: "red""#);
    let d = f.invalid(&text);
    let wrong = d
        .iter()
        .find(|d| {
            d.message
                .contains("`keepDays` of template module `Snapshot` is integer, found a string")
        })
        .unwrap_or_else(|| panic!("{d:#?}"));
    assert_eq!((wrong.line, wrong.column), pos_of(&text, "\"thirty\""));
    let unknown = d
        .iter()
        .find(|d| {
            d.message
                .contains("unknown attribute `colour` for template module `Snapshot`")
        })
        .unwrap_or_else(|| panic!("{d:#?}"));
    assert_eq!((unknown.line, unknown.column), pos_of(&text, "colour"));
    assert!(
        !d.iter().any(|d| d.code == "node.unknown_module"),
        "no noise about the module: {d:#?}"
    );
    let text = both("keepDays: 3");
    let d = f.invalid(&text);
    let missing = find(&d, "module.attribute");
    assert!(
        missing
            .message
            .contains("needs attribute `source` (the table copied)"),
        "{missing:?}"
    );
    assert_eq!(
        (missing.line, missing.column),
        pos_of(&text, "\"Snapshot\", name")
    );
    // The runs module's own attributes pass through to it.
    f.ok(&both(r#"source: "orders", errorIfLoopEmpty: false"#));
}

#[test]
fn a_broken_template_module_is_refused_at_its_place() {
    let f = Fixture::with_base();
    let bad_template = SNAPSHOT_MODULE.replace("{% if full %}", "{% if full %");
    let d = f.invalid(&bad_template);
    let e = find(&d, "module.template");
    assert!(
        e.message
            .contains("the template of `Snapshot` does not read"),
        "{e:?}"
    );
    assert_eq!(e.line, pos_of(&bad_template, "{% if full %").0);
    let taken = SNAPSHOT_MODULE.replace("name: \"Snapshot\"", "name: \"Sql\"");
    let d = f.invalid(&taken);
    assert!(
        find(&d, "module.name")
            .message
            .contains("a module of a loaded plugin")
    );
    let runs = SNAPSHOT_MODULE.replace("description:", "runs: \"Nope\"\n        description:");
    let d = f.invalid(&runs);
    assert_eq!(find(&d, "module.runs").line, pos_of(&runs, "\"Nope\"").0);
    let typed = SNAPSHOT_MODULE.replace(
        "type: \"integer\", default: 7",
        "type: \"integer\", default: \"7\"",
    );
    let d = f.invalid(&typed);
    assert!(
        find(&d, "module.attribute")
            .message
            .contains("the default of `keepDays` is a string"),
        "{d:#?}"
    );
    // Rendering fails on a name the template does not know: said at the action.
    f.ok(&SNAPSHOT_MODULE.replace("{{ keepDays }}", "{{ keep_days }}"));
    let text = snapshot_sheet(r#"source: "orders""#);
    let d = f.invalid(&text);
    let e = find(&d, "module.template");
    assert!(
        e.message.contains(
            "the stored template module `Snapshot` (deployed earlier) does not render (line 4 of its template)"
        ),
        "{e:?}"
    );
    assert_eq!((e.line, e.column), pos_of(&text, "\"Snapshot\""));
}

#[test]
fn a_table_drawn_twice_without_ids_is_two_nodes_and_an_edge_by_its_name_is_ambiguous() {
    let f = Fixture::with_base();
    let text = r#"{
  version: 1
  transformationData: {
    sheets: [
      {
        attributes: { name: "twice", folder: "/sales" }
        nodes: [
          { attributes: { module: "Sql", name: "load", action: "INSERT INTO b SELECT * FROM a" } }
          { attributes: { field1: "a", objectTypeId: 1, connectionId: 1 } }
          { attributes: { field1: "a", objectTypeId: 1, connectionId: 1 } }
          { attributes: { field1: "b", objectTypeId: 1, connectionId: 1 } }
        ]
        edges: [{ from: "a", to: "load" }, { from: "load", to: "b" }]
      }
    ]
  }
}"#;
    let d = f.invalid(text);
    let e = find(&d, "edge.unknown_node");
    assert!(
        e.message.contains("`from: a` names 2 nodes of this sheet"),
        "{e:?}"
    );
    assert!(
        !d.iter()
            .any(|d| d.code.contains("duplicate") || d.message.contains("more than once")),
        "no duplicate id besides: {d:#?}"
    );
}

#[test]
fn a_template_module_renders_once_and_gives_the_running_module_what_it_takes() {
    let f = Fixture::with_base();
    // Runs Model, whose `table` the template reads too; a text attribute holding `{{` stays
    // text (the action's `template: true` does not render it a second time).
    f.ok(r#"{
  version: 1
  transformationData: {
    modules: [
      {
        name: "Copy"
        runs: "Model"
        attributes: [
          { name: "table", type: "text", required: true }
          { name: "note", type: "text", default: "" }
        ]
        template: "SELECT * FROM src_{{ table }} -- {{ note }}"
      }
    ]
  }
}"#);
    f.ok(r#"{
  version: 1
  transformationData: {
    sheets: [
      {
        attributes: { name: "copies", folder: "/sales", connection: 1 }
        nodes: [
          { attributes: { module: "Copy", name: "copy t1", table: "t1", note: "not {{ jinja }}", template: true } }
        ]
      }
    ]
  }
}"#);
    let conn = weft_repo::connect(f.repo.path().expect("a file")).expect("connect");
    let (module, action, attributes): (String, String, String) = conn
        .query_row(
            "SELECT module, action, attributes FROM nodes WHERE name = 'copy t1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("node");
    assert_eq!(module, "Model");
    assert_eq!(action, "SELECT * FROM src_t1 -- not {{ jinja }}");
    assert_eq!(attributes, r#"{"table":"t1"}"#, "Model gets its table");
}
