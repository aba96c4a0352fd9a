// A run's actions on a timeline with a clock: one row an action in the order of the
// dependencies, a bar from start to end on a time axis in the page's zone (ticks labelled, to
// the millisecond when zoomed in), a marker for what never started, the critical path
// marked, zoom to a time range (buttons, or a drag on the axis). Rows are kept between
// updates and only what changed is written, so that scrolling, the selection and the
// keyboard focus stay where they were while a run goes on.

import { badge, el } from '../lib/dom.js';
import { ACTION_STATES, criticalPath, ordered, shows } from '../lib/order.js';
import { ticks, precision } from '../lib/axis.js';
import { clockTime, duration, parseTime, zoneName, zoneOffset } from '../lib/time.js';

/** @typedef {import('../lib/types.js').ActionRun} ActionRun
 *  @typedef {import('../lib/types.js').Instance} Instance */

/** @typedef {object} Row
 * @property {HTMLElement} row
 * @property {HTMLElement} label
 * @property {HTMLElement} bar
 * @property {HTMLElement} never
 * @property {string} sig what the row shows of its action, to write only changes */

/** The states of a run that go on. */
export const ONGOING = new Set(['waiting', 'running']);

/** The least span the zoom shows, in milliseconds. */
const LEAST_SPAN = 10;

