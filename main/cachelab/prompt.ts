import type { Config } from '../core/config.js';
import { AppError } from '../core/errors.js';
import type { Db } from '../store/db.js';
import type { Task, TaskKind } from '../tasks/types.js';
import { BUILTIN_PROFILE_SPECS, type ProfileSpec } from '../core/profiles.js';
import { findContextPack, type ContextPack } from './context-packs.js';
import { byteLength, canonicalJson, sha256 } from './hash.js';

/**
 * The prompt protocol. Everything stable comes first — protocol id, role by kind, profile
 * and its contract, result contract, global rules, role rules, optional context pack — so every task
 * of one cache cohort sends a byte-identical prefix; the task-specific part (objective, workspace,
 * allowed paths, criteria, verify commands) comes last. Bump the id whenever the layout or any fixed
 * text changes: it is part of the cohort key.
 */
export const PROMPT_PROTOCOL = 'lw-prompt/3';

const ROLE: Record<TaskKind, string> = {
  plan: 'You are the planner. Break the goal into at most 12 bounded tasks with explicit dependencies. Do not change any file.',
  explore: 'You are an explorer. Read the workspace and answer the objective. Do not change any file.',
  review: 'You are a reviewer. Review the work described in the objective. Do not change any file.',
  execute: 'You are an implementer working in an isolated git worktree. Make the change the objective asks for, inside the allowed paths only.',
};

const GLOBAL_RULES = [
  'Work only inside the working directory you were started in.',
  'Do not commit, merge, push or publish anything; LightWorker reviews and applies changes itself.',
  'LightWorker runs the verification commands itself after you finish; do not claim they pass.',
  'Never print, copy or invent credentials; refer to them by the name of their environment variable.',
  'If only a person can unblock you (a permission your sandbox does not give you, or a question only they can answer), stop and finish with `escalation` set (type question or permission_request; say what and why); otherwise set it to null. The answer comes back in this session.',
  'Finish with one JSON object that matches the result contract, and nothing after it.',
];

const ROLE_RULES: Record<TaskKind, string[]> = {
  plan: [
    'Give every task a short unique id; depends_on names only ids of this plan.',
    'Prefer independent tasks that can run in parallel; add a dependency only where an output is needed.',
    'Each task states its own objective, success criteria and verification commands.',
  ],
  explore: [
    'Name files and line numbers for every finding.',
    'Say what you could not determine instead of guessing.',
  ],
  review: [
    'Report concrete issues with file, severity and a one-line reason.',
    'Approve only when no high-severity issue remains.',
  ],
  execute: [
    'Keep the change minimal and focused on the objective.',
    'List every file you changed in files_changed.',
  ],
};

export interface PromptOptions {
  /** JSON Schema of the final answer (null: free text). */
  resultSchema: Record<string, unknown> | null;
  /** For the profile contract (config.toml [profiles] wins over the built-ins). */
  config?: Config;
  /** The pack text; when omitted it is looked up in `db` by `task.contextPack`. */
  contextPack?: ContextPack | null;
  db?: Db;
}

export interface BuiltPrompt {
  text: string;
  /** The stable part (identical for every task of one cohort). */
  stablePrefix: string;
  protocol: string;
  /** sha256 hex of the profile contract, result schema and pack (null when absent). */
  contractHash: string | null;
  schemaHash: string | null;
  schemaBytes: number;
  pack: { ref: string; hash: string; bytes: number } | null;
}

/** Trim, drop empties and duplicates; `sort` for lists whose order carries no meaning. */
export function normalizeList(items: readonly string[], sort = false): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of items) {
    const s = raw.normalize('NFC').replace(/\r\n?/g, '\n').trim();
    if (s && !seen.has(s)) {
      seen.add(s);
      out.push(s);
    }
  }
  return sort ? out.sort() : out;
}

const bullets = (items: string[]) => items.map((s) => `- ${s}`).join('\n');

