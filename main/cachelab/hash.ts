import { createHash } from 'node:crypto';

/** SHA-256 of UTF-8 text, hex. */
export function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** JSON with object keys sorted at every level, so equal values always hash the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj).filter((k) => obj[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Hash of a JSON-like value (canonical encoding). */
export function hashJson(value: unknown): string {
  return sha256(canonicalJson(value));
}

/** UTF-8 byte length. */
export function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
