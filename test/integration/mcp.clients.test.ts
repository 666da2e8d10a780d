import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../main/commands/index.js';
import { Engine } from '../../main/engine.js';
import { buildTools, visibleTools } from '../../main/mcp/tools.js';
import { runCommand, type CommandContext } from '../../main/commands/table.js';
import { listTasks } from '../../main/store/tasks.js';
import { makeRepo, tempDir } from '../helpers/env.js';
import type { Gateway } from '../fixtures/gateway/index.js';
import { BIN, ROOT } from './mcp.helpers.js';

/** Run a CLI with stdin closed (Codex reads a prompt from an open stdin); resolves even on a non-zero exit. */
function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeout: number }): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    const t = setTimeout(() => p.kill('SIGKILL'), opts.timeout);
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(t);
      resolve({ stdout, stderr, code });
    });
  });
}
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);
const INSPECTOR = bin('mcp-inspector');
const CLAUDE = bin('claude');
const CODEX = bin('codex');
const GATEWAY = join(ROOT, 'test', 'fixtures', 'gateway', 'index.ts');

let dir = '';
let home = '';
let repo = '';
let cleanup: () => void = () => undefined;
beforeAll(() => {
  ({ dir, cleanup } = tempDir('lw-mcp-clients-'));
  home = join(dir, 'home');
  repo = makeRepo(join(dir, 'repo'));
});
afterAll(() => cleanup());

function tasksInHome(): { objective: string }[] {
  const e = new Engine({ home });
  try {
    return listTasks(e.db, { limit: 1000 });
  } finally {
    e.close();
  }
}

/**
 * 100 ended tasks with paragraph-long objectives and errors, like a day of delegation: list_tasks'
 * default call must reach the model whole (Claude Code refused 97.7 KB inline, Codex cut it
 * at 48 KB). Cancelled, so no runner picks them up.
 */
async function seedHundredTasks(): Promise<void> {
  const engine = new Engine({ home });
  try {
    const ctx: CommandContext = { engine, face: 'cli', depth: 0 };
    const tasks = Array.from({ length: 100 }, (_, i) => ({
      name: `audit module ${i}: dead exports and unused dependencies`,
      objective: `Read src/module-${i} and its tests; list exported functions nothing imports and dependencies nothing uses. `.repeat(4),
      workspace: repo,
      verify: [['npm', 'test', '--', `module-${i}`]],
      metadata: { ticket: `LW-${1000 + i}` },
    }));
    const r = (await runCommand(COMMANDS, ctx, 'delegate_batch', { tasks })) as { tasks: { id: string }[] };
    for (const t of r.tasks) await runCommand(COMMANDS, ctx, 'cancel_task', { id: t.id, reason: 'superseded by the new plan' });
  } finally {
    engine.close();
  }
}

/** Distinct task ids (ULIDs) in a text. */
const idsIn = (text: string) => new Set(text.match(/[0-9A-HJKMNP-TV-Z]{26}/g) ?? []);

