import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkerAdapter, WorkerTurn } from '../../main/workers/adapter.js';
import { parseResult, resultJsonSchema } from '../../main/tasks/contract/result-schemas.js';
import type { GatewayRequest, Script } from '../fixtures/gateway/index.js';
import { networkUse, straceAvailable, traced } from './loopback-probe.js';
import { cliUnavailable, gitChanged, makeBench, makeTurn, play, usageOf, type Bench } from './worker-cli.js';

export interface CliSuite {
  worker: string;
  bin: string;
  adapter: WorkerAdapter;
  model: string;
  /** Extra checks on the gateway's requests of the schema test (e.g. Codex's text.format). */
  schemaRequestCheck?: (req: GatewayRequest) => void;
  /** Extra tests, given the bench. */
  extra?: (bench: () => Bench) => void;
}

const T = 150_000;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The shared contract every real-CLI adapter must meet, run against the real binary through the
 * scripted gateway: (a) read-only answer with writes refused, (b) edits in a worktree via tool calls,
 * (c) schema-valid result, (d) session resume, (e) 500 / 429 / hangs end with clear errors,
 * (f) usage with cached tokens, and no connection outside loopback.
 */
export async function describeRealCli(s: CliSuite): Promise<void> {
  const why = await cliUnavailable(s.bin);
  if (why) console.warn(`skipping ${s.worker} real-CLI tests: ${why}`);

  describe.skipIf(why !== null)(`${s.worker} (real CLI through the scripted gateway)`, () => {
    let bench: Bench;
    beforeAll(async () => {
      bench = await makeBench();
    });
    afterAll(async () => {
      await bench?.cleanup();
    });
    const turn = (name: string, script: Script, over: Partial<WorkerTurn> & { kind?: 'execute' | 'explore' | 'plan' | 'review' } = {}) => {
      bench.gw.addScript(name, script);
      return makeTurn(bench, s.worker, s.model, { prompt: `Do the task. [[script:${name}]]`, ...over });
    };
    const requestsOf = (name: string) => bench.gw.requests.filter((r) => r.summary?.script === name && !r.summary.side);

    it('(a) answers read-only, and its write attempt is refused', { timeout: T }, async () => {
      const t = turn('ro', { turns: [{ text: 'Trying a write.', tools: [{ shell: 'echo nope > denied.txt' }] }, { text: 'Read-only answer: one README.' }] }, { kind: 'explore' });
      const { result, events } = await play(s.adapter, t);
      expect(result.error).toBeUndefined();
      expect(result.ok).toBe(true);
      expect(result.finalText).toContain('Read-only answer');
      const started = events.find((e) => e.type === 'worker.started');
      expect(started && started.type === 'worker.started' && started.sessionId).toBeTruthy();
      expect(result.sessionId).toBe(started && started.type === 'worker.started' ? started.sessionId : null);
      expect(existsSync(join(bench.repo, 'denied.txt'))).toBe(false);
      expect(gitChanged(bench.repo)).toEqual([]);
      expect(requestsOf('ro').map((r) => r.summary!.turnIndex)).toEqual([0, 1]);
    });

    it('(b, f) edits files in a git worktree via tool calls and reports usage with cached tokens', { timeout: T }, async () => {
      const t = turn('edit', {
        turns: [
          { text: 'Editing with the shell.', tools: [{ shell: "printf 'from shell\\n' > from-shell.txt" }] },
          { tools: [{ write: { path: 'from-tool.txt', content: 'from the file tool\nline 2\n' } }] },
          { text: 'Edited two files.' },
        ],
      });
      const { result, events } = await play(s.adapter, t);
      expect(result.error).toBeUndefined();
      expect(result.finalText).toContain('Edited two files.');
      expect(readFileSync(join(bench.worktree, 'from-shell.txt'), 'utf8')).toBe('from shell\n');
      expect(readFileSync(join(bench.worktree, 'from-tool.txt'), 'utf8')).toBe('from the file tool\nline 2\n');
      expect(gitChanged(bench.worktree).sort()).toEqual(['from-shell.txt', 'from-tool.txt']);
      expect(gitChanged(bench.repo)).toEqual([]);
      const tools = events.filter((e) => e.type === 'worker.tool' && e.status === 'completed');
      expect(tools.length).toBeGreaterThanOrEqual(2);
      const u = usageOf(events);
      expect(u.cached).toBeGreaterThan(0);
      expect(u.input).toBeGreaterThan(u.cached);
      expect(u.output).toBeGreaterThan(0);
      const usageEvent = events.find((e) => e.type === 'worker.usage');
      expect(usageEvent && usageEvent.type === 'worker.usage' && usageEvent.model).toBeTruthy();
      // What the CLI reports matches what the gateway measured for these requests.
      const measured = requestsOf('edit').reduce((n, r) => n + r.summary!.usage!.cachedTokens, 0);
      expect(u.cached).toBe(measured);
    });

    it('(c) returns a result that validates against the kind schema', { timeout: T }, async () => {
      const answer = { summary: 'Nothing to change.', files_changed: [], notes: null };
      const t = turn('schema', { turns: [{ json: answer }] }, { resultSchema: resultJsonSchema('execute') });
      const { result } = await play(s.adapter, t);
      expect(result.ok).toBe(true);
      const parsed = parseResult('execute', result.finalText);
      expect(parsed.problem).toBeNull();
      expect(parsed.schemaValid).toBe(true);
      expect(parsed.result).toEqual(answer);
      s.schemaRequestCheck?.(requestsOf('schema')[0]);
    });

    it('(d) resumes its native session for a follow-up', { timeout: T }, async () => {
      const first = turn('resume', { turns: [{ text: 'First answer.' }, { text: 'Second answer, same session.' }] });
      const a = await play(s.adapter, first);
      expect(a.result.ok).toBe(true);
      expect(a.result.sessionId).toBeTruthy();
      // As the runner does: the session's totals from the first turn's usage event go with the follow-up.
      const threadUsage = a.events.flatMap((e) => (e.type === 'worker.usage' && e.thread ? [e.thread] : [])).at(-1) ?? null;
      const b = await play(s.adapter, { ...first, prompt: 'Follow up. [[script:resume]]', resumeSessionId: a.result.sessionId, threadUsage });
      expect(b.result.error).toBeUndefined();
      expect(b.result.sessionId).toBe(a.result.sessionId);
      expect(b.result.finalText).toContain('Second answer, same session.');
      const reqs = requestsOf('resume');
      expect(reqs.at(-1)!.summary!.turnIndex).toBe(1);
      // The follow-up's own usage: its single request, mostly served from the prefix cache.
      const u = usageOf(b.events);
      expect(u.input).toBe(reqs.at(-1)!.summary!.usage!.promptTokens);
      expect(u.cached).toBe(reqs.at(-1)!.summary!.usage!.cachedTokens);
      expect(u.cached).toBeGreaterThan(0);
    });

    it('(e) fails clearly when the gateway keeps answering 500', { timeout: T }, async () => {
      const t = turn('e500', { turns: [{ error: { status: 500, message: 'scripted outage' } }] });
      const { result } = await play(s.adapter, t);
      expect(result.ok).toBe(false);
      expect(result.aborted).toBeNull();
      expect(result.error?.code).toBe('worker_failed');
      expect(result.error?.message).toMatch(/500|outage|demand|server/i);
      expect(requestsOf('e500').length).toBeGreaterThanOrEqual(2);
    });

    it('(e) reports a 429 as rate_limited', { timeout: T }, async () => {
      const t = turn('e429', { turns: [{ error: { status: 429, message: 'Rate limit reached for requests' } }] });
      const { result } = await play(s.adapter, t);
      expect(result.ok).toBe(false);
      expect(result.error?.code).toBe('rate_limited');
    });

    for (const mode of ['headers', 'stream'] as const) {
      it(`(e) a hung response (${mode === 'headers' ? 'no headers' : 'stream stalls after the first event'}) ends by the runner's watchdog, tree killed`, { timeout: T }, async () => {
        const name = `hang-${mode}`;
        const t = turn(name, { turns: [{ hang: mode }] });
        let seenAt = 0;
        const { result } = await play(s.adapter, t, {
          abortWhen: () => {
            if (!seenAt && requestsOf(name).some((r) => r.outcome === `hang ${mode}`)) seenAt = Date.now();
            return seenAt > 0 && Date.now() - seenAt > 1000;
          },
        });
        expect(seenAt).toBeGreaterThan(0);
        expect(result.ok).toBe(false);
        expect(result.aborted).toBe('timeout');
        expect(isAlive(result.pid)).toBe(false);
      });
    }

    const noStrace = straceAvailable();
    it.skipIf(noStrace !== null)('connects to nothing but the loopback gateway (strace of the whole process tree)', { timeout: T }, async () => {
      const log = join(bench.root, `${s.worker}-net.log`);
      const t = turn('net', { turns: [{ tools: [{ write: { path: 'net.txt', content: 'offline\n' } }] }, { text: 'Done offline.' }] });
      const { result } = await play(traced(s.adapter, log), t);
      expect(result.error).toBeUndefined();
      const use = networkUse(log);
      expect(use.escapes).toEqual([]);
      expect(use.addresses).toContain(`127.0.0.1:${bench.gw.port}`);
      // Everything that reached the gateway is accounted for: the API calls and Claude's HEAD / (OpenCode's npm lookup goes elsewhere).
      for (const r of bench.gw.requests) expect(['POST', 'HEAD']).toContain(r.method);
    });
    if (noStrace) console.warn(`skipping the loopback proof for ${s.worker}: ${noStrace}`);

    s.extra?.(() => bench);
  });
}