/** The profile's contract as one deterministic line, or null without a profile. */
export function profileContract(config: Config | undefined, profile: string | null): string | null {
  if (!profile) return null;
  const spec: ProfileSpec | undefined = config?.profiles[profile] ?? BUILTIN_PROFILE_SPECS[profile];
  if (!spec) return `${profile}: (no contract)`;
  return `${profile}: ${canonicalJson({ kinds: [...spec.kinds].sort(), model: spec.model ?? null, reasoning_effort: spec.reasoning_effort, worker: spec.worker ?? null })}`;
}

function resolvePack(task: Task, opts: PromptOptions): ContextPack | null {
  if (opts.contextPack !== undefined) return opts.contextPack;
  if (!task.contextPack || !opts.db) return null;
  const pack = findContextPack(opts.db, task.contextPack);
  if (!pack) throw new AppError('not_found', `context_pack: the task's context pack "${task.contextPack}" is not in this home`, { field: 'context_pack' });
  return pack;
}

/** Build one first-turn prompt: stable part first, task-specific part last. */
export function buildPrompt(task: Task, opts: PromptOptions): BuiltPrompt {
  const contract = profileContract(opts.config, task.profile);
  const schema = opts.resultSchema ? canonicalJson(opts.resultSchema) : null;
  const pack = resolvePack(task, opts);
  const stable = [
    `[${PROMPT_PROTOCOL}]`,
    `# Role\n${ROLE[task.kind]}`,
    contract ? `# Profile\n${contract}` : '',
    schema ? `# Result contract (JSON Schema)\n${schema}` : '',
    `# Rules\n${bullets(GLOBAL_RULES)}`,
    `# Role rules\n${bullets(ROLE_RULES[task.kind])}`,
    pack ? `# Context pack ${pack.name}@${pack.version}\n${pack.text.trimEnd()}` : '',
  ].filter(Boolean).join('\n\n');
  const verify = task.verify.map((v) => (Array.isArray(v) ? v.join(' ') : v));
  const specific = [
    `# Task\n${normalizeList([task.objective])[0] ?? ''}`,
    `# Workspace\n${task.workspace}`,
    task.allowedPaths.length ? `# Allowed paths\n${bullets(normalizeList(task.allowedPaths, true))}` : '',
    task.successCriteria.length ? `# Success criteria\n${bullets(normalizeList(task.successCriteria))}` : '',
    verify.length ? `# Verification LightWorker will run\n${bullets(normalizeList(verify))}` : '',
  ].filter(Boolean).join('\n\n');
  return {
    text: `${stable}\n\n${specific}\n`,
    stablePrefix: stable,
    protocol: PROMPT_PROTOCOL,
    contractHash: contract ? sha256(contract) : null,
    schemaHash: schema ? sha256(schema) : null,
    schemaBytes: schema ? byteLength(schema) : 0,
    pack: pack ? { ref: `${pack.name}@${pack.version}`, hash: pack.hash, bytes: pack.bytes } : null,
  };
}

/** The naive layout (task text first), for the bench's comparison only. */
export function buildNaivePrompt(task: Task, opts: PromptOptions): string {
  const built = buildPrompt(task, opts);
  const specificStart = built.text.indexOf('\n\n# Task\n');
  return `${built.text.slice(specificStart + 2)}\n${built.stablePrefix}\n`;
}

/** The follow-up turn after failed verification (auto-repair). */
export function buildRepairPrompt(failures: string): string {
  return `LightWorker ran the verification commands and they failed. Fix the cause, then answer again with the result contract.\n\n# Verification output\n${failures}\n`;
}

/** The `worker.prompt` event: hashes and byte counts only, never prompt text. */
export function promptEventPayload(p: BuiltPrompt, extra: { cohort: string | null; model: string | null; sandbox: string; attempt: number }): Record<string, unknown> {
  return {
    protocol: p.protocol,
    cohort: extra.cohort,
    attempt: extra.attempt,
    model: extra.model,
    sandbox: extra.sandbox,
    promptHash: sha256(p.text),
    promptBytes: byteLength(p.text),
    stableHash: sha256(p.stablePrefix),
    stableBytes: byteLength(p.stablePrefix),
    schemaHash: p.schemaHash,
    schemaBytes: p.schemaBytes,
    packHash: p.pack?.hash ?? null,
    packBytes: p.pack?.bytes ?? 0,
  };
}
