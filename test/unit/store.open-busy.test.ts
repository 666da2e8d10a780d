import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDb } from '../../main/store/db.js';
import { tempDir } from '../helpers/env.js';

const t = tempDir('lw-open-busy-');
afterAll(() => t.cleanup());

/** Another process holds the write lock of `path` for `ms` (resolves once it holds it; `done` when it let go). */
async function holdLock(path: string, ms: number): Promise<{ done: Promise<void> }> {
  const script = `const D = require('better-sqlite3'); const db = new D(${JSON.stringify(path)}); db.pragma('journal_mode = WAL'); db.exec('BEGIN IMMEDIATE'); process.stdout.write('held\\n'); setTimeout(() => { db.exec('COMMIT'); db.close(); }, ${ms});`;
  const child = spawn(process.execPath, ['-e', script], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => d.toString().includes('held') && resolve());
    child.once('exit', (code) => reject(new Error(`the lock holder exited ${code} before holding the lock`)));
  });
  return { done: new Promise((r) => child.once('exit', () => r())) };
}

describe('opening a store another process is writing', () => {
  it('a process that asked for a short wait per call (an MCP server) still waits its turn to migrate, then keeps its short wait', async () => {
    const path = join(t.dir, 'lightworker.db');
    const holder = await holdLock(path, 1500);
    const db = openDb({ path, busyTimeoutMs: 100 });
    expect(db.pragma('busy_timeout', { simple: true })).toBe(100);
    expect((db.pragma('user_version', { simple: true }) as number) > 0).toBe(true);
    db.close();
    await holder.done;
  });
});
