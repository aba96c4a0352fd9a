// The schedules: each batch's next starts across clock changes, missed starts, recent runs.

import { badge, el, say, show } from '../lib/dom.js';
import { call } from '../lib/api.js';
import { duration, localTime, planned, zoneName } from '../lib/time.js';

/** @typedef {import('../lib/types.js').BatchItem} BatchItem */
/** @typedef {import('../lib/types.js').NextRuns} NextRuns */
/** @typedef {import('../lib/types.js').Listed} Listed */

/** How many batches the schedules view shows with their next starts (each asks twice). */
const BATCHES = 50;

/** Why a planned start passed, in words.
 * @param {string} reason */
function missedReason(reason) {
  if (reason === 'running') return 'the previous run had not finished (ifRunning: skip)';
  if (reason === 'clockGap') return 'the clocks skip this time (springGap: skip)';
  if (reason === 'paused') return 'the batch was paused';
  if (reason.startsWith('cannotStart: ')) return `it could not start: ${reason.slice(13)}`;
  if (reason.startsWith('after: ')) return `the ${reason.slice(7)} (afterTimeout: skip)`;
  return reason;
}

export async function schedulesView() {
  /** @type {{batches: BatchItem[]}} */
  const { batches } = await call('ListBatches', {});
  const shown = batches.slice(0, BATCHES);
  const details = await Promise.all(shown.map(async (b) => {
    /** @type {[NextRuns, {instances: Listed[]}]} */
    const [next, runs] = await Promise.all([
      call('NextRuns', { batchId: b.batchId, count: 5 }),
      call('ListBatchInstances', { batchId: b.batchId, limit: 5 }),
    ]);
    return { b, next, runs: runs.instances };
  }));
  const cards = details.map(({ b, next, runs }) => el('section', { class: 'card schedule', 'data-batch': b.batchId },
    el('h2', {}, el('a', { href: `#/batches/${b.batchId}`, class: 'batch-link' }, b.name), ' ', b.enabled ? null : el('span', { class: 'state state-D' }, 'disabled'),
      b.paused ? el('span', { class: 'state state-H', title: `paused by ${b.pausedBy ?? '?'} at ${localTime(b.pausedAt)}` }, 'paused') : null),
    el('div', { class: 'summary' },
      el('div', {}, el('span', {}, 'Schedule'), el('span', { class: 'schedule-text' }, next.schedule)),
      el('div', {}, el('span', {}, 'Zone'), el('span', {}, next.timeZone)),
      el('div', {}, el('span', {}, 'Spring gap'), el('span', {}, next.springGap)),
      el('div', {}, el('span', {}, 'Autumn overlap'), el('span', {}, next.autumnOverlap))),
    next.problem ? el('p', { class: 'problem' }, next.problem) : null,
    el('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'next starts' }, el('table', { class: 'next-starts' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Planned'), el('th', {}, `Runs at (${next.timeZone})`), el('th', {}, 'UTC'), el('th', { class: 'wide' }, 'Offset'), el('th', {}, 'Clock change'))),
      el('tbody', {}, next.starts.map((st) => el('tr', { class: st.clockChange ? 'clock-change' : '' },
        el('td', {}, st.planned, st.secondOccurrence ? ' (second)' : ''),
        el('td', {}, st.local), el('td', {}, st.utc), el('td', { class: 'wide' }, st.utcOffset ?? ''),
        el('td', { class: 'change' }, st.clockChange ?? '')))))),
    b.missed.length ? [el('h2', {}, 'Missed starts'), el('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'missed starts' }, el('table', { class: 'missed' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Planned'), el('th', {}, 'Why'), el('th', {}, `Passed at (${zoneName()})`))),
      el('tbody', {}, b.missed.map((ms) => el('tr', {},
        el('td', {}, ms.planned), el('td', { class: 'why' }, missedReason(ms.reason)), el('td', {}, localTime(ms.decided)))))))] : null,
    el('h2', {}, 'Recent scheduled runs'),
    runs.length ? el('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'recent scheduled runs' }, el('table', { class: 'recent' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Run'), el('th', {}, 'Planned'), el('th', {}, 'State'), el('th', {}, 'Late'))),
      el('tbody', {}, runs.map((i) => el('tr', { 'data-instance': i.batchInstanceId },
        el('td', { class: 'num' }, el('a', { href: `#/runs/${i.batchInstanceId}` }, i.batchInstanceId)),
        el('td', {}, planned(i)), el('td', {}, badge(i.state)),
        el('td', { class: i.late ? 'late' : 'muted' }, i.late ? `late ${duration((i.lateSeconds ?? 0) * 1000)}` : 'on time')))))) : el('p', { class: 'muted' }, 'No scheduled run yet.')));
  show(el('h1', {}, 'Schedules'),
    batches.length > BATCHES ? el('p', { class: 'muted' }, `The first ${BATCHES} of ${batches.length} batches, by name.`) : null,
    cards.length ? cards : el('p', { class: 'muted' }, 'No batch is scheduled.'));
  say('');
  return null;
}
