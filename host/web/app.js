// weft's monitoring page: the runs and each run's actions, live, from the server's own
// commands (POST /weft/service, docs/api.md). No framework and no build step: the server
// embeds this file as it is. Everything the server answers is put on the page as text
// (textContent), never as markup, so a log line or a name cannot inject anything.

const main = document.getElementById('main');
const statusLine = document.getElementById('status');
const meLine = document.getElementById('me');
const PAGE = 50;

/** Who the server takes this browser for (WhoAmI: user, role, rights, via), once known. */
let me = null;

/** Whether the signed-in caller holds `right` (read, operate, deploy, admin): buttons it
 * cannot use are not drawn (the server refuses them anyway). */
function can(right) {
  return Boolean(me?.rights?.includes(right));
}

/** A DOM element: `attrs` are attributes (`on*` functions become listeners), children are
 * nodes or text. */
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function show(...nodes) {
  main.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined && n !== false));
  // For the benchmarks: when a view is on screen.
  performance.mark('weft:drawn');
}

function say(text) {
  statusLine.textContent = text;
}

/** The server asked for its token (a server listening beyond loopback). */
class Unauthorized extends Error {}

/** The server cannot be reached now (it restarts, the network is down) or said it is
 * unavailable (502, 503, 504): worth trying again. */
class Unreachable extends Error {}

/** When the page last had an answer from the server. */
let lastUpdated = null;

/** Says that the page reconnects, and when it last heard from the server; resolves after the
 * back-off of try number `attempt` (1 s, doubling up to 30 s). */
function reconnecting(attempt) {
  const since = lastUpdated ? `; last updated ${lastUpdated.toLocaleTimeString()}` : '';
  say(`reconnecting… (the server cannot be reached${since})`);
  statusLine.dataset.reconnecting = 'true';
  return new Promise((resolve) => setTimeout(resolve, Math.min(30000, 1000 * 2 ** Math.min(attempt, 5))));
}

/** The server answered again after `reconnecting`. */
function reconnected() {
  if (statusLine.dataset.reconnecting) {
    delete statusLine.dataset.reconnecting;
    say('');
  }
}

/** Sends `command` with `payload`; its answer's payload, or an Error with the server's
 * message. */
async function call(command, payload = {}) {
  // The token travels in the session cookie the sign-in set (HttpOnly: not readable here).
  const headers = { 'content-type': 'application/json' };
  let resp;
  try {
    resp = await fetch('/weft/service', {
      method: 'POST',
      headers,
      body: JSON.stringify({ command, payload }),
      credentials: 'same-origin',
    });
  } catch (e) {
    throw new Unreachable(`${command}: the server cannot be reached (${e.message})`);
  }
  // Unavailable, or too busy for one more wait now (429): worth trying again later.
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
    const e = new Error(body?.error?.message ?? `${command} failed (${resp.status})`);
    e.status = resp.status;
    e.code = body?.error?.code;
    throw e;
  }
  return body.payload;
}

// ---- time and numbers ----

function parseTime(iso) {
  return iso ? Date.parse(iso) : NaN;
}

