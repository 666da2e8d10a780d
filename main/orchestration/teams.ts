import { AppError } from '../core/errors.js';
import { getTask } from '../store/tasks.js';
import { createTasks, nameFromObjective, resolveWorkspace, type CreateContext } from '../tasks/create.js';
import type { ParsedTaskInput } from '../tasks/schema.js';
import type { Task } from '../tasks/types.js';
import type { TeamTag } from '../tasks/contract/team-tag.js';
import type { TeamInput } from './team-schema.js';

type Of<S extends TeamInput['strategy']> = Extract<TeamInput, { strategy: S }>;

/**
 * Expand a team into its DAG of tasks, all or nothing, in the caller's write transaction — the same
 * path (createTasks: validation, routing, approval by mode) a planner's DAG takes. The first task is
 * the root of the team's tree; steps that depend on results (a next review round, a worker judge) are
 * added later by the team driver (team-driver.ts) in the same tree.
 */
export function createTeam(ctx: CreateContext, input: TeamInput): Task[] {
  switch (input.strategy) {
    case 'implement_review':
      return createImplementReview(ctx, input);
    case 'map_reduce':
      return createMapReduce(ctx, input);
    case 'best_of_n':
      return createBestOfN(ctx, input);
    case 'integrate':
      return createIntegration(ctx, input);
  }
}

/** The task fields every member shares, minus the team's own options. */
function common(input: TeamInput): Omit<ParsedTaskInput, 'kind' | 'objective'> & { objective: string } {
  const { strategy: _s, name: _n, ...rest } = input as TeamInput & { workers?: unknown; rounds?: unknown; parts?: unknown; synthesizer?: unknown; contribute?: unknown; judge?: unknown; sources?: unknown };
  const { workers: _w, rounds: _r, parts: _p, synthesizer: _y, contribute: _c, judge: _j, sources: _o, ...task } = rest;
  // An integration has neither of its own: it takes them from its sources (createIntegration).
  return { ...task, objective: input.objective ?? '', workspace: input.workspace ?? '' };
}

function label(input: TeamInput): string {
  return input.name ?? nameFromObjective(input.objective ?? input.strategy);
}

function tagged(metadata: Record<string, unknown> | undefined, team: TeamTag): Record<string, unknown> {
  return { ...(metadata ?? {}), team };
}

/**
 * Refuse a worker the engine does not know, naming the team's own field (`workers`, `synthesizer`):
 * createTasks would name the member it expanded to (`tasks[3].worker`), which no form or flag has.
 */
function requireKnownWorker(ctx: CreateContext, field: string, worker: string): void {
  if (ctx.knownWorkers && !ctx.knownWorkers.includes(worker)) {
    throw new AppError('invalid_input', `${field}: unknown worker "${worker}" (known: ${ctx.knownWorkers.join(', ')})`, { field });
  }
}

function createImplementReview(ctx: CreateContext, input: Of<'implement_review'>): Task[] {
  const [implementer, reviewer] = input.workers;
  for (const w of input.workers) requireKnownWorker(ctx, 'workers', w);
  if (implementer === reviewer) throw new AppError('invalid_input', 'workers: the reviewer must be another worker than the implementer', { field: 'workers' });
  const base = common(input);
  const [impl] = createTasks(ctx, [
    {
      ...base,
      kind: 'execute',
      worker: implementer,
      name: `implement_review: ${label(input)} [${implementer}]`.slice(0, 200),
      metadata: tagged(input.metadata, { strategy: 'implement_review', role: 'implement', rounds: input.rounds }),
    },
  ]);
  return [impl, ...createTasks(ctx, [reviewRound(impl, reviewer, 1, input.rounds)])];
}

/** Review round `round` of an implement_review team: read-only, by the reviewer, after the implementer. */
export function reviewRound(impl: Task, reviewer: string, round: number, rounds: number): ParsedTaskInput {
  const objective = [
    `Review the change LightWorker task ${impl.id} made for this objective (round ${round} of at most ${rounds}):`,
    impl.objective,
    'Its diff and LightWorker\'s verification of it are below under "Team inputs". Do not change any file.',
    'Answer with verdict "approve" when it meets the objective, else "request_changes" with one issue per finding the implementer must fix.',
  ].join('\n\n');
  return {
    kind: 'review',
    objective,
    workspace: impl.workspace,
    worker: reviewer,
    mode: impl.mode,
    priority: impl.priority,
    gateway: impl.gateway ?? undefined,
    timeout_s: impl.timeoutS,
    context_pack: impl.contextPack ?? undefined,
    name: `review ${round}/${rounds}: ${impl.name.replace(/^implement_review: /, '').replace(/ \[[^\]]+\]$/, '')} [${reviewer}]`.slice(0, 200),
    depends_on: [impl.id],
    parent_id: impl.id,
    metadata: tagged(stripTeam(impl.metadata), { strategy: 'implement_review', role: 'review', round, rounds }),
  };
}

function stripTeam(metadata: Record<string, unknown>): Record<string, unknown> {
  const { team: _t, ...rest } = metadata;
  return rest;
}

