//! The protocol's types against their JSON: what the server writes, the client reads back as
//! the same value; the envelope, the state words and the severities as SPEC and DESIGN say.

use super::*;
use crate::instances::Action;
use serde_json::json;

#[test]
fn the_answers_read_back_as_the_server_wrote_them() {
    let instance = Instance {
        summary: Listed {
            batch_instance_id: 3,
            batch_name: "b".to_owned(),
            user: "u".to_owned(),
            state: InstanceState::Failed,
            start: "2026-11-23T10:00:00Z".to_owned(),
            end: None,
            batch_id: Some(2),
            planned_start: Some("2026-11-23 11:00".to_owned()),
            planned_second: true,
            late_seconds: Some(1),
            late: Some(false),
            running_on: vec!["h1".to_owned()],
            backfill_id: None,
        },
        elements: vec![Element { kind: 'S', id: 100 }],
        schedule_date: "2026-11-23".to_owned(),
        schedule_date_set: true,
        actions: vec![Action {
            action_id: 1,
            sheet_id: 100,
            name: "load".to_owned(),
            module: "Sql".to_owned(),
            state: ActionState::Error,
            start: Some("2026-11-23T10:00:00Z".to_owned()),
            end: None,
            rows_read: 1,
            rows_written: 2,
            rows_updated: 3,
            rows_deleted: 0,
            error: Some("no such table".to_owned()),
            log: vec!["one".to_owned()],
            host: Some("h1".to_owned()),
            depends_on: vec![3, 4],
            deploy_id: Some(12),
            waiting_for: None,
            retry_at: None,
            tries: Vec::new(),
        }],
    };
    let waited = Waited {
        instance,
        timed_out: true,
        version: "0123456789abcdef".to_owned(),
    };
    let text = serde_json::to_string(&Answer {
        request_id: 8,
        payload: Some(&waited),
        error: None,
    })
    .expect("write");
    assert!(text.contains(r#""state":"E""#) && text.contains(r#""timedOut":true"#));
    let back: Answer<Waited> = serde_json::from_str(&text).expect("read");
    assert_eq!(back.payload, Some(waited));
    let refused: Answer<Waited> = serde_json::from_str(
        r#"{"requestId": 9, "error": {"code": "run.not_found", "message": "no"}}"#,
    )
    .expect("read");
    assert_eq!(
        refused.error.map(|e| e.code),
        Some("run.not_found".to_owned())
    );
}

#[test]
fn a_command_serialises_to_its_envelope_with_the_variables_beside_the_payload() {
    let run = RunElements {
        batch_execution: BatchExecution {
            batch_name: "nightly".to_owned(),
            user: "ops".to_owned(),
            element_list: vec![Element { kind: 'F', id: 7 }.into()],
            select: crate::Selection::Named,
        },
        variables: vec![Variable {
            name: "day".to_owned(),
            kind: Some("String".to_owned()),
            value: "2026-11-26".to_owned(),
        }],
    };
    let text = serde_json::to_value(Command::from(run.clone())).expect("write");
    assert_eq!(
        text,
        json!({
            "command": "RunElements",
            "payload": {"batchExecution": {
                "batchName": "nightly",
                "user": "ops",
                "elementList": [{"elementType": "F", "elementId": 7}]
            }},
            "variableList": [{"variableName": "day", "variableType": "String", "variableValue": "2026-11-26"}]
        })
    );
    let bare = RunElements {
        variables: Vec::new(),
        ..run
    };
    let text = serde_json::to_value(Command::from(bare)).expect("write");
    assert!(text.get("variableList").is_none(), "{text}");
    let deploy = serde_json::to_value(Command::from(DeployRepository {
        content: "{}".to_owned(),
        deploy_options: DeployOptions::default(),
    }))
    .expect("write");
    assert_eq!(
        deploy["payload"]["deployOptions"],
        json!({"validate": true, "dryRun": false, "intoFolder": null})
    );
}

#[test]
fn every_command_is_listed_once_under_the_name_its_type_gives() {
    let names = [
        DeployRepository::NAME,
        DeployProject::NAME,
        RunElements::NAME,
        GetBatchInstance::NAME,
        WaitBatchInstance::NAME,
        ListBatchInstances::NAME,
        ListRunGroups::NAME,
        ListRunDays::NAME,
        HaltBatchInstance::NAME,
        RestartBatchInstance::NAME,
        BackfillBatch::NAME,
        PauseBatch::NAME,
        ListNotifications::NAME,
        NextRuns::NAME,
        ListPlugins::NAME,
        ListHosts::NAME,
        ListSheets::NAME,
        GetSheet::NAME,
        GetLineage::NAME,
        GetLineageGraph::NAME,
        ListBatches::NAME,
        ListDeploys::NAME,
        GetDeployChange::NAME,
        DeleteObjects::NAME,
        ExportRepository::NAME,
        AdvanceClock::NAME,
        WhoAmI::NAME,
        AddUser::NAME,
        ListUsers::NAME,
        ChangeUser::NAME,
        CreateToken::NAME,
        RevokeToken::NAME,
        ListAudit::NAME,
    ];
    assert_eq!(COMMANDS, names);
}

#[test]
fn the_state_words_are_stored_and_answered_as_written_and_nothing_else_is_read() {
    let all = [
        InstanceState::Running,
        InstanceState::Waiting,
        InstanceState::Finished,
        InstanceState::Failed,
        InstanceState::Halted,
        InstanceState::Interrupted,
    ];
    for state in all {
        let text = serde_json::to_value(state).expect("write");
        assert_eq!(text, json!(state.word()));
        assert_eq!(InstanceState::from_word(state.word()), Some(state));
        assert_eq!(state.to_string(), state.word());
    }
    assert_eq!(InstanceState::from_word("Running"), None);
    let all = [
        ActionState::Defined,
        ActionState::Waiting,
        ActionState::Running,
        ActionState::Finished,
        ActionState::Error,
        ActionState::Skipped,
        ActionState::Halted,
    ];
    let codes: Vec<&str> = all.iter().map(|s| s.code()).collect();
    assert_eq!(codes, ["D", "W", "R", "F", "E", "S", "H"]);
    for state in all {
        let back: ActionState = serde_json::from_value(json!(state.code())).expect("read");
        assert_eq!(back, state);
    }
    let wrong = serde_json::from_value::<ActionState>(json!("X")).expect_err("X is no state");
    assert_eq!(
        wrong.to_string(),
        "`X` is not an action state (one of D W R F E S H)"
    );
}

#[test]
fn a_problem_is_answered_with_its_severity_as_a_word() {
    let detail = Detail {
        severity: Severity::Warning,
        code: "deploy.cycle".to_owned(),
        message: "a cycle".to_owned(),
        file: None,
        line: Some(3),
        column: Some(9),
        path: "transformationData.sheets[0]".to_owned(),
        more: None,
    };
    let text = serde_json::to_value(&detail).expect("write");
    assert_eq!(
        text,
        json!({"severity": "warning", "code": "deploy.cycle", "message": "a cycle",
               "line": 3, "column": 9, "path": "transformationData.sheets[0]"})
    );
    let wrong = serde_json::from_value::<Detail>(json!({
        "severity": "fatal", "code": "c", "message": "m", "line": null, "column": null, "path": ""
    }))
    .expect_err("fatal is no severity");
    assert!(
        wrong.to_string().contains("unknown variant `fatal`"),
        "{wrong}"
    );
}

#[test]
fn each_command_is_named_as_its_payload_type_and_listed_once() {
    assert_eq!(COMMANDS, commands::TYPE_NAMES);
    let mut names = COMMANDS.to_vec();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), COMMANDS.len(), "a name twice in {COMMANDS:?}");
    let halt: Command = HaltBatchInstance {
        batch_instance_id: 1,
    }
    .into();
    assert_eq!(halt.name(), "HaltBatchInstance");
}

#[test]
fn every_command_has_its_right_and_the_docs_table_says_the_same() {
    assert_eq!(RIGHTS.len(), COMMANDS.len());
    // (Read at build time: this crate does no I/O, its tests neither.)
    let docs = include_str!("../../../docs/api.md");
    let table = docs
        .split("### Rights")
        .nth(1)
        .expect("docs/api.md has a Rights section");
    let rows: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with("| command |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let listed: Vec<String> = RIGHTS
        .iter()
        .map(|(name, right)| format!("| `{name}` | `{}` | {} |", right.word(), right.role()))
        .collect();
    assert_eq!(rows, listed, "docs/api.md's Rights table");
    // Reading needs the least; what changes the repository or runs more.
    let right = |name: &str| RIGHTS.iter().find(|(n, _)| *n == name).map(|(_, r)| *r);
    assert_eq!(right("ListBatchInstances"), Some(Right::Read));
    assert_eq!(right("HaltBatchInstance"), Some(Right::Operate));
    assert_eq!(right("DeleteObjects"), Some(Right::Deploy));
    assert!(Right::Read < Right::Operate && Right::Deploy < Right::Admin);
}
