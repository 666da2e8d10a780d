import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSchedulerService, type SchedulerService } from '../../main/app.js';
import { parseConfig } from '../../main/core/config.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { startGateway, type Gateway } from '../fixtures/gateway/index.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { cliUnavailable } from '../helpers/worker-cli.js';

/**
 * Routing by profile, as the seed routes (LightWorker 0.2.0): a profile names its gateway, a model has a
 * primary and a fallback route (gateway + the provider's model name), and a default gateway takes the rest.
 * Two scripted gateways on loopback; the real Codex and Claude Code CLIs; where each request lands is read
 * from the gateways' own request logs, and `get_task` names the gateway before the task runs.
 */
const KEY_A = 'LW_ROUTING_KEY_A';
const KEY_B = 'LW_ROUTING_KEY_B';

let a: Gateway;
let b: Gateway;
let h: TestHome;
let svc: SchedulerService | null = null;
let why: string | null = null;

const ANSWER = { turns: [{ json: { summary: 'Looked around.', findings: ['README.md:1 has a title'] } }] };

function toml(): string {
  return [
    `[gateways.a]\nbase_url = "${a.url}/v1"\nkey_env = "${KEY_A}"`,
    `[gateways.b]\nbase_url = "${b.url}/v1"\nkey_env = "${KEY_B}"`,
    '[routing]\ndefault_gateway = "a"',
    '[profiles.quick]\nreasoning_effort = "low"\nmodel = "gpt-5.5-mini"\ngateway = "a"',
    '[profiles.careful]\nreasoning_effort = "high"\nmodel = "claude-sonnet-4-5"\nworker = "claude-code"\ngateway = "b"',
    '[models.routes."gpt-5.5"]\nprimary = { gateway = "a", model = "provider-a/gpt-5.5" }\nfallback = { gateway = "b", model = "provider-b/gpt-5.5" }',
    '[scheduler]\nkill_grace_ms = 500\nmax_concurrency = 2',
  ].join('\n');
}

beforeAll(async () => {
  why = (await cliUnavailable('codex')) ?? (await cliUnavailable('claude'));
  [a, b] = await Promise.all([startGateway({ script: ANSWER }), startGateway({ script: ANSWER })]);
  // Gateway a is down for the task that says [[script:down]]; gateway b answers it.
  a.addScript('down', { turns: [{ error: { status: 503, message: 'provider a is down', times: 1000 } }] });
  b.addScript('down', ANSWER);
  process.env[KEY_A] = 'routing-key-a';
  process.env[KEY_B] = 'routing-key-b';
  h = makeHome();
  h.configure(toml());
});

afterAll(async () => {
  await svc?.stop();
  h?.cleanup();
  await Promise.all([a?.close(), b?.close()]);
  delete process.env[KEY_A];
  delete process.env[KEY_B];
});

const modelsSeen = (gw: Gateway) => gw.requests.filter((q) => q.summary && q.summary.toolCount > 0).map((q) => `${q.api} ${q.summary!.model}`);

describe('routing by profile with two gateways and the real CLIs', () => {
  it('profile → gateway, model routes primary then fallback, the default gateway; said before the task runs', { timeout: 600_000 }, async (ctx) => {
    if (why) {
      if (process.env.CI === 'true') throw new Error(why);
      console.warn(`skipping routing by profile: ${why}`);
      ctx.skip();
    }
    const task = async (input: Record<string, unknown>) => (await h.call('delegate_task', { kind: 'explore', workspace: h.repo, ...input })).task;
    const quick = await task({ objective: 'quick look', worker: 'codex', profile: 'quick' });
    const careful = await task({ objective: 'careful look', profile: 'careful' });
    const routed = await task({ objective: 'a look with gpt-5.5 [[script:down]]', worker: 'codex', model: 'gpt-5.5' });
    const plain = await task({ objective: 'a look with the default', worker: 'codex', model: 'gpt-5.5-mini' });
    // Before anything runs, each task says where it will go.
    expect([quick.gateway, careful.gateway, routed.gateway, plain.gateway]).toEqual(['a', 'b', 'a', 'a']);
    expect(careful.worker).toBe('claude-code');

    svc = await startSchedulerService(h.engine);
    const r = await waitTasks(h.engine, [quick.id, careful.id, routed.id, plain.id], 540_000);
    const ended = (t: { name: string; status: string; error?: unknown }) => `${t.name}: ${t.status}${t.error ? ` ${JSON.stringify(t.error)}` : ''}`;
    expect(r.tasks.filter((t) => t.id !== routed.id).map(ended)).toEqual(r.tasks.filter((t) => t.id !== routed.id).map((t) => `${t.name}: completed`));
    expect(r.tasks.find((t) => t.id === routed.id)!.status).toBe('failed');
    const onA = modelsSeen(a);
    const onB = modelsSeen(b);
    expect(onA).toContain('responses gpt-5.5-mini');
    expect(onA).toContain('responses provider-a/gpt-5.5');
    expect(onB.some((m) => m === 'messages claude-sonnet-4-5')).toBe(true);
    expect(onB.filter((m) => m.startsWith('responses'))).toEqual([]);

    // The fallback route: the same model through the other gateway, by the provider's name there.
    const retried = (await h.call('retry_task', { id: routed.id, strategy: 'fallback_gateway' })).task;
    expect(retried.gateway).toBe('b');
    const again = await waitTasks(h.engine, [routed.id], 300_000);
    expect(ended(again.tasks[0])).toBe(`${routed.name}: completed`);
    expect(modelsSeen(b)).toContain('responses provider-b/gpt-5.5');
  });

  it('a setting that names an unknown gateway is refused, naming the key', () => {
    const bad = (raw: unknown) => () => parseConfig(raw);
    const gateways = { a: { base_url: 'http://127.0.0.1:1/v1', key_env: 'K' } };
    expect(bad({ gateways, profiles: { quick: { gateway: 'nope' } } })).toThrow(/profiles\.quick\.gateway: unknown gateway "nope" \(config\.toml \[gateways\]: a\)/);
    expect(bad({ gateways, routing: { default_gateway: 'x' } })).toThrow(/routing\.default_gateway: unknown gateway "x"/);
    expect(bad({ gateways, models: { routes: { 'gpt-5.5': { primary: { gateway: 'a' }, fallback: { gateway: 'zz' } } } } })).toThrow(/models\.routes\.gpt-5\.5\.fallback\.gateway: unknown gateway "zz"/);
  });
});