/** `lightworker mcp-config` output for a client, exactly as a user would paste it. */
function mcpConfig(client: string, forHome = home): string {
  return execFileSync(process.execPath, [BIN, '--home', forHome, 'mcp-config', '--client', client], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

describe.skipIf(!existsSync(INSPECTOR))('MCP inspector CLI as client', () => {
  const inspect = async (...args: string[]) => {
    // On an isError result the inspector prints the result, then its own error line, and exits 1.
    const { stdout } = await run(INSPECTOR, ['--cli', '-e', `LIGHTWORKER_HOME=${home}`, ...args, '--', process.execPath, BIN, 'mcp'], { timeout: 60_000 });
    const end = stdout.indexOf('\n}\n');
    return JSON.parse(end === -1 ? stdout : stdout.slice(0, end + 2));
  };

  it('lists every tool with an object schema', async () => {
    const r = await inspect('--method', 'tools/list');
    expect(r.tools.length).toBeGreaterThanOrEqual(10);
    for (const t of r.tools) expect(t.inputSchema.type).toBe('object');
  });

  it('calls delegate_task and get_task, and sees isError for bad input', async () => {
    const d = await inspect('--method', 'tools/call', '--tool-name', 'delegate_task', '--tool-arg', 'objective=from the inspector', `workspace=${repo}`);
    const id = d.structuredContent.task.id;
    const g = await inspect('--method', 'tools/call', '--tool-name', 'get_task', '--tool-arg', `id=${id}`);
    expect(g.structuredContent.task.objective).toBe('from the inspector');
    const bad = await inspect('--method', 'tools/call', '--tool-name', 'get_task', '--tool-arg', 'id=nope');
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent.code).toBe('invalid_input');
  });
});

describe('real agent CLIs as MCP clients, configured with mcp-config, driven by the scripted gateway', () => {
  let gw: Gateway | null = null;
  let reason: string | null = null;
  beforeAll(async () => {
    if (!existsSync(GATEWAY)) {
      reason = 'test/fixtures/gateway is missing';
      return;
    }
    const mod = await import('../fixtures/gateway/index.js');
    gw = await mod.startGateway({ keepBodies: true });
    await seedHundredTasks();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('Claude Code lists and calls our tools', async (ctx) => {
    if (!existsSync(CLAUDE) || reason) {
      console.warn(`skipped: ${reason ?? 'claude binary not installed'}`);
      return ctx.skip();
    }
    const cfgFile = join(dir, 'claude-mcp.json');
    writeFileSync(cfgFile, mcpConfig('claude-code'));
    const chome = join(dir, 'claude-home');
    mkdirSync(join(chome, '.claude'), { recursive: true });
    gw!.setScript({
      turns: [
        // `claude -p` does not wait for MCP servers: ask it to (harmless when they are already connected).
        { tools: [{ call: { name: 'WaitForMcpServers', input: {} } }] },
        { tools: [{ call: { name: 'mcp__lightworker__delegate_task', input: { objective: 'from claude code', workspace: repo, kind: 'explore' } } }] },
        { tools: [{ call: { name: 'mcp__lightworker__list_tasks', input: {} } }] },
        { tools: [{ call: { name: 'mcp__lightworker__get_task', input: { id: 'not-an-id' } } }] },
        { text: 'done' },
      ],
    });
    const { stdout } = await run(
      CLAUDE,
      ['-p', 'use lightworker', '--output-format', 'stream-json', '--verbose', '--model', 'claude-sonnet-4-5', '--mcp-config', cfgFile, '--strict-mcp-config', '--allowedTools', 'mcp__lightworker'],
      {
        cwd: repo,
        timeout: 120_000,
        env: {
          PATH: process.env.PATH ?? '', HOME: chome, CLAUDE_CONFIG_DIR: join(chome, '.claude'), ANTHROPIC_BASE_URL: gw!.url, ANTHROPIC_API_KEY: 'dummy-key',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', CLAUDE_CODE_MAX_RETRIES: '2', API_TIMEOUT_MS: '60000',
        },
      },
    );
    const events = stdout.trim().split('\n').map((l) => JSON.parse(l));
    const init = events.find((e) => e.type === 'system' && e.subtype === 'init');
    expect(init.mcp_servers.find((s: any) => s.name === 'lightworker')).toBeTruthy();
    const results = events.filter((e) => e.type === 'user').flatMap((e) => e.message.content).filter((c: any) => c.type === 'tool_result');
    expect(tasksInHome().map((t) => t.objective)).toContain('from claude code');
    const text = JSON.stringify(results);
    expect(text).toContain('from claude code'); // list_tasks result
    // The default list_tasks call (its first page: as many of the 100 summaries as fit 30 KB on the wire,
    // has_more and a cursor for the rest) reached the model inline and whole.
    const listed = results.find((r: any) => JSON.stringify(r.content).includes('has_more'));
    expect(listed.is_error).toBeFalsy();
    expect(idsIn(JSON.stringify(listed.content)).size).toBeGreaterThanOrEqual(50);
    expect(JSON.stringify(listed.content)).toMatch(/has_more\\?":true/);
    expect(results.some((r: any) => r.is_error && JSON.stringify(r.content).includes('invalid_input'))).toBe(true);
  }, 180_000);

  // Two request shapes (notes/mcp-clients.md §2): a catalog slug defers MCP tools behind a client-side
  // tool_search (the gateway searches first, then calls); an unknown slug gets the whole namespace.
  it.for([
    { model: 'gpt-5.5', deferred: true },
    { model: 'fake-model', deferred: false },
  ])('Codex CLI ($model) lists and calls our tools', { timeout: 180_000 }, async ({ model, deferred }, ctx) => {
    if (!existsSync(CODEX) || reason) {
      console.warn(`skipped: ${reason ?? 'codex binary not installed'}`);
      return ctx.skip();
    }
    const codexHome = join(dir, `codex-home-${model}`);
    mkdirSync(codexHome, { recursive: true });
    writeFileSync(
      join(codexHome, 'config.toml'),
      [
        `model = "${model}"`, 'model_provider = "fakegw"',
        '[model_providers.fakegw]', 'name = "fakegw"', `base_url = "${gw!.url}/v1"`, 'wire_api = "responses"', 'env_key = "FAKEGW_API_KEY"',
        '[analytics]', 'enabled = false', '[features]', 'plugins = false', 'shell_snapshot = false', '', mcpConfig('codex'),
      ].join('\n'),
    );
    const objective = `from codex ${model}`;
    const lw = (tool: string, input: Record<string, unknown>) => ({ mcp: { server: 'lightworker', tool, input } });
    gw!.clearRequests();
    gw!.setScript(({ turnIndex, body }) => {
      if (turnIndex === 0) return { tools: [lw('delegate_task', { objective, workspace: repo, kind: 'explore' })] };
      if (turnIndex === 1) {
        // Codex hands the model the compact JSON of structuredContent after "Output:\n".
        const out = (body.input as any[]).filter((i) => i.type === 'function_call_output').at(-1)?.output;
        const id = typeof out === 'string' ? /"id":"([0-9A-Z]{26})"/.exec(out)?.[1] : undefined;
        if (!id) return { text: `no task id in the delegate_task output: ${JSON.stringify(out)}` };
        return { tools: [lw('get_task', { id }), lw('list_tasks', {})] };
      }
      return { text: 'done' };
    });
    const { stdout, stderr, code } = await run(CODEX, ['exec', '--json', '--strict-config', '--skip-git-repo-check', '--sandbox', 'workspace-write', '-C', repo, 'use lightworker'], {
      timeout: 120_000,
      env: { PATH: process.env.PATH ?? '', HOME: codexHome, CODEX_HOME: codexHome, FAKEGW_API_KEY: 'dummy' },
    });
    // required = true: a server that failed to start would have failed the run (exit 1).
    expect(code, stderr.slice(-2000)).toBe(0);
    const events = stdout.trim().split('\n').map((l) => JSON.parse(l));
    const agentText = events.filter((e) => e.item?.type === 'agent_message').map((e) => e.item.text);
    expect(agentText, 'the gateway played every turn').toEqual(['done']);

    // Codex listed our tools (tools/list) and showed them to the model.
    const bodies = gw!.requests.filter((r) => r.api === 'responses' && !r.summary?.side).map((r) => r.body as { tools: any[]; input: any[] });
    const offered = (tools: any[]) => tools.filter((t) => t.type === 'namespace' && t.name === 'mcp__lightworker').flatMap((t) => t.tools.map((f: any) => f.name));
    if (deferred) {
      expect(bodies[0].tools.some((t) => t.type === 'tool_search')).toBe(true);
      expect(offered(bodies[0].tools)).toEqual([]);
      expect(JSON.stringify(bodies[0].input)).toContain('- mcp__lightworker: LightWorker'); // our instructions, under "Deferred tool namespaces"
      expect(gw!.requests.map((r) => r.outcome)).toContain('tool search');
      const found = bodies.at(-1)!.input.filter((i) => i.type === 'tool_search_output').flatMap((i) => offered(i.tools));
      expect(found).toEqual(expect.arrayContaining(['delegate_task', 'get_task', 'list_tasks']));
    } else {
      expect(bodies[0].tools.some((t) => t.type === 'tool_search')).toBe(false);
      expect(offered(bodies[0].tools).sort()).toEqual(visibleTools(buildTools(COMMANDS, 'full'), false).map((t) => t.name).sort());
    }
    // What the model saw of delegate_task: each field with its type and hint (a field listed without a type
    // came out as `{}`, its hint dropped).
    const shown = [...bodies[0].tools, ...bodies.flatMap((b) => b.input.filter((i) => i.type === 'tool_search_output').flatMap((i) => i.tools))]
      .filter((t) => t.type === 'namespace' && t.name === 'mcp__lightworker')
      .flatMap((t) => t.tools)
      .find((f: any) => f.name === 'delegate_task');
    const fields = shown.parameters.properties;
    expect(fields.workspace).toMatchObject({ type: 'string', description: expect.stringMatching(/absolute path/) });
    expect(fields.objective).toMatchObject({ type: 'string', description: 'self-contained instructions' });
    expect(fields.kind).toMatchObject({ type: 'string', description: expect.stringMatching(/only execute writes/) });

    // Codex called them through its MCP client: one completed mcp_tool_call item per call, structured results
    // (get_task and list_tasks run in parallel, so they complete in either order).
    const calls = events.filter((e) => e.type === 'item.completed' && e.item.type === 'mcp_tool_call').map((e) => e.item);
    expect(calls.map((c) => `${c.server}/${c.tool}:${c.status}`).sort()).toEqual(['lightworker/delegate_task:completed', 'lightworker/get_task:completed', 'lightworker/list_tasks:completed']);
    const [delegated, got, listed] = ['delegate_task', 'get_task', 'list_tasks'].map((tool) => calls.find((c) => c.tool === tool).result.structured_content);
    expect(delegated.task.objective).toBe(objective);
    expect(got.task).toMatchObject({ id: delegated.task.id, objective, kind: 'explore' });
    expect(listed.tasks.map((t: { id: string }) => t.id)).toContain(delegated.task.id);
    // The model got the structured result back as the function_call_output.
    expect(JSON.stringify(bodies.at(-1)!.input)).toContain(delegated.task.id);
    // The default list_tasks call (a first page of the 100 summaries, 30 KB on the wire) reaches a catalog
    // model uncut. Codex's fallback metadata for an unknown slug cuts tool output harder (27 KB became
    // 13 KB, "…N tokens truncated…").
    expect(listed.tasks.length).toBeGreaterThanOrEqual(50);
    expect(listed.has_more).toBe(true);
    const listOutput = bodies.at(-1)!.input.filter((i) => i.type === 'function_call_output').map((i) => JSON.stringify(i.output)).find((o) => o.includes('has_more'))!;
    if (deferred) for (const t of listed.tasks) expect(listOutput).toContain(t.id);
    expect(tasksInHome().find((t) => t.objective === objective)).toBeTruthy();
  });

  it('Codex CLI passes the MCP server the keys config.toml names (env_vars from mcp-config)', { timeout: 180_000 }, async (ctx) => {
    if (!existsSync(CODEX) || reason) {
      console.warn(`skipped: ${reason ?? 'codex binary not installed'}`);
      return ctx.skip();
    }
    const envHome = join(dir, 'home-env');
    mkdirSync(envHome, { recursive: true });
    writeFileSync(join(envHome, 'config.toml'), `[gateways.fwd]\nbase_url = "${gw!.url}/v1"\nkey_env = "LW_FWD_TEST_KEY"\n`);
    const codexHome = join(dir, 'codex-home-env');
    mkdirSync(codexHome, { recursive: true });
    writeFileSync(
      join(codexHome, 'config.toml'),
      [
        'model = "fake-model"', 'model_provider = "fakegw"',
        '[model_providers.fakegw]', 'name = "fakegw"', `base_url = "${gw!.url}/v1"`, 'wire_api = "responses"', 'env_key = "FAKEGW_API_KEY"',
        '[analytics]', 'enabled = false', '[features]', 'plugins = false', 'shell_snapshot = false', '', mcpConfig('codex', envHome),
      ].join('\n'),
    );
    gw!.clearRequests();
    gw!.setScript(({ turnIndex }) => (turnIndex === 0 ? { tools: [{ mcp: { server: 'lightworker', tool: 'run_doctor', input: {} } }] } : { text: 'done' }));
    const { stdout, stderr, code } = await run(CODEX, ['exec', '--json', '--strict-config', '--skip-git-repo-check', '--sandbox', 'read-only', '-C', repo, 'check lightworker'], {
      timeout: 120_000,
      env: { PATH: process.env.PATH ?? '', HOME: codexHome, CODEX_HOME: codexHome, FAKEGW_API_KEY: 'dummy', LW_FWD_TEST_KEY: 'sk-fwd-test-0123456789abcdef' },
    });
    expect(code, stderr.slice(-2000)).toBe(0);
    const call = stdout.trim().split('\n').map((l) => JSON.parse(l)).find((e) => e.type === 'item.completed' && e.item.type === 'mcp_tool_call' && e.item.tool === 'run_doctor');
    const check = call.item.result.structured_content.checks.find((c: { name: string }) => c.name === 'gateway fwd');
    // The server (and so the runner it would start) saw the key the user exported where Codex runs.
    expect(check.detail).not.toMatch(/LW_FWD_TEST_KEY is not set/);
    expect(check).toMatchObject({ ok: true, detail: expect.stringMatching(/key in LW_FWD_TEST_KEY/) });
  });

});
