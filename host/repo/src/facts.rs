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
    /// The path of the folder sheet `id` lies in, if the sheet exists.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn sheet_folder(&self, id: i64) -> super::error::Result<Option<String>>;
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
    /// The sheet each of `nodes`, then each of `edges`, belongs to, in their order (asked
    /// all at once: one round trip to a repository over the network).
    ///
    /// # Errors
    ///
    /// A repository error.
    fn owners(&self, nodes: &[i64], edges: &[i64]) -> super::error::Result<Owners> {
        Ok(Owners {
            nodes: nodes
                .iter()
                .map(|&id| self.node_sheet(id))
                .collect::<super::error::Result<_>>()?,
            edges: edges
                .iter()
                .map(|&id| self.edge_sheet(id))
                .collect::<super::error::Result<_>>()?,
        })
    }
    /// Whether folder `id`, whose path is `path`, holds sheets or folders.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn folder_has_contents(&self, id: i64, path: &str) -> super::error::Result<bool>;
    /// The type of connection number `id` and its default schema as deployed (`None` when
    /// it names none), if it exists.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn connection_facts(&self, id: i64) -> super::error::Result<Option<(String, Option<String>)>>;
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
    /// Whether batch `id` exists.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn batch_exists(&self, id: i64) -> super::error::Result<bool>;
    /// The ids of the sheets named `sheet` in the folder at `folder`, in id order.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn sheets_at(&self, folder: &str, sheet: &str) -> super::error::Result<Vec<i64>>;
    /// The ids of the connections named `name`, in id order.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn connections_named(&self, name: &str) -> super::error::Result<Vec<i64>>;
    /// The ids of the batches named `name`, in id order.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn batches_named(&self, name: &str) -> super::error::Result<Vec<i64>>;
    /// The ids of the actions named `action` in the sheets named `sheet` of the folder at
    /// `folder` (an action's path in `after`), in id order.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn actions_at(&self, folder: &str, sheet: &str, action: &str)
    -> super::error::Result<Vec<i64>>;
    /// The stored definition (JSON) of the template module `name`, if one is deployed.
    ///
    /// # Errors
    ///
    /// A repository error.
    fn stored_template_module(&self, name: &str) -> super::error::Result<Option<String>> {
        let _ = name;
        Ok(None)
    }
    /// The channels of the stored notification setup (`None`: no setup deployed), and the
    /// channels each stored batch's own rules name (batch id, name, channel).
    ///
    /// # Errors
    ///
    /// A repository error.
    fn notification_refs(&self) -> super::error::Result<NotificationRefs> {
        Ok(NotificationRefs::default())
    }
}

/// What a deploy of notification rules is judged against: [`Facts::notification_refs`].
#[derive(Debug, Default)]
pub struct NotificationRefs {
    /// The stored setup's channel names; `None` when none was deployed.
    pub channels: Option<Vec<String>>,
    /// Each stored batch's rules' channels: batch id, batch name, channel.
    pub used: Vec<(i64, String, String)>,
}

/// The sheets that own nodes and edges, as [`Facts::owners`] answers.
#[derive(Debug, Default)]
pub struct Owners {
    /// The sheet of each node asked about, `None` for a node not in the repository.
    pub nodes: Vec<Option<i64>>,
    /// The sheet of each edge asked about.
    pub edges: Vec<Option<i64>>,
}