function localTime(iso) {
  const t = parseTime(iso);
  if (Number.isNaN(t)) return '';
  const d = new Date(t);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

function duration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

function span(start, end) {
  const a = parseTime(start);
  const b = end ? parseTime(end) : Date.now();
  return b - a;
}

/** How long from `start` to `end` (or now), said as the times allow: the server keeps
 * whole seconds, so an end in the second it began is "under a second". */
function took(start, end) {
  const ms = span(start, end);
  return end && ms < 1000 ? 'under 1 s' : duration(ms);
}

const ONGOING = new Set(['waiting', 'running']);
const ACTION_STATES = {
  D: 'waiting for its inputs', W: 'ready', R: 'running', F: 'finished', E: 'failed', S: 'skipped', H: 'halted',
};

function badge(state, title) {
  return el('span', { class: `state state-${state}`, title }, state);
}

// ---- signing in and out ----

/** Shows who is signed in, and the way out (or in). */
function drawMe() {
  // The audit is the admins' to read.
  document.getElementById('nav-audit').hidden = !can('admin');
  if (!me) {
    meLine.replaceChildren();
    return;
  }
  const out = me.via === 'loopback'
    ? el('button', { type: 'button', class: 'link', id: 'sign-in', onclick: () => login('', () => route()) }, 'Sign in')
    : el('button', { type: 'button', class: 'link', id: 'sign-out', onclick: signOut }, 'Sign out');
  meLine.replaceChildren(
    el('span', { id: 'me-user' }, me.user),
    ' ',
    el('span', { id: 'me-role', class: 'role' }, me.role),
    ' ',
    out);
}

/** Asks who the server takes this browser for. */
async function loadMe() {
  me = await call('WhoAmI');
  drawMe();
}

async function signOut() {
  try {
    await fetch('/weft/session', { method: 'DELETE', credentials: 'same-origin' });
  } catch {
    // Signed out or not, the page asks again.
  }
  me = null;
  drawMe();
  route();
}

/** The sign-in form: a token (a user's, from `weft users add`; or the key file's), sent
 * once to the server, which keeps it in an HttpOnly cookie for the browser session. */
function login(message, retry) {
  const input = el('input', { type: 'password', name: 'token', id: 'token', autocomplete: 'current-password', required: true });
  const problem = el('p', { class: 'problem', id: 'sign-in-problem', role: 'alert' }, message || '');
  show(el('section', { class: 'card login' },
    el('h1', {}, 'Sign in'),
    el('p', { class: 'muted' }, 'Your token (weft users add prints one; an administrator can make you another with weft users token).'),
    problem,
    el('form', {
      onsubmit: async (ev) => {
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
        me = body;
        drawMe();
        retry();
      },
    }, el('label', { for: 'token' }, 'Token'), input, el('button', { type: 'submit', id: 'sign-in-submit' }, 'Sign in'))));
  input.focus();
}

function failed(e, retry) {
  if (e instanceof Unauthorized) {
    me = null;
    drawMe();
    login('', retry);
    return;
  }
  show(el('section', { class: 'card' }, el('p', { class: 'problem', id: 'problem' }, e.message)));
}

// ---- the runs ----

async function runsView(params) {
  const state = params.get('state') || '';
  const name = params.get('name') || '';
  const before = Number(params.get('before')) || null;
  const backfill = Number(params.get('backfill')) || null;
  const payload = { limit: PAGE };
  if (state) payload.state = state;
  if (name) payload.name = name;
  if (before) payload.before = before;
  if (backfill) payload.backfillId = backfill;

  const stateSelect = el('select', { name: 'state', 'aria-label': 'state' },
    ['', 'waiting', 'running', 'finished', 'failed', 'halted', 'interrupted']
      .map((s) => el('option', { value: s, selected: s === state }, s || 'any state')));
  const nameInput = el('input', { type: 'search', name: 'name', value: name, placeholder: 'batch name', 'aria-label': 'batch name' });
  const filters = el('form', {
    class: 'filters',
    onsubmit: (ev) => {
      ev.preventDefault();
      const q = new URLSearchParams();
      if (stateSelect.value) q.set('state', stateSelect.value);
      if (nameInput.value.trim()) q.set('name', nameInput.value.trim());
      if (backfill) q.set('backfill', backfill);
      location.hash = `#/runs${q.toString() ? `?${q}` : ''}`;
    },
  }, el('label', {}, 'State', stateSelect), el('label', {}, 'Batch', nameInput), el('button', { type: 'submit' }, 'Show'));

  // The list and its pager, drawn again on each refresh; the filters stay as typed.
  const listing = el('div', { id: 'listing' });
  const drawList = (list) => {
    const rows = list.map((i) => {
      const scheduled = i.batchId !== undefined;
      return el('tr', { 'data-instance': i.batchInstanceId },
        el('td', { class: 'num' }, el('a', { href: `#/runs/${i.batchInstanceId}` }, i.batchInstanceId)),
        el('td', {}, i.batchName),
        el('td', { class: 'wide' }, i.user),
        el('td', { class: 'wide' }, i.backfillId !== undefined
          ? el('a', { href: `#/runs?backfill=${i.backfillId}`, class: 'backfill' }, `backfill ${i.backfillId} (${i.plannedStart})`)
          : scheduled ? `scheduled (${i.plannedStart})` : 'by hand'),
        el('td', {}, badge(i.state)),
        el('td', {}, localTime(i.start)),
        el('td', { class: 'num' }, took(i.start, i.end)),
        el('td', { class: i.late ? 'late' : 'muted' }, scheduled ? duration((i.lateSeconds ?? 0) * 1000) : ''));
    });
    const table = el('div', { class: 'table-wrap' }, el('table', { id: 'runs' },
      el('thead', {}, el('tr', {},
        el('th', {}, 'Run'), el('th', {}, 'Batch'), el('th', { class: 'wide' }, 'User'), el('th', { class: 'wide' }, 'Started'),
        el('th', {}, 'State'), el('th', {}, 'Start'), el('th', {}, 'Duration'), el('th', {}, 'Late'))),
      el('tbody', {}, rows)));
    const here = new URLSearchParams(params);
    here.delete('before');
    const older = new URLSearchParams(here);
    if (list.length) older.set('before', list[list.length - 1].batchInstanceId);
    const pager = el('div', { class: 'pager' },
      before ? el('a', { href: `#/runs${here.toString() ? `?${here}` : ''}` }, 'Newest') : null,
      list.length === PAGE ? el('a', { href: `#/runs?${older}`, id: 'older' }, 'Older') : null,
      el('span', { class: 'muted' }, list.length ? `${list.length} shown` : 'No runs match.'));
    listing.replaceChildren(table, pager);
  };
  drawList((await call('ListBatchInstances', payload)).instances);
  show(el('h1', {}, backfill ? `Runs of backfill ${backfill}` : 'Runs'), filters, listing);
  say('');
  // The newest page follows what starts and ends, while it is shown.
  if (before) return null;
  let stopped = false;
  let timer = null;
  let attempt = 0;
  const refresh = async () => {
    try {
      const list = (await call('ListBatchInstances', payload)).instances;
      if (stopped) return;
      attempt = 0;
      drawList(list);
      performance.mark('weft:drawn');
    } catch (e) {
      if (stopped) return;
      if (e instanceof Unreachable) {
        await reconnecting(attempt++);
        if (!stopped) refresh();
        return;
      }
      failed(e, () => route());
      return;
    }
    timer = setTimeout(refresh, 5000);
  };
  timer = setTimeout(refresh, 5000);
  return { stop: () => { stopped = true; clearTimeout(timer); } };
}

// ---- one run ----

/** The order actions are drawn in: by how deep they sit in the dependencies, then by start. */
function ordered(actions) {
  const byId = new Map(actions.map((a) => [a.actionId, a]));
  const depth = new Map();
  // Depth first with a stack of its own (a chain of thousands of actions would overflow the
  // call stack); an action on the path being walked (a cycle) counts as depth 0.
  for (const first of actions) {
    const stack = [[first, false]];
    const onPath = new Set();
    while (stack.length) {
      const [a, done] = stack.pop();
      if (depth.has(a.actionId)) continue;
      // Not done and on the path: a cycle back to it, or a second way to an action being
      // walked; walked once either way.
      if (!done && onPath.has(a.actionId)) continue;
      const deps = (a.dependsOn ?? []).filter((id) => byId.has(id));
      if (done) {
        onPath.delete(a.actionId);
        depth.set(a.actionId, deps.reduce((d, id) => Math.max(d, (depth.get(id) ?? -1) + 1), 0));
        continue;
      }
      onPath.add(a.actionId);
      stack.push([a, true]);
      for (const id of deps) {
        if (!depth.has(id) && !onPath.has(id)) stack.push([byId.get(id), false]);
      }
    }
  }
  const start = (a) => (a.start ? parseTime(a.start) : Infinity);
  return [...actions].sort((a, b) => depth.get(a.actionId) - depth.get(b.actionId) || start(a) - start(b) || a.actionId - b.actionId);
}

/** Where a SQL error points in its statement: [statement, start, end] or null. */
function errorPlace(error, log) {
  if (!error) return null;
  // The statement quoted at the end ("... in `STATEMENT`"), found without a regular
  // expression (one that backtracks took seconds on a long error).
  const trimmed = error.trimEnd();
  const opening = trimmed.indexOf('in `');
  let statement = trimmed.endsWith('`') && opening >= 0 && opening + 4 < trimmed.length
    ? trimmed.slice(opening + 4, -1)
    : null;
  if (!statement && log?.length) {
    // "Module action ID `name`: STATEMENT", read without backtracking.
    const line = log[0];
    const open = line.indexOf('`');
    const close = open >= 0 ? line.indexOf('`: ', open + 1) : -1;
    statement = close >= 0 ? line.slice(close + 3) : null;
  }
  if (!statement) return null;
  let at = null;
  const character = /at character (\d+)/.exec(error);
  const offset = /at offset (\d+)/.exec(error);
  if (character) at = Number(character[1]) - 1;
  else if (offset) at = Number(offset[1]);
  else {
    const near = /near "([^"]+)"/.exec(error);
    if (near) {
      const i = statement.indexOf(near[1]);
      if (i >= 0) return [statement, i, i + near[1].length];
    }
  }
  if (at === null || at < 0 || at >= statement.length) return [statement, -1, -1];
  const word = /^[\w$]+|^./.exec(statement.slice(at));
  return [statement, at, at + (word ? word[0].length : 1)];
}

