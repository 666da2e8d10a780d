import type { Config } from '../core/config.js';
import type { Db } from '../store/db.js';
import type { Task, TaskKind } from '../tasks/types.js';
import { findProfile } from '../core/profiles.js';
import { routedModel, sandboxFor } from '../tasks/route-rule.js';
import { resultJsonSchema } from '../tasks/contract/result-schemas.js';
import { findContextPack } from './context-packs.js';
import { canonicalJson, sha256 } from './hash.js';
import { PROMPT_PROTOCOL, profileContract } from './prompt.js';
import { cohortOf, setCohort } from '../store/task-moves.js';

/**
 * The cache cohort: tasks whose requests share one provider prefix cache. Its key hashes
 * everything that changes the bytes before the task-specific part or where they are cached: gateway,
 * response mode, upstream model, reasoning effort, profile + contract hash, prompt protocol (+ role),
 * schema hash, sandbox, context pack hash, config scope and tool contract. Cohorts are never merged.
 */
export type CohortTask = Pick<Task, 'worker' | 'kind' | 'model' | 'reasoningEffort' | 'profile' | 'gateway' | 'contextPack'>;

export interface CohortComponents {
  gateway: string;
  responseMode: string;
  model: string;
  reasoningEffort: string;
  profile: string;
  contractHash: string | null;
  protocol: string;
  role: TaskKind;
  schemaHash: string;
  sandbox: string;
  packHash: string | null;
  configScope: string;
  toolContract: string;
}

/** Effort and model a task's turns go to, as the runner routes them but without throwing (an unknown profile is none). */
export function effectiveRoute(config: Config, t: Pick<Task, 'worker' | 'model' | 'reasoningEffort' | 'profile'>): { model: string | null; effort: string } {
  return routedModel(config, t, t.profile ? findProfile(config, t.profile) : undefined);
}

/** The hash of a kind's result schema: the schema is fixed per kind, so hashed once per process. */
const schemaHashes = new Map<TaskKind, string>();
function schemaHashOf(kind: TaskKind): string {
  let h = schemaHashes.get(kind);
  if (h === undefined) schemaHashes.set(kind, (h = sha256(canonicalJson(resultJsonSchema(kind)))));
  return h;
}

export function cohortComponents(config: Config, db: Db | null, t: CohortTask): CohortComponents {
  const contract = profileContract(config, t.profile);
  const gw = t.gateway ? config.gateways[t.gateway] : undefined;
  const pack = t.contextPack && db ? findContextPack(db, t.contextPack) : null;
  const route = effectiveRoute(config, t);
  return {
    gateway: t.gateway ?? '(worker default)',
    // Every kind answers with its JSON result schema (a plan must; others are saved schema_valid=false otherwise).
    responseMode: `json_schema:${t.kind}`,
    model: route.model ?? '(worker default)',
    reasoningEffort: route.effort,
    profile: t.profile ?? '(none)',
    contractHash: contract ? sha256(contract) : null,
    protocol: PROMPT_PROTOCOL,
    role: t.kind,
    schemaHash: schemaHashOf(t.kind),
    sandbox: sandboxFor(t.kind),
    packHash: pack?.hash ?? (t.contextPack ? `unresolved:${t.contextPack}` : null),
    // Where the cache lives: the endpoint and account (key variable name), not the key.
    configScope: gw ? sha256(canonicalJson({ base_url: gw.base_url.replace(/\/+$/, ''), key_env: gw.key_env, wire_api: gw.wire_api ?? null })) : 'cli-default',
    // The worker CLI decides the tool definitions sent before the prompt.
    toolContract: `${t.worker}:${sandboxFor(t.kind)}`,
  };
}

/** The cohort key: 16 hex characters of the SHA-256 of the canonical components. */
export function cohortKey(config: Config, db: Db | null, t: CohortTask): string {
  return sha256(canonicalJson(cohortComponents(config, db, t))).slice(0, 16);
}

/** Compute and store a task's cohort (at creation; again when a retry changed its route). */
export function assignCohort(db: Db, config: Config, t: CohortTask & { id: string }): string {
  const key = cohortKey(config, db, t);
  setCohort(db, t.id, key);
  return key;
}

/** A task's stored cohort (null for tasks created before the Cache Lab). */
export function taskCohort(db: Db, id: string): string | null {
  return cohortOf(db, id);
}
