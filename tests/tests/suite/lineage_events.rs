//! OpenLineage run events end to end: a server with `openlineage_url` sends, for each
//! action, `START` and then `COMPLETE` or `FAIL` (with its error) to a real HTTP receiver,
//! each event valid against the OpenLineage JSON Schema (checked by Python's `jsonschema`,
//! the 2020-12 validator the schema names), its job the action's path, its inputs and
//! outputs the action's tables.

use crate::common;

use common::*;
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A receiver that appends each POSTed body to LOG as a line and answers 200.
const RECEIVER: &str = r#"
import http.server, sys, threading
log = sys.argv[1]
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            with open(log, "a") as f:
                f.write(body.decode("utf-8").replace("\n", " ") + "\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

/// Validates each event (a JSON line of `events`) against the schema; answers the errors.
const VALIDATE: &str = r#"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
bad = 0
for line in open(sys.argv[2]):
    for e in v.iter_errors(json.loads(line)):
        bad += 1
        print(e.message)
sys.exit(1 if bad else 0)
"#;

/// The receiver's process, killed however the test ends.
struct Receiver(std::process::Child);

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn each_action_sends_its_start_and_end_as_valid_openlineage_events() {
    let dir = tempfile::tempdir().expect("dir");
    let log = dir.path().join("events.jsonl");
    let mut receiver = Receiver(
        Command::new("python3")
            .args(["-c", RECEIVER, log.to_str().expect("path")])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3"),
    );
    let mut port = String::new();
    BufReader::new(receiver.0.stdout.take().expect("stdout"))
        .read_line(&mut port)
        .expect("port");
    let url = format!("http://127.0.0.1:{}/api/v1/lineage", port.trim());
    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0"],
        &[
            ("WEFT_OPENLINEAGE_URL", url.as_str()),
            ("WEFT_OPENLINEAGE_NAMESPACE", "shop"),
        ],
    );
    let data = w.home.path().join("dw.db");
    rusqlite::Connection::open(&data)
        .expect("db")
        .execute_batch("CREATE TABLE raw (id INTEGER);")
        .expect("raw");
    w.add_keys(&format!("5|sqlite|{}|||\n", data.display()));
    let doc = json!({"version": 1, "transformationData": {
    "folders": [{"path": "/ol"}],
    "connections": [{"id": 5, "name": "dw", "type": "sqlite"}],
    "sheets": [{"attributes": {"name": "load", "folder": "/ol", "connection": "dw"},
        "nodes": [
            {"attributes": {"module": "Sql", "name": "orders", "action": "DROP TABLE IF EXISTS orders; CREATE TABLE orders AS SELECT id FROM raw"}},
            {"attributes": {"module": "Sql", "name": "broken", "action": "INSERT INTO elsewhere SELECT id FROM gone"}}
        ]}]}});
    let (st, v) = post(&w.url, deploy_body(&doc.to_string()));
    assert_eq!(st, 200, "{v}");
    let inst = run_sheet_to_end(&w, "/ol/load");
    assert_eq!(inst["state"], "failed", "{inst}");
    // The events arrive on their own thread: wait for the four.
    let deadline = Instant::now() + Duration::from_secs(30);
    let events: Vec<Value> = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let events: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if events.len() >= 4 {
            break events;
        }
        assert!(Instant::now() < deadline, "events: {text}");
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(receiver);
    assert_eq!(events.len(), 4, "{events:#?}");
    let schema = root().join("tests/fixtures/openlineage/OpenLineage.json");
    let checked = Command::new("python3")
        .args([
            "-c",
            VALIDATE,
            schema.to_str().expect("path"),
            log.to_str().expect("path"),
        ])
        .output()
        .expect("python3");
    assert!(
        checked.status.success(),
        "not valid OpenLineage: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    let of = |job: &str, kind: &str| -> &Value {
        events
            .iter()
            .find(|e| e["job"]["name"] == job && e["eventType"] == kind)
            .unwrap_or_else(|| panic!("no {kind} of {job}: {events:#?}"))
    };
    let start = of("/ol/load/orders", "START");
    let done = of("/ol/load/orders", "COMPLETE");
    assert_eq!(start["run"]["runId"], done["run"]["runId"]);
    assert_eq!(start["job"]["namespace"], "shop");
    let sqlite = format!("sqlite:{}", data.display());
    assert_eq!(
        done["inputs"],
        json!([{"namespace": sqlite, "name": "raw"}])
    );
    assert_eq!(
        done["outputs"],
        json!([{"namespace": sqlite, "name": "orders"}])
    );
    assert_eq!(done["run"]["facets"]["parent"]["job"]["name"], "test");
    let failed = of("/ol/load/broken", "FAIL");
    assert_ne!(failed["run"]["runId"], done["run"]["runId"]);
    assert!(
        failed["run"]["facets"]["errorMessage"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no such table: elsewhere")),
        "{failed}"
    );
    assert!(
        chrono::DateTime::parse_from_rfc3339(failed["eventTime"].as_str().unwrap_or("")).is_ok(),
        "{failed}"
    );
}
