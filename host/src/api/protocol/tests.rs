//! The typed commands against their reader: what the client writes, the server reads back as
//! the same command; what is wrong in a body is named all at once, each with its place.

use super::*;
use proptest::prelude::*;
use weft_core::plan::Element;
use weft_dsr::{LineIndex, Problems, json};
use weft_engine::deploy;
use weft_protocol::{ElementKey, ElementRef};

/// Reads `text` as the server does: the command, or every problem as `(line, column, path,
/// message)`.
fn read_text(text: &str) -> Result<Command, Vec<(u32, u32, String, String)>> {
    let root = json::parse(text).expect("JSON");
    let mut problems = Problems::default();
    match crate::api::envelope::request(&root, &mut problems) {
        Some(c) if !problems.has_errors() => Ok(c),
        _ => Err(problems
            .into_details(&LineIndex::new(text))
            .into_iter()
            .map(|d| {
                (
                    d.line.unwrap_or(0),
                    d.column.unwrap_or(0),
                    d.path,
                    d.message,
                )
            })
            .collect()),
    }
}

fn round_trip(command: Command) {
    let text = serde_json::to_string_pretty(&command).expect("serialise");
    assert_eq!(read_text(&text), Ok(command), "{text}");
}

#[test]
fn every_command_the_client_writes_reads_back_as_itself() {
    round_trip(Command::DeployRepository(DeployRepository {
        content: "{ version: 1 }\n\t\"quoted\"".to_owned(),
        deploy_options: deploy::Options {
            validate: false,
            dry_run: true,
            into_folder: Some(10),
        },
    }));
    round_trip(Command::RunElements(RunElements {
        batch_execution: BatchExecution {
            batch_name: "nightly".to_owned(),
            user: "ci".to_owned(),
            element_list: vec![
                Element { kind: 'S', id: 100 }.into(),
                Element { kind: 'A', id: -3 }.into(),
                Element { kind: 'F', id: 7 }.into(),
                ElementRef {
                    kind: 'S',
                    id: ElementKey::Path("/etl/stage".to_owned()),
                },
            ],
            select: weft_protocol::Selection::Downstream,
        },
        variables: vec![Variable {
            name: "day".to_owned(),
            kind: Some("String".to_owned()),
            value: "2026-11-23".to_owned(),
        }],
    }));
    round_trip(
        GetBatchInstance {
            batch_instance_id: 4,
        }
        .into(),
    );
    round_trip(
        WaitBatchInstance {
            batch_instance_id: 4,
            timeout_seconds: Some(1.5),
            changed_from: Some("00ff00ff00ff00ff".to_owned()),
        }
        .into(),
    );
    round_trip(
        WaitBatchInstance {
            batch_instance_id: 4,
            timeout_seconds: None,
            changed_from: None,
        }
        .into(),
    );
    round_trip(
        ListBatchInstances {
            limit: 1000,
            ..ListBatchInstances::default()
        }
        .into(),
    );
    round_trip(
        ListBatchInstances {
            limit: 5,
            state: Some(weft_repo::model::InstanceState::Failed),
            name: Some("nightly \"load\" 50%".to_owned()),
            before: Some(77),
            batch_id: Some(3),
            backfill_id: Some(4),
            started_before: Some("2026-10-25 00:00:00".to_owned()),
            offset: 100,
            total: true,
        }
        .into(),
    );
    round_trip(
        BackfillBatch {
            batch: ObjectName::Name("nightly".to_owned()),
            from: "2026-01-01".to_owned(),
            to: "2026-12-31".to_owned(),
            parallel: 3,
            user: "ops".to_owned(),
        }
        .into(),
    );
    round_trip(
        DeleteObjects {
            sheets: vec![ObjectName::Id(5), ObjectName::Name("/a/b".to_owned())],
            recursive: true,
            ..DeleteObjects::default()
        }
        .into(),
    );
    round_trip(
        ExportRepository {
            folder: Some("/a".to_owned()),
        }
        .into(),
    );
    round_trip(ListSheets::default().into());
    round_trip(ListSheets { limit: 3 }.into());
    round_trip(GetSheet { sheet_id: 7 }.into());
    round_trip(ListBatches {}.into());
    round_trip(ListDeploys::default().into());
    round_trip(
        ListDeploys {
            limit: 200,
            before: Some(12),
            changes: 0,
        }
        .into(),
    );
    round_trip(GetDeployChange { history_id: 4 }.into());
    round_trip(
        HaltBatchInstance {
            batch_instance_id: 9,
        }
        .into(),
    );
    round_trip(
        RestartBatchInstance {
            batch_instance_id: 9,
            as_started: false,
            actions: Vec::new(),
        }
        .into(),
    );
    round_trip(
        RestartBatchInstance {
            batch_instance_id: 9,
            as_started: true,
            actions: vec![7, 8],
        }
        .into(),
    );
    round_trip(
        NextRuns {
            batch_id: 2,
            count: 1,
        }
        .into(),
    );
    round_trip(AdvanceClock::By { seconds: 3600 }.into());
    round_trip(
        AdvanceClock::To {
            to: "2026-10-25 02:30".to_owned(),
        }
        .into(),
    );
}

