//! `ListPlugins`: what the running server loaded (libraries, modules, refusals).

use super::Request;
use crate::plugins::PluginList;
use crate::rights::Right;
use serde::Serialize;

impl Request for ListPlugins {
    const NAME: &'static str = "ListPlugins";
    const RIGHT: Right = Right::Read;
    type Answer = PluginList;
}

/// `ListPlugins {}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ListPlugins {}
