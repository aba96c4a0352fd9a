//! The deploy's checks without a server: documents deployed into a fresh repository in a
//! temporary directory, with the plugins of this machine and HOME's key file, through the
//! deploy's own path (so that nothing is checked differently). What `weft check` runs once
//! and `weft lsp` at every change; the language server deploys for real and keeps the
//! repository, whose data graph says which action writes a table.

use crate::client::format_detail;
use std::path::Path;
use std::sync::Arc;
use weft_core::plugins::Registry;
use weft_engine::deploy;
use weft_protocol::Detail;

/// The plugins and key file the checks use, loaded once.
pub struct Checker {
    registry: Registry,
    keys: Option<Arc<weft_core::keys::KeyFile>>,
}

/// What is checked: a project's documents and the files their actions read, or one
/// document.
pub enum Target<'a> {
    /// Documents by name, and the files their actions read (`file`).
    Project {
        /// The `.dsr` documents, each its name in the project and its text.
        documents: &'a [(String, String)],
        /// The files the actions read, each its name and text.
        files: &'a [(String, String)],
    },
    /// One document's text.
    Document(&'a str),
}

/// The outcome of a check: its problems, and the repository it deployed into.
pub struct Checked {
    /// Every problem found, errors and warnings, each at its file, line and column.
    pub details: Vec<Detail>,
    /// The repository: the project deployed into it unless this was a dry run or found
    /// errors.
    pub repo: weft_repo::Repository,
    /// Whether the project was deployed (a check that was not a dry run and found no error).
    pub deployed: bool,
    /// The temporary directory of the repository, removed when this is dropped.
    _dir: tempfile::TempDir,
}

impl Checker {
    /// The plugins found for `home` (next to the binary, INSTALL/plugins, HOME/plugins and
    /// its process modules) and HOME's key file when it has one (the dialect of a JDBC
    /// connection comes from its URL there).
    pub fn new(home: &Path) -> Self {
        let dirs = weft_core::plugins::search_path(home);
        let mut registry = Registry::load(&dirs);
        registry.load_process_modules(&weft_core::plugins::process_dirs(home));
        let keys = weft_core::keys::KeyFile::load(&weft_core::keys::KeyFile::path_in(home))
            .ok()
            .map(Arc::new);
        Checker { registry, keys }
    }

    /// The loaded plugins.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Deploys each of `with` (name and text: what the server holds already) into a fresh
    /// repository, then checks `target` there, as a dry run or (`dry_run` false) for real.
    ///
    /// # Errors
    ///
    /// A document of `with` that does not deploy (its problems, named), or a repository that
    /// cannot be made or fails.
    pub fn check(
        &self,
        with: &[(String, String)],
        target: Target<'_>,
        dry_run: bool,
    ) -> Result<Checked, String> {
        let catalog = weft_engine::validate::PluginCatalog {
            registry: &self.registry,
            keys: self.keys.clone(),
        };
        let dir = tempfile::tempdir()
            .map_err(|e| format!("no temporary directory for the empty repository: {e}"))?;
        let repo = weft_repo::Repository::open(&dir.path().join("repository.db"))
            .map_err(|e| format!("the empty repository cannot be made: {e}"))?;
        let env = weft_core::settings::Environment::Development;
        for (name, text) in with {
            deploy::deploy(
                &repo,
                &catalog,
                text,
                deploy::Options::default(),
                env,
                deploy::Deployer::anyone("weft check"),
            )
            .map_err(|e| match e {
                deploy::Error::Invalid(details) => details
                    .iter()
                    .map(|d| format_detail(name, d, ""))
                    .collect::<Vec<_>>()
                    .join("\n"),
                other => format!("{name}: {other}"),
            })?;
        }
        let opts = deploy::Options {
            dry_run,
            ..deploy::Options::default()
        };
        let result = match target {
            Target::Project { documents, files } => deploy::deploy_project(
                &repo,
                &catalog,
                deploy::Project {
                    documents,
                    files,
                    prune: &[],
                },
                opts,
                env,
                deploy::Deployer::anyone("weft check"),
            ),
            Target::Document(text) => deploy::deploy(
                &repo,
                &catalog,
                text,
                opts,
                env,
                deploy::Deployer::anyone("weft check"),
            ),
        };
        let (details, deployed) = match result {
            Ok(report) => (report.warnings, !dry_run),
            Err(deploy::Error::Invalid(details)) => (details, false),
            Err(e) => return Err(e.to_string()),
        };
        Ok(Checked {
            details,
            repo,
            deployed,
            _dir: dir,
        })
    }
}
