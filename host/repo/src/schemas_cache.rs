//! The connections' default schemas, kept between the actions that ask for them (each action
//! of a run does, for its plan) on a repository that one host alone changes: there, only a
//! deploy of this server writes connections, and each committed deploy makes what is kept
//! stale. Several hosts' repository (PostgreSQL) is read at every ask, as another host's
//! deploy says nothing here.
//!
//! A reader that read the stored schemas before a deploy's commit and keeps them after it
//! keeps them under the generation it saw before the deploy's [`SchemasCache::changed`], so
//! the next ask reads again.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The default schema of each connection that names one.
pub type Schemas = BTreeMap<i64, String>;

/// The schemas kept, and the generation of deploys they were read in.
#[derive(Debug, Default)]
pub struct SchemasCache {
    generation: AtomicU64,
    kept: Mutex<Option<(u64, Arc<Schemas>)>>,
}

impl SchemasCache {
    /// The kept schemas while no deploy committed since they were read, else `read()`'s
    /// (kept for the next ask).
    ///
    /// # Errors
    ///
    /// What `read` returns.
    pub fn get<E>(&self, read: impl FnOnce() -> Result<Schemas, E>) -> Result<Arc<Schemas>, E> {
        let seen = self.generation.load(Ordering::Acquire);
        if let Some((g, s)) = &*self.kept.lock().unwrap_or_else(PoisonError::into_inner)
            && *g == seen
        {
            return Ok(Arc::clone(s));
        }
        let schemas = Arc::new(read()?);
        *self.kept.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((seen, Arc::clone(&schemas)));
        Ok(schemas)
    }

    /// A deploy committed: what is kept is read again at the next ask.
    pub fn changed(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(id: i64, schema: &str) -> Schemas {
        BTreeMap::from([(id, schema.to_owned())])
    }

    #[test]
    fn reads_once_until_a_deploy_commits() {
        let cache = SchemasCache::default();
        let mut reads = 0;
        let mut read = |s: &str| {
            reads += 1;
            Ok::<_, ()>(one(1, s))
        };
        assert_eq!(*cache.get(|| read("a")).expect("schemas"), one(1, "a"));
        assert_eq!(*cache.get(|| read("b")).expect("schemas"), one(1, "a"));
        cache.changed();
        assert_eq!(*cache.get(|| read("b")).expect("schemas"), one(1, "b"));
        assert_eq!(reads, 2);
    }

    #[test]
    fn a_read_overtaken_by_a_deploy_is_not_trusted_later() {
        let cache = SchemasCache::default();
        // The read sees the stored state from before the deploy; the deploy commits (and
        // says so) while it is under way.
        let kept = cache.get(|| {
            cache.changed();
            Ok::<_, ()>(one(1, "old"))
        });
        assert_eq!(*kept.expect("schemas"), one(1, "old"));
        assert_eq!(
            *cache.get(|| Ok::<_, ()>(one(1, "new"))).expect("schemas"),
            one(1, "new")
        );
    }

    #[test]
    fn a_failed_read_keeps_nothing() {
        let cache = SchemasCache::default();
        assert_eq!(
            cache
                .get(|| Err::<Schemas, _>("down"))
                .expect_err("a failed read"),
            "down"
        );
        assert_eq!(
            *cache.get(|| Ok::<_, ()>(one(2, "x"))).expect("schemas"),
            one(2, "x")
        );
    }
}
