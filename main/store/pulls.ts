import { prep, type Db } from './db.js';

export type ForgeKind = 'github' | 'gitlab' | 'gitea';
export type PullState = 'open' | 'merged' | 'closed';
export type ChecksState = 'none' | 'pending' | 'passing' | 'failing';
export type ReviewState = 'none' | 'commented' | 'changes_requested' | 'approved';

/** A pull (merge) request opened from a task, and what the watcher last saw of it. */
export interface PullRecord {
  taskId: string;
  /** The forge's name: a `[forges.NAME]` entry, or `github` / `gitlab` for the public ones. */
  forge: string;
  kind: ForgeKind;
  apiUrl: string;
  /** owner/name (GitLab: the project path). */
  repo: string;
  /** The remote's URL as git shows it (credentials stripped). */
  remoteUrl: string;
  /** Where the token comes from (an environment variable's name, `gh auth token`): never the token. */
  tokenSource: string;
  number: number;
  url: string;
  branch: string;
  base: string;
  draft: boolean;
  state: PullState;
  checks: ChecksState;
  review: ReviewState;
  /** The commit last pushed to `branch`. */
  headSha: string;
  /** Follow-up turns sent for failing checks or review comments so far. */
  fixRounds: number;
  /** A fix turn was sent and its result is not pushed yet. */
  fixing: boolean;
  /** Forge ids of review comments already seen (sent to the agent or there before the PR was watched). */
  seenComments: string[];
  /** `sha:check` of the failure last sent, so one failure is sent once. */
  sentFailure: string | null;
  pollEveryMs: number;
  nextPollAt: number;
  lastError: string | null;
  createdAt: number;
  updatedAt: number;
}

interface PullRow {
  task_id: string;
  forge: string;
  kind: ForgeKind;
  api_url: string;
  repo: string;
  remote_url: string;
  token_source: string;
  number: number;
  url: string;
  branch: string;
  base: string;
  draft: number;
  state: PullState;
  checks: ChecksState;
  review: ReviewState;
  head_sha: string;
  fix_rounds: number;
  fixing: number;
  seen_comments: string;
  sent_failure: string | null;
  poll_every_ms: number;
  next_poll_at: number;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

function fromRow(r: PullRow): PullRecord {
  let seen: string[] = [];
  try {
    const v = JSON.parse(r.seen_comments) as unknown;
    if (Array.isArray(v)) seen = v.map(String);
  } catch {
    // a hand-edited row reads as none seen
  }
  return {
    taskId: r.task_id,
    forge: r.forge,
    kind: r.kind,
    apiUrl: r.api_url,
    repo: r.repo,
    remoteUrl: r.remote_url,
    tokenSource: r.token_source,
    number: Number(r.number),
    url: r.url,
    branch: r.branch,
    base: r.base,
    draft: Boolean(Number(r.draft)),
    state: r.state,
    checks: r.checks,
    review: r.review,
    headSha: r.head_sha,
    fixRounds: Number(r.fix_rounds),
    fixing: Boolean(Number(r.fixing)),
    seenComments: seen,
    sentFailure: r.sent_failure,
    pollEveryMs: Number(r.poll_every_ms),
    nextPollAt: Number(r.next_poll_at),
    lastError: r.last_error,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

export type NewPull = Omit<PullRecord, 'checks' | 'review' | 'fixRounds' | 'fixing' | 'sentFailure' | 'lastError' | 'createdAt' | 'updatedAt'>;

/** Record a pull request just opened for a task (one per task: a second is refused before this). */
export function insertPull(db: Db, p: NewPull, now = Date.now()): PullRecord {
  prep(
    db,
    `INSERT INTO pulls (task_id, forge, kind, api_url, repo, remote_url, token_source, number, url, branch, base, draft, state, head_sha, seen_comments, poll_every_ms, next_poll_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(p.taskId, p.forge, p.kind, p.apiUrl, p.repo, p.remoteUrl, p.tokenSource, p.number, p.url, p.branch, p.base, p.draft ? 1 : 0, p.state, p.headSha, JSON.stringify(p.seenComments), p.pollEveryMs, p.nextPollAt, now, now);
  return getPull(db, p.taskId)!;
}

export function getPull(db: Db, taskId: string): PullRecord | null {
  const row = prep(db, 'SELECT * FROM pulls WHERE task_id = ?').get(taskId) as PullRow | undefined;
  return row ? fromRow(row) : null;
}

/** Open pull requests whose next poll is due at `now`, soonest first. */
export function duePulls(db: Db, now: number, limit = 20): PullRecord[] {
  return (prep(db, "SELECT * FROM pulls WHERE state = 'open' AND next_poll_at <= ? ORDER BY next_poll_at LIMIT ?").all(now, limit) as PullRow[]).map(fromRow);
}

/** Open pull requests, for the leader's check that a fix is ready to push. */
export function openPulls(db: Db, limit = 500): PullRecord[] {
  return (prep(db, "SELECT * FROM pulls WHERE state = 'open' ORDER BY next_poll_at LIMIT ?").all(limit) as PullRow[]).map(fromRow);
}

export type PullPatch = Partial<Pick<PullRecord, 'state' | 'checks' | 'review' | 'headSha' | 'fixRounds' | 'fixing' | 'seenComments' | 'sentFailure' | 'pollEveryMs' | 'nextPollAt' | 'lastError' | 'draft'>>;

const COLUMNS: Record<keyof PullPatch, string> = {
  state: 'state',
  checks: 'checks',
  review: 'review',
  headSha: 'head_sha',
  fixRounds: 'fix_rounds',
  fixing: 'fixing',
  seenComments: 'seen_comments',
  sentFailure: 'sent_failure',
  pollEveryMs: 'poll_every_ms',
  nextPollAt: 'next_poll_at',
  lastError: 'last_error',
  draft: 'draft',
};

/** Change some fields of a task's pull record; false when there is none. */
export function updatePull(db: Db, taskId: string, patch: PullPatch, now = Date.now()): boolean {
  const keys = (Object.keys(patch) as (keyof PullPatch)[]).filter((k) => patch[k] !== undefined);
  if (!keys.length) return false;
  const values = keys.map((k) => {
    const v = patch[k];
    if (k === 'seenComments') return JSON.stringify(v);
    if (typeof v === 'boolean') return v ? 1 : 0;
    return v;
  });
  const sql = `UPDATE pulls SET ${keys.map((k) => `${COLUMNS[k]} = ?`).join(', ')}, updated_at = ? WHERE task_id = ?`;
  return prep(db, sql).run(...values, now, taskId).changes > 0;
}

/**
 * Take a due poll: move its next_poll_at from what we read to `until` (compare-and-set), so two leaders
 * (runners of a fleet) never poll one pull request at once. False when another took it first.
 */
export function claimPoll(db: Db, taskId: string, seenNextPollAt: number, until: number): boolean {
  return prep(db, "UPDATE pulls SET next_poll_at = ? WHERE task_id = ? AND next_poll_at = ? AND state = 'open'").run(until, taskId, seenNextPollAt).changes > 0;
}
