import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { exited, isAlive, until } from '../helpers/procs.js';
import { makeFakeExtensions, stubExtensions } from '../fixtures/vscode/fake-extensions.js';

const ROOT = join(import.meta.dirname, '..', '..');
const HOST = join(ROOT, 'test', 'fixtures', 'vscode', 'vscode-host.cjs');

/**
 * The `vscode` worker against the real bridge: the built extension (out/extension.cjs) activated
 * under plain Node with the `vscode` stub, its "editor" holding Claude Code and Codex extensions whose
 * CLI is a scripted stand-in. Tasks go through `lightworker submit --worker vscode` and
 * `lightworker run --until-idle` (separate processes), as a user runs them.
 */
describe('the vscode worker end to end through the bridge extension', () => {
  let h: TestHome;
  let host: ChildProcess;
  let hostOut = '';
  let bridges: string;
  let agentLog: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    execFileSync(join(ROOT, 'node_modules', '.bin', 'rolldown'), ['-c', 'vscode-extension/rolldown.config.mjs'], { cwd: ROOT, stdio: 'pipe' });
    h = makeHome();
    bridges = join(h.root, 'bridges');
    agentLog = join(h.root, 'agent-argv.log');
    env = { LIGHTWORKER_VSCODE_BRIDGE_DIR: bridges };
    const ext = makeFakeExtensions(join(h.root, 'extensions'));
    const stubConfig = { extensions: stubExtensions(ext), folders: [h.repo] };
    host = spawn(process.execPath, [HOST], {
      env: { ...process.env, ...env, FAKE_AGENT_LOG: agentLog, VSCODE_STUB_CONFIG: JSON.stringify(stubConfig) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    host.stdout!.setEncoding('utf8');
    host.stdout!.on('data', (c: string) => (hostOut += c));
    await until(() => hostOut.includes('"ready"'), 20_000, 'the bridge to start');
  }, 60_000);
  afterAll(async () => {
    if (host && host.exitCode === null) {
      host.kill('SIGKILL');
      await exited(host);
    }
    h?.cleanup();
  });

  const discoveryFile = () => join(bridges, readdirSync(bridges).find((n) => n.endsWith('.json'))!);
  const agentCalls = () => (existsSync(agentLog) ? readFileSync(agentLog, 'utf8').trim().split('\n').map((l) => JSON.parse(l)) : []);

  async function submitAndRun(args: string[]): Promise<any> {
    const sub = await runCli(['submit', '--worker', 'vscode', '-w', h.repo, '--json', ...args], { home: h.home, env });
    expect(sub.code, sub.stderr).toBe(0);
    const created = JSON.parse(sub.stdout);
    const id = created.task.id;
    const run = await runCli(['run', '--until-idle', '--timeout', '90'], { home: h.home, env, timeoutMs: 120_000 });
    expect(run.code, run.stderr).toBe(0);
    const { task } = await h.call('get_task', { id });
    return task;
  }

  it('`workers` finds the bridge through its discovery file', async () => {
    const r = await runCli(['workers', '--json'], { home: h.home, env });
    expect(r.code, r.stderr).toBe(0);
    const vscode = JSON.parse(r.stdout).workers.find((w: any) => w.name === 'vscode');
    expect(vscode).toMatchObject({ installed: true, version: '0.1.0', reason: null });
  });

  it('an execute task runs with the Claude Code extension CLI in its worktree and is verified by LightWorker', async () => {
    const task = await submitAndRun(['-k', 'execute', '--mode', 'auto_execute', '--verify', '["git","ls-files","--error-unmatch","hello.txt"]', 'Create hello.txt saying hello.']);
    expect(task.status, JSON.stringify(task.error)).toBe('completed');
    expect(task.schemaValid).toBe(true);
    expect(task.result).toEqual({ summary: 'Wrote hello.txt.', files_changed: ['hello.txt'], notes: null });
    expect(readFileSync(join(task.worktreePath, 'hello.txt'), 'utf8')).toBe('hello from the editor agent\n');
    expect(task.sessionId).toMatch(/^session-\d+$/);
    expect(task.usage).toMatchObject({ inputTokens: 150, cachedTokens: 50, outputTokens: 20 });
    const call = agentCalls().at(-1);
    expect(call.cwd).toBe(task.worktreePath);
    expect(call.marker).toBe(task.id);
    expect(call.args.slice(0, 6)).toEqual(['-p', '--output-format', 'stream-json', '--verbose', '--permission-mode', 'acceptEdits']);
    const { events } = await h.call('get_events', { task_id: task.id, limit: 1000 });
    const types = events.map((e: { type: string }) => e.type);
    for (const t of ['worker.started', 'worker.message', 'worker.usage', 'worker.completed']) expect(types).toContain(t);
    expect(JSON.stringify(events)).not.toContain(JSON.parse(readFileSync(discoveryFile(), 'utf8')).token);
  });

  it('a failed verification goes back to the same agent session in the editor (--resume), then passes', async () => {
    const task = await submitAndRun(['-k', 'execute', '--mode', 'auto_execute', '--verify', '["git","ls-files","--error-unmatch","repaired.txt"]', 'Create hello.txt; verification wants repaired.txt.']);
    expect(task.status, JSON.stringify(task.error)).toBe('completed');
    const [first, followup] = agentCalls().slice(-2);
    expect(first.args).not.toContain('--resume');
    expect(followup.args[followup.args.indexOf('--resume') + 1]).toBe(task.sessionId);
    expect(followup.cwd).toBe(task.worktreePath);
    expect(readFileSync(join(task.worktreePath, 'repaired.txt'), 'utf8')).toBe(`repaired in ${task.sessionId}\n`);
  });

  it("an agent that fails in the editor fails the task with the agent's own error", async () => {
    const task = await submitAndRun(['-k', 'explore', 'FAKE_AGENT_FAIL']);
    expect(task.status).toBe('failed');
    expect(task.error.message).toContain('claude exited with code 1: Invalid API key · Please run /login');
    const { events } = await h.call('get_events', { task_id: task.id, limit: 1000 });
    const turn = events.filter((e: any) => e.type === 'worker.tool' && e.payload?.name === 'vscode.turn').map((e: any) => e.payload.status);
    expect(turn).toEqual(['started', 'failed']);
  });

  it('[workers.vscode] bridge + agent = "codex" pick the bridge and the Codex extension CLI', async () => {
    writeFileSync(join(h.home, 'config.toml'), `[workers.vscode]\nbridge = "${discoveryFile()}"\nagent = "codex"\n`);
    try {
      const elsewhere = { LIGHTWORKER_VSCODE_BRIDGE_DIR: join(h.root, 'no-bridges-here') };
      const sub = await runCli(['submit', '--worker', 'vscode', '-w', h.repo, '--json', '-k', 'explore', 'Look around.'], { home: h.home, env: elsewhere });
      const id = JSON.parse(sub.stdout).task.id;
      const run = await runCli(['run', '--until-idle', '--timeout', '90'], { home: h.home, env: elsewhere, timeoutMs: 120_000 });
      expect(run.code, run.stderr).toBe(0);
      const { task } = await h.call('get_task', { id });
      expect(task.status, JSON.stringify(task.error)).toBe('completed');
      expect(task.sessionId).toMatch(/^thread-\d+$/);
      const call = agentCalls().at(-1);
      expect(call.args.slice(0, 5)).toEqual(['exec', '--json', '--skip-git-repo-check', '--sandbox', 'read-only']);
      // An explore task of a worker without an enforced read-only sandbox reads a snapshot of the checkout.
      expect(call.cwd.startsWith(join(h.home, 'snapshots') + '/')).toBe(true);
    } finally {
      writeFileSync(join(h.home, 'config.toml'), '');
    }
  });

  it('a timeout during the first turn ends the agent tree in the editor (bridge cancel), and the task is timed_out', async () => {
    const pidFile = `${agentLog}.pids.json`;
    const task = await submitAndRun(['-k', 'explore', '--timeout', '3', 'FAKE_AGENT_SLEEP']);
    expect(task.status).toBe('timed_out');
    const pids = JSON.parse(readFileSync(pidFile, 'utf8'));
    await until(() => !isAlive(pids.agent) && !isAlive(pids.grandchild), 10_000, 'the agent tree to end');
  });

  it('a stopped editor removes its discovery file; the worker then reports why it cannot run', async () => {
    const file = discoveryFile();
    host.kill('SIGTERM');
    await exited(host);
    expect(existsSync(file)).toBe(false);
    // The turn the timeout cancelled was ended by the bridge itself (its terminal says so).
    expect(hostOut).toContain('cancelled (cancelled by LightWorker)');
    const r = await runCli(['workers', '--json'], { home: h.home, env });
    const vscode = JSON.parse(r.stdout).workers.find((w: any) => w.name === 'vscode');
    expect(vscode.installed).toBe(false);
    expect(vscode.reason).toContain('no running VS Code bridge');
    mkdirSync(bridges, { recursive: true });
    const task = await submitAndRun(['-k', 'explore', 'Look around.']);
    expect(task.status).toBe('failed');
    expect(task.error.message).toContain('no running VS Code bridge');
  });
});
