//! What the unit tests of the executor and the scheduler share: a real repository in a
//! temporary folder, a key file whose connection 1 is the SQLite file `data.db` beside it,
//! the real plugins, an executor, and a document deployed into the repository. Test code
//! only, above every floor (it deploys, which the executor's floor lies below).

use crate::exec::batch::Executor;
use std::sync::Arc;
use weft_core::keys::{Entry, KeyFile, KeyStore};
use weft_repo::Repository;

/// A temporary home with an executor over it.
pub struct Home {
    /// The folder: `repository.db`, `keyfile`, `data.db`.
    pub dir: tempfile::TempDir,
    /// The executor.
    pub exec: Arc<Executor>,
}

impl Home {
    /// `data.db`, connection 1's file.
    pub fn data(&self) -> std::path::PathBuf {
        self.dir.path().join("data.db")
    }
}

/// A home whose connection 1 has the key file `options`, with `doc` deployed and an
/// executor running at most `limit` actions at once.
pub fn home(limit: usize, options: Vec<(String, String)>, doc: &str) -> Home {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = Arc::new(Repository::open(&dir.path().join("repository.db")).expect("open"));
    let mut kf = KeyFile::init(
        dir.path(),
        &dir.path().join("repository.db"),
        "http://127.0.0.1:1/weft/service",
    )
    .expect("keys");
    kf.set(Entry {
        key: "1".into(),
        kind: "sqlite".into(),
        url: dir.path().join("data.db").to_string_lossy().into_owned(),
        user: String::new(),
        password: String::new(),
        options,
    });
    kf.save().expect("save");
    let keys = Arc::new(KeyStore::new(KeyFile::path_in(dir.path()), kf));
    let registry = Arc::new(weft_core::plugins::load_test_registry());
    let exec = Executor::new(Arc::clone(&repo), Arc::clone(&registry), Some(keys), limit);
    deploy(&exec, doc);
    Home { dir, exec }
}

/// Deploys `doc` into the repository of `exec` (checked by its plugins).
pub fn deploy(exec: &Executor, doc: &str) {
    let catalog = crate::validate::PluginCatalog {
        registry: exec.registry(),
        keys: None,
    };
    crate::deploy::deploy(
        exec.repo(),
        &catalog,
        doc,
        crate::deploy::Options::default(),
        weft_core::settings::Environment::Development,
        crate::deploy::Deployer::anyone("tests"),
    )
    .expect("deploy");
}
