//! The sheets' stored plans as runs read them, kept parsed between runs: a run of a sheet
//! of 10,000 actions reads 3 MB of plans, and parsing them cost more than the rest of its
//! start. A deploy puts in the plans it committed, so a sheet's first run after its deploy
//! parses nothing either. Each entry keeps the plans' version (`plans_versions`, the
//! number of the deploy that wrote them: a deploy on any host gives a new one): a run reads
//! the stored version, and the stored text only when the versions differ; plans stored
//! without a version (by a weft before schema version 13) are compared by their text. At
//! most [`MOST_BYTES`] of text are kept, the least recently used sheet going first.

use crate::error::Result;
use crate::model::SheetPlan;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The most text of plans kept (the parsed plans take some three times as much).
pub const MOST_BYTES: usize = 16 << 20;

/// Parsed plans by sheet, with the text they were parsed from.
#[derive(Debug, Default)]
pub struct PlansCache {
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    sheets: HashMap<i64, Entry>,
    bytes: usize,
    clock: u64,
}

#[derive(Debug)]
struct Entry {
    version: Option<i64>,
    text: String,
    plans: Arc<Vec<SheetPlan>>,
    used: u64,
}

impl PlansCache {
    /// The version of the plans kept for sheet `id`, if any are kept with one.
    pub fn version(&self, id: i64) -> Option<i64> {
        self.lock().sheets.get(&id).and_then(|e| e.version)
    }

    /// The plans kept for sheet `id` at `version`, if they still are.
    pub fn at(&self, id: i64, version: i64) -> Option<Arc<Vec<SheetPlan>>> {
        let mut kept = self.lock();
        kept.clock += 1;
        let now = kept.clock;
        let e = kept
            .sheets
            .get_mut(&id)
            .filter(|e| e.version == Some(version))?;
        e.used = now;
        Some(Arc::clone(&e.plans))
    }

    /// The plans of sheet `id` stored as `text` at `version`: those parsed before from the
    /// same text, or `parse(text)`, then kept.
    ///
    /// # Errors
    ///
    /// What `parse` returns (nothing is kept then).
    pub fn plans(
        &self,
        id: i64,
        version: Option<i64>,
        text: String,
        parse: impl FnOnce(&str) -> Result<Vec<SheetPlan>>,
    ) -> Result<Arc<Vec<SheetPlan>>> {
        {
            let mut kept = self.lock();
            kept.clock += 1;
            let now = kept.clock;
            if let Some(e) = kept.sheets.get_mut(&id)
                && e.text == text
            {
                e.used = now;
                e.version = version;
                return Ok(Arc::clone(&e.plans));
            }
        }
        // Parsed without the lock: other runs go on meanwhile.
        let plans = Arc::new(parse(&text)?);
        if text.len() <= MOST_BYTES {
            let mut kept = self.lock();
            let used = kept.clock;
            let bytes = text.len();
            if let Some(old) = kept.sheets.insert(
                id,
                Entry {
                    version,
                    text,
                    plans: Arc::clone(&plans),
                    used,
                },
            ) {
                kept.bytes -= old.text.len();
            }
            kept.bytes += bytes;
            while kept.bytes > MOST_BYTES {
                let Some(oldest) = kept
                    .sheets
                    .iter()
                    .filter(|(sheet, _)| **sheet != id)
                    .min_by_key(|(_, e)| e.used)
                    .map(|(sheet, _)| *sheet)
                else {
                    break;
                };
                if let Some(gone) = kept.sheets.remove(&oldest) {
                    kept.bytes -= gone.text.len();
                }
            }
        }
        Ok(plans)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many sheets and bytes of text are kept.
    #[cfg(test)]
    pub(crate) fn size(&self) -> (usize, usize) {
        let kept = self.lock();
        (kept.sheets.len(), kept.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn parsed(text: &str) -> Result<Vec<SheetPlan>> {
        crate::instances::parse_plans(1, text)
    }

    const ONE: &str = r#"[{"id": 7, "name": "a", "module": "Sql", "text": "SELECT 1", "attributes": [], "sources": [], "targets": []}]"#;
    const OTHER: &str = r#"[{"id": 8, "name": "b", "module": "Sql", "text": "SELECT 2", "attributes": [], "sources": [], "targets": []}]"#;

    #[test]
    fn the_same_text_is_parsed_once_and_another_text_again() {
        let cache = PlansCache::default();
        let parses = Cell::new(0);
        let parse = |t: &str| {
            parses.set(parses.get() + 1);
            parsed(t)
        };
        let a = cache.plans(1, None, ONE.to_owned(), parse).expect("first");
        let b = cache.plans(1, None, ONE.to_owned(), parse).expect("again");
        assert!(Arc::ptr_eq(&a, &b), "kept");
        assert_eq!(parses.get(), 1);
        assert_eq!(cache.version(1), None);
        // Redeployed: the text differs, the plans are read again.
        let c = cache
            .plans(1, Some(5), OTHER.to_owned(), parse)
            .expect("changed");
        assert_eq!(parses.get(), 2);
        assert_eq!(c[0].plan.id, 8);
        assert_eq!(cache.size(), (1, OTHER.len()));
        // Found by their version, and only by it.
        assert_eq!(cache.version(1), Some(5));
        assert!(cache.at(1, 5).is_some_and(|p| Arc::ptr_eq(&p, &c)));
        assert!(cache.at(1, 4).is_none());
        assert!(cache.at(2, 5).is_none());
    }

    #[test]
    fn an_unreadable_text_is_an_error_and_nothing_is_kept() {
        let cache = PlansCache::default();
        assert!(cache.plans(1, Some(1), "[{".to_owned(), parsed).is_err());
        assert_eq!(cache.size(), (0, 0));
    }

    #[test]
    fn past_the_most_bytes_the_least_recently_used_sheet_goes() {
        let cache = PlansCache::default();
        // Three sheets of a little over a third of the bound each: the third pushes the
        // least recently used of the first two out.
        let big = |id: i64| {
            let filler = "x".repeat(MOST_BYTES / 3);
            format!(
                r#"[{{"id": {id}, "name": "{filler}", "module": "Sql", "text": null, "attributes": [], "sources": [], "targets": []}}]"#
            )
        };
        cache.plans(1, None, big(1), parsed).expect("1");
        cache.plans(2, None, big(2), parsed).expect("2");
        cache
            .plans(1, None, big(1), parsed)
            .expect("1 again: now the more recent");
        cache.plans(3, None, big(3), parsed).expect("3");
        let kept = cache.lock();
        let mut ids: Vec<i64> = kept.sheets.keys().copied().collect();
        ids.sort_unstable();
        assert_eq!(ids, [1, 3]);
        assert!(kept.bytes <= MOST_BYTES);
    }
}
