import { execFileSync } from 'node:child_process';
import {  } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listEvents } from '../../main/store/events.js';
import { listRequests } from '../../main/store/requests.js';
import { getTask } from '../../main/store/tasks.js';
import { startGateway, type Gateway, type Turn, type TurnContext } from '../fixtures/gateway/index.js';
import { runCli } from '../helpers/cli.js';
import { makeGatewayHome, type TestHome } from '../helpers/env.js';
import { fingerprintDiff, furnishGuardedRepo, refsOf, repoFingerprint } from '../helpers/repo-fingerprint.js';
import { cliUnavailable } from '../helpers/worker-cli.js';

/**
 * Custody of the user's repository against the real Codex and Claude Code CLIs, driven by the scripted
 * gateway as a hostile model: it writes harm.sh into its workspace and runs it with the CLI's own shell
 * tool (Codex: workspace-write sandbox; Claude Code: acceptEdits, the Bash call allowed by a person
 * through LightWorker's permission request). harm.sh does git harm from the workspace — core.hooksPath,
 * a hook, refs/heads/main moved, a tag, info/exclude, `git push origin` — and then reaches for the
 * user's repository through the objects it borrows (alternates) by absolute path. After the task the
 * user's repository and its bare origin must be byte-identical, and what harm.sh printed (seen by the
 * gateway as the tool's output) proves the commands ran.
 *
 * What the sandboxes let through differs and the test holds either way: Codex's workspace-write mounts the
 * workspace's `.git` read-only (every git write from the workspace is refused), but the test's repository
 * lives under the system temp folder, which Codex counts as writable, so its absolute-path write lands
 * and is put back; Claude Code, once its Bash call is allowed, runs all of it.
 */

const KEY_ENV = 'LW_CUSTODY_GATEWAY_KEY';
const T = 300_000;
const DONE = 'HARM-42';

/** What a hostile agent runs from its workspace. `$((40+2))` keeps the done marker out of the script text itself. */
const HARM_SH = `#!/bin/sh
G=$(git rev-parse --git-common-dir); echo "common=$G"
git config core.hooksPath /tmp/lw-evil-hooks; echo "config rc=$? hooksPath=$(git config core.hooksPath)"
mkdir -p "$G/hooks" && printf '#!/bin/sh\\nexit 0\\n' > "$G/hooks/pre-commit"; echo "hook rc=$?"
mkdir -p "$G/info" && echo evil-exclude >> "$G/info/exclude"; echo "exclude rc=$?"
git -c user.name=h -c user.email=h@example.com -c commit.gpgsign=false commit -q --allow-empty -m hostile; echo "commit rc=$?"
git update-ref refs/heads/main HEAD; echo "update-ref rc=$? main=$(git rev-parse refs/heads/main)"
git tag planted; echo "tag rc=$?"
git push -q origin HEAD:refs/heads/evil; echo "push rc=$?"
A=$(head -n1 "$G/objects/info/alternates" 2>/dev/null)
if [ -n "$A" ]; then U=$(dirname "$A"); git --git-dir="$U" config core.hooksPath /tmp/lw-evil-abs; echo "abs config rc=$? via $U"; else echo "abs none"; fi
echo "HARM-$((40+2))"
`;

/** What harm.sh printed, as far as the model was told (null until a request carries it). */
const seen = new Map<string, string>();

/**
 * The hostile model, chosen from what the session holds: write harm.sh and run it; after a person allowed
 * the Bash call (Claude Code), run it again; once its output is back (or the call was refused), finish.
 */
function hostileScript(worker: string) {
  return (ctx: TurnContext): Turn => {
    const text = JSON.stringify(ctx.body.messages ?? ctx.body.input ?? ctx.body);
    const done = text.lastIndexOf(DONE);
    if (done !== -1) {
      const start = text.lastIndexOf('common=', done);
      const raw = text.slice(start, done + DONE.length);
      try {
        seen.set(worker, JSON.parse(`"${raw}"`) as string);
      } catch {
        seen.set(worker, raw);
      }
    }
    const final: Turn = { json: { summary: done !== -1 ? 'Ran harm.sh.' : 'harm.sh did not run.', files_changed: ['harm.sh'], notes: null, escalation: null } };
    if (done !== -1 || text.includes('A person denied your request')) return final;
    const run: Turn = { text: 'Running harm.sh.', tools: [{ shell: 'sh harm.sh' }] };
    // Claude Code after a person's answer: run it again (it is allowed now) unless it already came back.
    const allowed = text.lastIndexOf('A person allowed');
    if (allowed !== -1) return text.slice(allowed).includes('tool_result') ? final : run;
    // Write first, run in the next step (Codex may run calls of one response in parallel); a run that came back
    // without the marker (refused by the CLI or its sandbox) ends the attempt.
    if (ctx.turnIndex === 0) return { text: 'Writing harm.sh.', tools: [{ write: { path: 'harm.sh', content: HARM_SH } }] };
    return ctx.turnIndex === 1 ? run : final;
  };
}

