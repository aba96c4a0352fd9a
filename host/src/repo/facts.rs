//! The questions validation asks of the repository, as a trait: the repository answers them
//! (`Writer`), and validation's tests answer them with fakes. Defined here, below
//! validation, so that the repository never imports what is built on it.

/// What validation needs to know of the repository (deploy checks ids, folders and
/// connections through it); the SQLite backend's `Writer` answers it inside the deploy's transaction.
pub trait Facts {
    /// The path of folder `id`, if it exists.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn folder_path(&self, id: i64) -> super::error::Result<Option<String>>;
    /// The id of the folder at `path`, if one exists.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn folder_at(&self, path: &str) -> super::error::Result<Option<i64>>;
    /// The sheet that node `id` belongs to, if any.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn node_sheet(&self, id: i64) -> super::error::Result<Option<i64>>;
    /// The sheet that edge `id` belongs to, if any.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn edge_sheet(&self, id: i64) -> super::error::Result<Option<i64>>;
    /// Whether folder `id`, whose path is `path`, holds sheets or folders.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn folder_has_contents(&self, id: i64, path: &str) -> super::error::Result<bool>;
    /// The type of connection number `id`, if it exists.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn connection_type(&self, id: i64) -> super::error::Result<Option<String>>;
    /// Whether sheet `id` exists.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn sheet_exists(&self, id: i64) -> super::error::Result<bool>;
    /// Whether node `id` exists and is an action.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn action_exists(&self, id: i64) -> super::error::Result<bool>;
}
