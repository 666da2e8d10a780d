// Scenario 4: fuzz every route of `lightworker serve` (static files, GET /api/commands, GET /api/events,
// POST /api/commands/<name> for every command) with random methods, paths, headers and bodies, with and
// without auth. The server must never die or answer with a stack trace, and nothing sent without auth
// may change anything (the task count is compared around the unauthenticated phase).
import type { ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { garbageValue } from './mcp-fuzz.js';
import { withLab } from './lab.js';
import { openDbReadOnly } from './observe.js';
import { createRng, sleep, type Rng } from './rng.js';

export interface HttpFuzzOptions {
  requests: number;
  seed: number;
  log: (line: string) => void;
}

export interface HttpFuzzFigures {
  requests: number;
  crashes: number;
  serverErrors: number;
  stackTraces: number;
  unauthorizedWrites: number;
  /** Task data (read commands, the event stream) served to a request without credentials. */
  unauthorizedReads: number;
  /** Answers to requests without credentials that carried the console token. */
  tokenDisclosures: number;
  taskCountChanged: boolean;
  notes: string[];
}

interface Reply {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

const STACK = /\n\s+at [^\n]+:\d+:\d+\)?/;

/** One HTTP request on loopback; never throws (a transport error comes back as status 0). */
function send(port: number, method: string, path: string, headers: Record<string, string>, body?: Buffer, timeoutMs = 10_000): Promise<Reply> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: Reply) => {
      if (!done) resolve(r);
      done = true;
      clearTimeout(hard);
    };
    // A socket can close without 'end' or 'error' (e.g. the server drops it mid-answer): never wait forever.
    const hard = setTimeout(() => {
      finish({ status: 0, body: 'timeout', headers: {} });
      req.destroy();
    }, timeoutMs + 2000);
    // A connection of its own (agent: false): a fuzzed request that writes a body without framing (a TRACE
    // with bytes after its headers) leaves garbage that ends its connection; a kept-alive socket would
    // carry that into the next request, and the liveness probe would blame the server.
    const req = request({ host: '127.0.0.1', port, method, path, headers, setHost: false, timeout: timeoutMs, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
        // SSE never ends by itself, and nothing needs more than the first megabyte.
        if (res.headers['content-type']?.includes('text/event-stream') || text.length > 1024 * 1024) {
          finish({ status: res.statusCode ?? 0, body: text, headers: res.headers });
          req.destroy();
        }
      });
      res.on('end', () => finish({ status: res.statusCode ?? 0, body: text, headers: res.headers }));
      res.on('error', () => finish({ status: res.statusCode ?? 0, body: text, headers: res.headers }));
      res.on('close', () => finish({ status: res.statusCode ?? 0, body: text, headers: res.headers }));
    });
    req.on('timeout', () => {
      finish({ status: 0, body: 'timeout', headers: {} });
      req.destroy();
    });
    req.on('error', (e) => finish({ status: 0, body: String(e), headers: {} }));
    req.on('close', () => finish({ status: 0, body: 'closed', headers: {} }));
    req.end(body);
  });
}

/**
 * The console's credentials for writes (and, once the console requires it, reads). Today the token is in a
 * meta tag of the page; the cookie console prints a `?token=` URL that a GET exchanges for an HttpOnly
 * cookie. Both are covered: the token from the printed URL, else from the page, sent as a Bearer header,
 * as the legacy header, and with any cookie the server set. Adapt here if the console's scheme changes.
 */
export async function obtainAuth(port: number, printed: string): Promise<Record<string, string>> {
  const host = `127.0.0.1:${port}`;
  let token = /[?&]token=([A-Za-z0-9_-]+)/.exec(printed)?.[1] ?? '';
  const page = await send(port, 'GET', token ? `/?token=${token}` : '/', { Host: host });
  token ||= /name="lightworker-token" content="([^"]+)"/.exec(page.body)?.[1] ?? '';
  const setCookie = page.headers['set-cookie'];
  const cookie = (Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []).map((c) => c.split(';')[0]).join('; ');
  if (!token && !cookie) throw new Error('could not find the console token (neither in the printed URL nor in the page)');
  return { ...(token ? { Authorization: `Bearer ${token}`, 'x-lightworker-token': token } : {}), ...(cookie ? { Cookie: cookie } : {}) };
}

interface Route {
  method: string;
  path: string;
  command?: string;
}

