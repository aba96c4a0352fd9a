//! `GetSheet {sheetId}`: the sheet as drawn, and its last runs.

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{object, whole};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_protocol::commands::{GetSheet, SheetLink, SheetView};
use weft_repo::store::SheetStore as _;

impl Handler for GetSheet {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the GetSheet payload {sheetId}",
            problems,
        )?;
        let id = fields
            .required("sheetId", problems)
            .and_then(|(v, p)| whole(v, &p, "sheetId", i64::MIN..=i64::MAX, problems));
        fields.finish(problems);
        Some(GetSheet { sheet_id: id? })
    }

    async fn handle(self, state: &Arc<AppState>, _call: &Call) -> Result<SheetView, ApiError> {
        let id = self.sheet_id;
        let repo = Arc::clone(state.executor.repo());
        let (sheet, runs, fed_by, feeds) = tokio::task::spawn_blocking(move || {
            let sheet = repo.sheet_detail(id)?;
            let (runs, fed_by, feeds) = match sheet {
                Some(_) => (
                    repo.sheet_runs(id, SheetView::RUNS)?,
                    repo.sheet_links(id, false, 2000)?,
                    repo.sheet_links(id, true, 2000)?,
                ),
                None => Default::default(),
            };
            Ok::<_, weft_repo::Error>((sheet, runs, fed_by, feeds))
        })
        .await??;
        Ok(SheetView {
            sheet: sheet.ok_or(ApiError::NoSheet(id))?,
            runs,
            fed_by: links(fed_by),
            feeds: links(feeds),
        })
    }
}

/// The lines of `flow::sheet_links` as one link a sheet with its tables (at most
/// [`SheetView::LINKS`] sheets, each table once).
fn links(lines: Vec<(i64, String, String, String)>) -> Vec<SheetLink> {
    let mut out: Vec<SheetLink> = Vec::new();
    for (sheet_id, name, folder, table) in lines {
        let full = out.len() >= SheetView::LINKS;
        match out.last_mut() {
            Some(l) if l.sheet_id == sheet_id => {
                if !l.tables.iter().any(|t| t.eq_ignore_ascii_case(&table)) {
                    l.tables.push(table);
                }
            }
            _ if full => break,
            _ => out.push(SheetLink {
                sheet_id,
                name,
                folder,
                tables: vec![table],
            }),
        }
    }
    out
}
