// What a deploy changed, line by line and within a line. Pure (tests/web).

/** A stored definition (JSON text) as readable lines: fields one a line (`name: value`),
 * nested objects and lists indented, and a text of several lines (an action's SQL) as its own
 * lines under `field: |`, so that a one-word change of a statement is one changed line, not a
 * changed 300-character JSON string. Text that is not JSON is split into its lines.
 * @param {string | null | undefined} text
 * @returns {string[]} */
export function definitionLines(text) {
  if (text === null || text === undefined) return [];
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    return text.split('\n');
  }
  /** @type {string[]} */
  const out = [];
  write(value, '', '', out);
  return out;
}

/** Writes `value` after `head` (`name: `, `- `) at `indent`.
 * @param {unknown} value @param {string} indent @param {string} head @param {string[]} out */
function write(value, indent, head, out) {
  if (typeof value === 'string' && value.includes('\n')) {
    out.push(`${indent}${head}|`);
    for (const line of value.replace(/\r\n/g, '\n').split('\n')) out.push(`${indent}  ${line}`);
    return;
  }
  if (Array.isArray(value)) {
    if (!value.length) { out.push(`${indent}${head}[]`); return; }
    if (head) out.push(`${indent}${head.trimEnd()}`);
    const inner = head ? `${indent}  ` : indent;
    for (const item of value) write(item, inner, '- ', out);
    return;
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value);
    if (!entries.length) { out.push(`${indent}${head}{}`); return; }
    if (head === '- ') {
      // A list's object: its first field on the dash's line, the others under it.
      const [[k, v], ...rest] = entries;
      write(v, indent, `- ${k}: `, out);
      for (const [k2, v2] of rest) write(v2, `${indent}  `, `${k2}: `, out);
      return;
    }
    if (head) out.push(`${indent}${head.trimEnd()}`);
    const inner = head ? `${indent}  ` : indent;
    for (const [k, v] of entries) write(v, inner, `${k}: `, out);
    return;
  }
  out.push(`${indent}${head}${typeof value === 'string' ? value : JSON.stringify(value)}`);
}

/** @typedef {[string, string]} DiffLine a mark (' ', '-', '+') and a line */

/** The lines of `a` and `b` as a list of [mark, line] (a longest common subsequence of what
 * lies between their common first and last lines); `null` when that middle is too long to
 * compare here.
 * @param {string[]} a
 * @param {string[]} b
 * @returns {DiffLine[] | null} */
export function lineDiff(a, b) {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head += 1;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head
    && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail += 1;
  const middle = lcsDiff(a.slice(head, a.length - tail), b.slice(head, b.length - tail), 4000000);
  if (middle === null) return null;
  return [...a.slice(0, head).map((l) => /** @type {DiffLine} */ ([' ', l])), ...middle,
    ...a.slice(a.length - tail).map((l) => /** @type {DiffLine} */ ([' ', l]))];
}

/** Two lists compared by a longest common subsequence: [mark, item] in order; `null` past
 * `cells` cells of the table.
 * @param {string[]} a
 * @param {string[]} b
 * @param {number} cells
 * @returns {DiffLine[] | null} */
export function lcsDiff(a, b, cells) {
  const n = a.length;
  const m = b.length;
  if (n * m > cells) return null;
  const width = m + 1;
  const len = new Uint32Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i -= 1) {
    for (let j = m - 1; j >= 0; j -= 1) {
      len[i * width + j] = a[i] === b[j] ? len[(i + 1) * width + j + 1] + 1
        : Math.max(len[(i + 1) * width + j], len[i * width + j + 1]);
    }
  }
  /** @type {DiffLine[]} */
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

/** A line cut into words, spaces and single other characters.
 * @param {string} line */
function tokens(line) {
  return line.match(/\w+|\s+|[^\w\s]/g) ?? [];
}

/** What changed within a line: the parts of `before` and of `after`, each [changed, text],
 * the unchanged parts false; `null` when the lines have nothing in common worth showing (or
 * are too long to compare).
 * @param {string} before
 * @param {string} after
 * @returns {{before: [boolean, string][], after: [boolean, string][]} | null} */
