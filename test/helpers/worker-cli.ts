import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { runTurn, type TurnResult } from '../../main/runner/turn.js';
import type { NormalizedEvent, WorkerAdapter, WorkerTurn } from '../../main/workers/adapter.js';
import { findCliBinary, probeVersion } from '../../main/workers/cli-detect.js';
import { minimalEnv } from '../../main/workers/env.js';
import type { Task } from '../../main/tasks/types.js';
import { startGateway, type Gateway } from '../fixtures/gateway/index.js';
import { makeRepo, tempDir } from './env.js';

/**
 * Shared harness for the real-CLI adapter tests: a scripted gateway, a git repo with a worktree, and
 * `play()` = one `runTurn` through the real spawn layer with its normalized events collected.
 */

export const GATEWAY_KEY_ENV = 'LW_TEST_GATEWAY_KEY';
export const GATEWAY_KEY = 'sk-test-gateway-key-0123456789';

/** Why a real CLI cannot run here (binary missing or `--version` fails), or null when it can. */
export async function cliUnavailable(bin: string): Promise<string | null> {
  const path = findCliBinary(bin);
  if (!path) return `${bin} is not installed (node_modules/.bin or PATH)`;
  const probe = await probeVersion(path, 20_000);
  return probe.line ? null : `${path} --version did not answer: ${probe.unknown}`;
}

export interface Bench {
  gw: Gateway;
  repo: string;
  /** A linked git worktree of `repo` on its own branch: where execute turns write. */
  worktree: string;
  root: string;
  nextRunDir(): string;
  cleanup(): Promise<void>;
}

export async function makeBench(): Promise<Bench> {
  const { dir, cleanup } = tempDir('lw-cli-');
  const repo = makeRepo(join(dir, 'repo'), { 'README.md': '# demo\n', 'src/app.txt': 'v1\n' });
  const worktree = join(dir, 'wt');
  execFileSync('git', ['worktree', 'add', '-q', '-b', 'lw/test', worktree], { cwd: repo, stdio: 'pipe' });
  const gw = await startGateway({ keepBodies: true });
  let n = 0;
  return {
    gw, repo, worktree, root: dir,
    nextRunDir: () => join(dir, `run-${++n}`),
    cleanup: async () => {
      await gw.close();
      cleanup();
    },
  };
}

export function fakeTask(kind: Task['kind'], worker: string): Task {
  const now = Date.now();
  return {
    id: '01TESTTASK0000000000000000', rootId: '01TESTTASK0000000000000000', parentId: null, name: 'cli test', kind, objective: 'test',
    workspace: '/nonexistent', baseRef: null, worker, model: null, reasoningEffort: 'medium', profile: null, gateway: 'fake', mode: 'auto_execute',
    type: null, priority: 0, timeoutS: 120, allowedPaths: [], successCriteria: [], verify: [], contextPack: null, metadata: {}, depth: 0,
    dependsOn: [], status: 'running', attempt: 1, approvedAt: now, cancelRequested: false, blockedBy: null, runnerId: null, pid: null,
    pidStart: null, worktreePath: null, branch: null, sessionId: null, usage: { inputTokens: 0, cachedTokens: 0, outputTokens: 0, costUsd: null },
    result: null, schemaValid: null, error: null, createdAt: now, updatedAt: now, startedAt: now, endedAt: null,
  };
}

export function makeTurn(bench: Bench, worker: string, model: string, over: Partial<WorkerTurn> & { kind?: Task['kind'] } = {}): WorkerTurn {
  const { kind = 'execute', ...rest } = over;
  return {
    task: fakeTask(kind, worker),
    prompt: 'Do the task.',
    workdir: kind === 'execute' ? bench.worktree : bench.repo,
    sandbox: kind === 'execute' ? 'workspace-write' : 'read-only',
    resultSchema: null,
    resumeSessionId: null,
    runDir: bench.nextRunDir(),
    model,
    reasoningEffort: 'medium',
    gateway: { name: 'fake', baseUrl: `${bench.gw.url}/v1`, keyEnv: GATEWAY_KEY_ENV, key: GATEWAY_KEY },
    baseEnv: minimalEnv({ LIGHTWORKER_DEPTH: '1' }),
    ...rest,
  };
}

export interface Played {
  result: TurnResult;
  events: NormalizedEvent[];
  ms: number;
}

/**
 * One real turn. `watchdog(gw)` may return true to abort (the runner's timeout, simulated): used for
 * hangs, which the CLIs never time out themselves.
 */
export async function play(adapter: WorkerAdapter, turn: WorkerTurn, opts: { hardTimeoutMs?: number; abortWhen?: () => boolean; signal?: AbortSignal } = {}): Promise<Played> {
  const ac = new AbortController();
  opts.signal?.addEventListener('abort', () => ac.abort(opts.signal!.reason), { once: true });
  const hard = setTimeout(() => ac.abort('timeout'), opts.hardTimeoutMs ?? 90_000);
  const poll = opts.abortWhen
    ? setInterval(() => {
        if (opts.abortWhen!()) ac.abort('timeout');
      }, 250)
    : null;
  const events: NormalizedEvent[] = [];
  const t0 = performance.now();
  try {
    const result = await runTurn(adapter, turn, { signal: ac.signal, killGraceMs: 2000, onEvents: (e) => events.push(...e) });
    return { result, events, ms: performance.now() - t0 };
  } finally {
    clearTimeout(hard);
    if (poll) clearInterval(poll);
  }
}

/** Sum of the worker.usage events of a turn. */
export function usageOf(events: NormalizedEvent[]): { input: number; cached: number; output: number } {
  let input = 0;
  let cached = 0;
  let output = 0;
  for (const e of events) {
    if (e.type !== 'worker.usage') continue;
    input += e.inputTokens;
    cached += e.cachedTokens;
    output += e.outputTokens;
  }
  return { input, cached, output };
}

/** Files changed in a git checkout (porcelain paths). */
export function gitChanged(dir: string): string[] {
  const out = execFileSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: dir, encoding: 'utf8' });
  return out.split('\n').filter(Boolean).map((l) => l.slice(3));
}