function actionDetail(a) {
  const rows = `${a.rowsRead} read, ${a.rowsWritten} written, ${a.rowsUpdated} updated, ${a.rowsDeleted} deleted`;
  const parts = [
    el('h2', {}, `Action ${a.actionId}: ${a.name}`),
    el('div', { class: 'summary' },
      el('div', {}, el('span', {}, 'State'), el('span', {}, badge(a.state), ' ', ACTION_STATES[a.state] ?? '')),
      el('div', {}, el('span', {}, 'Module'), el('span', {}, a.module)),
      el('div', {}, el('span', {}, 'Sheet'), el('span', {}, a.sheetId)),
      a.host ? el('div', {}, el('span', {}, 'Host'), el('span', {}, a.host)) : null,
      a.waitingFor ? el('div', {}, el('span', {}, 'Waits for'),
        el('span', { id: 'waiting-for' }, `${a.waitingFor.schema ? a.waitingFor.schema + '.' : ''}${a.waitingFor.object}, written by `,
          el('a', { href: `#/runs/${a.waitingFor.batchInstanceId}?action=${a.waitingFor.actionId}` },
            `run ${a.waitingFor.batchInstanceId}, action ${a.waitingFor.actionId}`))) : null,
      a.deployId ? el('div', {}, el('span', {}, 'Definitions'),
        el('span', {}, el('a', { href: `#/deploys?before=${a.deployId + 1}`, id: 'deploy' }, `deploy ${a.deployId}`))) : null,
      el('div', {}, el('span', {}, 'Start'), el('span', {}, localTime(a.start) || '—')),
      el('div', {}, el('span', {}, 'Took'), el('span', {}, a.start ? took(a.start, a.end) : '—')),
      el('div', {}, el('span', {}, 'Rows'), el('span', { id: 'rows' }, rows)),
      a.dependsOn?.length ? el('div', {}, el('span', {}, 'After'), el('span', {}, a.dependsOn.join(', '))) : null,
      a.retryAt ? el('div', {}, el('span', {}, 'Tried again'), el('span', { id: 'retry-at' }, localTime(a.retryAt))) : null),
  ];
  if (a.tries?.length) {
    parts.push(el('h2', {}, `Failed tries (${a.tries.length})`),
      el('table', { id: 'tries' },
        el('thead', {}, el('tr', {}, el('th', {}, 'Try'), el('th', {}, 'Host'), el('th', {}, 'Ended'),
          el('th', {}, 'Tried again'), el('th', {}, 'Error'))),
        el('tbody', {}, a.tries.map((t) => el('tr', {},
          el('td', { class: 'num' }, t.counted ? String(t.attempt) : `${t.attempt} (not counted)`),
          el('td', {}, t.host ?? '—'),
          el('td', {}, localTime(t.end)),
          el('td', {}, localTime(t.retryAt)),
          el('td', {}, el('pre', { class: 'error' }, t.error)))))));
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
  parts.push(el('h2', {}, 'Log'), el('pre', { id: 'log' }, a.log?.length ? a.log.join('\n') : '(nothing logged)'));
  return el('section', { class: 'card detail', id: 'detail' }, parts);
}

function timeline(inst, selected, choose) {
  const t0 = parseTime(inst.start);
  const ends = inst.actions.map((a) => (a.end ? parseTime(a.end) : a.start ? Date.now() : t0));
  const t1 = Math.max(inst.end ? parseTime(inst.end) : Date.now(), ...ends, t0 + 1);
  const whole = t1 - t0;
  // The selected action's neighbours in the dependencies: what it needs and what needs it.
  const chosen = inst.actions.find((a) => a.actionId === selected);
  const needed = new Set(chosen?.dependsOn ?? []);
  const follows = new Set(inst.actions.filter((a) => (a.dependsOn ?? []).includes(selected)).map((a) => a.actionId));
  const rows = ordered(inst.actions).map((a) => {
    const bar = el('div', { class: `tl-bar st-${a.state}`, title: `${a.name}: ${ACTION_STATES[a.state] ?? a.state}` });
    if (a.start) {
      const s = parseTime(a.start) - t0;
      const e = (a.end ? parseTime(a.end) : Date.now()) - t0;
      bar.style.left = `${(Math.max(0, s) / whole) * 100}%`;
      bar.style.width = `${(Math.max(0, e - s) / whole) * 100}%`;
    } else {
      bar.style.left = '0';
      bar.style.width = '0';
    }
    return el('div', {
      class: `tl-row${a.actionId === selected ? ' selected' : ''}${needed.has(a.actionId) ? ' needed' : ''}${follows.has(a.actionId) ? ' follows' : ''}`,
      'data-action': a.actionId,
      'data-state': a.state,
      role: 'button',
      tabindex: 0,
      onclick: () => choose(a.actionId),
      onkeydown: (ev) => { if (ev.key === 'Enter') choose(a.actionId); },
    },
    el('div', { class: 'tl-label', title: `${a.name} (${a.module})` }, badge(a.state), ' ', a.name, el('span', { class: 'module' }, a.module)),
    el('div', { class: 'tl-track' }, bar));
  });
  return el('section', { class: 'card' },
    el('h2', {}, `Actions (${inst.actions.length})`),
    el('p', { class: 'muted' }, 'Rows follow the dependencies (what an action needs comes above it); bars run from start to end. For the action clicked, what it needs is marked ▲ and what needs it ▼.'),
    el('div', { class: 'timeline', id: 'timeline' }, rows));
}

function runView(id, action) {
  let selected = action;
  let inst = null;
  let stopped = false;
  let message = '';
  // Halt asks first: the question stands until answered or the run ends.
  let confirming = false;
  const draw = () => {
    const ongoing = ONGOING.has(inst.state);
    const restartable = ['failed', 'halted', 'interrupted'].includes(inst.state);
    const act = async (command, done) => {
      try {
        await call(command, { batchInstanceId: id });
        message = done;
      } catch (e) {
        if (e instanceof Unauthorized) { failed(e, () => route()); return; }
        message = e.message;
      }
      draw();
      if (command === 'RestartBatchInstance') follow();
    };
    const sel = inst.actions.find((a) => a.actionId === selected);
    show(
      el('h1', {}, `Run ${inst.batchInstanceId}: ${inst.batchName}`),
      el('section', { class: 'card' },
        el('div', { class: 'summary' },
          el('div', {}, el('span', {}, 'State'), el('span', { id: 'run-state', 'data-state': inst.state }, badge(inst.state))),
          el('div', {}, el('span', {}, 'User'), el('span', {}, inst.user)),
          el('div', {}, el('span', {}, 'Start'), el('span', {}, localTime(inst.start))),
          el('div', {}, el('span', {}, 'End'), el('span', {}, inst.end ? localTime(inst.end) : '—')),
          el('div', {}, el('span', {}, 'Duration'), el('span', {}, took(inst.start, inst.end))),
          inst.batchId !== undefined ? el('div', {}, el('span', {}, 'Planned'), el('span', { class: inst.late ? 'late' : '' }, `${inst.plannedStart}${inst.late ? ` (late ${duration(inst.lateSeconds * 1000)})` : ''}`)) : null,
          inst.backfillId !== undefined ? el('div', {}, el('span', {}, 'Backfill'), el('span', {}, el('a', { href: `#/runs?backfill=${inst.backfillId}`, id: 'backfill' }, `backfill ${inst.backfillId}`))) : null),
        el('div', { class: 'actions-bar' },
          can('operate') && !(confirming && ongoing) ? el('button', { class: 'danger', id: 'halt', disabled: !ongoing, onclick: () => { confirming = true; draw(); document.getElementById('halt-confirm')?.focus(); } }, 'Halt') : null,
          can('operate') ? el('button', { class: 'secondary', id: 'restart', disabled: !restartable, onclick: () => act('RestartBatchInstance', 'Restarted.') }, 'Restart') : null,
          el('a', { href: '#/runs' }, 'All runs')),
        confirming && ongoing ? el('div', { class: 'confirm', id: 'halt-question', role: 'alertdialog', 'aria-labelledby': 'halt-question-text' },
          el('p', { id: 'halt-question-text' }, `Halt run ${inst.batchInstanceId} (${inst.batchName})? Running actions stop and roll back; nothing new starts. A restart can run what is left later.`),
          el('button', { class: 'danger', id: 'halt-confirm', onclick: () => { confirming = false; act('HaltBatchInstance', 'Halt asked.'); } }, `Halt run ${inst.batchInstanceId}`),
          el('button', { class: 'secondary', id: 'halt-cancel', onclick: () => { confirming = false; draw(); } }, 'Cancel')) : null,
        message ? el('p', { class: 'muted', id: 'message' }, message) : null),
      timeline(inst, selected, (aid) => {
        selected = aid;
        // The address names the action shown, so that a link leads to its log.
        history.replaceState(null, '', `#/runs/${id}?action=${aid}`);
        draw();
      }),
      sel ? actionDetail(sel) : el('p', { class: 'muted' }, 'Click an action to see its log and error.'));
    say(ongoing ? 'following the run…' : '');
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
        draw();
        if (!ONGOING.has(w.state)) return;
      }
    } catch (e) {
      if (!stopped) failed(e, () => route());
    } finally {
      following = false;
    }
  };
  follow();
  return { stop: () => { stopped = true; } };
}

