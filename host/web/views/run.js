// One run, failures first: its state and what it was asked to run, Halt (asked first) and
// Restart, the count of its actions in each state as filters, the failed actions at the top
// with their error's first line, the timeline, and the chosen action's detail. Followed live
// (one wait per change) while it goes on; each update writes only what changed. The address
// names the action chosen and the filter (`#/runs/7?action=12&show=failed`); a link to an
// action scrolls to it and gives it the keyboard focus.

import { badge, drawn, el, fact, say, show } from '../lib/dom.js';
import { call, Unauthorized, Unreachable, reconnecting } from '../lib/api.js';
import { can, failed } from '../lib/session.js';
import { ACTION_FILTERS, ACTION_STATES, RESTARTABLE, firstLine, ordered, shows, stateCounts } from '../lib/order.js';
import { duration, localTime, planned, took, zoneName } from '../lib/time.js';
import { ONGOING, Timeline } from './run-timeline.js';
import { ActionDetail } from './run-action.js';
import { ask } from '../lib/confirm.js';
import { startRun } from '../lib/actions.js';

/** @typedef {import('../lib/types.js').Instance} Instance
 *  @typedef {import('../lib/types.js').Shown} Shown */

/** The words of an element's type. */
const ELEMENTS = /** @type {Record<string, string>} */ ({ S: 'sheet', F: 'folder', A: 'action', B: 'batch' });

/** The run's logs as one text, action by action in the order of the dependencies.
 * @param {Instance} inst
 * @returns {string} */
export function logsText(inst) {
  const out = [`run ${inst.batchInstanceId} (${inst.batchName}): ${inst.state}, started ${localTime(inst.start, true)}${inst.end ? `, ended ${localTime(inst.end, true)}` : ''}`];
  for (const a of ordered(inst.actions)) {
    out.push('', `== action ${a.actionId} ${a.name} (${a.module}, sheet ${a.sheetId}): ${ACTION_STATES[a.state] ?? a.state}${a.start ? `, ${localTime(a.start, true)} to ${a.end ? localTime(a.end, true) : 'now'}` : ''}`);
    out.push(...(a.log ?? []));
    for (const t of a.tries ?? []) out.push(`try ${t.attempt} failed at ${localTime(t.end, true)}: ${t.error}`);
    if (a.error) out.push(`error: ${a.error}`);
  }
  return `${out.join('\n')}\n`;
}

/** Shows run `id`.
 * @param {number} id
 * @param {URLSearchParams} params `action` (the one chosen), `show` (a filter's name)
 * @returns {Shown} */
