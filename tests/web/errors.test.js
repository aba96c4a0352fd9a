// Where a SQL error points in its statement (host/web/lib/errors.js).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorPlace } from '../../host/web/lib/errors.js';

test("PostgreSQL's character position, counted from 1", () => {
  const [sql, from, to] = errorPlace('syntax error at or near "FORM" at character 10 in `SELECT 1 FORM t`', []);
  assert.equal(sql, 'SELECT 1 FORM t');
  assert.equal(sql.slice(from, to), 'FORM');
});

test("SQLite's near word, and the statement from the log", () => {
  const [sql, from, to] = errorPlace('near "FROMM": syntax error', ['Sql action 3 `load`: SELECT * FROMM raw']);
  assert.equal(sql, 'SELECT * FROMM raw');
  assert.equal(sql.slice(from, to), 'FROMM');
});

test('a statement without a place, and no statement', () => {
  assert.deepEqual(errorPlace('no such table: x in `SELECT * FROM x`', []), ['SELECT * FROM x', -1, -1]);
  assert.equal(errorPlace('connection refused', []), null);
  assert.equal(errorPlace(null, []), null);
  // A place past the statement's end is no place.
  assert.deepEqual(errorPlace('oops at offset 99 in `SELECT 1`', []), ['SELECT 1', -1, -1]);
});

test('a very long error is read quickly', () => {
  const error = `${'x'.repeat(200000)} in \`${'SELECT 1 '.repeat(20000)}\``;
  const began = process.hrtime.bigint();
  const place = errorPlace(error, []);
  const ms = Number(process.hrtime.bigint() - began) / 1e6;
  assert.ok(place && place[0].startsWith('SELECT 1'));
  assert.ok(ms < 500, `${ms} ms`);
});
