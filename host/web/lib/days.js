// Days as the page counts them: `YYYY-MM-DD` text in the service zone, ranges of them, the
// weeks of a calendar, and the instant a day begins. Pure (tests/web).

import { fields, zoneOffset } from './time.js';

/** The day of instant `t` in the page's zone.
 * @param {number} t
 * @returns {string} */
export function dayOf(t) {
  const f = fields(t);
  return `${f.year}-${f.month}-${f.day}`;
}

/** Today in zone `zone` (an IANA name; none or one the browser does not know: the page's
 * zone). Schedule dates are days of the service zone, whichever zone the page shows times in.
 * @param {string | undefined} zone
 * @param {number} [now]
 * @returns {string} */
export function todayIn(zone, now = Date.now()) {
  try {
    if (zone) {
      const f = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' });
      /** @type {Record<string, string>} */
      const p = {};
      for (const part of f.formatToParts(now)) p[part.type] = part.value;
      return `${p.year}-${p.month}-${p.day}`;
    }
  } catch {
    // A zone the browser does not know: the page's.
  }
  return dayOf(now);
}

/** The day `n` days after `day` (before, for a negative `n`).
 * @param {string} day
 * @param {number} n
 * @returns {string} */
export function addDays(day, n) {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, d + n)).toISOString().slice(0, 10);
}

/** Every day from `from` to `to`, both included (none when `to` comes first).
 * @param {string} from
 * @param {string} to
 * @returns {string[]} */
export function dayRange(from, to) {
  const out = [];
  for (let d = from; d <= to && out.length < 10000; d = addDays(d, 1)) out.push(d);
  return out;
}

/** The weekday of `day`: 0 for Monday to 6 for Sunday.
 * @param {string} day */
export function weekday(day) {
  const [y, m, d] = day.split('-').map(Number);
  return (new Date(Date.UTC(y, m - 1, d)).getUTCDay() + 6) % 7;
}

/** The instant `day` begins in the page's zone (its midnight; the first instant of the day
 * when the clocks skip midnight), epoch milliseconds.
 * @param {string} day
 * @returns {number} */
export function dayStart(day) {
  const [y, m, d] = day.split('-').map(Number);
  const wall = Date.UTC(y, m - 1, d);
  // The zone's offset at that wall time, found from a guess and corrected once.
  let t = wall - zoneOffset(wall);
  t = wall - zoneOffset(t);
  return dayOf(t) === day ? t : t + 3600000;
}

/** Whether `text` is a day `YYYY-MM-DD` that exists.
 * @param {string | null | undefined} text */
export function isDay(text) {
  if (!text || !/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  return addDays(text, 0) === text;
}
