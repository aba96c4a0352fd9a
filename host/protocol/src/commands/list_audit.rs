//! `ListAudit`: the audit, newest first, filtered.

use super::Request;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for ListAudit {
    const NAME: &'static str = "ListAudit";
    const RIGHT: Right = Right::Admin;
    type Answer = AuditList;
}

/// `ListAudit {user?, command?, outcome?, since?, until?, beforeId?, limit?}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListAudit {
    /// Only this user's (`keyfile`, `loopback`, `none` for refusals before a user was known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Only this command's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Only `done`, `failed` or `refused`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// At or after (UTC, `YYYY-MM-DD` or ISO 8601).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// Older than this entry (paging back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before_id: Option<i64>,
    /// The most (1 to 1000, default 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
}

/// `ListAudit`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditList {
    /// The entries, newest first.
    pub entries: Vec<AuditEntry>,
}

/// One entry of the audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// Its number.
    pub id: i64,
    /// When (UTC, ISO 8601).
    pub at: String,
    /// The host that answered.
    pub host: String,
    /// Who.
    pub user: String,
    /// How they were known.
    pub via: String,
    /// From where.
    pub client: String,
    /// The command (empty for a refusal before the request was read).
    pub command: String,
    /// `done`, `failed` or `refused`.
    pub outcome: String,
    /// What it touched, or why it failed or was refused.
    pub what: String,
}
