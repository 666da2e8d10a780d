import { createHash } from 'node:crypto';
import { AppError } from '../core/errors.js';
import { claimClientRequest, getClientRequest, setClientRequestTasks } from '../store/client-requests.js';
import { requireTask } from '../store/tasks.js';
import type { Task } from '../tasks/types.js';
export { CLIENT_REQUEST_ID } from '../tasks/schema.js';
import type { CommandContext } from './table.js';

/** What a creating command answers besides its tasks when the call was a repeat. */
export interface Replayed {
  replayed?: true;
}

/** A short hash of every leaf of the input by its path (`tasks[1].objective`), never the values themselves. */
function fieldHashes(input: unknown, path = '', into: Record<string, string> = {}): Record<string, string> {
  if (Array.isArray(input)) {
    if (!input.length) into[path] = hash('[]');
    input.forEach((v, i) => fieldHashes(v, `${path}[${i}]`, into));
  } else if (input && typeof input === 'object') {
    const entries = Object.entries(input as Record<string, unknown>).filter(([, v]) => v !== undefined);
    if (!entries.length && path) into[path] = hash('{}');
    for (const [k, v] of entries) fieldHashes(v, path ? `${path}.${k}` : k, into);
  } else {
    into[path] = hash(JSON.stringify(input));
  }
  return into;
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/** The first field (in path order) whose value differs between two calls, or null when none does. */
function firstDifference(a: Record<string, string>, b: Record<string, string>): string | null {
  const paths = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return paths.find((p) => a[p] !== b[p]) ?? null;
}

/**
 * Run `create` (which makes the call's tasks) once per client request id, in one write transaction with
 * the id's record: a repeat with the same input returns the tasks the first call made (`replayed`), one
 * with a different input or through a different command is refused naming what differs, and nothing is
 * created either way. Without an id it is `create` in a transaction, as before.
 */
export function createOnce(
  ctx: CommandContext,
  command: string,
  input: { client_request_id?: string },
  create: () => Task[],
): { tasks: Task[]; replayed: boolean } {
  const { client_request_id: id, ...rest } = input;
  if (!id) return { tasks: ctx.engine.write(create), replayed: false };
  const fields = fieldHashes(rest);
  return ctx.engine.write(() => {
    if (claimClientRequest(ctx.engine.db, { id, command, fields })) {
      const tasks = create();
      setClientRequestTasks(ctx.engine.db, id, tasks.map((t) => t.id));
      return { tasks, replayed: false };
    }
    const first = getClientRequest(ctx.engine.db, id);
    if (!first) throw new AppError('conflict', `client_request_id: "${id}" is being used by another call right now; try again`, { field: 'client_request_id' });
    if (first.command !== command) {
      throw new AppError('invalid_input', `client_request_id: "${id}" was used for ${first.command}, not ${command}; use a new id for a new call`, { field: 'client_request_id' });
    }
    const changed = firstDifference(first.fields, fields);
    if (changed !== null) {
      throw new AppError('invalid_input', `client_request_id: "${id}" was used with a different ${changed}; the same id must carry the same input (use a new id for a new call)`, {
        field: changed,
      });
    }
    return { tasks: first.taskIds.map((t) => requireTask(ctx.engine.db, t)), replayed: true };
  });
}
