// Cache Lab figures: warm hit rate of a 30-task cohort through the scripted gateway's
// prefix-cache simulation, and what the stable-prefix prompt layout gains over a naive layout (task
// text first) on the same tasks — on the prompts alone, and replayed inside the real Codex CLI's
// requests (as captured, and with the two known cache breakers outside the prompt normalized away).
import { parseConfig } from '../../main/core/config.js';
import { buildNaivePrompt, buildPrompt } from '../../main/cachelab/prompt.js';
import { startSchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import type { Task } from '../../main/tasks/types.js';
import { resultJsonSchema } from '../../main/tasks/contract/result-schemas.js';
import { canonicalPrompt, PrefixCache } from '../fixtures/gateway/cache.js';
import { startGateway } from '../fixtures/gateway/index.js';
import { makeHome, type TestHome } from '../helpers/env.js';
import { cliUnavailable } from '../helpers/worker-cli.js';

const TASKS = 30;
const KEY_ENV = 'LW_BENCH_CACHELAB_KEY';
const PACK = Array.from({ length: 60 }, (_, i) => `- Convention ${i + 1}: modules own one responsibility; name files after what they own; keep functions short and verb-first.`).join('\n');

const objective = (i: number) =>
  `Question ${i + 1}: explain how ${['the scheduler', 'the store', 'the runner', 'redaction', 'the CLI'][i % 5]} handles case #${i + 1}` + ' and cite the files involved.'.repeat(1 + (i % 3));

/** Warm hit rate (tasks 2..n) of a list of request texts through a fresh prefix cache. */
function warmRate(texts: string[]): { rate: number; cachedPerTask: number; inputPerTask: number } {
  const cache = new PrefixCache();
  let input = 0;
  let cached = 0;
  texts.forEach((t, i) => {
    const r = cache.measure(t);
    if (i === 0) return;
    input += r.promptTokens;
    cached += r.cachedTokens;
  });
  return { rate: cached / input, cachedPerTask: cached / (texts.length - 1), inputPerTask: input / (texts.length - 1) };
}

const asRequest = (model: string, prompt: string) => canonicalPrompt('responses', { model, input: [{ role: 'user', content: [{ type: 'input_text', text: prompt }] }] });

/**
 * The naive layout of a captured request: our text moved to one user message, task part first. Handles
 * both deliveries: the whole prompt in the user message, or (codex) the stable part as a developer
 * instruction block and the task part (`# Task…`) as the user message.
 */
function naiveBody(body: Record<string, unknown>): Record<string, unknown> {
  type Block = { text?: unknown };
  const input = structuredClone(body.input) as Array<{ content?: Block[] }>;
  const isOurs = (b: Block) => typeof b.text === 'string' && b.text.startsWith('[lw-prompt/');
  let stable: string | null = null;
  for (const item of input) {
    for (const b of item.content ?? []) {
      if (!isOurs(b)) continue;
      const text = b.text as string;
      const cut = text.indexOf('\n\n# Task\n');
      if (cut >= 0) b.text = `${text.slice(cut + 2).trimEnd()}\n\n${text.slice(0, cut)}\n`;
      else stable = text;
    }
    if (stable !== null && item.content) item.content = item.content.filter((b) => !isOurs(b));
  }
  if (stable !== null) {
    for (const item of input) for (const b of item.content ?? []) {
      if (typeof b.text === 'string' && b.text.startsWith('# Task\n')) b.text = `${b.text.trimEnd()}\n\n${stable}\n`;
    }
  }
  return { ...body, input };
}

/** What a provider's token cache would key on: no per-request item ids, one CODEX_HOME path. */
const normalized = (text: string) => text.replace(/,"id":"msg_[^"]*"/g, '').replace(/artifacts\/[0-9A-Z]{26}\/attempt-\d+\/codex-home/g, 'CODEX_HOME');

async function submitCohort(h: TestHome, worker: string, extra: Record<string, unknown> = {}): Promise<Task[]> {
  await h.call('add_context_pack', { name: 'conventions', version: '1', text: PACK });
  const out: Task[] = [];
  for (let i = 0; i < TASKS; i++) {
    out.push((await h.call('delegate_task', { objective: objective(i), kind: 'explore', workspace: h.repo, worker, context_pack: 'conventions', reasoning_effort: 'low', ...extra })).task);
  }
  return out;
}

export async function run(): Promise<Record<string, number | string>> {
  const figures: Record<string, number | string> = {};
  // 1. The two layouts on the prompts alone (model + one user message), same 30 tasks.
  const h = makeHome();
  try {
    const tasks = await submitCohort(h, 'codex', { model: 'gpt-5.5' });
    const opts = { resultSchema: resultJsonSchema('explore'), config: h.engine.config, db: h.engine.db };
    const stable = warmRate(tasks.map((t) => asRequest('gpt-5.5', buildPrompt(t, opts).text)));
    const naive = warmRate(tasks.map((t) => asRequest('gpt-5.5', buildNaivePrompt(t, opts))));
    figures['prompt tokens per task'] = Math.round(stable.inputPerTask);
    figures['prompt only: warm hit rate, stable-prefix layout'] = stable.rate;
    figures['prompt only: warm hit rate, naive layout (task first)'] = naive.rate;
    figures['prompt only: gain, percentage points'] = (stable.rate - naive.rate) * 100;
    figures['prompt only: cached tokens per warm task, stable / naive'] = `${Math.round(stable.cachedPerTask)} / ${Math.round(naive.cachedPerTask)}`;
  } finally {
    h.cleanup();
  }

  // 2. Thirty real Codex CLI tasks through the scheduler and the gateway; then get_cache_metrics.
  const why = await cliUnavailable('codex');
  if (why) {
    figures['real codex'] = `skipped: ${why}`;
    return figures;
  }
  const gw = await startGateway({ keepBodies: true, script: { turns: [{ json: { summary: 'ok', findings: [] } }] } });
  const r = makeHome({ config: parseConfig({ gateways: { fake: { base_url: `${gw.url}/v1`, key_env: KEY_ENV } }, scheduler: { max_concurrency: 3 } }) });
  process.env[KEY_ENV] = 'bench-key';
  try {
    const tasks = await submitCohort(r, 'codex', { gateway: 'fake', model: 'gpt-5.5' });
    const t0 = performance.now();
    const svc = await startSchedulerService(r.engine);
    await waitTasks(r.engine, tasks.map((t) => t.id), 600_000);
    await svc.stop();
    const wallS = (performance.now() - t0) / 1000;
    const m = await r.call('get_cache_metrics', {});
    const c = m.cohorts[0];
    figures['real codex: tasks completed'] = (await r.call('list_tasks', { status: ['completed'] })).tasks.length;
    figures['real codex: wall time for 30 tasks (concurrency 3), s'] = wallS;
    figures['real codex: warm hit rate (get_cache_metrics)'] = m.warm.hitRate;
    figures['real codex: cold hit rate'] = m.cold.hitRate ?? 0;
    figures['real codex: cohort status'] = `${c?.status} (${c?.warmSamples} warm, route ${c?.route})`;
    figures['real codex: input tokens per request'] = Math.round(m.overall.inputTokens / m.overall.samples);
    // 3. Replay the captured requests with each layout, as captured and normalized.
    const bodies = gw.requests.filter((q) => q.api === 'responses' && q.summary && !q.summary.side).map((q) => q.body as Record<string, unknown>);
    const stableAsIs = warmRate(bodies.map((b) => canonicalPrompt('responses', b)));
    const naiveAsIs = warmRate(bodies.map((b) => canonicalPrompt('responses', naiveBody(b))));
    const stableFixed = warmRate(bodies.map((b) => normalized(canonicalPrompt('responses', b))));
    const naiveFixed = warmRate(bodies.map((b) => normalized(canonicalPrompt('responses', naiveBody(b)))));
    figures['codex replay as captured: stable / naive warm hit rate'] = `${stableAsIs.rate.toFixed(3)} / ${naiveAsIs.rate.toFixed(3)}`;
    figures['codex replay, item ids + CODEX_HOME path normalized: stable / naive'] = `${stableFixed.rate.toFixed(3)} / ${naiveFixed.rate.toFixed(3)}`;
    figures['codex replay normalized: gain, percentage points'] = (stableFixed.rate - naiveFixed.rate) * 100;
  } finally {
    delete process.env[KEY_ENV];
    r.cleanup();
    await gw.close();
  }
  return figures;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await run();
  const width = Math.max(...Object.keys(figures).map((k) => k.length));
  for (const [k, v] of Object.entries(figures)) process.stdout.write(`${k.padEnd(width)}  ${typeof v === 'number' ? Number(v.toFixed(3)) : v}\n`);
  process.stdout.write(JSON.stringify(figures, null, 2) + '\n');
  process.exit(0);
}
