import { z } from 'zod';
import { listEvents, verifyAudit } from '../store/events.js';
import { requireTask } from '../store/tasks.js';
import { TASK_ID } from '../tasks/schema.js';
import { checkHomeSignature } from '../tasks/secrets.js';
import { defineCommand } from './table.js';

export const getEvents = defineCommand({
  name: 'get_events',
  description: 'Events after cursor (oldest first) or newest; gives next cursor.',
  input: z.strictObject({
    cursor: z.number().int().min(0).default(0),
    task_id: TASK_ID.optional(),
    tree: z.boolean().default(false).describe('with task_id: whole tree'),
    types: z.array(z.string().min(1).max(64)).max(50).optional(),
    limit: z.number().int().min(1).max(5000).default(200),
    before: z.number().int().min(1).optional().describe('only events below this seq'),
    newest: z.boolean().default(false).describe('the newest limit'),
  }),
  readOnly: true,
  handler(ctx, input) {
    const db = ctx.engine.db;
    let rootId: string | undefined;
    if (input.task_id) {
      const t = requireTask(db, input.task_id);
      if (input.tree) rootId = t.rootId;
    }
    return listEvents(db, {
      after: input.cursor,
      taskId: rootId ? undefined : input.task_id,
      rootId,
      types: input.types,
      limit: input.limit,
      before: input.before,
      newest: input.newest,
    });
  },
});

export const auditVerify = defineCommand({
  name: 'audit_verify',
  description: 'Check the event log hash chain; reports the first edited or deleted event.',
  input: z.strictObject({}),
  readOnly: true,
  handler(ctx) {
    return verifyAudit(ctx.engine.db, { checkSignature: (text, sig) => checkHomeSignature(ctx.engine.home.root, text, sig) });
  },
});

export const EVENT_COMMANDS = [getEvents, auditVerify];
