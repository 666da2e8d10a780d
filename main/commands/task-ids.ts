import { resolveTaskId } from '../store/tasks.js';
import type { Db } from '../store/db.js';

/**
 * Top-level input fields that name existing tasks. Nested ones are left alone on purpose: a batch's
 * `tasks[].depends_on` may name refs local to the batch, not task ids.
 */
const SINGLE_ID_FIELDS = ['id', 'task_id', 'root_id', 'parent_id'] as const;
const ID_LIST_FIELDS = ['ids', 'depends_on'] as const;

/**
 * `raw` with every task id prefix (≥ 6 characters, unique) in its id fields replaced by the full id, so
 * every face (CLI, MCP, console, library) accepts the 8-character ids the UI shows. Runs before schema
 * validation; what is not a prefix is passed through for the schema to judge.
 */
export function resolveTaskRefs(db: Db, raw: unknown): unknown {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return raw;
  const input = raw as Record<string, unknown>;
  let out: Record<string, unknown> | null = null;
  const set = (key: string, value: unknown) => {
    out ??= { ...input };
    out[key] = value;
  };
  for (const key of SINGLE_ID_FIELDS) {
    const v = input[key];
    if (typeof v === 'string') {
      const full = resolveTaskId(db, v, key);
      if (full !== v) set(key, full);
    }
  }
  for (const key of ID_LIST_FIELDS) {
    const v = input[key];
    if (!Array.isArray(v)) continue;
    const full = v.map((x, i) => (typeof x === 'string' ? resolveTaskId(db, x, `${key}[${i}]`) : x));
    if (full.some((x, i) => x !== v[i])) set(key, full);
  }
  return out ?? raw;
}
