// Runs by day drawn as cells: one a day, coloured by the state of the day's newest run
// (outlined when another run of the day failed), empty days drawn faint. One SVG a batch:
// a strip (one row, the days left to right) or a calendar (weeks as columns, Monday on top).

import { svg } from './dom.js';
import { weekday } from './days.js';
import { duration } from './time.js';

/** @typedef {{day: string, runs: number, failed: number, batchInstanceId: number, state: string, seconds?: number}} RunDay */

/** What a cell says of its day.
 * @param {string} day @param {RunDay | undefined} c */
export function cellText(day, c) {
  if (!c) return `${day}: no run`;
  const runs = c.runs === 1 ? '1 run' : `${c.runs} runs`;
  const failedToo = c.failed && c.state !== 'failed' ? `, ${c.failed} failed` : c.failed > 1 ? ` (${c.failed} failed)` : '';
  return `${day}: ${runs}${failedToo}, the newest ${c.state}${c.seconds !== undefined ? ` in ${duration(c.seconds * 1000)}` : ''}`;
}

/** The days `days` as cells, those of `cells` coloured; a click on one opens its newest run
 * (`open`), hovering says what it holds (`hover`).
 * @param {string[]} days
 * @param {Map<string, RunDay>} cells
 * @param {{layout: 'strip' | 'weeks', size: number, label: string, open: (run: number) => void, hover?: (text: string) => void, titles?: boolean}} how
 * @returns {SVGElement} */
export function heat(days, cells, how) {
  const { size } = how;
  const gap = Math.max(1, Math.round(size / 6));
  const step = size + gap;
  const first = days.length ? weekday(days[0]) : 0;
  const place = (/** @type {number} */ i) => (how.layout === 'weeks'
    ? [Math.floor((i + first) / 7) * step, ((i + first) % 7) * step]
    : [i * step, 0]);
  const rects = days.map((day, i) => {
    const c = cells.get(day);
    const [x, y] = place(i);
    const cls = c ? `cell st-${c.state}${c.failed && c.state !== 'failed' ? ' some-failed' : ''}` : 'cell none';
    const r = svg('rect', { x, y, width: size, height: size, rx: 2, class: cls, 'data-day': day, ...(c ? { 'data-run': c.batchInstanceId } : {}) });
    if (how.titles) r.append(svg('title', {}, cellText(day, c)));
    return r;
  });
  const columns = how.layout === 'weeks' ? Math.ceil((days.length + first) / 7) : days.length;
  const rows = how.layout === 'weeks' ? 7 : 1;
  // The keyboard: one tab stop, the arrows move a day (a week up and down in the calendar),
  // Home and End to the ends, Enter opens the day's newest run; the day is said as pointing
  // at it says it.
  let current = days.length - 1;
  const move = (/** @type {number} */ to) => {
    rects[current]?.classList.remove('current');
    current = Math.max(0, Math.min(days.length - 1, to));
    rects[current]?.classList.add('current');
    if (how.hover) how.hover(cellText(days[current], cells.get(days[current])));
  };
  const drawn = svg('svg', {
    class: 'heat',
    width: Math.max(1, columns * step - gap),
    height: rows * step - gap,
    role: 'img',
    tabindex: 0,
    'aria-label': `${how.label}; the arrows move from day to day, Enter opens the day's run`,
    onfocus: () => move(current),
    onblur: () => rects[current]?.classList.remove('current'),
    onkeydown: (/** @type {KeyboardEvent} */ ev) => {
      const week = how.layout === 'weeks' ? 7 : 1;
      const to = /** @type {Record<string, number>} */ ({
        ArrowLeft: current - (how.layout === 'weeks' ? 7 : 1),
        ArrowRight: current + (how.layout === 'weeks' ? 7 : 1),
        ArrowUp: current - (week === 7 ? 1 : 0),
        ArrowDown: current + (week === 7 ? 1 : 0),
        Home: 0,
        End: days.length - 1,
      })[ev.key];
      if (to !== undefined) {
        ev.preventDefault();
        move(to);
      } else if (ev.key === 'Enter') {
        const c = cells.get(days[current]);
        if (c) how.open(c.batchInstanceId);
      }
    },
    onclick: (/** @type {MouseEvent} */ ev) => {
      const run = /** @type {SVGElement} */ (ev.target).dataset?.run;
      if (run) how.open(Number(run));
    },
    onpointerover: (/** @type {PointerEvent} */ ev) => {
      const day = /** @type {SVGElement} */ (ev.target).dataset?.day;
      if (day && how.hover) how.hover(cellText(day, cells.get(day)));
    },
  }, rects);
  return drawn;
}

/** The days of `list` by day.
 * @param {RunDay[]} list
 * @returns {Map<string, RunDay>} */
export function byDay(list) {
  return new Map(list.map((d) => [d.day, d]));
}

/** How many of `days` had a run, and how many of those failed at last, in words.
 * @param {string[]} days @param {Map<string, RunDay>} cells */
export function daysSummary(days, cells) {
  let ran = 0;
  let failed = 0;
  for (const d of days) {
    const c = cells.get(d);
    if (c) { ran += 1; if (c.state === 'failed') failed += 1; }
  }
  return `${ran} of ${days.length} days with runs, ${failed} ending failed`;
}
