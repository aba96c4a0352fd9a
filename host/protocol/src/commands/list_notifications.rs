//! `ListNotifications`: the notifications the events of runs recorded, newest first: sent,
//! pending (with their next try) or given up (with why).

use super::Request;
use crate::rights::Right;
use serde::{Deserialize, Serialize};

impl Request for ListNotifications {
    const NAME: &'static str = "ListNotifications";
    const RIGHT: Right = Right::Read;
    type Answer = NotificationList;
}

/// `ListNotifications {limit?, state?, batchInstanceId?, batchName?, before?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListNotifications {
    /// How many, newest first (1 to 500; default 50).
    pub limit: i64,
    /// Only those in this state: `pending`, `sent` or `given_up`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Only those of this instance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_instance_id: Option<i64>,
    /// Only those of this batch (its exact name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_name: Option<String>,
    /// Only those older than this id: the page after one whose last id it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<i64>,
}

impl Default for ListNotifications {
    fn default() -> Self {
        ListNotifications {
            limit: 50,
            state: None,
            batch_instance_id: None,
            batch_name: None,
            before: None,
        }
    }
}

/// `ListNotifications`' answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotificationList {
    /// The notifications, newest first.
    pub notifications: Vec<NotificationView>,
}

/// One notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotificationView {
    /// Its id (a webhook's `Weft-Notification-Id`).
    pub id: i64,
    /// The event: `started`, `finished`, `failed`, `halted`, `interrupted`, `missed`,
    /// `late`, `actionFailed`.
    pub event: String,
    /// The batch.
    pub batch_name: String,
    /// The instance, for the events of one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_instance_id: Option<i64>,
    /// The action, for `actionFailed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action_id: Option<i64>,
    /// The channel's name.
    pub channel: String,
    /// `pending`, `sent` or `given_up`.
    pub state: String,
    /// Sends tried.
    pub attempts: i64,
    /// When its event recorded it, UTC (ISO 8601).
    pub created: String,
    /// A pending one's next try, UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt: Option<String>,
    /// When it was sent, UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent: Option<String>,
    /// Why the last try failed (a given-up one: why it was given up).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}
