import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkerAdapter, WorkerTurn } from '../../main/workers/adapter.js';
import type { Script } from '../fixtures/gateway/index.js';
import { networkUse, straceAvailable, traced } from './loopback-probe.js';
import { findCliBinary } from '../../main/workers/cli-detect.js';
import { gitChanged, makeBench, makeTurn, play, usageOf, type Bench } from './worker-cli.js';

export interface AcpSuite {
  worker: string;
  bin: string;
  adapter: WorkerAdapter;
  model: string;
  /** Skip the usage assertions: the agent reports no token usage over ACP. */
  noUsage?: boolean;
  /**
   * A defect of the agent found by the loopback case and not fixed yet, said in words: the case then must
   * fail (vitest `it.fails`), so the day the agent (or our wiring) stops leaving loopback it turns red and
   * the note comes off.
   */
  leavesLoopback?: string;
  /**
   * LightWorker does not use this agent's session/load (AcpAgentDef.noLoad): a follow-up is a fresh
   * session carrying the earlier ask and answer, announced by a worker.warning. Asserted instead of the same session.
   */
  freshFollowUps?: boolean;
  /** How long the agent may take to give up on a 429 (its own retries and backoff), default 150 s. */
  rateLimitMs?: number;
}

const T = 180_000;

/** Why an ACP agent cannot run here (not installed), or null. Some answer no `--version` (codex-acp, claude-agent-acp). */
export function acpUnavailable(bin: string): string | null {
  return findCliBinary(bin) ? null : `${bin} is not installed (node_modules/.bin or PATH)`;
}

/** Processes whose environment holds `HOME=<home>`: an ACP turn's agent and everything it started. */
export function processesWithHome(home: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`HOME=${home}`)) out.push(Number(pid));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

/**
 * The contract an ACP agent meets through LightWorker's ACP driver, against the real CLI and the
 * scripted gateway: a read-only answer with writes refused, edits in a worktree, a follow-up in the
 * same session, cancel and timeout with the whole tree dead, a 429 as rate_limited, loopback only.
 * (Permission asks, verify and auto-repair run through the engine: acp-engine-suite.ts.)
 */
