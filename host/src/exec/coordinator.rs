//! The coordinator of one batch instance as a state machine: what happened goes in (an
//! action ended, a halt was asked, a slot was found), the state changes to record and the
//! actions to start come out. No threads, files or clock: `exec::batch` carries out its
//! decisions, and the tests below drive it directly.
//!
//! Each action keeps the number of actions it still waits for and the list of those that
//! wait for it, so an action's end touches only its dependents: a batch of n actions with e
//! dependencies costs O((n + e) log n) in all, however long its chain.

use crate::repo::model::ActionState;
use std::collections::{BTreeSet, HashMap};

/// A state change the coordinator decided; the executor records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    /// The action.
    pub action: i64,
    /// Its new state.
    pub to: ActionState,
}

/// How an instance ended, from the states of its actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every action finished.
    Finished,
    /// Some action failed or was skipped.
    Failed,
    /// Halted on request.
    Halted,
}

/// The states of one instance's actions and what follows from them.
#[derive(Debug)]
pub struct Coordinator {
    /// Action ids by index, ascending: ready actions start in id order.
    ids: Vec<i64>,
    state: Vec<ActionState>,
    /// For a `D` action: how many of its dependencies have not finished (a dependency that
    /// is not part of the instance never does).
    waits_for: Vec<usize>,
    /// The actions that depend on each action, by index.
    dependents: Vec<Vec<usize>>,
    /// `W` actions, by index (so by id).
    ready: BTreeSet<usize>,
    running: usize,
    /// `D` and `W` actions.
    pending: usize,
    halted: bool,
}

impl Coordinator {
    /// A coordinator for `actions`: each action's id, state and the ids it depends on. An
    /// action given as running is counted as running (the executor turns an `R` left by a
    /// stopped server into `E` before).
    pub fn new(actions: &[(i64, ActionState, Vec<i64>)]) -> Self {
        let mut sorted: Vec<&(i64, ActionState, Vec<i64>)> = actions.iter().collect();
        sorted.sort_by_key(|a| a.0);
        sorted.dedup_by_key(|a| a.0);
        let ids: Vec<i64> = sorted.iter().map(|a| a.0).collect();
        let index: HashMap<i64, usize> = ids.iter().enumerate().map(|(i, &id)| (id, i)).collect();
        let state: Vec<ActionState> = sorted.iter().map(|a| a.1).collect();
        let mut dependents = vec![Vec::new(); ids.len()];
        let mut waits_for = vec![0; ids.len()];
        for (i, (_, _, deps)) in sorted.iter().enumerate() {
            let mut seen = BTreeSet::new();
            for d in deps {
                if !seen.insert(*d) {
                    continue;
                }
                match index.get(d) {
                    Some(&j) => {
                        dependents[j].push(i);
                        if state[j] != ActionState::Finished {
                            waits_for[i] += 1;
                        }
                    }
                    None => waits_for[i] += 1,
                }
            }
        }
        let ready = (0..ids.len())
            .filter(|&i| state[i] == ActionState::Waiting)
            .collect();
        let running = state.iter().filter(|s| **s == ActionState::Running).count();
        let pending = state.iter().filter(|s| s.is_pending()).count();
        Coordinator {
            ids,
            state,
            waits_for,
            dependents,
            ready,
            running,
            pending,
            halted: false,
        }
    }

    /// The changes that follow from the states given to [`Coordinator::new`]: what depends on
    /// a failure is skipped, a `D` action whose dependencies all finished becomes ready.
    pub fn settle(&mut self) -> Vec<Change> {
        let mut out = Vec::new();
        for i in 0..self.ids.len() {
            if self.state[i].is_failure() {
                self.skip_dependents(i, &mut out);
            }
        }
        for i in 0..self.ids.len() {
            if self.state[i] == ActionState::Defined && self.waits_for[i] == 0 {
                self.set(i, ActionState::Waiting, &mut out);
            }
        }
        out
    }

    /// A halt: every action that has not started is halted; none starts any more. Running
    /// actions go on to their end.
    pub fn halt(&mut self) -> Vec<Change> {
        let mut out = Vec::new();
        if self.halted {
            return out;
        }
        self.halted = true;
        for i in 0..self.ids.len() {
            if self.state[i].is_pending() {
                self.set(i, ActionState::Halted, &mut out);
            }
        }
        out
    }

