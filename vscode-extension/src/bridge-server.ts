import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isAbsolute } from 'node:path';
import { AgentTurn, type TurnEvent, type TurnRequest } from './agent-turn.js';
import { listAgents, locateAgentCli, type AgentName } from './agents.js';
import type { BridgeApi } from './api.js';
import { discoveryDir, removeDiscovery, writeDiscovery } from './discovery.js';
import { BridgeError, checkRequestOrigin, checkToken, readJsonBody, sendError, sendJson } from './http-guard.js';
import { openTurnTerminal } from './terminal.js';

export interface BridgeOptions {
  api: BridgeApi;
  extensionVersion: string;
  /** Where the discovery file goes (default: discoveryDir()). */
  discoveryDir?: string;
  /** Largest request body, bytes (default 1 MiB). */
  maxBodyBytes?: number;
  /** Most turns running at once (default 4). */
  maxTurns?: number;
  /** SIGTERM → SIGKILL grace for an agent's tree, ms (default 2000). */
  killGraceMs?: number;
  revealTerminal?: () => boolean;
}

export interface Bridge {
  port: number;
  token: string;
  discoveryPath: string;
  server: Server;
  /** Cancel every turn, close the server, remove the discovery file. */
  stop(): Promise<void>;
}

const MARKER_ENV = /^LIGHTWORKER_(TASK_ID|ATTEMPT|HOME_ID|DEPTH)$/;
const AGENTS: readonly AgentName[] = ['claude-code', 'codex'];

function field(name: string, message: string): BridgeError {
  return new BridgeError(400, 'invalid_input', `${name}: ${message}`);
}

/** A POST /v1/turns body → a TurnRequest; errors name the field. */
export function parseTurnRequest(body: unknown, api: BridgeApi): TurnRequest {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw field('body', 'must be a JSON object');
  const b = body as Record<string, unknown>;
  const known = new Set(['agent', 'prompt', 'cwd', 'sandbox', 'session_id', 'model', 'env']);
  const extra = Object.keys(b).find((k) => !known.has(k));
  if (extra) throw field(extra, 'unknown field');
  if (typeof b.prompt !== 'string' || !b.prompt.trim()) throw field('prompt', 'must be a non-empty string');
  if (typeof b.cwd !== 'string' || !isAbsolute(b.cwd)) throw field('cwd', 'must be an absolute path');
  let isDir = false;
  try {
    isDir = statSync(b.cwd).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) throw field('cwd', `${b.cwd} is not a directory`);
  const sandbox = b.sandbox ?? 'read-only';
  if (sandbox !== 'read-only' && sandbox !== 'workspace-write') throw field('sandbox', 'must be read-only or workspace-write');
  for (const k of ['session_id', 'model'] as const) {
    if (b[k] !== undefined && b[k] !== null && (typeof b[k] !== 'string' || !/^[\w.:@/[\]-]{1,200}$/.test(b[k] as string))) throw field(k, 'must be a short id string or null');
  }
  const env: Record<string, string> = {};
  if (b.env !== undefined) {
    if (!b.env || typeof b.env !== 'object' || Array.isArray(b.env)) throw field('env', 'must be an object');
    for (const [k, v] of Object.entries(b.env)) {
      if (!MARKER_ENV.test(k) || typeof v !== 'string' || v.length > 200) throw field(`env.${k}`, 'only LightWorker marker variables (short strings) may be passed');
      env[k] = v;
    }
  }
  let agent: AgentName;
  if (b.agent === undefined || b.agent === null) {
    // No choice made: the first agent whose CLI is here.
    const found = AGENTS.find((a) => locateAgentCli(api, a));
    if (!found) throw new BridgeError(409, 'worker_missing', 'agent: no Claude Code or Codex extension with a usable CLI in this editor');
    agent = found;
  } else if (b.agent === 'claude-code' || b.agent === 'codex') agent = b.agent;
  else throw field('agent', 'must be claude-code or codex');
  return { agent, prompt: b.prompt, cwd: b.cwd, sandbox, sessionId: (b.session_id as string | null) ?? null, model: (b.model as string | null) ?? null, env };
}

