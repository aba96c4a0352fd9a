// What a deploy changed (host/web/lib/diff.js).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { definitionLines, lineDiff, shownDiff, wordDiff } from '../../host/web/lib/diff.js';

const sheet = (sql) => JSON.stringify({
  sheetId: 3,
  name: 'load',
  nodes: [
    { nodeId: 10, type: 0, module: 'Sql', action: sql },
    { nodeId: 11, type: 1, table: 'stage' },
  ],
});

test("a definition's SQL is written as its own lines, not a JSON string", () => {
  const lines = definitionLines(sheet('INSERT INTO stage\nSELECT *\nFROM raw'));
  assert.deepEqual(lines, [
    'sheetId: 3',
    'name: load',
    'nodes:',
    '  - nodeId: 10',
    '    type: 0',
    '    module: Sql',
    '    action: |',
    '      INSERT INTO stage',
    '      SELECT *',
    '      FROM raw',
    '  - nodeId: 11',
    '    type: 1',
    '    table: stage',
  ]);
  assert.deepEqual(definitionLines('not json\nat all'), ['not json', 'at all']);
  assert.deepEqual(definitionLines(null), []);
});

test('a one-word change of a statement is one changed line with the word marked', () => {
  const before = definitionLines(sheet('INSERT INTO stage\nSELECT *\nFROM raw\nWHERE id > 0'));
  const after = definitionLines(sheet('INSERT INTO stage\nSELECT *\nFROM raw\nWHERE id > 10'));
  const diff = lineDiff(before, after);
  assert.deepEqual(diff.filter(([m]) => m !== ' '), [['-', '      WHERE id > 0'], ['+', '      WHERE id > 10']]);
  const shown = shownDiff(diff);
  const removed = shown.find((s) => s.mark === '-');
  const added = shown.find((s) => s.mark === '+');
  assert.deepEqual(removed.parts.filter(([c]) => c).map(([, w]) => w), ['0']);
  assert.deepEqual(added.parts.filter(([c]) => c).map(([, w]) => w), ['10']);
  // Long unchanged stretches fold, keeping three lines next to the change.
  const changedAt = diff.findIndex(([m]) => m !== ' ');
  assert.equal(shown[0].fold.length, changedAt - 3);
  assert.deepEqual(shown.slice(1, 4).map((s) => s.mark), [' ', ' ', ' ']);
});

test('lines with nothing in common are a whole line removed and one added', () => {
  assert.equal(wordDiff('SELECT a FROM b', 'DELETE FROM zz WHERE q'), null);
  const w = wordDiff('SELECT a, b FROM t', 'SELECT a, c FROM t');
  assert.deepEqual(w.after, [[false, 'SELECT a, '], [true, 'c'], [false, ' FROM t']]);
});

test('a middle too long to compare gives no diff, and an unchanged text has no fold at its ends', () => {
  const a = Array.from({ length: 3000 }, (_, i) => `a${i}`);
  const b = Array.from({ length: 3000 }, (_, i) => `b${i}`);
  assert.equal(lineDiff(a, b), null);
  const same = lineDiff(['x', 'y'], ['x', 'y']);
  assert.deepEqual(shownDiff(same).map((s) => ('fold' in s ? 'fold' : s.line)), ['fold']);
});
