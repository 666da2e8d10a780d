import { randomBytes, timingSafeEqual, createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { registerSecretValues } from '../core/secret-values.js';
import { SECURITY_HEADERS } from './security.js';

/**
 * Console authentication, the model Jupyter users know: `serve` prints a URL carrying a per-start
 * secret that only the starting user sees; opening it exchanges the secret for an HttpOnly,
 * SameSite=Strict session cookie. Every route (page, assets, API reads, SSE, writes) needs that cookie
 * or `Authorization: Bearer <secret>`; another local user who can reach the loopback port gets nothing.
 */
export interface ConsoleSecrets {
  /** What the printed URL carries (`?token=`) and scripts send as a Bearer token. */
  token: string;
  /** What the cookie carries; distinct from the token so a cookie never reveals the printed URL. */
  session: string;
}

/** A cookie-authenticated write must also carry this header: a cross-site form cannot set it. */
export const CSRF_HEADER = 'x-lightworker-csrf';

/** 32 random bytes, base64url: the login token and the session secret of one `serve` start. */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function newConsoleSecrets(token = newSecret()): ConsoleSecrets {
  const secrets = { token, session: newSecret() };
  // Redacted by value wherever they could be echoed (errors, logs, events).
  registerSecretValues([secrets.token, secrets.session]);
  return secrets;
}

/**
 * The session cookie's name carries the port: cookies are not scoped by port, so two consoles on
 * 127.0.0.1 would otherwise overwrite each other's session.
 */
export function sessionCookieName(port: number): string {
  return `lightworker_session_${port}`;
}

/** Constant-time equality of two secrets (hashing first makes the lengths equal). */
export function secretMatches(given: string | undefined | null, secret: string): boolean {
  if (!given) return false;
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(secret).digest();
  return timingSafeEqual(a, b);
}

/** The value of cookie `name` in a Cookie header, if present. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export type AuthResult = { by: 'cookie' | 'bearer' } | null;

/** Who the request is: the session cookie, a Bearer token, or nobody (null). */
export function authenticate(req: IncomingMessage, secrets: ConsoleSecrets, port: number): AuthResult {
  const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
  if (bearer !== undefined) return secretMatches(bearer, secrets.token) ? { by: 'bearer' } : null;
  return secretMatches(readCookie(req.headers.cookie, sessionCookieName(port)), secrets.session) ? { by: 'cookie' } : null;
}

/** The Set-Cookie value for a signed-in browser: HttpOnly, SameSite=Strict, the whole site, session-long. */
export function sessionCookie(secrets: ConsoleSecrets, port: number): string {
  // No `Secure`: the console is plain http on loopback, where browsers would drop a Secure cookie.
  return `${sessionCookieName(port)}=${secrets.session}; HttpOnly; SameSite=Strict; Path=/`;
}

/**
 * Answer a login: `/?token=…` or `/login?token=…`. The right token sets the cookie and redirects to `/`
 * (the browser keeps the `#/…` fragment), so the secret leaves the address bar and history.
 * Returns false when the request is no login attempt.
 */
export function handleLogin(req: IncomingMessage, res: ServerResponse, url: URL, secrets: ConsoleSecrets, port: number): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  if (url.pathname !== '/login' && !(url.pathname === '/' && url.searchParams.has('token'))) return false;
  const given = url.searchParams.get('token');
  if (!secretMatches(given, secrets.token)) {
    sendSignInPage(res, given ? 403 : 401, given ? 'This link carries a wrong or outdated token.' : undefined);
    return true;
  }
  res.writeHead(303, { ...SECURITY_HEADERS, location: '/', 'set-cookie': sessionCookie(secrets, port), 'cache-control': 'no-store' });
  res.end();
  return true;
}

export const SIGN_IN_MESSAGE = 'open the URL printed by `lightworker serve`';

/** What an unauthenticated browser sees instead of the console: no secret, no data, no script. */
export function sendSignInPage(res: ServerResponse, status: 401 | 403, why = 'This console needs the secret link that only the user who started it sees.'): void {
  const html = [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8"><title>LightWorker — sign in</title></head>',
    '<body>',
    '<h1>LightWorker console</h1>',
    `<p>${why}</p>`,
    `<p id="sign-in">To use it, ${SIGN_IN_MESSAGE.replace('`lightworker serve`', '<code>lightworker serve</code>')} (it ends in <code>?token=…</code>). If the server restarted, its new URL has a new token.</p>`,
    '</body></html>',
  ].join('\n');
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(html);
}

/** The JSON refusal every unauthenticated API request gets. */
export function unauthenticatedBody(): { ok: false; error: { code: string; message: string } } {
  return { ok: false, error: { code: 'forbidden', message: `not signed in to this console: ${SIGN_IN_MESSAGE} (a restarted server has a new URL)` } };
}
