// The chosen action of a run: its facts (what it needs and what needs it by name), its
// failed tries, its error with the place in the statement, and its log, followed live
// without disturbing the reader (new lines are added; the end is followed only by a reader
// at the end; a selection stays) and searchable.

import { badge, el, fact, present } from '../lib/dom.js';
import { ACTION_STATES, RESTARTABLE } from '../lib/order.js';
import { can } from '../lib/session.js';
import { errorPlace } from '../lib/errors.js';
import { localTime, took, zoneName } from '../lib/time.js';

/** @typedef {import('../lib/types.js').ActionRun} ActionRun
 *  @typedef {import('../lib/types.js').Instance} Instance */

export class ActionDetail {
  /** @param {(id: number, how: {focus: boolean}) => void} choose called when another action is chosen here
   * @param {(what: 'restart' | 'from', id: number) => void} act called by the action's buttons */
  constructor(choose, act) {
    this.choose = choose;
    this.act = act;
    this.element = el('section', { class: 'card detail', id: 'detail', 'aria-live': 'off' });
    /** @type {number | null} */
    this.id = null;
    this.sig = '';
    this.head = el('div', {});
    this.log = el('pre', { id: 'log', class: 'log', tabindex: 0 });
    this.matches = el('span', { class: 'muted', id: 'log-matches', 'aria-live': 'polite' });
    this.search = /** @type {HTMLInputElement} */ (el('input', {
      type: 'search', id: 'log-search', placeholder: 'search the log', 'aria-label': 'search the log',
      oninput: () => { this.current = 0; this.writeLog(this.lines, true); },
      onkeydown: (/** @type {KeyboardEvent} */ ev) => {
        if (ev.key !== 'Enter') return;
        ev.preventDefault();
        this.current += ev.shiftKey ? -1 : 1;
        this.writeLog(this.lines, true);
      },
    }));
    /** The log lines shown. @type {string[]} */
    this.lines = [];
    /** Which match of the search is the current one. */
    this.current = 0;
    this.element.append(el('p', { class: 'muted' }, 'Choose an action to see its log and error.'));
  }

  /** Shows action `a` of `inst` (nothing chosen: a hint); writes only what changed.
   * @param {ActionRun | undefined} a @param {Instance} inst */
  show(a, inst) {
    if (!a) {
      if (this.id !== null) this.element.replaceChildren(el('p', { class: 'muted' }, 'Choose an action to see its log and error.'));
      this.id = null;
      return;
    }
    const sig = JSON.stringify([a.state, a.start, a.end, a.error, a.rowsRead, a.rowsWritten, a.rowsUpdated,
      a.rowsDeleted, a.tries?.length, a.retryAt, a.waitingFor, a.host, a.deployId, a.dependsOn, inst.state]);
    if (a.actionId !== this.id) {
      this.id = a.actionId;
      this.sig = '';
      this.lines = [];
      this.search.value = '';
      this.log.textContent = '';
      this.element.replaceChildren(this.head,
        el('div', { class: 'log-head' }, el('h2', {}, 'Log'), this.search, this.matches),
        this.log);
    }
    if (sig !== this.sig) {
      this.sig = sig;
      this.head.replaceChildren(...present(this.facts(a, inst)));
    }
    this.writeLog(a.log ?? [], false);
  }

