// Who is signed in: the sign-in form, the top bar's user and role, the rights that decide
// which buttons are drawn (the server refuses the others anyway), and what a view does with
// an error it cannot handle itself.

import { el, show } from './dom.js';
import { call, Unauthorized } from './api.js';
import { setZone, zoneName } from './time.js';

/** @typedef {import('./types.js').Me} Me */

/** Who the server takes this browser for, once known.
 * @type {Me | null} */
let current = null;

/** Asks the router to show the view of the address again (after a sign-in, a sign-out, a
 * retry). An event, so that no view imports the router that imports it. */
export function reroute() {
  window.dispatchEvent(new Event('weft:route'));
}

/** Whether the signed-in caller holds `right` (read, operate, deploy, admin).
 * @param {string} right */
export function can(right) {
  return Boolean(current?.rights?.includes(right));
}

/** Who is signed in, once known. */
export function me() {
  return current;
}

/** Whether the page knows who is signed in. */
export function known() {
  return current !== null;
}

/** Shows who is signed in, and the way out (or in). */
function drawMe() {
  const line = /** @type {HTMLElement} */ (document.getElementById('me'));
  const audit = document.getElementById('nav-audit');
  // The audit is the admins' to read.
  if (audit) audit.hidden = !can('admin');
  if (!current) {
    line.replaceChildren();
    return;
  }
  const out = current.via === 'loopback'
    ? el('button', { type: 'button', class: 'link', id: 'sign-in', onclick: () => login('') }, 'Sign in')
    : el('button', { type: 'button', class: 'link', id: 'sign-out', onclick: signOut }, 'Sign out');
  const service = current.timeZone ?? '';
  const zone = el('button', {
    type: 'button',
    class: 'link',
    id: 'zone',
    title: browserZone() ? `Show times in the service zone (${service})` : 'Show times in this browser\'s zone',
    onclick: () => {
      const browser = !browserZone();
      browserZoneChosen = browser;
      try {
        if (browser) localStorage.setItem(ZONE_KEY, 'browser');
        else localStorage.removeItem(ZONE_KEY);
      } catch {
        // No storage: the choice lasts as long as the page.
      }
      applyZone();
      drawMe();
      reroute();
    },
  }, `${zoneName()}${browserZone() ? ' (browser)' : ' (service)'}`);
  line.replaceChildren(
    zone, ' ',
    el('span', { id: 'me-user' }, current.user), ' ',
    el('span', { id: 'me-role', class: 'role' }, current.role), ' ',
    out);
}

/** Where the reader's choice of zone is kept: `browser`, or nothing for the service's. */
const ZONE_KEY = 'weft-zone';

/** The reader's choice where the browser keeps no storage. */
let browserZoneChosen = false;

/** Whether times are shown in the browser's zone (the reader asked), else the service's. */
function browserZone() {
  try {
    return localStorage.getItem(ZONE_KEY) === 'browser';
  } catch {
    return browserZoneChosen;
  }
}

/** Shows times in the zone the reader chose: the service's by default. */
function applyZone() {
  setZone(browserZone() ? undefined : current?.timeZone);
}

/** Asks who the server takes this browser for. */
export async function loadMe() {
  current = await call('WhoAmI');
  applyZone();
  drawMe();
}

async function signOut() {
  try {
    await fetch('/weft/session', { method: 'DELETE', credentials: 'same-origin' });
  } catch {
    // Signed out or not, the page asks again.
  }
  current = null;
  drawMe();
  reroute();
}

/** The sign-in form: a token (a user's, from `weft users add`; or the key file's), sent
 * once to the server, which keeps it in an HttpOnly cookie for the browser session.
 * @param {string} message */
function login(message) {
  const input = /** @type {HTMLInputElement} */ (el('input', { type: 'password', name: 'token', id: 'token', autocomplete: 'current-password', required: true }));
  const problem = el('p', { class: 'problem', id: 'sign-in-problem', role: 'alert' }, message || '');
  show(el('section', { class: 'card login' },
    el('h1', {}, 'Sign in'),
    el('p', { class: 'muted' }, 'Your token (weft users add prints one; an administrator can make you another with weft users token).'),
    problem,
    el('form', {
      onsubmit: async (/** @type {Event} */ ev) => {
        ev.preventDefault();
        let resp;
        try {
          resp = await fetch('/weft/session', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ token: input.value.trim() }),
            credentials: 'same-origin',
          });
        } catch (e) {
          problem.textContent = `The server cannot be reached (${e.message}).`;
          return;
        }
        const body = await resp.json().catch(() => null);
        if (!resp.ok) {
          problem.textContent = resp.status === 401 && body?.error?.code === 'request.unauthorized'
            ? 'That token was refused.'
            : (body?.error?.message ?? `Signing in failed (${resp.status}).`);
          input.value = '';
          input.focus();
          return;
        }
        input.value = '';
        current = body;
        applyZone();
        drawMe();
        reroute();
      },
    }, el('label', { for: 'token' }, 'Token'), input, el('button', { type: 'submit', id: 'sign-in-submit' }, 'Sign in'))));
  input.focus();
}

/** What a view does with an error it does not handle: a sign-in when the server wants a
 * token, else the message in place of the view.
 * @param {unknown} e */
export function failed(e) {
  if (e instanceof Unauthorized) {
    current = null;
    drawMe();
    login('');
    return;
  }
  show(el('section', { class: 'card' }, el('p', { class: 'problem', id: 'problem' }, e instanceof Error ? e.message : String(e))));
}