    /// Whether a halt was asked.
    pub fn is_halted(&self) -> bool {
        self.halted
    }

    /// The ready action to start next (the lowest id), if any and not halted.
    pub fn next_ready(&self) -> Option<i64> {
        if self.halted {
            return None;
        }
        self.ready.first().map(|&i| self.ids[i])
    }

    /// Starts a ready action (one [`Coordinator::next_ready`] gave): it is running now.
    pub fn start(&mut self, action: i64) -> Option<Change> {
        let i = self.index_of(action)?;
        if self.state[i] != ActionState::Waiting || self.halted {
            return None;
        }
        let mut out = Vec::new();
        self.set(i, ActionState::Running, &mut out);
        out.pop()
    }

    /// A running action ended, well (`F`) or not (`E`): its own change first, then what
    /// follows (dependents skipped after an error, dependents made ready after their last
    /// dependency finished). An action that was not running changes nothing.
    pub fn ended(&mut self, action: i64, ok: bool) -> Vec<Change> {
        let mut out = Vec::new();
        let Some(i) = self.index_of(action) else {
            return out;
        };
        if self.state[i] != ActionState::Running {
            return out;
        }
        if ok {
            self.set(i, ActionState::Finished, &mut out);
            for k in 0..self.dependents[i].len() {
                let j = self.dependents[i][k];
                if self.state[j] == ActionState::Defined {
                    self.waits_for[j] = self.waits_for[j].saturating_sub(1);
                    if self.waits_for[j] == 0 && !self.halted {
                        self.set(j, ActionState::Waiting, &mut out);
                    }
                }
            }
        } else {
            self.set(i, ActionState::Error, &mut out);
            self.skip_dependents(i, &mut out);
        }
        out
    }

    /// A running action stopped by a halt (rolled back): it is halted, and so is the
    /// instance (what has not started is halted, as by [`Coordinator::halt`]). An action that
    /// was not running changes nothing.
    pub fn stopped(&mut self, action: i64) -> Vec<Change> {
        let mut out = Vec::new();
        let Some(i) = self.index_of(action) else {
            return out;
        };
        if self.state[i] != ActionState::Running {
            return out;
        }
        self.set(i, ActionState::Halted, &mut out);
        out.extend(self.halt());
        out
    }

    /// How many actions run.
    pub fn running(&self) -> usize {
        self.running
    }

    /// Whether the instance is over: nothing runs, and nothing can start any more (halted,
    /// nothing pending, or nothing ready). What still waits then can never start:
    /// [`Coordinator::skip_blocked`] skips it.
    pub fn is_over(&self) -> bool {
        self.running == 0 && (self.halted || self.pending == 0 || self.ready.is_empty())
    }

    /// Skips every action that still waits for a dependency that cannot come (one outside the
    /// instance, or one halted before); for the end of an instance that [`Coordinator::is_over`].
    pub fn skip_blocked(&mut self) -> Vec<Change> {
        let mut out = Vec::new();
        for i in 0..self.ids.len() {
            if self.state[i] == ActionState::Defined {
                self.set(i, ActionState::Skipped, &mut out);
            }
        }
        out
    }

    /// How the instance ended, from its actions' states.
    pub fn outcome(&self) -> Outcome {
        if self.state.contains(&ActionState::Halted) {
            Outcome::Halted
        } else if self.state.iter().any(|s| s.is_failure()) {
            Outcome::Failed
        } else {
            Outcome::Finished
        }
    }

    /// The state of an action, if it belongs to the instance.
    pub fn state_of(&self, action: i64) -> Option<ActionState> {
        self.index_of(action).map(|i| self.state[i])
    }

    fn index_of(&self, action: i64) -> Option<usize> {
        self.ids.binary_search(&action).ok()
    }

    /// Skips, transitively, what depends on action `i` and has not started.
    fn skip_dependents(&mut self, i: usize, out: &mut Vec<Change>) {
        let mut stack = vec![i];
        while let Some(k) = stack.pop() {
            for n in 0..self.dependents[k].len() {
                let j = self.dependents[k][n];
                if self.state[j].is_pending() {
                    self.set(j, ActionState::Skipped, out);
                    stack.push(j);
                }
            }
        }
    }