  /** What the detail says above the log.
   * @param {ActionRun} a @param {Instance} inst
   * @returns {(HTMLElement | null)[]} */
  facts(a, inst) {
    const byId = new Map(inst.actions.map((x) => [x.actionId, x]));
    const named = (/** @type {number[]} */ ids) => ids.flatMap((aid, i) => [i ? ', ' : '',
      byId.has(aid)
        ? el('button', { type: 'button', class: 'link', 'data-goto': aid, onclick: () => this.choose(aid, { focus: true }) }, byId.get(aid)?.name ?? String(aid))
        : `action ${aid}`]);
    const needs = (a.dependsOn ?? []).filter((aid) => byId.has(aid));
    const neededBy = inst.actions.filter((x) => (x.dependsOn ?? []).includes(a.actionId)).map((x) => x.actionId);
    const rows = `${a.rowsRead} read, ${a.rowsWritten} written, ${a.rowsUpdated} updated, ${a.rowsDeleted} deleted`;
    /** @type {(HTMLElement | null)[]} */
    const parts = [
      el('h2', { id: 'detail-title' }, `${a.name}`, el('span', { class: 'muted' }, ` action ${a.actionId}`)),
      el('div', { class: 'summary' },
        fact('State', [badge(a.state), ' ', ACTION_STATES[a.state] ?? '']),
        fact('Module', a.module),
        fact('Sheet', el('a', { href: `#/sheets/${a.sheetId}?node=${a.actionId}` }, `sheet ${a.sheetId}`)),
        fact('Host', a.host),
        a.waitingFor ? fact('Waits for', [`${a.waitingFor.schema ? `${a.waitingFor.schema}.` : ''}${a.waitingFor.object}, written by `,
          el('a', { href: `#/runs/${a.waitingFor.batchInstanceId}?action=${a.waitingFor.actionId}` },
            `run ${a.waitingFor.batchInstanceId}, action ${a.waitingFor.actionId}`)], { id: 'waiting-for' }) : null,
        a.deployId ? fact('Definitions', el('a', { href: `#/deploys?before=${a.deployId + 1}`, id: 'deploy' }, `deploy ${a.deployId}`)) : null,
        fact(`Start (${zoneName()})`, localTime(a.start, true) || '—', { class: 'time' }),
        fact('End', localTime(a.end, true) || '—', { class: 'time' }),
        fact('Took', a.start ? took(a.start, a.end) : '—'),
        fact('Rows', rows, { id: 'rows' }),
        needs.length ? fact('Needs', named(needs), { id: 'needs' }) : null,
        neededBy.length ? fact('Needed by', named(neededBy), { id: 'needed-by' }) : null,
        a.retryAt ? fact('Tried again', localTime(a.retryAt), { id: 'retry-at' }) : null),
      can('operate') ? el('div', { class: 'actions-bar' },
        RESTARTABLE.includes(inst.state) && ['E', 'H', 'S'].includes(a.state)
          ? el('button', { type: 'button', class: 'secondary', id: 'restart-action', onclick: () => this.act('restart', a.actionId) }, 'Restart this action…')
          : null,
        el('button', { type: 'button', class: 'secondary', id: 'run-from', onclick: () => this.act('from', a.actionId) }, 'Run again from here…')) : null,
    ];
    if (a.tries?.length) {
      parts.push(el('h2', {}, `Failed tries (${a.tries.length})`),
        el('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'failed tries' }, el('table', { id: 'tries' },
          el('thead', {}, el('tr', {}, el('th', {}, 'Try'), el('th', {}, 'Host'), el('th', {}, 'Ended'),
            el('th', {}, 'Tried again'), el('th', {}, 'Error'))),
          el('tbody', {}, a.tries.map((t) => el('tr', {},
            el('td', { class: 'num' }, t.counted ? String(t.attempt) : `${t.attempt} (not counted)`),
            el('td', {}, t.host ?? '—'),
            el('td', {}, localTime(t.end)),
            el('td', {}, localTime(t.retryAt)),
            el('td', {}, el('pre', { class: 'error' }, t.error))))))));
    }
    if (a.error) {
      parts.push(el('h2', {}, 'Error'), el('pre', { class: 'error', id: 'error' }, a.error));
      const place = errorPlace(a.error, a.log);
      if (place && place[1] >= 0) {
        const [sql, from, to] = place;
        parts.push(el('p', { class: 'muted' }, 'Where the statement went wrong:'),
          el('pre', { id: 'error-place' }, sql.slice(0, from), el('mark', {}, sql.slice(from, to)), sql.slice(to)));
      }
    }
    return parts;
  }

  /** Writes the log: new lines added to what is shown (a reader's selection and place stay;
   * one at the end follows the end); with a search, every match marked and the current one
   * scrolled to.
   * @param {string[]} lines @param {boolean} again whether the search changed */
  writeLog(lines, again) {
    const pre = this.log;
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    const term = this.search.value.trim().toLowerCase();
    const shown = this.lines;
    const grows = shown.length > 0 && lines.length > shown.length && lines[shown.length - 1] === shown[shown.length - 1];
    if (term) {
      if (!again && lines.length === shown.length && lines[lines.length - 1] === shown[shown.length - 1]) return;
      this.lines = lines;
      // New lines of a running action: marked too, the reader's place kept.
      const place = pre.scrollTop;
      this.mark(term, again);
      if (!again) pre.scrollTop = place;
      return;
    }
    this.matches.textContent = '';
    if (again || !grows) {
      if (again || !pre.firstChild || lines.length !== shown.length || lines[lines.length - 1] !== shown[shown.length - 1]) {
        pre.textContent = lines.length ? lines.join('\n') : '(nothing logged)';
      }
    } else {
      pre.append(`\n${lines.slice(shown.length).join('\n')}`);
    }
    this.lines = lines;
    if (grows && atEnd) pre.scrollTop = pre.scrollHeight;
  }

  /** The log with every match of `term` marked (any case), the current one scrolled to when
   * `scroll`.
   * @param {string} term @param {boolean} [scroll] */
  mark(term, scroll = true) {
    const pattern = new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi');
    /** @type {HTMLElement[]} */
    const marks = [];
    /** @type {(Node | string)[]} */
    const nodes = [];
    this.lines.forEach((line, n) => {
      if (n) nodes.push('\n');
      let at = 0;
      for (const found of line.matchAll(pattern)) {
        const i = found.index ?? 0;
        if (i > at) nodes.push(line.slice(at, i));
        const m = el('mark', {}, found[0]);
        marks.push(m);
        nodes.push(m);
        at = i + found[0].length;
      }
      if (at < line.length) nodes.push(line.slice(at));
    });
    this.log.replaceChildren(...nodes);
    if (!marks.length) {
      this.matches.textContent = 'no match';
      return;
    }
    this.current = ((this.current % marks.length) + marks.length) % marks.length;
    const cur = marks[this.current];
    cur.classList.add('current');
    this.matches.textContent = `${this.current + 1} of ${marks.length}`;
    // The log is positioned (app.css): a mark's offsetTop counts from the log's top.
    if (scroll) this.log.scrollTop = cur.offsetTop - this.log.clientHeight / 2;
  }
}
