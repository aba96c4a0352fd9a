//! `RestartBatchInstance {batchInstanceId, asStarted?}`: runs again what failed, was
//! skipped, halted or interrupted in an instance, with the definitions deployed now unless
//! `asStarted` asks for those it ran.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{flag, object, whole, wrong};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_dsr::value::Value;
use weft_protocol::commands::{RestartBatchInstance, Restarting};
use weft_repo::model::Definitions;

impl Handler for RestartBatchInstance {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the RestartBatchInstance payload {batchInstanceId, asStarted?, actions?}",
            problems,
        )?;
        let id = fields
            .required("batchInstanceId", problems)
            .and_then(|(v, p)| whole(v, &p, "batchInstanceId", i64::MIN..=i64::MAX, problems));
        let as_started = match fields.optional("asStarted") {
            Some((v, p)) => flag(v, &p, "asStarted", problems),
            None => Some(false),
        };
        let actions = match fields.optional("actions") {
            None => Some(Vec::new()),
            Some((v, _)) if matches!(v.value, Value::Null) => Some(Vec::new()),
            Some((v, p)) => match &v.value {
                Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        whole(
                            item,
                            &p.index(i),
                            "an action id",
                            i64::MIN..=i64::MAX,
                            problems,
                        )
                    })
                    .collect::<Vec<Option<i64>>>()
                    .into_iter()
                    .collect::<Option<Vec<i64>>>(),
                _ => {
                    wrong(v, &p, "`actions` must be an array of action ids", problems);
                    None
                }
            },
        };
        fields.finish(problems);
        Some(RestartBatchInstance {
            batch_instance_id: id?,
            as_started: as_started?,
            actions: actions?,
        })
    }

    async fn handle(self, state: &Arc<AppState>, call: &Call) -> Result<Restarting, ApiError> {
        let id = self.batch_instance_id;
        let only = self.actions;
        let definitions = if self.as_started {
            Definitions::AsStarted
        } else {
            Definitions::Current
        };
        let exec = Arc::clone(&state.executor);
        let caller = call.caller.clone();
        let actions_to_run = tokio::task::spawn_blocking(move || {
            caller.may_operate_instance(exec.repo(), id)?;
            exec.restart(id, definitions, &only).map_err(ApiError::from)
        })
        .await??;
        Ok(Restarting {
            batch_instance_id: id,
            actions_to_run,
        })
    }
}
