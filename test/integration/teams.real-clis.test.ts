import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Turn, TurnContext } from '../fixtures/gateway/script.js';
import { startGateway, type Gateway } from '../fixtures/gateway/index.js';
import { runCli } from '../helpers/cli.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { cliUnavailable } from '../helpers/worker-cli.js';

const KEY_ENV = 'LW_TEAM_GATEWAY_KEY';

/**
 * The implementer (Codex, Responses API) writes a typo first and fixes it in its follow-up turn; the
 * reviewer (Claude Code, Messages API) asks for changes until the diff it is shown has the fix.
 */
function teamScript(ctx: TurnContext): Turn {
  if (ctx.api === 'responses') {
    const turns: Turn[] = [
      { text: 'Writing greet.txt.', tools: [{ shell: "printf 'helo\\n' > greet.txt" }] },
      { json: { summary: 'Wrote greet.txt.', files_changed: ['greet.txt'], notes: null } },
      { text: 'Fixing the spelling.', tools: [{ shell: "printf 'hello\\n' > greet.txt" }] },
      { json: { summary: 'Fixed the spelling in greet.txt.', files_changed: ['greet.txt'], notes: null } },
    ];
    return turns[Math.min(ctx.turnIndex, turns.length - 1)];
  }
  const fixed = JSON.stringify(ctx.body).includes('+hello');
  return {
    json: fixed
      ? { summary: 'The greeting is spelled right now.', verdict: 'approve', issues: [] }
      : { summary: 'Typo in the greeting.', verdict: 'request_changes', issues: [{ file: 'greet.txt', severity: 'high', message: 'Spell it "hello", not "helo".' }] },
  };
}

describe('implement_review with real Codex and Claude Code (scripted gateway)', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startGateway({ script: teamScript });
  });
  afterAll(() => gw?.close());

  it('codex implements, claude-code reviews, the findings go back to codex in its session, and the second review passes', { timeout: 300_000 }, async (ctx) => {
    for (const bin of ['codex', 'claude']) {
      const why = await cliUnavailable(bin);
      if (why) {
        console.warn(`skipping the real-CLI team test: ${why}`);
        ctx.skip();
      }
    }
    const h: TestHome = makeHome();
    try {
      writeFileSync(join(h.home, 'config.toml'), `[gateways.fake]\nbase_url = "${gw.url}/v1"\nkey_env = "${KEY_ENV}"\n`);
      const env = { [KEY_ENV]: 'sk-team-key-abcdef123456' };
      const cli = (args: string[]) => runCli(args, { home: h.home, env, timeoutMs: 280_000 });
      const started = await cli(['team', 'implement_review', '--workers', 'codex,claude-code', '--gateway', 'fake', '--mode', 'auto_execute', '--workspace', h.repo, '--verify', 'test -s greet.txt', '--json', 'Write a greeting to greet.txt.']);
      expect(started.code, started.stderr).toBe(0);
      const { rootId } = JSON.parse(started.stdout);
      const ran = await cli(['run', '--until-idle', '--timeout', '260']);
      expect(ran.code, ran.stderr).toBe(0);

      const shown = await cli(['team', 'show', rootId, '--json']);
      const r = JSON.parse(shown.stdout);
      expect(r.state, JSON.stringify(r)).toBe('passed');
      const impl = (await h.call('get_task', { id: rootId })).task;
      expect(impl).toMatchObject({ worker: 'codex', status: 'completed', attempt: 2 });
      expect(readFileSync(join(impl.worktreePath, 'greet.txt'), 'utf8')).toBe('hello\n');
      expect(r.members.filter((m: { role: string }) => m.role === 'review').map((m: { worker: string; verdict: string }) => [m.worker, m.verdict])).toEqual([
        ['claude-code', 'request_changes'],
        ['claude-code', 'approve'],
      ]);
      // Codex's follow-up continued its own thread (the same session id) with the reviewer's finding.
      const { events } = await h.call('get_events', { task_id: rootId, types: ['task.resumed'], limit: 10 });
      expect(events.at(-1).payload).toMatchObject({ mode: 'session', sessionId: impl.sessionId, followUp: true });
      const codexFollowUp = gw.requests.find((q) => q.api === 'responses' && q.summary?.turnIndex === 2);
      expect(codexFollowUp, 'codex resumed its thread for round 2').toBeTruthy();

      const tree = await cli(['tree', rootId]);
      expect(tree.stdout).toMatch(/completed +execute +implement_review: Write a greeting to greet.txt. \[codex\]/);
      expect(tree.stdout).toMatch(/completed +review +review 2\/2: .*\[claude-code\]/);
      expect(existsSync(join(h.repo, 'greet.txt'))).toBe(false);
      expect(JSON.stringify(gw.requests.map((q) => q.headers))).not.toContain('sk-team-key-abcdef123456');
    } finally {
      h.cleanup();
    }
  });
});