/**
 * Start the bridge: an HTTP server on 127.0.0.1 (random port), a fresh token, the discovery file.
 * Every request: Host is this loopback address, no Origin, `Authorization: Bearer <token>`.
 * - GET /v1/health, GET /v1/agents, GET /v1/turns
 * - POST /v1/turns {agent?, prompt, cwd, sandbox?, session_id?, model?, env?} → NDJSON stream of
 *   turn.started / stdout {line} / stderr / turn.exited; a dropped connection cancels the turn
 * - DELETE /v1/turns/<id> → cancels (kills the agent's process tree), answers when it is gone
 *   (`ended: false` if it still was not, seconds after SIGKILL)
 */
export async function startBridge(opts: BridgeOptions): Promise<Bridge> {
  const token = randomBytes(32).toString('base64url');
  const maxBody = opts.maxBodyBytes ?? 1024 * 1024;
  const maxTurns = opts.maxTurns ?? 4;
  const turns = new Map<string, AgentTurn>();
  let port = 0;

  async function startTurn(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const request = parseTurnRequest(await readJsonBody(req, maxBody), opts.api);
    if (turns.size >= maxTurns) throw new BridgeError(429, 'busy', `${turns.size} turns are running (limit ${maxTurns})`);
    const cli = locateAgentCli(opts.api, request.agent);
    if (!cli) throw new BridgeError(409, 'worker_missing', `agent: the ${request.agent} extension is not installed, or its CLI was not found`);
    let terminal: ReturnType<typeof openTurnTerminal> | null = null;
    const emit = (e: TurnEvent) => {
      terminal?.write(e);
      if (!res.writableEnded && !res.destroyed) res.write(JSON.stringify(e) + '\n');
    };
    const turn = new AgentTurn(request, cli, emit, opts.killGraceMs);
    turns.set(turn.id, turn);
    terminal = openTurnTerminal(opts.api, `LightWorker: ${request.agent}`, (reason) => void turn.cancel(reason), opts.revealTerminal?.() ?? false);
    res.writeHead(200, { 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-store', 'x-lightworker-turn': turn.id });
    // LightWorker gone (its runner killed the client, or the connection dropped): nobody reads the turn.
    res.on('close', () => {
      if (!res.writableFinished) void turn.cancel('client disconnected');
    });
    try {
      await turn.run();
    } finally {
      turns.delete(turn.id);
      res.end();
    }
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    checkRequestOrigin(req, port);
    checkToken(req, token);
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
    const path = url.pathname;
    const cancelMatch = /^\/v1\/turns\/([0-9a-f-]{36})$/.exec(path);
    if (path === '/v1/health' && req.method === 'GET') {
      return sendJson(res, 200, { ok: true, name: 'lightworker-vscode-bridge', version: opts.extensionVersion, pid: process.pid, workspace_folders: folders(), turns: turns.size });
    }
    if (path === '/v1/agents' && req.method === 'GET') return sendJson(res, 200, { ok: true, agents: listAgents(opts.api) });
    if (path === '/v1/turns' && req.method === 'GET') {
      return sendJson(res, 200, { ok: true, turns: [...turns.values()].map((t) => ({ turn_id: t.id, agent: t.request.agent, pid: t.pid, cwd: t.request.cwd })) });
    }
    if (path === '/v1/turns' && req.method === 'POST') return startTurn(req, res);
    if (cancelMatch && req.method === 'DELETE') {
      const turn = turns.get(cancelMatch[1]);
      if (!turn) throw new BridgeError(404, 'not_found', `turn ${cancelMatch[1]} is not running`);
      const ended = await turn.cancel('cancelled by LightWorker');
      return sendJson(res, 200, { ok: true, turn_id: turn.id, cancelled: true, ended });
    }
    if (['/v1/health', '/v1/agents', '/v1/turns'].includes(path) || cancelMatch) throw new BridgeError(405, 'method_not_allowed', `${req.method} is not allowed on ${path}`);
    throw new BridgeError(404, 'not_found', `no route ${path}`);
  }

  const folders = () => (opts.api.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  const server = createServer((req, res) => {
    route(req, res).catch((err) => sendError(res, err));
  });
  // A slow or stalled request body cannot hold a socket open for long.
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  const dir = opts.discoveryDir ?? discoveryDir();
  const discoveryPath = writeDiscovery(dir, {
    version: 1, pid: process.pid, host: '127.0.0.1', port, token, workspace_folders: folders(), extension_version: opts.extensionVersion, started_at: new Date().toISOString(),
  });
  return {
    port, token, discoveryPath, server,
    async stop() {
      removeDiscovery(discoveryPath, token);
      await Promise.all([...turns.values()].map((t) => t.cancel('bridge stopped')));
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