export function wordDiff(before, after) {
  const diff = lcsDiff(tokens(before), tokens(after), 250000);
  if (!diff) return null;
  /** @type {[boolean, string][]} */
  const b = [];
  /** @type {[boolean, string][]} */
  const a = [];
  let same = 0;
  const add = (/** @type {[boolean, string][]} */ list, /** @type {boolean} */ changed, /** @type {string} */ text) => {
    const last = list[list.length - 1];
    if (last && last[0] === changed) last[1] += text;
    else list.push([changed, text]);
  };
  for (const [mark, t] of diff) {
    if (mark === ' ') { add(b, false, t); add(a, false, t); if (t.trim()) same += t.length; }
    else if (mark === '-') add(b, true, t);
    else add(a, true, t);
  }
  // Lines that share almost nothing read better as a whole line removed and one added.
  if (same < Math.min(before.trim().length, after.trim().length) / 3) return null;
  return { before: tidy(b), after: tidy(a) };
}

/** The parts of a line as a reader sees the change: changed words with only spaces between
 * them are one change, and a change does not end in spaces.
 * @param {[boolean, string][]} parts
 * @returns {[boolean, string][]} */
function tidy(parts) {
  /** @type {[boolean, string][]} */
  const out = [];
  for (let i = 0; i < parts.length; i += 1) {
    const [changed, text] = parts[i];
    const last = out[out.length - 1];
    if (!changed && !text.trim() && last?.[0] && parts[i + 1]?.[0]) {
      last[1] += text + parts[i + 1][1];
      i += 1;
    } else if (last && last[0] === changed) {
      last[1] += text;
    } else {
      out.push([changed, text]);
    }
  }
  // Spaces at a change's ends belong to what stayed.
  /** @type {[boolean, string][]} */
  const trimmed = [];
  for (const [changed, text] of out) {
    const core = changed ? text.trim() : text;
    if (!changed || !core) { push(trimmed, false, text); continue; }
    const lead = text.slice(0, text.indexOf(core));
    const tail = text.slice(text.indexOf(core) + core.length);
    if (lead) push(trimmed, false, lead);
    push(trimmed, true, core);
    if (tail) push(trimmed, false, tail);
  }
  return trimmed;
}

/** Adds a part, joined to the last when alike.
 * @param {[boolean, string][]} list @param {boolean} changed @param {string} text */
function push(list, changed, text) {
  const last = list[list.length - 1];
  if (last && last[0] === changed) last[1] += text;
  else list.push([changed, text]);
}

/** @typedef {{mark: string, line: string, parts?: [boolean, string][]}} Shown
 *  @typedef {{fold: Shown[]}} Fold */

/** The diff as it is shown: in a stretch of changes, the n-th removed line paired with the
 * n-th added one gets its changed words (`parts`); an unchanged stretch keeps `context` lines
 * next to each change and folds the rest (when that hides more than one line).
 * @param {DiffLine[]} diff
 * @param {number} [context]
 * @returns {(Shown | Fold)[]} */
export function shownDiff(diff, context = 3) {
  /** @type {Shown[]} */
  const lines = diff.map(([mark, line]) => ({ mark, line }));
  // Pair the removed and added lines of each stretch of changes.
  for (let k = 0; k < lines.length;) {
    if (lines[k].mark === ' ') { k += 1; continue; }
    let end = k;
    while (end < lines.length && lines[end].mark !== ' ') end += 1;
    const removed = lines.slice(k, end).filter((l) => l.mark === '-');
    const added = lines.slice(k, end).filter((l) => l.mark === '+');
    for (let i = 0; i < Math.min(removed.length, added.length); i += 1) {
      const w = wordDiff(removed[i].line, added[i].line);
      if (w) { removed[i].parts = w.before; added[i].parts = w.after; }
    }
    k = end;
  }
  /** @type {(Shown | Fold)[]} */
  const out = [];
  for (let k = 0; k < lines.length;) {
    if (lines[k].mark !== ' ') { out.push(lines[k]); k += 1; continue; }
    let end = k;
    while (end < lines.length && lines[end].mark === ' ') end += 1;
    const run = lines.slice(k, end);
    const head = k === 0 ? 0 : context;
    const tail = end === lines.length ? 0 : context;
    if (run.length > head + tail + 1) {
      out.push(...run.slice(0, head), { fold: run.slice(head, run.length - tail) }, ...run.slice(run.length - tail));
    } else {
      out.push(...run);
    }
    k = end;
  }
  return out;
}
