import type { Task } from '../tasks/types.js';

/** Versioned id of the prompt layout; part of the cache cohort key. */
export const PROMPT_PROTOCOL = 'lw-prompt/1';

const ROLE: Record<Task['kind'], string> = {
  plan: 'You are the planner. Break the goal into at most 12 bounded tasks with explicit dependencies. Do not change any file.',
  explore: 'You are an explorer. Read the workspace and answer the objective. Do not change any file.',
  review: 'You are a reviewer. Review the work described in the objective. Do not change any file.',
  execute: 'You are an implementer working in an isolated git worktree. Make the change the objective asks for, inside the allowed paths only.',
};

const GLOBAL_RULES = [
  'Work only inside the working directory you were started in.',
  'Do not commit, merge, push or publish anything; LightWorker reviews and applies changes itself.',
  'LightWorker runs the verification commands itself after you finish; do not claim they pass.',
  'Finish with one JSON object that matches the result contract, and nothing after it.',
];

export interface BuiltPrompt {
  text: string;
  /** Bytes of the stable part (identical for every task of the same role/profile/pack). */
  stablePrefix: string;
}

function list(items: readonly string[]): string[] {
  return [...items].map((s) => s.trim()).filter(Boolean).map((s) => `- ${s}`);
}

/**
 * Prompt layout: everything stable first (protocol, role, contract, rules, context pack), the
 * task-specific part last, so providers' prefix caches hit across tasks.
 */
export function buildPrompt(task: Task, opts: { resultSchema: Record<string, unknown> | null; contextPack?: string | null }): BuiltPrompt {
  const stable = [
    `[${PROMPT_PROTOCOL}]`,
    `# Role\n${ROLE[task.kind]}`,
    task.profile ? `# Profile\n${task.profile}` : '',
    opts.resultSchema ? `# Result contract (JSON Schema)\n${JSON.stringify(opts.resultSchema)}` : '',
    `# Rules\n${list(GLOBAL_RULES).join('\n')}`,
    opts.contextPack ? `# Context pack\n${opts.contextPack}` : '',
  ].filter(Boolean).join('\n\n');
  const specific = [
    `# Task\n${task.objective}`,
    `# Workspace\n${task.workspace}`,
    task.allowedPaths.length ? `# Allowed paths\n${list([...task.allowedPaths].sort()).join('\n')}` : '',
    task.successCriteria.length ? `# Success criteria\n${list(task.successCriteria).join('\n')}` : '',
    task.verify.length ? `# Verification LightWorker will run\n${list(task.verify.map((v) => (Array.isArray(v) ? v.join(' ') : v))).join('\n')}` : '',
  ].filter(Boolean).join('\n\n');
  return { text: `${stable}\n\n${specific}\n`, stablePrefix: stable };
}

/** The follow-up turn after failed verification (auto-repair). */
export function buildRepairPrompt(failures: string): string {
  return `LightWorker ran the verification commands and they failed. Fix the cause, then answer again with the result contract.\n\n# Verification output\n${failures}\n`;
}
