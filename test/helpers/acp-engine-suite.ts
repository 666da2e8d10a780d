import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listEvents } from '../../main/store/events.js';
import { listRequests } from '../../main/store/requests.js';
import { getTask } from '../../main/store/tasks.js';
import { startGateway, type Gateway, type Turn, type TurnContext } from '../fixtures/gateway/index.js';
import { runCli } from './cli.js';
import { makeGatewayHome, type TestHome } from './env.js';
import { acpUnavailable } from './acp-cli-suite.js';

const KEY_ENV = 'LW_ACP_GATEWAY_KEY';
const T = 300_000;
/** A shell command no ACP agent's edit mode allows on its own: it asks. */
export const ACP_PERMISSION_COMMAND = `node -e "require('fs').writeFileSync('granted.txt', 'ok')"`;

const history = (ctx: TurnContext) => JSON.stringify(ctx.body.contents ?? ctx.body.messages ?? ctx.body.input ?? []);
const final = (summary: string, files: string[] = []): Turn => ({ json: { summary, files_changed: files, notes: null, escalation: null } });

/** Asks for ACP_PERMISSION_COMMAND until the session holds a person's answer, then acts on it (by what the session holds). */
function permissionScript(ctx: TurnContext): Turn {
  const text = history(ctx);
  if (text.includes('A person denied your request')) return final('Continued without the command.');
  if (existsSync(join(ctx.cwd ?? '/nonexistent', 'granted.txt'))) return final('Ran the allowed command.', ['granted.txt']);
  // Codex runs a command in its own sandbox without asking; it asks when the model wants one run outside it.
  if (ctx.api === 'responses') return { text: 'Running a command.', tools: [{ call: { name: 'exec_command', input: { cmd: ACP_PERMISSION_COMMAND, sandbox_permissions: 'require_escalated', justification: 'creates granted.txt' } } }] };
  return { text: 'Running a command.', tools: [{ shell: ACP_PERMISSION_COMMAND }] };
}

/** Verify fails until fixed.txt exists: the first turn skips it, the repair turn (same session) writes it. */
function repairScript(ctx: TurnContext): Turn {
  if (existsSync(join(ctx.cwd ?? '/nonexistent', 'fixed.txt'))) return final('Fixed it.', ['fixed.txt']);
  // The check's output (MISSING-FIXED), not its command line, which the prompt also quotes.
  if (!history(ctx).includes('MISSING-FIXED')) return final('Done, I think.');
  return { text: 'Repairing.', tools: [{ write: { path: 'fixed.txt', content: 'fixed\n' } }] };
}

/**
 * The engine-level contract of an ACP worker: verify and auto-repair in the same session; a permission
 * ask answered allow and deny. With `freshFollowUps` (an agent whose session/load LightWorker does not
 * use) every later turn is a fresh session, and each says so in a warning: that is what is asserted.
 */
