//! `DeployRepository`: deploy `.dsr` content (SPEC 4.2); answered with the deploy report.

use super::Request;
use crate::deploys;
use crate::rights::Right;
use serde::Serialize;

impl Request for DeployRepository {
    const NAME: &'static str = "DeployRepository";
    const RIGHT: Right = Right::Deploy;
    type Answer = deploys::Report;
}

/// `DeployRepository {content, deployOptions?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeployRepository {
    /// The `.dsr` text.
    pub content: String,
    /// The deploy options.
    #[serde(with = "options_wire")]
    pub deploy_options: deploys::Options,
}

/// `deployOptions` as sent: `{validate, dryRun, intoFolder}`.
pub(super) mod options_wire {
    use crate::deploys::Options;
    use serde::ser::SerializeMap as _;

    pub fn serialize<S: serde::Serializer>(o: &Options, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("validate", &o.validate)?;
        map.serialize_entry("dryRun", &o.dry_run)?;
        map.serialize_entry("intoFolder", &o.into_folder)?;
        map.end()
    }
}
