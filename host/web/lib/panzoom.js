// Zoom and pan for an SVG drawing: the wheel zooms at the pointer, a drag on the
// background pans, buttons zoom in, out and fit, and the keyboard does the same (+, -, 0,
// arrows) on the drawing's focusable frame. It starts at the whole drawing, or, when that
// would make its text too small to read, at its top left at the least legible scale.

import { el } from './dom.js';

/** The least scale the drawing starts at (screen pixels a unit): 12 px text stays 8 px. */
const LEGIBLE = 0.65;

/** Puts `drawing` (its content in the box `box`, in its units) in a frame that zooms and
 * pans; the frame and its buttons.
 * @param {SVGSVGElement | SVGElement} drawing
 * @param {{x: number, y: number, w: number, h: number}} box
 * @param {string} label what the drawing shows
 * @returns {HTMLElement} */
export function zoomable(drawing, box, label) {
  const { w: width, h: height } = box;
  const view = { x: box.x, y: box.y, w: width, h: height };
  const frame = el('div', { class: 'zoom-frame', tabindex: 0, role: 'group', 'aria-label': `${label}: + and - zoom, the arrows move, 0 shows it whole` }, drawing);
  drawing.setAttribute('preserveAspectRatio', 'xMinYMin meet');
  const apply = () => drawing.setAttribute('viewBox', `${view.x} ${view.y} ${view.w} ${view.h}`);
  /** The frame's size in pixels. */
  const size = () => [frame.clientWidth || 800, frame.clientHeight || 480];
  /** Shows the whole drawing, or its top left at the least legible scale. */
  const fit = () => {
    const [fw, fh] = size();
    const scale = Math.max(Math.min(fw / width, fh / height), LEGIBLE);
    view.x = box.x;
    view.y = box.y;
    view.w = fw / scale;
    view.h = fh / scale;
    apply();
  };
  /** Zooms by `f` (below 1: in) around the frame point `px`, `py` (0 to 1).
   * @param {number} f @param {number} [px] @param {number} [py] */
  const zoom = (f, px = 0.5, py = 0.5) => {
    const [fw] = size();
    const nw = Math.min(Math.max(view.w * f, fw / 4), Math.max(width, height) * 4);
    const k = nw / view.w;
    view.x += (view.w - view.w * k) * px;
    view.y += (view.h - view.h * k) * py;
    view.w *= k;
    view.h *= k;
    apply();
  };
  /** Moves by a share of the view.
   * @param {number} dx @param {number} dy */
  const pan = (dx, dy) => {
    view.x += view.w * dx;
    view.y += view.h * dy;
    apply();
  };
  frame.addEventListener('wheel', (ev) => {
    ev.preventDefault();
    const box = frame.getBoundingClientRect();
    zoom(ev.deltaY > 0 ? 1.2 : 1 / 1.2, (ev.clientX - box.left) / box.width, (ev.clientY - box.top) / box.height);
  }, { passive: false });
  /** @type {{x: number, y: number, vx: number, vy: number} | null} */
  let drag = null;
  frame.addEventListener('pointerdown', (ev) => {
    // A press on a node is a click on it, not a drag.
    if (/** @type {Element} */ (ev.target).closest('a, .node')) return;
    drag = { x: ev.clientX, y: ev.clientY, vx: view.x, vy: view.y };
    frame.setPointerCapture(ev.pointerId);
  });
  frame.addEventListener('pointermove', (ev) => {
    if (!drag) return;
    const [fw] = size();
    const k = view.w / fw;
    view.x = drag.vx - (ev.clientX - drag.x) * k;
    view.y = drag.vy - (ev.clientY - drag.y) * k;
    apply();
  });
  frame.addEventListener('pointerup', () => { drag = null; });
  frame.addEventListener('keydown', (ev) => {
    const keys = /** @type {Record<string, () => void>} */ ({
      '+': () => zoom(1 / 1.25), '=': () => zoom(1 / 1.25), '-': () => zoom(1.25), 0: fit,
      ArrowLeft: () => pan(-0.1, 0), ArrowRight: () => pan(0.1, 0), ArrowUp: () => pan(0, -0.1), ArrowDown: () => pan(0, 0.1),
    });
    const f = keys[ev.key];
    if (f && ev.target === frame) { ev.preventDefault(); f(); }
  });
  const button = (/** @type {string} */ text, /** @type {string} */ name, /** @type {() => void} */ f) => el('button', { type: 'button', class: 'secondary small', 'aria-label': name, onclick: f }, text);
  const bar = el('div', { class: 'zoom-bar', role: 'group', 'aria-label': 'zoom' },
    button('+', 'zoom in', () => zoom(1 / 1.25)), button('−', 'zoom out', () => zoom(1.25)), button('Whole', 'show it whole', fit));
  // Laid out once it is on the page.
  requestAnimationFrame(fit);
  apply();
  return el('div', { class: 'zoomable' }, bar, frame);
}
