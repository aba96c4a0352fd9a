// The notifications: what was sent, what waits for its next try, what was given up.

import { el, say, show } from '../lib/dom.js';
import { call } from '../lib/api.js';
import { localTime, zoneName } from '../lib/time.js';

/** @typedef {import('../lib/types.js').NotificationEntry} NotificationEntry */

/** How many notifications a page shows. */
const NOTIFICATIONS = 50;

/** What was sent, what waits for its next try, what was given up (ListNotifications).
 * @param {URLSearchParams} params */
export async function notificationsView(params) {
  /** @type {Record<string, any>} */
  const asked = { limit: NOTIFICATIONS };
  const state = params.get('state');
  if (state) asked.state = state;
  const before = Number(params.get('before'));
  if (before > 0) asked.before = before;
  /** @type {{notifications: NotificationEntry[]}} */
  const { notifications } = await call('ListNotifications', asked);
  /** @param {string} label @param {string | null} s */
  const link = (label, s) => el('a', { href: s ? `#/notifications?state=${s}` : '#/notifications',
    class: (state ?? '') === (s ?? '') ? 'current' : '' }, label);
  const rows = notifications.map((n) => el('tr', { 'data-notification': n.id, class: `notification-${n.state}` },
    el('td', { class: 'num' }, n.id),
    el('td', {}, n.state.replace('_', ' ')),
    el('td', {}, n.event),
    el('td', {}, n.batchName),
    el('td', { class: 'num' }, n.batchInstanceId ? el('a', { href: `#/runs/${n.batchInstanceId}` }, n.batchInstanceId) : '—'),
    el('td', {}, n.channel),
    el('td', { class: 'num' }, n.attempts),
    el('td', {}, localTime(n.created)),
    el('td', {}, n.sent ? localTime(n.sent) : n.nextAttempt ? `next try ${localTime(n.nextAttempt)}` : '—'),
    el('td', { class: 'why' }, n.lastError ?? '')));
  const older = notifications.length === NOTIFICATIONS
    ? `#/notifications?${state ? `state=${state}&` : ''}before=${notifications[notifications.length - 1].id}` : null;
  show(el('h1', {}, 'Notifications'),
    el('p', { class: 'filters' }, 'Show: ', link('all', null), ' · ', link('pending', 'pending'), ' · ',
      link('sent', 'sent'), ' · ', link('given up', 'given_up')),
    rows.length ? el('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'notifications' }, el('table', { id: 'notifications' },
      el('thead', {}, el('tr', {}, el('th', {}, 'ID'), el('th', {}, 'State'), el('th', {}, 'Event'), el('th', {}, 'Batch'),
        el('th', {}, 'Run'), el('th', {}, 'Channel'), el('th', {}, 'Tries'), el('th', {}, `Recorded (${zoneName()})`),
        el('th', {}, 'Sent or next try'), el('th', {}, 'Last error'))),
      el('tbody', {}, rows))) : el('p', { class: 'muted' }, 'No notification.'),
    older ? el('p', {}, el('a', { href: older, id: 'older' }, 'Older')) : null);
  say('');
  return null;
}
