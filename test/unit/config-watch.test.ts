import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../main/core/config.js';
import { watchConfigFile, type ConfigWatch } from '../../main/core/config-watch.js';
import { tempDir } from '../helpers/env.js';
import { until } from '../helpers/procs.js';

let t: ReturnType<typeof tempDir> | null = null;
let watcher: ConfigWatch | null = null;
afterEach(() => {
  watcher?.stop();
  t?.cleanup();
  t = null;
});

function watch(intervalMs = 20) {
  t = tempDir('lw-watch-');
  const path = join(t.dir, 'config.toml');
  writeFileSync(path, '[scheduler]\nmax_concurrency = 1\n');
  const changes: Config[] = [];
  const invalid: Error[] = [];
  watcher = watchConfigFile(path, { onChange: (c) => changes.push(c), onInvalid: (e) => invalid.push(e) }, intervalMs);
  return { path, dir: t.dir, changes, invalid };
}

describe('watchConfigFile', () => {
  it('check(submittedAt) applies a version written before the submission, and skips the stat when a look began after it', async () => {
    const w = watch(3_600_000);
    const replace = (n: number) => {
      const tmp = join(w.dir, 'config.toml.tmp');
      writeFileSync(tmp, `[scheduler]\nmax_concurrency = ${n}\n`);
      renameSync(tmp, w.path);
    };
    // Written, then a task submitted: its start sees the new version, though no poll ran.
    const created = Date.now();
    await until(() => Date.now() > created + 1, 1000, 'the clock to move past the first look');
    replace(4);
    const submitted = Date.now();
    watcher!.check(submitted);
    expect(w.changes.map((c) => c.scheduler.max_concurrency)).toEqual([4]);
    // That look began after `submitted`: a task submitted then needs no second stat (a later version waits for the next look).
    replace(5);
    watcher!.check(submitted - 1);
    expect(w.changes).toHaveLength(1);
    watcher!.check();
    expect(w.changes.map((c) => c.scheduler.max_concurrency)).toEqual([4, 5]);
  });

  it('check() applies a change at once, long before the next poll, and nothing when the file is unchanged', () => {
    const w = watch(3_600_000);
    watcher!.check();
    expect(w.changes).toHaveLength(0);
    const tmp = join(w.dir, 'config.toml.tmp');
    writeFileSync(tmp, '[scheduler]\nmax_concurrency = 4\n');
    renameSync(tmp, w.path);
    watcher!.check();
    expect(w.changes.map((c) => c.scheduler.max_concurrency)).toEqual([4]);
    watcher!.check();
    expect(w.changes).toHaveLength(1);
  });

  it('reports a valid edit and an atomic replace (new inode, same size) with the new config', async () => {
    const w = watch();
    writeFileSync(w.path, '[scheduler]\nmax_concurrency = 2\n');
    await until(() => w.changes.length === 1, 10_000, 'the edit');
    expect(w.changes[0].scheduler.max_concurrency).toBe(2);
    const tmp = join(w.dir, 'config.toml.tmp');
    writeFileSync(tmp, '[scheduler]\nmax_concurrency = 3\n');
    renameSync(tmp, w.path);
    await until(() => w.changes.length === 2, 10_000, 'the rename');
    expect(w.changes[1].scheduler.max_concurrency).toBe(3);
  });

  it('reports an invalid file once, naming the key, and applies nothing until it is fixed', async () => {
    const w = watch();
    writeFileSync(w.path, '[scheduler]\nmax_concurrency = "many"\n');
    await until(() => w.invalid.length === 1, 10_000, 'the invalid report');
    expect(w.invalid[0].message).toContain('scheduler.max_concurrency');
    await new Promise((r) => setTimeout(r, 200));
    expect(w.invalid).toHaveLength(1); // not once per poll
    expect(w.changes).toHaveLength(0);
    writeFileSync(w.path, '[scheduler]\nmax_concurrency = 4\n');
    await until(() => w.changes.length === 1, 10_000, 'the fix');
    expect(w.changes[0].scheduler.max_concurrency).toBe(4);
  });
});
