// The server's commands (POST /weft/service, docs/api.md) as the page calls them, and the
// page's patience when the server cannot be reached.

import { say } from './dom.js';

/** The server asked for a token (a server listening beyond loopback, a signed-out page). */
export class Unauthorized extends Error {}

/** The server cannot be reached now (it restarts, the network is down) or said it is
 * unavailable (429, 502, 503, 504): worth trying again. */
export class Unreachable extends Error {}

/** A refusal or failure the server explained: its status and error code. */
export class Refused extends Error {
  /** @param {string} message @param {number} status @param {string | undefined} code */
  constructor(message, status, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** When the page last had an answer from the server.
 * @type {Date | null} */
let lastUpdated = null;

/** Says that the page reconnects, and when it last heard from the server; resolves after the
 * back-off of try number `attempt` (1 s, doubling up to 30 s).
 * @param {number} attempt
 * @returns {Promise<void>} */
export function reconnecting(attempt) {
  const since = lastUpdated ? `; last updated ${lastUpdated.toLocaleTimeString()}` : '';
  say(`reconnecting… (the server cannot be reached${since})`);
  const line = document.getElementById('status');
  if (line) line.dataset.reconnecting = 'true';
  return new Promise((resolve) => { setTimeout(resolve, Math.min(30000, 1000 * 2 ** Math.min(attempt, 5))); });
}

/** The server answered again after `reconnecting`. */
function reconnected() {
  const line = document.getElementById('status');
  if (line?.dataset.reconnecting) {
    delete line.dataset.reconnecting;
    say('');
  }
}

/** Sends `command` with `payload` (and `more` beside it in the envelope: `variableList`):
 * its answer's payload; `Unreachable`, `Unauthorized` or `Refused` with the server's message.
 * @param {string} command
 * @param {Record<string, any>} [payload]
 * @param {Record<string, any>} [more]
 * @returns {Promise<any>} */
export async function call(command, payload = {}, more = {}) {
  // The token travels in the session cookie the sign-in set (HttpOnly: not readable here).
  let resp;
  try {
    resp = await fetch('/weft/service', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ command, payload, ...more }),
      credentials: 'same-origin',
    });
  } catch (e) {
    throw new Unreachable(`${command}: the server cannot be reached (${e.message})`);
  }
  if ([429, 502, 503, 504].includes(resp.status)) {
    throw new Unreachable(`${command}: the server is unavailable (${resp.status})`);
  }
  lastUpdated = new Date();
  reconnected();
  let body = null;
  try {
    body = await resp.json();
  } catch {
    throw new Error(`${command}: the server answered ${resp.status} without JSON`);
  }
  if (resp.status === 401) throw new Unauthorized(body?.error?.message ?? 'a token is needed');
  if (!resp.ok) {
    throw new Refused(body?.error?.message ?? `${command} failed (${resp.status})`, resp.status, body?.error?.code);
  }
  return body.payload;
}
