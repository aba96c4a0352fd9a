//! `ListRunDays {from, to, batchId?}`: each scheduled batch's runs by schedule date (the web
//! page's grid of runs by day).

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{object, optional_whole, text, wrong};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::{BatchDays, ListRunDays, RunDays};
use weft_repo::InstanceStore as _;
use weft_repo::store::SheetStore as _;

impl Handler for ListRunDays {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the ListRunDays payload {from, to, batchId?}",
            problems,
        )?;
        let mut ok = true;
        let mut day = |key: &'static str, problems: &mut Problems| {
            let Some((v, p)) = fields.required(key, problems) else {
                ok = false;
                return None;
            };
            let t = text(v, &p, key, problems);
            match t
                .as_deref()
                .and_then(|t| chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d").ok())
            {
                Some(d) => Some((d, v, p)),
                None => {
                    if t.is_some() {
                        wrong(v, &p, &format!("`{key}` is a day, YYYY-MM-DD"), problems);
                    }
                    ok = false;
                    None
                }
            }
        };
        let from = day("from", problems);
        let to = day("to", problems);
        if let (Some((a, _, _)), Some((b, v, p))) = (&from, &to) {
            let days = (*b - *a).num_days() + 1;
            if !(1..=ListRunDays::MAX_DAYS).contains(&days) {
                wrong(
                    v,
                    p,
                    &format!(
                        "`to` is on or after `from` and at most {} days later",
                        ListRunDays::MAX_DAYS - 1
                    ),
                    problems,
                );
                ok = false;
            }
        }
        let batch_id = optional_whole(
            &mut fields,
            "batchId",
            i64::MIN..=i64::MAX,
            &mut ok,
            problems,
        );
        fields.finish(problems);
        let (from, to) = (from?.0, to?.0);
        ok.then(|| ListRunDays {
            from: from.to_string(),
            to: to.to_string(),
            batch_id,
        })
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<RunDays, ApiError> {
        let repo = Arc::clone(state.executor.repo());
        // Read as checked: both are days, `to` on or after `from`.
        let until = chrono::NaiveDate::parse_from_str(&self.to, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.succ_opt())
            .map_or_else(|| self.to.clone(), |d| d.to_string());
        let (batches, days) = tokio::task::spawn_blocking(move || {
            let batches = repo.batches()?;
            let days = repo.run_days(&self.from, &until, self.batch_id)?;
            Ok::<_, weft_repo::Error>((batches, days))
        })
        .await??;
        let mut out: Vec<BatchDays> = batches
            .into_iter()
            .filter(|b| self.batch_id.is_none_or(|id| id == b.batch_id))
            .map(|b| BatchDays {
                batch_id: b.batch_id,
                name: b.name,
                enabled: b.enabled,
                paused: b.paused,
                days: Vec::new(),
            })
            .collect();
        let more = out.len() > ListRunDays::MAX_BATCHES;
        out.truncate(ListRunDays::MAX_BATCHES);
        let place: std::collections::HashMap<i64, usize> = out
            .iter()
            .enumerate()
            .map(|(i, b)| (b.batch_id, i))
            .collect();
        for (batch, day) in days {
            if let Some(&i) = place.get(&batch) {
                out[i].days.push(day);
            }
        }
        Ok(RunDays { batches: out, more })
    }
}
