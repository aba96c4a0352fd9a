// A directed graph laid out in layers, left to right as the data flows: each node in the
// column of its longest path from a node nothing points at, nodes in a column ordered by
// the mean place of what points at them (fewer crossings), a cycle's rest put last. Pure
// (tests/web).

/** @typedef {{id: string}} LayoutNode
 *  @typedef {{from: string, to: string}} LayoutEdge
 *  @typedef {{x: number, y: number, layer: number}} Place */

/** Where each node goes, in units of one column and one row.
 * @param {LayoutNode[]} nodes
 * @param {LayoutEdge[]} edges
 * @returns {{places: Map<string, Place>, layers: number, rows: number}} */
export function layered(nodes, edges) {
  const ids = new Set(nodes.map((n) => n.id));
  /** @type {Map<string, string[]>} */
  const out = new Map(nodes.map((n) => [n.id, []]));
  /** @type {Map<string, string[]>} */
  const inn = new Map(nodes.map((n) => [n.id, []]));
  for (const e of edges) {
    if (!ids.has(e.from) || !ids.has(e.to) || e.from === e.to) continue;
    out.get(e.from)?.push(e.to);
    inn.get(e.to)?.push(e.from);
  }
  // Longest path layering, by Kahn's order. A cycle (an action that reads and writes one
  // table) is broken where it is met: of the nodes left, the one with the fewest
  // predecessors not yet placed goes next, after those that are, and the edges back to
  // what is placed are left out of the layering.
  /** @type {Map<string, number>} */
  const layer = new Map();
  const waiting = new Map(nodes.map((n) => [n.id, inn.get(n.id)?.length ?? 0]));
  const placed = new Set();
  const queue = nodes.filter((n) => waiting.get(n.id) === 0).map((n) => n.id);
  for (const id of queue) layer.set(id, 0);
  for (let i = 0; ;) {
    for (; i < queue.length; i += 1) {
      const id = queue[i];
      placed.add(id);
      for (const next of out.get(id) ?? []) {
        if (placed.has(next)) continue;
        layer.set(next, Math.max(layer.get(next) ?? 0, (layer.get(id) ?? 0) + 1));
        const left = (waiting.get(next) ?? 0) - 1;
        waiting.set(next, left);
        if (left === 0) queue.push(next);
      }
    }
    if (placed.size >= nodes.length) break;
    let pick = '';
    let fewest = Infinity;
    for (const n of nodes) {
      const w = waiting.get(n.id) ?? 0;
      if (!placed.has(n.id) && w < fewest) { fewest = w; pick = n.id; }
    }
    if (!pick) break;
    waiting.set(pick, 0);
    if (!layer.has(pick)) layer.set(pick, 0);
    queue.push(pick);
  }
  /** @type {string[][]} */
  const columns = [];
  for (const n of nodes) {
    const l = /** @type {number} */ (layer.get(n.id));
    (columns[l] ??= []).push(n.id);
  }
  // Order each column by the mean row of what points at it (two sweeps, left to right).
  /** @type {Map<string, number>} */
  const row = new Map();
  for (let sweep = 0; sweep < 2; sweep += 1) {
    columns.forEach((col, ci) => {
      if (!col) return;
      if (ci > 0 || sweep > 0) {
        const mean = (/** @type {string} */ id) => {
          const from = (inn.get(id) ?? []).map((f) => row.get(f)).filter((r) => r !== undefined);
          return from.length ? from.reduce((a, b) => a + /** @type {number} */ (b), 0) / from.length : (row.get(id) ?? Infinity);
        };
        col.sort((a, b) => mean(a) - mean(b) || (a < b ? -1 : a > b ? 1 : 0));
      }
      col.forEach((id, i) => row.set(id, i));
    });
  }
  const rows = Math.max(1, ...columns.map((c) => c?.length ?? 0));
  /** @type {Map<string, Place>} */
  const places = new Map();
  columns.forEach((col, ci) => {
    if (!col) return;
    const top = (rows - col.length) / 2;
    col.forEach((id, i) => places.set(id, { x: ci, y: top + i, layer: ci }));
  });
  return { places, layers: columns.length, rows };
}
