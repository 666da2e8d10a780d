import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acpAdapter } from '../../main/workers/acp/adapter.js';
import { makeBench, makeTurn, play, usageOf, type Bench } from '../helpers/worker-cli.js';

// The ACP driver's client side against a scripted agent (SDK agent side): fs and terminal inside the
// task's folder only, refusals recorded, a read-only turn writing nothing, usage, and the fresh-session
// fallback of an agent that cannot load a session. Agents not runnable here ("speaks ACP, not proven
// here") are covered by this.
const AGENT = fileURLToPath(new URL('../fixtures/acp/scripted-agent.mjs', import.meta.url));
const adapter = acpAdapter({ name: 'scripted', argv: [process.execPath, AGENT] });

describe('ACP driver against a scripted agent', () => {
  let bench: Bench;
  beforeAll(async () => {
    bench = await makeBench();
  });
  afterAll(async () => {
    await bench?.cleanup();
  });
  const turn = (prompt: string, kind: 'execute' | 'explore' = 'execute') => makeTurn(bench, 'scripted', 'm', { prompt, kind, gateway: null });

  it('serves writes, reads and terminals inside the worktree, and refuses (and records) a write outside it', async () => {
    const outside = join(bench.root, 'outside.txt');
    const t = turn(`[[acp:write ${bench.worktree}/in.txt=inside]] [[acp:read ${bench.worktree}/in.txt]] [[acp:run ls ${bench.worktree}]] [[acp:write ${outside}=escaped]] [[acp:read /etc/hostname]]`);
    const { result, events } = await play(adapter, t);
    expect(result.ok, result.error?.message).toBe(true);
    expect(readFileSync(join(bench.worktree, 'in.txt'), 'utf8')).toBe('inside');
    expect(existsSync(outside)).toBe(false);
    expect(result.finalText).toContain('wrote ');
    expect(result.finalText).toContain('read inside');
    expect(result.finalText).toMatch(/ran [^;]*in\.txt/);
    expect(result.finalText).toContain(`refused: LightWorker refused writing ${outside}: ${outside} is outside the task's folder`);
    expect(result.finalText).toContain('refused: LightWorker refused reading /etc/hostname');
    const refusals = events.filter((e) => e.type === 'worker.warning' && e.message.startsWith('LightWorker refused'));
    expect(refusals).toHaveLength(2);
    expect(usageOf(events)).toEqual({ input: 120, cached: 100, output: 7 });
  });

  it('refuses every write in a read-only turn, and a symlink out of the folder', async () => {
    const t = turn(`[[acp:write ${bench.repo}/ro.txt=nope]]`, 'explore');
    const { result } = await play(adapter, t);
    expect(result.finalText).toContain('this task is read-only');
    expect(existsSync(join(bench.repo, 'ro.txt'))).toBe(false);
    symlinkSync(bench.root, join(bench.worktree, 'link-out'));
    const r2 = await play(adapter, turn(`[[acp:write ${bench.worktree}/link-out/via-link.txt=x]]`));
    expect(r2.result.finalText).toContain('outside the task');
    expect(existsSync(join(bench.root, 'via-link.txt'))).toBe(false);
  });

  it('a permission ask with no permission tool is refused, never granted', async () => {
    const { result } = await play(adapter, turn('[[acp:ask rm -rf build]]'));
    expect(result.finalText).toContain('asked no');
  });

  it('an agent that cannot load a session continues in a fresh one with the earlier ask and answer', async () => {
    const first = turn('First ask.');
    const a = await play(adapter, first);
    const b = await play(adapter, { ...first, prompt: 'Second ask.', resumeSessionId: a.result.sessionId });
    expect(b.result.ok).toBe(true);
    expect(b.result.finalText).toContain('(carried over)');
    expect(b.events.some((e) => e.type === 'worker.warning' && e.message.includes(`cannot reload session ${a.result.sessionId}`))).toBe(true);
  });
});
