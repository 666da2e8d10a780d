import { z } from 'zod';
import { acceptTask } from '../isolation/accept.js';
import { DIFF_CAP_BYTES, taskDiff } from '../isolation/diff.js';
import { openInEditor } from '../isolation/editor.js';
import { pruneWorkspaces } from '../isolation/prune.js';
import { requireTask } from '../store/tasks.js';
import { requireTaskHere } from '../scheduler/fleet.js';
import { TASK_ID } from '../tasks/schema.js';
import { defineCommand, FACE_LABELS, requirePersonOrAllowed } from './table.js';

export const acceptTaskCommand = defineCommand({
  name: 'accept_task',
  description: 'Apply a verified task to its source repository (or plain folder).',
  input: z.strictObject({
    id: TASK_ID,
    branch: z
      .string()
      .min(1)
      .max(256)
      .regex(/^[^\s~^:?*[\\]+$/, 'a branch name')
      .optional(),
    unverified: z.boolean().default(false),
  }),
  readOnly: false,
  async handler(ctx, input) {
    requirePersonOrAllowed(ctx, 'accept_task');
    requireTaskHere(ctx.engine.db, ctx.engine.config, requireTask(ctx.engine.db, input.id), 'accept');
    const by = FACE_LABELS[ctx.face];
    const r = await acceptTask(ctx.engine, input.id, { branch: input.branch, unverified: input.unverified, by });
    return { task: r.task, commit: r.commit, branch: r.branch, files: r.files, ...(r.copiedTo ? { copiedTo: r.copiedTo } : {}) };
  },
});

export const getTaskDiff = defineCommand({
  name: 'get_task_diff',
  description: "A task's diff from its base (redacted, capped).",
  input: z.strictObject({
    id: TASK_ID,
    max_bytes: z
      .number()
      .int()
      .min(1024)
      .max(16 * 1024 * 1024)
      .default(DIFF_CAP_BYTES),
  }),
  readOnly: true,
  async handler(ctx, input) {
    requireTaskHere(ctx.engine.db, ctx.engine.config, requireTask(ctx.engine.db, input.id), 'diff');
    return taskDiff(ctx.engine, input.id, input.max_bytes);
  },
});

export const pruneWorkspacesCommand = defineCommand({
  name: 'prune_workspaces',
  description: 'List (apply: remove) stale worktrees of ended tasks.',
  input: z.strictObject({
    apply: z.boolean().default(false),
    ttl_hours: z.number().min(0).max(100_000).optional(),
    force: z.boolean().default(false),
  }),
  readOnly: false,
  destructive: true,
  async handler(ctx, input) {
    return pruneWorkspaces(ctx.engine, {
      apply: input.apply,
      ttlHours: input.ttl_hours ?? ctx.engine.config.worktrees.ttl_hours,
      force: input.force,
    });
  },
});

export const openInEditorCommand = defineCommand({
  name: 'open_in_editor',
  description: "Open a task's worktree (else its workspace) in the user's editor ([editor] command, $VISUAL, $EDITOR, code).",
  input: z.strictObject({ id: TASK_ID }),
  readOnly: false,
  async handler(ctx, input) {
    return openInEditor(ctx.engine.config, requireTask(ctx.engine.db, input.id));
  },
});

export const ISOLATION_COMMANDS = [acceptTaskCommand, getTaskDiff, pruneWorkspacesCommand, openInEditorCommand];
