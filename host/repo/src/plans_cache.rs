//! The sheets' stored plans as runs read them, kept parsed by sheet and version: a run of a
//! sheet of 10,000 actions reads 3 MB of plans, and parsing them cost more than the rest of
//! its start. A version is the number of the deploy that stored the plans (`sheet_plans`),
//! and the plans of a version never change, so what is kept is never stale: a run reads the
//! sheet's current version and parses its text only when that version is not kept, and an
//! action's claim finds its plan at the version its instance runs. A deploy puts in the
//! large plans it committed, so a sheet's first run after its deploy parses nothing either.
//! At most [`MOST_BYTES`] of text are kept, the least recently used version going first.

use crate::error::Result;
use crate::model::SheetPlans;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The most text of plans kept (the parsed plans take some three times as much).
pub const MOST_BYTES: usize = 16 << 20;

/// Parsed plans by sheet and version.
#[derive(Debug, Default)]
pub struct PlansCache {
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    versions: HashMap<(i64, i64), Entry>,
    bytes: usize,
    clock: u64,
}

#[derive(Debug)]
struct Entry {
    bytes: usize,
    plans: Arc<SheetPlans>,
    used: u64,
}

impl PlansCache {
    /// The newest version of sheet `id`'s plans kept, if any is.
    pub fn newest(&self, id: i64) -> Option<i64> {
        self.lock()
            .versions
            .keys()
            .filter(|(sheet, _)| *sheet == id)
            .map(|(_, version)| *version)
            .max()
    }

    /// The plans kept for sheet `id` at `version`, if they still are.
    pub fn at(&self, id: i64, version: i64) -> Option<Arc<SheetPlans>> {
        let mut kept = self.lock();
        kept.clock += 1;
        let now = kept.clock;
        let e = kept.versions.get_mut(&(id, version))?;
        e.used = now;
        Some(Arc::clone(&e.plans))
    }

    /// The plans of sheet `id` at `version`, stored as `text`: those kept, or `parse(text)`,
    /// then kept.
    ///
    /// # Errors
    ///
    /// What `parse` returns (nothing is kept then).
    pub fn plans(
        &self,
        id: i64,
        version: i64,
        text: &str,
        parse: impl FnOnce(&str) -> Result<SheetPlans>,
    ) -> Result<Arc<SheetPlans>> {
        if let Some(plans) = self.at(id, version) {
            return Ok(plans);
        }
        // Parsed without the lock: other runs go on meanwhile.
        let plans = Arc::new(parse(text)?);
        let bytes = text.len();
        if bytes <= MOST_BYTES {
            let mut kept = self.lock();
            let used = kept.clock;
            let new = Entry {
                bytes,
                plans: Arc::clone(&plans),
                used,
            };
            if let Some(old) = kept.versions.insert((id, version), new) {
                kept.bytes -= old.bytes;
            }
            kept.bytes += bytes;
            while kept.bytes > MOST_BYTES {
                let Some(oldest) = kept
                    .versions
                    .iter()
                    .filter(|(key, _)| **key != (id, version))
                    .min_by_key(|(_, e)| e.used)
                    .map(|(key, _)| *key)
                else {
                    break;
                };
                if let Some(gone) = kept.versions.remove(&oldest) {
                    kept.bytes -= gone.bytes;
                }
            }
        }
        Ok(plans)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many versions and bytes of text are kept.
    #[cfg(test)]
    pub(crate) fn size(&self) -> (usize, usize) {
        let kept = self.lock();
        (kept.versions.len(), kept.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn parsed(text: &str) -> Result<SheetPlans> {
        crate::instances::parse_plans(1, text)
    }

    const ONE: &str = r#"[{"id": 7, "name": "a", "module": "Sql", "text": "SELECT 1", "attributes": [], "sources": [], "targets": []}]"#;
    const OTHER: &str = r#"[{"id": 8, "name": "b", "module": "Sql", "text": "SELECT 2", "attributes": [], "sources": [], "targets": []}]"#;

    #[test]
    fn a_version_is_parsed_once_and_each_version_kept_apart() {
        let cache = PlansCache::default();
        let parses = Cell::new(0);
        let parse = |t: &str| {
            parses.set(parses.get() + 1);
            parsed(t)
        };
        let a = cache.plans(1, 4, ONE, parse).expect("first");
        let b = cache.plans(1, 4, ONE, parse).expect("again");
        assert!(Arc::ptr_eq(&a, &b), "kept");
        assert_eq!(parses.get(), 1);
        // Redeployed: a new version, parsed, and the old one still kept for the runs of it.
        let c = cache.plans(1, 5, OTHER, parse).expect("changed");
        assert_eq!(parses.get(), 2);
        assert_eq!(c.plans()[0].id, 8);
        assert_eq!(c.get(8).map(|p| p.name.as_str()), Some("b"));
        assert!(c.get(7).is_none());
        assert_eq!(cache.size(), (2, ONE.len() + OTHER.len()));
        assert!(cache.at(1, 5).is_some_and(|p| Arc::ptr_eq(&p, &c)));
        assert!(cache.at(1, 4).is_some_and(|p| Arc::ptr_eq(&p, &a)));
        assert!(cache.at(1, 3).is_none());
        assert_eq!(cache.newest(1), Some(5));
        assert_eq!(cache.newest(2), None);
        assert!(cache.at(2, 5).is_none());
    }

    #[test]
    fn an_unreadable_text_is_an_error_and_nothing_is_kept() {
        let cache = PlansCache::default();
        assert!(cache.plans(1, 1, "[{", parsed).is_err());
        assert_eq!(cache.size(), (0, 0));
    }

    #[test]
    fn past_the_most_bytes_the_least_recently_used_version_goes() {
        let cache = PlansCache::default();
        // Three versions of a little over a third of the bound each: the third pushes the
        // least recently used of the first two out.
        let big = |id: i64| {
            let filler = "x".repeat(MOST_BYTES / 3);
            format!(
                r#"[{{"id": {id}, "name": "{filler}", "module": "Sql", "text": null, "attributes": [], "sources": [], "targets": []}}]"#
            )
        };
        cache.plans(1, 1, &big(1), parsed).expect("1");
        cache.plans(2, 1, &big(2), parsed).expect("2");
        assert!(cache.at(1, 1).is_some(), "1 again: now the more recent");
        cache
            .plans(1, 2, &big(3), parsed)
            .expect("sheet 1, version 2");
        let kept = cache.lock();
        let mut keys: Vec<(i64, i64)> = kept.versions.keys().copied().collect();
        keys.sort_unstable();
        assert_eq!(keys, [(1, 1), (1, 2)]);
        assert!(kept.bytes <= MOST_BYTES);
    }
}
