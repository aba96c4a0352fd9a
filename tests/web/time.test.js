// Times in the service zone and the axis of the timeline (host/web/lib/time.js, axis.js).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clockTime, duration, localTime, setZone, took, zoneName, zoneOffset } from '../../host/web/lib/time.js';
import { precision, ticks } from '../../host/web/lib/axis.js';

test('times are shown in the service zone, to the millisecond when asked', () => {
  setZone('Europe/Berlin');
  assert.equal(zoneName(), 'Europe/Berlin');
  // The autumn night: 02:30 twice, an hour apart in UTC.
  assert.equal(localTime('2026-10-25T00:30:00.123Z', true), '2026-10-25 02:30:00.123');
  assert.equal(localTime('2026-10-25T01:30:00Z'), '2026-10-25 02:30:00');
  assert.equal(zoneOffset(Date.parse('2026-10-25T00:30:00Z')), 7200000);
  assert.equal(zoneOffset(Date.parse('2026-10-25T01:30:00Z')), 3600000);
  assert.equal(localTime(null), '');
  setZone('No/Such_Zone');
  assert.equal(zoneName(), Intl.DateTimeFormat().resolvedOptions().timeZone);
  setZone('UTC');
  assert.equal(clockTime(Date.parse('2026-11-25T01:02:03.045Z'), 'milliseconds'), '01:02:03.045');
  assert.equal(clockTime(Date.parse('2026-11-25T01:02:03.045Z'), 'minutes'), '01:02');
});

test('durations in words, to the millisecond below a second', () => {
  assert.equal(duration(7), '7 ms');
  assert.equal(duration(3200), '3.2 s');
  assert.equal(duration(247000), '4 min 7 s');
  assert.equal(duration(7500000), '2 h 5 min');
  assert.equal(duration(-1), '');
  assert.equal(took('2026-11-25T01:00:00.000Z', '2026-11-25T01:00:00.250Z'), '250 ms');
});

test('ticks fall on round steps, at most as many as asked, on the zone\'s hours', () => {
  const t0 = Date.parse('2026-11-25T01:00:00.000Z');
  const a = ticks(t0, t0 + 600000, 6);
  assert.equal(a.step, 120000);
  assert.deepEqual(a.ticks.map((x) => (x - t0) / 1000), [0, 120, 240, 360, 480, 600]);
  assert.equal(precision(a.step), 'minutes');
  const b = ticks(t0 + 3, t0 + 80, 8);
  assert.equal(b.step, 10);
  assert.equal(precision(b.step), 'milliseconds');
  assert.ok(b.ticks.every((x) => x >= t0 + 3 && x <= t0 + 80 && (x - t0) % 10 === 0));
  // A zone half an hour off UTC: hour ticks on its hours.
  const offset = 5.5 * 3600000;
  const c = ticks(t0, t0 + 6 * 3600000, 6, -offset);
  assert.ok(c.ticks.every((x) => (x + offset) % 3600000 === 0));
  assert.ok(ticks(t0, t0 + 365 * 86400000, 10).ticks.length <= 11);
});

import { addDays, dayOf, dayRange, dayStart, isDay, weekday } from '../../host/web/lib/days.js';

test('days in the service zone: ranges, weekdays, and the instant each begins', () => {
  setZone('Europe/Berlin');
  assert.equal(dayOf(Date.parse('2026-10-24T22:30:00Z')), '2026-10-25');
  assert.equal(addDays('2026-02-28', 1), '2026-03-01');
  assert.equal(addDays('2026-01-01', -1), '2025-12-31');
  assert.deepEqual(dayRange('2026-10-30', '2026-11-02'), ['2026-10-30', '2026-10-31', '2026-11-01', '2026-11-02']);
  assert.deepEqual(dayRange('2026-11-02', '2026-11-01'), []);
  assert.equal(weekday('2026-11-30'), 0);
  assert.equal(weekday('2026-11-29'), 6);
  // Midnight in Berlin: 23:00 UTC the day before in winter, 22:00 in summer; the day of
  // the autumn change begins at 22:00 UTC (summer time still).
  assert.equal(new Date(dayStart('2026-11-28')).toISOString(), '2026-11-27T23:00:00.000Z');
  assert.equal(new Date(dayStart('2026-07-01')).toISOString(), '2026-06-30T22:00:00.000Z');
  assert.equal(new Date(dayStart('2026-10-25')).toISOString(), '2026-10-24T22:00:00.000Z');
  assert.equal(new Date(dayStart('2026-10-26')).toISOString(), '2026-10-25T23:00:00.000Z');
  assert.ok(isDay('2026-02-28') && !isDay('2026-02-30') && !isDay('tomorrow') && !isDay(null));
  setZone('UTC');
});

import { planned } from '../../host/web/lib/time.js';

test("a planned start says when it is the autumn night's second occurrence", () => {
  assert.equal(planned({ plannedStart: '2026-10-25 02:30:00', plannedSecond: true }), '2026-10-25 02:30:00 (second)');
  assert.equal(planned({ plannedStart: '2026-10-25 02:30:00' }), '2026-10-25 02:30:00');
  assert.equal(planned({}), '');
});
