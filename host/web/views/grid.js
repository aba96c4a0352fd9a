// Every scheduled batch's runs by day, side by side (`#/grid?days=N`): a row a batch, a cell
// a schedule date coloured by its newest run's state; a click opens that run, the batch's
// name its own page.

import { el, say, show } from '../lib/dom.js';
import { call } from '../lib/api.js';
import { addDays, todayIn, dayRange } from '../lib/days.js';
import { byDay, daysSummary, heat } from '../lib/heat.js';
import { me } from '../lib/session.js';

/** @typedef {import('../lib/types.js').Shown} Shown
 *  @typedef {import('../lib/heat.js').RunDay} RunDay
 *  @typedef {{batchId: number, name: string, enabled: boolean, paused?: boolean, days: RunDay[]}} BatchDays */

/** The spans the grid offers, in days. */
export const SPANS = [30, 90, 365];

/** Shows the grid.
 * @param {URLSearchParams} params `days`: 30, 90 or 365
 * @returns {Promise<Shown>} */
export async function gridView(params) {
  const span = SPANS.includes(Number(params.get('days'))) ? Number(params.get('days')) : 90;
  // Schedule dates are the service zone's days, whichever zone the page shows times in.
  const service = me()?.timeZone;
  const today = todayIn(service);
  const from = addDays(today, -(span - 1));
  const answer = await call('ListRunDays', { from, to: today });
  const batches = /** @type {BatchDays[]} */ (answer.batches);
  const days = dayRange(from, today);
  const size = span > 100 ? 8 : 12;
  const hover = el('p', { class: 'muted', id: 'grid-hover', 'aria-live': 'polite' }, 'Point at a day to see its runs; click it to open its newest run.');
  const open = (/** @type {number} */ run) => { location.hash = `#/runs/${run}`; };
  const rows = batches.map((b) => {
    const cells = byDay(b.days);
    const summary = daysSummary(days, cells);
    return el('div', { class: 'grid-row', 'data-batch': b.batchId },
      el('div', { class: 'grid-name' },
        el('a', { href: `#/batches/${b.batchId}` }, b.name),
        !b.enabled ? el('span', { class: 'muted' }, ' (disabled)') : b.paused ? el('span', { class: 'muted paused' }, ' (paused)') : null,
        el('div', { class: 'muted small' }, summary)),
      heat(days, cells, { layout: 'strip', size, label: `${b.name}: ${summary}`, open, hover: (t) => { hover.textContent = `${b.name}, ${t}`; } }));
  });
  const spans = el('nav', { class: 'pager', 'aria-label': 'days shown' }, 'Days: ',
    SPANS.map((n) => (n === span ? el('span', { class: 'current-page', 'aria-current': 'page' }, String(n))
      : el('a', { href: `#/grid?days=${n}`, 'data-days': n }, String(n)))));
  show(el('h1', {}, 'Runs by day'),
    el('p', { class: 'muted' }, `Each scheduled batch's runs by schedule date (the day of the planned start, ${service ?? 'the service zone'}), ${from} to ${today}, newest on the right; a cell's colour is the state of the day's newest run, outlined when another run that day failed.`),
    spans,
    batches.length
      ? el('div', { class: 'grid-wrap', id: 'grid', tabindex: 0, role: 'region', 'aria-label': 'runs by day' }, rows)
      : el('p', { class: 'muted' }, 'No batch is scheduled.'),
    answer.more ? el('p', { class: 'muted' }, 'The first 500 batches by name are shown.') : null,
    hover);
  say('');
  return null;
}
