import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** An error the bridge answers with `{ok:false, error:{code, message}}` and an HTTP status. */
export class BridgeError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Constant-time token check: both sides are hashed first, so neither the content nor the length of
 * the expected token leaks through timing.
 */
export function tokensEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/**
 * Requests must name the loopback address they came to (a DNS-rebinding page sends its own host
 * name) and carry no Origin (browsers add one to cross-site requests; LightWorker never sends one).
 */
export function checkRequestOrigin(req: IncomingMessage, port: number): void {
  const host = (req.headers.host ?? '').toLowerCase();
  const allowed = [`127.0.0.1:${port}`, `localhost:${port}`];
  if (!allowed.includes(host)) throw new BridgeError(403, 'forbidden', `Host header "${host.slice(0, 100)}" is not this bridge's loopback address`);
  if (req.headers.origin !== undefined) throw new BridgeError(403, 'forbidden', 'requests with an Origin header (browser pages) are refused');
}

/** `Authorization: Bearer <token>`, compared in constant time. */
export function checkToken(req: IncomingMessage, token: string): void {
  const header = req.headers.authorization ?? '';
  const m = /^Bearer (\S+)$/.exec(header);
  if (!m || !tokensEqual(m[1], token)) throw new BridgeError(401, 'unauthorized', 'missing or wrong bearer token (see the discovery file)');
}

/**
 * The JSON body, at most `limit` bytes (413 past it, read no further); only `application/json`.
 */
export function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') return Promise.reject(new BridgeError(415, 'invalid_input', 'content-type must be application/json'));
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(new BridgeError(413, 'too_large', `body: ${declared} bytes is over the ${limit}-byte limit`));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (c: Buffer) => {
      if (done) return;
      size += c.length;
      if (size > limit) {
        done = true;
        reject(new BridgeError(413, 'too_large', `body: over the ${limit}-byte limit`));
        req.pause();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (done) return;
      done = true;
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(new BridgeError(400, 'invalid_input', 'body: not valid JSON'));
      }
    });
    req.on('error', (err) => {
      if (!done) reject(new BridgeError(400, 'invalid_input', `body: ${err.message}`));
      done = true;
    });
  });
}

/** One JSON answer; closes the connection when the request body was not read to the end. */
export function sendJson(res: ServerResponse, status: number, body: unknown, close = false): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  const headers: Record<string, string | number> = { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' };
  if (close) headers.connection = 'close';
  res.writeHead(status, headers);
  res.end(text);
}

export function sendError(res: ServerResponse, err: unknown): void {
  const e = err instanceof BridgeError ? err : new BridgeError(500, 'internal', err instanceof Error ? err.message : String(err));
  sendJson(res, e.status, { ok: false, error: { code: e.code, message: e.message } }, e.status === 413 || e.status === 401 || e.status === 403);
}
