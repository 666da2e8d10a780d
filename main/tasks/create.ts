import { realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, parse } from 'node:path';
import type { Config } from '../core/config.js';
import type { TaskCachelab } from './cachelab-hook.js';
import { AppError } from '../core/errors.js';
import { REDACTED, redactText } from '../core/redact.js';
import { newId } from '../core/ids.js';
import { appendEvent } from '../store/events.js';
import type { Db } from '../store/db.js';
import { storeCapabilities } from '../store/capabilities.js';
import { getTask, insertTask, type NewTaskRow } from '../store/tasks.js';
import { stampOrigin } from './repo-identity.js';
import type { ParsedTaskInput } from './schema.js';
import { redactNewTask, sealSecrets } from './secrets.js';
import { checkCeiling, guardFieldsOf, rootFieldsOf, setRootBudget, type RootBudget } from './budget.js';
import type { Authority, Task, TaskKind, TaskMode, TaskStatus } from './types.js';
import { checkAutoRepair } from './auto-repair.js';
import { decideTaskRoute } from './task-route.js';

/** Workflow types pre-fill priority and timeout; explicit values win. */
export const WORKFLOW_DEFAULTS = {
  chore: { priority: 30, timeoutS: 900 },
  feature: { priority: 50, timeoutS: 3600 },
  refactor: { priority: 50, timeoutS: 3600 },
  hotfix: { priority: 90, timeoutS: 1800 },
} as const;
const PLAIN_DEFAULTS = { priority: 50, timeoutS: 1800 };

/** Does a task of this kind, in this mode, wait for a person before it may run? */
export function needsApproval(mode: TaskMode, kind: TaskKind): boolean {
  if (mode === 'plan_only') return true;
  if (mode === 'auto_readonly') return kind === 'execute';
  return false;
}

/**
 * Canonical path of the workspace: an absolute path to an existing directory, inside a git repository
 * or not (a plain folder is worked on in a copy; see isolation/copy.ts).
 */
