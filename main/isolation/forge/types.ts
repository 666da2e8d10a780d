import type { ChecksState, ForgeKind, PullState, ReviewState } from '../../store/pulls.js';

/** One forge repository and the credential to reach its API (the token lives in memory only). */
export interface ForgeTarget {
  /** `[forges.NAME]`'s name, or `github` / `gitlab` for the public forges. */
  forge: string;
  kind: ForgeKind;
  /** REST base: https://api.github.com, https://HOST/api/v3, https://HOST/api/v4, https://HOST/api/v1. */
  apiUrl: string;
  /** owner/name; GitLab: the project's full path. */
  repo: string;
  token: string;
  /** Where the token came from, for messages and the record (an env var's name, `gh auth token`). */
  tokenSource: string;
}

export interface OpenedPull {
  number: number;
  url: string;
  headSha: string | null;
}

export interface PullStatus {
  state: PullState;
  headSha: string | null;
  draft: boolean;
}

/** One check run, commit status or pipeline job. */
export interface ForgeCheck {
  id: string;
  name: string;
  state: 'pending' | 'success' | 'failure';
  /** Short text the forge gives (a check run's output, a status's description). */
  summary: string;
}

/** A review comment or note a person left on the pull request. */
export interface ForgeComment {
  id: string;
  author: string;
  body: string;
  path: string | null;
  line: number | null;
}

export interface ForgeReviews {
  comments: ForgeComment[];
  review: ReviewState;
}

/** What LightWorker asks of a forge: the REST calls each client makes, in the forge's own terms. */
export interface ForgeClient {
  defaultBranch(): Promise<string>;
  isProtected(branch: string): Promise<boolean>;
  /** An open pull request whose head is `branch`, if any. */
  findOpen(branch: string): Promise<OpenedPull | null>;
  create(p: { title: string; body: string; head: string; base: string; draft: boolean }): Promise<OpenedPull>;
  status(number: number): Promise<PullStatus>;
  checks(number: number, sha: string): Promise<ForgeCheck[]>;
  /** The end of a failing check's log ('' when the forge keeps none the API gives). */
  checkLog(check: ForgeCheck): Promise<string>;
  reviews(number: number): Promise<ForgeReviews>;
}

/** Fold checks into one state: any failure fails, any pending waits, none is none. */
export function foldChecks(checks: ForgeCheck[]): ChecksState {
  if (!checks.length) return 'none';
  if (checks.some((c) => c.state === 'failure')) return 'failing';
  if (checks.some((c) => c.state === 'pending')) return 'pending';
  return 'passing';
}
