import { isIP } from 'node:net';
import { AppError } from '../core/errors.js';

/** The only addresses `serve` binds to: literal loopback, never a name that DNS could redirect. */
export const LOOPBACK_HOSTS = ['127.0.0.1', '::1'] as const;
export type LoopbackHost = (typeof LOOPBACK_HOSTS)[number];

/** Accept `127.0.0.1`, `::1` or `[::1]`; refuse anything else (0.0.0.0, localhost, a LAN address). */
export function requireLoopbackHost(host: string): LoopbackHost {
  const h = host.trim().replace(/^\[(.*)\]$/, '$1');
  if (h === '127.0.0.1' || h === '::1') return h;
  const why = h === 'localhost' ? 'a name, not a literal address' : isIP(h) ? 'not a loopback address' : 'not an IP address';
  throw new AppError('invalid_input', `--host ${host}: ${why}; serve binds only to literal loopback (127.0.0.1 or ::1)`, { field: 'host' });
}

/** `host:port` as it appears in a URL or Host header (IPv6 in brackets). */
export function hostPort(host: LoopbackHost, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * The Host header must name this server: the bound literal or `localhost`, with the bound port.
 * Anything else (a rebinding attacker's domain) is refused before routing.
 */
export function isAllowedHostHeader(header: string | undefined, host: LoopbackHost, port: number): boolean {
  if (!header) return false;
  const h = header.toLowerCase();
  return h === hostPort(host, port) || h === `localhost:${port}`;
}

/** An Origin header, when a browser sends one, must be one of our own origins. */
export function isAllowedOrigin(origin: string | undefined, host: LoopbackHost, port: number): boolean {
  if (origin === undefined) return true;
  return origin === `http://${hostPort(host, port)}` || origin === `http://localhost:${port}`;
}

/** Strict CSP: our own scripts and styles only, no framing, no plugins, fetch/SSE to ourselves. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join('; ');

export const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=()',
};

/** HTTP status for an error code, as every JSON reply maps it. */
export function statusForCode(code: string): number {
  switch (code) {
    case 'invalid_input':
      return 400;
    case 'forbidden':
      return 403;
    case 'not_found':
      return 404;
    case 'conflict':
    case 'illegal_transition':
      return 409;
    default:
      return 500;
  }
}
