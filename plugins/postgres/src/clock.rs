//! The clock functions `current_local_timestamp()` and `is_dst_change_tonight([ts])` on
//! PostgreSQL connections, as weft's SQLite connections have them, so that the procedure of
//! SPEC 4.7 works on a PostgreSQL connection to the repository.
//!
//! They are PL/pgSQL functions in the schema `weft_clock` (`docs/sql/postgresql-clock.sql`),
//! created on a database the first time a statement there names one of them (on a connection
//! of its own, under an advisory lock), and asked once a process whether they are current.
//! The service clock and zone reach them per session: before each statement that names one,
//! the connection sets `weft.zone`, `weft.now`, `weft.now_at` and `weft.stepped` and puts
//! `weft_clock` at the end of its `search_path`; the host passes the clock at each open
//! ([`KeyEntry::SERVICE_NOW`] and the options beside it).

use chrono::{DateTime, Utc};
use std::collections::HashSet;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Instant;
use weft_sdk::KeyEntry;

/// The script that creates the functions.
pub const SQL: &str = include_str!("../../../docs/sql/postgresql-clock.sql");

/// The version of the functions in [`SQL`] (`weft_clock.clock_functions_version()`).
pub const VERSION: i32 = 1;

/// The function names a statement must mention for the session to be prepared.
const NAMES: [&str; 2] = ["is_dst_change_tonight", "current_local_timestamp"];

/// The service clock as the host passed it when the connection was opened.
#[derive(Debug, Clone)]
pub struct ServiceClock {
    zone: String,
    now: DateTime<Utc>,
    opened: Instant,
    stepped: bool,
}

impl ServiceClock {
    /// The clock of `entry`'s host options, if the host passed one.
    pub fn of(entry: &KeyEntry) -> Option<Self> {
        let zone = entry.option(KeyEntry::SERVICE_ZONE)?.to_owned();
        let now = DateTime::parse_from_rfc3339(entry.option(KeyEntry::SERVICE_NOW)?)
            .ok()?
            .with_timezone(&Utc);
        Some(ServiceClock {
            zone,
            now,
            opened: Instant::now(),
            stepped: entry.option(KeyEntry::SERVICE_CLOCK) == Some("stepped"),
        })
    }

    /// The service zone.
    pub fn zone(&self) -> &str {
        &self.zone
    }

    /// Whether the clock stands still.
    pub fn stepped(&self) -> bool {
        self.stepped
    }

    /// The service clock's now: the instant passed at open, moved on by the time since
    /// unless the clock stands still.
    pub fn now(&self) -> DateTime<Utc> {
        if self.stepped {
            return self.now;
        }
        self.now + chrono::Duration::from_std(self.opened.elapsed()).unwrap_or_default()
    }

    /// [`Self::now`] as the text `weft.now` holds.
    pub fn now_text(&self) -> String {
        self.now()
            .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
    }
}

/// Whether `sql` names a clock function (case does not matter; a mention in a comment or a
/// literal counts too, which costs only the session's preparation).
pub fn names_clock_function(sql: &str) -> bool {
    let bytes = sql.as_bytes();
    NAMES.iter().any(|name| {
        bytes
            .windows(name.len())
            .any(|w| w.eq_ignore_ascii_case(name.as_bytes()))
    })
}

/// The statement that hands a session the service clock: `$1` zone, `$2` now, `$3` `on` or
/// `off` for a clock that stands still; `weft_clock` goes to the end of the search path (once).
pub const SESSION: &str = "SELECT set_config('weft.zone', $1, false),
       set_config('weft.now', $2, false),
       set_config('weft.now_at', clock_timestamp()::text, false),
       set_config('weft.stepped', $3, false),
       set_config('search_path',
           CASE WHEN current_setting('search_path') ~ '(^|,)\\s*\"?weft_clock\"?\\s*(,|$)'
                THEN current_setting('search_path')
                WHEN btrim(current_setting('search_path')) = '' THEN 'weft_clock'
                ELSE current_setting('search_path') || ', weft_clock' END,
           false)";

/// What a database holds: the version of its clock functions, from `prosrc` of
/// `weft_clock.clock_functions_version()`.
pub const INSTALLED_VERSION: &str = "SELECT p.prosrc FROM pg_catalog.pg_proc p
    JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'weft_clock' AND p.proname = 'clock_functions_version'";

/// The version a `prosrc` of `weft_clock.clock_functions_version()` returns (` SELECT 1 `).
pub fn version_of(prosrc: &str) -> Option<i32> {
    prosrc
        .trim()
        .strip_prefix("SELECT")
        .and_then(|v| v.trim().parse().ok())
}

fn current() -> std::sync::MutexGuard<'static, HashSet<String>> {
    static CURRENT: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    CURRENT
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// Whether the functions were found current on the database of `slot` in this process.
pub fn known_current(slot: &str) -> bool {
    current().contains(slot)
}

/// Remembers that the database of `slot` holds current functions.
pub fn mark_current(slot: &str) {
    current().insert(slot.to_owned());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_naming_a_clock_function_are_found_in_any_case() {
        assert!(names_clock_function("SELECT is_dst_change_tonight()"));
        assert!(names_clock_function(
            "select x from t where d <= CURRENT_LOCAL_TIMESTAMP() + interval '14 hours'"
        ));
        assert!(!names_clock_function("SELECT current_timestamp"));
        assert!(!names_clock_function(""));
    }

    #[test]
    fn the_script_says_the_version_the_bridge_expects() {
        assert!(SQL.contains(&format!("IMMUTABLE AS $$ SELECT {VERSION} $$")));
        assert_eq!(version_of(&format!(" SELECT {VERSION} ")), Some(VERSION));
        assert_eq!(version_of("SELECT x"), None);
    }

    #[test]
    fn a_running_clock_moves_on_and_a_stepped_one_stands_still() {
        let entry = |clock: &str| {
            KeyEntry::new(
                "7",
                "postgresql",
                "",
                "",
                "",
                vec![
                    (KeyEntry::SERVICE_ZONE.into(), "Europe/Berlin".into()),
                    (KeyEntry::SERVICE_NOW.into(), "2026-10-24T17:00:00Z".into()),
                    (KeyEntry::SERVICE_CLOCK.into(), clock.into()),
                ],
            )
        };
        let stepped = ServiceClock::of(&entry("stepped")).expect("clock");
        assert_eq!(stepped.now_text(), "2026-10-24T17:00:00.000000Z");
        assert_eq!(stepped.zone(), "Europe/Berlin");
        let running = ServiceClock::of(&entry("running")).expect("clock");
        assert!(!running.stepped());
        assert!(running.now() >= stepped.now());
        let none = KeyEntry::new("7", "postgresql", "", "", "", vec![]);
        assert!(ServiceClock::of(&none).is_none());
    }
}
