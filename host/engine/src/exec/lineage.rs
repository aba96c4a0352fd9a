//! OpenLineage run events of each action (setting `openlineage_url`): `START` when it
//! begins, then `COMPLETE`, `FAIL` (with an error message facet) or `ABORT` (halted), each
//! with the action's inputs (its sources) and outputs (its targets) as datasets. The job is
//! the action, named by its path (`/folder/sheet/action`) in the namespace of the setting
//! `openlineage_namespace` (default `weft`); the run's id is a UUID made from the action's
//! run (repository, instance, action, attempt), and its parent the batch instance. A
//! dataset's namespace is its connection's database as the key file names it, without its
//! credentials (`postgres://host:5432`, `sqlite:/data/dw.db`); its name the table, with its
//! database and schema on PostgreSQL (`dw.public.orders`). [`weft_notify::lineage`] sends
//! them.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use weft_core::connect::marker::Run;
use weft_core::keys::KeyFile;
use weft_core::plan::{ActionPlan, Object};

/// The event schema weft writes.
pub const SCHEMA_URL: &str = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent";
/// Who made the events.
const PRODUCER: &str = env!("CARGO_PKG_REPOSITORY");

/// Where a host's events go, and their jobs' namespace.
#[derive(Debug)]
pub struct Lineage {
    /// The sender.
    pub emitter: weft_notify::lineage::Emitter,
    /// The jobs' namespace.
    pub namespace: String,
}

/// A UUID (version 5 layout) made from `parts`.
fn uuid_of(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    let mut b = [0u8; 16];
    b.copy_from_slice(&h.finalize()[..16]);
    b[6] = (b[6] & 0x0f) | 0x50;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// A connection's URL without credentials (anything before an `@`: `user:password@`, an
/// Oracle `scott/tiger@`), query or options.
fn bare(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (format!("{s}://"), r),
        // `jdbc:oracle:thin:scott/tiger@host:1521/x`: the scheme is up to the last `:`
        // before the `@`.
        None => match url.rfind('@') {
            Some(at) => {
                let head = &url[..at];
                let cut = head.rfind(':').map_or(0, |i| i + 1);
                (url[..cut].to_owned(), &url[at + 1..])
            }
            None => (String::new(), url),
        },
    };
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let rest = rest.find(['?', '#', ';']).map_or(rest, |i| &rest[..i]);
    format!("{scheme}{rest}")
}

/// The most characters of an error an event carries.
const MAX_ERROR: usize = 1000;

/// A dataset: the object's table in its connection's database.
fn dataset(o: &Object, plan: &ActionPlan, keys: &KeyFile) -> Value {
    let entry = keys.get(&o.connection.to_string());
    let schema = o
        .schema
        .clone()
        .or_else(|| plan.schemas.get(&o.connection).cloned());
    let (namespace, name) = match entry {
        Some(e) if e.kind == "postgresql" => {
            let url = bare(&e.url);
            let rest = url
                .strip_prefix("postgresql://")
                .or_else(|| url.strip_prefix("postgres://"))
                .unwrap_or(&url);
            let (server, db) = rest.split_once('/').unwrap_or((rest, ""));
            let schema = schema.unwrap_or_else(|| "public".to_owned());
            (
                format!("postgres://{server}"),
                format!("{db}.{schema}.{}", o.name),
            )
        }
        Some(e) if e.kind == weft_core::connect::SQLITE => (
            format!("sqlite:{}", e.url),
            match schema.filter(|s| s != "main") {
                Some(s) => format!("{s}.{}", o.name),
                None => o.name.clone(),
            },
        ),
        Some(e) => (
            bare(&e.url),
            match schema {
                Some(s) => format!("{s}.{}", o.name),
                None => o.name.clone(),
            },
        ),
        None => (format!("weft-connection-{}", o.connection), o.name.clone()),
    };
    json!({"namespace": namespace, "name": name})
}

/// The event of `kind` (`START`, `COMPLETE`, `FAIL`, `ABORT`) of action run `run` of the
/// batch `batch`; `error` for a failure.
pub fn event(
    kind: &str,
    run: &Run,
    batch: &str,
    plan: &ActionPlan,
    keys: &KeyFile,
    namespace: &str,
    error: Option<&str>,
) -> Value {
    let instance = run.instance.to_string();
    let parent_id = uuid_of(&[&run.repository, &instance, &run.started]);
    let run_id = uuid_of(&[
        &run.repository,
        &instance,
        &run.started,
        &run.action.to_string(),
        &run.attempt.to_string(),
    ]);
    let job = plan
        .path
        .clone()
        .unwrap_or_else(|| format!("{} ({})", plan.name, plan.id));
    let facet = |schema: &str| {
        json!({
            "_producer": PRODUCER,
            "_schemaURL": format!("https://openlineage.io/spec/facets/{schema}"),
        })
    };
    let mut parent = facet("1-0-1/ParentRunFacet.json#/$defs/ParentRunFacet");
    parent["run"] = json!({"runId": parent_id});
    parent["job"] = json!({"namespace": namespace, "name": batch});
    let mut facets = json!({"parent": parent});
    if let Some(message) = error {
        // A failed data test's rows stay here: the lineage server gets the count only.
        let message = message
            .split_once("; each: ")
            .or_else(|| message.split_once("; the first "))
            .map_or(message, |(head, _)| head);
        let message: String = message.chars().take(MAX_ERROR).collect();
        let mut e = facet("1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet");
        e["message"] = json!(message);
        e["programmingLanguage"] = json!("SQL");
        facets["errorMessage"] = e;
    }
    json!({
        "eventType": kind,
        "eventTime": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "producer": PRODUCER,
        "schemaURL": SCHEMA_URL,
        "run": {"runId": run_id, "facets": facets},
        "job": {"namespace": namespace, "name": job},
        "inputs": plan.sources.iter().map(|o| dataset(o, plan, keys)).collect::<Vec<_>>(),
        "outputs": plan.targets.iter().map(|o| dataset(o, plan, keys)).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_uuids_and_urls_lose_their_credentials() {
        let id = uuid_of(&["r", "1", "2"]);
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "5");
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"), "{id}");
        assert_eq!(id, uuid_of(&["r", "1", "2"]));
        assert_ne!(id, uuid_of(&["r", "1", "3"]));
        assert_eq!(
            bare("postgresql://u:secret@db.example:5432/dw?sslmode=require"),
            "postgresql://db.example:5432/dw"
        );
        assert_eq!(bare("jdbc:h2:mem:test;MODE=PostgreSQL"), "jdbc:h2:mem:test");
        assert_eq!(
            bare("postgresql://u:p#ss@h:5432/db"),
            "postgresql://h:5432/db"
        );
        assert_eq!(
            bare("jdbc:oracle:thin:scott/tiger@db.example:1521/orcl"),
            "jdbc:oracle:thin:db.example:1521/orcl"
        );
    }
}
