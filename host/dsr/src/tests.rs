//! Every problem the document reader names, as a user reads it: its code, its place and its
//! message, for a corpus of broken documents. A change to any of these words shows as a diff.

use super::{LineIndex, parse};

const SHEET: &str = r#"{
  "version": 1,
  "transformationData": {
    "sheets": [
      {
        "id": 10,
        "attributes": {"name": "s", "folder_id": 1, "folder": "/f"},
        "nodes": [
          {"id": 11, "type": 1, "attributes": {"field1": "t", "objectTypeId": 1, "connectionId": 1}},
          {"id": 12, "type": 0, "attributes": {"module": "Sql", "name": "a", "action": "SELECT 1"}}
        ],
        "edges": [{"id": 13, "from": 12, "to": 11}]
      }
    ]
  }
}"#;

#[test]
fn every_problem_of_a_broken_document_reads_as_written_down() {
    let cases: Vec<(&str, String)> = vec![
        ("not HJSON", "{ version: 1\n  transformationData: { sheets: [ }".to_owned()),
        ("not an object", "[1, 2]".to_owned()),
        ("no transformationData", "{ version: 1 }".to_owned()),
        ("a newer format", SHEET.replace("\"version\": 1", "\"version\": 2")),
        ("a typo and an unknown field", SHEET.replace("\"edges\": [", "\"edgse\": [], \"colour\": \"red\", \"edges\": [")),
        ("a field twice", SHEET.replace("\"id\": 10,", "\"id\": 10, \"id\": 10,")),
        ("an id not positive", SHEET.replace("\"id\": 13,", "\"id\": -13,")),
        ("an id not a number", SHEET.replace("\"id\": 13,", "\"id\": \"x\",")),
        ("a missing name and folder", SHEET.replace("\"name\": \"s\", \"folder_id\": 1, \"folder\": \"/f\"", "\"folder_id\": 1")),
        ("an unknown node type", SHEET.replace("\"id\": 12, \"type\": 0", "\"id\": 12, \"type\": 7")),
        ("an object's attribute on an action", SHEET.replace("\"module\": \"Sql\",", "\"module\": \"Sql\", \"field1\": \"t\",")),
        ("an action's attribute on an object", SHEET.replace("\"field1\": \"t\",", "\"field1\": \"t\", \"module\": \"Sql\",")),
        ("nodes not an array", SHEET.replace("\"nodes\": [", "\"nodes\": 5, \"nodez\": [")),
        ("a batch without elements", SHEET.replace("\"sheets\": [", "\"batches\": [{\"id\": 1, \"name\": \"b\", \"schedule\": \"0 2 * * *\", \"enabled\": \"yes\"}], \"sheets\": [")),
        ("a connection of negative number", SHEET.replace("\"sheets\": [", "\"connections\": [{\"id\": -1, \"name\": \"c\", \"type\": \"sqlite\"}], \"sheets\": [")),
        ("a NUL in a text", SHEET.replace("\"name\": \"a\",", "\"name\": \"a\\u0000\",")),
    ];
    let mut out = String::new();
    for (case, text) in &cases {
        let (_, problems) = parse(text);
        out.push_str(&format!("## {case}\n"));
        for d in problems.into_details(&LineIndex::new(text)) {
            let at = match (d.line, d.column) {
                (Some(l), Some(c)) => format!("{l}:{c}"),
                _ => "-".to_owned(),
            };
            out.push_str(&format!(
                "{at} {:?} {} [{}] {}\n",
                d.severity, d.path, d.code, d.message
            ));
        }
        out.push('\n');
    }
    insta::assert_snapshot!(out);
}
