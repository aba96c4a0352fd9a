// The order a run's actions are shown in. Pure (tests/web).

import { parseTime } from './time.js';

/** @typedef {import('./types.js').ActionRun} ActionRun */

/** Each action's depth in the dependencies of the run: 0 for one that needs none of the
 * run's actions, else one more than the deepest it needs. A cycle (never deployed, but the
 * page does not trust that) counts the action closing it as depth 0 there.
 * @param {ActionRun[]} actions
 * @returns {Map<number, number>} */
export function depths(actions) {
  const byId = new Map(actions.map((a) => [a.actionId, a]));
  /** @type {Map<number, number>} */
  const depth = new Map();
  // Depth first with a stack of its own (a chain of thousands of actions would overflow the
  // call stack).
  for (const first of actions) {
    /** @type {[ActionRun, boolean][]} */
    const stack = [[first, false]];
    const onPath = new Set();
    while (stack.length) {
      const [a, done] = /** @type {[ActionRun, boolean]} */ (stack.pop());
      if (depth.has(a.actionId)) continue;
      // Not done and on the path: a cycle back to it, or a second way to an action being
      // walked; walked once either way.
      if (!done && onPath.has(a.actionId)) continue;
      const deps = (a.dependsOn ?? []).filter((id) => byId.has(id));
      if (done) {
        onPath.delete(a.actionId);
        depth.set(a.actionId, deps.reduce((d, id) => Math.max(d, (depth.get(id) ?? -1) + 1), 0));
        continue;
      }
      onPath.add(a.actionId);
      stack.push([a, true]);
      for (const id of deps) {
        if (!depth.has(id) && !onPath.has(id)) stack.push([/** @type {ActionRun} */ (byId.get(id)), false]);
      }
    }
  }
  return depth;
}

/** The actions by how deep they sit in the dependencies (what an action needs comes above
 * it), then by start (what never started last), then by id.
 * @param {ActionRun[]} actions
 * @returns {ActionRun[]} */
export function ordered(actions) {
  const depth = depths(actions);
  const start = (/** @type {ActionRun} */ a) => (a.start ? parseTime(a.start) : Infinity);
  return [...actions].sort((a, b) => (depth.get(a.actionId) ?? 0) - (depth.get(b.actionId) ?? 0)
    || start(a) - start(b) || a.actionId - b.actionId);
}

/** The order the run's page lists actions in: the failed ones first (an operator opens a
 * failed run for them), then the running and halted ones, then the rest as `ordered`.
 * @param {ActionRun[]} actions
 * @returns {ActionRun[]} */
export function failuresFirst(actions) {
  const rank = (/** @type {string} */ s) => (s === 'E' ? 0 : s === 'R' || s === 'H' ? 1 : 2);
  const inOrder = ordered(actions);
  const place = new Map(inOrder.map((a, i) => [a.actionId, i]));
  return inOrder.sort((a, b) => rank(a.state) - rank(b.state)
    || (place.get(a.actionId) ?? 0) - (place.get(b.actionId) ?? 0));
}

/** The states of a run that a restart takes. */
export const RESTARTABLE = ['failed', 'halted', 'interrupted'];

/** The words of an action's state letter. */
export const ACTION_STATES = /** @type {Record<string, string>} */ ({
  D: 'waiting for its inputs', W: 'ready', R: 'running', F: 'finished', E: 'failed', S: 'skipped', H: 'halted',
});

/** The filters of a run's actions: name, the letters it shows, what it is called. */
export const ACTION_FILTERS = /** @type {[string, string[], string][]} */ ([
  ['all', [], 'all'],
  ['failed', ['E'], 'failed'],
  ['running', ['R'], 'running'],
  ['waiting', ['D', 'W'], 'waiting'],
  ['finished', ['F'], 'finished'],
  ['skipped', ['S'], 'skipped'],
  ['halted', ['H'], 'halted'],
]);

/** How many actions each filter of `ACTION_FILTERS` shows.
 * @param {ActionRun[]} actions
 * @returns {Record<string, number>} */
export function stateCounts(actions) {
  /** @type {Record<string, number>} */
  const byLetter = {};
  for (const a of actions) byLetter[a.state] = (byLetter[a.state] ?? 0) + 1;
  /** @type {Record<string, number>} */
  const counts = {};
  for (const [name, letters] of ACTION_FILTERS) {
    counts[name] = letters.length ? letters.reduce((n, l) => n + (byLetter[l] ?? 0), 0) : actions.length;
  }
  return counts;
}

/** Whether filter `name` shows an action in state `state`.
 * @param {string} name
 * @param {string} state */
export function shows(name, state) {
  const f = ACTION_FILTERS.find(([n]) => n === name);
  return !f || f[1].length === 0 || f[1].includes(state);
}

/** The first line of an error, cut to `max` characters.
 * @param {string | null | undefined} error
 * @param {number} [max]
 * @returns {string} */
export function firstLine(error, max = 200) {
  if (!error) return '';
  const line = error.trimStart().split('\n', 1)[0].trimEnd();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** The critical path of a run: from the action that ended last, back through the action it
 * needed that ended last, to one that needed none; what made the run as long as it was.
 * Actions that never started are not on it.
 * @param {ActionRun[]} actions
 * @returns {Set<number>} */
export function criticalPath(actions) {
  const byId = new Map(actions.map((a) => [a.actionId, a]));
  const end = (/** @type {ActionRun | undefined} */ a) => (a?.start ? parseTime(a.end ?? a.start) : -Infinity);
  /** @type {ActionRun | undefined} */
  let last;
  for (const a of actions) if (a.start && (!last || end(a) > end(last))) last = a;
  const path = new Set();
  while (last && !path.has(last.actionId)) {
    path.add(last.actionId);
    /** @type {ActionRun | undefined} */
    let before;
    for (const id of last.dependsOn ?? []) {
      const d = byId.get(id);
      if (d?.start && (!before || end(d) > end(before))) before = d;
    }
    last = before;
  }
  return path;
}
