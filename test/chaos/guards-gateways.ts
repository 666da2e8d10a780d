// Scenario part of the guards: per-gateway rate limits and the models' fallback routes. One home, an in-process
// leader, two gateways (a, b) and the scripted codex (test/fixtures/guards/scripted-codex.mjs), whose runs through
// gateway a are refused with a 429 naming a 2 s reset until `n` of them were; runs through b always answer.
// Two thirds of the tasks use a model with routes (primary a, fallback b); the rest a model routed only to a.
// Measured: tasks failed (must be 0), tasks moved to the fallback route, tasks of the no-fallback model that
// waited for a's reset, starts on a gateway while its pause was in force (must be 0), retries spent.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSchedulerService } from '../../main/app.js';
import { waitTasks } from '../../main/scheduler/wait.js';
import { activePause, gatewayKey } from '../../main/scheduler/worker-pauses.js';
import { listEvents } from '../../main/store/events.js';
import { getTask } from '../../main/store/tasks.js';
import { makeHome } from '../helpers/env.js';

const SCRIPTED = fileURLToPath(new URL('../fixtures/guards/scripted-codex.mjs', import.meta.url));

export interface GatewayLimitFigures {
  gatewayLimited: number;
  /** Tasks that did not complete (a rate limit must never fail one). */
  gatewayLimitFailures: number;
  /** Tasks that ran on the fallback route after their primary's gateway was rate-limited. */
  movedToFallback: number;
  /** Tasks of the model without a fallback route that met or waited out a's pause, and completed after its reset. */
  waitedForReset: number;
  /** Claims of a task whose gateway's pause was in force at that moment. */
  startsOnPausedGateway: number;
  gatewayRetriesSpent: number;
  /** 429s met through gateway a (requeues of the same attempt). */
  gatewayRequeues: number;
}

/** `n` tasks (at least 3) through two gateways, the first of which rate-limits its first `n` runs. */
export async function runGatewayLimits(n: number): Promise<GatewayLimitFigures> {
  const h = makeHome();
  try {
    const gw = (name: string) => `[gateways.${name}]\nbase_url = "http://127.0.0.1:9/${name}/v1"\nkey_env = "LW_CHAOS_${name.toUpperCase()}_KEY"\n`;
    h.configure(
      `${gw('a')}${gw('b')}[models.routes."gpt-5.5"]\nprimary = { gateway = "a", model = "pa/gpt-5.5" }\nfallback = { gateway = "b", model = "pb/gpt-5.5" }\n` +
        `[workers.codex]\ncommand = ["node", ${JSON.stringify(SCRIPTED)}, "limited", ${JSON.stringify(join(h.root, 'limited'))}, "${n}", "2", "only=127.0.0.1:9/a/"]\nauth = "none"\nmax_concurrency = 3\n` +
        '[scheduler]\nmax_concurrency = 3\n[limits]\nretry_budget = 0\n',
    );
    const routed = Math.max(2, Math.ceil((n * 2) / 3));
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const input = i < routed ? { model: 'gpt-5.5' } : { model: 'gpt-5.5-mini', gateway: 'a' };
      ids.push((await h.call('delegate_task', { objective: `gateway limited ${i}`, kind: 'explore', workspace: h.repo, worker: 'codex', ...input })).task.id);
    }
    let startsOnPausedGateway = 0;
    h.engine.events.on('event', (e) => {
      if (e.type !== 'task.status' || e.payload.to !== 'starting' || !e.taskId) return;
      const g = getTask(h.engine.db, e.taskId)?.gateway;
      if (g && activePause(h.engine.db, gatewayKey(g), e.ts)) startsOnPausedGateway++;
    });
    const svc = await startSchedulerService(h.engine);
    try {
      await waitTasks(h.engine, ids, 180_000);
    } finally {
      await svc.stop();
    }
    const tasks = ids.map((id) => getTask(h.engine.db, id)!);
    const events = (id: string, type: string) => listEvents(h.engine.db, { taskId: id, limit: 10_000 }).events.filter((e) => e.type === type);
    const ranOnB = (id: string) => events(id, 'task.route').at(-1)?.payload.gateway === 'b';
    return {
      gatewayLimited: ids.length,
      gatewayLimitFailures: tasks.filter((t) => t.status !== 'completed').length,
      movedToFallback: ids.filter((id) => events(id, 'task.rerouted').length > 0 && ranOnB(id)).length,
      waitedForReset: tasks.slice(routed).filter((t) => t.status === 'completed' && events(t.id, 'task.route').at(-1)?.payload.gateway === 'a').length,
      startsOnPausedGateway,
      gatewayRetriesSpent: tasks.reduce((k, t) => k + t.attempt - 1, 0),
      gatewayRequeues: ids.reduce((k, id) => k + events(id, 'task.rate_limited').length, 0),
    };
  } finally {
    h.cleanup();
  }
}