// ---- the sheets ----

async function sheetsView() {
  const tree = await call('ListSheets', { limit: 5000 });
  const byFolder = new Map();
  for (const s of tree.sheets) {
    if (!byFolder.has(s.folderId)) byFolder.set(s.folderId, []);
    byFolder.get(s.folderId).push(s);
  }
  const items = tree.folders.map((f) => {
    const depth = f.path.split('/').filter(Boolean).length - 1;
    const folder = el('li', { class: 'folder', 'data-folder': f.folderId },
      el('span', { class: 'folder-name' }, f.path),
      el('ul', {}, (byFolder.get(f.folderId) ?? []).map((s) => el('li', { class: 'sheet' },
        el('a', { href: `#/sheets/${s.sheetId}`, 'data-sheet': s.sheetId }, s.name)))));
    folder.style.marginLeft = `${Math.max(0, depth) * 1.25}rem`;
    return folder;
  });
  show(el('h1', {}, 'Sheets'),
    tree.more ? el('p', { class: 'muted', id: 'more-sheets' }, `The first ${tree.sheets.length} sheets are shown, by folder and order.`) : null,
    el('section', { class: 'card' },
      tree.folders.length ? el('ul', { class: 'tree', id: 'tree' }, items) : el('p', { class: 'muted' }, 'Nothing is deployed yet.')));
  say('');
  return null;
}

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

/** Each node's box: as deployed, or, for a sheet deployed without a layout, in columns by
 * how far along the edges it sits. */
function boxes(sheet) {
  const laidOut = sheet.nodes.some((n) => n.width > 0 && n.height > 0);
  const box = new Map();
  if (laidOut) {
    for (const n of sheet.nodes) box.set(n.nodeId, { x: n.x, y: n.y, w: Math.max(n.width, 40), h: Math.max(n.height, 24) });
    return box;
  }
  const depth = new Map(sheet.nodes.map((n) => [n.nodeId, 0]));
  for (let round = 0; round < sheet.nodes.length; round++) {
    let moved = false;
    for (const e of sheet.edges) {
      const d = (depth.get(e.from) ?? 0) + 1;
      if (depth.has(e.to) && d > depth.get(e.to) && d <= sheet.nodes.length) { depth.set(e.to, d); moved = true; }
    }
    if (!moved) break;
  }
  const row = new Map();
  for (const n of sheet.nodes) {
    const d = depth.get(n.nodeId);
    const r = row.get(d) ?? 0;
    row.set(d, r + 1);
    box.set(n.nodeId, { x: d * 220, y: r * 90, w: 170, h: 56 });
  }
  return box;
}

/** Where the line from the centre of `a` towards the centre of `b` leaves box `b`. */
function border(a, b) {
  const [ax, ay] = [a.x + a.w / 2, a.y + a.h / 2];
  const [bx, by] = [b.x + b.w / 2, b.y + b.h / 2];
  const [dx, dy] = [ax - bx, ay - by];
  if (dx === 0 && dy === 0) return [bx, by];
  const t = Math.min(Math.abs((b.w / 2) / (dx || 1e-9)), Math.abs((b.h / 2) / (dy || 1e-9)));
  return [bx + dx * t, by + dy * t];
}

