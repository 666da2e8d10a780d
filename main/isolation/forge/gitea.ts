import { isAppError } from '../../core/errors.js';
import { foldReviews } from './github.js';
import { forgeCall, ownerAndName } from './http.js';
import type { ForgeCheck, ForgeClient, ForgeComment, ForgeTarget, OpenedPull } from './types.js';

interface GtPull {
  number: number;
  html_url: string;
  state: 'open' | 'closed';
  merged: boolean;
  draft?: boolean;
  head: { sha: string; ref: string };
}

/** Gitea and Forgejo (REST v1: /repos/{owner}/{repo}/…). Drafts are a `WIP:` title; checks are commit statuses. */
export function giteaClient(t: ForgeTarget): ForgeClient {
  const [owner, name] = ownerAndName(t.repo);
  const base = `/repos/${owner}/${name}`;
  const opened = (p: GtPull): OpenedPull => ({ number: p.number, url: p.html_url, headSha: p.head?.sha ?? null });
  return {
    async defaultBranch() {
      return (await forgeCall<{ default_branch: string }>(t, 'GET', base, { what: 'reading the repository' })).body.default_branch;
    },
    async isProtected(branch) {
      try {
        await forgeCall(t, 'GET', `${base}/branch_protections/${encodeURIComponent(branch)}`, { what: 'reading branch protections' });
        return true;
      } catch (err) {
        if (isAppError(err) && err.code === 'not_found') return false;
        throw err;
      }
    },
    async findOpen(branch) {
      const list = (await forgeCall<GtPull[]>(t, 'GET', `${base}/pulls?state=open&limit=50`, { what: 'listing pull requests' })).body;
      const hit = Array.isArray(list) ? list.find((p) => p.head?.ref === branch) : undefined;
      return hit ? opened(hit) : null;
    },
    async create(p) {
      const title = p.draft && !/^(wip|draft):/i.test(p.title) ? `WIP: ${p.title}` : p.title;
      const r = await forgeCall<GtPull>(t, 'POST', `${base}/pulls`, { body: { title, body: p.body, head: p.head, base: p.base }, what: 'opening the pull request' });
      return opened(r.body);
    },
    async status(number) {
      const p = (await forgeCall<GtPull>(t, 'GET', `${base}/pulls/${number}`, { what: 'reading the pull request' })).body;
      return { state: p.merged ? 'merged' : p.state === 'closed' ? 'closed' : 'open', headSha: p.head?.sha ?? null, draft: p.draft === true };
    },
    async checks(_number, sha) {
      const r = await forgeCall<{ statuses?: { id: number; context: string; status: string; description?: string }[] }>(t, 'GET', `${base}/commits/${encodeURIComponent(sha)}/status`, { what: 'reading commit statuses' });
      return (r.body.statuses ?? []).map(
        (s): ForgeCheck => ({ id: String(s.id), name: s.context, state: s.status === 'success' ? 'success' : s.status === 'pending' ? 'pending' : 'failure', summary: s.description ?? '' }),
      );
    },
    async checkLog(check) {
      // Commit statuses carry a description and a link, no log the API gives.
      return check.summary;
    },
    async reviews(number) {
      const reviews = (await forgeCall<{ id: number; state: string; body: string; user?: { login?: string } }[]>(t, 'GET', `${base}/pulls/${number}/reviews`, { what: 'listing reviews' })).body;
      const comments: ForgeComment[] = reviews.filter((r) => r.body && r.body.trim()).map((r) => ({ id: `review-${r.id}`, author: r.user?.login ?? 'someone', body: r.body, path: null, line: null }));
      for (const r of reviews) {
        try {
          const lines = (await forgeCall<{ id: number; body: string; path?: string; position?: number; user?: { login?: string } }[]>(t, 'GET', `${base}/pulls/${number}/reviews/${r.id}/comments`, { what: 'listing review comments' })).body;
          for (const c of lines) comments.push({ id: `comment-${c.id}`, author: c.user?.login ?? 'someone', body: c.body, path: c.path ?? null, line: c.position ?? null });
        } catch (err) {
          if (!(isAppError(err) && err.code === 'not_found')) throw err;
        }
      }
      return { comments, review: foldReviews(reviews.map((r) => r.state)) };
    },
  };
}
