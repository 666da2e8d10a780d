import { describe, expect, it } from 'vitest';
import { pickCandidate, type Candidate } from '../../main/store/claims.js';

/** Drive pickCandidate like the scheduler does with max_concurrency 1: one pick, dispatch, repeat. */
function drain(cands: Candidate[]): Candidate[] {
  // listCandidates orders by priority, then id.
  const queue = [...cands].sort((a, b) => b.priority - a.priority || a.id.localeCompare(b.id));
  const last = new Map<string, number>();
  let affinity: { cohort: string | null; streak: number } = { cohort: null, streak: 0 };
  const order: Candidate[] = [];
  for (let n = 1; queue.length; n++) {
    const pick = pickCandidate(queue, last, affinity)!;
    queue.splice(queue.indexOf(pick), 1);
    last.set(pick.rootId, n);
    affinity = pick.cohort && pick.cohort === affinity.cohort ? { cohort: pick.cohort, streak: affinity.streak + 1 } : { cohort: pick.cohort, streak: 1 };
    order.push(pick);
  }
  return order;
}

const task = (root: string, i: number, cohort: string | null, priority = 50): Candidate => ({ id: `${root}${i}`, rootId: root, workspace: '/r', worker: 'mock', priority, cohort });

/** Longest run of one cohort while a task of another cohort was waiting. */
function longestRunWhileOthersWait(order: Candidate[]): number {
  let worst = 0;
  let run = 0;
  order.forEach((c, i) => {
    run = i > 0 && order[i - 1].cohort === c.cohort ? run + 1 : 1;
    if (order.slice(i + 1).some((o) => o.cohort !== c.cohort)) worst = Math.max(worst, run);
  });
  return worst;
}

describe('scheduler cohort affinity', () => {
  it('takes at most one extra pick of the same cohort, then round-robin', () => {
    const cands = [0, 1, 2, 3].flatMap((i) => [task('A', i, 'X')]).concat([0, 1, 2, 3].map((i) => task('B', i, 'Y')), [0, 1, 2, 3].map((i) => task('C', i, 'X')));
    const order = drain(cands);
    expect(order.map((c) => c.id)).toEqual(['A0', 'C0', 'B0', 'B1', 'A1', 'C1', 'B2', 'B3', 'A2', 'C2', 'A3', 'C3']);
    expect(longestRunWhileOthersWait(order)).toBe(2);
  });

  it('never starves a root of another cohort, however many share one cohort', () => {
    const big = ['R1', 'R2', 'R3', 'R4'].flatMap((r) => [0, 1, 2, 3, 4].map((i) => task(r, i, 'X')));
    const lone = [0, 1, 2].map((i) => task('L', i, 'Y'));
    const order = drain([...big, ...lone]);
    const at = order.map((c, i) => (c.rootId === 'L' ? i : -1)).filter((i) => i >= 0);
    // L's first task goes within the first round of roots, and L is never left waiting longer than a round.
    expect(at[0]).toBeLessThanOrEqual(5);
    for (let k = 1; k < at.length; k++) expect(at[k] - at[k - 1]).toBeLessThanOrEqual(6);
    expect(longestRunWhileOthersWait(order)).toBeLessThanOrEqual(5);
  });

  it('keeps priority above affinity and ignores tasks without a cohort', () => {
    const order = drain([task('A', 0, 'X'), task('A', 1, 'X'), task('B', 0, 'Y', 90), task('C', 0, null), task('C', 1, null)]);
    expect(order[0].id).toBe('B0');
    expect(drain([task('C', 0, null), task('D', 0, null), task('C', 1, null)]).map((c) => c.id)).toEqual(['C0', 'D0', 'C1']);
  });
});
