#!/usr/bin/env node
// The `vscode` worker's process (see vscode.ts): sends one turn to the LightWorker Bridge extension
// and prints the bridge's NDJSON events to stdout as they arrive. The runner kills this process to
// cancel or time out a turn; SIGTERM here becomes DELETE /v1/turns/<id> (the bridge kills the agent's
// tree and answers once it is gone), and a connection that simply drops cancels the turn too.
// Plain JavaScript with no dependencies; the token is read from the discovery file, never from argv.
import { readFileSync } from 'node:fs';
import { request } from 'node:http';

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i === -1 ? undefined : args[i + 1];
};
const fail = (code, message) => {
  process.stdout.write(JSON.stringify({ type: 'bridge.error', code, message }) + '\n');
  process.exit(1);
};

let bridge;
try {
  bridge = JSON.parse(readFileSync(opt('--discovery'), 'utf8'));
} catch (err) {
  fail('worker_missing', `cannot read the VS Code bridge discovery file ${opt('--discovery')}: ${err.message}`);
}
const body = readFileSync(opt('--request'));
const base = { host: '127.0.0.1', port: bridge.port, headers: { authorization: `Bearer ${bridge.token}` } };

let turnId = null;
let exitCode = null;
let stopping = false;

const req = request({ ...base, method: 'POST', path: '/v1/turns', headers: { ...base.headers, 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
  res.setEncoding('utf8');
  if (res.statusCode !== 200) {
    let text = '';
    res.on('data', (c) => (text += c));
    res.on('end', () => {
      let error;
      try {
        error = JSON.parse(text).error;
      } catch {
        error = { code: 'worker_failed', message: text.slice(0, 500) };
      }
      fail(error?.code ?? 'worker_failed', `VS Code bridge refused the turn (HTTP ${res.statusCode}): ${error?.message ?? ''}`);
    });
    return;
  }
  turnId = res.headers['x-lightworker-turn'] ?? null;
  let buf = '';
  res.on('data', (chunk) => {
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (!line.trim()) continue;
      process.stdout.write(line + '\n');
      try {
        const e = JSON.parse(line);
        if (e.type === 'turn.exited') exitCode = e.code ?? 1;
      } catch {
        // passed through as is; the adapter's parser decides
      }
    }
  });
  res.on('end', () => {
    if (stopping) return;
    if (exitCode === null) fail('worker_failed', 'the VS Code bridge ended the stream before the turn ended (editor closed?)');
    process.exit(exitCode);
  });
});
req.on('error', (err) => {
  if (!stopping) fail('worker_missing', `the VS Code bridge at 127.0.0.1:${bridge.port} is not answering (${err.code ?? err.message}); is the editor still open?`);
});
req.end(body);

function cancel(signal) {
  if (stopping) return;
  stopping = true;
  const done = () => process.exit(signal === 'SIGINT' ? 130 : 143);
  if (!turnId) {
    req.destroy();
    done();
    return;
  }
  const del = request({ ...base, method: 'DELETE', path: `/v1/turns/${turnId}`, timeout: 10_000 }, (res) => {
    res.resume();
    res.on('end', done);
  });
  del.on('error', done);
  del.on('timeout', () => del.destroy());
  del.end();
}
for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(s, () => cancel(s));
