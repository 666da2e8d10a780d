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
