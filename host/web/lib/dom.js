// The page's building blocks: elements made from data as text only (never markup, so that a
// log line or a name cannot inject anything), the main area, the status line, badges.

/** @typedef {Node | string | number | null | undefined | false} Child */

/** An HTML element: `attrs` are attributes (`on*` functions become listeners; false, null
 * and undefined are left out), children are nodes or text.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, any>} [attrs]
 * @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[K]} */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  append(e, children);
  return e;
}

const SVG = 'http://www.w3.org/2000/svg';

/** An SVG element, as `el`.
 * @param {string} tag
 * @param {Record<string, any>} [attrs]
 * @param {...(Child | Child[])} children
 * @returns {SVGElement} */
export function svg(tag, attrs = {}, ...children) {
  const e = /** @type {SVGElement} */ (document.createElementNS(SVG, tag));
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, String(v));
  }
  append(e, children);
  return e;
}

/** @param {Element} e @param {(Child | Child[])[]} children */
function append(e, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Puts `nodes` in the main area instead of what was there.
 * @param {...(Child | Child[])} nodes */
export function show(...nodes) {
  const main = /** @type {HTMLElement} */ (document.getElementById('main'));
  main.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined && n !== false)
    .map((n) => (n instanceof Node ? n : String(n))));
  drawn();
}

/** For the benchmarks and the tests: a view is on screen, or changed. */
export function drawn() {
  performance.mark('weft:drawn');
}

/** Says `text` on the status line of the top bar.
 * @param {string} text */
export function say(text) {
  const line = document.getElementById('status');
  if (line) line.textContent = text;
}

/** A state as a coloured word.
 * @param {string} state
 * @param {string} [title] */
export function badge(state, title) {
  return el('span', { class: `state state-${state}`, title }, state);
}

/** The nodes of `list` that are there (null, undefined and false left out).
 * @param {(Node | null | undefined | false)[]} list
 * @returns {Node[]} */
export function present(list) {
  return /** @type {Node[]} */ (list.filter((n) => n !== null && n !== undefined && n !== false));
}

/** A labelled fact of a summary (`State: failed`); nothing when `value` is empty.
 * @param {string} name
 * @param {Child | Child[]} value
 * @param {Record<string, any>} [attrs] attributes of the value */
export function fact(name, value, attrs = {}) {
  if (value === undefined || value === null || value === '' || value === false) return null;
  return el('div', {}, el('span', {}, name), el('span', attrs, value));
}
