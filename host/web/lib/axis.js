// A time axis: where its ticks fall and what they say. Pure (tests/web).

/** The steps a tick may be apart, in milliseconds. */
const STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000,
  60000, 120000, 300000, 600000, 900000, 1800000, 3600000, 7200000, 10800000, 21600000,
  43200000, 86400000];

/** The ticks of an axis from `t0` to `t1` (epoch milliseconds): at most `most` of them, at a
 * round step, each on a multiple of it counted from `origin` (the epoch moved by the zone's
 * offset, so that hours fall on the zone's hours).
 * @param {number} t0
 * @param {number} t1
 * @param {number} most
 * @param {number} [origin]
 * @returns {{step: number, ticks: number[]}} */
export function ticks(t0, t1, most, origin = 0) {
  const whole = Math.max(1, t1 - t0);
  const step = STEPS.find((s) => whole / s <= Math.max(1, most)) ?? Math.ceil(whole / Math.max(1, most) / 86400000) * 86400000;
  const out = [];
  let t = Math.ceil((t0 - origin) / step) * step + origin;
  for (; t <= t1 && out.length <= most; t += step) out.push(t);
  return { step, ticks: out };
}

/** How precisely a tick of `step` is written: `HH:MM`, `HH:MM:SS` or `HH:MM:SS.mmm`.
 * @param {number} step
 * @returns {'minutes' | 'seconds' | 'milliseconds'} */
export function precision(step) {
  if (step % 60000 === 0) return 'minutes';
  if (step % 1000 === 0) return 'seconds';
  return 'milliseconds';
}
