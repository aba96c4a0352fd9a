//! Tests of the endpoint without a socket: the router is called with `oneshot` against a real
//! repository in a temporary directory.

use super::*;
use axum::body::Body;
use axum::http::Request;
use axum::http::StatusCode;
use http_body_util::BodyExt as _;
use tower::ServiceExt as _;
use weft_core::keys::{KeyFile, KeyStore};
use weft_core::settings::Settings;
use weft_repo::Repository;

const FOLDER: &str = include_str!("../../engine/src/deploy/fixtures/one-upsert-sheet/folder.dsr");
const CONNECTION: &str =
    include_str!("../../engine/src/deploy/fixtures/one-upsert-sheet/connection.dsr");
const SHEET: &str = include_str!("../../engine/src/deploy/fixtures/one-upsert-sheet/sheet.dsr");

struct Server {
    dir: tempfile::TempDir,
    state: Arc<AppState>,
}

impl Server {
    fn new() -> Self {
        Self::with(Settings::default(), false)
    }

    fn with(settings: Settings, require_token: bool) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = Arc::new(Repository::open(&dir.path().join("repository.db")).expect("open"));
        let kf = KeyFile::init(
            dir.path(),
            &dir.path().join("repository.db"),
            "http://127.0.0.1:1/weft/service",
        )
        .expect("keys");
        let mut kf = kf;
        let mut e = kf
            .require(weft_core::keys::SERVER_KEY)
            .expect("entry")
            .clone();
        e.options.push(("token".into(), "s3cret".into()));
        kf.set(e);
        kf.save().expect("save");
        let keys = Arc::new(KeyStore::new(KeyFile::path_in(dir.path()), kf));
        let registry = Arc::new(weft_core::plugins::load_test_registry());
        let executor = weft_engine::exec::batch::Executor::new(
            Arc::clone(&repo),
            Arc::clone(&registry),
            Some(Arc::clone(&keys)),
            2,
        );
        let state = Arc::new(AppState::new(
            repo,
            settings,
            Some(keys),
            require_token,
            registry,
            executor,
        ));
        Server { dir, state }
    }

    async fn raw(
        &self,
        method: &str,
        uri: &str,
        body: Vec<u8>,
        auth: Option<&str>,
    ) -> (StatusCode, serde_json::Value) {
        let mut req = Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", "application/json");
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let resp = app(Arc::clone(&self.state))
            .oneshot(req.body(Body::from(body)).expect("request"))
            .await
            .expect("response");
        let status = resp.status();
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        let json = serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)));
        (status, json)
    }

    async fn post(&self, body: &str) -> (StatusCode, serde_json::Value) {
        self.raw("POST", SERVICE_PATH, body.as_bytes().to_vec(), None)
            .await
    }

    async fn deploy(
        &self,
        content: &str,
        options: serde_json::Value,
    ) -> (StatusCode, serde_json::Value) {
        let body = serde_json::json!({"command": "DeployRepository", "payload": {"content": content, "deployOptions": options}});
        self.post(&body.to_string()).await
    }

    fn dump(&self) -> String {
        let conn = weft_repo::connect(&self.dir.path().join("repository.db")).expect("connect");
        weft_repo::dump(&conn).expect("dump")
    }
}

fn assert_error_shape(v: &serde_json::Value, code: &str) {
    assert!(v["requestId"].is_u64(), "requestId missing: {v}");
    assert_eq!(v["error"]["code"], code, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{v}"
    );
    assert!(v["error"]["details"].is_array(), "{v}");
}

#[tokio::test]
async fn deploys_and_answers_what_it_did() {
    let s = Server::new();
    let (st, v) = s.deploy(FOLDER, serde_json::json!({})).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert!(v["requestId"].is_u64());
    assert_eq!(
        v["payload"]["created"][0],
        serde_json::json!({"kind": "folder", "id": 10})
    );
    s.deploy(CONNECTION, serde_json::json!({"validate": "true"}))
        .await;
    let (st, v) = s
        .deploy(
            SHEET,
            serde_json::json!({"validate": true, "dryRun": "false", "intoFolder": null}),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v["payload"]["created"][0]["id"], 100);
    let (_, v) = s.deploy(SHEET, serde_json::json!(null)).await;
    assert_eq!(v["payload"]["unchanged"][0]["id"], 100);
    assert_eq!(v["payload"]["created"], serde_json::json!([]));
}

