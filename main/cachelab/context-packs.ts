import { AppError } from '../core/errors.js';
import { containsSecret } from '../core/redact.js';
import type { Db } from '../store/db.js';
import { TERMINAL } from '../core/model.js';
import { deletePackVersions, insertPackVersion, listPackVersions, newestPackVersion, packVersion, tasksUsingPacks, type PackRow } from '../store/cachelab.js';
import { byteLength, sha256 } from './hash.js';

/**
 * Context Packs: explicit, named, versioned reference text that goes into the stable part of
 * the prompt. Never built from files automatically. Stored once per name + version (versions are
 * immutable); shown everywhere only as name, version, hash and bytes — the text goes to workers only.
 */
export const CONTEXT_PACK_MAX_BYTES = 32 * 1024;
export const PACK_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
export const PACK_VERSION = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,31}$/;

export interface ContextPackInfo {
  name: string;
  version: string;
  /** `sha256:<hex>` over name, version and the canonical text. */
  hash: string;
  bytes: number;
  createdAt: number;
}

export interface ContextPack extends ContextPackInfo {
  text: string;
}

/**
 * Canonical encoding: Unicode NFC, `\n` line ends, trailing whitespace trimmed on every line, no
 * trailing blank lines, one final newline. Equal text in any editor's encoding hashes the same.
 */
export function canonicalPackText(text: string): string {
  const lines = text.normalize('NFC').replace(/\r\n?/g, '\n').split('\n').map((l) => l.replace(/[ \t\f\v\u00a0]+$/u, ''));
  while (lines.length && lines[lines.length - 1] === '') lines.pop();
  return lines.length ? lines.join('\n') + '\n' : '';
}

/** The pack's identity: name, version and canonical text together. */
export function packHash(name: string, version: string, canonical: string): string {
  return `sha256:${sha256(`lw-context-pack/1\0${name}\0${version}\0${canonical}`)}`;
}

/** NUL and other C0 controls except tab, line feed, vertical tab, form feed and carriage return. */
function hasBinaryControl(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 && (c < 0x09 || c > 0x0d)) return true;
  }
  return false;
}

/** Reject a pack that is empty, too large, not well-formed UTF-16/UTF-8 text, or looks like a credential. */
export function validatePack(name: string, version: string, text: string): string {
  if (!PACK_NAME.test(name)) throw new AppError('invalid_input', `name: "${name}" is not a pack name (letters, digits, . _ -; at most 64)`, { field: 'name' });
  if (!PACK_VERSION.test(version)) throw new AppError('invalid_input', `version: "${version}" is not a version (letters, digits, . _ + -; at most 32)`, { field: 'version' });
  if (LONE_SURROGATE.test(text)) throw new AppError('invalid_input', 'text: not valid Unicode text (lone surrogate)', { field: 'text' });
  if (hasBinaryControl(text)) throw new AppError('invalid_input', 'text: contains control characters (binary data is not a context pack)', { field: 'text' });
  const canonical = canonicalPackText(text);
  if (!canonical) throw new AppError('invalid_input', 'text: the context pack is empty', { field: 'text' });
  const bytes = byteLength(canonical);
  if (bytes > CONTEXT_PACK_MAX_BYTES) {
    throw new AppError('invalid_input', `text: the context pack is ${bytes} bytes of UTF-8; the limit is ${CONTEXT_PACK_MAX_BYTES} (32 KiB)`, { field: 'text', bytes });
  }
  if (containsSecret(canonical)) {
    throw new AppError('invalid_input', 'text: the context pack looks like it contains a credential (a key, token or password); remove it — packs go to every worker', { field: 'text' });
  }
  return canonical;
}

/** Decode a file's bytes as strict UTF-8 (a BOM is dropped). */
export function decodePackFile(buf: Uint8Array, field = 'file'): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(buf);
  } catch {
    throw new AppError('invalid_input', `${field}: not valid UTF-8 text`, { field });
  }
}

const info = (r: PackRow): ContextPackInfo => ({ name: r.name, version: r.version, hash: r.hash, bytes: r.bytes, createdAt: r.created_at });

/**
 * Store a pack version once. Adding the same name + version + text again changes nothing
 * (`created: false`); the same name + version with other text is a conflict (versions are immutable).
 */
export function addContextPack(db: Db, name: string, version: string, text: string, now = Date.now()): ContextPackInfo & { created: boolean } {
  const canonical = validatePack(name, version, text);
  const hash = packHash(name, version, canonical);
  const existing = packVersion(db, name, version);
  if (existing) {
    if (existing.hash !== hash) {
      throw new AppError('conflict', `version: ${name}@${version} already exists with other text (${existing.hash}); add a new version`, { field: 'version' });
    }
    return { ...info(existing), created: false };
  }
  insertPackVersion(db, { hash, name, version, text: canonical, bytes: byteLength(canonical), created_at: now });
  return { name, version, hash, bytes: byteLength(canonical), createdAt: now, created: true };
}

/** Every pack version, by name then newest first. */
export function listContextPacks(db: Db): ContextPackInfo[] {
  return listPackVersions(db).map(info);
}

/** Split `name` or `name@version`. */
export function parsePackRef(ref: string): { name: string; version: string | null } {
  const at = ref.lastIndexOf('@');
  return at > 0 ? { name: ref.slice(0, at), version: ref.slice(at + 1) } : { name: ref, version: null };
}

/** A pack by `name` (its newest version) or `name@version`, with its text; null when absent. */
export function findContextPack(db: Db, ref: string): ContextPack | null {
  const { name, version } = parsePackRef(ref);
  const row = version === null ? newestPackVersion(db, name) : packVersion(db, name, version);
  return row ? { ...info(row), text: row.text } : null;
}

/**
 * Resolve a task's `context_pack` to a pinned `name@version` so children and retries run the same
 * text. Unknown packs are rejected naming `field`.
 */
export function resolvePackRef(db: Db, ref: string | null, field = 'context_pack'): string | null {
  if (!ref) return null;
  const pack = findContextPack(db, ref);
  if (!pack) {
    throw new AppError('invalid_input', `${field}: unknown context pack "${ref}" (add it with: lightworker context-pack add NAME --version V --file F)`, { field });
  }
  return `${pack.name}@${pack.version}`;
}

/**
 * Remove one version (`name@version`) or every version of a pack (`name`). Refused while a task that is
 * not over is pinned to a version it removes (that task would fail when it starts); ended tasks that used
 * it are counted, since retrying one would then fail on the missing pack.
 */
export function removeContextPack(db: Db, ref: string): { removed: ContextPackInfo[]; endedTasks: number } {
  const { name, version } = parsePackRef(ref);
  const gone = listContextPacks(db).filter((p) => p.name === name && (version === null || p.version === version));
  if (!gone.length) throw new AppError('not_found', `name: context pack "${ref}" not found`, { field: 'name' });
  const use = tasksUsingPacks(db, gone.map((p) => `${p.name}@${p.version}`), [...TERMINAL]);
  if (use.live.length) {
    const shown = use.live.slice(0, 5).join(', ') + (use.live.length > 5 ? ` and ${use.live.length - 5} more` : '');
    throw new AppError('conflict', `name: ${ref} is pinned by ${use.live.length} task(s) that have not ended (${shown}); cancel them or wait for them first`, { field: 'name', tasks: use.live });
  }
  deletePackVersions(db, name, version);
  return { removed: gone, endedTasks: use.ended };
}