function randomRequest(rng: Rng, port: number, commands: string[]): { route: Route; headers: Record<string, string>; body?: Buffer } {
  const name = rng.pick([...commands, 'no_such_command', 'DROP', 'get_task']);
  const route: Route = rng.pick<Route>([
    { method: 'POST', path: `/api/commands/${name}`, command: name },
    { method: 'POST', path: `/api/commands/${name}`, command: name },
    { method: 'POST', path: `/api/commands/${name}`, command: name },
    { method: rng.pick(['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD']), path: `/api/commands/${name}` },
    { method: 'GET', path: '/api/commands' },
    { method: 'GET', path: rng.pick(['/api/events', '/api/events?cursor=-1', '/api/events?cursor=abc', '/api/events?cursor=99999999999']) },
    { method: rng.pick(['GET', 'HEAD', 'POST', 'DELETE']), path: rng.pick(['/', '/index.html', '/assets/x.js', '/favicon.ico', '/?token=nope']) },
    { method: 'GET', path: rng.pick(['/../../etc/passwd', '/%2e%2e/%2e%2e/etc/passwd', '/..%2f..%2fetc%2fpasswd', '//etc/passwd', '/api/../../../etc/passwd', `/${'a'.repeat(8000)}`, '/%00', '/%ff%fe']) },
    { method: rng.pick(['BREW', 'PROPFIND', 'CONNECT', 'TRACE']), path: '/api/commands/list_tasks', command: 'list_tasks' },
  ]);
  const headers: Record<string, string> = { Host: `127.0.0.1:${port}` };
  if (rng.chance(0.1)) headers.Host = rng.pick(['evil.example', '', `localhost:${port + 1}`, '127.0.0.1', '[::1]:1', 'x'.repeat(3000)]);
  if (rng.chance(0.1)) headers.Origin = rng.pick(['http://evil.example', 'null', `http://127.0.0.1:${port}`]);
  if (rng.chance(0.05)) headers['X-Huge'] = 'h'.repeat(rng.pick([1000, 20_000, 70_000]));
  if (rng.chance(0.5)) headers['Content-Type'] = rng.pick(['application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '']);
  if (rng.chance(0.05)) headers['Last-Event-ID'] = rng.pick(['-5', 'NaN', '1e309', '0']);
  let body: Buffer | undefined;
  if (route.method !== 'GET' && route.method !== 'HEAD') {
    const k = rng.int(0, 6);
    if (k === 0) body = Buffer.from('{"objective": ');
    else if (k === 1) body = Buffer.from([0xff, 0xfe, 0x00, 0x7b]);
    else if (k === 2) body = Buffer.from(JSON.stringify('x'.repeat(rng.pick([10, 2_000_000]))));
    else if (k === 3) body = Buffer.from('[' .repeat(10_000) + ']'.repeat(10_000));
    else if (k === 4) body = undefined;
    else body = Buffer.from(JSON.stringify(garbageValue(rng)) ?? 'null');
  }
  return { route, headers, body };
}

function taskCount(home: string): number {
  const db = openDbReadOnly(home);
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM tasks').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** Start `serve` on a free loopback port with a stand-in page; resolve with its port and printed text. */
export async function startServe(lab: import('./lab.js').Lab): Promise<{ child: ChildProcess; port: number; printed: () => string }> {
  const dir = join(lab.root, 'renderer');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'index.html'), '<!doctype html><html><head><title>chaos</title></head><body>chaos</body></html>\n');
  lab.env.LIGHTWORKER_RENDERER_DIR = dir;
  const child = lab.start(['serve', '--port', '0', '--no-open']);
  let text = '';
  child.stdout!.on('data', (c: Buffer) => (text += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (text += c.toString('utf8')));
  const end = Date.now() + 30_000;
  let m: RegExpExecArray | null = null;
  while (!(m = /http:\/\/127\.0\.0\.1:(\d+)\//.exec(text)) && Date.now() < end && child.exitCode === null) await sleep(50);
  if (!m) throw new Error(`serve did not print its URL: ${text.slice(-500)}`);
  return { child, port: Number(m[1]), printed: () => text };
}

/** Run the HTTP fuzz in its own lab. */
export async function runHttpFuzz(o: HttpFuzzOptions): Promise<HttpFuzzFigures> {
  return withLab('http', {}, async (lab) => {
    const rng = createRng(o.seed);
    const notes: string[] = [];
    const { child, port, printed } = await startServe(lab);
    const auth = await obtainAuth(port, printed());
    const listed = await send(port, 'GET', '/api/commands', { Host: `127.0.0.1:${port}`, ...auth });
    const described = (JSON.parse(listed.body) as { data: { commands: { name: string; readOnly: boolean }[] } }).data.commands;
    const commands = described.map((c) => c.name);
    const writes = new Set(described.filter((c) => !c.readOnly).map((c) => c.name));
    let sent = 0;
    let serverErrors = 0;
    let stackTraces = 0;
    let unauthorizedWrites = 0;
    let unauthorizedReads = 0;
    let tokenDisclosures = 0;
    const token = auth['x-lightworker-token'] ?? null;
    let noAnswer = 0;
    let timedOut = 0;
    const check = (r: Reply, what: string) => {
      sent++;
      if (r.status === 0) noAnswer++;
      if (r.status === 0 && r.body === 'timeout' && ++timedOut <= 3) notes.push(`no answer within 10 s: ${what}`);
      if (r.status >= 500) serverErrors++;
      if (STACK.test(r.body)) {
        stackTraces++;
        if (stackTraces <= 3) notes.push(`stack trace in ${what}: ${r.body.slice(0, 160)}`);
      }
    };
    // Phase 1, no credentials: every command once, then random requests. Nothing may change.
    const before = taskCount(lab.home);
    const fixed: Route[] = [...commands.map((c) => ({ method: 'POST', path: `/api/commands/${c}`, command: c })), ...['/', '/index.html', '/api/events', '/api/commands'].map((path) => ({ method: 'GET', path }))];
    const unauthCount = Math.max(fixed.length, Math.floor(o.requests * 0.4));
    for (let i = 0; i < unauthCount && child.exitCode === null; i++) {
      const r = i < fixed.length ? { route: fixed[i], headers: { Host: `127.0.0.1:${port}`, 'Content-Type': 'application/json' }, body: fixed[i].method === 'POST' ? Buffer.from('{}') : undefined } : randomRequest(rng, port, commands);
      const reply = await send(port, r.route.method, r.route.path, r.headers, r.body);
      check(reply, `${r.route.method} ${r.route.path.slice(0, 60)} (no auth)`);
      const ok = reply.status >= 200 && reply.status < 300;
      const what = `${r.route.method} ${r.route.path.slice(0, 60)}`;
      if (ok && r.route.command && r.route.method === 'POST' && commands.includes(r.route.command)) {
        if (writes.has(r.route.command) && ++unauthorizedWrites <= 3) notes.push(`write accepted without auth: ${what}`);
        if (!writes.has(r.route.command) && ++unauthorizedReads <= 3) notes.push(`read served without auth: ${what}`);
      }
      if (ok && r.route.path.startsWith('/api/events') && ++unauthorizedReads <= 3) notes.push(`event stream served without auth: ${what}`);
      if (token && (reply.body.includes(token) || JSON.stringify(reply.headers).includes(token)) && ++tokenDisclosures <= 3) notes.push(`console token handed out without auth: ${what}`);
    }
    const taskCountChanged = taskCount(lab.home) !== before;
    if (taskCountChanged) notes.push('the task count changed during the unauthenticated phase');
    // Phase 2, with credentials: every command with garbage, then random requests.
    for (let i = unauthCount; i < o.requests && child.exitCode === null; i++) {
      const j = i - unauthCount;
      const r = j < commands.length ? { route: { method: 'POST', path: `/api/commands/${commands[j]}` }, headers: { Host: `127.0.0.1:${port}`, 'Content-Type': 'application/json' }, body: Buffer.from(JSON.stringify(garbageValue(rng)) ?? '{}') } : randomRequest(rng, port, commands);
      check(await send(port, r.route.method, r.route.path, { ...auth, ...r.headers }, r.body), `${r.route.method} ${r.route.path.slice(0, 60)}`);
      if (i % 500 === 0 && i > 0) o.log(`  http fuzz: ${i}/${o.requests} requests`);
    }
    // Node's HTTP parser drops malformed requests (unknown methods, oversized headers) without an answer.
    if (noAnswer) notes.push(`${noAnswer} requests got no HTTP answer (${timedOut} of them timed out, the others were closed by the server)`);
    const last = child.exitCode === null ? await send(port, 'GET', '/api/commands', { Host: `127.0.0.1:${port}`, ...auth }) : null;
    const alive = last?.status === 200;
    if (!alive) {
      const how = last ? `answered ${last.status} ${last.body.slice(0, 200)}` : `exited (code ${child.exitCode}, signal ${child.signalCode})`;
      notes.push(`serve died or stopped answering: ${how}; its output: ${printed().slice(-600)}`);
    }
    child.kill('SIGTERM');
    return { requests: sent, crashes: alive ? 0 : 1, serverErrors, stackTraces, unauthorizedWrites, unauthorizedReads, tokenDisclosures, taskCountChanged, notes };
  });
}