#[tokio::test]
async fn options_as_strings_or_json_values() {
    let s = Server::new();
    s.deploy(FOLDER, serde_json::json!({})).await;
    s.deploy(CONNECTION, serde_json::json!({})).await;
    let before = s.dump();
    for dry in [
        serde_json::json!("true"),
        serde_json::json!(true),
        serde_json::json!("TRUE"),
    ] {
        let (st, v) = s.deploy(SHEET, serde_json::json!({"dryRun": dry})).await;
        assert_eq!(st, StatusCode::OK, "{v}");
        assert_eq!(v["payload"]["dryRun"], true);
    }
    assert_eq!(before, s.dump(), "dry runs changed the repository");
    let (st, v) = s
        .deploy(SHEET, serde_json::json!({"intoFolder": "10"}))
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert!(v["payload"]["idMap"]["sheets"]["100"].is_i64());
    let (st, v) = s.deploy(SHEET, serde_json::json!({"dryRun": "yes"})).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert_error_shape(&v, "request.envelope");
    assert_eq!(
        v["error"]["details"][0]["path"],
        "payload.deployOptions.dryRun"
    );
    let (st, v) = s.deploy(SHEET, serde_json::json!({"dryrun": true})).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("unknown deploy option `dryrun`"),
        "{v}"
    );
}

