// What an operator starts from the page, each asked first in words that say what will
// happen: a run of sheets, folders or actions (with `+` and variables), a restart (with the
// definitions deployed now, or as the run ran), a run again from an action, a pause or a
// resume, a backfill. Only drawn for a role with the operate right (`can('operate')`); the
// server refuses the others anyway.

import { el } from './dom.js';
import { call } from './api.js';
import { ask } from './confirm.js';
import { parseRun, runSentence } from './elements.js';
import { me } from './session.js';

/** Asks for a run of `elements` (lines as `parseRun` reads them) and starts it: the new
 * run's id, or null when not started.
 * @param {string} elements
 * @param {string} [name] the run's batch name
 * @returns {Promise<number | null>} */
export async function startRun(elements, name = 'adhoc') {
  const what = /** @type {HTMLTextAreaElement} */ (el('textarea', { id: 'run-elements', rows: 4, 'aria-describedby': 'run-elements-help' }, elements));
  const vars = /** @type {HTMLTextAreaElement} */ (el('textarea', { id: 'run-variables', rows: 3, placeholder: 'name=value' }));
  const batch = /** @type {HTMLInputElement} */ (el('input', { id: 'run-name', value: name }));
  const sentence = el('p', { id: 'run-sentence', class: 'sentence', 'aria-live': 'polite' });
  const read = () => parseRun(what.value, vars.value);
  const say = () => {
    const asked = read();
    sentence.textContent = asked.problems.length ? '' : runSentence(asked, batch.value.trim() || 'adhoc');
  };
  for (const f of [what, vars, batch]) f.addEventListener('input', say);
  say();
  const yes = await ask({
    id: 'run',
    title: 'Start a run',
    text: 'A line an element: sheet, folder or action and its id or path (sheet 3, folder /etl, action /etl/load/step 1); + before a line for what feeds it too, + after for what it feeds.',
    confirm: 'Start the run',
    body: [
      el('label', { for: 'run-elements', id: 'run-elements-help' }, 'Elements'), what,
      el('label', { for: 'run-variables' }, 'Variables (name=value, a line each)'), vars,
      el('label', { for: 'run-name' }, 'Batch name'), batch,
      sentence,
    ],
    check: () => {
      const p = read().problems;
      return p.length ? p.map((x) => `line ${x.line}: ${x.message}`).join('; ') : null;
    },
  });
  if (!yes) return null;
  const asked = read();
  const started = await call('RunElements', {
    batchExecution: {
      batchName: batch.value.trim() || 'adhoc',
      user: me()?.user ?? 'page',
      elementList: asked.elements,
      ...(asked.select !== 'named' ? { select: asked.select } : {}),
    },
  }, asked.variables.length ? { variableList: asked.variables } : {});
  return started.batchInstanceId;
}

/** Asks for a pause (or a resume) of batch `id` and makes it: the answer, or null.
 * @param {number} id @param {string} name @param {boolean} paused what to make it
 * @returns {Promise<any>} */
export async function pauseBatch(id, name, paused) {
  const yes = await ask({
    id: paused ? 'pause' : 'resume',
    title: paused ? `Pause ${name}` : `Resume ${name}`,
    text: paused
      ? `Pause batch ${name}? Its planned starts pass without a run, each kept as missed, until it is resumed; a deploy leaves the pause. Runs going on now go on.`
      : `Resume batch ${name}? It runs again from its next planned start; the starts passed while it was paused are not caught up (a backfill runs them).`,
    confirm: paused ? `Pause ${name}` : `Resume ${name}`,
    danger: paused,
  });
  return yes ? call('PauseBatch', { batch: id, paused }) : null;
}

/** Asks for a backfill of batch `id` over a range of days and starts it: its id, or null.
 * @param {number} id @param {string} name @param {string} today
 * @returns {Promise<number | null>} */
export async function backfillBatch(id, name, today) {
  const from = /** @type {HTMLInputElement} */ (el('input', { type: 'date', id: 'backfill-from', value: today, max: today }));
  const to = /** @type {HTMLInputElement} */ (el('input', { type: 'date', id: 'backfill-to', value: today, max: today }));
  const parallel = /** @type {HTMLInputElement} */ (el('input', { type: 'number', id: 'backfill-parallel', value: '1', min: '1', max: '64' }));
  const sentence = el('p', { id: 'backfill-sentence', class: 'sentence', 'aria-live': 'polite' });
  const say = () => {
    sentence.textContent = `Starts one run of ${name} for each of its planned starts from ${from.value} to ${to.value} (each with its day as the schedule date), in order, ${parallel.value} at a time, with the definitions deployed now.`;
  };
  for (const f of [from, to, parallel]) f.addEventListener('input', say);
  say();
  const yes = await ask({
    id: 'backfill',
    title: `Backfill ${name}`,
    text: 'The days are in the service time zone, both included.',
    confirm: 'Start the backfill',
    body: [
      el('label', { for: 'backfill-from' }, 'From'), from,
      el('label', { for: 'backfill-to' }, 'To'), to,
      el('label', { for: 'backfill-parallel' }, 'At a time'), parallel,
      sentence,
    ],
    check: () => (!from.value || !to.value ? 'both days are needed'
      : to.value < from.value ? 'the last day comes before the first' : null),
  });
  if (!yes) return null;
  const answer = await call('BackfillBatch', { batch: id, from: from.value, to: to.value, parallel: Number(parallel.value) || 1 });
  return answer.backfillId;
}
