import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDb, SCHEMA_VERSION, schemaVersion } from '../../main/store/db.js';
import { tempDir } from '../helpers/env.js';

let t: ReturnType<typeof tempDir>;
beforeEach(() => {
  t = tempDir();
});
afterEach(() => t.cleanup());

describe('migrations', () => {
  it('bring an empty file to the current schema with WAL and foreign keys on', () => {
    const db = openDb({ path: join(t.dir, 'a.db') });
    expect(schemaVersion(db)).toBe(SCHEMA_VERSION);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name);
    for (const name of ['tasks', 'task_deps', 'events', 'attempts', 'leases', 'settings']) expect(tables).toContain(name);
    db.close();
  });

  it('are idempotent on reopen', () => {
    const path = join(t.dir, 'b.db');
    openDb({ path }).close();
    const db = openDb({ path });
    expect(schemaVersion(db)).toBe(SCHEMA_VERSION);
    db.close();
  });

  it('refuse a database newer than this binary with a clear error, and leave it untouched', () => {
    const path = join(t.dir, 'c.db');
    const raw = new Database(path);
    raw.pragma(`user_version = ${SCHEMA_VERSION + 5}`);
    raw.close();
    expect(() => openDb({ path })).toThrow(expect.objectContaining({ code: 'schema_too_new', message: expect.stringMatching(/newer than this LightWorker/) }));
    const again = new Database(path);
    expect(again.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION + 5);
    expect(again.prepare("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'tasks'").get()).toEqual({ n: 0 });
    again.close();
  });
});