#[test]
fn the_lenient_forms_of_the_scripts_read_as_their_values() {
    let c = read_text(
        r#"{"command": "DeployRepository", "payload": {"content": "x",
            "deployOptions": {"validate": "FALSE", "dryRun": null, "intoFolder": "12"}}}"#,
    );
    assert_eq!(
        c,
        Ok(Command::DeployRepository(DeployRepository {
            content: "x".to_owned(),
            deploy_options: deploy::Options {
                validate: false,
                dry_run: false,
                into_folder: Some(12),
            },
        }))
    );
    let c = read_text(
        r#"{"command": "RunElements", "variableList": [{"variableName": "n", "variableValue": 5}],
            "payload": {"batchExecution": {"batchName": "b", "user": "u",
            "elementList": [{"elementType": "S", "elementId": "100"}]}}}"#,
    );
    let Ok(Command::RunElements(run)) = c else {
        panic!("{c:?}")
    };
    assert_eq!(
        run.batch_execution.element_list,
        [ElementRef::from(Element { kind: 'S', id: 100 })]
    );
    assert_eq!(
        run.variables,
        [Variable {
            name: "n".to_owned(),
            kind: None,
            value: "5".to_owned()
        }]
    );
    assert_eq!(
        read_text(r#"{"command": "ListBatchInstances", "payload": {"limit": null}}"#),
        Ok(ListBatchInstances::default().into())
    );
    assert_eq!(
        read_text(r#"{"command": "NextRuns", "payload": {"batchId": "2"}}"#),
        Ok(NextRuns {
            batch_id: 2,
            count: 10
        }
        .into())
    );
}

#[test]
fn every_problem_of_a_payload_is_named_at_once_with_its_place() {
    let text = r#"{"command": "RunElements",
 "payload": {"batchExecution": {"batchName": 7, "usr": "u",
   "elementList": [{"elementType": "X", "elementId": 1},
                   {"elementType": "S", "elementId": "ten"}]}},
 "variableList": [{"variableName": "", "variableValue": [1]}]}"#;
    let problems = read_text(text).expect_err("refused");
    let found: Vec<(u32, u32, &str)> = problems
        .iter()
        .map(|(l, c, p, _)| (*l, *c, p.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (2, 32, "payload.batchExecution.user"),
            (2, 46, "payload.batchExecution.batchName"),
            (2, 49, "payload.batchExecution.usr"),
            (3, 36, "payload.batchExecution.elementList[0].elementType"),
            (4, 54, "payload.batchExecution.elementList[1].elementId"),
            (5, 36, "variableList[0].variableName"),
            (5, 57, "variableList[0].variableValue"),
        ],
        "{problems:#?}"
    );
    let messages: Vec<&str> = problems.iter().map(|(_, _, _, m)| m.as_str()).collect();
    assert!(
        messages[0].starts_with("missing field `user`"),
        "{}",
        messages[0]
    );
    assert_eq!(messages[1], "`batchName` must be a string, found 7");
    assert!(
        messages[2].ends_with("did you mean `user`?"),
        "{}",
        messages[2]
    );
    assert!(messages[3].contains("S (sheet), A (action) or F (folder), found \"X\""));
    assert_eq!(
        messages[4],
        "`elementId` must be a whole number, found \"ten\""
    );
    assert_eq!(messages[5], "`variableName` is empty");
    assert!(messages[6].contains("found an array"), "{}", messages[6]);
}

