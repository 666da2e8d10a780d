import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../main/core/config.js';
import { vscodeAdapter, findBridge } from '../../main/workers/vscode.js';
import { tempDir } from '../helpers/env.js';

describe('[workers.vscode] in config.toml', () => {
  it('takes bridge, agent and max_concurrency; other [workers.X] stay linked CLIs', () => {
    const c = parseConfig({ workers: { vscode: { bridge: '/tmp/b.json', agent: 'codex' }, mine: { command: ['agent', '{prompt}'] } } });
    expect(c.workers.vscode).toEqual({ bridge: '/tmp/b.json', agent: 'codex', max_concurrency: 2 });
    // max_concurrency unset: a linked CLI gets 2 (linked.ts), a built-in CLI keeps its adapter's own.
    expect(c.workers.mine).toEqual({ command: ['agent', '{prompt}'] });
    expect(vscodeAdapter(c.workers.vscode).maxConcurrency).toBe(2);
  });

  it('names the bad key', () => {
    expect(() => parseConfig({ workers: { vscode: { command: ['x', '{prompt}'] } } })).toThrow(/workers\.vscode\.command/);
    expect(() => parseConfig({ workers: { vscode: { agent: 'copilot' } } })).toThrow(/workers\.vscode\.agent/);
  });
});

describe('finding a running bridge', () => {
  const tmp = tempDir('lw-vscode-find-');
  afterAll(() => tmp.cleanup());
  const write = (name: string, rec: Record<string, unknown>) => {
    mkdirSync(tmp.dir, { recursive: true });
    writeFileSync(join(tmp.dir, name), JSON.stringify({ version: 1, host: '127.0.0.1', token: 't', extension_version: '0.1.0', ...rec }));
  };

  it('skips dead editors, prefers the window that has the repository open, else the newest', () => {
    const env = { LIGHTWORKER_VSCODE_BRIDGE_DIR: tmp.dir };
    expect(findBridge({}, '/repo/a', env)).toBeNull();
    // A pid that cannot be alive (above pid_max): the editor is gone.
    write('dead.json', { pid: 2 ** 30, port: 1, workspace_folders: ['/repo/a'], started_at: '2026-11-30T20:00:03Z' });
    expect(findBridge({}, '/repo/a', env)).toBeNull();
    write('other.json', { pid: process.pid, port: 2, workspace_folders: ['/repo/b'], started_at: '2026-11-30T20:00:02Z' });
    write('mine.json', { pid: process.pid, port: 3, workspace_folders: ['/repo/a'], started_at: '2026-11-30T20:00:01Z' });
    write('broken.json', { pid: process.pid });
    expect(findBridge({}, '/repo/a/sub', env)?.port).toBe(3);
    expect(findBridge({}, '/repo/a', env)?.port).toBe(3);
    expect(findBridge({}, '/repo/c', env)?.port).toBe(2);
    expect(findBridge({ bridge: join(tmp.dir, 'mine.json') }, '/repo/b', env)?.port).toBe(3);
  });
});
