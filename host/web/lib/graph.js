// A sheet drawn as a graph: its nodes' boxes (as deployed, or laid out in columns) and the
// arrows of the data between them.

import { svg } from './dom.js';

/** @typedef {import('./types.js').Sheet} Sheet */

/** A node's box: left, top, width, height.
 * @typedef {{x: number, y: number, w: number, h: number}} Box */

/** Each node's box: as deployed, or, for a sheet deployed without a layout, in columns by
 * how far along the edges it sits.
 * @param {Pick<Sheet, 'nodes' | 'edges'>} sheet
 * @returns {Map<number, Box>} */
export function boxes(sheet) {
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
      if (depth.has(e.to) && d > /** @type {number} */ (depth.get(e.to)) && d <= sheet.nodes.length) { depth.set(e.to, d); moved = true; }
    }
    if (!moved) break;
  }
  const row = new Map();
  for (const n of sheet.nodes) {
    const d = /** @type {number} */ (depth.get(n.nodeId));
    const r = row.get(d) ?? 0;
    row.set(d, r + 1);
    box.set(n.nodeId, { x: d * 220, y: r * 90, w: 170, h: 56 });
  }
  return box;
}

/** Where the line from the centre of `a` towards the centre of `b` leaves box `b`.
 * @param {Box} a @param {Box} b
 * @returns {[number, number]} */
export function border(a, b) {
  const [ax, ay] = [a.x + a.w / 2, a.y + a.h / 2];
  const [bx, by] = [b.x + b.w / 2, b.y + b.h / 2];
  const [dx, dy] = [ax - bx, ay - by];
  if (dx === 0 && dy === 0) return [bx, by];
  const t = Math.min(Math.abs((b.w / 2) / (dx || 1e-9)), Math.abs((b.h / 2) / (dy || 1e-9)));
  return [bx + dx * t, by + dy * t];
}

/** The sheet as an SVG graph, node `selected` marked; `choose` is given the node clicked.
 * @param {Pick<Sheet, 'nodes' | 'edges'>} sheet
 * @param {number | null | undefined} selected
 * @param {(nodeId: number) => void} choose */
export function graph(sheet, selected, choose) {
  const box = boxes(sheet);
  const all = [...box.values()];
  const minX = Math.min(...all.map((b) => b.x)) - 20;
  const minY = Math.min(...all.map((b) => b.y)) - 20;
  const maxX = Math.max(...all.map((b) => b.x + b.w)) + 20;
  const maxY = Math.max(...all.map((b) => b.y + b.h)) + 20;
  const edges = sheet.edges.filter((e) => box.has(e.from) && box.has(e.to)).map((e) => {
    const a = /** @type {Box} */ (box.get(e.from));
    const b = /** @type {Box} */ (box.get(e.to));
    const [x2, y2] = border(a, b);
    return svg('line', { class: 'edge', 'data-edge': e.edgeId, x1: a.x + a.w / 2, y1: a.y + a.h / 2, x2, y2, 'marker-end': 'url(#arrow)' });
  });
  const nodes = sheet.nodes.map((n) => {
    const b = /** @type {Box} */ (box.get(n.nodeId));
    const action = n.type === 0;
    const label = action ? (n.name ?? `action ${n.nodeId}`) : (n.table ?? `object ${n.nodeId}`);
    const sub = action ? (n.module ?? '') : `connection ${n.connectionId ?? '?'}`;
    return svg('g', {
      class: `node ${action ? 'action' : 'object'}${n.nodeId === selected ? ' selected' : ''}`,
      'data-node': n.nodeId,
      tabindex: 0,
      role: 'button',
      onclick: () => choose(n.nodeId),
      onkeydown: (/** @type {KeyboardEvent} */ ev) => { if (ev.key === 'Enter') choose(n.nodeId); },
    },
    svg('rect', { x: b.x, y: b.y, width: b.w, height: b.h, rx: action ? 3 : 14 }),
    svg('text', { x: b.x + b.w / 2, y: b.y + b.h / 2 - 3, 'text-anchor': 'middle', class: 'label' }, label.length > 26 ? `${label.slice(0, 25)}…` : label),
    svg('text', { x: b.x + b.w / 2, y: b.y + b.h / 2 + 13, 'text-anchor': 'middle', class: 'sub' }, sub),
    svg('title', {}, `${label} (${sub})`));
  });
  return svg('svg', { id: 'graph', class: 'graph', viewBox: `${minX} ${minY} ${maxX - minX} ${maxY - minY}`, role: 'group', 'aria-label': 'the sheet as a graph: its actions and tables' },
    svg('defs', {}, svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: 'auto-start-reverse' },
      svg('path', { d: 'M0,0 L10,5 L0,10 z' }))),
    edges, nodes);
}
