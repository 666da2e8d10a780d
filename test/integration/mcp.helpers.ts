import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Engine } from '../../main/engine.js';
import type { CommandDef } from '../../main/commands/table.js';
import { createServer, type McpServerOptions } from '../../main/mcp/server.js';
import { makeRepo, tempDir, withTestStore } from '../helpers/env.js';

export const ROOT = resolve(import.meta.dirname, '../..');
export const BIN = join(ROOT, 'bin', 'lightworker.js');

export interface McpHarness {
  dir: string;
  home: string;
  repo: string;
  engine: Engine;
  client: Client;
  /** callTool returning the result (isError results included, protocol errors thrown). */
  call: (name: string, args?: Record<string, unknown>) => Promise<ToolResult>;
  close: () => Promise<void>;
}

export interface ToolResult {
  isError?: boolean;
  structuredContent?: any;
  content: { type: string; text: string }[];
}

/** A temp home (optionally with config.toml), a repo, an Engine, and an SDK Client over the in-memory transport. */
export async function inMemory(opts: { configToml?: string; server?: McpServerOptions; commands?: ReadonlyMap<string, CommandDef> } = {}): Promise<McpHarness> {
  const { dir, cleanup } = tempDir('lw-mcp-');
  const home = join(dir, 'home');
  const repo = makeRepo(join(dir, 'repo'));
  withTestStore(home, opts.configToml);
  const eng = new Engine({ home });
  const server = createServer(eng, { depth: 0, toolSet: 'full', ...opts.server, commands: opts.commands ?? opts.server?.commands });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(ct);
  const call = async (name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as ToolResult;
  return {
    dir,
    home,
    repo,
    engine: eng,
    client,
    call,
    close: async () => {
      await client.close();
      await server.close();
      eng.close();
      cleanup();
    },
  };
}

/** A real `lightworker mcp` child speaking newline-delimited JSON-RPC. */
export class StdioChild {
  readonly proc: ChildProcessWithoutNullStreams;
  private buf = '';
  readonly messages: any[] = [];
  readonly stdoutLines: string[] = [];
  stderr = '';
  private waiters: { pred: (m: any) => boolean; resolve: (m: any) => void }[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(home: string, env: Record<string, string> = {}, args: string[] = ['mcp'], nodeArgs: string[] = []) {
    this.proc = spawn(process.execPath, [...nodeArgs, BIN, ...args], {
      env: { ...process.env, LIGHTWORKER_HOME: home, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.proc.stdout.setEncoding('utf8');
    this.proc.stdout.on('data', (d: string) => {
      this.buf += d;
      let nl: number;
      while ((nl = this.buf.indexOf('\n')) !== -1) {
        const line = this.buf.slice(0, nl);
        this.buf = this.buf.slice(nl + 1);
        this.stdoutLines.push(line);
        const m = JSON.parse(line); // anything on stdout that is not JSON fails the test here
        this.messages.push(m);
        this.waiters = this.waiters.filter((w) => (w.pred(m) ? (w.resolve(m), false) : true));
      }
    });
    this.proc.stderr.on('data', (d) => (this.stderr += d));
    this.exited = new Promise((r) => this.proc.on('exit', (code, signal) => r({ code, signal })));
  }

  send(msg: unknown): void {
    this.proc.stdin.write((typeof msg === 'string' ? msg : JSON.stringify(msg)) + '\n');
  }

  waitFor(pred: (m: any) => boolean, timeoutMs = 30_000): Promise<any> {
    const hit = this.messages.find(pred);
    if (hit) return Promise.resolve(hit);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`timed out waiting for a message; stderr: ${this.stderr.slice(-2000)}`)), timeoutMs);
      this.waiters.push({ pred, resolve: (m) => (clearTimeout(t), resolve(m)) });
    });
  }

  private nextId = 1;
  async request(method: string, params?: unknown): Promise<any> {
    const id = `req-${this.nextId++}`;
    this.send({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
    return this.waitFor((m) => m.id === id);
  }

  async initialize(): Promise<any> {
    const r = await this.request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } });
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return r;
  }

  callTool(name: string, args: unknown = {}): Promise<any> {
    return this.request('tools/call', { name, arguments: args });
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill('SIGTERM');
      await this.exited;
    }
  }
}

/** A realistic delegate_task input (a maintenance audit with criteria, verify and metadata), number `i`. */
export function realisticTask(repo: string, i: number, kind: 'explore' | 'execute' = 'explore') {
  return {
    name: `audit module ${i}: find dead exports and unused dependencies`,
    objective: `Read src/module-${i} and its tests. List every exported function that nothing imports, every dependency in package.json that no file under src/module-${i} uses, and every TODO older than the last release. `.repeat(3),
    workspace: repo,
    kind,
    success_criteria: ['every finding names a file and line', 'no file is changed'],
    verify: [['npm', 'test', '--', `module-${i}`]],
    metadata: { ticket: `LW-${1000 + i}`, area: 'maintenance' },
  };
}