export function resolveWorkspace(workspace: string, field = 'workspace'): string {
  if (!isAbsolute(workspace)) throw new AppError('invalid_input', `${field}: must be an absolute path, got "${workspace}"`, { field });
  let real: string;
  try {
    real = realpathSync(workspace);
    if (!statSync(real).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new AppError('invalid_input', `${field}: ${workspace} is not an existing directory`, { field });
  }
  // A worker (or a copy of a plain folder) never gets a whole filesystem or home folder.
  if (real === parse(real).root || real === realHome()) {
    throw new AppError('invalid_input', `${field}: ${workspace} is ${real === parse(real).root ? 'the filesystem root' : 'your home folder'}; name a project folder`, { field });
  }
  return real;
}

function realHome(): string | null {
  try {
    return realpathSync(homedir());
  } catch {
    return null;
  }
}

export interface CreateContext {
  db: Db;
  config: Config;
  /** Home folder, for the key that seals the caller's original text. */
  homeRoot: string;
  /** Delegation depth of the caller (0 = a person; workers run with LIGHTWORKER_DEPTH = task depth + 1). */
  depth: number;
  /**
   * Worker names that can run (built-ins + linked). Faces pass it so an unknown worker is refused at
   * submit instead of failing at run time; internal callers (plan expansion) may leave it out.
   */
  knownWorkers?: readonly string[];
  /**
   * Who creates the tasks. An `agent` cannot release writes: a mode of auto_execute (asked for, inherited
   * from a parent or the config default) becomes auto_readonly, so execute tasks wait for a person.
   */
  authority: Authority;
  /** Filled with the ids of tasks whose auto_execute mode was lowered to auto_readonly, to tell the caller. */
  lowered?: string[];
  /** Cohorts and context packs (cachelab/task-cachelab.ts). */
  cachelab: TaskCachelab;
}

/**
 * Validate and insert a batch of tasks all-or-nothing, in the caller's transaction.
 * `depends_on` entries may name a `ref` of the same batch or an existing task id. Cycles, unknown
 * dependencies, duplicate refs and disallowed models are rejected with the field named.
 */
export function createTasks(ctx: CreateContext, inputs: ParsedTaskInput[], opts: { defaultMode?: TaskMode } = {}): Task[] {
  const { db, config } = ctx;
  if (ctx.depth > config.limits.max_depth) {
    throw new AppError('forbidden', `delegation depth ${ctx.depth} exceeds limits.max_depth = ${config.limits.max_depth}`);
  }
  const now = Date.now();
  const ids = inputs.map(() => newId(now));
  const refToIndex = new Map<string, number>();
  inputs.forEach((t, i) => {
    if (!t.ref) return;
    if (refToIndex.has(t.ref)) throw new AppError('invalid_input', `tasks[${i}].ref: duplicate ref "${t.ref}"`, { field: `tasks[${i}].ref` });
    refToIndex.set(t.ref, i);
  });

  // Resolve every dependency to an id: same-batch refs first, then existing tasks.
  const deps: string[][] = inputs.map((t, i) => {
    const list = t.depends_on ?? [];
    if (new Set(list).size !== list.length) throw new AppError('invalid_input', `${fieldOf(inputs, i, 'depends_on')}: lists a dependency twice`, { field: fieldOf(inputs, i, 'depends_on') });
    return list.map((d) => {
      const local = refToIndex.get(d);
      if (local !== undefined) return ids[local];
      if (getTask(db, d)) return d;
      throw new AppError('invalid_input', `${fieldOf(inputs, i, 'depends_on')}: unknown task "${d}"`, { field: fieldOf(inputs, i, 'depends_on'), value: d });
    });
  });
  rejectCycles(ids, deps, inputs);
  const order = topoOrder(ids, deps);
  // A batch is one tree; a lone task joins the tree of the task it depends on.
  const batchRoot = ids[order[0]];

  const routedBy: (string | null)[] = [];
  const lowered: (TaskMode | undefined)[] = [];
  const rows: NewTaskRow[] = inputs.map((t, i) => {
    const f = (name: string) => fieldOf(inputs, i, name);
    const workspace = resolveWorkspace(t.workspace, f('workspace'));
    const parent = t.parent_id ? getTask(db, t.parent_id) : null;
    if (t.parent_id && !parent) throw new AppError('invalid_input', `${f('parent_id')}: unknown task "${t.parent_id}"`, { field: f('parent_id') });
    const r = decideTaskRoute(config, t, ctx.knownWorkers, f);
    routedBy[i] = r.why;
    checkAutoRepair(t.metadata, f('metadata'));
    const { worker, model, effort } = r;
    const defaults = t.type ? WORKFLOW_DEFAULTS[t.type] : PLAIN_DEFAULTS;
    const asked = t.mode ?? parent?.mode ?? opts.defaultMode ?? config.approvals.default_mode;
    const mode = ctx.authority === 'agent' && asked === 'auto_execute' ? 'auto_readonly' : asked;
    if (mode !== asked) {
      lowered[i] = asked;
      ctx.lowered?.push(ids[i]);
    }
    const waits = needsApproval(mode, t.kind);
    const status: TaskStatus = waits ? 'awaiting_approval' : 'queued';
    const rootId =
      parent?.rootId ?? (inputs.length > 1 ? batchRoot : deps[i].length ? (getTask(db, deps[i][0])?.rootId ?? ids[i]) : ids[i]);
    return {
      id: ids[i],
      rootId,
      parentId: parent?.id ?? null,
      name: t.name ?? nameFromObjective(t.objective),
      kind: t.kind,
      objective: t.objective,
      workspace,
      baseRef: t.base_ref ?? null,
      worker,
      model,
      reasoningEffort: effort,
      profile: r.profile,
      gateway: r.gateway,
      mode,
      type: t.type ?? null,
      priority: t.priority ?? defaults.priority,
      timeoutS: t.timeout_s ?? defaults.timeoutS,
      allowedPaths: t.allowed_paths ?? [],
      successCriteria: t.success_criteria ?? [],
      verify: t.verify ?? [],
      contextPack: ctx.cachelab.resolvePackRef(db, t.context_pack ?? parent?.contextPack ?? null, f('context_pack')),
      metadata: t.metadata ?? {},
      depth: ctx.depth,
      status,
      approvedAt: waits ? null : now,
      dependsOn: deps[i],
    };
  });

  const budgets = rootBudgets(inputs, rows, new Set(ids), config, ctx.authority);
  // Insert in dependency order so foreign keys hold.
  for (const i of order) {
    const original = redactNewTask(rows[i]);
    insertTask(db, rows[i], now);
    ctx.cachelab.assignCohort(db, config, rows[i]);
    if (original) sealSecrets(db, ctx.homeRoot, rows[i].id, original);
  }
  for (const [rootId, budget] of budgets) setRootBudget(db, rootId, budget);
  // A fleet: where each task comes from, so a runner elsewhere can find its repository.
  if (storeCapabilities(db).sharedByHosts) stampOrigin(db, config, rows);
  for (const i of order) {
    const r = rows[i];
    appendEvent(db, r.id, 'task.created', {
      name: r.name, kind: r.kind, status: r.status, worker: r.worker, mode: r.mode, rootId: r.rootId, dependsOn: r.dependsOn,
      ...(routedBy[i] ? { profile: r.profile, routedBy: routedBy[i] } : {}),
      ...(lowered[i] ? { modeAsked: lowered[i], approvalBy: 'a person' } : {}),
    }, now);
  }
  return ids.map((id) => getTask(db, id)!);
}

/**
 * The budgets this batch sets, by root: only a tree the batch creates can get one, and one tree gets
 * one budget (the same on every task that repeats it).
 */
function rootBudgets(inputs: ParsedTaskInput[], rows: NewTaskRow[], newIds: Set<string>, config: Config, authority: Authority): Map<string, RootBudget> {
  const out = new Map<string, RootBudget>();
  inputs.forEach((t, i) => {
    if (!t.budget) return;
    const field = fieldOf(inputs, i, 'budget');
    if (authority === 'agent') checkCeiling(config, { ...guardFieldsOf(t.budget), ...rootFieldsOf(t.budget) }, field);
    const root = rows[i].rootId;
    if (!newIds.has(root)) throw new AppError('invalid_input', `${field}: a budget is set when a task tree is created; this task joins tree ${root}`, { field });
    const seen = out.get(root);
    if (seen && JSON.stringify(seen) !== JSON.stringify(t.budget)) throw new AppError('invalid_input', `${field}: differs from the budget another task of the same tree sets`, { field });
    out.set(root, t.budget);
  });
  return out;
}


function fieldOf(inputs: ParsedTaskInput[], i: number, name: string): string {
  return inputs.length === 1 ? name : `tasks[${i}].${name}`;
}

/**
 * A task's default name: the first line of its objective, redacted before it is cut (a secret cut
 * short no longer matches its shape), and never cut inside a `[REDACTED]` marker.
 */
export function nameFromObjective(objective: string): string {
  const line = redactText(objective).trim().split('\n')[0].trim();
  if (line.length <= 80) return line || 'task';
  let cut = 77;
  const marker = line.lastIndexOf(REDACTED, cut);
  if (marker !== -1 && marker + REDACTED.length > cut) cut = marker;
  return line.slice(0, cut).trimEnd() + '…';
}

function topoOrder(ids: string[], deps: string[][]): number[] {
  const index = new Map(ids.map((id, i) => [id, i]));
  const indeg = ids.map(() => 0);
  const out: number[][] = ids.map(() => []);
  deps.forEach((list, i) => {
    for (const d of list) {
      const j = index.get(d);
      if (j === undefined) continue;
      indeg[i]++;
      out[j].push(i);
    }
  });
  const queue = ids.map((_, i) => i).filter((i) => indeg[i] === 0);
  const order: number[] = [];
  while (queue.length) {
    const i = queue.shift()!;
    order.push(i);
    for (const k of out[i]) if (--indeg[k] === 0) queue.push(k);
  }
  return order;
}

function rejectCycles(ids: string[], deps: string[][], inputs: ParsedTaskInput[]): void {
  const order = topoOrder(ids, deps);
  if (order.length === ids.length) return;
  const inCycle = ids.map((_, i) => i).filter((i) => !order.includes(i));
  const names = inCycle.map((i) => inputs[i].ref ?? `tasks[${i}]`);
  throw new AppError('invalid_input', `depends_on: dependency cycle among ${names.join(', ')}`, { field: 'depends_on', cycle: names });
}

