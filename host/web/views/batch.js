// One scheduled batch over days (`#/batches/ID?days=N`): its runs by schedule date as a
// calendar, the durations of its last runs as a chart, and a calendar of its planned starts
// in the weeks ahead (clock changes marked).

import { el, say, show, svg } from '../lib/dom.js';
import { call, Unauthorized } from '../lib/api.js';
import { backfillBatch, pauseBatch } from '../lib/actions.js';
import { can, failed, me, reroute } from '../lib/session.js';
import { addDays, todayIn, dayRange, weekday } from '../lib/days.js';
import { byDay, daysSummary, heat } from '../lib/heat.js';
import { duration, localTime, parseTime, planned } from '../lib/time.js';

/** @typedef {import('../lib/types.js').Shown} Shown
 *  @typedef {import('../lib/types.js').Listed} Listed
 *  @typedef {import('../lib/heat.js').RunDay} RunDay */

/** How many runs the duration chart shows. */
const DURATIONS = 60;

/** How many planned starts the calendar asks for. */
const STARTS = 400;

/** How many weeks the calendar of planned starts shows. */
const WEEKS_AHEAD = 5;

/** The median of `values` (none: NaN).
 * @param {number[]} values */
export function median(values) {
  if (!values.length) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The durations of `runs` (oldest first) as bars, each a link to its run.
 * @param {Listed[]} runs newest first */
function durationChart(runs) {
  const done = runs.filter((r) => r.end).reverse();
  if (!done.length) return el('p', { class: 'muted' }, 'No run has ended yet.');
  const secs = done.map((r) => Math.max(0, parseTime(r.end) - parseTime(r.start)) / 1000);
  const most = Math.max(...secs, 0.001);
  const [W, H, GAP] = [12, 120, 3];
  const bars = done.map((r, i) => {
    const h = Math.max(2, (secs[i] / most) * H);
    return svg('a', { href: `#/runs/${r.batchInstanceId}`, class: 'bar-link', 'aria-label': `run ${r.batchInstanceId}: ${r.state} in ${duration(secs[i] * 1000)}` },
      svg('rect', { x: i * (W + GAP), y: H - h, width: W, height: h, class: `bar st-${r.state}` }),
      svg('title', {}, `run ${r.batchInstanceId}, planned ${planned(r) || localTime(r.start)}: ${r.state} in ${duration(secs[i] * 1000)}`));
  });
  const width = done.length * (W + GAP);
  return el('div', { class: 'chart' },
    el('p', { class: 'muted', id: 'duration-summary' }, `${done.length} runs: median ${duration(median(secs) * 1000)}, longest ${duration(most * 1000)}.`),
    el('div', { class: 'chart-wrap', tabindex: -1 },
      svg('svg', { id: 'durations', width, height: H + 1, role: 'group', 'aria-label': 'how long each of the last runs took, oldest on the left' },
        svg('line', { x1: 0, y1: H + 0.5, x2: width, y2: H + 0.5, class: 'baseline' }),
        bars)));
}

/** The planned starts of the weeks ahead as a calendar: a cell a day with its starts'
 * times, a clock change marked.
 * @param {{planned: string, secondOccurrence: boolean, clockChange?: string | null}[]} starts
 * @param {string} today */
function startsCalendar(starts, today) {
  /** @type {Map<string, {times: string[], change: string}>} */
  const byDate = new Map();
  for (const s of starts) {
    const day = s.planned.slice(0, 10);
    const e = byDate.get(day) ?? { times: [], change: '' };
    e.times.push(`${s.planned.slice(11, 16)}${s.secondOccurrence ? ' (second)' : ''}`);
    if (s.clockChange) e.change = s.clockChange;
    byDate.set(day, e);
  }
  const first = addDays(today, -weekday(today));
  const days = dayRange(first, addDays(first, WEEKS_AHEAD * 7 - 1));
  const names = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
  const weeks = [];
  for (let w = 0; w < WEEKS_AHEAD; w += 1) {
    weeks.push(el('tr', {}, days.slice(w * 7, w * 7 + 7).map((d) => {
      const e = byDate.get(d);
      const shown = e ? e.times.slice(0, 3).join(', ') + (e.times.length > 3 ? ` +${e.times.length - 3}` : '') : '';
      return el('td', { class: `${d < today ? 'past' : ''}${d === today ? ' today' : ''}${e?.change ? ' clock-change' : ''}`, 'data-day': d },
        el('div', { class: 'cal-day' }, d.slice(8, 10) === '01' || d === first ? d.slice(5) : d.slice(8)),
        e ? el('div', { class: 'cal-starts', title: e.times.join(', ') }, `${e.times.length === 1 ? '' : `${e.times.length}: `}${shown}`) : null,
        e?.change ? el('div', { class: 'cal-change' }, e.change) : null);
    })));
  }
  return el('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'planned starts by day' },
    el('table', { class: 'calendar', id: 'starts-calendar' },
      el('thead', {}, el('tr', {}, names.map((n) => el('th', {}, n)))),
      el('tbody', {}, weeks)));
}

/** Shows batch `id`.
 * @param {number} id
 * @param {URLSearchParams} params `days`: 91, 182 or 364
 * @returns {Promise<Shown>} */
export async function batchView(id, params) {
  const span = [91, 182, 364].includes(Number(params.get('days'))) ? Number(params.get('days')) : 91;
  // Schedule dates are the service zone's days, whichever zone the page shows times in.
  const service = me()?.timeZone;
  const today = todayIn(service);
  const from = addDays(today, -(span - 1));
  const [next, runDays, recent] = await Promise.all([
    call('NextRuns', { batchId: id, count: STARTS }),
    call('ListRunDays', { from, to: today, batchId: id }),
    call('ListBatchInstances', { batchId: id, limit: DURATIONS }),
  ]);
  const batch = runDays.batches[0];
  const days = dayRange(from, today);
  const cells = byDay(batch?.days ?? []);
  const hover = el('p', { class: 'muted', id: 'batch-hover', 'aria-live': 'polite' }, 'Point at a day to see its runs; click it to open its newest run.');
  const summary = daysSummary(days, cells);
  const said = el('p', { class: 'problem', id: 'batch-problem', role: 'alert' });
  /** Does `f`, saying a refusal.
   * @param {() => Promise<void>} f */
  const act = async (f) => {
    try {
      await f();
    } catch (e) {
      if (e instanceof Unauthorized) { failed(e); return; }
      said.textContent = e instanceof Error ? e.message : String(e);
    }
  };
  const end = addDays(today, WEEKS_AHEAD * 7);
  show(el('h1', {}, `Batch ${next.name}`),
    el('section', { class: 'card' },
      el('div', { class: 'summary' },
        el('div', {}, el('span', {}, 'Schedule'), el('span', { class: 'schedule-text' }, next.schedule)),
        el('div', {}, el('span', {}, 'Zone'), el('span', {}, next.timeZone)),
        el('div', {}, el('span', {}, 'Runs'), el('span', { id: 'batch-enabled' }, !next.enabled ? 'disabled (by its definition)' : next.paused ? 'paused' : 'on schedule')),
        el('div', {}, el('span', {}, 'All runs'), el('span', {}, el('a', { href: `#/runs?name=${encodeURIComponent(next.name)}` }, 'list')))),
      next.problem ? el('p', { class: 'problem' }, next.problem) : null,
      can('operate') ? el('div', { class: 'actions-bar' },
        el('button', {
          type: 'button',
          class: next.paused ? 'secondary' : 'danger',
          id: next.paused ? 'resume' : 'pause',
          onclick: () => act(async () => { if (await pauseBatch(id, next.name, !next.paused)) reroute(); }),
        }, next.paused ? 'Resume…' : 'Pause…'),
        el('button', {
          type: 'button',
          class: 'secondary',
          id: 'backfill',
          onclick: () => act(async () => {
            const b = await backfillBatch(id, next.name, today);
            if (b !== null) location.hash = `#/runs?backfill=${b}`;
          }),
        }, 'Backfill…')) : null,
      said),
    el('section', { class: 'card' },
      el('h2', {}, `Runs by day (schedule dates, ${next.timeZone})`),
      el('nav', { class: 'pager', 'aria-label': 'days shown' }, 'Weeks: ',
        [[91, 13], [182, 26], [364, 52]].map(([n, w]) => (n === span ? el('span', { class: 'current-page', 'aria-current': 'page' }, String(w))
          : el('a', { href: `#/batches/${id}?days=${n}` }, String(w))))),
      el('div', { class: 'heat-wrap', id: 'batch-days' },
        heat(days, cells, { layout: 'weeks', size: 13, label: `${next.name}: ${summary}`, titles: true, open: (run) => { location.hash = `#/runs/${run}`; }, hover: (t) => { hover.textContent = t; } })),
      el('p', { class: 'muted' }, summary),
      hover),
    el('section', { class: 'card' },
      el('h2', {}, `How long the last ${DURATIONS} runs took`),
      durationChart(recent.instances)),
    el('section', { class: 'card' },
      el('h2', {}, `Planned starts, the next ${WEEKS_AHEAD} weeks (${next.timeZone})`),
      startsCalendar(next.starts.filter((/** @type {{planned: string}} */ s) => s.planned.slice(0, 10) < end), today),
      next.starts.length >= STARTS && next.starts[next.starts.length - 1].planned.slice(0, 10) < end
        ? el('p', { class: 'muted', id: 'starts-cut' }, `Only its next ${STARTS} starts are shown: they end on ${next.starts[next.starts.length - 1].planned}.`)
        : null));
  say('');
  return null;
}
