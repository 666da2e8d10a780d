/** Strategies a team runs. `handoff` is an operation on one task, not a team. */
export const STRATEGIES = ['implement_review', 'map_reduce', 'best_of_n', 'integrate'] as const;
export type Strategy = (typeof STRATEGIES)[number];

/** What a team records in `metadata.team` of each member task. A team is its tree (root_id): its first task is the root. */
export interface TeamTag {
  strategy: Strategy;
  role: 'implement' | 'review' | 'contribute' | 'synthesize' | 'candidate' | 'judge' | 'integrate';
  /** Review round (1-based) or member index (1-based). */
  round?: number;
  /** implement_review: the round budget; best_of_n: the judge. */
  rounds?: number;
  judge?: string;
  sources?: string[];
}

/** The team tag of a task, or null when it is not part of a team. */
export function teamTagOf(metadata: Record<string, unknown>): TeamTag | null {
  const t = metadata.team as Partial<TeamTag> | undefined;
  return t && typeof t === 'object' && typeof t.strategy === 'string' && typeof t.role === 'string' ? (t as TeamTag) : null;
}
