//! `ListAudit {user?, command?, outcome?, since?, until?, beforeId?, limit?}`: the audit,
//! newest first.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{object, optional_whole, text, utc_time, wrong};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::{AuditList, ListAudit};

/// The most entries one answer holds.
const MAX_LIMIT: i64 = 1000;

impl Handler for ListAudit {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the ListAudit payload {user?, command?, outcome?, since?, until?, beforeId?, limit?}",
            problems,
        )?;
        let mut ok = true;
        let mut optional_text = |key: &'static str,
                                 fields: &mut weft_dsr::fields::Fields<'_>,
                                 problems: &mut Problems| {
            fields.optional(key).and_then(|(v, p)| {
                let t = text(v, &p, key, problems);
                ok &= t.is_some();
                t
            })
        };
        let user = optional_text("user", &mut fields, problems);
        let command = optional_text("command", &mut fields, problems);
        let outcome = optional_text("outcome", &mut fields, problems);
        let mut time = |key: &'static str| {
            let (v, p) = fields.optional(key)?;
            let t = text(v, &p, key, problems);
            match t.as_deref().and_then(utc_time) {
                Some(s) => Some(s),
                None => {
                    if t.is_some() {
                        wrong(
                            v,
                            &p,
                            &format!("`{key}` is a UTC time, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"),
                            problems,
                        );
                    }
                    ok = false;
                    None
                }
            }
        };
        let since = time("since");
        let until = time("until");
        let before_id = optional_whole(&mut fields, "beforeId", 1..=i64::MAX, &mut ok, problems);
        let limit = optional_whole(&mut fields, "limit", 1..=MAX_LIMIT, &mut ok, problems);
        if let Some(o) = &outcome
            && !matches!(o.as_str(), "done" | "failed" | "refused")
        {
            ok = false;
            problems.error(
                crate::api::protocol::read::ENVELOPE,
                "`outcome` is done, failed or refused",
                payload.value.span,
                &weft_dsr::Path::root().key("payload").key("outcome"),
            );
        }
        fields.finish(problems);
        ok.then_some(ListAudit {
            user,
            command,
            outcome,
            since,
            until,
            before_id,
            limit,
        })
    }

    fn audited() -> bool {
        false
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<AuditList, ApiError> {
        let repo = Arc::clone(&state.repo);
        let filter = weft_repo::audit::Filter {
            user: self.user,
            command: self.command,
            outcome: self.outcome,
            since: self.since,
            until: self.until,
            before_id: self.before_id,
            limit: self.limit.unwrap_or(100),
        };
        let rows = tokio::task::spawn_blocking(move || repo.audit_list(&filter)).await??;
        Ok(AuditList { entries: rows })
    }
}
