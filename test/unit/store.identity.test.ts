import { existsSync, readFileSync, rmSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Engine } from '../../main/engine.js';
import { homePaths } from '../../main/core/home.js';
import { readStoreMarker, setStoreAside, storeIdOf } from '../../main/store/identity.js';
import { lookAtStoreFile, quickCheckFile, storeFileId } from '../../main/store/integrity.js';
import { storeFaultOf } from '../../main/store/store-faults.js';
import { tempDir } from '../helpers/env.js';

const t = tempDir('lw-identity-');
afterAll(() => t.cleanup());

describe('the store identity', () => {
  it('a new store gets an id inside and the same id in <home>/store-id; a home from before markers gets its marker', () => {
    const home = join(t.dir, 'new');
    const e = new Engine({ home });
    const id = storeIdOf(e.db);
    e.close();
    expect(id).toMatch(/^[0-9A-Z]{26}$/);
    expect(readStoreMarker(homePaths(home))?.id).toBe(id);
    rmSync(join(home, 'store-id'));
    new Engine({ home }).close();
    expect(readStoreMarker(homePaths(home))?.id).toBe(id);
  });

  it('init --new-store sets the files aside (renamed, kept) and the next open makes a new store with a new id', () => {
    const home = join(t.dir, 'aside');
    const e = new Engine({ home });
    const before = storeIdOf(e.db);
    e.close();
    const moved = setStoreAside(homePaths(home));
    expect(moved.some((f) => /lightworker\.db\.set-aside-/.test(f) && existsSync(f))).toBe(true);
    const again = new Engine({ home });
    expect(storeIdOf(again.db)).not.toBe(before);
    again.close();
  });
});

describe('looking at the store file', () => {
  it('names a deleted, replaced, truncated and emptied file, and a quick_check that fails', () => {
    const home = join(t.dir, 'look');
    const e = new Engine({ home });
    const db = e.home.db;
    e.db.exec('CREATE TABLE pad (x TEXT)');
    const ins = e.db.prepare('INSERT INTO pad VALUES (?)');
    for (let i = 0; i < 500; i++) ins.run('x'.repeat(1000));
    e.db.pragma('wal_checkpoint(TRUNCATE)');
    const id = storeFileId(db)!;
    expect(lookAtStoreFile(db, id)).toBeNull();
    expect(quickCheckFile(db).ok).toBe(true);
    expect(lookAtStoreFile(db, { ...id, ino: id.ino + 1 })).toMatch(/replaced/);
    truncateSync(db, Math.floor(statSync(db).size / 2 / 4096) * 4096);
    expect(lookAtStoreFile(db, id)).toMatch(/was truncated: \d+ bytes, its header says \d+ pages/);
    expect(quickCheckFile(db).ok).toBe(false);
    truncateSync(db, 0);
    expect(lookAtStoreFile(db, id)).toMatch(/emptied/);
    e.close();
    rmSync(db);
    expect(lookAtStoreFile(db, id)).toMatch(/deleted/);
    expect(readFileSync(join(home, 'store-id'), 'utf8')).toContain('"id"');
  });

  it('tells a full store from a damaged one', () => {
    expect(storeFaultOf(Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }))).toBe('full');
    expect(storeFaultOf(Object.assign(new Error('no space left on device'), { code: 'ENOSPC' }))).toBe('full');
    expect(storeFaultOf(Object.assign(new Error('database disk image is malformed'), { code: 'SQLITE_CORRUPT' }))).toBe('damaged');
    expect(storeFaultOf(Object.assign(new Error('file is not a database'), { code: 'SQLITE_NOTADB' }))).toBe('damaged');
    expect(storeFaultOf(Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }))).toBeNull();
    // An I/O error on a file system with room is damage (a full one makes it `full`: store.full-disk.test.ts).
    expect(storeFaultOf(Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_WRITE' }), t.dir)).toBe('damaged');
  });
});