function graph(sheet, selected, choose) {
  const box = boxes(sheet);
  const all = [...box.values()];
  const minX = Math.min(...all.map((b) => b.x)) - 20;
  const minY = Math.min(...all.map((b) => b.y)) - 20;
  const maxX = Math.max(...all.map((b) => b.x + b.w)) + 20;
  const maxY = Math.max(...all.map((b) => b.y + b.h)) + 20;
  const edges = sheet.edges.filter((e) => box.has(e.from) && box.has(e.to)).map((e) => {
    const a = box.get(e.from);
    const b = box.get(e.to);
    const [x2, y2] = border(a, b);
    return svg('line', { class: 'edge', 'data-edge': e.edgeId, x1: a.x + a.w / 2, y1: a.y + a.h / 2, x2, y2, 'marker-end': 'url(#arrow)' });
  });
  const nodes = sheet.nodes.map((n) => {
    const b = box.get(n.nodeId);
    const action = n.type === 0;
    const label = action ? (n.name ?? `action ${n.nodeId}`) : (n.table ?? `object ${n.nodeId}`);
    const sub = action ? (n.module ?? '') : `connection ${n.connectionId ?? '?'}`;
    return svg('g', {
      class: `node ${action ? 'action' : 'object'}${n.nodeId === selected ? ' selected' : ''}`,
      'data-node': n.nodeId,
      tabindex: 0,
      role: 'button',
      onclick: () => choose(n.nodeId),
      onkeydown: (ev) => { if (ev.key === 'Enter') choose(n.nodeId); },
    },
    svg('rect', { x: b.x, y: b.y, width: b.w, height: b.h, rx: action ? 3 : 14 }),
    svg('text', { x: b.x + b.w / 2, y: b.y + b.h / 2 - 3, 'text-anchor': 'middle', class: 'label' }, label.length > 26 ? `${label.slice(0, 25)}…` : label),
    svg('text', { x: b.x + b.w / 2, y: b.y + b.h / 2 + 13, 'text-anchor': 'middle', class: 'sub' }, sub),
    svg('title', {}, `${label} (${sub})`));
  });
  return svg('svg', { id: 'graph', class: 'graph', viewBox: `${minX} ${minY} ${maxX - minX} ${maxY - minY}`, role: 'img', 'aria-label': 'the sheet as a graph' },
    svg('defs', {}, svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: 'auto-start-reverse' },
      svg('path', { d: 'M0,0 L10,5 L0,10 z' }))),
    edges, nodes);
}

function nodeDetail(n) {
  const fact = (name, value, id) => (value === undefined || value === null || value === '' ? null
    : el('div', {}, el('span', {}, name), el('span', id ? { id } : {}, value)));
  if (n.type === 0) {
    return el('section', { class: 'card detail', id: 'node-detail' },
      el('h2', {}, `Action ${n.nodeId}: ${n.name ?? ''}`),
      el('div', { class: 'summary' }, fact('Module', n.module, 'node-module')),
      n.action ? [el('h2', {}, 'SQL'), el('pre', { id: 'node-sql' }, n.action)] : null,
      n.documentation ? [el('h2', {}, 'Documentation'), el('p', { id: 'node-doc' }, n.documentation)] : null,
      n.attributes ? [el('h2', {}, 'Attributes'), el('pre', {}, n.attributes)] : null);
  }
  return el('section', { class: 'card detail', id: 'node-detail' },
    el('h2', {}, `Object ${n.nodeId}: ${n.table ?? ''}`),
    el('div', { class: 'summary' },
      fact('Table', n.table, 'node-table'), fact('Connection', n.connectionId), fact('Type', n.objectTypeId),
      fact('Dependency', n.dependency), n.fields?.length ? fact('Fields', n.fields.join(', ')) : null),
    n.table ? el('p', {}, el('a', { href: lineageHref(n.table), id: 'node-lineage' }, `Who writes and reads ${n.table}, across every sheet`)) : null);
}

async function sheetView(id, node) {
  const sheet = await call('GetSheet', { sheetId: id });
  let selected = node;
  const draw = () => {
    const sel = sheet.nodes.find((n) => n.nodeId === selected);
    const runs = sheet.runs.map((i) => el('tr', { 'data-instance': i.batchInstanceId },
      el('td', { class: 'num' }, el('a', { href: `#/runs/${i.batchInstanceId}` }, i.batchInstanceId)),
      el('td', {}, i.batchName), el('td', {}, badge(i.state)), el('td', {}, localTime(i.start)),
      el('td', { class: 'num' }, took(i.start, i.end))));
    show(
      el('h1', {}, `Sheet ${sheet.sheetId}: ${sheet.name}`),
      el('p', { class: 'muted' }, `in ${sheet.folder}`, sheet.documentation ? ` — ${sheet.documentation}` : ''),
      el('section', { class: 'card graph-card' }, graph(sheet, selected, (nid) => {
        selected = nid;
        history.replaceState(null, '', `#/sheets/${id}?node=${nid}`);
        draw();
      }),
      el('p', { class: 'muted legend' }, 'Square corners: actions; round: objects (tables). Arrows follow the data.')),
      sel ? nodeDetail(sel) : el('p', { class: 'muted' }, 'Click a node to see its SQL, documentation or table.'),
      el('h2', {}, 'Last runs'),
      runs.length ? el('div', { class: 'table-wrap' }, el('table', { id: 'sheet-runs' },
        el('thead', {}, el('tr', {}, el('th', {}, 'Run'), el('th', {}, 'Batch'), el('th', {}, 'State'), el('th', {}, 'Start'), el('th', {}, 'Duration'))),
        el('tbody', {}, runs))) : el('p', { class: 'muted' }, 'It has not run yet.'));
    say('');
  };
  draw();
  return null;
}

// ---- lineage across sheets ----

/** The most tables or actions a column of the lineage graph draws. */
const LINEAGE_COLUMN = 40;

/** A table as `schema.name` (the name alone in the connection's default schema). */
function tableName(t) {
  return t.schema ? `${t.schema}.${t.table}` : t.table;
}

/** The address of a table's lineage. */
function lineageHref(name) {
  return `#/lineage?table=${encodeURIComponent(name)}`;
}

/** The lineage graph: the tables the writers read, the writers, the table, its readers and
 * the tables they write, in five columns; each table links to its own lineage, each action
 * to its place in its sheet. */