#[tokio::test]
async fn client_mistakes_get_4xx_with_a_position_and_change_nothing() {
    let s = Server::new();
    s.deploy(FOLDER, serde_json::json!({})).await;
    let before = s.dump();
    // Truncated JSON.
    let (st, v) = s
        .post("{\"command\": \"DeployRepository\",\n \"payload\": {\"content\": \"{ver")
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert_error_shape(&v, "request.json");
    assert_eq!(v["error"]["details"][0]["line"], 2);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("truncated"),
        "{v}"
    );
    // Unknown command, which lists the known ones.
    let (st, v) = s.post(r#"{"command": "DeploySheet", "payload": {}}"#).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert_error_shape(&v, "request.unknown_command");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("DeployRepository"),
        "{v}"
    );
    // Missing and mistyped fields.
    let (st, v) = s.post(r#"{"command": "DeployRepository"}"#).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert_eq!(v["error"]["details"][0]["path"], "payload");
    let (st, v) = s
        .post(r#"{"command": "DeployRepository", "payload": {"content": 12}}"#)
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert_eq!(v["error"]["details"][0]["path"], "payload.content");
    assert_eq!(v["error"]["details"][0]["column"], 56);
    let (st, _) = s.post(r#"["DeployRepository"]"#).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    // Invalid UTF-8.
    let mut body = br#"{"command": "DeployRepository", "payload": {"content": "caf"#.to_vec();
    body.extend_from_slice(&[0xC3, 0x28]);
    body.extend_from_slice(br#""}}"#);
    let (st, v) = s.raw("POST", SERVICE_PATH, body, None).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert_error_shape(&v, "request.encoding");
    assert_eq!(v["error"]["details"][0]["column"], 60);
    // Invalid content: 422 with every problem.
    let (st, v) = s
        .deploy(
            &SHEET.replace("module: Upsert", "module: Nope"),
            serde_json::json!({}),
        )
        .await;
    assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY);
    assert_error_shape(&v, "deploy.invalid");
    assert!(
        v["error"]["details"]
            .as_array()
            .is_some_and(|d| d.iter().any(|x| x["code"] == "node.unknown_module"))
    );
    // Wrong method and path.
    let (st, v) = s.raw("GET", SERVICE_PATH, Vec::new(), None).await;
    assert_eq!(st, StatusCode::METHOD_NOT_ALLOWED);
    assert_error_shape(&v, "request.method");
    let (st, v) = s.raw("POST", "/elsewhere", Vec::new(), None).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert_error_shape(&v, "request.path");
    assert_eq!(before, s.dump());
}

#[tokio::test]
async fn a_body_over_the_limit_gets_413() {
    let settings = Settings {
        max_body_bytes: 1024,
        ..Settings::default()
    };
    let s = Server::with(settings, false);
    let big = "x".repeat(4096);
    let (st, v) = s.deploy(&big, serde_json::json!({})).await;
    assert_eq!(st, StatusCode::PAYLOAD_TOO_LARGE);
    assert_error_shape(&v, "request.too_large");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("1024"),
        "{v}"
    );
}

#[tokio::test]
async fn content_encoded_as_spec_4_2_says_is_accepted() {
    let s = Server::new();
    let folder = "{\r\n\tversion: 1\r\n\ttransformationData: {\r\n\t\tfolders: [\r\n\t\t\t{ id: 3, path: \"/x\", documentation: \"a \\\\ b \\\"quoted\\\"\tand a tab\" }\r\n\t\t]\r\n\t}\r\n}\r\n";
    // SPEC 4.2: remove carriage returns, double backslashes, escape quotes, line breaks as \n;
    // TABs stay raw inside the JSON string.
    let encoded = folder
        .replace('\r', "")
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n");
    let body = format!(
        "{{\"command\":\"DeployRepository\",\"payload\":{{\"content\":\"{encoded}\",\"deployOptions\":{{\"validate\":\"true\",\"dryRun\":\"false\"}}}}}}"
    );
    assert!(body.contains('\t'), "the body carries raw TABs");
    let (st, v) = s.post(&body).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let conn = weft_repo::connect(&s.dir.path().join("repository.db")).expect("connect");
    let doc: String = conn
        .query_row("SELECT documentation FROM folders WHERE id = 3", [], |r| {
            r.get(0)
        })
        .expect("folder");
    assert_eq!(doc, "a \\ b \"quoted\"\tand a tab");
}

#[tokio::test]
async fn a_token_is_required_when_asked() {
    let s = Server::with(Settings::default(), true);
    let body = serde_json::json!({"command": "DeployRepository", "payload": {"content": FOLDER}})
        .to_string();
    let (st, v) = s
        .raw("POST", SERVICE_PATH, body.clone().into_bytes(), None)
        .await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    assert_error_shape(&v, "request.unauthorized");
    assert!(!v.to_string().contains("s3cret"), "the token leaked: {v}");
    let (st, _) = s
        .raw(
            "POST",
            SERVICE_PATH,
            body.clone().into_bytes(),
            Some("Bearer wrong"),
        )
        .await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    assert!(!s.dump().contains("/sales"));
    let (st, v) = s
        .raw(
            "POST",
            SERVICE_PATH,
            body.into_bytes(),
            Some("Bearer s3cret"),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
}

#[tokio::test]
async fn into_folder_is_refused_outside_development() {
    let settings = Settings {
        environment: weft_core::settings::Environment::Production,
        ..Settings::default()
    };
    let s = Server::with(settings, false);
    s.deploy(FOLDER, serde_json::json!({})).await;
    let (st, v) = s.deploy(SHEET, serde_json::json!({"intoFolder": 10})).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    assert_error_shape(&v, "deploy.into_folder_refused");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("production"),
        "{v}"
    );
}

#[test]
fn repository_faults_have_their_own_codes() {
    use weft_repo::sqlite::testing as sqlite;
    let fault = |code: i32| sqlite::failure(code, "INSERT ...");
    for (code, status, name, retry) in [
        (
            sqlite::SQLITE_FULL,
            StatusCode::INSUFFICIENT_STORAGE,
            "repository.full",
            None,
        ),
        (
            sqlite::SQLITE_IOERR,
            StatusCode::SERVICE_UNAVAILABLE,
            "repository.io",
            Some(5),
        ),
        (
            sqlite::SQLITE_READONLY,
            StatusCode::SERVICE_UNAVAILABLE,
            "repository.io",
            Some(5),
        ),
        (
            sqlite::SQLITE_BUSY,
            StatusCode::SERVICE_UNAVAILABLE,
            "repository.busy",
            Some(5),
        ),
        (
            sqlite::SQLITE_CONSTRAINT,
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            None,
        ),
    ] {
        let e = ApiError::from(fault(code));
        assert_eq!(
            (e.status(), e.code(), e.retry_after()),
            (status, name, retry),
            "{code}"
        );
        // What SQLite said goes to the log, not to the client.
        assert!(!e.message().contains("INSERT"), "{}", e.message());
        assert!(e.internal_cause().is_some_and(|c| c.contains("INSERT")));
    }
}