function createMapReduce(ctx: CreateContext, input: Of<'map_reduce'>): Task[] {
  for (const w of input.workers) requireKnownWorker(ctx, 'workers', w);
  if (input.synthesizer) requireKnownWorker(ctx, 'synthesizer', input.synthesizer);
  const base = common(input);
  const parts = input.parts ?? input.workers.map(() => null);
  const n = parts.length;
  const contributors: ParsedTaskInput[] = parts.map((part, i) => {
    const worker = input.workers[i % input.workers.length];
    return {
      ...base,
      ref: `c${i + 1}`,
      kind: input.contribute,
      worker,
      objective: part ? `${part}\n\n(This is part ${i + 1} of ${n} of: ${input.objective})` : input.objective,
      name: `map_reduce ${i + 1}/${n}: ${part ? nameFromObjective(part) : label(input)} [${worker}]`.slice(0, 200),
      metadata: tagged(input.metadata, { strategy: 'map_reduce', role: 'contribute', round: i + 1 }),
    };
  });
  const synthesizer = input.synthesizer ?? input.workers[0];
  const synth: ParsedTaskInput = {
    ...base,
    ref: 'synthesis',
    kind: input.contribute,
    worker: synthesizer,
    objective: `${input.objective}\n\nCombine the ${n} contributions under "Team inputs" into one ${input.contribute === 'execute' ? 'change in this worktree' : 'answer'}: keep what is right, resolve disagreements, say which contribution each part comes from.`,
    name: `map_reduce synthesis: ${label(input)} [${synthesizer}]`.slice(0, 200),
    depends_on: contributors.map((c) => c.ref!),
    metadata: tagged(input.metadata, { strategy: 'map_reduce', role: 'synthesize' }),
  };
  return createTasks(ctx, [...contributors, synth]);
}

function createBestOfN(ctx: CreateContext, input: Of<'best_of_n'>): Task[] {
  if (new Set(input.workers).size !== input.workers.length) throw new AppError('invalid_input', 'workers: lists a candidate twice (use worker:model to run one worker with several models)', { field: 'workers' });
  const base = common(input);
  const n = input.workers.length;
  if (input.judge !== 'rule' && ctx.knownWorkers && !ctx.knownWorkers.includes(input.judge)) {
    throw new AppError('invalid_input', `judge: unknown worker "${input.judge}" (known: ${ctx.knownWorkers.join(', ')}, or "rule")`, { field: 'judge' });
  }
  if (input.judge !== 'rule' && input.workers.some((w) => w.split(':')[0] === input.judge)) {
    throw new AppError('invalid_input', `judge: "${input.judge}" is one of the candidates; pick another worker or "rule"`, { field: 'judge' });
  }
  return createTasks(
    ctx,
    input.workers.map((spec, i) => {
      const [worker, model] = spec.split(':');
      return {
        ...base,
        kind: 'execute' as const,
        worker,
        ...(model ? { model } : {}),
        name: `best_of_n ${i + 1}/${n}: ${label(input)} [${spec}]`.slice(0, 200),
        metadata: tagged(input.metadata, { strategy: 'best_of_n', role: 'candidate', round: i + 1, judge: input.judge }),
      };
    }),
  );
}

function createIntegration(ctx: CreateContext, input: Of<'integrate'>): Task[] {
  if (new Set(input.sources).size !== input.sources.length) throw new AppError('invalid_input', 'sources: lists a task twice', { field: 'sources' });
  const sources = input.sources.map((id, i) => {
    const t = getTask(ctx.db, id);
    if (!t) throw new AppError('invalid_input', `sources[${i}]: no task ${id}`, { field: `sources[${i}]` });
    if (t.kind !== 'execute') throw new AppError('invalid_input', `sources[${i}]: task ${id} is a ${t.kind} task; only execute tasks have commits to integrate`, { field: `sources[${i}]` });
    return t;
  });
  const workspace = input.workspace ? resolveWorkspace(input.workspace) : sources[0].workspace;
  const other = sources.find((s) => s.workspace !== workspace);
  if (other) throw new AppError('invalid_input', `sources: task ${other.id} works in ${other.workspace}, not ${workspace}; integrate tasks of one repository`, { field: 'sources' });
  // Verify with what the sources were verified with, unless told otherwise (deduplicated, in order).
  const verify = input.verify ?? [...new Map(sources.flatMap((s) => s.verify).map((v) => [JSON.stringify(v), v])).values()];
  const objective = input.objective ?? `Integrate the verified changes of ${sources.length} tasks onto one branch: ${sources.map((s) => `${s.id} (${s.name})`).join(', ')}.`;
  const base = common({ ...input, objective });
  // The integrator is no worker CLI, so it is not among the known workers.
  return createTasks({ ...ctx, knownWorkers: undefined }, [
    {
      ...base,
      kind: 'execute',
      workspace,
      verify,
      // No worker CLI runs: LightWorker merges the sources itself (runner/run-task.ts).
      worker: INTEGRATOR,
      name: `integrate: ${input.name ?? `${sources.length} tasks`} [${INTEGRATOR}]`.slice(0, 200),
      depends_on: input.sources,
      metadata: tagged(input.metadata, { strategy: 'integrate', role: 'integrate', sources: input.sources }),
    },
  ]);
}

/** The worker name an integration task carries: LightWorker itself merges, verifies and reports. */
export const INTEGRATOR = 'lightworker';
