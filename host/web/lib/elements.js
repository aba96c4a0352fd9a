// What a run started from the page runs: its elements written a line each, with dbt's `+`
// for what feeds them or what they feed, and its variables as `name=value` lines. Pure
// (tests/web).

/** The element types by the words a line may start with. */
const KINDS = /** @type {Record<string, string>} */ ({
  sheet: 'S', s: 'S', folder: 'F', f: 'F', action: 'A', a: 'A',
});

/** The words of an element type. */
export const KIND_WORDS = /** @type {Record<string, string>} */ ({ S: 'sheet', F: 'folder', A: 'action' });

/** @typedef {{elementType: string, elementId: number | string}} RunElement
 *  @typedef {{line: number, message: string}} Problem
 *  @typedef {{elements: RunElement[], select: 'named' | 'upstream' | 'downstream', variables: {variableName: string, variableValue: string}[], problems: Problem[]}} RunAsked */

/** Reads the elements (`sheet 3`, `folder /etl`, `+action 12` for it and what feeds it,
 * `sheet /etl/load+` for it and what it feeds; one `+` for the whole run) and the variables
 * (`name=value`) of a run; every problem with its line.
 * @param {string} elementsText
 * @param {string} variablesText
 * @returns {RunAsked} */
export function parseRun(elementsText, variablesText) {
  /** @type {Problem[]} */
  const problems = [];
  /** @type {RunElement[]} */
  const elements = [];
  /** @type {Set<string>} */
  const selects = new Set();
  elementsText.split('\n').forEach((raw, i) => {
    let line = raw.trim();
    if (!line) return;
    let select = 'named';
    if (line.startsWith('+')) { select = 'upstream'; line = line.slice(1).trim(); }
    if (line.endsWith('+')) {
      if (select === 'upstream') {
        problems.push({ line: i + 1, message: 'a + on both sides: the whole run is either what feeds the elements (+ before) or what they feed (+ after)' });
        return;
      }
      select = 'downstream';
      line = line.slice(0, -1).trim();
    }
    const space = line.indexOf(' ');
    const word = (space < 0 ? line : line.slice(0, space)).toLowerCase();
    const rest = space < 0 ? '' : line.slice(space + 1).trim();
    const kind = KINDS[word];
    if (!kind) {
      problems.push({ line: i + 1, message: `\`${word}\` is not sheet, folder or action` });
      return;
    }
    if (!rest) {
      problems.push({ line: i + 1, message: `which ${KIND_WORDS[kind]}? an id or a path` });
      return;
    }
    const id = /^-?\d+$/.test(rest) ? Number(rest) : rest;
    if (typeof id === 'string' && !id.startsWith('/')) {
      problems.push({ line: i + 1, message: `a ${KIND_WORDS[kind]} is named by its id or its path from /, not \`${rest}\`` });
      return;
    }
    selects.add(select);
    elements.push({ elementType: kind, elementId: id });
  });
  if (!elements.length && !problems.length) problems.push({ line: 1, message: 'name at least one sheet, folder or action' });
  if (selects.size > 1) {
    problems.push({ line: 1, message: 'the + applies to the whole run: mark every line alike (all + before, all + after, or none)' });
  }
  /** @type {{variableName: string, variableValue: string}[]} */
  const variables = [];
  const seen = new Set();
  variablesText.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    const eq = line.indexOf('=');
    const name = eq < 0 ? line : line.slice(0, eq).trim();
    if (eq < 0 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      problems.push({ line: i + 1, message: `variables are written name=value, not \`${line.slice(0, 40)}\`` });
      return;
    }
    if (seen.has(name)) {
      problems.push({ line: i + 1, message: `variable \`${name}\` is given twice` });
      return;
    }
    seen.add(name);
    variables.push({ variableName: name, variableValue: line.slice(eq + 1) });
  });
  const select = /** @type {'named' | 'upstream' | 'downstream'} */ (selects.size === 1 ? [...selects][0] : 'named');
  return { elements, select, variables, problems };
}

/** What a run of `asked` will do, in a sentence.
 * @param {RunAsked} asked
 * @param {string} batchName */
export function runSentence(asked, batchName) {
  const names = asked.elements.map((e) => `${KIND_WORDS[e.elementType]} ${e.elementId}`).join(', ');
  const how = asked.select === 'downstream' ? ' and everything downstream of them (what they feed)'
    : asked.select === 'upstream' ? ' and everything upstream of them (what feeds them)' : '';
  const vars = asked.variables.length
    ? ` with ${asked.variables.map((v) => `${v.variableName}=${v.variableValue}`).join(', ')}`
    : '';
  return `Starts a new run "${batchName}" of ${names || 'nothing'}${how}${vars}, with the definitions deployed now.`;
}
