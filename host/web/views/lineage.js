// Lineage across sheets: who writes a table and who reads it, one step further each way.

import { el, say, show, svg } from '../lib/dom.js';
import { call } from '../lib/api.js';
import { layered } from '../lib/layered.js';
import { zoomable } from '../lib/panzoom.js';

/** @typedef {import('../lib/types.js').Lineage} Lineage */
/** @typedef {import('../lib/types.js').LineageAction} LineageAction */
/** @typedef {import('../lib/types.js').LineageTable} LineageTable */

/** A box of a column of the lineage graph: a table, an action, or how many more were not drawn.
 * @typedef {{kind: 'table', name: string, centre?: boolean}
 *   | {kind: 'action', a: LineageAction, centre?: boolean}
 *   | {kind: 'more', count: number, centre?: boolean}} Item */

/** The most tables or actions a column of the lineage graph draws. */
const LINEAGE_COLUMN = 40;

/** A table as `schema.name` (the name alone in the connection's default schema).
 * @param {LineageTable} t */
function tableName(t) {
  return t.schema ? `${t.schema}.${t.table}` : t.table;
}

/** The address of a table's lineage.
 * @param {string} name */
export function lineageHref(name) {
  return `#/lineage?table=${encodeURIComponent(name)}`;
}

/** The lineage graph: the tables the writers read, the writers, the table, its readers and
 * the tables they write, in five columns; each table links to its own lineage, each action
 * to its place in its sheet.
 * @param {string} name @param {Lineage} lineage */
