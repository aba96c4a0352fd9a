// Times and durations as the page writes them. Pure: no document, so that Node's test runner
// checks them (tests/web).

/** Milliseconds since the epoch of an RFC 3339 time, NaN for none.
 * @param {string | null | undefined} iso
 * @returns {number} */
export function parseTime(iso) {
  return iso ? Date.parse(iso) : NaN;
}

/** The zone times are shown in: an IANA name (the service's, from WhoAmI), or undefined
 * for the browser's own.
 * @type {string | undefined} */
let zone;

/** Shows times in `name` from now on (undefined: the browser's zone); a name the browser
 * does not know leaves the browser's.
 * @param {string | undefined} name */
export function setZone(name) {
  try {
    if (name) new Intl.DateTimeFormat('en-GB', { timeZone: name });
    zone = name || undefined;
  } catch {
    zone = undefined;
  }
  formatters.clear();
}

/** The zone times are shown in, by name.
 * @returns {string} */
export function zoneName() {
  return zone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** @type {Map<string, Intl.DateTimeFormat>} */
const formatters = new Map();

/** The fields of instant `t` in the zone: year, month, day, hour, minute, second, ms.
 * @param {number} t
 * @returns {Record<string, string>} */
export function fields(t) {
  let f = formatters.get('all');
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
      hour: '2-digit', minute: '2-digit', second: '2-digit', fractionalSecondDigits: 3,
    });
    formatters.set('all', f);
  }
  /** @type {Record<string, string>} */
  const out = {};
  for (const part of f.formatToParts(t)) out[part.type] = part.value;
  return out;
}

/** A time as `YYYY-MM-DD HH:MM:SS` (with `.mmm` when `ms`) in the page's zone; '' for none.
 * @param {string | null | undefined} iso
 * @param {boolean} [ms]
 * @returns {string} */
export function localTime(iso, ms = false) {
  const t = parseTime(iso);
  if (Number.isNaN(t)) return '';
  const f = fields(t);
  return `${f.year}-${f.month}-${f.day} ${f.hour}:${f.minute}:${f.second}${ms ? `.${f.fractionalSecond}` : ''}`;
}

/** The clock time of instant `t` in the page's zone, as precise as asked.
 * @param {number} t
 * @param {'minutes' | 'seconds' | 'milliseconds'} precision
 * @returns {string} */
export function clockTime(t, precision) {
  const f = fields(t);
  if (precision === 'minutes') return `${f.hour}:${f.minute}`;
  if (precision === 'seconds') return `${f.hour}:${f.minute}:${f.second}`;
  return `${f.hour}:${f.minute}:${f.second}.${f.fractionalSecond}`;
}

/** The zone's offset from UTC at instant `t`, in milliseconds (east positive).
 * @param {number} t */
export function zoneOffset(t) {
  const f = fields(t);
  const wall = Date.UTC(Number(f.year), Number(f.month) - 1, Number(f.day), Number(f.hour), Number(f.minute), Number(f.second), Number(f.fractionalSecond));
  return wall - t;
}

/** A run's planned start as said in lists: the wall-clock text, and `(second)` for the
 * second occurrence of a time the autumn clock change repeats.
 * @param {{plannedStart?: string, plannedSecond?: boolean}} run
 * @returns {string} */
export function planned(run) {
  return run.plannedStart ? `${run.plannedStart}${run.plannedSecond ? ' (second)' : ''}` : '';
}

/** A span of milliseconds in words: `840 ms`, `3.2 s`, `4 min 7 s`, `2 h 5 min`; '' for
 * none or a negative one.
 * @param {number} ms
 * @returns {string} */
export function duration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** Milliseconds from `start` to `end`, or to `now` while there is no end.
 * @param {string | null | undefined} start
 * @param {string | null | undefined} end
 * @param {number} [now]
 * @returns {number} */
export function span(start, end, now = Date.now()) {
  const a = parseTime(start);
  const b = end ? parseTime(end) : now;
  return b - a;
}

/** How long from `start` to `end` (or now), in words.
 * @param {string | null | undefined} start
 * @param {string | null | undefined} end
 * @param {number} [now]
 * @returns {string} */
export function took(start, end, now = Date.now()) {
  return duration(span(start, end, now));
}
