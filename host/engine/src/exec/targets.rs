//! An action's transactions on the connections it writes, as one: begun on every target,
//! each marked with the run's commit marker where it may be, then committed one after the
//! other when the action succeeded, or rolled back. A begin that fails rolls back those
//! begun before it; a commit that fails rolls back those not yet committed. The fault
//! points of the end-to-end tests sit at the two moments that matter: before the first
//! commit, and after each.

use crate::fault;
use weft_core::connect::marker;
use weft_sdk::{PluginError, RunContext};

/// The open transactions of an action's targets. It borrows nothing, so that the module can
/// have the run's context between [`Targets::begin`] and [`Targets::finish`]; each step is
/// given the context.
#[must_use = "the transactions are open: finish them"]
pub struct Targets<'a> {
    ids: &'a [i64],
}

impl<'a> Targets<'a> {
    /// Begins a transaction on each of `ids`.
    ///
    /// # Errors
    ///
    /// The first connection that cannot begin one, with what it said; those begun before
    /// it are rolled back.
    pub fn begin(ctx: &mut RunContext, ids: &'a [i64]) -> Result<Self, (i64, PluginError)> {
        for (n, id) in ids.iter().enumerate() {
            if let Err(e) = ctx.connection(*id).and_then(|c| c.begin()) {
                Targets { ids: &ids[..n] }.roll_back(ctx);
                return Err((*id, e));
            }
        }
        Ok(Targets { ids })
    }

    /// Writes the commit marker of `run` into the transaction of each of `marked` (a subset
    /// of the targets), each in its connection's default schema.
    ///
    /// # Errors
    ///
    /// The first marker that cannot be written; the transactions stay open for
    /// [`Targets::finish`] to roll back.
    pub fn mark(
        &self,
        ctx: &mut RunContext,
        marked: &[i64],
        run: &marker::Run,
        schema: &dyn Fn(i64) -> Option<String>,
    ) -> Result<(), PluginError> {
        for id in marked.iter().filter(|id| self.ids.contains(id)) {
            ctx.connection(*id)
                .map_err(|e| e.to_string())
                .and_then(|c| {
                    let schema = schema(*id);
                    let place = format!("{id}\u{1f}{}", schema.as_deref().unwrap_or_default());
                    marker::write(c, run, schema.as_deref(), marker::prune_due(&place))
                })
                .map_err(|e| {
                    PluginError::new(format!(
                        "connection {id}: the commit marker could not be written: {e}"
                    ))
                })?;
        }
        Ok(())
    }

    /// Commits every target in order when `commit` is true, else rolls every one back.
    ///
    /// # Errors
    ///
    /// The connection whose commit failed, with what it said; it and those after it are
    /// rolled back (those before it have committed).
    pub fn finish(self, ctx: &mut RunContext, commit: bool) -> Result<(), (i64, PluginError)> {
        if !commit {
            self.roll_back(ctx);
            return Ok(());
        }
        for (n, id) in self.ids.iter().enumerate() {
            // A connection that is gone has nothing open to commit.
            let Ok(c) = ctx.connection(*id) else { continue };
            if let Err(e) = c.commit() {
                Targets {
                    ids: &self.ids[n..],
                }
                .roll_back(ctx);
                return Err((*id, e));
            }
            fault::hit(fault::AFTER_TARGET_COMMIT);
        }
        Ok(())
    }

    /// Rolls back every target; what a connection says to that is of no further use.
    fn roll_back(self, ctx: &mut RunContext) {
        for id in self.ids {
            if let Ok(c) = ctx.connection(*id) {
                let _ = c.rollback();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_core::connect::sqlite::testing::rows;
    use weft_sdk::{Value, testing};

    const PLAIN: &str = "CREATE TABLE IF NOT EXISTS t (v INTEGER)";
    /// A table whose rows commit only with their parent: a commit with an orphan fails.
    const DEFERRED: &str = "PRAGMA foreign_keys = ON; \
        CREATE TABLE IF NOT EXISTS p (id INTEGER PRIMARY KEY); \
        CREATE TABLE IF NOT EXISTS c (p INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)";

    fn insert(ctx: &mut RunContext, id: i64, sql: &str) {
        ctx.connection(id)
            .and_then(|c| c.execute(sql, &[] as &[Value]))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    #[test]
    fn a_failed_commit_rolls_back_the_targets_after_it_and_keeps_those_before() {
        let dir = tempfile::tempdir().expect("dir");
        let (a, b, c) = (
            dir.path().join("a.db"),
            dir.path().join("b.db"),
            dir.path().join("c.db"),
        );
        let (mut ctx, _log) = testing::Run::new("")
            .connection(1, testing::sqlite_file(&a, PLAIN).expect("a"))
            .connection(2, testing::sqlite_file(&b, DEFERRED).expect("b"))
            .connection(3, testing::sqlite_file(&c, PLAIN).expect("c"))
            .build();
        let ids = [1, 2, 3];
        let targets = Targets::begin(&mut ctx, &ids).expect("begin");
        insert(&mut ctx, 1, "INSERT INTO t VALUES (1)");
        insert(&mut ctx, 2, "INSERT INTO c VALUES (5)");
        insert(&mut ctx, 3, "INSERT INTO t VALUES (3)");
        let (failed, e) = targets.finish(&mut ctx, true).expect_err("an orphan");
        assert_eq!(failed, 2, "{e}");
        assert!(e.to_string().contains("FOREIGN KEY"), "{e}");
        // Each connection is out of its transaction: what it writes now commits at once.
        insert(&mut ctx, 2, "INSERT INTO p VALUES (9)");
        insert(&mut ctx, 3, "INSERT INTO t VALUES (33)");
        drop(ctx);
        assert_eq!(rows(&a, "SELECT v FROM t"), ["1"]);
        assert_eq!(rows(&b, "SELECT COUNT(*) FROM c"), ["0"]);
        assert_eq!(rows(&b, "SELECT id FROM p"), ["9"]);
        assert_eq!(rows(&c, "SELECT v FROM t"), ["33"]);
    }

    #[test]
    fn a_failed_begin_rolls_back_those_begun_and_a_failed_action_rolls_back_all() {
        let dir = tempfile::tempdir().expect("dir");
        let a = dir.path().join("a.db");
        let (mut ctx, _log) = testing::Run::new("")
            .connection(1, testing::sqlite_file(&a, PLAIN).expect("a"))
            .build();
        // Connection 7 is not among the run's: its begin fails after 1's succeeded.
        let ids = [1, 7];
        let Err((failed, _)) = Targets::begin(&mut ctx, &ids) else {
            panic!("connection 7 began")
        };
        assert_eq!(failed, 7);
        insert(&mut ctx, 1, "INSERT INTO t VALUES (1)");
        // Rolled back: nothing of the action stays.
        let ids = [1];
        let targets = Targets::begin(&mut ctx, &ids).expect("begin");
        insert(&mut ctx, 1, "INSERT INTO t VALUES (2)");
        targets.finish(&mut ctx, false).expect("a roll back");
        drop(ctx);
        assert_eq!(rows(&a, "SELECT v FROM t"), ["1"]);
    }
}