function lineageGraph(name, lineage) {
  // The tables one step further, each once (by name in any case), the table itself left out:
  // the one each action names as the table asked for (same connection, schema and name).
  const same = (x, y) => x.toLowerCase() === y.toLowerCase();
  const others = (list, key) => {
    const seen = new Map();
    for (const a of list) {
      for (const t of a[key] ?? []) {
        const itself = t.connectionId === a.connectionId && same(t.schema, a.schema) && same(t.table, a.table);
        const n = tableName(t);
        if (!itself && !seen.has(n.toLowerCase())) seen.set(n.toLowerCase(), n);
      }
    }
    return [...seen.values()].sort();
  };
  const columns = [
    others(lineage.writers, 'reads').map((n) => ({ kind: 'table', name: n })),
    lineage.writers.map((a) => ({ kind: 'action', a })),
    [{ kind: 'table', name, centre: true }],
    lineage.readers.map((a) => ({ kind: 'action', a })),
    others(lineage.readers, 'writes').map((n) => ({ kind: 'table', name: n })),
  ].map((col) => (col.length > LINEAGE_COLUMN
    ? [...col.slice(0, LINEAGE_COLUMN), { kind: 'more', count: col.length - LINEAGE_COLUMN }]
    : col));
  const [W, H, GAP_X, GAP_Y] = [210, 44, 60, 16];
  const rows = Math.max(...columns.map((c) => c.length), 1);
  const place = new Map();
  const nodes = [];
  columns.forEach((col, ci) => {
    const top = ((rows - col.length) * (H + GAP_Y)) / 2;
    col.forEach((item, ri) => {
      const x = ci * (W + GAP_X);
      const y = top + ri * (H + GAP_Y);
      const key = item.kind === 'action' ? `a${item.a.actionId}` : item.kind === 'table' ? `t${item.name.toLowerCase()}` : `m${ci}`;
      place.set(`${ci}:${key}`, { x, y });
      let label;
      let sub;
      let href;
      if (item.kind === 'action') {
        label = item.a.actionName || `action ${item.a.actionId}`;
        sub = `${item.a.folder.replace(/\/$/, '')}/${item.a.sheetName}`;
        href = `#/sheets/${item.a.sheetId}?node=${item.a.actionId}`;
      } else if (item.kind === 'table') {
        label = item.name;
        sub = item.centre ? 'this table' : 'table';
        href = lineageHref(item.name);
      } else {
        label = `${item.count} more`;
        sub = 'not drawn';
      }
      const cls = `node ${item.kind === 'action' ? 'action' : 'object'}${item.centre ? ' selected' : ''}`;
      const box = [
        svg('rect', { x, y, width: W, height: H, rx: item.kind === 'action' ? 3 : 14 }),
        svg('text', { x: x + W / 2, y: y + H / 2 - 3, 'text-anchor': 'middle', class: 'label' }, label.length > 30 ? `${label.slice(0, 29)}…` : label),
        svg('text', { x: x + W / 2, y: y + H / 2 + 13, 'text-anchor': 'middle', class: 'sub' }, sub.length > 34 ? `…${sub.slice(-33)}` : sub),
        svg('title', {}, item.kind === 'action' ? `${sub}/${label}` : label),
      ];
      const data = item.kind === 'action' ? { 'data-action': item.a.actionId } : item.kind === 'table' ? { 'data-table': item.name } : {};
      nodes.push(href
        ? svg('a', { href, class: cls, ...data, 'aria-label': item.kind === 'action' ? `action ${sub}/${label}` : `lineage of ${label}` }, box)
        : svg('g', { class: cls }, box));
    });
  });
  const line = (from, to) => {
    const a = place.get(from);
    const b = place.get(to);
    if (!a || !b) return null;
    return svg('line', { class: 'edge', x1: a.x + W, y1: a.y + H / 2, x2: b.x, y2: b.y + H / 2, 'marker-end': 'url(#arrow)' });
  };
  const centre = `2:t${name.toLowerCase()}`;
  const edges = [];
  for (const a of lineage.writers) {
    for (const t of a.reads ?? []) edges.push(line(`0:t${tableName(t).toLowerCase()}`, `1:a${a.actionId}`));
    edges.push(line(`1:a${a.actionId}`, centre));
  }
  for (const a of lineage.readers) {
    edges.push(line(centre, `3:a${a.actionId}`));
    for (const t of a.writes ?? []) edges.push(line(`3:a${a.actionId}`, `4:t${tableName(t).toLowerCase()}`));
  }
  const width = 5 * W + 4 * GAP_X;
  const height = rows * (H + GAP_Y);
  const drawn = svg('svg', { id: 'lineage-graph', class: 'graph lineage', viewBox: `-10 -10 ${width + 20} ${height + 10}`, 'aria-label': `the lineage of ${name}` },
    svg('defs', {}, svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: 'auto-start-reverse' },
      svg('path', { d: 'M0,0 L10,5 L0,10 z' }))),
    edges, nodes);
  // Legible on a phone: the card scrolls sideways rather than the text shrinking away.
  drawn.style.minWidth = `${Math.round(width * 0.7)}px`;
  return drawn;
}

async function lineageView(params) {
  const asked = (params.get('table') ?? '').trim();
  const input = el('input', { type: 'search', id: 'lineage-table', name: 'table', value: asked, placeholder: 'table or schema.table', 'aria-label': 'table' });
  const form = el('form', {
    class: 'filters',
    onsubmit: (ev) => {
      ev.preventDefault();
      if (input.value.trim()) location.hash = lineageHref(input.value.trim());
    },
  }, el('label', {}, 'Table', input), el('button', { type: 'submit' }, 'Show'));
  const intro = el('p', { class: 'muted' }, 'Which actions of every sheet write a table and which read it, from the data each deploy records (drawn objects and those taken from SQL alike), one step further each way.');
  if (!asked) {
    show(el('h1', {}, 'Lineage'), intro, form);
    say('');
    return null;
  }
  const dot = asked.lastIndexOf('.');
  const payload = dot > 0 ? { table: asked.slice(dot + 1), schema: asked.slice(0, dot) } : { table: asked };
  const lineage = await call('GetLineage', payload);
  const list = (id, title, actions, key, verb) => el('section', { class: 'card' },
    el('h2', {}, `${title} (${actions.length})`),
    actions.length ? el('ul', { id, class: 'lineage-list' }, actions.map((a) => el('li', { 'data-action': a.actionId },
      el('a', { href: `#/sheets/${a.sheetId}?node=${a.actionId}` }, `${a.folder.replace(/\/$/, '')}/${a.sheetName}/${a.actionName}`),
      (a[key] ?? []).length ? [` ${verb} `, ...a[key].flatMap((t, i) => [i ? ', ' : '', el('a', { href: lineageHref(tableName(t)) }, tableName(t))])] : null)))
      : el('p', { class: 'muted' }, 'None.'));
  show(el('h1', {}, `Lineage of ${asked}`), form,
    lineage.writers.length + lineage.readers.length
      ? el('section', { class: 'card graph-card' }, lineageGraph(asked, lineage),
        el('p', { class: 'muted legend' }, 'Left to right, as the data flows: the tables its writers read, its writers, the table, its readers, the tables they write. Click a table to follow it, an action to see it in its sheet.'))
      : el('p', { class: 'muted', id: 'lineage-none' }, `No action of the repository reads or writes ${asked}.`),
    list('lineage-writers', 'Written by', lineage.writers, 'reads', 'reads'),
    list('lineage-readers', 'Read by', lineage.readers, 'writes', 'writes'),
    lineage.truncated ? el('p', { class: 'muted' }, 'The answer holds the first 1,000 writers and readers.') : null);
  say('');
  return null;
}

// ---- the schedules ----

/** How many batches the schedules view shows with their next starts (each asks twice). */
const BATCHES = 50;

/** Why a planned start passed, in words. */
function missedReason(reason) {
  if (reason === 'running') return 'the previous run had not finished (ifRunning: skip)';
  if (reason === 'clockGap') return 'the clocks skip this time (springGap: skip)';
  if (reason.startsWith('cannotStart: ')) return `it could not start: ${reason.slice(13)}`;
  if (reason.startsWith('after: ')) return `the ${reason.slice(7)} (afterTimeout: skip)`;
  return reason;
}

