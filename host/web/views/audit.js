// The audit (admins): who did what, when, from where.

import { el, say, show } from '../lib/dom.js';
import { call } from '../lib/api.js';
import { localTime, zoneName } from '../lib/time.js';

/** @typedef {import('../lib/types.js').AuditEntry} AuditEntry */

const AUDIT = 100;

/** The audit (admins): who did what, when, from where, newest first, with filters.
 * @param {URLSearchParams} params */
export async function auditView(params) {
  /** @type {Record<string, any>} */
  const asked = { limit: AUDIT };
  const fields = ['user', 'command', 'outcome'];
  for (const f of fields) {
    const v = params.get(f);
    if (v) asked[f] = v;
  }
  const before = Number(params.get('before'));
  if (before > 0) asked.beforeId = before;
  /** @type {{entries: AuditEntry[]}} */
  const { entries } = await call('ListAudit', asked);
  const user = el('input', { type: 'search', name: 'user', id: 'audit-user', value: asked.user ?? '', placeholder: 'user' });
  const command = el('input', { type: 'search', name: 'command', id: 'audit-command', value: asked.command ?? '', placeholder: 'command' });
  const outcome = el('select', { name: 'outcome', id: 'audit-outcome' },
    ['', 'done', 'refused'].map((o) => el('option', { value: o, selected: o === (asked.outcome ?? '') }, o || 'any outcome')));
  const filters = el('form', {
    class: 'filters',
    onsubmit: (/** @type {SubmitEvent} */ ev) => {
      ev.preventDefault();
      const q = new URLSearchParams();
      if (user.value.trim()) q.set('user', user.value.trim());
      if (command.value.trim()) q.set('command', command.value.trim());
      if (outcome.value) q.set('outcome', outcome.value);
      location.hash = `#/audit${q.size ? `?${q}` : ''}`;
    },
  }, el('label', {}, 'User ', user), el('label', {}, 'Command ', command), el('label', {}, 'Outcome ', outcome),
  el('button', { type: 'submit', id: 'audit-show' }, 'Show'));
  const rows = entries.map((e) => el('tr', { 'data-audit': e.id, class: `audit-${e.outcome}` },
    el('td', { class: 'num' }, e.id),
    el('td', {}, localTime(e.at)),
    el('td', {}, e.user),
    el('td', {}, e.via),
    el('td', {}, e.client),
    el('td', {}, e.host),
    el('td', {}, e.command),
    el('td', {}, e.outcome),
    el('td', { class: 'why' }, e.what)));
  const q = new URLSearchParams();
  for (const f of fields) if (asked[f]) q.set(f, asked[f]);
  if (entries.length === AUDIT) q.set('before', String(entries[entries.length - 1].id));
  const older = entries.length === AUDIT ? `#/audit?${q}` : null;
  show(el('h1', {}, 'Audit'),
    el('p', { class: 'muted' }, 'Every change and every refused attempt, newest first: who, how they were known, from where, on which host, what.'),
    filters,
    rows.length ? el('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'audit entries' }, el('table', { id: 'audit' },
      el('thead', {}, el('tr', {}, el('th', {}, 'ID'), el('th', {}, `When (${zoneName()})`), el('th', {}, 'User'), el('th', {}, 'Via'),
        el('th', {}, 'Client'), el('th', {}, 'Host'), el('th', {}, 'Command'), el('th', {}, 'Outcome'), el('th', {}, 'What'))),
      el('tbody', {}, rows))) : el('p', { class: 'muted' }, 'No entry matches.'),
    older ? el('p', {}, el('a', { href: older, id: 'older' }, 'Older')) : null);
  say('');
  return null;
}