export function runView(id, params) {
  /** @type {Instance | null} */
  let inst = null;
  /** @type {number | null} */
  let selected = Number(params.get('action')) || null;
  let filter = params.get('show') ?? 'all';
  if (!ACTION_FILTERS.some(([n]) => n === filter)) filter = 'all';
  let stopped = false;
  let message = '';
  let revealed = false;

  const heading = el('h1', {});
  const facts = el('div', { class: 'summary', id: 'run-facts' });
  const bar = el('div', { class: 'actions-bar' });
  const note = el('p', { class: 'muted', id: 'message', role: 'status' });
  const filters = el('div', { class: 'state-filters', role: 'group', 'aria-label': 'show actions by state', id: 'state-filters' });
  const failures = el('section', { class: 'card failures', id: 'failures', hidden: true });
  let failuresSig = '';
  let factsSig = '';
  let barSig = '';

  /** Chooses action `aid`: marked in the timeline, its detail shown, the address naming it.
   * @param {number} aid @param {{focus: boolean, reveal?: boolean}} how */
  const choose = (aid, how) => {
    selected = aid;
    // An action the filter hides is shown: the filter goes back to all.
    const a = inst?.actions.find((x) => x.actionId === aid);
    if (how.reveal && a && !shows(filter, a.state)) filter = 'all';
    address();
    update();
    if (how.reveal) timeline.reveal(aid);
    else if (how.focus) timeline.rows.get(aid)?.row.focus({ preventScroll: true });
  };
  const timeline = new Timeline(choose);
  const detail = new ActionDetail((aid, how) => choose(aid, { ...how, reveal: true }), (what, aid) => actOn(what, aid));

  /** The address of what is shown, without a new history entry. */
  const address = () => {
    const q = new URLSearchParams();
    if (selected) q.set('action', String(selected));
    if (filter !== 'all') q.set('show', filter);
    history.replaceState(null, '', `#/runs/${id}${q.size ? `?${q}` : ''}`);
  };

  /** Sends `command` for this run (with `more` in its payload); says how it went.
   * @param {string} command @param {string} done @param {Record<string, any>} [more] */
  const act = async (command, done, more = {}) => {
    try {
      await call(command, { batchInstanceId: id, ...more });
      message = done;
    } catch (e) {
      if (e instanceof Unauthorized) { failed(e); return; }
      message = e instanceof Error ? e.message : String(e);
    }
    barSig = '';
    update();
    if (command === 'RestartBatchInstance') follow();
  };

  /** Halt, asked first. */
  const halt = async () => {
    if (!inst) return;
    const yes = await ask({
      id: 'halt',
      title: `Halt run ${id}`,
      text: `Halt run ${id} (${inst.batchName})? Running actions stop and roll back; nothing new starts. A restart can run what is left later.`,
      confirm: `Halt run ${id}`,
      danger: true,
    });
    if (yes) act('HaltBatchInstance', 'Halt asked.');
    else document.getElementById('halt')?.focus();
  };

  /** Restart (the whole run, or `only` one action and what it held back), asked first: with
   * the definitions deployed now, or as the run ran.
   * @param {number} [only] */
  const restart = async (only) => {
    if (!inst) return;
    const again = inst.actions.filter((a) => (only ? a.actionId === only : ['E', 'H', 'S'].includes(a.state)));
    const deploys = [...new Set(inst.actions.map((a) => a.deployId).filter((d) => d !== undefined))];
    const now = /** @type {HTMLInputElement} */ (el('input', { type: 'radio', name: 'restart-how', id: 'restart-now', value: 'now', checked: true }));
    const ran = /** @type {HTMLInputElement} */ (el('input', { type: 'radio', name: 'restart-how', id: 'restart-as-started', value: 'asStarted' }));
    const what = only
      ? `Restart action ${again[0]?.name ?? only} of run ${id}: it runs again, with what was skipped or halted because of it; nothing else.`
      : `Restart run ${id} (${inst.batchName}): runs again what failed, was halted or interrupted (${again.length} action${again.length === 1 ? '' : 's'} with what was skipped because of them), never what finished.`;
    const yes = await ask({
      id: 'restart',
      title: only ? `Restart ${again[0]?.name ?? `action ${only}`}` : `Restart run ${id}`,
      text: what,
      confirm: 'Restart',
      body: [el('fieldset', {},
        el('legend', {}, 'Which definitions'),
        el('label', { class: 'choice' }, now, ' the ones deployed now (a fix deployed since runs)'),
        el('label', { class: 'choice' }, ran, ` as it ran (${deploys.length ? `deploy ${deploys.join(', ')}` : 'the definitions it started with'})`))],
    });
    if (!yes) return;
    act('RestartBatchInstance', ran.checked ? 'Restarted as it ran.' : 'Restarted with the definitions deployed now.',
      { ...(ran.checked ? { asStarted: true } : {}), ...(only ? { actions: [only] } : {}) });
  };

  /** What the chosen action's buttons ask: a restart of it, or a new run from it on.
   * @param {'restart' | 'from'} what @param {number} aid */
  const actOn = async (what, aid) => {
    if (what === 'restart') { restart(aid); return; }
    const a = inst?.actions.find((x) => x.actionId === aid);
    try {
      const run = await startRun(`action ${aid}+`, `${inst?.batchName ?? 'run'} from ${a?.name ?? aid}`);
      if (run !== null) location.hash = `#/runs/${run}`;
    } catch (e) {
      if (e instanceof Unauthorized) { failed(e); return; }
      message = e instanceof Error ? e.message : String(e);
      barSig = '';
      update();
    }
  };

  /** The run's facts and what it was asked to run. */
  const writeFacts = (/** @type {Instance} */ i) => {
    const sig = JSON.stringify([i.state, i.end, i.late, i.lateSeconds, i.backfillId]);
    if (sig === factsSig) return;
    factsSig = sig;
    heading.textContent = `Run ${i.batchInstanceId}: ${i.batchName}`;
    facts.replaceChildren(...[
      fact('State', badge(i.state), { id: 'run-state', 'data-state': i.state }),
      fact('User', i.user),
      fact(`Start (${zoneName()})`, localTime(i.start, true), { class: 'time' }),
      fact('End', i.end ? localTime(i.end, true) : '—', { class: 'time' }),
      fact('Duration', took(i.start, i.end)),
      i.batchId !== undefined ? fact('Planned', `${planned(i)}${i.late ? ` (late ${duration((i.lateSeconds ?? 0) * 1000)})` : ''}`, { class: i.late ? 'late' : '' }) : null,
      i.scheduleDate ? fact('Schedule date', `${i.scheduleDate}${i.scheduleDateSet ? ' (set by the run)' : ''}`, { id: 'schedule-date' }) : null,
      i.elements?.length ? fact('Asked to run', i.elements.map((e) => `${ELEMENTS[e.elementType] ?? e.elementType} ${e.elementId}`).join(', '), { id: 'elements' }) : null,
      i.backfillId !== undefined ? fact('Backfill', el('a', { href: `#/runs?backfill=${i.backfillId}`, id: 'backfill' }, `backfill ${i.backfillId}`)) : null,
    ].filter((x) => x !== null));
  };

  /** Halt (asked first), Restart, the logs, all runs: drawn again only when they change, so
   * that a focused button keeps its focus. */
  const writeBar = (/** @type {Instance} */ i) => {
    const ongoing = ONGOING.has(i.state);
    const restartable = RESTARTABLE.includes(i.state);
    const sig = JSON.stringify([ongoing, restartable, can('operate'), message]);
    if (sig === barSig) return;
    barSig = sig;
    // A button of the bar that had the focus (a dialog gives it back there) keeps it.
    const focused = document.activeElement instanceof HTMLElement && bar.contains(document.activeElement)
      ? document.activeElement.id : '';
    bar.replaceChildren(...[
      can('operate') ? el('button', { type: 'button', class: 'danger', id: 'halt', disabled: !ongoing, onclick: halt }, 'Halt') : null,
      can('operate') ? el('button', { type: 'button', class: 'secondary', id: 'restart', disabled: !restartable, onclick: () => restart() }, 'Restart…') : null,
      el('button', { type: 'button', class: 'secondary', id: 'download-logs', onclick: download }, 'Download logs'),
      el('a', { href: '#/runs' }, 'All runs'),
    ].filter((x) => x !== null));
    if (focused) document.getElementById(focused)?.focus();
    note.textContent = message;
    note.hidden = !message;
  };

  /** The run's logs as a text file. */
  const download = () => {
    if (!inst) return;
    const url = URL.createObjectURL(new Blob([logsText(inst)], { type: 'text/plain;charset=utf-8' }));
    const a = el('a', { href: url, download: `weft-run-${id}.log` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 0);
  };

  /** The filters, each with its count; the one shown pressed. */
  const writeFilters = (/** @type {Instance} */ i) => {
    const counts = stateCounts(i.actions);
    if (!filters.childElementCount) {
      filters.append(...ACTION_FILTERS.map(([name]) => el('button', {
        type: 'button',
        class: `filter filter-${name}`,
        'data-filter': name,
        onclick: () => { filter = name; address(); update(); },
      })));
    }
    for (const b of /** @type {HTMLButtonElement[]} */ ([...filters.children])) {
      const name = /** @type {string} */ (b.dataset.filter);
      const n = counts[name] ?? 0;
      const text = `${ACTION_FILTERS.find(([f]) => f === name)?.[2]} ${n}`;
      if (b.textContent !== text) b.textContent = text;
      b.setAttribute('aria-pressed', String(name === filter));
      // A filter that would show nothing is left out, unless it is the one chosen.
      b.hidden = n === 0 && name !== 'all' && name !== filter;
    }
  };

  /** The failed actions, with their error's first line: a click goes to the action. */
  const writeFailures = (/** @type {Instance} */ i) => {
    const list = ordered(i.actions).filter((a) => a.state === 'E');
    const sig = JSON.stringify(list.map((a) => [a.actionId, a.error]));
    if (sig === failuresSig) return;
    failuresSig = sig;
    const focused = document.activeElement instanceof HTMLElement && failures.contains(document.activeElement)
      ? document.activeElement.dataset.action : null;
    failures.hidden = list.length === 0;
    failures.replaceChildren(el('h2', {}, `Failed (${list.length})`),
      el('ul', { class: 'failure-list' }, list.map((a) => el('li', {},
        el('button', { type: 'button', class: 'link failure', 'data-action': a.actionId, onclick: () => choose(a.actionId, { focus: true, reveal: true }) }, a.name),
        el('span', { class: 'module' }, ` ${a.module}, sheet ${a.sheetId}`),
        el('div', { class: 'first-line' }, firstLine(a.error) || '(no error text)')))));
    if (focused) /** @type {HTMLElement | null} */ (failures.querySelector(`[data-action="${focused}"]`))?.focus();
  };

  let drawnOnce = false;
  const update = () => {
    if (!inst) return;
    if (!drawnOnce) {
      // On the page first, so that the axis knows its width.
      drawnOnce = true;
      show(heading,
        el('section', { class: 'card' }, facts, bar, note),
        failures,
        el('div', { class: 'run-body' },
          el('div', { class: 'run-main' }, filters, timeline.element),
          detail.element));
    }
    writeFacts(inst);
    writeBar(inst);
    writeFilters(inst);
    writeFailures(inst);
    timeline.update(inst, selected, filter);
    detail.show(inst.actions.find((a) => a.actionId === selected), inst);
    drawn();
    // A link to an action: scrolled to and focused, once (shown whatever the filter).
    if (!revealed && selected !== null && timeline.rows.has(selected)) {
      revealed = true;
      const a = inst.actions.find((x) => x.actionId === selected);
      if (a && !shows(filter, a.state)) {
        filter = 'all';
        address();
        writeFilters(inst);
        timeline.update(inst, selected, filter);
      }
      timeline.reveal(selected);
    }
    say(ONGOING.has(inst.state) ? 'following the run…' : '');
  };

  // Follows the run: one wait per change, while it goes on and the view is shown.
  let following = false;
  const follow = async () => {
    if (following) return;
    following = true;
    let version = '';
    try {
      let attempt = 0;
      for (;;) {
        if (stopped) return;
        let w;
        try {
          w = await call('WaitBatchInstance', { batchInstanceId: id, changedFrom: version, timeoutSeconds: version ? 25 : 0 });
        } catch (e) {
          if (!(e instanceof Unreachable)) throw e;
          await reconnecting(attempt++);
          continue;
        }
        attempt = 0;
        if (stopped) return;
        version = w.version;
        inst = w;
        update();
        if (!ONGOING.has(w.state)) return;
      }
    } catch (e) {
      if (!stopped) failed(e);
    } finally {
      following = false;
    }
  };
  follow();
  return { stop: () => { stopped = true; } };
}
