// The order of a run's actions, its counts, filters and critical path (host/web/lib/order.js).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  criticalPath, depths, failuresFirst, firstLine, ordered, shows, stateCounts,
} from '../../host/web/lib/order.js';

/** An action of a run, as the server answers it. */
function action(actionId, state, dependsOn = [], start = null, end = null, error = null) {
  return {
    actionId, sheetId: 1, name: `a${actionId}`, module: 'Sql', state, start, end,
    rowsRead: 0, rowsWritten: 0, rowsUpdated: 0, rowsDeleted: 0, error, log: [], dependsOn,
  };
}

const t = (s) => `2026-11-25T01:00:${String(s).padStart(2, '0')}.000Z`;

test('what an action needs comes above it, then by start, never started last', () => {
  const list = [
    action(3, 'F', [1, 2], t(5), t(6)),
    action(2, 'F', [], t(2), t(3)),
    action(1, 'F', [], t(1), t(4)),
    action(4, 'D', [3]),
    action(5, 'W', []),
  ];
  assert.deepEqual(ordered(list).map((a) => a.actionId), [1, 2, 5, 3, 4]);
  assert.deepEqual([...depths(list)].sort((a, b) => a[0] - b[0]), [[1, 0], [2, 0], [3, 1], [4, 2], [5, 0]]);
});

test('a cycle and a dependency outside the run do not hang or throw', () => {
  const list = [action(1, 'D', [2]), action(2, 'D', [1]), action(3, 'D', [99])];
  assert.equal(ordered(list).length, 3);
});

test('a chain of 20,000 actions does not overflow the stack', () => {
  const list = [];
  for (let i = 0; i < 20000; i += 1) list.push(action(i, 'F', i ? [i - 1] : []));
  list.reverse();
  const o = ordered(list);
  assert.equal(o[0].actionId, 0);
  assert.equal(o[19999].actionId, 19999);
});

test('failures first, then running and halted, then the rest in order', () => {
  const list = [
    action(1, 'F', [], t(1), t(2)),
    action(2, 'E', [1], t(3), t(4), 'boom'),
    action(3, 'R', [1], t(3)),
    action(4, 'S', [2]),
    action(5, 'E', [], t(0), t(1), 'bang'),
  ];
  assert.deepEqual(failuresFirst(list).map((a) => a.actionId), [5, 2, 3, 1, 4]);
});

test('the counts of each filter and what each shows', () => {
  const list = [action(1, 'F'), action(2, 'E'), action(3, 'E'), action(4, 'D'), action(5, 'W'), action(6, 'R')];
  const c = stateCounts(list);
  assert.equal(c.all, 6);
  assert.equal(c.failed, 2);
  assert.equal(c.waiting, 2);
  assert.equal(c.running, 1);
  assert.equal(c.skipped, 0);
  assert.ok(shows('failed', 'E') && !shows('failed', 'F'));
  assert.ok(shows('waiting', 'D') && shows('waiting', 'W') && !shows('waiting', 'R'));
  assert.ok(shows('all', 'S') && shows('no such filter', 'S'));
});

test('the critical path runs back from the last end through what each needed last', () => {
  const list = [
    action(1, 'F', [], t(0), t(10)),
    action(2, 'F', [], t(0), t(3)),
    action(3, 'F', [1, 2], t(10), t(12)),
    action(4, 'F', [2], t(3), t(20)),
    action(5, 'F', [3, 4], t(20), t(30)),
    action(6, 'S', [5]),
  ];
  assert.deepEqual([...criticalPath(list)].sort(), [2, 4, 5]);
  assert.equal(criticalPath([action(1, 'D')]).size, 0);
});

test("an error's first line, cut", () => {
  assert.equal(firstLine('  syntax error at or near "FORM"\nLINE 1: SELECT'), 'syntax error at or near "FORM"');
  assert.equal(firstLine(null), '');
  assert.equal(firstLine('x'.repeat(500), 10), `${'x'.repeat(9)}…`);
});

import { parseRun, runSentence } from '../../host/web/lib/elements.js';

