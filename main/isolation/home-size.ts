import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { storeBytes } from '../store/gc.js';
import type { EngineContext } from '../tasks/engine-context.js';
import { snapshotsRoot } from './snapshot.js';

/** Bytes under one folder, counted within a time budget (a worktree's node_modules can hold a million files). */
interface Measured {
  bytes: number;
  /** False when the budget ran out first: `bytes` is then a lower bound. */
  complete: boolean;
}

function measure(path: string, deadline: number): Measured {
  let bytes = 0;
  const stack = [path];
  let seen = 0;
  while (stack.length) {
    const p = stack.pop()!;
    if (++seen % 512 === 0 && performance.now() > deadline) return { bytes, complete: false };
    let st;
    try {
      st = lstatSync(p);
    } catch {
      continue;
    }
    if (st.isFile()) bytes += st.size;
    else if (st.isDirectory()) {
      try {
        for (const name of readdirSync(p)) stack.push(join(p, name));
      } catch {
        // unreadable: counted as empty
      }
    }
  }
  return { bytes, complete: true };
}

export interface HomeSize {
  /** The store: the SQLite file with its WAL, or this schema's tables and indexes on PostgreSQL. */
  database: Measured;
  logs: Measured;
  worktrees: Measured;
  snapshots: Measured;
  artifacts: Measured;
  total: number;
}

/** The home's size by part, each folder walked within its share of `budgetMs`. */
export function measureHome(engine: EngineContext, budgetMs = 4000): HomeSize {
  const share = budgetMs / 4;
  const files = storeBytes(engine.db);
  const database: Measured = files === null
    ? { bytes: ['', '-wal', '-shm'].reduce((n, s) => n + measure(engine.home.db + s, Infinity).bytes, 0), complete: true }
    : { bytes: files, complete: true };
  const part = (p: string) => measure(p, performance.now() + share);
  const size = { database, logs: part(engine.home.logs), worktrees: part(engine.home.worktrees), snapshots: part(snapshotsRoot(engine)), artifacts: part(engine.home.artifacts) };
  return { ...size, total: Object.values(size).reduce((n, m) => n + m.bytes, 0) };
}
