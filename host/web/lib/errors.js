// Where a SQL error points in its statement. Pure (tests/web).

/** Where `error` points in its statement: [statement, start, end] (start -1 when the
 * statement is known but not the place), or null when no statement is found: the one quoted
 * at the end of the error ("... in `STATEMENT`"), else the one the action logged first
 * ("Module action ID `name`: STATEMENT"); the place from PostgreSQL's "at character N"
 * (1-based), an "at offset N", or SQLite's `near "WORD"`.
 * @param {string | null | undefined} error
 * @param {string[] | undefined} log
 * @returns {[string, number, number] | null} */
export function errorPlace(error, log) {
  if (!error) return null;
  // Found without a regular expression (one that backtracks took seconds on a long error).
  const trimmed = error.trimEnd();
  const opening = trimmed.indexOf('in `');
  let statement = trimmed.endsWith('`') && opening >= 0 && opening + 4 < trimmed.length
    ? trimmed.slice(opening + 4, -1)
    : null;
  if (!statement && log?.length) {
    const line = log[0];
    const open = line.indexOf('`');
    const close = open >= 0 ? line.indexOf('`: ', open + 1) : -1;
    statement = close >= 0 ? line.slice(close + 3) : null;
  }
  if (!statement) return null;
  let at = null;
  const character = /at character (\d+)/.exec(error);
  const offset = /at offset (\d+)/.exec(error);
  if (character) at = Number(character[1]) - 1;
  else if (offset) at = Number(offset[1]);
  else {
    const near = /near "([^"]+)"/.exec(error);
    if (near) {
      const i = statement.indexOf(near[1]);
      if (i >= 0) return [statement, i, i + near[1].length];
    }
  }
  if (at === null || at < 0 || at >= statement.length) return [statement, -1, -1];
  const word = /^[\w$]+|^./.exec(statement.slice(at));
  return [statement, at, at + (word ? word[0].length : 1)];
}