function lineageGraph(name, lineage) {
  // The tables one step further, each once (by name in any case), the table itself left out:
  // the one each action names as the table asked for (same connection, schema and name).
  /** @param {string} x @param {string} y */
  const same = (x, y) => x.toLowerCase() === y.toLowerCase();
  /** @param {LineageAction[]} list @param {'reads' | 'writes'} key */
  const others = (list, key) => {
    /** @type {Map<string, string>} */
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
  /** @type {Item[][]} */
  const columns = /** @type {Item[][]} */ ([
    others(lineage.writers, 'reads').map((n) => ({ kind: 'table', name: n })),
    lineage.writers.map((a) => ({ kind: 'action', a })),
    [{ kind: 'table', name, centre: true }],
    lineage.readers.map((a) => ({ kind: 'action', a })),
    others(lineage.readers, 'writes').map((n) => ({ kind: 'table', name: n })),
  ]).map((col) => (col.length > LINEAGE_COLUMN
    ? [...col.slice(0, LINEAGE_COLUMN), { kind: 'more', count: col.length - LINEAGE_COLUMN }]
    : col));
  const [W, H, GAP_X, GAP_Y] = [210, 44, 60, 16];
  const rows = Math.max(...columns.map((c) => c.length), 1);
  /** @type {Map<string, {x: number, y: number}>} */
  const place = new Map();
  /** @type {SVGElement[]} */
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
  /** @param {string} from @param {string} to */
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

/** @param {URLSearchParams} params */
/** @typedef {{tables: LineageTable[], actions: {actionId: number, actionName: string, sheetId: number, sheetName: string, folder: string}[], edges: {actionId: number, table: number, writes: boolean}[], truncated: boolean}} LineageMap */

/** The data graph `g` drawn in layers as the data flows, zoomable: each table a link to its
 * lineage, each action to its place in its sheet; `centre` (a table's name) marked.
 * @param {LineageMap} g @param {string} [centre] */
export function lineageMap(g, centre) {
  const nodes = [...g.tables.map((_, i) => ({ id: `t${i}` })), ...g.actions.map((a) => ({ id: `a${a.actionId}` }))];
  const links = g.edges.map((e) => (e.writes ? { from: `a${e.actionId}`, to: `t${e.table}` } : { from: `t${e.table}`, to: `a${e.actionId}` }));
  const { places, layers, rows } = layered(nodes, links);
  const [W, H, GX, GY] = [190, 40, 70, 14];
  const at = (/** @type {string} */ id) => {
    const p = places.get(id) ?? { x: 0, y: 0 };
    return { x: p.x * (W + GX), y: p.y * (H + GY) };
  };
  const lower = centre?.toLowerCase();
  const box = (/** @type {string} */ id, /** @type {string} */ label, /** @type {string} */ sub, /** @type {boolean} */ action, /** @type {string} */ href, /** @type {Record<string, any>} */ data, /** @type {boolean} */ marked) => {
    const { x, y } = at(id);
    return svg('a', { href, class: `node ${action ? 'action' : 'object'}${marked ? ' selected' : ''}`, ...data, 'aria-label': action ? `action ${sub}/${label}` : `lineage of ${label}` },
      svg('rect', { x, y, width: W, height: H, rx: action ? 3 : 14 }),
      svg('text', { x: x + W / 2, y: y + H / 2 - 2, 'text-anchor': 'middle', class: 'label' }, label.length > 28 ? `${label.slice(0, 27)}…` : label),
      svg('text', { x: x + W / 2, y: y + H / 2 + 12, 'text-anchor': 'middle', class: 'sub' }, sub.length > 32 ? `…${sub.slice(-31)}` : sub),
      svg('title', {}, action ? `${sub}/${label}` : label));
  };
  const tables = g.tables.map((t, i) => box(`t${i}`, tableName(t), 'table', false, lineageHref(tableName(t)), { 'data-table': tableName(t) }, tableName(t).toLowerCase() === lower || t.table.toLowerCase() === lower));
  const actions = g.actions.map((a) => {
    const sheet = `${a.folder.replace(/\/$/, '')}/${a.sheetName}`;
    return box(`a${a.actionId}`, a.actionName || `action ${a.actionId}`, sheet, true, `#/sheets/${a.sheetId}?node=${a.actionId}`, { 'data-action': a.actionId }, false);
  });
  const edges = links.map((l) => {
    const a = at(l.from);
    const b = at(l.to);
    return svg('line', { class: 'edge', x1: a.x + W, y1: a.y + H / 2, x2: b.x, y2: b.y + H / 2, 'marker-end': 'url(#map-arrow)' });
  });
  const width = Math.max(1, layers * (W + GX) - GX);
  const height = Math.max(1, rows * (H + GY) - GY);
  const drawn = svg('svg', { id: 'lineage-map', class: 'graph map', role: 'group', 'aria-label': 'tables and the actions that read and write them' },
    svg('defs', {}, svg('marker', { id: 'map-arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: 'auto-start-reverse' },
      svg('path', { d: 'M0,0 L10,5 L0,10 z' }))),
    edges, tables, actions);
  return zoomable(drawn, { x: -10, y: -10, w: width + 20, h: height + 20 }, 'the lineage graph');
}

/** The lineage view: without `table`, the whole repository's data graph; with it, who writes
 * and reads the table and what lies upstream and downstream of it (`depth` actions away).
 * @param {URLSearchParams} params
 * @returns {Promise<import('../lib/types.js').Shown>} */
export async function lineageView(params) {
  const asked = (params.get('table') ?? '').trim();
  const input = el('input', { type: 'search', id: 'lineage-table', name: 'table', value: asked, placeholder: 'table or schema.table', 'aria-label': 'table' });
  const form = el('form', {
    class: 'filters',
    onsubmit: (/** @type {SubmitEvent} */ ev) => {
      ev.preventDefault();
      if (input.value.trim()) location.hash = lineageHref(input.value.trim());
    },
  }, el('label', {}, 'Table', input), el('button', { type: 'submit' }, 'Show'));
  const intro = el('p', { class: 'muted' }, 'Which actions of every sheet write a table and which read it, from the data each deploy records (drawn objects and those taken from SQL alike), one step further each way.');
  if (!asked) {
    /** @type {LineageMap} */
    const all = await call('GetLineageGraph', {});
    show(el('h1', {}, 'Lineage'), intro, form,
      el('section', { class: 'card' },
        el('h2', {}, `Every table and the actions that read and write it (${all.tables.length} tables, ${all.actions.length} actions)`),
        all.edges.length ? lineageMap(all) : el('p', { class: 'muted' }, 'No deployed action reads or writes a table yet.'),
        all.truncated ? el('p', { class: 'muted' }, 'The graph is larger than 4,000 lines: the rest is left out; ask for a table to see its part.') : null,
        el('p', { class: 'muted legend' }, 'Left to right as the data flows. Scroll or + and − to zoom, drag to move. Click a table to see its lineage, an action to see it in its sheet.')));
    say('');
    return null;
  }
  const dot = asked.lastIndexOf('.');
  /** @type {Record<string, any>} */
  const payload = dot > 0 ? { table: asked.slice(dot + 1), schema: asked.slice(0, dot) } : { table: asked };
  const depth = Math.min(5, Math.max(1, Number(params.get('depth')) || 2));
  /** @type {[Lineage, LineageMap]} */
  const [lineage, around] = await Promise.all([call('GetLineage', payload), call('GetLineageGraph', { ...payload, depth })]);
  /** @param {string} id @param {string} title @param {LineageAction[]} actions
   * @param {'reads' | 'writes'} key @param {string} verb */
  const list = (id, title, actions, key, verb) => el('section', { class: 'card' },
    el('h2', {}, `${title} (${actions.length})`),
    actions.length ? el('ul', { id, class: 'lineage-list' }, actions.map((a) => el('li', { 'data-action': a.actionId },
      el('a', { href: `#/sheets/${a.sheetId}?node=${a.actionId}` }, `${a.folder.replace(/\/$/, '')}/${a.sheetName}/${a.actionName}`),
      (a[key] ?? []).length ? [` ${verb} `, .../** @type {LineageTable[]} */ (a[key]).flatMap((t, i) => [i ? ', ' : '', el('a', { href: lineageHref(tableName(t)) }, tableName(t))])] : null)))
      : el('p', { class: 'muted' }, 'None.'));
  show(el('h1', {}, `Lineage of ${asked}`), form,
    lineage.writers.length + lineage.readers.length
      ? el('section', { class: 'card graph-card' }, lineageGraph(asked, lineage),
        el('p', { class: 'muted legend' }, 'Left to right, as the data flows: the tables its writers read, its writers, the table, its readers, the tables they write. Click a table to follow it, an action to see it in its sheet.'))
      : el('p', { class: 'muted', id: 'lineage-none' }, `No action of the repository reads or writes ${asked}.`),
    list('lineage-writers', 'Written by', lineage.writers, 'reads', 'reads'),
    list('lineage-readers', 'Read by', lineage.readers, 'writes', 'writes'),
    around.edges.length ? el('section', { class: 'card' },
      el('h2', {}, `Upstream and downstream, ${depth} action${depth === 1 ? '' : 's'} each way`),
      el('nav', { class: 'pager', 'aria-label': 'how far' }, 'Actions away: ',
        [1, 2, 3, 4, 5].map((n) => (n === depth ? el('span', { class: 'current-page', 'aria-current': 'page' }, String(n))
          : el('a', { href: `${lineageHref(asked)}&depth=${n}`, 'data-depth': n }, String(n))))),
      lineageMap(around, asked)) : null,
    lineage.truncated ? el('p', { class: 'muted' }, 'The answer holds the first 1,000 writers and readers.') : null);
  say('');
  return null;
}
