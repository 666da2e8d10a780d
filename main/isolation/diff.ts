import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { redactText } from '../core/redact.js';
import type { EngineContext } from '../tasks/engine-context.js';
import { requireTask } from '../store/tasks.js';
import { branchTip } from '../platform/git/branches.js';
import { git, splitZ } from '../platform/git/git-exec.js';
import { getAllocation } from '../store/worktrees.js';
import { isPrivateRepo, privateTip, SAFE_GIT } from './private-repo.js';

/** Diffs larger than this are cut, with a note (the console and MCP clients stay responsive). */
export const DIFF_CAP_BYTES = 256 * 1024;

export interface TaskDiff {
  id: string;
  base: string | null;
  head: string | null;
  branch: string | null;
  files: string[];
  diff: string;
  bytes: number;
  truncated: boolean;
  note: string | null;
  source: 'branch' | 'artifact' | 'none';
}

function cap(text: string, max: number): { text: string; truncated: boolean } {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= max) return { text, truncated: false };
  const cut = buf
    .subarray(0, max)
    .toString('utf8')
    .replace(/\uFFFD+$/, '');
  return { text: cut.slice(0, cut.lastIndexOf('\n') + 1), truncated: true };
}

/**
 * The task's diff from its base: live from the task branch when it still exists, else the latest diff
 * artifact. Redacted and capped at `maxBytes` (the note says how much was left out).
 */
export async function taskDiff(engine: EngineContext, id: string, maxBytes = DIFF_CAP_BYTES): Promise<TaskDiff> {
  const task = requireTask(engine.db, id);
  const alloc = getAllocation(engine.db, id);
  let text = '';
  let files: string[] = [];
  let source: TaskDiff['source'] = 'none';
  let head: string | null = null;
  // The task's commits are in its private repository until accept brings them into the user's.
  const where = alloc && isPrivateRepo(alloc.path) ? alloc.path : alloc && existsSync(alloc.repo) ? alloc.repo : null;
  if (alloc && where) {
    head = alloc.headCommit ?? (where === alloc.path ? await privateTip(where, alloc.branch) : await branchTip(where, alloc.branch));
    if (head) {
      try {
        const args = ['diff', '--no-color', '--no-ext-diff', '--no-textconv'];
        text = await git(where, [...SAFE_GIT, ...args, alloc.baseCommit, head], { raw: true });
        files = splitZ(await git(where, [...SAFE_GIT, 'diff', '--name-only', '--no-renames', '-z', alloc.baseCommit, head], { raw: true }));
        source = 'branch';
      } catch {
        // the commits are gone (branch deleted and collected): fall back to the artifact
        text = '';
        files = [];
      }
    }
  }
  if (source === 'none') {
    for (let a = task.attempt; a >= 1; a--) {
      const p = join(engine.home.artifacts, id, `diff-${a}.patch`);
      if (existsSync(p)) {
        text = readFileSync(p, 'utf8');
        files = [...text.matchAll(/^diff --git a\/(.+?) b\//gm)].map((m) => m[1]);
        source = 'artifact';
        break;
      }
    }
  }
  const redacted = redactText(text);
  const bytes = Buffer.byteLength(redacted);
  const { text: diff, truncated } = cap(redacted, maxBytes);
  const note = truncated
    ? `diff truncated: showing ${Buffer.byteLength(diff)} of ${bytes} bytes (${files.length} files)`
    : source === 'none'
      ? task.kind === 'execute'
        ? 'no changes recorded yet'
        : `${task.kind} tasks do not change files`
      : null;
  // A worker can name a file after a token: the list is shown as the diff is, redacted.
  return { id, base: alloc?.baseCommit ?? null, head, branch: alloc?.branch ?? null, files: files.map(redactText), diff, bytes, truncated, note, source };
}
