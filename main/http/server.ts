import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { COMMANDS } from '../commands/index.js';
import { runCommand, type CommandDef } from '../commands/table.js';
import { AppError, toErrorPayload } from '../core/errors.js';
import type { Engine } from '../engine.js';
import { authenticate, CSRF_HEADER, handleLogin, newConsoleSecrets, sendSignInPage, unauthenticatedBody } from './auth.js';
import { resumeCursor, streamEvents } from './events-stream.js';
import { hostPort, isAllowedHostHeader, isAllowedOrigin, requireLoopbackHost, SECURITY_HEADERS, statusForCode, type LoopbackHost } from './security.js';
import { serveStatic } from './static.js';

/** A batch of 100 tasks with 64 KiB objectives fits; anything bigger is refused unread. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

export interface ConsoleServerOptions {
  engine: Engine;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** The per-start secret of the printed URL (`?token=`) and of `Authorization: Bearer`. */
  token: string;
  /** The built renderer (index.html and assets). */
  rendererDir: string;
  commands?: ReadonlyMap<string, CommandDef>;
}

export interface ConsoleServer {
  server: Server;
  host: LoopbackHost;
  port: number;
  /** The bare address, useless without a session. */
  url: string;
  /** The address to print and open: carries the token, signs a browser in. */
  loginUrl: string;
  close(): Promise<void>;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

function sendError(res: ServerResponse, err: unknown): void {
  const error = toErrorPayload(err);
  sendJson(res, statusForCode(error.code), { ok: false, error });
}

async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new AppError('invalid_input', `request body is larger than ${MAX_BODY_BYTES} bytes`, { field: 'body' });
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (!text) return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError('invalid_input', 'request body: not valid JSON', { field: 'body' });
  }
}

/** name, description, readOnly and the input's JSON schema of every command. */
export function describeCommands(table: ReadonlyMap<string, CommandDef>): unknown[] {
  return [...table.values()].map((c) => {
    let schema: unknown = null;
    try {
      schema = z.toJSONSchema(c.input, { io: 'input', unrepresentable: 'any' });
    } catch {
      schema = null; // a schema zod cannot express; the command still runs
    }
    return { name: c.name, description: c.description, readOnly: c.readOnly, destructive: Boolean(c.destructive), inputSchema: schema };
  });
}

/**
 * The headless console: the built renderer plus a JSON API over the command table, on literal loopback.
 * Every request must carry a Host header naming this server. Everything but the login exchange needs the
 * session cookie that `/?token=<per-start token>` sets, or `Authorization: Bearer <token>` (auth.ts);
 * cookie-authenticated POSTs also need the CSRF header and, when a browser sends one, our own Origin.
 */
export async function startConsoleServer(opts: ConsoleServerOptions): Promise<ConsoleServer> {
  const host = requireLoopbackHost(opts.host ?? '127.0.0.1');
  const table = opts.commands ?? COMMANDS;
  let port = opts.port ?? 8766;
  const secrets = newConsoleSecrets(opts.token);

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (!isAllowedHostHeader(req.headers.host, host, port)) {
      return sendJson(res, 421, { ok: false, error: { code: 'forbidden', message: `Host header "${req.headers.host ?? ''}" is not this server (${hostPort(host, port)} or localhost:${port})` } });
    }
    if (!isAllowedOrigin(req.headers.origin, host, port)) {
      return sendJson(res, 403, { ok: false, error: { code: 'forbidden', message: `Origin "${req.headers.origin}" is not this console` } });
    }
    const url = new URL(req.url ?? '/', `http://${hostPort(host, port)}`);
    const path = url.pathname;
    if (handleLogin(req, res, url, secrets, port)) return;
    const auth = authenticate(req, secrets, port);
    if (!auth) return path.startsWith('/api/') ? sendJson(res, 401, unauthenticatedBody()) : sendSignInPage(res, 401);
    if (path === '/api/session' && req.method === 'GET') return sendJson(res, 200, { ok: true, data: { signedIn: true, by: auth.by } });
    if (path === '/api/commands' && req.method === 'GET') return sendJson(res, 200, { ok: true, data: { commands: describeCommands(table) } });
    if (path === '/api/events' && req.method === 'GET') return streamEvents(req, res, opts.engine, resumeCursor(req, url, opts.engine));
    const m = /^\/api\/commands\/([a-z0-9_]+)$/.exec(path);
    if (m && req.method === 'POST') {
      const name = m[1];
      if (auth.by === 'cookie' && !req.headers[CSRF_HEADER]) {
        return sendJson(res, 403, { ok: false, error: { code: 'forbidden', message: `POST from a browser session needs the ${CSRF_HEADER} header` } });
      }
      const body = await readJsonBody(req);
      const abort = new AbortController();
      res.on('close', () => {
        if (!res.writableFinished) abort.abort();
      });
      const data = await runCommand(table, { engine: opts.engine, face: 'http', depth: 0, signal: abort.signal }, name, body);
      return sendJson(res, 200, { ok: true, data: data ?? null });
    }
    if (path.startsWith('/api/')) return sendJson(res, 404, { ok: false, error: { code: 'not_found', message: `no route ${req.method} ${path}` } });
    if (req.method !== 'GET' && req.method !== 'HEAD') return sendJson(res, 405, { ok: false, error: { code: 'invalid_input', message: `method ${req.method} not allowed` } });
    serveStatic(res, opts.rendererDir, path);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) sendError(res, err);
      else res.end();
    });
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolveListen, rejectListen) => {
    const onError = (e: NodeJS.ErrnoException) => {
      const why = e.code === 'EADDRINUSE' ? `port ${port} is in use (pick another with --port, or --port 0)` : e.code === 'EADDRNOTAVAIL' ? `${host} is not available on this machine` : e.message;
      rejectListen(new AppError('unavailable', `cannot listen on ${hostPort(host, port)}: ${why}`));
    };
    server.once('error', onError);
    server.listen({ host, port, ipv6Only: host === '::1' }, () => {
      server.off('error', onError);
      resolveListen();
    });
  });
  port = (server.address() as AddressInfo).port;
  const sockets = new Set<import('node:net').Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return {
    server,
    host,
    port,
    url: `http://${hostPort(host, port)}/`,
    loginUrl: `http://${hostPort(host, port)}/?token=${encodeURIComponent(opts.token)}`,
    close: () =>
      new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        for (const s of sockets) s.destroy(); // SSE streams never end by themselves
      }),
  };
}
