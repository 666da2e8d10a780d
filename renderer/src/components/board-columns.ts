import type { TaskStatus, TaskView } from '../api/types.js';

export interface BoardColumn {
  key: string;
  title: string;
  /** A word under the title: what the column holds, or what the person is to do. */
  hint: string;
  statuses: readonly TaskStatus[];
  /** Columns that wait for the person are drawn apart. */
  waitsForYou?: boolean;
}

/** The board's columns, left to right as work moves; every status is in exactly one (a unit test holds it). */
export const BOARD_COLUMNS: readonly BoardColumn[] = [
  { key: 'queued', title: 'Queued', hint: 'waiting for a slot or a dependency', statuses: ['queued', 'blocked'] },
  { key: 'running', title: 'Running', hint: 'a worker or its checks at work', statuses: ['starting', 'running', 'verifying'] },
  { key: 'approvals', title: 'Waiting for you · approvals', hint: 'approve or reject', statuses: ['awaiting_approval'], waitsForYou: true },
  { key: 'answers', title: 'Waiting for you · answers', hint: 'a question or a permission', statuses: ['waiting_input', 'paused'], waitsForYou: true },
  { key: 'verified', title: 'Verified', hint: 'done; review and accept', statuses: ['completed'] },
  { key: 'accepted', title: 'Accepted / merged', hint: 'committed to its repository', statuses: ['accepted'] },
  { key: 'failed', title: 'Failed', hint: 'failed, timed out, cancelled or rejected', statuses: ['failed', 'timed_out', 'cancelled', 'orphaned', 'rejected'] },
];

export interface BoardFilter {
  /** '' = every repository. */
  workspace: string;
  /** '' = every root. */
  root: string;
}

/** The tasks of each column (newest first) under the filter. */
export function boardCards(tasks: Iterable<TaskView>, filter: BoardFilter): Map<string, TaskView[]> {
  const byStatus = new Map<TaskStatus, string>();
  for (const c of BOARD_COLUMNS) for (const s of c.statuses) byStatus.set(s, c.key);
  const out = new Map<string, TaskView[]>(BOARD_COLUMNS.map((c) => [c.key, []]));
  for (const t of tasks) {
    if (filter.workspace && t.workspace !== filter.workspace) continue;
    if (filter.root && t.rootId !== filter.root) continue;
    const key = byStatus.get(t.status);
    if (key) out.get(key)!.push(t);
  }
  for (const list of out.values()) list.sort((a, b) => (a.id < b.id ? 1 : -1));
  return out;
}

/** The roots among `tasks` (a root is its own rootId), newest first, for the filter. */
export function boardRoots(tasks: Iterable<TaskView>): { id: string; name: string }[] {
  return [...tasks].filter((t) => t.id === t.rootId).sort((a, b) => (a.id < b.id ? 1 : -1)).map((t) => ({ id: t.id, name: t.name }));
}

/** A card's short line: what it is, which worker, and for a verified card whether anything checked it. */
export function cardLine(t: TaskView): string {
  const parts = [t.kind, t.worker];
  if (t.status === 'completed') parts.push(t.verify.length ? 'checks passed' : 'no checks ran');
  return parts.join(' · ');
}