    fn set(&mut self, i: usize, to: ActionState, out: &mut Vec<Change>) {
        let from = self.state[i];
        if from == to {
            return;
        }
        if from == ActionState::Waiting {
            self.ready.remove(&i);
        }
        if to == ActionState::Waiting {
            self.ready.insert(i);
        }
        if from == ActionState::Running {
            self.running -= 1;
        }
        if to == ActionState::Running {
            self.running += 1;
        }
        match (from.is_pending(), to.is_pending()) {
            (true, false) => self.pending -= 1,
            (false, true) => self.pending += 1,
            _ => {}
        }
        self.state[i] = to;
        out.push(Change {
            action: self.ids[i],
            to,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ActionState::{Defined as D, Error as E, Finished as F, Halted as H, Skipped as S};
    use ActionState::{Running as R, Waiting as W};

    fn changes(c: &[Change]) -> Vec<(i64, ActionState)> {
        c.iter().map(|c| (c.action, c.to)).collect()
    }

    /// Starts every ready action, as an executor with unlimited slots would.
    fn start_all(c: &mut Coordinator) -> Vec<i64> {
        let mut started = Vec::new();
        while let Some(a) = c.next_ready() {
            assert_eq!(c.start(a).map(|x| x.to), Some(R));
            started.push(a);
        }
        started
    }

    #[test]
    fn an_action_stopped_by_the_halt_is_halted_and_so_is_what_waits() {
        let mut c = Coordinator::new(&[(1, W, vec![]), (2, W, vec![]), (3, D, vec![1])]);
        c.settle();
        assert_eq!(c.next_ready(), Some(1));
        c.start(1);
        assert_eq!(changes(&c.stopped(1)), vec![(1, H), (2, H), (3, H)]);
        assert!(c.is_halted());
        assert_eq!(c.running(), 0);
        assert!(c.is_over());
        assert_eq!(c.outcome(), Outcome::Halted);
        assert!(c.stopped(1).is_empty(), "it is not running any more");
    }

    #[test]
    fn a_chain_runs_in_order_one_at_a_time() {
        let mut c = Coordinator::new(&[(3, D, vec![2]), (1, D, vec![]), (2, D, vec![1])]);
        assert_eq!(changes(&c.settle()), vec![(1, W)]);
        assert_eq!(start_all(&mut c), vec![1]);
        assert_eq!(changes(&c.ended(1, true)), vec![(1, F), (2, W)]);
        assert_eq!(start_all(&mut c), vec![2]);
        assert_eq!(changes(&c.ended(2, true)), vec![(2, F), (3, W)]);
        assert_eq!(start_all(&mut c), vec![3]);
        assert!(!c.is_over());
        assert_eq!(changes(&c.ended(3, true)), vec![(3, F)]);
        assert!(c.is_over());
        assert_eq!(c.outcome(), Outcome::Finished);
    }

    #[test]
    fn ready_actions_start_in_id_order_and_a_join_waits_for_all() {
        let mut c = Coordinator::new(&[(30, D, vec![10, 20]), (20, D, vec![]), (10, D, vec![])]);
        c.settle();
        assert_eq!(c.next_ready(), Some(10));
        assert_eq!(start_all(&mut c), vec![10, 20]);
        assert_eq!(changes(&c.ended(20, true)), vec![(20, F)]);
        assert_eq!(c.next_ready(), None, "30 still waits for 10");
        assert_eq!(changes(&c.ended(10, true)), vec![(10, F), (30, W)]);
    }

    #[test]
    fn an_error_skips_what_depends_on_it_transitively_and_nothing_else() {
        let mut c = Coordinator::new(&[
            (1, D, vec![]),
            (2, D, vec![1]),
            (3, D, vec![2]),
            (4, D, vec![]),
            (5, D, vec![3, 4]),
        ]);
        c.settle();
        assert_eq!(start_all(&mut c), vec![1, 4]);
        assert_eq!(
            changes(&c.ended(1, false)),
            vec![(1, E), (2, S), (3, S), (5, S)]
        );
        assert!(!c.is_over(), "4 still runs");
        assert_eq!(changes(&c.ended(4, true)), vec![(4, F)]);
        assert!(c.is_over());
        assert_eq!(c.outcome(), Outcome::Failed);
    }

    #[test]
    fn a_halt_stops_what_has_not_started_and_lets_running_actions_end() {
        let mut c = Coordinator::new(&[(1, D, vec![]), (2, D, vec![]), (3, D, vec![1])]);
        c.settle();
        assert_eq!(c.next_ready(), Some(1));
        c.start(1);
        assert_eq!(changes(&c.halt()), vec![(2, H), (3, H)]);
        assert!(c.halt().is_empty(), "a second halt changes nothing");
        assert_eq!(c.next_ready(), None);
        assert_eq!(c.start(2), None, "nothing starts after a halt");
        assert!(!c.is_over(), "1 still runs");
        assert_eq!(changes(&c.ended(1, true)), vec![(1, F)], "3 stays halted");
        assert!(c.is_over());
        assert_eq!(c.outcome(), Outcome::Halted);
    }

    #[test]
    fn a_restart_keeps_finished_actions_and_skips_after_old_failures() {
        // As a restart leaves an instance: finished actions stay, failed ones run again.
        let mut c = Coordinator::new(&[
            (1, F, vec![]),
            (2, D, vec![1]),
            (3, E, vec![]),
            (4, D, vec![3]),
            (5, D, vec![2, 1]),
        ]);
        assert_eq!(changes(&c.settle()), vec![(4, S), (2, W)]);
        assert_eq!(start_all(&mut c), vec![2]);
        assert_eq!(changes(&c.ended(2, true)), vec![(2, F), (5, W)]);
    }

    #[test]
    fn a_dependency_outside_the_instance_blocks_until_the_end_then_skips() {
        let mut c = Coordinator::new(&[(1, D, vec![]), (2, D, vec![99])]);
        c.settle();
        start_all(&mut c);
        c.ended(1, true);
        assert!(c.is_over(), "nothing runs and nothing can start");
        assert_eq!(changes(&c.skip_blocked()), vec![(2, S)]);
        assert_eq!(c.outcome(), Outcome::Failed);
    }

    #[test]
    fn slots_are_the_callers_an_action_started_once_and_unknown_ends_are_ignored() {
        let mut c = Coordinator::new(&[(1, D, vec![]), (2, D, vec![])]);
        c.settle();
        // One slot: start one, the other stays ready.
        assert_eq!(c.next_ready(), Some(1));
        c.start(1);
        assert_eq!(c.running(), 1);
        assert_eq!(c.next_ready(), Some(2));
        assert_eq!(c.start(1), None, "1 already runs");
        assert!(c.ended(7, true).is_empty());
        assert!(c.ended(2, true).is_empty(), "2 never ran");
        assert_eq!(c.state_of(2), Some(W));
        c.ended(1, true);
        c.start(2);
        c.ended(2, true);
        assert!(c.is_over());
    }

    #[test]
    fn duplicated_dependencies_count_once() {
        let mut c = Coordinator::new(&[(1, D, vec![]), (2, D, vec![1, 1])]);
        c.settle();
        start_all(&mut c);
        assert_eq!(changes(&c.ended(1, true)), vec![(1, F), (2, W)]);
    }

    #[test]
    fn a_chain_of_100_000_actions_runs_through() {
        // Each end touches one dependent; a coordinator that rescanned every action at each
        // end would take minutes here instead of milliseconds.
        let n = 100_000;
        let actions: Vec<(i64, ActionState, Vec<i64>)> = (0..n)
            .map(|i| (i, D, if i == 0 { vec![] } else { vec![i - 1] }))
            .collect();
        let mut c = Coordinator::new(&actions);
        c.settle();
        let mut ran = 0;
        while let Some(a) = c.next_ready() {
            c.start(a);
            c.ended(a, true);
            ran += 1;
        }
        assert_eq!(ran, n);
        assert!(c.is_over());
        assert_eq!(c.outcome(), Outcome::Finished);
    }
}