export function describeAcpEngine(s: { worker: string; bin: string; model: string; freshFollowUps?: boolean }): void {
  describe(`${s.worker} over ACP through the engine (real CLI, scripted gateway)`, () => {
    let gw: Gateway;
    let h: TestHome;
    let why: string | null = null;
    beforeAll(async () => {
      why = acpUnavailable(s.bin);
      if (why && process.env.CI) throw new Error(`${s.worker}: ${why} (CI installs it)`);
      gw = await startGateway({ keepBodies: true });
      gw.addScript('perm', permissionScript);
      gw.addScript('repair', repairScript);
      h = makeGatewayHome(gw.url, KEY_ENV);
      h.configure(`[gateways.fake]\nbase_url = "${gw.url}/v1"\nkey_env = "${KEY_ENV}"\n[scheduler]\nkill_grace_ms = 500\n[verify]\nauto_repair = 1\n[models]\nfast = "${s.model}"\nreasoning = "${s.model}"\nallow = ["${s.model}"]\n`);
    });
    afterAll(async () => {
      h?.cleanup();
      await gw?.close();
    });
    const cli = (args: string[]) => runCli(args, { home: h.home, env: { [KEY_ENV]: 'sk-acp-test-key-000000' }, timeoutMs: T });
    const task = (id: string) => getTask(h.engine.db, id)!;
    const sessions = (id: string) => listEvents(h.engine.db, { taskId: id, types: ['worker.started'] }).events.map((e) => e.payload.sessionId);
    const fallbacks = (id: string) => listEvents(h.engine.db, { taskId: id, types: ['worker.warning'] }).events.filter((e) => String(e.payload.message).includes('cannot reload session')).length;
    /** One session throughout, or (freshFollowUps) a new one per later turn, each announced as the fallback. */
    const expectContinued = (id: string, first?: string) => {
      const seen = sessions(id);
      if (first) expect(seen[0]).toBe(first);
      if (s.freshFollowUps) {
        expect(new Set(seen).size).toBe(seen.length);
        expect(fallbacks(id)).toBe(seen.length - 1);
      } else {
        expect(new Set(seen).size).toBe(1);
        expect(fallbacks(id)).toBe(0);
      }
    };
    const submit = async (objective: string, extra: Record<string, unknown> = {}) => {
      const r = await h.call('delegate_task', { objective, workspace: h.repo, kind: 'execute', mode: 'auto_execute', worker: s.worker, gateway: 'fake', model: s.model, ...extra });
      const ran = await cli(['run', '--until-idle']);
      expect(ran.code, ran.stderr).toBe(0);
      return r.task.id as string;
    };

    it(`execute with verify: a failing check is repaired (${s.freshFollowUps ? 'in a fresh session carrying the earlier ask and answer' : 'in the same session'})`, { timeout: T }, async (ctx) => {
      if (why) ctx.skip();
      const id = await submit('Make the check pass. [[script:repair]]', { verify: [['sh', '-c', 'test -f fixed.txt || { printf "%s-%s\\n" MISSING FIXED; exit 1; }']] });
      const t = task(id);
      expect(t.status, JSON.stringify(t.error)).toBe('completed');
      expect(readFileSync(join(t.worktreePath!, 'fixed.txt'), 'utf8')).toBe('fixed\n');
      expect(sessions(id).length).toBeGreaterThanOrEqual(2);
      expectContinued(id);
      expect(t.result).toMatchObject({ summary: 'Fixed it.' });
    });

    const continues = s.freshFollowUps ? 'a fresh session continues with the earlier ask and answer' : 'the same session continues';
    for (const answer of ['allow', 'deny'] as const) {
      it(`a permission ask reaches the inbox (waiting_input) and is answered ${answer}; ${continues}`, { timeout: T }, async (ctx) => {
        if (why) ctx.skip();
        const id = await submit('Create granted.txt with a node one-liner. [[script:perm]]');
        expect(task(id).status, JSON.stringify(task(id).error)).toBe('waiting_input');
        const [req] = listRequests(h.engine.db, { taskId: id });
        expect(req).toMatchObject({ kind: 'permission', status: 'pending', tool: 'Bash', command: ACP_PERMISSION_COMMAND });
        expect((await cli(['requests'])).stdout).toContain(ACP_PERMISSION_COMMAND);
        const before = task(id).sessionId;
        expect(before).toBeTruthy();
        const answered = await cli(answer === 'allow' ? ['answer', id, '--allow'] : ['answer', id, '--deny', 'not', 'today']);
        expect(answered.code, answered.stderr).toBe(0);
        const ran = await cli(['run', '--until-idle']);
        expect(ran.code, ran.stderr).toBe(0);
        const t = task(id);
        expect(t.status, JSON.stringify(t.error)).toBe('completed');
        expectContinued(id, before!);
        expect(existsSync(join(t.worktreePath!, 'granted.txt'))).toBe(answer === 'allow');
        expect(t.result).toMatchObject({ summary: answer === 'allow' ? 'Ran the allowed command.' : 'Continued without the command.' });
      });
    }
  });
}
