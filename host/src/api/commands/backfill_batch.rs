//! `BackfillBatch {batch, from, to, parallel?, user?}`: records a backfill of a scheduled
//! batch; its instances start in the background, in order, `parallel` at a time.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{batch_name, object, text, whole, wrong};
use crate::api::state::AppState;
use chrono::NaiveDate;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_engine::exec::backfill::{Backfill, BatchRef, MAX_PARALLEL};
use weft_protocol::commands::{BackfillBatch, Backfilling, ObjectName};

/// The longest range one backfill covers, in days.
const MAX_DAYS: i64 = 3660;

impl Handler for BackfillBatch {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the BackfillBatch payload {batch, from, to, parallel?, user?}",
            problems,
        )?;
        let batch = batch_name(&mut fields, problems);
        let mut day = |key: &'static str| {
            fields.required(key, problems).and_then(|(v, p)| {
                let t = text(v, &p, key, problems)?;
                match NaiveDate::parse_from_str(&t, "%Y-%m-%d") {
                    Ok(d) => Some((d, v.clone(), p)),
                    Err(_) => {
                        wrong(v, &p, &format!("`{key}` is a day, YYYY-MM-DD"), problems);
                        None
                    }
                }
            })
        };
        let from = day("from");
        let to = day("to");
        let parallel = match fields.optional("parallel") {
            None => Some(1),
            Some((v, p)) => whole(v, &p, "parallel", 1..=MAX_PARALLEL, problems),
        };
        let user = match fields.optional("user") {
            None => Some("backfill".to_owned()),
            Some((v, p)) => text(v, &p, "user", problems),
        };
        fields.finish(problems);
        let (from, to) = (from?, to?);
        if to.0 < from.0 || (to.0 - from.0).num_days() >= MAX_DAYS {
            wrong(
                &to.1,
                &to.2,
                &format!(
                    "`to` is a day from `from` ({}) to {MAX_DAYS} days after it",
                    from.0
                ),
                problems,
            );
            return None;
        }
        Some(BackfillBatch {
            batch: batch?,
            from: from.0.to_string(),
            to: to.0.to_string(),
            parallel: parallel?,
            user: user?,
        })
    }

    async fn handle(self, state: &Arc<AppState>, call: &Call) -> Result<Backfilling, ApiError> {
        let exec = Arc::clone(&state.executor);
        let (from, to) = match (
            NaiveDate::parse_from_str(&self.from, "%Y-%m-%d"),
            NaiveDate::parse_from_str(&self.to, "%Y-%m-%d"),
        ) {
            (Ok(f), Ok(t)) => (f, t),
            _ => return Err(ApiError::internal("a backfill's days did not read again")),
        };
        let asked = Backfill {
            batch: match self.batch {
                ObjectName::Id(id) => BatchRef::Id(id),
                ObjectName::Name(n) => BatchRef::Name(n),
            },
            from,
            to,
            parallel: self.parallel,
            user: call.caller.run_user(&self.user),
        };
        // A batch lies in no folder: only a user without folder limits backfills one.
        call.caller.may_in(
            weft_protocol::Right::Operate,
            [(
                format!(
                    "batch {}",
                    match &asked.batch {
                        BatchRef::Id(id) => id.to_string(),
                        BatchRef::Name(n) => n.clone(),
                    }
                ),
                None,
            )],
        )?;
        let parallel = asked.parallel;
        let done = tokio::task::spawn_blocking(move || exec.backfill(&asked)).await??;
        Ok(Backfilling {
            backfill_id: done.backfill_id,
            batch_id: done.batch_id,
            batch_name: done.batch_name,
            parallel,
            planned_starts: done.planned,
        })
    }
}
