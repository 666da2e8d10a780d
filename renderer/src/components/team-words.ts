import type { TeamMemberReport, TeamReport } from '../api/types.js';

/** What each team state means to a person (team-driver.ts records them). */
const STATES: Record<string, string> = {
  running: 'still working',
  passed: 'the review passed: the change can be accepted',
  budget_spent: 'the reviewer still had findings after the last round',
  no_verdict: 'the last review gave no verdict: a person decides',
  followup_refused: 'the implementer could not take the findings',
  ranked: 'every candidate ended and the winner is chosen',
  no_candidate_completed: 'no candidate completed',
  judging: 'a judge ranks the candidates',
  completed: 'the final task completed: its result can be accepted',
  accepted: 'accepted',
  merge_conflict: 'the sources conflict',
};

export function stateWords(state: string): string {
  if (STATES[state]) return STATES[state];
  const m = /^(implement|review)_(.+)$/.exec(state);
  return m ? `the ${m[1] === 'implement' ? 'implementer' : 'review'} ended ${m[2].replace(/_/g, ' ')}` : state.replace(/_/g, ' ');
}

/** A member's place in the team: "review round 2", "candidate 1", "synthesis". */
export function roleWords(m: TeamMemberReport): string {
  const word = { implement: 'implementer', review: 'review round', contribute: 'contributor', synthesize: 'synthesis', candidate: 'candidate', judge: 'judge', integrate: 'integration' }[m.role] ?? m.role;
  return m.round !== null ? `${word} ${m.round}` : word;
}

/** The rounds line: implement_review's review rounds against its budget, else how many members ran. */
export function roundsWords(r: TeamReport): string {
  if (r.strategy === 'implement_review') {
    const reviews = r.members.filter((m) => m.role === 'review').length;
    return `${reviews} review round${reviews === 1 ? '' : 's'}${r.budget ? ` of at most ${r.budget}` : ''}`;
  }
  const n = r.members.length;
  return `${n} member${n === 1 ? '' : 's'}`;
}

/** The task the team's answer is: best_of_n's winner, else the task accept_team would take. */
export function winnerOf(r: TeamReport): string | null {
  const w = r.outcome?.winner;
  return typeof w === 'string' ? w : r.acceptable;
}

/** best_of_n's ranking, best first, when there is one. */
export function rankingOf(r: TeamReport): string[] {
  const k = r.outcome?.ranking;
  return Array.isArray(k) ? k.filter((x): x is string => typeof x === 'string') : [];
}

/** map_reduce: what the contributors do and who synthesizes, as the team was started. */
export function mapReduceWords(r: TeamReport): { contribute: string; synthesizer: string } | null {
  if (r.strategy !== 'map_reduce') return null;
  const synth = r.members.find((m) => m.role === 'synthesize');
  const changes = r.members.some((m) => m.role === 'contribute' && m.kind === 'execute');
  return {
    contribute: changes ? 'each contributor changes code in its own worktree; the synthesis writes one change from theirs' : 'each contributor reads (explore); the synthesis writes one answer from theirs',
    synthesizer: synth ? synth.worker : 'none',
  };
}

/** An integration's result in a sentence: how many sources merged, or which conflicted, or that it has not run yet. */
export function integrationWords(r: TeamReport): string {
  const merged = r.sources.filter((s) => s.merged).length;
  const n = r.sources.length;
  if (r.state === 'merge_conflict') {
    const clashing = r.sources.filter((s) => s.conflicts.length).length;
    return `${clashing} of ${n} sources conflict; nothing was integrated and your branch is untouched`;
  }
  if (merged === 0 && r.state === 'running') {
    const open = r.sources.filter((s) => s.status !== 'completed' && s.status !== 'accepted').length;
    if (open) return `waiting for ${open} of ${n} sources to finish before merging them`;
    return r.members[0]?.status === 'awaiting_approval' ? `the ${n} sources are done: the merge waits for your approval` : `merging ${n} sources`;
  }
  if (merged === 0) return `nothing merged (${stateWords(r.state)})`;
  const verified = r.state === 'completed' || r.state === 'accepted';
  return `merged ${merged} of ${n} sources onto one branch${verified ? ', verified' : ''}`;
}