async function schedulesView() {
  const { batches } = await call('ListBatches', {});
  const shown = batches.slice(0, BATCHES);
  const details = await Promise.all(shown.map(async (b) => {
    const [next, runs] = await Promise.all([
      call('NextRuns', { batchId: b.batchId, count: 5 }),
      call('ListBatchInstances', { batchId: b.batchId, limit: 5 }),
    ]);
    return { b, next, runs: runs.instances };
  }));
  const cards = details.map(({ b, next, runs }) => el('section', { class: 'card schedule', 'data-batch': b.batchId },
    el('h2', {}, b.name, ' ', b.enabled ? null : el('span', { class: 'state state-D' }, 'disabled')),
    el('div', { class: 'summary' },
      el('div', {}, el('span', {}, 'Schedule'), el('span', { class: 'schedule-text' }, next.schedule)),
      el('div', {}, el('span', {}, 'Zone'), el('span', {}, next.timeZone)),
      el('div', {}, el('span', {}, 'Spring gap'), el('span', {}, next.springGap)),
      el('div', {}, el('span', {}, 'Autumn overlap'), el('span', {}, next.autumnOverlap))),
    next.problem ? el('p', { class: 'problem' }, next.problem) : null,
    el('div', { class: 'table-wrap' }, el('table', { class: 'next-starts' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Planned'), el('th', {}, 'Runs at (local)'), el('th', {}, 'UTC'), el('th', { class: 'wide' }, 'Offset'), el('th', {}, 'Clock change'))),
      el('tbody', {}, next.starts.map((st) => el('tr', { class: st.clockChange ? 'clock-change' : '' },
        el('td', {}, st.planned, st.secondOccurrence ? ' (second)' : ''),
        el('td', {}, st.local), el('td', {}, st.utc), el('td', { class: 'wide' }, st.utcOffset ?? ''),
        el('td', { class: 'change' }, st.clockChange ?? '')))))),
    b.missed.length ? [el('h2', {}, 'Missed starts'), el('div', { class: 'table-wrap' }, el('table', { class: 'missed' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Planned'), el('th', {}, 'Why'), el('th', {}, 'Passed at'))),
      el('tbody', {}, b.missed.map((ms) => el('tr', {},
        el('td', {}, ms.planned), el('td', { class: 'why' }, missedReason(ms.reason)), el('td', {}, localTime(ms.decided)))))))] : null,
    el('h2', {}, 'Recent scheduled runs'),
    runs.length ? el('div', { class: 'table-wrap' }, el('table', { class: 'recent' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Run'), el('th', {}, 'Planned'), el('th', {}, 'State'), el('th', {}, 'Late'))),
      el('tbody', {}, runs.map((i) => el('tr', { 'data-instance': i.batchInstanceId },
        el('td', { class: 'num' }, el('a', { href: `#/runs/${i.batchInstanceId}` }, i.batchInstanceId)),
        el('td', {}, i.plannedStart ?? ''), el('td', {}, badge(i.state)),
        el('td', { class: i.late ? 'late' : 'muted' }, i.late ? `late ${duration((i.lateSeconds ?? 0) * 1000)}` : 'on time')))))) : el('p', { class: 'muted' }, 'No scheduled run yet.')));
  show(el('h1', {}, 'Schedules'),
    batches.length > BATCHES ? el('p', { class: 'muted' }, `The first ${BATCHES} of ${batches.length} batches, by name.`) : null,
    cards.length ? cards : el('p', { class: 'muted' }, 'No batch is scheduled.'));
  say('');
  return null;
}

// ---- the deploys ----

const DEPLOYS = 20;

async function deploysView(params) {
  const before = Number(params.get('before')) || null;
  // One more than shown: whether there is an older page.
  const payload = { limit: DEPLOYS + 1, changes: 20 };
  if (before) payload.before = before;
  const answer = (await call('ListDeploys', payload)).deploys;
  const deploys = answer.slice(0, DEPLOYS);
  const count = (d) => [['created', d.created], ['updated', d.updated], ['deleted', d.deleted]]
    .filter(([, n]) => n).map(([w, n]) => `${n} ${w}`).join(', ');
  const cards = deploys.map((d) => el('section', { class: 'card deploy', 'data-deploy': d.deployId },
    el('h2', {}, `Deploy ${d.deployId}`, ' ', el('span', { class: 'muted' }, localTime(d.deployed)),
      d.user ? el('span', { class: 'muted deployer' }, ` by ${d.user}`) : null),
    el('p', { class: 'muted counts' }, count(d)),
    el('div', { class: 'table-wrap' }, el('table', { class: 'changes' },
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

/** A stored definition (JSON text) as indented lines, or none. */
function definitionLines(text) {
  if (text === null || text === undefined) return [];
  try {
    return JSON.stringify(JSON.parse(text), null, 2).split('\n');
  } catch {
    return text.split('\n');
  }
}

/** The lines of `a` and `b` as a list of [mark, line], mark ' ', '-' or '+' (a longest
 * common subsequence of what lies between their common first and last lines); `null` when
 * that middle is too long to compare here. */
function lineDiff(a, b) {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head += 1;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head
    && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail += 1;
  const middle = lcsDiff(a.slice(head, a.length - tail), b.slice(head, b.length - tail));
  if (middle === null) return null;
  return [...a.slice(0, head).map((l) => [' ', l]), ...middle, ...a.slice(a.length - tail).map((l) => [' ', l])];
}

/** `lineDiff` of two lists by a longest common subsequence; `null` past 4,000,000 cells. */
function lcsDiff(a, b) {
  const n = a.length;
  const m = b.length;
  if (n * m > 4000000) return null;
  const width = m + 1;
  const len = new Uint32Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i -= 1) {
    for (let j = m - 1; j >= 0; j -= 1) {
      len[i * width + j] = a[i] === b[j] ? len[(i + 1) * width + j + 1] + 1
        : Math.max(len[(i + 1) * width + j], len[i * width + j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) { out.push([' ', a[i]]); i += 1; j += 1; }
    else if (i < n && (j === m || len[(i + 1) * width + j] >= len[i * width + j + 1])) { out.push(['-', a[i]]); i += 1; }
    else { out.push(['+', b[j]]); j += 1; }
  }
  return out;
}

/** The diff as a `pre`: an unchanged stretch keeps three lines next to each change and
 * folds the rest into one line, when that hides more than one line. */
function diffBlock(diff) {
  const lines = [];
  let k = 0;
  while (k < diff.length) {
    if (diff[k][0] !== ' ') { lines.push(diff[k]); k += 1; continue; }
    let end = k;
    while (end < diff.length && diff[end][0] === ' ') end += 1;
    const run = diff.slice(k, end);
    const head = k === 0 ? 0 : 3;
    const tail = end === diff.length ? 0 : 3;
    if (run.length > head + tail + 1) {
      lines.push(...run.slice(0, head));
      lines.push(['…', `${run.length - head - tail} unchanged lines`]);
      lines.push(...run.slice(run.length - tail));
    } else {
      lines.push(...run);
    }
    k = end;
  }
  const cls = { '+': 'add', '-': 'del', ' ': 'same', '…': 'fold' };
  return el('pre', { class: 'diff', id: 'diff' }, lines.map(([mark, line]) => el('span', { class: cls[mark] }, `${mark} ${line}`)));
}

async function deployChangeView(id) {
  const c = await call('GetDeployChange', { historyId: id });
  const now = definitionLines(c.definition);
  const before = definitionLines(c.previous?.definition);
  const diff = c.previous ? lineDiff(before, now) : now.map((l) => ['+', l]);
  show(
    el('h1', {}, `${c.kind} ${c.objectId}${c.name ? `: ${c.name}` : ''}`),
    el('section', { class: 'card' },
      el('div', { class: 'summary' },
        el('div', {}, el('span', {}, 'Change'), el('span', { id: 'change-kind' }, el('span', { class: `change-badge change-${c.change}` }, c.change))),
        el('div', {}, el('span', {}, 'Deploy'), el('span', {}, c.deployId ?? '—')),
        el('div', {}, el('span', {}, 'When'), el('span', {}, localTime(c.deployed))),
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

// ---- notifications ----

/** How many notifications a page shows. */
const NOTIFICATIONS = 50;

/** What was sent, what waits for its next try, what was given up (ListNotifications). */
async function notificationsView(params) {
  const asked = { limit: NOTIFICATIONS };
  const state = params.get('state');
  if (state) asked.state = state;
  const before = Number(params.get('before'));
  if (before > 0) asked.before = before;
  const { notifications } = await call('ListNotifications', asked);
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
    rows.length ? el('div', { class: 'table-wrap' }, el('table', { id: 'notifications' },
      el('thead', {}, el('tr', {}, el('th', {}, 'ID'), el('th', {}, 'State'), el('th', {}, 'Event'), el('th', {}, 'Batch'),
        el('th', {}, 'Run'), el('th', {}, 'Channel'), el('th', {}, 'Tries'), el('th', {}, 'Recorded'),
        el('th', {}, 'Sent or next try'), el('th', {}, 'Last error'))),
      el('tbody', {}, rows))) : el('p', { class: 'muted' }, 'No notification.'),
    older ? el('p', {}, el('a', { href: older, id: 'older' }, 'Older')) : null);
  say('');
  return null;
}

// ---- the router ----

const AUDIT = 100;

/** The audit (admins): who did what, when, from where, newest first, with filters. */
async function auditView(params) {
  const asked = { limit: AUDIT };
  const fields = ['user', 'command', 'outcome'];
  for (const f of fields) {
    const v = params.get(f);
    if (v) asked[f] = v;
  }
  const before = Number(params.get('before'));
  if (before > 0) asked.beforeId = before;
  const { entries } = await call('ListAudit', asked);
  const user = el('input', { type: 'search', name: 'user', id: 'audit-user', value: asked.user ?? '', placeholder: 'user' });
  const command = el('input', { type: 'search', name: 'command', id: 'audit-command', value: asked.command ?? '', placeholder: 'command' });
  const outcome = el('select', { name: 'outcome', id: 'audit-outcome' },
    ['', 'done', 'refused'].map((o) => el('option', { value: o, selected: o === (asked.outcome ?? '') }, o || 'any outcome')));
  const filters = el('form', {
    class: 'filters',
    onsubmit: (ev) => {
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
  if (entries.length === AUDIT) q.set('before', entries[entries.length - 1].id);
  const older = entries.length === AUDIT ? `#/audit?${q}` : null;
  show(el('h1', {}, 'Audit'),
    el('p', { class: 'muted' }, 'Every change and every refused attempt, newest first: who, how they were known, from where, on which host, what.'),
    filters,
    rows.length ? el('div', { class: 'table-wrap' }, el('table', { id: 'audit' },
      el('thead', {}, el('tr', {}, el('th', {}, 'ID'), el('th', {}, 'When'), el('th', {}, 'User'), el('th', {}, 'Via'),
        el('th', {}, 'Client'), el('th', {}, 'Host'), el('th', {}, 'Command'), el('th', {}, 'Outcome'), el('th', {}, 'What'))),
      el('tbody', {}, rows))) : el('p', { class: 'muted' }, 'No entry matches.'),
    older ? el('p', {}, el('a', { href: older, id: 'older' }, 'Older')) : null);
  say('');
  return null;
}

const routes = [
  [/^#\/audit(?:\?(.*))?$/, (m) => auditView(new URLSearchParams(m[1] ?? ''))],
  [/^#\/sheets\/(\d+)(?:\?node=(\d+))?$/, (m) => sheetView(Number(m[1]), m[2] ? Number(m[2]) : null)],
  [/^#\/sheets$/, () => sheetsView()],
  [/^#\/lineage(?:\?(.*))?$/, (m) => lineageView(new URLSearchParams(m[1] ?? ''))],
  [/^#\/schedules$/, () => schedulesView()],
  [/^#\/deploys\/changes\/(\d+)$/, (m) => deployChangeView(Number(m[1]))],
  [/^#\/deploys(?:\?(.*))?$/, (m) => deploysView(new URLSearchParams(m[1] ?? ''))],
  [/^#\/runs\/(\d+)(?:\?action=(\d+))?$/, (m) => runView(Number(m[1]), m[2] ? Number(m[2]) : null)],
  [/^#\/runs(?:\?(.*))?$/, (m) => runsView(new URLSearchParams(m[1] ?? ''))],
  [/^#\/notifications(?:\?(.*))?$/, (m) => notificationsView(new URLSearchParams(m[1] ?? ''))],
];

let current = null;

/** Shows the view the address names. */
async function route() {
  current?.stop?.();
  current = null;
  // Only the newest call shows its view: one that a retry or a click overtook stops its own.
  const generation = ++routeGeneration;
  const hash = location.hash || '#/runs';
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('current', hash.startsWith(`#/${a.dataset.view}`));
  }
  const found = routes.find(([re]) => re.test(hash));
  if (!found) {
    show(el('p', { class: 'problem' }, `No page here: ${hash}`));
    return;
  }
  say('loading…');
  try {
    if (!me) await loadMe();
    const view = await found[1](found[0].exec(hash));
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
    failed(e, () => route());
  }
}

/** Counts the calls of `route`: the newest one owns the screen. */
let routeGeneration = 0;

/** How many times in a row the view could not be loaded for want of the server. */
let routeAttempt = 0;

window.addEventListener('hashchange', () => route());
route();
