//! `ListRunGroups {limit?, state?, name?}`: the runs grouped by batch name, the group of the
//! newest run first (the web page's runs list, grouped).

use super::handler::{Call, Handler, Payload};
use super::list_batch_instances::{name_filter, state_filter};
use crate::api::error::ApiError;
use crate::api::protocol::read::{object, optional_whole};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::{ListRunGroups, RunGroups};
use weft_repo::InstanceStore as _;

impl Handler for ListRunGroups {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the ListRunGroups payload {limit?, state?, name?}",
            problems,
        )?;
        let mut ok = true;
        let mut asked = ListRunGroups::default();
        asked.limit =
            optional_whole(&mut fields, "limit", 1..=500, &mut ok, problems).unwrap_or(asked.limit);
        asked.state = state_filter(&mut fields, &mut ok, problems);
        asked.name = name_filter(&mut fields, &mut ok, problems);
        fields.finish(problems);
        ok.then_some(asked)
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<RunGroups, ApiError> {
        let repo = Arc::clone(state.executor.repo());
        let mut filter = weft_repo::model::InstanceFilter::newest(self.limit);
        filter.state = self.state;
        filter.name = self.name;
        let groups = tokio::task::spawn_blocking(move || repo.run_groups(&filter)).await??;
        Ok(RunGroups { groups })
    }
}
