//! `AdvanceClock {seconds}` or `{to}` (development servers started with `--stepped-clock`):
//! moves the service clock forward and runs one scheduler tick there.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{ENVELOPE, object, text, whole};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_core::sched::{clock, scheduler};
use weft_dsr::value::Spanned;
use weft_dsr::{Path, Problems};
use weft_protocol::commands::{AdvanceClock, ClockAdvanced, ScheduledRun};

impl Handler for AdvanceClock {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        read_payload(payload.value, payload.path, problems)
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<ClockAdvanced, ApiError> {
        advance(state, self).await
    }
}

fn read_payload(payload: &Spanned, path: Path, problems: &mut Problems) -> Option<AdvanceClock> {
    let mut fields = object(
        payload,
        path.clone(),
        "the AdvanceClock payload {seconds} or {to}",
        problems,
    )?;
    let seconds = fields.optional("seconds");
    let to = fields.optional("to");
    fields.finish(problems);
    match (seconds, to) {
        (Some((v, p)), None) => Some(AdvanceClock::By {
            seconds: whole(v, &p, "seconds", 0..=AdvanceClock::MAX_SECONDS, problems)?,
        }),
        (None, Some((v, p))) => {
            let to = text(v, &p, "to", problems)?;
            // The zone matters only for the wall-clock form, not for its syntax.
            if let Err(e) = weft_core::sched::clock::parse_timestamp(&to, chrono_tz::UTC) {
                problems.error(ENVELOPE, format!("`to`: {e}"), v.span, &p);
                return None;
            }
            Some(AdvanceClock::To { to })
        }
        _ => {
            problems.error(
                ENVELOPE,
                "the AdvanceClock payload is {seconds} or {to}: seconds a whole number, to a timestamp (RFC 3339, or YYYY-MM-DD HH:MM[:SS] in the service time zone)",
                payload.span,
                &path,
            );
            None
        }
    }
}

/// `AdvanceClock {seconds}` or `{to}` (development servers started with `--stepped-clock`):
/// moves the service clock forward, runs one scheduler tick at the new instant, and answers
/// with what the tick started, so that a test knows every start without waiting for one.
async fn advance(state: &Arc<AppState>, request: AdvanceClock) -> Result<ClockAdvanced, ApiError> {
    let time = clock::current();
    if !time.clock.is_stepped() {
        return Err(ApiError::ClockNotStepped);
    }
    let to = match request {
        AdvanceClock::By { seconds } => time.clock.now() + chrono::Duration::seconds(seconds),
        AdvanceClock::To { to } => {
            clock::parse_timestamp(&to, time.zone).map_err(ApiError::ClockTime)?
        }
    };
    let now = time.clock.advance(to).map_err(ApiError::ClockBackwards)?;
    let exec = Arc::clone(&state.executor);
    let zone = time.zone;
    let tick = tokio::task::spawn_blocking(move || scheduler::tick(&exec, zone, now)).await??;
    Ok(ClockAdvanced {
        now: now.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        local: clock::wall(now.with_timezone(&zone).naive_local()),
        started: tick
            .started
            .iter()
            .map(|&(batch_id, batch_instance_id)| ScheduledRun {
                batch_id,
                batch_instance_id,
            })
            .collect(),
        passed: tick.passed,
        waiting: tick.waiting,
    })
}
