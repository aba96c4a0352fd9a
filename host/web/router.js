// The router: which view an address shows (every view has a deep link), and the one view on
// screen at a time (a view that follows something is stopped when another is shown).

import { el, say, show } from './lib/dom.js';
import { Unreachable, reconnecting } from './lib/api.js';
import { failed, known, loadMe } from './lib/session.js';
import { auditView } from './views/audit.js';
import { batchView } from './views/batch.js';
import { deployChangeView, deploysView } from './views/deploys.js';
import { gridView } from './views/grid.js';
import { lineageView } from './views/lineage.js';
import { notificationsView } from './views/notifications.js';
import { runView } from './views/run.js';
import { runsView } from './views/runs.js';
import { schedulesView } from './views/schedules.js';
import { sheetView, sheetsView } from './views/sheets.js';

/** @typedef {import('./lib/types.js').Shown} Shown */

/** The query of an address as parameters.
 * @param {string | undefined} q */
const query = (q) => new URLSearchParams(q ?? '');

/** @type {[RegExp, (m: RegExpExecArray) => Shown | Promise<Shown>][]} */
const routes = [
  [/^#\/audit(?:\?(.*))?$/, (m) => auditView(query(m[1]))],
  [/^#\/sheets\/(\d+)(?:\?node=(-?\d+))?$/, (m) => sheetView(Number(m[1]), m[2] ? Number(m[2]) : null)],
  [/^#\/sheets$/, () => sheetsView()],
  [/^#\/lineage(?:\?(.*))?$/, (m) => lineageView(query(m[1]))],
  [/^#\/schedules$/, () => schedulesView()],
  [/^#\/grid(?:\?(.*))?$/, (m) => gridView(query(m[1]))],
  [/^#\/batches\/(\d+)(?:\?(.*))?$/, (m) => batchView(Number(m[1]), query(m[2]))],
  [/^#\/deploys\/changes\/(\d+)$/, (m) => deployChangeView(Number(m[1]))],
  [/^#\/deploys(?:\?(.*))?$/, (m) => deploysView(query(m[1]))],
  [/^#\/runs\/(\d+)(?:\?(.*))?$/, (m) => runView(Number(m[1]), query(m[2]))],
  [/^#\/runs(?:\?(.*))?$/, (m) => runsView(query(m[1]))],
  [/^#\/notifications(?:\?(.*))?$/, (m) => notificationsView(query(m[1]))],
];

/** The view on screen.
 * @type {Shown} */
let current = null;

/** Counts the calls of `route`: the newest one owns the screen. */
let routeGeneration = 0;

/** How many times in a row the view could not be loaded for want of the server. */
let routeAttempt = 0;

/** Shows the view the address names. */
export async function route() {
  current?.stop?.();
  current = null;
  // Only the newest call shows its view: one that a retry or a click overtook stops its own.
  const generation = ++routeGeneration;
  const hash = location.hash || '#/runs';
  for (const a of /** @type {NodeListOf<HTMLAnchorElement>} */ (document.querySelectorAll('#nav a'))) {
    a.classList.toggle('current', hash.startsWith(`#/${a.dataset.view}`));
  }
  const found = routes.find(([re]) => re.test(hash));
  if (!found) {
    show(el('p', { class: 'problem' }, `No page here: ${hash}`));
    return;
  }
  say('loading…');
  try {
    if (!known()) await loadMe();
    const view = await found[1](/** @type {RegExpExecArray} */ (found[0].exec(hash)));
    if (generation !== routeGeneration) {
      view?.stop?.();
      return;
    }
    current = view;
    routeAttempt = 0;
  } catch (e) {
    if (generation !== routeGeneration) return;
    if (e instanceof Unreachable) {
      // Not there yet (a restart): the same view again after the back-off, unless another
      // was asked meanwhile.
      await reconnecting(routeAttempt++);
      if (generation === routeGeneration) route();
      return;
    }
    say('');
    failed(e);
  }
}
