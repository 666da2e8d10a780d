import { Engine, type EngineOptions } from './engine.js';
import type { LeaderHooks } from './scheduler/leader-hooks.js';
import type { SchedulerService, SchedulerStatus, ServiceOptions } from './scheduler/service-types.js';

export type { SchedulerService, SchedulerStatus, ServiceOptions };

/**
 * The composition root. Every face opens its home here and leads through here — `run` (and the background
 * runner, which is `run --until-idle`), `serve`, the desktop app, the library and the MCP server — so a
 * leader always has what orchestration adds to the scheduler (plan expansion, team steps), whichever
 * modules the face happened to load. The leader's modules are loaded on first use: a face that only
 * reads (an MCP session's `initialize`, `lightworker status`) never pays for the runner.
 */

/** Open a home: its store (created on first use), config and event stream. */
export function openEngine(opts: EngineOptions = {}): Engine {
  return new Engine(opts);
}

/** What a leader of this application does besides running tasks: orchestration's plan and team hooks. */
export async function loadLeaderHooks(): Promise<LeaderHooks> {
  const [{ planHook }, { teamHook }] = await Promise.all([import('./orchestration/plan-hook.js'), import('./orchestration/team-hook.js')]);
  return { plan: planHook, team: teamHook };
}

/**
 * Run the scheduler service on `engine` with the application's hooks: lead if nobody does, else stand by
 * and take over once the leader goes away (scheduler/service.ts).
 */
export async function startSchedulerService(engine: Engine, opts: ServiceOptions = {}): Promise<SchedulerService> {
  const [{ startService }, hooks] = await Promise.all([import('./scheduler/service.js'), loadLeaderHooks()]);
  return await startService(engine, hooks, opts);
}

/**
 * The scheduler of a face that must not lead itself (an MCP session lives only as long as its client):
 * it stands by, and when nobody leads and there is work it starts a detached `lightworker run
 * --until-idle` that outlives the session (scheduler/background.ts).
 */
export async function startDelegatingService(engine: Engine): Promise<SchedulerService> {
  const [{ spawnBackgroundRunner }, { storeCapabilities }] = await Promise.all([import('./scheduler/background.js'), import('./store/capabilities.js')]);
  return await startSchedulerService(engine, { spawnRunner: () => spawnBackgroundRunner(engine.home, undefined, { tls: storeCapabilities(engine.db).sharedByHosts }) });
}