export async function describeAcpCli(s: AcpSuite): Promise<void> {
  const why = acpUnavailable(s.bin);
  if (why && process.env.CI) throw new Error(`${s.worker}: ${why} (CI installs it)`);
  if (why) console.warn(`skipping ${s.worker} ACP tests: ${why}`);

  describe.skipIf(why !== null)(`${s.worker} over ACP (real CLI through the scripted gateway)`, () => {
    let bench: Bench;
    beforeAll(async () => {
      bench = await makeBench();
    });
    afterAll(async () => {
      await bench?.cleanup();
    });
    const turn = (name: string, script: Script, over: Partial<WorkerTurn> & { kind?: 'execute' | 'explore' } = {}) => {
      bench.gw.addScript(name, script);
      return makeTurn(bench, s.worker, s.model, { prompt: `Do the task. [[script:${name}]]`, ...over });
    };
    const requestsOf = (name: string) => bench.gw.requests.filter((r) => r.summary?.script === name && !r.summary.side);

    it('explore: answers read-only, and its file write is refused', { timeout: T }, async () => {
      const t = turn('ro', { turns: [{ text: 'Trying a write.', tools: [{ write: { path: 'denied.txt', content: 'nope\n' } }] }, { text: 'Read-only answer: one README.' }] }, { kind: 'explore' });
      const { result, events } = await play(s.adapter, t);
      expect(result.error).toBeUndefined();
      expect(result.finalText).toContain('Read-only answer');
      const started = events.find((e) => e.type === 'worker.started');
      expect(started && started.type === 'worker.started' && started.sessionId).toBeTruthy();
      expect(existsSync(join(bench.repo, 'denied.txt'))).toBe(false);
      expect(gitChanged(bench.repo)).toEqual([]);
      expect(requestsOf('ro').length).toBeGreaterThanOrEqual(2);
    });

    it('execute: writes a file in the worktree through its file tool', { timeout: T }, async () => {
      const t = turn('edit', { turns: [{ text: 'Writing.', tools: [{ write: { path: 'from-tool.txt', content: 'from the file tool\nline 2\n' } }] }, { text: 'Edited one file.' }] });
      const { result, events } = await play(s.adapter, t);
      expect(result.error).toBeUndefined();
      expect(result.finalText).toContain('Edited one file.');
      expect(readFileSync(join(bench.worktree, 'from-tool.txt'), 'utf8')).toBe('from the file tool\nline 2\n');
      expect(gitChanged(bench.repo)).toEqual([]);
      expect(events.some((e) => e.type === 'worker.tool' && e.status === 'completed')).toBe(true);
      if (!s.noUsage) {
        const u = usageOf(events);
        expect(u.input).toBeGreaterThan(0);
        expect(u.output).toBeGreaterThan(0);
      }
    });

    it(`follow-up: ${s.freshFollowUps ? 'a fresh session carries the earlier ask and answer (the fallback, announced)' : 'continues the same session'}`, { timeout: T }, async () => {
      const first = turn('resume', { turns: [{ text: 'First answer.' }, { text: 'Second answer, same session.' }] });
      const a = await play(s.adapter, first);
      expect(a.result.ok, a.result.error?.message).toBe(true);
      expect(a.result.sessionId).toBeTruthy();
      const b = await play(s.adapter, { ...first, prompt: 'Follow up. [[script:resume]]', resumeSessionId: a.result.sessionId });
      expect(b.result.error).toBeUndefined();
      const warnings = b.events.flatMap((e) => (e.type === 'worker.warning' ? [e.message] : []));
      const fellBack = warnings.filter((m) => m.includes(`cannot reload session ${a.result.sessionId}`));
      if (s.freshFollowUps) {
        expect(fellBack, warnings.join('\n')).toHaveLength(1);
        expect(b.result.sessionId).not.toBe(a.result.sessionId);
        // The fresh session's request carries the first turn's answer in its prompt, not as a model turn.
        const last = requestsOf('resume').at(-1)!;
        expect(last.summary!.turnIndex).toBe(0);
        expect(JSON.stringify(last.body)).toContain('Your answer then:\\nFirst answer.');
        expect(b.result.finalText).toContain('First answer.');
      } else {
        expect(fellBack, warnings.join('\n')).toEqual([]);
        expect(b.result.sessionId, warnings.join('\n')).toBe(a.result.sessionId);
        expect(b.result.finalText).toContain('Second answer, same session.');
        // The agent's own history came back: the follow-up's request holds the first answer.
        expect(requestsOf('resume').at(-1)!.summary!.turnIndex).toBe(1);
      }
    });

    const limitMs = s.rateLimitMs ?? 150_000;
    it('reports a 429 as rate_limited', { timeout: limitMs + 30_000 }, async () => {
      const t = turn('e429', { turns: [{ error: { status: 429, message: 'Rate limit reached for requests' } }] });
      const { result } = await play(s.adapter, t, { hardTimeoutMs: limitMs });
      expect(result.ok).toBe(false);
      expect(result.aborted).toBeNull();
      expect(result.error?.code, result.error?.message).toBe('rate_limited');
    });

    for (const reason of ['cancel', 'timeout'] as const) {
      it(`${reason}: session/cancel, then the whole tree is dead`, { timeout: T }, async () => {
        const name = `stop-${reason}`;
        const t = turn(name, { turns: [{ hang: reason === 'cancel' ? 'stream' : 'headers' }] });
        let seenAt = 0;
        let agents: number[] = [];
        const home = join(t.runDir, 'acp-home');
        const ac = new AbortController();
        const poll = setInterval(() => {
          if (!seenAt && requestsOf(name).some((r) => r.outcome.startsWith('hang'))) {
            seenAt = Date.now();
            agents = processesWithHome(home);
            ac.abort(reason);
          }
        }, 200);
        const { result, events } = await play(s.adapter, t, { signal: ac.signal }).finally(() => clearInterval(poll));
        expect(seenAt).toBeGreaterThan(0);
        expect(agents.length).toBeGreaterThan(0);
        expect(result.ok).toBe(false);
        expect(result.aborted).toBe(reason);
        expect(events.some((e) => e.type === 'worker.warning' && e.message.includes('session/cancel'))).toBe(true);
        expect(processesWithHome(home)).toEqual([]);
      });
    }

    const noStrace = straceAvailable();
    if (noStrace && process.env.CI) throw new Error(noStrace);
    const loopbackCase = noStrace !== null ? it.skip : s.leavesLoopback ? it.fails : it;
    loopbackCase(`connects to nothing but the loopback gateway (strace of the whole tree)${s.leavesLoopback ? ` — known to fail: ${s.leavesLoopback}` : ''}`, { timeout: T }, async () => {
      const log = join(bench.root, `${s.worker}-net.log`);
      const t = turn('net', { turns: [{ tools: [{ write: { path: 'net.txt', content: 'offline\n' } }] }, { text: 'Done offline.' }] });
      const { result } = await play(traced(s.adapter, log), t);
      expect(result.error).toBeUndefined();
      const use = networkUse(log);
      expect(use.escapes).toEqual([]);
      expect(use.addresses).toContain(`127.0.0.1:${bench.gw.port}`);
    });
  });
}