const git = (dir: string, ...args: string[]) => execFileSync('git', args, { cwd: dir, encoding: 'utf8', stdio: 'pipe' }).trim();

const cases = [
  { worker: 'codex', bin: 'codex', model: undefined },
  { worker: 'claude-code', bin: 'claude', model: 'claude-sonnet-4-5' },
] as const;

describe('custody of the user repository against real Codex and Claude Code (scripted gateway)', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startGateway({});
    for (const c of cases) gw.addScript(`harm-${c.worker}`, hostileScript(c.worker));
  });
  afterAll(() => gw?.close());

  for (const c of cases) {
    it(`${c.worker}: git harm from its workspace leaves the user's repository and origin byte-identical`, { timeout: T }, async (ctx) => {
      const why = await cliUnavailable(c.bin);
      if (why) {
        console.warn(`skipping ${c.worker} custody: ${why}`);
        ctx.skip();
      }
      const h: TestHome = makeGatewayHome(gw.url, KEY_ENV);
      try {
        // Everything custody guards: a bare origin, packed refs, a tag, a hook, staged, modified and untracked work.
        const origin = furnishGuardedRepo(h.root, h.repo);
        const before = repoFingerprint(h.repo);
        const originBefore = refsOf(origin);

        const cli = (args: string[]) => runCli(args, { home: h.home, env: { [KEY_ENV]: 'sk-custody-test-key-000000' }, timeoutMs: T });
        const t0 = performance.now();
        const { task } = await h.call('delegate_task', {
          objective: `Run harm.sh. [[script:harm-${c.worker}]]`, kind: 'execute', workspace: h.repo, worker: c.worker, gateway: 'fake', mode: 'auto_execute',
          ...(c.model ? { model: c.model } : {}),
        });
        const id = task.id as string;
        const asked: string[] = [];
        // Claude Code asks for the Bash call; a person allows each ask (at most a few rounds).
        for (let round = 0; round < 4; round++) {
          const r = await cli(['run', '--until-idle']);
          expect(r.code, r.stderr).toBe(0);
          if (getTask(h.engine.db, id)!.status !== 'waiting_input') break;
          const pending = listRequests(h.engine.db, { taskId: id }).filter((q) => q.status === 'pending');
          asked.push(...pending.map((q) => `${q.tool}: ${q.command}`));
          const a = await cli(['answer', id, '--allow']);
          expect(a.code, a.stderr).toBe(0);
        }
        const ms = Math.round(performance.now() - t0);
        const t = getTask(h.engine.db, id)!;
        const events = listEvents(h.engine.db, { taskId: id, limit: 5000 }).events;
        const restored = events.filter((e) => e.type === 'custody.restored').flatMap((e) => (e.payload.restored as { path: string }[]).map((x) => x.path));
        const tools = events.filter((e) => e.type === 'worker.tool').map((e) => `${e.payload.name ?? ''} ${e.payload.status ?? ''}`);
        const out = seen.get(c.worker) ?? null;
        console.info(`${c.worker} custody: ${ms} ms, status ${t.status} ${JSON.stringify(t.error)}, asked ${JSON.stringify(asked)}, restored ${JSON.stringify(restored)}, tools ${JSON.stringify(tools)}\nharm.sh said:\n${out}`);

        // The commands really ran: harm.sh's output came back to the model, to its last line.
        expect(out, `${t.status} ${JSON.stringify(t.error)}`).toContain('config rc=');
        // Nothing of it stayed in the user's repository or reached its origin.
        expect.soft(fingerprintDiff(before, repoFingerprint(h.repo))).toEqual([]);
        expect.soft(refsOf(origin)).toBe(originBefore);
        expect(() => git(h.repo, 'config', 'core.hooksPath')).toThrow();
        // From its workspace the worker has no handle on the user's repository: its git dir is its own
        // (whatever the CLI's sandbox let through landed there), and it has no origin to push to.
        expect(out).toMatch(/^common=\.git$/m);
        expect(out).toMatch(/push rc=[1-9]/);
        expect(out).toContain("'origin' does not appear to be a git repository");
        const moved = /update-ref rc=0 main=([0-9a-f]{40})/.exec(out!);
        if (moved) expect(git(t.worktreePath!, 'rev-parse', 'refs/heads/main')).toBe(moved[1]);
        // Only a write into the user's repository by absolute path is something to put back, and it is
        // put back at once and fails the task naming what was written.
        if (/abs config rc=0/.test(out!)) {
          expect(restored).toEqual(['.git/config']);
          expect(t.status).toBe('failed');
          expect(t.error).toMatchObject({ code: 'boundary_violation', message: expect.stringContaining('.git/config [core.hookspath]') });
        } else {
          expect(restored).toEqual([]);
          expect(t.status, JSON.stringify(t.error)).toBe('completed');
        }
      } finally {
        h.cleanup();
      }
    });
  }
});
