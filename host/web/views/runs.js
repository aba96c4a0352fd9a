// The runs: newest first, filtered by state and batch name, paged by number or from a date,
// or grouped by batch (one line a batch name with its counts and newest run, so that
// half-hourly batches do not bury the rest); the first page follows what starts and ends.

import { badge, drawn, el, say, show } from '../lib/dom.js';
import { call, Unreachable, reconnecting } from '../lib/api.js';
import { can, failed } from '../lib/session.js';
import { startRun } from '../lib/actions.js';
import { Unauthorized } from '../lib/api.js';
import { addDays, dayStart, isDay } from '../lib/days.js';
import { duration, localTime, planned, took, zoneName } from '../lib/time.js';

/** @typedef {import('../lib/types.js').Listed} Listed
 *  @typedef {import('../lib/types.js').Shown} Shown
 *  @typedef {{batchName: string, runs: number, failed: number, ongoing: number, last: Listed}} RunGroup */

/** Runs a page. */
const PAGE = 50;

/** How often the first page asks again, in milliseconds. */
const REFRESH = 5000;

/** How often the runs grouped by batch ask again (grouping reads every run that matches). */
const REFRESH_GROUPS = 30000;

/** The page numbers a pager offers around page `at` of `pages`: the first, the last, and two
 * either side of `at`, with null where numbers are left out.
 * @param {number} at
 * @param {number} pages
 * @returns {(number | null)[]} */
export function pageNumbers(at, pages) {
  /** @type {(number | null)[]} */
  const out = [];
  for (let n = 1; n <= pages; n += 1) {
    if (n === 1 || n === pages || Math.abs(n - at) <= 2) out.push(n);
    else if (out[out.length - 1] !== null) out.push(null);
  }
  return out;
}

/** A run's planned start and how it was started.
 * @param {Listed} i */
function started(i) {
  if (i.backfillId !== undefined) {
    return el('a', { href: `#/runs?backfill=${i.backfillId}`, class: 'backfill' }, `backfill ${i.backfillId} (${planned(i)})`);
  }
  return i.batchId !== undefined ? `scheduled (${planned(i)})` : 'by hand';
}

/** The table of runs.
 * @param {Listed[]} list */
function runsTable(list) {
  const rows = list.map((i) => el('tr', { 'data-instance': i.batchInstanceId },
    el('td', { class: 'num' }, el('a', { href: `#/runs/${i.batchInstanceId}` }, i.batchInstanceId)),
    el('td', {}, i.batchId !== undefined ? el('a', { href: `#/batches/${i.batchId}`, class: 'batch-link' }, i.batchName) : i.batchName),
    el('td', { class: 'wide' }, i.user),
    el('td', { class: 'wide' }, started(i)),
    el('td', {}, badge(i.state)),
    el('td', { class: 'time' }, localTime(i.start)),
    el('td', { class: 'num' }, took(i.start, i.end)),
    el('td', { class: i.late ? 'late' : 'muted' }, i.batchId !== undefined ? duration((i.lateSeconds ?? 0) * 1000) : '')));
  return el('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'runs' }, el('table', { id: 'runs' },
    el('thead', {}, el('tr', {},
      el('th', {}, 'Run'), el('th', {}, 'Batch'), el('th', { class: 'wide' }, 'User'), el('th', { class: 'wide' }, 'Started'),
      el('th', {}, 'State'), el('th', {}, `Start (${zoneName()})`), el('th', {}, 'Duration'), el('th', {}, 'Late'))),
    el('tbody', {}, rows)));
}

/** The table of groups.
 * @param {RunGroup[]} groups */
function groupsTable(groups) {
  const rows = groups.map((g) => el('tr', { 'data-group': g.batchName },
    el('td', {}, el('a', { href: `#/runs?name=${encodeURIComponent(g.batchName)}` }, g.batchName)),
    el('td', { class: 'num' }, g.runs),
    el('td', { class: g.failed ? 'num late' : 'num' }, g.failed),
    el('td', { class: 'num' }, g.ongoing),
    el('td', {}, el('a', { href: `#/runs/${g.last.batchInstanceId}` }, `run ${g.last.batchInstanceId}`), ' ', badge(g.last.state)),
    el('td', { class: 'time' }, localTime(g.last.start)),
    el('td', {}, g.last.batchId !== undefined ? el('a', { href: `#/batches/${g.last.batchId}`, class: 'batch-link' }, 'by day') : '')));
  return el('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'runs by batch' }, el('table', { id: 'groups' },
    el('thead', {}, el('tr', {},
      el('th', {}, 'Batch'), el('th', {}, 'Runs'), el('th', {}, 'Failed'), el('th', {}, 'Going on'),
      el('th', {}, 'Newest'), el('th', {}, `Start (${zoneName()})`), el('th', {}, 'Days'))),
    el('tbody', {}, rows)));
}

/** Shows the runs.
 * @param {URLSearchParams} params `state`, `name`, `backfill`, `before` (an id), `page`,
 *   `from` (a day: runs started on it or earlier), `group` (`batch`)
 * @returns {Promise<Shown>} */