test("a run's elements, its + selection and its variables, every problem at its line", () => {
  const a = parseRun('sheet 3\nfolder /etl\n\naction /etl/load/step 1', 'since=2026-01-01\nmode = full');
  assert.deepEqual(a.problems, []);
  assert.deepEqual(a.elements, [
    { elementType: 'S', elementId: 3 }, { elementType: 'F', elementId: '/etl' }, { elementType: 'A', elementId: '/etl/load/step 1' },
  ]);
  assert.equal(a.select, 'named');
  assert.deepEqual(a.variables, [{ variableName: 'since', variableValue: '2026-01-01' }, { variableName: 'mode', variableValue: ' full' }]);
  assert.equal(parseRun('sheet 3+\nsheet 4 +', '').select, 'downstream');
  assert.equal(parseRun('+sheet 3', '').select, 'upstream');
  assert.match(runSentence(parseRun('sheet 3+', 'n=1'), 'adhoc'), /^Starts a new run "adhoc" of sheet 3 and everything downstream of them \(what they feed\) with n=1/);
  const bad = parseRun('table x\nsheet\nsheet etl\n+sheet 3+\nsheet 4+\nsheet 5', 'no equals\n1x=2\nn=1\nn=2');
  assert.deepEqual(bad.problems.map((p) => p.line), [1, 2, 3, 4, 1, 1, 2, 4]);
  assert.match(bad.problems[4].message, /mark every line alike/);
  assert.deepEqual(parseRun('', '').problems, [{ line: 1, message: 'name at least one sheet, folder or action' }]);
});

import { layered } from '../../host/web/lib/layered.js';

test('a graph in layers left to right as the data flows, a cycle not hanging', () => {
  const nodes = ['t:raw', 'a:1', 't:stage', 'a:2', 'a:3', 't:mart', 't:other'].map((id) => ({ id }));
  const edges = [
    { from: 't:raw', to: 'a:1' }, { from: 'a:1', to: 't:stage' }, { from: 't:stage', to: 'a:2' },
    { from: 't:stage', to: 'a:3' }, { from: 'a:2', to: 't:mart' }, { from: 'a:3', to: 't:mart' }, { from: 'a:3', to: 't:other' },
  ];
  const { places, layers } = layered(nodes, edges);
  const x = (id) => places.get(id).x;
  assert.ok(x('t:raw') < x('a:1') && x('a:1') < x('t:stage') && x('t:stage') < x('a:2') && x('a:2') < x('t:mart'));
  assert.equal(x('a:2'), x('a:3'));
  assert.equal(layers, 5);
  const cyc = layered([{ id: 'a' }, { id: 'b' }, { id: 'c' }], [{ from: 'a', to: 'b' }, { from: 'b', to: 'a' }, { from: 'c', to: 'a' }]);
  assert.equal(cyc.places.size, 3);
  const big = Array.from({ length: 3000 }, (_, i) => ({ id: `n${i}` }));
  const chain = big.slice(1).map((n, i) => ({ from: big[i].id, to: n.id }));
  const began = Date.now();
  assert.equal(layered(big, chain).layers, 3000);
  assert.ok(Date.now() - began < 2000);
});

test('an action that reads and writes one table does not stretch the graph into a staircase', () => {
  // t:x -> a:1 -> t:x (a cycle), a:1 -> t:y -> a:2 -> t:z
  const nodes = ['t:x', 'a:1', 't:y', 'a:2', 't:z'].map((id) => ({ id }));
  const edges = [{ from: 't:x', to: 'a:1' }, { from: 'a:1', to: 't:x' }, { from: 'a:1', to: 't:y' }, { from: 't:y', to: 'a:2' }, { from: 'a:2', to: 't:z' }];
  const { places, layers } = layered(nodes, edges);
  assert.ok(layers <= 5, `${layers} columns`);
  const x = (id) => places.get(id).x;
  assert.ok(x('a:1') < x('t:y') && x('t:y') < x('a:2') && x('a:2') < x('t:z'));
});
