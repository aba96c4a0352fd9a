//! `ListNotifications {limit?, state?, batchInstanceId?, batchName?, before?}`: the
//! notifications the events of runs recorded, newest first.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{ENVELOPE, object, optional_whole, text};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_dsr::value::Value;
use weft_protocol::commands::{ListNotifications, NotificationList, NotificationView};

/// The states a notification can be in.
const STATES: [&str; 3] = ["pending", "sent", "given_up"];

impl Handler for ListNotifications {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the ListNotifications payload {limit?, state?, batchInstanceId?, batchName?, before?}",
            problems,
        )?;
        let mut list = ListNotifications::default();
        let mut ok = true;
        let most = weft_repo::notifications::LIST_MAX;
        list.limit =
            optional_whole(&mut fields, "limit", 1..=most, &mut ok, problems).unwrap_or(list.limit);
        if let Some((v, p)) = fields.optional("state")
            && !matches!(v.value, Value::Null)
        {
            match text(v, &p, "state", problems) {
                Some(s) if STATES.contains(&s.as_str()) => list.state = Some(s),
                Some(s) => {
                    problems.error(
                        ENVELOPE,
                        format!(
                            "`state` must be one of {}, not `{}`",
                            STATES.join(", "),
                            s.chars().take(40).collect::<String>()
                        ),
                        v.span,
                        &p,
                    );
                    ok = false;
                }
                None => ok = false,
            }
        }
        list.batch_instance_id = optional_whole(
            &mut fields,
            "batchInstanceId",
            1..=i64::MAX,
            &mut ok,
            problems,
        );
        if let Some((v, p)) = fields.optional("batchName")
            && !matches!(v.value, Value::Null)
        {
            match text(v, &p, "batchName", problems) {
                Some(n) if n.chars().count() <= 200 => list.batch_name = Some(n),
                Some(_) => {
                    problems.error(
                        ENVELOPE,
                        "`batchName` is at most 200 characters",
                        v.span,
                        &p,
                    );
                    ok = false;
                }
                None => ok = false,
            }
        }
        list.before = optional_whole(&mut fields, "before", 1..=i64::MAX, &mut ok, problems);
        fields.finish(problems);
        ok.then_some(list)
    }

    async fn handle(
        self,
        state: &Arc<AppState>,
        _call: &Call,
    ) -> Result<NotificationList, ApiError> {
        let repo = Arc::clone(state.executor.repo());
        let filter = weft_repo::model::NotificationFilter {
            state: self.state,
            instance: self.batch_instance_id,
            batch: self.batch_name,
            before: self.before,
            limit: self.limit,
        };
        let rows = tokio::task::spawn_blocking(move || repo.list_notifications(&filter)).await??;
        let iso = weft_repo::instances::iso;
        Ok(NotificationList {
            notifications: rows
                .into_iter()
                .map(|n| NotificationView {
                    id: n.id,
                    event: n.event,
                    batch_name: n.batch,
                    batch_instance_id: n.instance,
                    action_id: n.action,
                    channel: n.channel,
                    next_attempt: (n.state == "pending").then(|| iso(&n.next_at)),
                    state: n.state,
                    attempts: n.attempts,
                    created: iso(&n.created_at),
                    sent: n.sent_at.as_deref().map(iso),
                    last_error: n.last_error,
                })
                .collect(),
        })
    }
}
