// The sheets by folder, and one sheet: its graph, a node's SQL or table, its last runs.

import { badge, el, say, show } from '../lib/dom.js';
import { call } from '../lib/api.js';
import { graph } from '../lib/graph.js';
import { localTime, took } from '../lib/time.js';
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

/** @param {number} id @param {number | null} node */
export async function sheetView(id, node) {
  /** @type {Sheet} */
  const sheet = await call('GetSheet', { sheetId: id });
  let selected = node;
  const said = el('p', { class: 'problem', id: 'sheet-problem', role: 'alert' });
  const draw = () => {
    const sel = sheet.nodes.find((n) => n.nodeId === selected);
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
      el('section', { class: 'card graph-card' }, graph(sheet, selected, (nid) => {
        selected = nid;
        history.replaceState(null, '', `#/sheets/${id}?node=${nid}`);
        draw();
      }),
      el('p', { class: 'muted legend' }, 'Square corners: actions; round: objects (tables). Arrows follow the data.')),
      sel ? nodeDetail(sel, said) : el('p', { class: 'muted' }, 'Click a node to see its SQL, documentation or table.'),
      el('h2', {}, 'Last runs'),
      runs.length ? el('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'last runs' }, el('table', { id: 'sheet-runs' },
        el('thead', {}, el('tr', {}, el('th', {}, 'Run'), el('th', {}, 'Batch'), el('th', {}, 'State'), el('th', {}, 'Start'), el('th', {}, 'Duration'))),
        el('tbody', {}, runs))) : el('p', { class: 'muted' }, 'It has not run yet.'));
    say('');
  };
  draw();
  return null;
}
