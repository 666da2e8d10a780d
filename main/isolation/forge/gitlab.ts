import { isAppError } from '../../core/errors.js';
import { forgeCall } from './http.js';
import type { ForgeCheck, ForgeClient, ForgeTarget, OpenedPull } from './types.js';

interface GlMr {
  iid: number;
  web_url: string;
  state: 'opened' | 'closed' | 'merged' | 'locked';
  sha: string | null;
  draft?: boolean;
  work_in_progress?: boolean;
}

/** GitLab (REST v4: /projects/:id/… with the project's path as its id). Drafts are a `Draft:` title. */
export function gitlabClient(t: ForgeTarget): ForgeClient {
  const base = `/projects/${encodeURIComponent(t.repo)}`;
  const opened = (m: GlMr): OpenedPull => ({ number: m.iid, url: m.web_url, headSha: m.sha ?? null });
  return {
    async defaultBranch() {
      return (await forgeCall<{ default_branch: string }>(t, 'GET', base, { what: 'reading the project' })).body.default_branch;
    },
    async isProtected(branch) {
      try {
        await forgeCall(t, 'GET', `${base}/protected_branches/${encodeURIComponent(branch)}`, { what: 'reading protected branches' });
        return true;
      } catch (err) {
        if (isAppError(err) && err.code === 'not_found') return false;
        throw err;
      }
    },
    async findOpen(branch) {
      const list = (await forgeCall<GlMr[]>(t, 'GET', `${base}/merge_requests?state=opened&source_branch=${encodeURIComponent(branch)}`, { what: 'listing merge requests' })).body;
      return Array.isArray(list) && list[0] ? opened(list[0]) : null;
    },
    async create(p) {
      const title = p.draft && !/^draft:/i.test(p.title) ? `Draft: ${p.title}` : p.title;
      const r = await forgeCall<GlMr>(t, 'POST', `${base}/merge_requests`, { body: { source_branch: p.head, target_branch: p.base, title, description: p.body }, what: 'opening the merge request' });
      return opened(r.body);
    },
    async status(number) {
      const m = (await forgeCall<GlMr>(t, 'GET', `${base}/merge_requests/${number}`, { what: 'reading the merge request' })).body;
      return { state: m.state === 'merged' ? 'merged' : m.state === 'opened' ? 'open' : 'closed', headSha: m.sha ?? null, draft: m.draft === true || m.work_in_progress === true };
    },
    async checks(number, sha) {
      const pipes = (await forgeCall<{ id: number; sha: string; status: string }[]>(t, 'GET', `${base}/merge_requests/${number}/pipelines`, { what: 'listing pipelines' })).body;
      const pipe = pipes.find((p) => p.sha === sha);
      if (!pipe) return [];
      const jobs = (await forgeCall<{ id: number; name: string; status: string; failure_reason?: string }[]>(t, 'GET', `${base}/pipelines/${pipe.id}/jobs?per_page=100`, { what: 'listing pipeline jobs' })).body;
      return jobs.map(
        (j): ForgeCheck => ({
          id: String(j.id),
          name: j.name,
          state: j.status === 'success' || j.status === 'skipped' || j.status === 'manual' ? 'success' : j.status === 'failed' || j.status === 'canceled' ? 'failure' : 'pending',
          summary: j.failure_reason ?? '',
        }),
      );
    },
    async checkLog(check) {
      return (await forgeCall<string>(t, 'GET', `${base}/jobs/${encodeURIComponent(check.id)}/trace`, { text: true, what: 'reading the job log' })).body;
    },
    async reviews(number) {
      const notes = (await forgeCall<{ id: number; body: string; system: boolean; author?: { username?: string }; position?: { new_path?: string; new_line?: number | null } | null }[]>(
        t,
        'GET',
        `${base}/merge_requests/${number}/notes?per_page=100&sort=asc`,
        { what: 'listing notes' },
      )).body;
      const human = notes.filter((n) => !n.system);
      const comments = human.map((n) => ({ id: `note-${n.id}`, author: n.author?.username ?? 'someone', body: n.body, path: n.position?.new_path ?? null, line: n.position?.new_line ?? null }));
      return { comments, review: comments.length ? 'commented' : 'none' };
    },
  };
}
