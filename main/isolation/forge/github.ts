import { isAppError } from '../../core/errors.js';
import type { ReviewState } from '../../store/pulls.js';
import { forgeCall, ownerAndName } from './http.js';
import type { ForgeCheck, ForgeClient, ForgeComment, ForgeTarget, OpenedPull } from './types.js';

interface GhPull {
  number: number;
  html_url: string;
  state: 'open' | 'closed';
  merged?: boolean;
  merged_at?: string | null;
  draft?: boolean;
  head: { sha: string; ref: string };
}

/** GitHub and GitHub Enterprise (REST v3: /repos/{owner}/{repo}/…). */
export function githubClient(t: ForgeTarget): ForgeClient {
  const [owner, name] = ownerAndName(t.repo);
  const base = `/repos/${owner}/${name}`;
  const opened = (p: GhPull): OpenedPull => ({ number: p.number, url: p.html_url, headSha: p.head?.sha ?? null });
  return {
    async defaultBranch() {
      return (await forgeCall<{ default_branch: string }>(t, 'GET', base, { what: 'reading the repository' })).body.default_branch;
    },
    async isProtected(branch) {
      try {
        const r = await forgeCall<{ protected?: boolean }>(t, 'GET', `${base}/branches/${encodeURIComponent(branch)}`, { what: 'reading the branch' });
        return r.body.protected === true;
      } catch (err) {
        if (isAppError(err) && err.code === 'not_found') return false; // a branch not pushed yet
        throw err;
      }
    },
    async findOpen(branch) {
      const q = `?state=open&head=${encodeURIComponent(`${decodeURIComponent(owner)}:${branch}`)}`;
      const list = (await forgeCall<GhPull[]>(t, 'GET', `${base}/pulls${q}`, { what: 'listing pull requests' })).body;
      const hit = Array.isArray(list) ? list.find((p) => p.head?.ref === branch) : undefined;
      return hit ? opened(hit) : null;
    },
    async create(p) {
      const r = await forgeCall<GhPull>(t, 'POST', `${base}/pulls`, { body: { title: p.title, body: p.body, head: p.head, base: p.base, draft: p.draft }, what: 'opening the pull request' });
      return opened(r.body);
    },
    async status(number) {
      const p = (await forgeCall<GhPull>(t, 'GET', `${base}/pulls/${number}`, { what: 'reading the pull request' })).body;
      const state = p.merged || p.merged_at ? 'merged' : p.state === 'closed' ? 'closed' : 'open';
      return { state, headSha: p.head?.sha ?? null, draft: p.draft === true };
    },
    async checks(_number, sha) {
      const r = await forgeCall<{ check_runs: { id: number; name: string; status: string; conclusion: string | null; output?: { title?: string | null; summary?: string | null; text?: string | null } }[] }>(
        t,
        'GET',
        `${base}/commits/${encodeURIComponent(sha)}/check-runs?per_page=100`,
        { what: 'listing check runs' },
      );
      return (r.body.check_runs ?? []).map(
        (c): ForgeCheck => ({
          id: String(c.id),
          name: c.name,
          state: c.status !== 'completed' ? 'pending' : ['success', 'neutral', 'skipped'].includes(c.conclusion ?? '') ? 'success' : 'failure',
          summary: [c.output?.title, c.output?.summary, c.output?.text].filter(Boolean).join('\n'),
        }),
      );
    },
    async checkLog(check) {
      // A check run of GitHub Actions is a job of the same id; its log is a redirect to plain text.
      try {
        return (await forgeCall<string>(t, 'GET', `${base}/actions/jobs/${encodeURIComponent(check.id)}/logs`, { text: true, what: 'reading the job log' })).body;
      } catch (err) {
        if (isAppError(err) && (err.code === 'not_found' || err.code === 'forbidden')) return check.summary;
        throw err;
      }
    },
    async reviews(number) {
      const reviews = (await forgeCall<{ id: number; state: string; body: string | null; user?: { login?: string } }[]>(t, 'GET', `${base}/pulls/${number}/reviews?per_page=100`, { what: 'listing reviews' })).body;
      const lines = (await forgeCall<{ id: number; body: string; path?: string; line?: number | null; original_line?: number | null; user?: { login?: string } }[]>(t, 'GET', `${base}/pulls/${number}/comments?per_page=100`, { what: 'listing review comments' })).body;
      const comments: ForgeComment[] = [
        ...reviews.filter((r) => r.body && r.body.trim()).map((r) => ({ id: `review-${r.id}`, author: r.user?.login ?? 'someone', body: r.body!, path: null, line: null })),
        ...lines.map((c) => ({ id: `comment-${c.id}`, author: c.user?.login ?? 'someone', body: c.body, path: c.path ?? null, line: c.line ?? c.original_line ?? null })),
      ];
      return { comments, review: foldReviews(reviews.map((r) => r.state)) };
    },
  };
}

/** The latest decisive review wins: CHANGES_REQUESTED / APPROVED (GitHub and Gitea spell them alike). */
export function foldReviews(states: string[]): ReviewState {
  let out: ReviewState = 'none';
  for (const s of states) {
    const u = s.toUpperCase();
    if (u === 'CHANGES_REQUESTED' || u === 'REQUEST_CHANGES') out = 'changes_requested';
    else if (u === 'APPROVED') out = 'approved';
    else if (u === 'COMMENTED' || u === 'COMMENT') out = out === 'none' ? 'commented' : out;
  }
  return out;
}
