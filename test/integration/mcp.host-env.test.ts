import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeRepo, tempDir } from '../helpers/env.js';
import { BIN, StdioChild } from './mcp.helpers.js';

// An MCP host decides the environment of the server it starts (Codex passes a short whitelist), and so of
// the runner that server starts: the snippet must name the keys, and a task that fails for want of one
// must say where the key was lost.

let t: ReturnType<typeof tempDir>;
let home: string;
let child: StdioChild | null = null;
beforeEach(() => {
  t = tempDir('lw-host-env-');
  home = join(t.dir, 'home');
  mkdirSync(home, { recursive: true });
});
afterEach(async () => {
  await child?.stop();
  child = null;
  t.cleanup();
});

const CLEAR = { OPENAI_API_KEY: '', CODEX_API_KEY: '', ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: '', CLAUDE_CODE_OAUTH_TOKEN: '', CODEX_HOME: '', CLAUDE_CONFIG_DIR: '', XDG_DATA_HOME: '' };

describe('the MCP host environment', () => {
  it('mcp-config --client codex names every configured key variable in env_vars', () => {
    writeFileSync(
      join(home, 'config.toml'),
      '[gateways.zai]\nbase_url = "https://open.bigmodel.cn/api/anthropic"\nkey_env = "ZAI_KEY"\n\n[gateways.local]\nbase_url = "http://127.0.0.1:9/v1"\nkey_env = "LOCAL_GW_KEY"\n\n[workers.codex]\nauth = "env"\nkeys = ["MY_EXTRA_KEY"]\n',
    );
    const text = execFileSync(process.execPath, [BIN, '--home', home, 'mcp-config', '--client', 'codex'], { encoding: 'utf8' });
    const server = (parseToml(text) as any).mcp_servers.lightworker;
    expect(server.env_vars).toEqual(['CODEX_API_KEY', 'LOCAL_GW_KEY', 'MY_EXTRA_KEY', 'OPENAI_API_KEY', 'ZAI_KEY']);
    expect(server.env.LIGHTWORKER_HOME).toBe(home);
  });

  it('a task that fails auth_missing under a runner an MCP server started names the host whitelist as the likely cause', async () => {
    const repo = makeRepo(join(t.dir, 'repo'));
    const user = join(t.dir, 'user');
    mkdirSync(user);
    child = new StdioChild(home, { ...CLEAR, HOME: user });
    await child.initialize();
    const d = await child.callTool('delegate_task', { objective: 'x', workspace: repo, worker: 'codex', kind: 'explore' });
    const id = d.result.structuredContent.task.id;
    let task: any;
    for (;;) {
      const w = await child.callTool('wait_tasks', { ids: [id], timeout_s: 30 });
      task = (await child.callTool('get_task', { id })).result.structuredContent.task;
      if (!['queued', 'starting', 'running'].includes(task.status) || w.error) break;
    }
    expect(task.status).toBe('failed');
    expect(task.error.code).toBe('auth_missing');
    expect(task.error.message).toMatch(/started by an MCP server .*the likely cause is the host's environment whitelist.*env_vars/);
  }, 120_000);
});
