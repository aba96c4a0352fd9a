//! `DeployProject {documents, files?, deployOptions?, prune?}`: validates several `.dsr`
//! documents as one (with the files their actions read) and writes them in one
//! transaction, pruning below the folders named what they no longer hold; every problem is
//! answered in its file.

use super::deploy_repository::{answered, catalog, deploy_audit, deployed_audit};
use super::handler::{Call, Handler, Payload};
use crate::api::error::ApiError;
use crate::api::protocol::read::{deploy_options, object, text, wrong};
use crate::api::state::AppState;
use std::collections::HashSet;
use std::sync::Arc;
use weft_dsr::value::{Spanned, Value};
use weft_dsr::{Path, Problems};
use weft_engine::deploy;
use weft_protocol::commands::{DeployProject, ProjectDocument};

/// The most documents one project deploy takes (the body's size limit bounds their text).
const MAX_DOCUMENTS: usize = 20_000;

impl Handler for DeployProject {
    fn read(payload: Payload<'_>, problems: &mut Problems) -> Option<Self> {
        let mut fields = object(
            payload.value,
            payload.path,
            "the DeployProject payload {documents, files?, deployOptions?, prune?}",
            problems,
        )?;
        let documents = fields
            .required("documents", problems)
            .and_then(|(v, p)| named_texts(v, &p, "documents", problems));
        let files = match fields.optional("files") {
            None => Some(Vec::new()),
            Some((v, _)) if matches!(v.value, Value::Null) => Some(Vec::new()),
            Some((v, p)) => named_texts(v, &p, "files", problems),
        };
        let deploy_options = fields
            .optional("deployOptions")
            .map(|(v, p)| deploy_options(v, &p, problems))
            .unwrap_or_default();
        let prune = match fields.optional("prune") {
            None => Some(Vec::new()),
            Some((v, p)) => match &v.value {
                Value::Null => Some(Vec::new()),
                Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| text(item, &p.index(i), "prune", problems))
                    .collect::<Vec<_>>()
                    .into_iter()
                    .collect::<Option<Vec<String>>>(),
                _ => {
                    wrong(v, &p, "`prune` must be an array of folder paths", problems);
                    None
                }
            },
        };
        fields.finish(problems);
        Some(DeployProject {
            documents: documents?,
            files: files?,
            deploy_options,
            prune: prune?,
        })
    }

    async fn handle(self, state: &Arc<AppState>, call: &Call) -> Result<deploy::Report, ApiError> {
        let state = Arc::clone(state);
        let (by, folders) = (call.caller.name.clone(), call.caller.folders.clone());
        let report = tokio::task::spawn_blocking(move || {
            let files: Vec<(String, String)> = self
                .documents
                .into_iter()
                .map(|d| (d.name, d.content))
                .collect();
            let data: Vec<(String, String)> = self
                .files
                .into_iter()
                .map(|d| (d.name, d.content))
                .collect();
            deploy::deploy_project(
                &state.repo,
                &catalog(&state),
                deploy::Project {
                    documents: &files,
                    files: &data,
                    prune: &self.prune,
                },
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
        let bytes = self
            .documents
            .iter()
            .chain(&self.files)
            .map(|d| d.content.len())
            .sum();
        deploy_audit(
            &self.deploy_options,
            self.documents.len() + self.files.len(),
            bytes,
            &self.prune,
        )
    }

    fn audit_answer(report: &deploy::Report) -> Option<String> {
        deployed_audit(report)
    }
}

/// `documents` or `files`: an array of `{name, content}`, each name once.
fn named_texts(
    v: &Spanned,
    p: &Path,
    what: &str,
    problems: &mut Problems,
) -> Option<Vec<ProjectDocument>> {
    let Value::Array(items) = &v.value else {
        wrong(
            v,
            p,
            &format!("`{what}` must be an array of {{name, content}}"),
            problems,
        );
        return None;
    };
    if items.len() > MAX_DOCUMENTS {
        wrong(
            v,
            p,
            &format!("`{what}` holds more than {MAX_DOCUMENTS} entries"),
            problems,
        );
        return None;
    }
    let mut names = HashSet::new();
    let mut out = Vec::with_capacity(items.len());
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let at = p.index(i);
        let Some(mut doc) = object(item, at.clone(), "a document {name, content}", problems) else {
            ok = false;
            continue;
        };
        let name = doc
            .required("name", problems)
            .and_then(|(v, p)| text(v, &p, "name", problems));
        let content = doc
            .required("content", problems)
            .and_then(|(v, p)| text(v, &p, "content", problems));
        doc.finish(problems);
        match (name, content) {
            (Some(name), Some(content)) => {
                if !names.insert(name.clone()) {
                    wrong(
                        item,
                        &at.key("name"),
                        &format!(
                            "two of `{what}` are named `{name}`; each needs a name of its own"
                        ),
                        problems,
                    );
                    ok = false;
                }
                out.push(ProjectDocument { name, content });
            }
            _ => ok = false,
        }
    }
    ok.then_some(out)
}
