// The sheets by folder, and one sheet: its graph, a node's SQL or table, its last runs.

import { badge, el, say, show } from '../lib/dom.js';
import { call } from '../lib/api.js';
import { graph } from '../lib/graph.js';
import { zoomable } from '../lib/panzoom.js';
import { ACTION_STATES } from '../lib/order.js';
import { localTime, took, zoneName } from '../lib/time.js';
import { lineageHref } from './lineage.js';
import { startRun } from '../lib/actions.js';
import { can, failed } from '../lib/session.js';
import { Unauthorized } from '../lib/api.js';

/** @typedef {import('../lib/types.js').Tree} Tree */
/** @typedef {import('../lib/types.js').SheetItem} SheetItem */
/** @typedef {import('../lib/types.js').Sheet} Sheet */
/** @typedef {import('../lib/types.js').SheetNode} SheetNode */

export async function sheetsView() {
  /** @type {Tree} */
  const tree = await call('ListSheets', { limit: 5000 });
  /** @type {Map<number, SheetItem[]>} */
  const byFolder = new Map();
  for (const s of tree.sheets) {
    if (!byFolder.has(s.folderId)) byFolder.set(s.folderId, []);
    /** @type {SheetItem[]} */ (byFolder.get(s.folderId)).push(s);
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

/** Asks for a run of `elements` and opens it once started (a refusal said in `where`).
 * @param {string} elements @param {string} name @param {HTMLElement} where */
async function runFromHere(elements, name, where) {
  try {
    const run = await startRun(elements, name);
    if (run !== null) location.hash = `#/runs/${run}`;
  } catch (e) {
    if (e instanceof Unauthorized) { failed(e); return; }
    where.textContent = e instanceof Error ? e.message : String(e);
  }
}

/** @param {SheetNode} n @param {HTMLElement} said where a refusal is said */
function nodeDetail(n, said) {
  /** @param {string} name @param {string | number | undefined} value @param {string} [id] */
  const fact = (name, value, id) => (value === undefined || value === null || value === '' ? null
    : el('div', {}, el('span', {}, name), el('span', id ? { id } : {}, value)));
  if (n.type === 0) {
    return el('section', { class: 'card detail', id: 'node-detail' },
      el('h2', {}, `Action ${n.nodeId}: ${n.name ?? ''}`),
      el('div', { class: 'summary' }, fact('Module', n.module, 'node-module')),
      can('operate') ? el('div', { class: 'actions-bar' },
        el('button', { type: 'button', class: 'secondary', id: 'run-action', onclick: () => runFromHere(`action ${n.nodeId}`, n.name ?? `action ${n.nodeId}`, said) }, 'Run this action…'),
        el('button', { type: 'button', class: 'secondary', id: 'run-action-on', onclick: () => runFromHere(`action ${n.nodeId}+`, `${n.name ?? n.nodeId} and what follows`, said) }, 'Run it and what follows…')) : null,
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

/** The sheets `links` as a list of links, each with the tables they share.
 * @param {string} id @param {string} title @param {import('../lib/types.js').SheetLink[]} links @param {string} verb */
function linkList(id, title, links, verb) {
  return el('section', { class: 'card' },
    el('h2', {}, `${title} (${links.length})`),
    links.length ? el('ul', { id, class: 'lineage-list' }, links.map((l) => el('li', { 'data-sheet': l.sheetId },
      el('a', { href: `#/sheets/${l.sheetId}` }, `${l.folder.replace(/\/$/, '')}/${l.name}`),
      ` ${verb} `, l.tables.flatMap((t, i) => [i ? ', ' : '', el('a', { href: lineageHref(t) }, t)]))))
      : el('p', { class: 'muted' }, 'None.'));
}

/** A sheet: its graph (zoomable; the actions coloured by the states of its last run), the
 * node chosen (its SQL, documentation or table), the sheets it shares tables with, its last
 * runs.
 * @param {number} id @param {number | null} node */
export async function sheetView(id, node) {
  /** @type {Sheet} */
  const sheet = await call('GetSheet', { sheetId: id });
  let selected = node;
  const said = el('p', { class: 'problem', id: 'sheet-problem', role: 'alert' });
  const detail = el('div', { id: 'node-place' });
  const drawn = graph(sheet, selected, (nid) => {
    selected = nid;
    history.replaceState(null, '', `#/sheets/${id}?node=${nid}`);
    for (const n of drawn.querySelectorAll('.node')) n.classList.toggle('selected', /** @type {SVGElement} */ (n).dataset.node === String(nid));
    writeDetail();
  });
  const writeDetail = () => {
    const sel = sheet.nodes.find((n) => n.nodeId === selected);
    detail.replaceChildren(sel ? nodeDetail(sel, said) : el('p', { class: 'muted' }, 'Click a node to see its SQL, documentation or table.'));
  };
  writeDetail();
  const [bx, by, bw, bh] = (drawn.getAttribute('viewBox') ?? '0 0 1 1').split(' ').map(Number);
  const states = el('p', { class: 'muted legend', id: 'graph-states' });
  const runs = sheet.runs.map((i) => el('tr', { 'data-instance': i.batchInstanceId },
    el('td', { class: 'num' }, el('a', { href: `#/runs/${i.batchInstanceId}` }, i.batchInstanceId)),
    el('td', {}, i.batchName), el('td', {}, badge(i.state)), el('td', {}, localTime(i.start)),
    el('td', { class: 'num' }, took(i.start, i.end))));
  show(
    el('h1', {}, `Sheet ${sheet.sheetId}: ${sheet.name}`),
    el('p', { class: 'muted' }, `in ${sheet.folder}`, sheet.documentation ? ` — ${sheet.documentation}` : ''),
    can('operate') ? el('div', { class: 'actions-bar' },
      el('button', { type: 'button', class: 'secondary', id: 'run-sheet', onclick: () => runFromHere(`sheet ${sheet.sheetId}`, sheet.name, said) }, 'Run this sheet…')) : null,
    said,
    el('section', { class: 'card graph-card' }, zoomable(drawn, { x: bx, y: by, w: bw, h: bh }, 'the sheet as a graph'),
      el('p', { class: 'muted legend' }, 'Square corners: actions; round: objects (tables). Arrows follow the data. Scroll or + and − to zoom, drag to move.'),
      states),
    detail,
    el('div', { class: 'two' },
      linkList('fed-by', 'Fed by', sheet.fedBy ?? [], 'writes'),
      linkList('feeds', 'Feeds', sheet.feeds ?? [], 'reads')),
    el('h2', {}, 'Last runs'),
    runs.length ? el('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'last runs' }, el('table', { id: 'sheet-runs' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Run'), el('th', {}, 'Batch'), el('th', {}, 'State'), el('th', {}, `Start (${zoneName()})`), el('th', {}, 'Duration'))),
      el('tbody', {}, runs))) : el('p', { class: 'muted' }, 'It has not run yet.'));
  say('');
  // The states of the last run on the graph, once it is read.
  const last = sheet.runs[0];
  if (last) {
    call('GetBatchInstance', { batchInstanceId: last.batchInstanceId }).then((/** @type {import('../lib/types.js').Instance} */ run) => {
      let marked = 0;
      for (const a of run.actions) {
        if (a.sheetId !== sheet.sheetId) continue;
        const g = drawn.querySelector(`.node[data-node="${a.actionId}"]`);
        if (!g) continue;
        g.classList.add(`run-${a.state}`);
        g.querySelector('title')?.append(` — ${ACTION_STATES[a.state] ?? a.state} in run ${run.batchInstanceId}`);
        marked += 1;
      }
      if (marked) {
        states.replaceChildren('Actions coloured by their state in ', el('a', { href: `#/runs/${run.batchInstanceId}` }, `run ${run.batchInstanceId}`),
          ` (${run.batchName}, ${localTime(run.start)}): green finished, red failed, blue running, yellow skipped, orange halted, grey waiting.`);
      }
    }).catch(() => { /* the graph stays without states */ });
  }
  return null;
}
