import { z } from 'zod';
import { AppError } from '../core/errors.js';
import { acceptTask } from '../isolation/accept.js';
import { handoffTask } from '../orchestration/handoff.js';
import { cancelTeam, teamReport } from '../orchestration/team-report.js';
import { teamInputSchema } from '../orchestration/team-schema.js';
import { createTeam } from '../orchestration/teams.js';
import { TASK_ID } from '../tasks/schema.js';
import { createOnce } from './client-request.js';
import { createContext, presentTask, withApproval } from './tasks.js';
import { acceptTaskCommand } from './isolation.js';
import { defineCommand, FACE_LABELS, requirePersonOrAllowed } from './table.js';

const WORKER = z.string().min(1).max(64).regex(/^[a-z0-9][a-z0-9_-]*$/, 'a worker name');

export const startTeam = defineCommand({
  name: 'start_team',
  description: 'Run a team strategy (implement_review, map_reduce, best_of_n, integrate) as one task tree.',
  input: teamInputSchema,
  readOnly: false,
  handler(ctx, input) {
    const c = createContext(ctx);
    const { client_request_id: _id, ...team } = input;
    const { tasks, replayed } = createOnce(ctx, 'start_team', input, () => createTeam(c, team));
    return {
      strategy: input.strategy,
      // The id team_report and accept_team take: an integration is its own team, inside a source's tree.
      rootId: input.strategy === 'integrate' ? tasks[0].id : tasks[0].rootId,
      tasks: tasks.map((t) => presentTask(ctx, t)),
      ...withApproval(ctx, tasks, c.lowered),
      ...(replayed ? { replayed: true as const } : {}),
    };
  },
});

export const teamReportCommand = defineCommand({
  name: 'team_report',
  description: "A team's members, state, outcome and the task accept_team would take, given any of its tasks.",
  input: z.strictObject({ id: TASK_ID }),
  readOnly: true,
  handler(ctx, input) {
    return teamReport(ctx.engine.db, input.id);
  },
});

export const acceptTeam = defineCommand({
  name: 'accept_team',
  description: "Accept a team's result: the reviewed change, best_of_n's winner, the synthesis or the integration.",
  // The same options as accept_task: which task is taken is the team's answer.
  input: acceptTaskCommand.input,
  readOnly: false,
  async handler(ctx, input) {
    requirePersonOrAllowed(ctx, 'accept_team');
    const report = teamReport(ctx.engine.db, input.id);
    if (!report.acceptable) {
      throw new AppError('conflict', `team ${report.rootId} (${report.strategy}) has no result to accept: it is ${report.state}`, { state: report.state });
    }
    const r = await acceptTask(ctx.engine, report.acceptable, { branch: input.branch, unverified: input.unverified, by: FACE_LABELS[ctx.face] });
    return { accepted: report.acceptable, task: r.task, commit: r.commit, branch: r.branch, files: r.files };
  },
});

export const handoffTaskCommand = defineCommand({
  name: 'handoff_task',
  description: 'Continue an ended task on another worker in the same worktree, with a summary of the last attempt.',
  input: z.strictObject({ id: TASK_ID, worker: WORKER, note: z.string().min(1).max(8192).optional() }),
  readOnly: false,
  handler(ctx, input) {
    const task = ctx.engine.write(() => handoffTask(createContext(ctx), input.id, input.worker, { by: FACE_LABELS[ctx.face], note: input.note }));
    return { task: presentTask(ctx, task), ...withApproval(ctx, [task]) };
  },
});

export const cancelTeamCommand = defineCommand({
  name: 'cancel_team',
  description: 'Cancel every task of a team that has not ended.',
  input: z.strictObject({ id: TASK_ID }),
  readOnly: false,
  destructive: true,
  handler(ctx, input) {
    return { cancelled: ctx.engine.write(() => cancelTeam(ctx.engine.db, input.id, FACE_LABELS[ctx.face])) };
  },
});

export const TEAM_COMMANDS = [startTeam, teamReportCommand, acceptTeam, handoffTaskCommand, cancelTeamCommand];
