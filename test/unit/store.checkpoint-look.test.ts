import { closeSync, openSync, readFileSync, statSync, truncateSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Engine } from '../../main/engine.js';
import { lookAtStoreFile, lookAtStoreFileConfirmed, storeFileId } from '../../main/store/integrity.js';
import { StoreHealth } from '../../main/scheduler/store-health.js';
import { tempDir } from '../helpers/env.js';

const t = tempDir('lw-checkpoint-look-');
afterAll(() => t.cleanup());

/**
 * The moment inside a checkpoint that grows the file: page 1 (whose header carries the new page count) is
 * copied from the WAL into the file before the pages past its old end. Made here by hand: commit a
 * transaction that grows the store with checkpoints off, then copy only the WAL's newest page 1 into the file.
 */
function midCheckpoint(home: string): { engine: Engine; db: string } {
  const engine = new Engine({ home });
  const db = engine.home.db;
  engine.db.pragma('wal_autocheckpoint = 0');
  engine.db.exec('CREATE TABLE pad (x TEXT)');
  engine.db.pragma('wal_checkpoint(TRUNCATE)');
  const ins = engine.db.prepare('INSERT INTO pad VALUES (?)');
  engine.db.transaction(() => {
    for (let i = 0; i < 200; i++) ins.run('x'.repeat(1000));
  })();
  const wal = readFileSync(`${db}-wal`);
  const pageSize = wal.readUInt32BE(8);
  let page1: Buffer | null = null;
  for (let off = 32; off + 24 + pageSize <= wal.length; off += 24 + pageSize) {
    if (wal.readUInt32BE(off) === 1) page1 = wal.subarray(off + 24, off + 24 + pageSize);
  }
  if (!page1) throw new Error('no page 1 in the WAL');
  const fd = openSync(db, 'r+');
  writeSync(fd, page1, 0, pageSize, 0);
  closeSync(fd);
  return { engine, db };
}

describe('a store file caught in the middle of a checkpoint', () => {
  it('looks truncated to the cheap look, but is no damage: no standby or leader calls it damaged, however often it looks', () => {
    const { engine, db } = midCheckpoint(join(t.dir, 'mid'));
    const id = storeFileId(db)!;
    expect(lookAtStoreFile(db, id)).toMatch(/was truncated/);
    expect(lookAtStoreFileConfirmed(db, id)).toBeNull();
    const health = new StoreHealth(engine);
    for (let i = 0; i < 5; i++) {
      expect(() => health.check(false, Date.now(), false)).not.toThrow();
      expect(() => health.check(false, Date.now(), true)).not.toThrow();
    }
    // The store is whole: every row committed is read back.
    expect((engine.db.prepare('SELECT COUNT(*) AS n FROM pad').get() as { n: number }).n).toBe(200);
    engine.close();
  });

  it('a file that really lost its tail is still named, at the first look', () => {
    const home = join(t.dir, 'cut');
    const engine = new Engine({ home });
    const db = engine.home.db;
    engine.db.exec('CREATE TABLE pad (x TEXT)');
    const ins = engine.db.prepare('INSERT INTO pad VALUES (?)');
    for (let i = 0; i < 300; i++) ins.run('x'.repeat(1000));
    engine.db.pragma('wal_checkpoint(TRUNCATE)');
    const id = storeFileId(db)!;
    truncateSync(db, Math.floor(statSync(db).size / 3 / 4096) * 4096);
    expect(lookAtStoreFileConfirmed(db, id)).toMatch(/was truncated: \d+ bytes, its header says \d+ pages.*\(/);
    expect(() => new StoreHealth(engine).check(false, Date.now(), false)).toThrow(/was truncated/);
    engine.close();
  });
});
