import type { LeaderEngine } from '../store/engine-handle.js';
import { taskDiff } from '../isolation/diff.js';
import { getTask, listTasks } from '../store/tasks.js';
import type { Task } from '../tasks/types.js';
import { lastVerification } from './compare.js';
import { teamTagOf } from '../tasks/contract/team-tag.js';

/** Per member: enough diff to judge a change, without one member crowding out the others. */
const DIFF_BYTES = 24 * 1024;
const RESULT_BYTES = 8 * 1024;

function capText(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max)}\n… [${s.length - max} more characters]`;
}

/** Verification as a reviewer reads it: passed/failed, each command's exit code, the tail of a failure. */
function describeVerification(engine: LeaderEngine, t: Task): string {
  if (!t.verify.length) return 'LightWorker verification: none (the task has no verify commands).';
  const v = lastVerification(engine.db, t.id);
  if (!v) return 'LightWorker verification: not run.';
  const tail = typeof v.logTail === 'string' && v.ok !== true ? `\n${capText(v.logTail, 2000)}` : '';
  return `LightWorker verification: ${v.ok === true ? 'PASSED' : 'FAILED'} (${String(v.ran ?? '?')} of ${String(v.of ?? '?')} commands ran).${tail}`;
}

async function describeMember(engine: LeaderEngine, t: Task, heading: string): Promise<string> {
  const lines = [`## ${heading} — task ${t.id} [${t.worker}${t.model ? `:${t.model}` : ''}], ${t.status}${t.error ? ` (${t.error.code}: ${capText(t.error.message, 500)})` : ''}`];
  if (t.result !== null) lines.push(`Result:\n${capText(JSON.stringify(t.result, null, 2), RESULT_BYTES)}`);
  if (t.kind === 'execute') {
    lines.push(describeVerification(engine, t));
    const d = await taskDiff(engine, t.id, DIFF_BYTES);
    lines.push(d.diff ? `Diff (${d.files.length} files${d.truncated ? `, cut to ${DIFF_BYTES} bytes` : ''}):\n\`\`\`diff\n${d.diff}\`\`\`` : `Diff: ${d.note ?? 'empty'}`);
  }
  return lines.join('\n');
}

/**
 * The "# Team inputs" section appended to a team member's first prompt (task-specific, so after the
 * cacheable prefix): what the steps it depends on produced, read from the store when it starts — a
 * reviewer gets the implementer's diff and LightWorker's verification (and the earlier rounds'
 * findings), a synthesizer every contribution, a judge every candidate. Null for other tasks.
 */
export async function teamInputsFor(engine: LeaderEngine, task: Task): Promise<string | null> {
  const tag = teamTagOf(task.metadata);
  if (!tag || !['review', 'synthesize', 'judge'].includes(tag.role)) return null;
  const members = task.dependsOn.map((id) => getTask(engine.db, id)).filter((t): t is Task => t !== null);
  const parts: string[] = ['# Team inputs'];
  if (tag.role === 'review') {
    for (const m of members) parts.push(await describeMember(engine, m, 'The change under review'));
    const earlier = listTasks(engine.db, { rootId: task.rootId, limit: 10_000 })
      .filter((t) => t.id !== task.id && teamTagOf(t.metadata)?.role === 'review' && (teamTagOf(t.metadata)?.round ?? 0) < (tag.round ?? 0))
      .reverse();
    for (const r of earlier) parts.push(`## Findings of review round ${teamTagOf(r.metadata)?.round} (check they are addressed)\n${capText(JSON.stringify(r.result, null, 2), RESULT_BYTES)}`);
  } else {
    const noun = tag.role === 'judge' ? 'Candidate' : 'Contribution';
    for (const [i, m] of members.entries()) parts.push(await describeMember(engine, m, `${noun} ${i + 1} of ${members.length}`));
  }
  return parts.join('\n\n');
}