#[test]
fn each_command_names_its_missing_and_mistyped_fields() {
    for (text, path, message) in [
        (
            r#"{"command": "GetBatchInstance", "payload": {}}"#,
            "payload.batchInstanceId",
            "missing field `batchInstanceId` in the GetBatchInstance payload {batchInstanceId}",
        ),
        (
            r#"{"command": "HaltBatchInstance", "payload": {"batchInstanceId": 1.5}}"#,
            "payload.batchInstanceId",
            "`batchInstanceId` must be a whole number, found 1.5",
        ),
        (
            r#"{"command": "WaitBatchInstance", "payload": {"batchInstanceId": 1, "timeoutSeconds": -1}}"#,
            "payload.timeoutSeconds",
            "`timeoutSeconds` must be a number of seconds (0 or more), found -1",
        ),
        (
            r#"{"command": "ListBatchInstances", "payload": {"limit": 0}}"#,
            "payload.limit",
            "`limit` must be a whole number from 1 to 1000, found 0",
        ),
        (
            r#"{"command": "ListSheets", "payload": {"limit": 20001}}"#,
            "payload.limit",
            "`limit` must be a whole number from 1 to 20000, found 20001",
        ),
        (
            r#"{"command": "ListDeploys", "payload": {"limit": 201}}"#,
            "payload.limit",
            "`limit` must be a whole number from 1 to 200, found 201",
        ),
        (
            r#"{"command": "ListDeploys", "payload": {"changes": -1}}"#,
            "payload.changes",
            "`changes` must be a whole number from 0 to 200, found -1",
        ),
        (
            r#"{"command": "ListDeploys", "payload": {"before": 0}}"#,
            "payload.before",
            "`before` must be a whole number from 1 to",
        ),
        (
            r#"{"command": "ListDeploys", "payload": {"page": 2}}"#,
            "payload.page",
            "unknown field `page`",
        ),
        (
            r#"{"command": "GetDeployChange", "payload": {}}"#,
            "payload.historyId",
            "missing field `historyId` in the GetDeployChange payload {historyId}",
        ),
        (
            r#"{"command": "NextRuns", "payload": {"batchId": 1, "count": "many"}}"#,
            "payload.count",
            "`count` must be a whole number from 1 to 1000, found \"many\"",
        ),
        (
            r#"{"command": "AdvanceClock", "payload": {"seconds": 1, "to": "2026-01-01"}}"#,
            "payload",
            "the AdvanceClock payload is {seconds} or {to}",
        ),
        (
            r#"{"command": "AdvanceClock", "payload": {"to": "tomorrow"}}"#,
            "payload.to",
            "`to`: ",
        ),
        (
            r#"{"command": "RestartBatchInstance", "payload": []}"#,
            "payload",
            "the RestartBatchInstance payload {batchInstanceId, asStarted?, actions?} must be an object, found an array",
        ),
        (
            r#"{"command": "DeployRepository", "payload": {"content": "x", "deployOptions": {"dryrun": true}}}"#,
            "payload.deployOptions.dryrun",
            "unknown deploy option `dryrun`; the options are validate, dryRun, intoFolder; did you mean `dryRun`?",
        ),
        (
            r#"{"command": "DeployRepository", "payload": {"content": "x"}, "variableList": 3}"#,
            "variableList",
            "`variableList` must be an array",
        ),
    ] {
        let problems = read_text(text).expect_err(text);
        assert_eq!(problems.len(), 1, "{text}: {problems:?}");
        let (line, column, p, m) = &problems[0];
        assert_eq!((*line, p.as_str()), (1, path), "{text}");
        assert!(*column > 1, "{text}: {column}");
        assert!(m.starts_with(message), "{text}: {m}");
    }
}

