// The deploys: what each changed, and one change as a diff of its definition's lines.

import { el, say, show } from '../lib/dom.js';
import { call } from '../lib/api.js';
import { definitionLines, lineDiff, shownDiff } from '../lib/diff.js';
import { localTime, zoneName } from '../lib/time.js';

/** @typedef {import('../lib/types.js').Deploy} Deploy */
/** @typedef {import('../lib/types.js').DeployChangeDetail} DeployChangeDetail */

const DEPLOYS = 20;

/** @param {URLSearchParams} params */
export async function deploysView(params) {
  const before = Number(params.get('before')) || null;
  // One more than shown: whether there is an older page.
  /** @type {Record<string, any>} */
  const payload = { limit: DEPLOYS + 1, changes: 20 };
  if (before) payload.before = before;
  /** @type {Deploy[]} */
  const answer = (await call('ListDeploys', payload)).deploys;
  const deploys = answer.slice(0, DEPLOYS);
  /** @param {Deploy} d */
  const count = (d) => [['created', d.created], ['updated', d.updated], ['deleted', d.deleted]]
    .filter(([, n]) => n).map(([w, n]) => `${n} ${w}`).join(', ');
  const cards = deploys.map((d) => el('section', { class: 'card deploy', 'data-deploy': d.deployId },
    el('h2', {}, `Deploy ${d.deployId}`, ' ', el('span', { class: 'muted' }, localTime(d.deployed)),
      d.user ? el('span', { class: 'muted deployer' }, ` by ${d.user}`) : null),
    el('p', { class: 'muted counts' }, count(d)),
    el('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'changes' }, el('table', { class: 'changes' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Change'), el('th', {}, 'Kind'), el('th', { class: 'num' }, 'Id'), el('th', {}, 'Name'))),
      el('tbody', {}, d.changes.map((c) => el('tr', { 'data-history': c.historyId },
        el('td', {}, el('span', { class: `change-badge change-${c.change}` }, c.change)),
        el('td', {}, c.kind),
        el('td', { class: 'num' }, c.objectId),
        el('td', {}, el('a', { href: `#/deploys/changes/${c.historyId}` }, c.name ?? `${c.kind} ${c.objectId}`))))))),
    d.more ? el('p', { class: 'muted' }, `and ${d.more} more`) : null));
  const older = answer.length > DEPLOYS ? `#/deploys?before=${deploys[deploys.length - 1].deployId}` : null;
  show(el('h1', {}, 'Deploys'),
    el('p', { class: 'muted' }, 'Every committed deploy, newest first, with what it changed (dry runs and deploys that changed nothing are not kept).'),
    cards.length ? cards : el('p', { class: 'muted' }, before ? 'No older deploys.' : 'Nothing has been deployed yet.'),
    el('div', { class: 'pager' },
      before ? el('a', { href: '#/deploys' }, 'Newest') : null,
      older ? el('a', { href: older, id: 'older' }, 'Older') : null));
  say('');
  return null;
}

/** A line of the diff: its mark and its text, the changed words marked.
 * @param {import('../lib/diff.js').Shown} s */
function diffLine(s) {
  const cls = { '+': 'add', '-': 'del', ' ': 'same' }[s.mark] ?? 'same';
  const text = s.parts
    ? s.parts.map(([changed, t]) => (changed ? el(s.mark === '+' ? 'ins' : 'del', {}, t) : t))
    : [s.line];
  return el('span', { class: cls }, `${s.mark} `, ...text);
}

/** The diff as a `pre`: changed words marked in a changed line, an unchanged stretch folded
 * behind a button that opens it in place.
 * @param {import('../lib/diff.js').DiffLine[]} diff */
function diffBlock(diff) {
  const pre = el('pre', { class: 'diff', id: 'diff' });
  for (const s of shownDiff(diff)) {
    if ('fold' in s) {
      const lines = s.fold;
      const open = el('button', {
        type: 'button',
        class: 'fold',
        'aria-label': `show ${lines.length} unchanged lines`,
        onclick: () => {
          const shown = lines.map(diffLine);
          open.replaceWith(...shown);
        },
      }, `… ${lines.length} unchanged lines (show)`);
      pre.append(open);
    } else {
      pre.append(diffLine(s));
    }
  }
  return pre;
}

/** @param {number} id */
export async function deployChangeView(id) {
  /** @type {DeployChangeDetail} */
  const c = await call('GetDeployChange', { historyId: id });
  const now = definitionLines(c.definition);
  const before = definitionLines(c.previous?.definition);
  const diff = c.previous ? lineDiff(before, now) : now.map((l) => /** @type {import('../lib/diff.js').DiffLine} */ (['+', l]));
  show(
    el('h1', {}, `${c.kind} ${c.objectId}${c.name ? `: ${c.name}` : ''}`),
    el('section', { class: 'card' },
      el('div', { class: 'summary' },
        el('div', {}, el('span', {}, 'Change'), el('span', { id: 'change-kind' }, el('span', { class: `change-badge change-${c.change}` }, c.change))),
        el('div', {}, el('span', {}, 'Deploy'), el('span', {}, c.deployId ?? '—')),
        el('div', {}, el('span', {}, `When (${zoneName()})`), el('span', {}, localTime(c.deployed))),
        c.previous ? el('div', {}, el('span', {}, 'Before'), el('span', {}, `deploy ${c.previous.deployId ?? '—'}, ${localTime(c.previous.deployed)}`)) : null),
      el('div', { class: 'actions-bar' },
        el('a', { href: '#/deploys' }, 'All deploys'),
        c.kind === 'sheet' && c.change !== 'deleted' ? el('a', { href: `#/sheets/${c.objectId}` }, 'The sheet now') : null)),
    el('section', { class: 'card detail' },
      el('h2', {}, c.previous ? 'What changed' : 'As deployed'),
      diff ? diffBlock(diff) : [
        el('p', { class: 'muted' }, 'Too long to compare here; both versions follow.'),
        el('h2', {}, 'Before'), el('pre', {}, before.join('\n')),
        el('h2', {}, 'After'), el('pre', {}, now.join('\n'))]));
  say('');
  return null;
}

