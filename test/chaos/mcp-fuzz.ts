// Scenario 3: fuzz `lightworker mcp` over stdio with a seeded stream of hostile messages. The server must
// never die, must answer every well-formed request that carries an id, must print only JSON-RPC on stdout,
// and must still answer a valid tools/list at the end.
import type { ChildProcess } from 'node:child_process';
import { withLab, type Lab } from './lab.js';
import { createRng, sleep, type Rng } from './rng.js';

export interface McpFuzzOptions {
  messages: number;
  seed: number;
  log: (line: string) => void;
}

export interface McpFuzzFigures {
  messages: number;
  expected: number;
  unanswered: number;
  crashes: number;
  badStdout: number;
  finalToolsList: boolean;
  notes: string[];
}

const MAX_OUTSTANDING = 32;

/** A random JSON value of bounded size and depth, with the nasty strings fuzzers like. */
export function garbageValue(rng: Rng, depth = 0): unknown {
  const k = rng.int(0, depth > 3 ? 5 : 8);
  switch (k) {
    case 0: return null;
    case 1: return rng.chance(0.5);
    case 2: return rng.pick([0, -1, 1e308, -0, 2 ** 53 + 1, 3.14, Number.MAX_SAFE_INTEGER]);
    case 3: return rng.pick(['', ' ', '\u0000', 'a\u0000b', '../../etc/passwd', '01ARZ3NDEKTSV4RRFFQ69G5FAV', '\ud800', '☃'.repeat(50), '{}', 'null']);
    case 4: return rng.chars(rng.int(1, 40));
    case 5: return 'x'.repeat(rng.pick([1000, 70_000, 300_000]));
    case 6: return Array.from({ length: rng.int(0, 4) }, () => garbageValue(rng, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      const keys = ['id', 'ids', 'objective', 'workspace', 'kind', 'name', 'metadata', 'tasks', 'strategy', 'cursor', 'limit', '__proto__', 'constructor', rng.chars(6)];
      for (let i = rng.int(0, 4); i > 0; i--) o[rng.pick(keys)] = garbageValue(rng, depth + 1);
      return o;
    }
  }
}

interface Message {
  bytes: Buffer;
  /** The id a response must carry, when the message is a well-formed request. */
  expectId: string | null;
}

/** One fuzzed message. Requests carry unique ids `fz<n>` so answers can be matched. */
function makeMessage(rng: Rng, n: number, tools: string[]): Message {
  const id = `fz${n}`;
  const req = (method: unknown, params?: unknown, extra: Record<string, unknown> = {}) => JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }), ...extra });
  const kind = rng.int(0, 13);
  let line: string | Buffer;
  switch (kind) {
    case 0: line = req('tools/call', { name: rng.pick(tools), arguments: garbageValue(rng) }); break;
    case 1: line = req('tools/call', garbageValue(rng)); break;
    case 2: line = req(rng.pick(['tools/list', 'ping', 'resources/list', 'prompts/list', 'no/such', 'initialize', 'logging/setLevel', '']), garbageValue(rng)); break;
    case 3: line = req('tools/call', { name: rng.pick(tools), arguments: { id: 'x'.repeat(rng.int(1, 3) * 400_000), objective: 'y'.repeat(200_000) } }); break;
    case 4: line = `{"jsonrpc":"2.0","id":"${id}","method":` + rng.pick(['', '"tools/list"', '"ping", "params": {']); break; // truncated
    case 5: line = JSON.stringify([{ jsonrpc: '2.0', id, method: 'ping' }, { jsonrpc: '2.0', method: 'tools/list' }]); break; // batch
    case 6: line = req('tools/call', { name: rng.pick(tools), arguments: { id: '@NEST@' } }).replace('"@NEST@"', nest(rng.int(50, 20_000))); break;
    case 7: line = req('ping', { s: `a\u0000b${'\u0000'.repeat(rng.int(1, 20))}` }); break;
    case 8: line = Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":"${id}","method":"tools/call","params":{"name":"get_task","arguments":{"id":"`), Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80]), Buffer.from('"}}}')]); break;
    case 9: line = Buffer.from(`{"jsonrpc":"2.0","id":"${id}","method":"ping","params":{"s":"a\u0000b"}}`); break; // raw NUL in a string: not JSON
    case 10: line = JSON.stringify({ jsonrpc: rng.pick(['2.0', '1.0', 2, null]), id: rng.pick([id, null, {}, [], true, 1.5]), method: garbageValue(rng), params: garbageValue(rng) }); break;
    case 11: line = JSON.stringify({ jsonrpc: '2.0', method: rng.pick(['notifications/cancelled', 'notifications/initialized', 'notifications/x']), params: garbageValue(rng) }); break;
    case 12: line = rng.pick(['', '   ', 'null', '42', '"str"', '[]', '{}', '}{', '\u0000\u0000', '\t\r']); break;
    default: line = req(rng.pick(tools), garbageValue(rng)); break; // a tool name as a method
  }
  const bytes = Buffer.isBuffer(line) ? line : Buffer.from(line, 'utf8');
  return { bytes, expectId: expectsAnswer(bytes, id) ? id : null };
}

/** JSON text nested `depth` levels (built as text: JSON.stringify itself overflows the stack). */
function nest(depth: number): string {
  return '[{"a":'.repeat(depth) + '"deep"' + '}]'.repeat(depth);
}

/** A well-formed request (parses, object, string method, our id) must be answered. */
function expectsAnswer(bytes: Buffer, id: string): boolean {
  try {
    const v = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
    return Boolean(v) && typeof v === 'object' && !Array.isArray(v) && v.id === id && typeof v.method === 'string' && bytes.length < 8 * 1024 * 1024;
  } catch {
    return false;
  }
}

export class McpProcess {
  readonly answered = new Set<string>();
  /** Results of the requests the suite itself made (ids without the fuzz prefix). */
  readonly results = new Map<string, unknown>();
  badStdout = 0;
  private buf = '';
  private stderr = '';
  constructor(readonly child: ChildProcess) {
    child.stdout!.removeAllListeners('data');
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (c: string) => this.onData(c));
    child.stderr!.removeAllListeners('data');
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (c: string) => (this.stderr = (this.stderr + c).slice(-4000)));
    child.stdin!.on('error', () => undefined);
  }
  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  get stderrTail(): string {
    return this.stderr.trim().split('\n').slice(-3).join(' | ');
  }
  private onData(c: string) {
    this.buf += c;
    let i;
    while ((i = this.buf.indexOf('\n')) >= 0) {
      const line = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 1);
      if (!line.trim()) continue;
      try {
        const m = JSON.parse(line) as { jsonrpc?: string; id?: unknown; result?: unknown };
        if (m.jsonrpc !== '2.0') this.badStdout++;
        if (typeof m.id === 'string' || typeof m.id === 'number') this.answered.add(String(m.id));
        if (typeof m.id === 'string' && !m.id.startsWith('fz')) this.results.set(m.id, m.result);
      } catch {
        this.badStdout++;
      }
    }
  }
  write(bytes: Buffer): Promise<void> {
    return new Promise((r) => {
      if (!this.alive) return r();
      this.child.stdin!.write(Buffer.concat([bytes, Buffer.from('\n')]), () => r());
    });
  }
  async request(id: string, method: string, params: unknown, timeoutMs: number): Promise<boolean> {
    await this.write(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, method, params })));
    const end = Date.now() + timeoutMs;
    while (!this.answered.has(id) && this.alive && Date.now() < end) await sleep(20);
    return this.answered.has(id);
  }
}

export async function startMcp(lab: Lab): Promise<McpProcess> {
  const p = new McpProcess(lab.start(['mcp'], 'pipe'));
  const ok = await p.request('init', 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'chaos', version: '1' } }, 30_000);
  if (!ok) throw new Error(`lightworker mcp did not answer initialize: ${p.stderrTail}`);
  await p.write(Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })));
  return p;
}

/** Run the MCP fuzz in its own lab. */
export async function runMcpFuzz(o: McpFuzzOptions): Promise<McpFuzzFigures> {
  return withLab('mcp', {}, async (lab) => {
    const rng = createRng(o.seed);
    const notes: string[] = [];
    let p = await startMcp(lab);
    await p.request('tools', 'tools/list', {}, 30_000);
    const listed = (p.results.get('tools') as { tools?: { name: string }[] } | undefined)?.tools?.map((t) => t.name) ?? [];
    if (!listed.length) throw new Error(`lightworker mcp listed no tools: ${p.stderrTail}`);
    const tools = [...listed, 'no_such_tool'];
    const pending = new Set<string>();
    let expected = 0;
    let unanswered = 0;
    let crashes = 0;
    let badStdout = 0;
    const settle = async (limit: number, timeoutMs: number) => {
      const end = Date.now() + timeoutMs;
      for (;;) {
        for (const id of pending) if (p.answered.has(id)) pending.delete(id);
        if (pending.size <= limit || !p.alive || Date.now() > end) return;
        await sleep(10);
      }
    };
    for (let n = 0; n < o.messages; n++) {
      const m = makeMessage(rng, n, tools);
      if (m.expectId) {
        expected++;
        pending.add(m.expectId);
      }
      await p.write(m.bytes);
      if (pending.size >= MAX_OUTSTANDING) await settle(MAX_OUTSTANDING / 2, 60_000);
      if (!p.alive) {
        crashes++;
        notes.push(`mcp died at message ${n} (exit ${p.child.exitCode ?? p.child.signalCode}): ${p.stderrTail.slice(0, 300)}`);
        unanswered += pending.size;
        pending.clear();
        badStdout += p.badStdout;
        if (crashes > 5) break;
        p = await startMcp(lab);
      }
      if (n > 0 && n % 2000 === 0) o.log(`  mcp fuzz: ${n}/${o.messages} messages`);
    }
    await settle(0, 70_000); // wait_tasks may legitimately block up to 55 s
    unanswered += pending.size;
    if (pending.size) notes.push(`unanswered ids: ${[...pending].slice(0, 8).join(', ')}`);
    badStdout += p.badStdout;
    const finalToolsList = p.alive && (await p.request('final', 'tools/list', {}, 30_000));
    if (!finalToolsList) notes.push(`no answer to the final tools/list: ${p.stderrTail.slice(0, 300)}`);
    p.child.stdin!.end();
    return { messages: o.messages, expected, unanswered, crashes, badStdout, finalToolsList, notes };
  });
}