export async function runsView(params) {
  const state = params.get('state') || '';
  const name = params.get('name') || '';
  const before = Number(params.get('before')) || null;
  const backfill = Number(params.get('backfill')) || null;
  const from = isDay(params.get('from')) ? /** @type {string} */ (params.get('from')) : '';
  const grouped = params.get('group') === 'batch';
  const page = Math.max(1, Math.floor(Number(params.get('page'))) || 1);
  /** @type {Record<string, any>} */
  const payload = { limit: PAGE };
  if (state) payload.state = state;
  if (name) payload.name = name;
  if (!grouped) {
    if (before) payload.before = before;
    if (backfill) payload.backfillId = backfill;
    if (from) payload.startedBefore = new Date(dayStart(addDays(from, 1))).toISOString().replace(/\.\d{3}Z$/, 'Z');
    payload.offset = (page - 1) * PAGE;
  }

  const stateSelect = el('select', { name: 'state', 'aria-label': 'state' },
    ['', 'waiting', 'running', 'finished', 'failed', 'halted', 'interrupted']
      .map((s) => el('option', { value: s, selected: s === state }, s || 'any state')));
  const nameInput = el('input', { type: 'search', name: 'name', value: name, placeholder: 'batch name', 'aria-label': 'batch name' });
  const fromInput = el('input', { type: 'date', name: 'from', value: from, 'aria-label': `started on or before (${zoneName()})` });
  const groupBox = el('input', { type: 'checkbox', name: 'group', id: 'group-by-batch', checked: grouped });
  const filters = el('form', {
    class: 'filters',
    onsubmit: (/** @type {Event} */ ev) => {
      ev.preventDefault();
      const q = new URLSearchParams();
      if (stateSelect.value) q.set('state', stateSelect.value);
      if (nameInput.value.trim()) q.set('name', nameInput.value.trim());
      if (backfill) q.set('backfill', String(backfill));
      if (groupBox.checked) q.set('group', 'batch');
      else if (isDay(fromInput.value)) q.set('from', fromInput.value);
      location.hash = `#/runs${q.size ? `?${q}` : ''}`;
    },
  }, el('label', {}, 'State', stateSelect), el('label', {}, 'Batch', nameInput),
  el('label', {}, `Started by (${zoneName()})`, fromInput),
  el('label', { class: 'check' }, groupBox, ' Group by batch'),
  el('button', { type: 'submit' }, 'Show'));

  /** The address of page `n` of this list.
   * @param {number} n */
  const pageHref = (n) => {
    const q = new URLSearchParams(params);
    q.delete('page');
    if (n > 1) q.set('page', String(n));
    return `#/runs${q.size ? `?${q}` : ''}`;
  };

  // The list and its pager, drawn again on each refresh; the filters stay as typed.
  const listing = el('div', { id: 'listing' });
  const draw = (/** @type {any} */ answer) => {
    if (grouped) {
      const groups = /** @type {RunGroup[]} */ (answer.groups);
      listing.replaceChildren(groups.length ? groupsTable(groups) : el('p', { class: 'muted' }, 'No runs match.'));
      return;
    }
    const list = /** @type {Listed[]} */ (answer.instances);
    const total = /** @type {number} */ (answer.total ?? list.length);
    const pages = Math.max(1, Math.ceil(total / PAGE));
    const first = (page - 1) * PAGE + 1;
    const pager = el('nav', { class: 'pager', 'aria-label': 'pages of runs' },
      page > 1 ? el('a', { href: pageHref(page - 1), id: 'newer', rel: 'prev' }, '‹ Newer') : null,
      pageNumbers(page, pages).map((n) => (n === null ? el('span', { class: 'muted' }, '…')
        : n === page ? el('span', { class: 'current-page', 'aria-current': 'page' }, String(n))
          : el('a', { href: pageHref(n), 'data-page': n }, String(n)))),
      page < pages ? el('a', { href: pageHref(page + 1), id: 'older', rel: 'next' }, 'Older ›') : null,
      el('span', { class: 'muted', id: 'shown' }, list.length ? `${first}–${first + list.length - 1} of ${total}` : 'No runs match.'));
    listing.replaceChildren(runsTable(list), pager);
  };
  // The total is counted at the first ask and every sixth refresh (counting reads every row
  // that matches); in between the last count is shown.
  let asks = 0;
  /** @type {number | undefined} */
  let total;
  const ask = async () => {
    if (grouped) return call('ListRunGroups', { limit: 200, ...(state ? { state } : {}), ...(name ? { name } : {}) });
    const counted = asks++ % 6 === 0;
    const answer = await call('ListBatchInstances', { ...payload, total: counted });
    if (counted) total = answer.total;
    return { ...answer, total };
  };
  draw(await ask());
  const title = backfill ? `Runs of backfill ${backfill}` : grouped ? 'Runs by batch' : 'Runs';
  const said = el('p', { class: 'problem', id: 'runs-problem', role: 'alert' });
  const start = can('operate') ? el('button', {
    type: 'button',
    class: 'secondary',
    id: 'start-run',
    onclick: async () => {
      try {
        const run = await startRun('');
        if (run !== null) location.hash = `#/runs/${run}`;
      } catch (e) {
        if (e instanceof Unauthorized) { failed(e); return; }
        said.textContent = e instanceof Error ? e.message : String(e);
      }
    },
  }, 'Start a run…') : null;
  show(el('div', { class: 'title-bar' }, el('h1', {}, title), start), said, filters, listing);
  say('');
  // The newest page follows what starts and ends, while it is shown.
  if (before || from || page > 1) return null;
  let stopped = false;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  let attempt = 0;
  const refresh = async () => {
    try {
      const answer = await ask();
      if (stopped) return;
      attempt = 0;
      draw(answer);
      drawn();
    } catch (e) {
      if (stopped) return;
      if (e instanceof Unreachable) {
        await reconnecting(attempt++);
        if (!stopped) refresh();
        return;
      }
      failed(e);
      return;
    }
    timer = setTimeout(refresh, grouped ? REFRESH_GROUPS : REFRESH);
  };
  timer = setTimeout(refresh, grouped ? REFRESH_GROUPS : REFRESH);
  return { stop: () => { stopped = true; clearTimeout(timer); } };
}
