// A scripted LSP client for the suite's `lsp` tests: Microsoft's own client library
// (vscode-languageserver-protocol, the one VS Code speaks through; installed by ./test.sh into
// target/lsp-client) drives `weft lsp` over standard input and output.
//
// node client.js WEFT_BINARY SCRIPT.json ARGS...
//
// SCRIPT is a list of steps, run in order; each prints one line of JSON on standard output:
//   {"spawn": {"cwd": DIR, "env": {...}}, "initialize": PARAMS}  -> {"initialize": RESULT}
//   {"notify": METHOD, "params": PARAMS}                           -> {"notified": METHOD}
//   {"request": METHOD, "params": PARAMS}                          -> {"response": RESULT} or {"error": ...}
//   {"diagnostics": URI, "until": "empty" | CODE}                  -> {"diagnostics": [...]}
//       waits until diagnostics published for URI after the last notify step are none
//       ("empty") or hold CODE (what was published before it does not count)
//   {"shutdown": true}                                             -> {"exit": CODE}
// A step that waits longer than 60 s prints {"timeout": STEP} and the client exits 1.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const rpc = require('vscode-languageserver-protocol/node');

const [weft, scriptFile, ...args] = process.argv.slice(2);
const script = JSON.parse(fs.readFileSync(scriptFile, 'utf8'));
const print = (o) => process.stdout.write(JSON.stringify(o) + '\n');

// The last diagnostics published for each URI, with their number among all publications.
const published = new Map();
let publications = 0;
// The number of publications when the last notify step was sent: only later ones count.
let since = 0;
let waiting = null;
function check() {
  if (!waiting) return;
  const last = published.get(waiting.uri);
  if (!last || last.seq <= since) return;
  const list = last.diagnostics;
  const done = waiting.until === 'empty'
    ? list.length === 0
    : list.some((d) => d.code === waiting.until);
  if (done) {
    const w = waiting;
    waiting = null;
    w.resolve(list);
  }
}

function timeout(promise, step) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('timeout')), 60000); }),
  ]).finally(() => clearTimeout(timer)).catch((e) => {
    if (e.message === 'timeout') {
      print({ timeout: step, published: Object.fromEntries(published) });
      process.exit(1);
    }
    throw e;
  });
}

async function main() {
  let child;
  let connection;
  for (const step of script) {
    if (step.spawn) {
      child = spawn(weft, ['lsp', ...args], {
        cwd: step.spawn.cwd,
        env: { ...process.env, ...step.spawn.env },
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      connection = rpc.createProtocolConnection(
        new rpc.StreamMessageReader(child.stdout),
        new rpc.StreamMessageWriter(child.stdin),
      );
      connection.onNotification(rpc.PublishDiagnosticsNotification.type, (p) => {
        publications += 1;
        published.set(p.uri, { seq: publications, diagnostics: p.diagnostics });
        check();
      });
      connection.onNotification(rpc.LogMessageNotification.type, (p) => {
        process.stderr.write(`server log: ${p.message}\n`);
      });
      connection.listen();
      const result = await timeout(
        connection.sendRequest(rpc.InitializeRequest.type, step.initialize),
        step,
      );
      await connection.sendNotification(rpc.InitializedNotification.type, {});
      print({ initialize: result });
    } else if (step.notify) {
      since = publications;
      await connection.sendNotification(step.notify, step.params);
      print({ notified: step.notify });
    } else if (step.request) {
      try {
        const result = await timeout(connection.sendRequest(step.request, step.params), step);
        print({ response: result === undefined ? null : result });
      } catch (e) {
        print({ error: { code: e.code, message: e.message } });
      }
    } else if (step.diagnostics) {
      const list = await timeout(new Promise((resolve) => {
        waiting = { uri: step.diagnostics, until: step.until, resolve };
        check();
      }), step);
      print({ diagnostics: list });
    } else if (step.shutdown) {
      await timeout(connection.sendRequest(rpc.ShutdownRequest.type), step);
      const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
      await connection.sendNotification(rpc.ExitNotification.type);
      print({ exit: await timeout(exited, step) });
      connection.dispose();
    }
  }
}

main().catch((e) => {
  print({ failed: String(e && e.stack || e) });
  process.exit(1);
});