#[test]
fn every_listed_command_is_read_as_itself_and_never_as_another() {
    for &name in COMMANDS {
        let text = serde_json::json!({"command": name, "payload": {}}).to_string();
        match read_text(&text) {
            Ok(command) => assert_eq!(command.name(), name),
            Err(problems) => {
                for (_, _, _, message) in &problems {
                    assert!(!message.contains("cannot read it"), "{name}: {message}");
                    for &other in COMMANDS.iter().filter(|o| **o != name) {
                        assert!(
                            !message.contains(&format!("the {other} payload")),
                            "{name} was read as {other}: {message}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn an_unknown_command_is_named_at_its_place_and_its_payload_is_not_read() {
    let problems = read_text("{\"payload\": {\"x\": 1},\n \"command\": \"DeploySheet\"}")
        .expect_err("unknown");
    assert_eq!(problems.len(), 1, "{problems:?}");
    let (line, column, path, message) = &problems[0];
    assert_eq!((*line, *column, path.as_str()), (2, 13, "command"));
    assert!(message.starts_with("unknown command `DeploySheet`; known commands: DeployRepository"));
    // An envelope with everything wrong: each problem once.
    let problems = read_text(r#"{"command": 1, "extra": true, "extra": false}"#).expect_err("bad");
    let paths: Vec<&str> = problems.iter().map(|(_, _, p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        ["payload", "command", "extra", "extra"],
        "{problems:?}"
    );
    assert!(problems[3].3.contains("given twice"), "{problems:?}");
}

fn element() -> impl Strategy<Value = ElementRef> {
    let key = prop_oneof![
        any::<i64>().prop_map(ElementKey::Id),
        "/[^\\x00]{0,30}".prop_map(ElementKey::Path),
    ];
    (prop_oneof![Just('S'), Just('A'), Just('F')], key)
        .prop_map(|(kind, id)| ElementRef { kind, id })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Any text in any field (but NUL, which no repository stores and every field refuses),
    /// any ids: what the client sends is what the server reads.
    #[test]
    fn a_nul_anywhere_in_a_run_request_is_refused_at_its_place(
        before in "[^\\x00]{0,8}",
        after in "[^\\x00]{0,8}",
        field in 0usize..3,
    ) {
        let text = format!("{before}\0{after}");
        let mut values = [String::from("n"), String::from("u"), String::from("v")];
        values[field] = text;
        let [name, user, value] = values;
        let command = Command::RunElements(RunElements {
            batch_execution: BatchExecution {
                batch_name: name,
                user,
                element_list: vec![Element { kind: 'S', id: 1 }.into()],
                select: weft_protocol::Selection::Named,
            },
            variables: vec![Variable { name: "x".to_owned(), kind: None, value }],
        });
        let json = serde_json::to_string(&command).expect("serialise");
        let refused = read_text(&json).expect_err("refused");
        let path = ["payload.batchExecution.batchName", "payload.batchExecution.user", "variableList[0].variableValue"][field];
        prop_assert!(refused.iter().any(|p| p.2 == path), "{:?}", refused);
    }

    #[test]
    fn any_run_request_reads_back_as_itself(
        name in "[^\\x00]*",
        user in "[^\\x00]*",
        elements in proptest::collection::vec(element(), 1..5),
        // Values without `${` (what a run cannot compute is refused: its own test), names
        // other than the built-ins (refused too).
        variables in proptest::collection::vec(
            ("[^\\s\\x00]\\PC*", "[^\\x00$]*")
                .prop_filter("a built-in", |(n, _)| !weft_core::variables::BUILT_INS.contains(&n.as_str())),
            0..4,
        ),
        upstream in proptest::bool::ANY,
    ) {
        let select = if upstream { weft_protocol::Selection::Upstream } else { weft_protocol::Selection::Named };
        let command = Command::RunElements(RunElements {
            batch_execution: BatchExecution { batch_name: name, user, element_list: elements, select },
            variables: variables
                .into_iter()
                .map(|(name, value)| Variable { name, kind: None, value })
                .collect(),
        });
        let text = serde_json::to_string(&command).expect("serialise");
        prop_assert_eq!(read_text(&text), Ok(command));
    }

    #[test]
    fn any_deploy_request_reads_back_as_itself(
        content in ".*",
        validate in any::<bool>(),
        dry_run in any::<bool>(),
        into_folder in proptest::option::of(1..i64::MAX),
    ) {
        let command = Command::DeployRepository(DeployRepository {
            content,
            deploy_options: deploy::Options { validate, dry_run, into_folder },
        });
        let text = serde_json::to_string(&command).expect("serialise");
        prop_assert_eq!(read_text(&text), Ok(command));
    }
}

/// Every refusal of a request body, as the client reads it: its code, its message and each
/// detail with its place. A change to any of these words shows as a diff here.
#[test]
fn every_refusal_of_a_request_reads_as_written_down() {
    let bodies: &[(&str, &[u8])] = &[
        ("not UTF-8", b"{\"command\": \"ListHosts\", \"payload\": {\xff}}"),
        ("not JSON", b"{\"command\": \"ListHosts\",\n \"payload\": {]}"),
        ("not an object", b"[1, 2]"),
        ("no command, no payload", b"{}"),
        ("command not a string", br#"{"command": 7, "payload": {}}"#),
        ("unknown command", br#"{"command": "DropEverything", "payload": {}}"#),
        ("unknown envelope field", br#"{"command": "ListHosts", "payload": {}, "paylod": 1}"#),
        ("payload not an object", br#"{"command": "ListHosts", "payload": []}"#),
        ("a field given twice", br#"{"command": "ListHosts", "payload": {}, "command": "ListHosts"}"#),
        ("NUL in a value", b"{\"command\": \"GetSheet\", \"payload\": {\"sheetId\": \"1\\u0000\"}}"),
        ("deploy: content missing, options wrong", br#"{"command": "DeployRepository", "payload": {"deployOptions": {"dryRun": "maybe", "intoFolder": -3, "validat": true}}}"#),
        ("deploy: content not a string", br#"{"command": "DeployRepository", "payload": {"content": 5}}"#),
        ("run: elements empty, user missing", br#"{"command": "RunElements", "payload": {"batchExecution": {"batchName": "b", "elementList": []}}}"#),
        ("run: element wrong", br#"{"command": "RunElements", "payload": {"batchExecution": {"batchName": "b", "user": "u", "elementList": [{"elementType": "X", "elementId": "x"}, 3]}}}"#),
        ("run: variables wrong", br#"{"command": "RunElements", "payload": {"batchExecution": {"batchName": "b", "user": "u", "elementList": [{"elementType": "S", "elementId": 1}]}}, "variableList": [{"variableName": "", "variableValue": [1]}, 4]}"#),
        ("get: id not whole", br#"{"command": "GetBatchInstance", "payload": {"batchInstanceId": 1.5}}"#),
        ("wait: times wrong", br#"{"command": "WaitBatchInstance", "payload": {"batchInstanceId": 1, "timeoutSeconds": -1, "changedFrom": 12}}"#),
        ("list: out of range, unknown state", br#"{"command": "ListBatchInstances", "payload": {"limit": 0, "state": "sleeping", "before": 0}}"#),
        ("next runs: count out of range", br#"{"command": "NextRuns", "payload": {"batchId": 1, "count": 1001}}"#),
        ("deploys: a typo", br#"{"command": "ListDeploys", "payload": {"limits": 5}}"#),
        ("clock: neither seconds nor to", br#"{"command": "AdvanceClock", "payload": {}}"#),
        ("clock: a bad time", br#"{"command": "AdvanceClock", "payload": {"to": "tomorrow"}}"#),
    ];
    let mut out = String::new();
    for (case, body) in bodies {
        let line = match crate::api::envelope::read(body, &|_, _| Ok(())) {
            Ok(command) => format!("accepted: {command:?}"),
            Err(e) => {
                let mut text = format!("{} {}: {}", e.status().as_u16(), e.code(), e.message());
                for d in e.details() {
                    let at = match (d.line, d.column) {
                        (Some(l), Some(c)) => format!("{l}:{c}"),
                        _ => "-".to_owned(),
                    };
                    text.push_str(&format!("\n    {at} {} [{}] {}", d.path, d.code, d.message));
                }
                text
            }
        };
        out.push_str(&format!("## {case}\n{line}\n\n"));
    }
    insta::assert_snapshot!(out);
}
