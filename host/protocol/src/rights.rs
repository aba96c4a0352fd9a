//! What a caller must be allowed to do to send each command: the one source of truth of
//! issue 28's roles. Every command names its right in its `impl Request` (a command without
//! one does not compile), and [`RIGHTS`](crate::RIGHTS) lists them all, from which the
//! docs' table is checked.
//!
//! The roles are ordered, each with the rights of those before it: `viewer` (read),
//! `operator` (+ operate), `deployer` (+ deploy), `admin` (+ admin) ([`Role`]). The one
//! bearer token of the key file (and loopback without a token) holds every right; a named
//! user's token holds its role's.

use serde::{Deserialize, Serialize};

/// A right a command needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Right {
    /// Read runs, sheets, schedules, deploys, lineage, plugins, hosts, metrics.
    Read,
    /// Start, halt, restart and backfill runs.
    Operate,
    /// Deploy, delete and export the repository's objects.
    Deploy,
    /// Users, settings and the service clock.
    Admin,
}

impl Right {
    /// The right's name, as answered.
    pub fn word(self) -> &'static str {
        match self {
            Right::Read => "read",
            Right::Operate => "operate",
            Right::Deploy => "deploy",
            Right::Admin => "admin",
        }
    }

    /// The least role that holds it.
    pub fn role(self) -> &'static str {
        match self {
            Right::Read => "viewer",
            Right::Operate => "operator",
            Right::Deploy => "deployer",
            Right::Admin => "admin",
        }
    }
}

/// Whether folder `path` is `folder` or below it (`/etl/daily` is within `/etl`, `/etl2` is
/// not): how a user's folder limits hold.
pub fn within_folder(path: &str, folder: &str) -> bool {
    let folder = folder.trim_end_matches('/');
    folder.is_empty()
        || path == folder
        || path
            .strip_prefix(folder)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// A user's role: the rights it holds, each role those of the one before and one more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads runs, sheets, schedules, deploys, lineage, plugins, hosts, metrics.
    Viewer,
    /// + starts, halts, restarts and backfills runs.
    Operator,
    /// + deploys, deletes and exports.
    Deployer,
    /// + users and settings.
    Admin,
}

impl Role {
    /// Every role, least first.
    pub const ALL: [Role; 4] = [Role::Viewer, Role::Operator, Role::Deployer, Role::Admin];

    /// The role's name, as stored and answered.
    pub fn word(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Deployer => "deployer",
            Role::Admin => "admin",
        }
    }

    /// The role named `word`, if any.
    pub fn from_word(word: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.word() == word)
    }

    /// The most a role holds: each right up to it.
    pub fn top(self) -> Right {
        match self {
            Role::Viewer => Right::Read,
            Role::Operator => Right::Operate,
            Role::Deployer => Right::Deploy,
            Role::Admin => Right::Admin,
        }
    }

    /// Whether the role holds `right`.
    pub fn holds(self, right: Right) -> bool {
        right <= self.top()
    }

    /// The rights it holds, least first.
    pub fn rights(self) -> Vec<Right> {
        [Right::Read, Right::Operate, Right::Deploy, Right::Admin]
            .into_iter()
            .filter(|r| self.holds(*r))
            .collect()
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

#[cfg(test)]
mod tests {
    use super::{Right, Role};

    #[test]
    fn each_role_holds_the_rights_of_those_before_it_and_one_more() {
        let held: Vec<Vec<&str>> = Role::ALL
            .iter()
            .map(|r| r.rights().iter().map(|x| x.word()).collect())
            .collect();
        assert_eq!(
            held,
            [
                vec!["read"],
                vec!["read", "operate"],
                vec!["read", "operate", "deploy"],
                vec!["read", "operate", "deploy", "admin"],
            ]
        );
        for right in [Right::Read, Right::Operate, Right::Deploy, Right::Admin] {
            assert_eq!(Role::from_word(right.role()).map(|r| r.top()), Some(right));
        }
        assert_eq!(Role::from_word("root"), None);
    }

    #[test]
    fn a_folder_holds_itself_and_what_is_below_it_only() {
        use super::within_folder;
        assert!(within_folder("/etl", "/etl"));
        assert!(within_folder("/etl/daily", "/etl"));
        assert!(within_folder("/etl/daily", "/etl/"));
        assert!(within_folder("/anything", "/"));
        assert!(!within_folder("/etl2", "/etl"));
        assert!(!within_folder("/et", "/etl"));
        assert!(!within_folder("/mart/etl", "/etl"));
    }
}