export class Timeline {
  /** @param {(id: number, how: {focus: boolean}) => void} choose called when a row is chosen */
  constructor(choose) {
    this.choose = choose;
    /** @type {Map<number, Row>} */
    this.rows = new Map();
    /** @type {number[]} */
    this.order = [];
    /** The time range shown, epoch milliseconds; null for the whole run.
     * @type {[number, number] | null} */
    this.range = null;
    /** @type {Instance | null} */
    this.inst = null;
    /** @type {number | null} */
    this.selected = null;
    this.filter = 'all';
    this.axis = el('div', { class: 'tl-axis', 'aria-hidden': 'true' });
    this.zoomText = el('span', { class: 'muted', id: 'zoom-range' });
    this.zone = el('div', { class: 'tl-label muted', id: 'tl-zone' });
    this.list = el('div', {
      class: 'timeline',
      id: 'timeline',
      role: 'listbox',
      'aria-label': 'the actions of the run',
      onkeydown: (/** @type {KeyboardEvent} */ ev) => this.key(ev),
      onclick: (/** @type {MouseEvent} */ ev) => {
        const row = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (ev.target).closest('.tl-row'));
        if (row) this.choose(Number(row.dataset.action), { focus: true });
      },
    });
    this.dragAxis();
    const button = (/** @type {string} */ id, /** @type {string} */ text, /** @type {() => void} */ f) => el('button', { type: 'button', class: 'secondary small', id, onclick: f }, text);
    this.element = el('section', { class: 'card', id: 'actions' },
      el('div', { class: 'tl-head' },
        el('h2', {}, 'Timeline'),
        el('div', { class: 'tl-zoom', role: 'group', 'aria-label': 'zoom' },
          button('zoom-in', 'Zoom in', () => this.zoom(0.5)),
          button('zoom-out', 'Zoom out', () => this.zoom(2)),
          button('zoom-whole', 'Whole run', () => { this.range = null; this.redraw(); }),
          this.zoomText)),
      el('p', { class: 'muted legend' }, 'Rows follow the dependencies (what an action needs comes above it); bars run from start to end; ○ never started; ◆ the critical path (what the run waited for). For the action chosen, what it needs is marked ▲ and what needs it ▼. Drag across the axis to zoom in.'),
      el('div', { class: 'tl-axis-row' }, this.zone, this.axis),
      this.list);
  }

  /** The run's span: its start to its end, the last action's end, or now.
   * @param {Instance} inst @param {number} now
   * @returns {[number, number]} */
  whole(inst, now) {
    const t0 = parseTime(inst.start);
    let t1 = inst.end ? parseTime(inst.end) : now;
    for (const a of inst.actions) {
      if (a.start) t1 = Math.max(t1, a.end ? parseTime(a.end) : now);
    }
    return [t0, Math.max(t1, t0 + 1)];
  }

  /** Shows `inst`: rows made for new actions, changed rows written, the order kept unless
   * the dependencies change it.
   * @param {Instance} inst @param {number | null} selected @param {string} filter */
  update(inst, selected, filter) {
    this.inst = inst;
    this.selected = selected;
    this.filter = filter;
    const order = ordered(inst.actions).map((a) => a.actionId);
    for (const a of inst.actions) if (!this.rows.has(a.actionId)) this.rows.set(a.actionId, this.makeRow(a));
    const known = new Set(order);
    for (const [aid, r] of this.rows) {
      if (!known.has(aid)) { r.row.remove(); this.rows.delete(aid); }
    }
    if (order.length !== this.order.length || order.some((aid, i) => aid !== this.order[i])) {
      // Moving a focused row would drop the focus: it is given back.
      const focused = document.activeElement;
      this.list.append(...order.map((aid) => /** @type {Row} */ (this.rows.get(aid)).row));
      if (focused instanceof HTMLElement && focused !== document.activeElement) focused.focus({ preventScroll: true });
      this.order = order;
    }
    this.redraw();
  }

  /** Writes every row's state, marks and bar for the current range. */
  redraw() {
    const inst = this.inst;
    if (!inst) return;
    const now = Date.now();
    const [w0, w1] = this.whole(inst, now);
    const [r0, r1] = this.range ?? [w0, w1];
    const width = Math.max(1, r1 - r0);
    const chosen = inst.actions.find((a) => a.actionId === this.selected);
    const needed = new Set(chosen?.dependsOn ?? []);
    const critical = ONGOING.has(inst.state) ? new Set() : criticalPath(inst.actions);
    let tabbable = false;
    for (const a of inst.actions) {
      const r = /** @type {Row} */ (this.rows.get(a.actionId));
      const sig = `${a.state}|${a.start}|${a.end}|${a.waitingFor?.object ?? ''}`;
      if (sig !== r.sig) this.writeRow(r, a, sig);
      const follows = this.selected !== null && (a.dependsOn ?? []).includes(this.selected);
      const isSelected = a.actionId === this.selected;
      const cls = r.row.classList;
      cls.toggle('selected', isSelected);
      cls.toggle('needed', needed.has(a.actionId));
      cls.toggle('follows', follows);
      cls.toggle('critical', critical.has(a.actionId));
      r.row.setAttribute('aria-selected', String(isSelected));
      r.row.hidden = !shows(this.filter, a.state);
      // One row takes the Tab key: the chosen one, else the first shown.
      if (isSelected && !r.row.hidden) tabbable = true;
      r.row.tabIndex = isSelected ? 0 : -1;
      if (a.start) {
        const s = parseTime(a.start);
        const e = a.end ? parseTime(a.end) : now;
        const from = Math.max(s, r0);
        const to = Math.min(Math.max(e, s), r1);
        r.bar.hidden = to < from || e < r0 || s > r1;
        r.bar.style.left = `${((from - r0) / width) * 100}%`;
        r.bar.style.width = `${(Math.max(0, to - from) / width) * 100}%`;
      }
    }
    if (!tabbable) {
      const first = this.order.map((aid) => this.rows.get(aid)).find((r) => r && !r.row.hidden);
      if (first) first.row.tabIndex = 0;
    }
    this.drawAxis(r0, r1);
    this.zoomText.textContent = this.range ? `${duration(r1 - r0)} of ${duration(w1 - w0)} shown` : '';
  }

  /** A row for `a`, written by `writeRow` at the next redraw.
   * @param {ActionRun} a
   * @returns {Row} */
  makeRow(a) {
    const label = el('div', { class: 'tl-label' });
    const bar = el('div', { class: 'tl-bar' });
    const never = el('span', { class: 'tl-never' });
    const row = el('div', {
      class: 'tl-row',
      role: 'option',
      'data-action': a.actionId,
      tabindex: -1,
      'aria-selected': 'false',
    }, label, el('div', { class: 'tl-track' }, bar, never));
    return { row, label, bar, never, sig: '' };
  }

  /** Writes what the row says of `a`: its state, name, module, what it waits for.
   * @param {Row} r @param {ActionRun} a @param {string} sig */
  writeRow(r, a, sig) {
    r.sig = sig;
    r.row.dataset.state = a.state;
    const words = ACTION_STATES[a.state] ?? a.state;
    const waits = a.waitingFor ? `waits for ${a.waitingFor.schema ? `${a.waitingFor.schema}.` : ''}${a.waitingFor.object}` : '';
    r.label.replaceChildren(badge(a.state), ' ', a.name, el('span', { class: 'module' }, a.module),
      ...(waits ? [el('span', { class: 'waits' }, waits)] : []));
    r.label.title = `${a.name} (${a.module}): ${words}${waits ? `, ${waits}` : ''}`;
    r.bar.className = `tl-bar st-${a.state}`;
    r.bar.title = `${a.name}: ${words}`;
    r.bar.hidden = !a.start;
    r.never.hidden = Boolean(a.start);
    r.never.textContent = a.start ? '' : a.state === 'S' ? '○ skipped, never started' : a.state === 'H' ? '○ halted before it started' : '○ not started';
  }

  /** The axis from `r0` to `r1`: ticks at a round step, labelled in the page's zone.
   * @param {number} r0 @param {number} r1 */
  drawAxis(r0, r1) {
    const most = Math.max(2, Math.floor((this.axis.clientWidth || 600) / 90));
    const { step, ticks: at } = ticks(r0, r1, most, -zoneOffset(r0));
    const p = precision(step);
    const width = Math.max(1, r1 - r0);
    this.axis.replaceChildren(...at.map((t) => {
      const share = (t - r0) / width;
      // A label near the right end reads leftwards from its tick, so that it is not cut.
      const tick = el('span', { class: share > 0.85 ? 'tl-tick end' : 'tl-tick' }, clockTime(t, p));
      tick.style.left = `${share * 100}%`;
      return tick;
    }));
    const zone = `time (${zoneName()})`;
    if (this.zone.textContent !== zone) this.zone.textContent = zone;
  }

  /** Zooms by `factor` around the chosen action's middle, else the range's.
   * @param {number} factor */
  zoom(factor) {
    if (!this.inst) return;
    const [w0, w1] = this.whole(this.inst, Date.now());
    const [r0, r1] = this.range ?? [w0, w1];
    const chosen = this.inst.actions.find((a) => a.actionId === this.selected && a.start);
    const mid = chosen ? (parseTime(chosen.start) + (chosen.end ? parseTime(chosen.end) : Date.now())) / 2 : (r0 + r1) / 2;
    const half = Math.max(LEAST_SPAN, (r1 - r0) * factor) / 2;
    const a = Math.max(w0, mid - half);
    const b = Math.min(w1, mid + half);
    this.range = b - a >= w1 - w0 ? null : [a, b];
    this.redraw();
  }

  /** A drag across the axis zooms to the range dragged over. */
  dragAxis() {
    /** @type {number | null} */
    let from = null;
    const at = (/** @type {PointerEvent} */ ev) => {
      const box = this.axis.getBoundingClientRect();
      return Math.min(1, Math.max(0, (ev.clientX - box.left) / Math.max(1, box.width)));
    };
    this.axis.addEventListener('pointerdown', (ev) => { from = at(ev); this.axis.setPointerCapture(ev.pointerId); });
    this.axis.addEventListener('pointerup', (ev) => {
      if (from === null || !this.inst) return;
      const to = at(ev);
      const [w0, w1] = this.whole(this.inst, Date.now());
      const [r0, r1] = this.range ?? [w0, w1];
      const [a, b] = [Math.min(from, to), Math.max(from, to)];
      from = null;
      if ((b - a) * (r1 - r0) < LEAST_SPAN) return;
      this.range = [r0 + a * (r1 - r0), r0 + b * (r1 - r0)];
      this.redraw();
    });
  }

  /** The keyboard in the list: arrows, Home and End move between the rows shown; Enter or
   * Space chooses.
   * @param {KeyboardEvent} ev */
  key(ev) {
    const row = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (ev.target).closest('.tl-row'));
    if (!row) return;
    const shown = this.order.map((aid) => /** @type {Row} */ (this.rows.get(aid)).row).filter((r) => !r.hidden);
    const i = shown.indexOf(row);
    /** @type {HTMLElement | undefined} */
    let next;
    if (ev.key === 'ArrowDown') next = shown[Math.min(shown.length - 1, i + 1)];
    else if (ev.key === 'ArrowUp') next = shown[Math.max(0, i - 1)];
    else if (ev.key === 'Home') next = shown[0];
    else if (ev.key === 'End') next = shown[shown.length - 1];
    else if (ev.key === 'Enter' || ev.key === ' ') {
      ev.preventDefault();
      this.choose(Number(row.dataset.action), { focus: true });
      return;
    } else return;
    ev.preventDefault();
    if (next) {
      row.tabIndex = -1;
      next.tabIndex = 0;
      next.focus();
    }
  }

  /** Scrolls to the row of action `id` and gives it the focus.
   * @param {number} id */
  reveal(id) {
    const r = this.rows.get(id);
    if (!r) return;
    r.row.scrollIntoView({ block: 'center' });
    r.row.focus({ preventScroll: true });
  }
}
