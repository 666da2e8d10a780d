import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { listEvents } from '../../main/store/events.js';
import { afterEach, describe, expect, it } from 'vitest';
import { startSchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { runCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';

// `[workers.<built-in CLI>] command = [...]` in config.toml: the binary (and leading arguments) the
// adapter runs instead of the one found on PATH — for a CLI installed elsewhere, and for benchmarks.
const FAKE = fileURLToPath(new URL('../fixtures/instant-codex.sh', import.meta.url));

let h: TestHome;
afterEach(() => h?.cleanup());

/** One explore task on the codex worker, run by an in-process scheduler to its end; the task then. */
async function runOneCodexTask() {
  const { task } = await h.call('delegate_task', { objective: 'look around', kind: 'explore', workspace: h.repo, worker: 'codex' });
  const svc = await startSchedulerService(h.engine);
  try {
    await waitTasks(h.engine, [task.id], 60_000);
  } finally {
    await svc.stop();
  }
  return (await h.call('get_task', { id: task.id })).task;
}

describe('a built-in worker with a configured command', () => {
  it('runs the configured binary with its leading arguments before the adapter own, and lists it', async () => {
    h = makeHome();
    // `bash` found on PATH, the script as a leading argument: both halves of the argv prefix are used.
    // auth = "none": the fake needs no credentials (a real codex would refuse to start without them).
    h.configure(`[workers.codex]\ncommand = ["bash", ${JSON.stringify(FAKE)}]\nmax_concurrency = 7\nauth = "none"\n`);
    const done = await runOneCodexTask();
    expect(done.error).toBeNull();
    expect(done.status).toBe('completed');
    expect(done.sessionId).toBe('t-instant'); // the fake's thread id: the real codex never ran
    expect(done.result).toEqual({ summary: 'done', findings: [] });

    const codex = (await h.call('list_workers')).workers.find((w: { name: string }) => w.name === 'codex');
    expect(codex).toMatchObject({ installed: true, version: '0.0.0-instant', builtin: true, maxConcurrency: 7 });
    expect(codex.command).toMatch(/\/bash$/);
    // Still one worker named codex (not a linked one beside the built-in).
    expect((await h.call('list_workers')).workers.filter((w: { name: string }) => w.name === 'codex')).toHaveLength(1);
  });

  it('a repair turn resumes the Codex session and counts only its own tokens (the totals come from the first turn\'s event)', async () => {
    h = makeHome();
    // Codex reports a session's usage cumulative across `exec resume`: 1000 after the first turn, 1500 after the repair.
    const fake = join(h.root, 'cumulative-codex.sh');
    writeFileSync(
      fake,
      [
        '#!/bin/bash',
        '[[ "$1" == "--version" ]] && { echo "codex-cli 0.0.0-cumulative"; exit 0; }',
        'out=""; prev=""; resumed=0',
        'for a in "$@"; do case "$prev" in -o) out="$a" ;; esac; [[ "$a" == resume ]] && resumed=1; prev="$a"; done',
        'if ((resumed)); then u=\'{"input_tokens":1500,"cached_input_tokens":1200,"output_tokens":80}\'; else u=\'{"input_tokens":1000,"cached_input_tokens":900,"output_tokens":50}\'; fi',
        'echo \'{"type":"thread.started","thread_id":"th-repair"}\'',
        'echo "{\\"type\\":\\"turn.completed\\",\\"usage\\":$u}"',
        '[[ -n "$out" ]] && printf \'%s\' \'{"summary":"done","files_changed":[],"notes":null}\' > "$out"',
        'exit 0',
        '',
      ].join('\n'),
    );
    chmodSync(fake, 0o755);
    h.configure(`[workers.codex]\ncommand = [${JSON.stringify(fake)}]\nauth = "none"\n[verify]\nauto_repair = 1\n`);
    // Fails once (the first turn), passes after the repair turn.
    const once = join(h.root, 'verified-once');
    const { task } = await h.call('delegate_task', {
      objective: 'fix it',
      kind: 'execute',
      workspace: h.repo,
      worker: 'codex',
      verify: [['sh', '-c', `test -f ${once} || { touch ${once}; exit 1; }`]],
    });
    await h.call('approve_task', { id: task.id });
    const svc = await startSchedulerService(h.engine);
    try {
      await waitTasks(h.engine, [task.id], 60_000);
    } finally {
      await svc.stop();
    }
    const done = (await h.call('get_task', { id: task.id })).task;
    expect(done.status).toBe('completed');
    const turns = listEvents(h.engine.db, { taskId: task.id, types: ['worker.usage'] }).events.map((e) => [e.payload.inputTokens, e.payload.cachedTokens, e.payload.outputTokens]);
    expect(turns).toEqual([
      [1000, 900, 50],
      [500, 300, 30],
    ]);
    expect(done.usage).toMatchObject({ inputTokens: 1500, cachedTokens: 1200, outputTokens: 80 });
    expect(existsSync(join(h.engine.home.artifacts, task.id, 'attempt-1', 'codex-home', 'lightworker-usage.json'))).toBe(false);
  });

  it('a configured binary that is not there: the worker says why, and its task fails as worker_missing', async () => {
    h = makeHome();
    h.configure('[workers.codex]\ncommand = ["/nonexistent/bin/codex"]\nauth = "none"\n');
    const codex = (await h.call('list_workers')).workers.find((w: { name: string }) => w.name === 'codex');
    expect(codex.installed).toBe(false);
    expect(codex.reason).toMatch(/\/nonexistent\/bin\/codex.*\[workers\.codex\] command/);
    const failed = await runOneCodexTask();
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatchObject({ code: 'worker_missing', message: expect.stringMatching(/\[workers\.codex\] command/) });
  });

  it('refuses a malformed block with an error naming the key (CLI exit 2), for every built-in CLI', async () => {
    h = makeHome();
    const cases: [string, RegExp][] = [
      ['[workers.codex]\ncommand = []\n', /workers\.codex\.command: must be a non-empty argv array/],
      ['[workers.claude-code]\ncommand = "claude"\n', /workers\.claude-code\.command: must be a non-empty argv array/],
      ['[workers.opencode]\ncommand = ["opencode", 3]\n', /workers\.opencode\.command\.1: must be a non-empty argv array/],
      ['[workers.codex]\ncommand = [""]\n', /workers\.codex\.command\.0: must not contain an empty string/],
      ['[workers.codex]\ncommand = ["codex"]\nresume = ["codex", "{session}"]\n', /workers\.codex\.resume: built-in worker codex resumes its own sessions/],
      ['[workers.opencode]\nargs = ["x"]\ncommand = ["opencode"]\n', /workers\.opencode\.args/],
      ['[workers.mock]\ncommand = ["node"]\n', /workers\.mock\.command: the built-in mock worker runs no external binary/],
    ];
    for (const [toml, message] of cases) {
      writeFileSync(h.engine.home.config, toml);
      const r = await runCli(['workers', '--json'], { home: h.home });
      expect(r.code, toml).toBe(2);
      expect(r.stderr, toml).toMatch(message);
    }
  });
});
