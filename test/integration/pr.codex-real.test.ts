import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollPull } from '../../main/isolation/pull-watch.js';
import { getPull } from '../../main/store/pulls.js';
import { startGateway, type Gateway, type Turn, type TurnContext } from '../fixtures/gateway/index.js';
import { makeGatewayHome } from '../helpers/env.js';
import { cliUnavailable } from '../helpers/worker-cli.js';
import { forgeHome, gitOut, prHarness, TOKEN, TOKEN_ENV } from './pr.helpers.js';

/**
 * The review and pull request loop with the real Codex CLI, its model played by the scripted gateway: Codex
 * writes app.js with a TODO and a `var`; a person's diff comment on the TODO comes back as a follow-up turn,
 * which removes it; the PR's scripted check (ci/style: no `var`) fails, the watcher sends its log tail, Codex
 * fixes it, LightWorker verifies and pushes, the check passes, and the forge's merge shows on the task.
 */
const KEY_ENV = 'LW_PR_GATEWAY_KEY';
const T = 300_000;

/** Whether the fix turn's request carried the failing check's log tail. */
let sawLog = false;

function codexScript(ctx: TurnContext): Turn {
  const text = JSON.stringify(ctx.body.input ?? ctx.body.messages ?? ctx.body);
  if (text.includes('Unexpected var, use let or const instead')) sawLog = true;
  const done: Turn = { json: { summary: 'Updated app.js.', files_changed: ['app.js'], notes: null, escalation: null } };
  if (text.includes('These checks failed')) {
    return text.includes('Fixing the check.') ? done : { text: 'Fixing the check.', tools: [{ shell: "printf 'const a = 1;\\nmodule.exports = a;\\n' > app.js" }] };
  }
  if (text.includes('drop the TODO')) {
    return text.includes('Fixing the review.') ? done : { text: 'Fixing the review.', tools: [{ shell: "printf 'var a = 1;\\nmodule.exports = a;\\n' > app.js" }] };
  }
  return text.includes('Writing app.js.') ? done : { text: 'Writing app.js.', tools: [{ write: { path: 'app.js', content: 'var a = 1;\n// TODO\nmodule.exports = a;\n' } }] };
}

describe('review comments and a pull request with real Codex (scripted gateway)', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startGateway({});
    gw.addScript('pr-codex', codexScript);
  });
  afterAll(() => gw?.close());

  it('comment → fixed and re-verified; PR → failing check → fix pushed → passing → merged', { timeout: T }, async (ctx) => {
    const why = await cliUnavailable('codex');
    if (why) {
      console.warn(`skipping codex PR loop: ${why}`);
      ctx.skip();
    }
    const h = makeGatewayHome(gw.url, KEY_ENV);
    const env = await forgeHome(h, 'github');
    // forgeHome rewrote config.toml: keep the gateway route beside the forge.
    h.configure(`${env.toml}\n[gateways.fake]\nbase_url = "${gw.url}/v1"\nkey_env = "${KEY_ENV}"\n`);
    const { forge, bare } = env;
    forge.checksFor = (sha) => {
      const body = gitOut(h.root, '--git-dir', bare, 'show', `${sha}:app.js`);
      return [{ name: 'ci/style', state: body.includes('var ') ? 'failure' : 'success', log: body.includes('var ') ? 'eslint app.js\napp.js:1:1 error Unexpected var, use let or const instead (no-var)\n' : 'ok\n' }];
    };
    const keyEnv = { [KEY_ENV]: 'sk-pr-test-key-0000000000', [TOKEN_ENV]: TOKEN };
    const { cli, task, events } = prHarness(() => h);
    const run = async () => {
      const r = await cli(['run', '--until-idle'], keyEnv);
      expect(r.code, r.stderr).toBe(0);
    };
    try {
      const { task: t0 } = await h.call('delegate_task', {
        objective: 'Add app.js. [[script:pr-codex]]',
        name: 'Add app',
        kind: 'execute',
        workspace: h.repo,
        worker: 'codex',
        gateway: 'fake',
        mode: 'auto_execute',
        verify: [['node', '-e', "require('./app.js')"]],
      });
      const id = t0.id as string;
      await run();
      expect(task(id).status, JSON.stringify(task(id).error)).toBe('completed');
      expect(readFileSync(join(task(id).worktreePath!, 'app.js'), 'utf8')).toContain('// TODO');

      const rv = await cli(['review', id, '--comment', 'app.js:2', 'drop the TODO', '--send'], keyEnv);
      expect(rv.code, rv.stderr).toBe(0);
      await run();
      expect(task(id)).toMatchObject({ status: 'completed', attempt: 2 });
      expect(readFileSync(join(task(id).worktreePath!, 'app.js'), 'utf8')).toBe('var a = 1;\nmodule.exports = a;\n');
      expect(events(id, 'verify.completed').filter((e) => e.payload.attempt === 2).map((e) => e.payload.ok)).toEqual([true]);

      const opened = await cli(['pr', id, '--json'], keyEnv);
      expect(opened.code, opened.stderr).toBe(0);
      const branch = JSON.parse(opened.stdout).pull.branch as string;
      await pollPull(h.engine, getPull(h.engine.db, id)!);
      expect(getPull(h.engine.db, id)).toMatchObject({ checks: 'failing', fixing: true, fixRounds: 1 });
      await run();
      expect(task(id)).toMatchObject({ status: 'completed', attempt: 3 });
      await pollPull(h.engine, getPull(h.engine.db, id)!);
      const head = gitOut(task(id).worktreePath!, 'rev-parse', 'HEAD');
      expect(forge.headOf(branch)).toBe(head);
      expect(gitOut(h.root, '--git-dir', bare, 'show', `${head}:app.js`)).toBe('const a = 1;\nmodule.exports = a;');
      await pollPull(h.engine, getPull(h.engine.db, id)!);
      expect(getPull(h.engine.db, id)!.checks).toBe('passing');
      forge.merge(1);
      await pollPull(h.engine, getPull(h.engine.db, id)!);
      expect(getPull(h.engine.db, id)!.state).toBe('merged');
      // The model saw the failing check's name and log tail in the follow-up.
      expect(sawLog).toBe(true);
    } finally {
      await forge.close();
      delete process.env[TOKEN_ENV];
      h.cleanup();
    }
  });
});
