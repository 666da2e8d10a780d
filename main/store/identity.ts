import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { AppError } from '../core/errors.js';
import type { HomePaths } from '../core/home.js';
import { newId } from '../core/ids.js';
import { writeTx, type Db } from './db.js';
import { getSetting, setSetting } from './settings.js';

// The store's identity, inside the database (setting `store.id`) and beside it (`<home>/store-id`). SQLite
// creates an empty database wherever a file is missing: without the marker, a deleted lightworker.db would
// come back as a new, empty, healthy-looking store on the next command, its tasks gone without a word.

const ID_KEY = 'store.id';

export interface StoreMarker {
  id: string;
  createdAt: string;
}

export function readStoreMarker(home: HomePaths): StoreMarker | null {
  let text: string;
  try {
    text = readFileSync(home.storeId, 'utf8');
  } catch {
    return null;
  }
  try {
    const m = JSON.parse(text) as Partial<StoreMarker>;
    if (typeof m.id === 'string' && m.id) return { id: m.id, createdAt: String(m.createdAt ?? '') };
  } catch {
    // a marker someone edited: its first word is taken as the id
  }
  const id = text.trim().split(/\s+/)[0];
  return id ? { id, createdAt: '' } : null;
}

function writeStoreMarker(home: HomePaths, marker: StoreMarker): void {
  const tmp = `${home.storeId}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(marker) + '\n', { mode: 0o600 });
  renameSync(tmp, home.storeId);
}

/**
 * Before the database is opened: refuse to let SQLite create a store where this home had one. A missing or
 * empty file with the marker present is an error naming what happened and the two ways on (restore the
 * file, or `lightworker init --new-store`).
 */
export function checkStoreBeforeOpen(home: HomePaths): void {
  const size = sizeOf(home.db);
  if (size !== null && size > 0) return;
  const marker = readStoreMarker(home);
  // A home from before markers: its write-ahead log left behind still says a store was here.
  const walLeft = (sizeOf(`${home.db}-wal`) ?? 0) > 0;
  if (!marker && !walLeft) return;
  const had = marker ? `this home had one (store ${marker.id}${marker.createdAt ? `, created ${marker.createdAt}` : ''}, named in ${home.storeId})` : `its write-ahead log ${home.db}-wal is still there`;
  const what = size === null ? 'is missing (deleted or moved)' : 'is empty (0 bytes: truncated)';
  throw new AppError(
    'store_damaged',
    `the store ${home.db} ${what}, but ${had}; nothing was created in its place. Restore it from a backup to ${home.db}, or start an empty store with \`lightworker init --new-store\` (its tasks are then gone)`,
    { path: home.db, marker: home.storeId, storeId: marker?.id ?? null, fix: `restore ${home.db}, or \`lightworker init --new-store\`` },
  );
}

function sizeOf(path: string): number | null {
  try {
    return statSync(path).size;
  } catch {
    return null;
  }
}

/**
 * After the database opened: give a store without an id one (a new store, or one made before ids), and keep
 * the marker naming the store the file holds. On a read-only home, nothing is written.
 */
export function recordStoreIdentity(db: Db, home: HomePaths, readonly: boolean): string | null {
  let id = getSetting<string>(db, ID_KEY);
  if (!id) {
    if (readonly) return null;
    id = writeTx(db, () => {
      const current = getSetting<string>(db, ID_KEY);
      if (current) return current;
      const fresh = newId();
      setSetting(db, ID_KEY, fresh);
      return fresh;
    });
  }
  const marker = readStoreMarker(home);
  if (marker?.id !== id && !readonly) {
    try {
      writeStoreMarker(home, { id, createdAt: new Date().toISOString() });
    } catch {
      // a home this process cannot write: the marker is written by the next one that can
    }
  }
  return id;
}

/** The id the store itself holds (doctor compares it with the marker). */
export function storeIdOf(db: Db): string | null {
  return getSetting<string>(db, ID_KEY);
}

/**
 * `init --new-store`: set the store files aside (named `<db>.set-aside-<time>`, with their -wal and -shm)
 * and forget the marker, so the next open creates an empty store. Returns the names they were moved to.
 */
export function setStoreAside(home: HomePaths, now = new Date()): string[] {
  const stamp = now.toISOString().replace(/[:.]/g, '-');
  const moved: string[] = [];
  for (const suffix of ['', '-wal', '-shm']) {
    const from = home.db + suffix;
    if (!existsSync(from)) continue;
    const to = `${home.db}.set-aside-${stamp}${suffix}`;
    renameSync(from, to);
    moved.push(to);
  }
  if (existsSync(home.storeId)) renameSync(home.storeId, `${home.storeId}.set-aside-${stamp}`);
  return moved;
}
