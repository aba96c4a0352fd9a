//! `DeployRepository {content, deployOptions?}`: validates the `.dsr` content and writes it
//! in one transaction (SPEC 4.2).

use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{ENVELOPE, deploy_options, object};
use crate::api::state::AppState;
use std::sync::Arc;
use weft_dsr::Problems;
use weft_dsr::value::Value;
use weft_engine::deploy;
use weft_protocol::commands::DeployRepository;

impl Handler for DeployRepository {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the DeployRepository payload",
            problems,
        )?;
        let content = fields
            .required("content", problems)
            .and_then(|(v, p)| match &v.value {
                Value::String(s) => Some(s.clone()),
                other => {
                    problems.error(
                        ENVELOPE,
                        format!(
                            "`content` must be a string holding the .dsr text, found {}",
                            other.kind()
                        ),
                        v.span,
                        &p,
                    );
                    None
                }
            });
        let deploy_options = fields
            .optional("deployOptions")
            .map(|(v, p)| deploy_options(v, &p, problems))
            .unwrap_or_default();
        fields.finish(problems);
        Some(DeployRepository {
            content: content?,
            deploy_options,
        })
    }

    async fn handle(self, state: &Arc<AppState>, call: &Call) -> Result<deploy::Report, ApiError> {
        let state = Arc::clone(state);
        let (by, folders) = (call.caller.name.clone(), call.caller.folders.clone());
        let report = tokio::task::spawn_blocking(move || {
            deploy::deploy(
                &state.repo,
                &catalog(&state),
                &self.content,
                self.deploy_options,
                state.settings.environment,
                deploy::Deployer {
                    name: &by,
                    folders: &folders,
                },
            )
        })
        .await?;
        answered(report, call.request_id)
    }

    fn audit(&self) -> String {
        deploy_audit(&self.deploy_options, 1, self.content.len(), &[])
    }

    fn audit_answer(report: &deploy::Report) -> Option<String> {
        deployed_audit(report)
    }
}

/// What the audit says of a deploy: its options and its size, never its text (which may be
/// long): the deploy history keeps what it changed.
pub(super) fn deploy_audit(
    options: &weft_protocol::deploys::Options,
    documents: usize,
    bytes: usize,
    prune: &[String],
) -> String {
    let into = options
        .into_folder
        .map_or_else(String::new, |f| format!(", intoFolder {f}"));
    let mut line = format!(
        "{documents} document(s), {bytes} bytes, validate {}, dryRun {}{into}",
        options.validate, options.dry_run
    );
    if !prune.is_empty() {
        line.push_str(&format!(", prune {}", prune.join(", ")));
    }
    super::handler::cut_line(line)
}

/// What the audit adds of a deploy done: its number and what it changed; nothing for a
/// dry run or a deploy that changed nothing.
pub(super) fn deployed_audit(report: &deploy::Report) -> Option<String> {
    let number = report.deploy_id.filter(|_| !report.dry_run)?;
    Some(format!(
        "deploy {number}, {} created, {} updated, {} deleted",
        report.created.len(),
        report.updated.len(),
        report.deleted.len(),
    ))
}

/// What a deploy asks of the loaded plugins and the key file.
pub(super) fn catalog(state: &AppState) -> weft_engine::validate::PluginCatalog<'_> {
    weft_engine::validate::PluginCatalog {
        registry: &state.registry,
        keys: state.keys.as_ref().and_then(|k| k.current().ok()),
    }
}

/// A deploy's result counted in the metrics and logged: what a deploy command answers.
pub(super) fn answered(
    report: Result<deploy::Report, deploy::Error>,
    request_id: u64,
) -> Result<deploy::Report, ApiError> {
    weft_core::metrics::deployed(match &report {
        Ok(r) if r.dry_run => weft_core::metrics::Deployed::DryRun,
        Ok(r) if r.created.is_empty() && r.updated.is_empty() && r.deleted.is_empty() => {
            weft_core::metrics::Deployed::Unchanged
        }
        Ok(_) => weft_core::metrics::Deployed::Applied,
        Err(deploy::Error::Invalid(_) | deploy::Error::IntoFolderRefused(_)) => {
            weft_core::metrics::Deployed::Rejected
        }
        Err(_) => weft_core::metrics::Deployed::Failed,
    });
    let report = report?;
    tracing::info!(
        message = "Deployed.",
        request_id,
        created = report.created.len(),
        updated = report.updated.len(),
        unchanged = report.unchanged.len(),
        deleted = report.deleted.len(),
        dry_run = report.dry_run
    );
    Ok(report)
}
