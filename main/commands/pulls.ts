import { z } from 'zod';
import { openPullRequest } from '../isolation/pull-request.js';
import { pollPull } from '../isolation/pull-watch.js';
import { listReviewComments, reviewTask } from '../isolation/review-comments.js';
import { AppError } from '../core/errors.js';
import { getPull, type PullRecord } from '../store/pulls.js';
import { requireTask } from '../store/tasks.js';
import { requireTaskHere } from '../scheduler/fleet.js';
import { teamReport } from '../orchestration/team-report.js';
import { noNul, TASK_ID } from '../tasks/schema.js';
import { authorityOf, defineCommand, FACE_LABELS, requirePersonOrAllowed } from './table.js';
import { withApproval } from './tasks.js';

const BRANCH = z
  .string()
  .min(1)
  .max(200)
  .regex(/^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*\.lock$)[A-Za-z0-9._/-]+(?<![/.])$/, 'a branch name (letters, digits, . _ / -)');

/** A pull record as callers see it: where its token comes from, never a token. */
function shown(p: PullRecord | null) {
  if (!p) return null;
  const { seenComments, sentFailure, ...rest } = p;
  return { ...rest, seenComments: seenComments.length, failureSent: sentFailure !== null };
}

export const openPullRequestCommand = defineCommand({
  name: 'open_pull_request',
  description: "Push a verified task's branch; open a draft PR.",
  input: z.strictObject({
    id: TASK_ID,
    branch: BRANCH.optional(),
    base: BRANCH.optional(),
    draft: z.boolean().optional(),
    unverified: z.boolean().default(false),
    /** `id` is any task of a team: the PR is opened for the task accept_team would take (reviewed change, winner, integration). */
    team: z.boolean().default(false),
  }),
  readOnly: false,
  async handler(ctx, input) {
    // It writes to a shared remote and the forge: a person's act, like accept.
    requirePersonOrAllowed(ctx, 'open_pull_request');
    let id = input.id;
    if (input.team) {
      const report = teamReport(ctx.engine.db, input.id);
      if (!report.acceptable) throw new AppError('conflict', `team ${report.rootId} (${report.strategy}) has no result to open a pull request for: it is ${report.state}`, { state: report.state });
      id = report.acceptable;
    }
    requireTaskHere(ctx.engine.db, ctx.engine.config, requireTask(ctx.engine.db, id), 'open a pull request for');
    const pull = await openPullRequest(ctx.engine, id, { branch: input.branch, base: input.base, draft: input.draft, unverified: input.unverified, by: FACE_LABELS[ctx.face] });
    return { pull: shown(pull) };
  },
});

export const getPullRequestCommand = defineCommand({
  name: 'get_pull_request',
  description: "A task's pull request and what the watcher last saw (refresh: look at the forge now).",
  input: z.strictObject({ id: TASK_ID, refresh: z.boolean().default(false) }),
  // refresh is a poll: it records what it saw and may send a fix turn, like the leader's watch.
  readOnly: false,
  async handler(ctx, input) {
    let pull = getPull(ctx.engine.db, requireTask(ctx.engine.db, input.id).id);
    if (!pull) throw new AppError('not_found', `task ${input.id} has no pull request; open one with lightworker pr ${input.id}`, { field: 'id' });
    if (input.refresh && pull.state === 'open') pull = await pollPull(ctx.engine, pull);
    return { pull: shown(pull) };
  },
});

const COMMENT = z.strictObject({
  file: noNul(z.string().min(1).max(4096)),
  line: z.number().int().min(1).max(10_000_000),
  end_line: z.number().int().min(1).max(10_000_000).optional(),
  text: noNul(z.string().trim().min(1).max(4000)),
});

export const reviewTaskCommand = defineCommand({
  name: 'review_task',
  description: "Comment on diff lines; send: all unsent as one follow-up turn.",
  input: z.strictObject({ id: TASK_ID, comments: z.array(COMMENT).max(100).default([]), send: z.boolean().default(false) }),
  readOnly: false,
  handler(ctx, input) {
    if (!input.comments.length && !input.send) throw new AppError('invalid_input', 'comments: give at least one comment, or send: true to send those already made', { field: 'comments' });
    const comments = input.comments.map((c) => ({ file: c.file, line: c.line, endLine: c.end_line, text: c.text }));
    const r = ctx.engine.write(() => reviewTask(ctx.engine.db, ctx.engine.config, input.id, { comments, send: input.send, by: FACE_LABELS[ctx.face], authority: authorityOf(ctx) }));
    return { ...r, ...(input.send ? withApproval(ctx, [r.task]) : {}) };
  },
});

export const listReviewCommentsCommand = defineCommand({
  name: 'list_review_comments',
  description: "A task's review comments on its diff, with the attempt each was sent as.",
  input: z.strictObject({ id: TASK_ID }),
  readOnly: true,
  handler(ctx, input) {
    return { comments: listReviewComments(ctx.engine.db, requireTask(ctx.engine.db, input.id).id) };
  },
});

export const PULL_COMMANDS = [openPullRequestCommand, getPullRequestCommand, reviewTaskCommand, listReviewCommentsCommand];
