// The spawner helper: a small Node process a leader starts once (spawner.ts) to fork worker turns,
// setup/verify commands and git for it. Forking copies the parent's page tables and write-protects its
// memory, so it costs about twice as much from an 80 MiB leader as from this process (measured in a 200-task drain, npm run bench); here it
// also leaves the leader's event loop. Plain JavaScript (with fork-common.mjs, shared with the leader): nothing
// else to load.
//
// Protocol, both ways over stdin/stdout: frames of [u32 LE length of what follows][u8 type][u32 LE id][payload].
//   leader → helper: 1 spawn (JSON {c, a, cwd, env, detached, stdin, ident}), 2 stdin bytes, 3 stdin end,
//                    4 release (destroy the child's pipes, forget it)
//   helper → leader: 10 spawned (JSON {pid, start, mark}), 11 spawn error (UTF-8 message), 12 stdout bytes,
//                    13 stderr bytes, 14 exit (JSON [code, signal]), 15 close (JSON [code, signal])
// It never signals anything itself: the leader (or a standby) sweeps trees by process group and marker.
// It exits when its stdin ends: a leader that exits or is killed (even with SIGKILL) leaves no helper behind.
import { spawn } from 'node:child_process';
import { writeSync } from 'node:fs';
import { linuxStartTime, markPids, spawnOptions } from './fork-common.mjs';

const children = new Map();
let out = [];
let flushQueued = false;

/** Frames written within one event-loop turn go out in one write (fd 1 is a pipe: a blocking write). */
function send(type, id, payload) {
  const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  const head = Buffer.allocUnsafe(9);
  head.writeUInt32LE(5 + body.length, 0);
  head.writeUInt8(type, 4);
  head.writeUInt32LE(id, 5);
  out.push(head, body);
  // A start goes out at once: should this helper die right after a fork, the leader must not start it again.
  if (type === 10) return flush();
  if (!flushQueued) {
    flushQueued = true;
    setImmediate(flush);
  }
}

function flush() {
  flushQueued = false;
  if (!out.length) return;
  const data = Buffer.concat(out);
  out = [];
  let off = 0;
  try {
    while (off < data.length) off += writeSync(1, data, off);
  } catch (err) {
    if (err.code !== 'EAGAIN') process.exit(0); // the leader is gone
    out.unshift(data.subarray(off));
    flushQueued = true;
    setTimeout(flush, 1);
  }
}

function start(id, req) {
  const mark = req.ident ? markPids() : null;
  let child;
  try {
    child = spawn(req.c, req.a, spawnOptions(req));
  } catch (err) {
    return send(11, id, String(err?.message ?? err));
  }
  const pid = child.pid;
  if (pid === undefined) {
    child.once('error', (err) => send(11, id, err.message));
    return;
  }
  children.set(id, child);
  child.on('error', () => undefined); // after a successful spawn: nothing the leader needs
  send(10, id, JSON.stringify({ pid, start: req.ident && process.platform === 'linux' ? linuxStartTime(pid) : null, mark }));
  child.stdout.on('data', (b) => children.has(id) && send(12, id, b));
  child.stderr.on('data', (b) => children.has(id) && send(13, id, b));
  child.stdin?.on('error', () => undefined); // the process may exit before reading all of its input
  child.once('exit', (code, signal) => children.has(id) && send(14, id, JSON.stringify([code, signal])));
  child.once('close', (code, signal) => {
    if (children.delete(id)) send(15, id, JSON.stringify([code, signal]));
  });
}

function handle(type, id, payload) {
  if (type === 1) return start(id, JSON.parse(payload.toString('utf8')));
  const child = children.get(id);
  if (!child) return;
  if (type === 2) child.stdin?.write(Buffer.from(payload));
  else if (type === 3) child.stdin?.end();
  else if (type === 4) {
    children.delete(id);
    child.stdout?.destroy();
    child.stderr?.destroy();
    child.stdin?.destroy();
  }
}

let pending = Buffer.alloc(0);
process.stdin.on('data', (chunk) => {
  let buf = pending.length ? Buffer.concat([pending, chunk]) : chunk;
  let off = 0;
  while (buf.length - off >= 9) {
    const len = buf.readUInt32LE(off);
    if (buf.length - off < 4 + len) break;
    handle(buf.readUInt8(off + 4), buf.readUInt32LE(off + 5), buf.subarray(off + 9, off + 4 + len));
    off += 4 + len;
  }
  pending = off === buf.length ? Buffer.alloc(0) : Buffer.from(buf.subarray(off));
});
// The leader's end (exit, crash, SIGKILL) closes this pipe: the helper goes with it. Children live on in
// their own process groups, where the leader's sweep or a standby's takeover finds them.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
// A terminal's Ctrl-C or hang-up reaches the whole foreground group: the leader decides when to stop (it may
// drain first and still spawn), and its exit ends this process.
process.on('SIGINT', () => undefined);
process.on('SIGHUP', () => undefined);
send(0, 0, 'ready');
