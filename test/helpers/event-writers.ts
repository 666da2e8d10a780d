import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../../main/core/config.js';
import { storeTarget } from '../../main/store/pg/open.js';

const RUN_TS = fileURLToPath(new URL('../../bin/run-ts.js', import.meta.url));
const WRITER = fileURLToPath(new URL('../fixtures/audit/event-writer.ts', import.meta.url));

/** The store argument of test/fixtures/audit/event-writer.ts for a home's engine: its PostgreSQL schema or SQLite file. */
export function writerStore(engine: { config: Config; home: { db: string } }): string {
  const target = storeTarget(engine.config);
  return target ? `pg:${target.schema}:${target.url}` : `sqlite:${engine.home.db}`;
}

export interface WriterSpec {
  name: string;
  mode: 'race' | 'anchor' | 'bench';
  args: (string | number)[];
}

/**
 * Run event-writer processes against one store, all released at the same moment (each opens its
 * connection first), and return what each printed. Rejects when one fails, with its stderr.
 */
export async function runWriters(store: string, writers: WriterSpec[]): Promise<Record<string, number>[]> {
  const sync = mkdtempSync(join(tmpdir(), 'lw-writers-'));
  const children: ChildProcess[] = [];
  try {
    const runs = writers.map(
      (w) =>
        new Promise<Record<string, number>>((resolve, reject) => {
          const child = spawn(process.execPath, [RUN_TS, WRITER, store, sync, w.name, w.mode, ...w.args.map(String)], { stdio: ['ignore', 'pipe', 'pipe'] });
          children.push(child);
          let stdout = '';
          let stderr = '';
          child.stdout.on('data', (d) => (stdout += d));
          child.stderr.on('data', (d) => (stderr += d));
          child.on('close', (code, signal) => {
            if (code === 0) resolve(JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, number>);
            else reject(new Error(`writer ${w.name} exited ${code ?? signal}: ${stderr.slice(-2000)}`));
          });
        }),
    );
    const failed = Promise.race(runs.map((r) => r.then(() => new Promise<never>(() => undefined))));
    const ready = (async () => {
      while (!writers.every((w) => existsSync(join(sync, `ready-${w.name}`)))) await new Promise((r) => setTimeout(r, 20));
      writeFileSync(join(sync, 'go'), '');
    })();
    await Promise.race([ready, failed]);
    return await Promise.all(runs);
  } catch (err) {
    // One failed: the others would wait for `go` (or run on) forever.
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    throw err;
  } finally {
    rmSync(sync, { recursive: true, force: true });
  }
}
