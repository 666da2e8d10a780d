import { execFile } from 'node:child_process';
import type { Config } from '../../core/config.js';
import { AppError } from '../../core/errors.js';
import { registerSecretValues } from '../../core/secret-values.js';
import type { ForgeKind } from '../../store/pulls.js';
import { giteaClient } from './gitea.js';
import { githubClient } from './github.js';
import { gitlabClient } from './gitlab.js';
import type { ForgeClient, ForgeTarget } from './types.js';

/** A remote URL split into host and repository path (`owner/name`, GitLab's group/sub/name), or null. */
export function parseRemoteUrl(url: string): { host: string; path: string } | null {
  const u = url.trim();
  // scp-like: git@host:owner/name.git
  const scp = /^(?:[^@/\s]+@)?([^:/\s]+):(?!\/)(.+)$/.exec(u);
  let host: string;
  let path: string;
  if (scp && !/^[a-z]+:\/\//i.test(u)) [host, path] = [scp[1], scp[2]];
  else {
    try {
      const p = new URL(u);
      [host, path] = [p.host, decodeURIComponent(p.pathname)];
    } catch {
      return null;
    }
  }
  path = path.replace(/^\/+/, '').replace(/\/+$/, '').replace(/\.git$/, '');
  return path.includes('/') ? { host: host.toLowerCase(), path } : null;
}

/** The URL without user info (a token someone put there stays out of every record). */
export function stripUserInfo(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/]*@/i, '$1');
}

/** Which forge and API a remote URL belongs to: a `[forges.NAME]` entry first, then github.com / gitlab.com. */
export function forgeOfRemote(config: Config, url: string): { forge: string; kind: ForgeKind; apiUrl: string; repo: string; tokenEnv: string | null } {
  const parsed = parseRemoteUrl(url);
  for (const [name, f] of Object.entries(config.forges)) {
    const hit = url.startsWith(f.match) || (parsed !== null && parsed.host === f.match.toLowerCase());
    if (!hit) continue;
    const repo = f.repo ?? parsed?.path;
    if (!repo) throw new AppError('invalid_input', `[forges.${name}] matches ${stripUserInfo(url)} but the URL shows no owner/name: set repo = "owner/name" there`, { field: `forges.${name}.repo` });
    return { forge: name, kind: f.kind, apiUrl: f.api_url, repo, tokenEnv: f.token_env };
  }
  if (parsed?.host === 'github.com') return { forge: 'github', kind: 'github', apiUrl: 'https://api.github.com', repo: parsed.path, tokenEnv: null };
  if (parsed?.host === 'gitlab.com') return { forge: 'gitlab', kind: 'gitlab', apiUrl: 'https://gitlab.com/api/v4', repo: parsed.path, tokenEnv: null };
  throw new AppError(
    'invalid_input',
    `no forge known for the remote ${stripUserInfo(url)}: add a [forges.NAME] entry to config.toml with kind ("github", "gitlab" or "gitea"), match = "${parsed?.host ?? stripUserInfo(url)}", api_url and token_env`,
    { field: 'forges' },
  );
}

/** `gh auth token` (the GitHub CLI's login), or null when gh is missing or not logged in. */
function ghAuthToken(host: string | null): Promise<string | null> {
  const args = ['auth', 'token', ...(host && host !== 'github.com' ? ['--hostname', host] : [])];
  return new Promise((resolve) => {
    execFile('gh', args, { timeout: 10_000, env: { ...process.env, GH_PROMPT_DISABLED: '1' } }, (err, stdout) => resolve(err ? null : stdout.trim() || null));
  });
}

/**
 * The token for a forge, from where it is kept: a `[forges.NAME]` token_env; GitHub's GITHUB_TOKEN, GH_TOKEN,
 * else `gh auth token`; GitLab's GITLAB_TOKEN. Registered for redaction; never stored. `source` says where
 * it came from (a variable's name), which is what a pull record keeps to find it again.
 */
export async function resolveToken(kind: ForgeKind, forge: string, tokenEnv: string | null, env: NodeJS.ProcessEnv = process.env, host: string | null = null): Promise<{ token: string; source: string }> {
  const names = tokenEnv ? [tokenEnv] : kind === 'github' ? ['GITHUB_TOKEN', 'GH_TOKEN'] : kind === 'gitlab' ? ['GITLAB_TOKEN'] : [];
  for (const n of names) {
    const v = env[n]?.trim();
    if (v) {
      registerSecretValues([v]);
      return { token: v, source: n };
    }
  }
  if (kind === 'github' && !tokenEnv) {
    const t = await ghAuthToken(host);
    if (t) {
      registerSecretValues([t]);
      return { token: t, source: 'gh auth token' };
    }
  }
  const how = tokenEnv
    ? `set ${tokenEnv} (named by [forges.${forge}] token_env)`
    : kind === 'github'
      ? 'set GITHUB_TOKEN or GH_TOKEN, or log in with `gh auth login`'
      : kind === 'gitlab'
        ? 'set GITLAB_TOKEN'
        : `add token_env to [forges.${forge}] and set that variable`;
  throw new AppError('forbidden', `no token for ${forge}: ${how}`, { forge });
}

/** The token again from a pull record's `source` (an env var's name, or `gh auth token`). */
export async function tokenFromSource(kind: ForgeKind, forge: string, source: string, env: NodeJS.ProcessEnv = process.env): Promise<{ token: string; source: string }> {
  if (source === 'gh auth token') return resolveToken(kind, forge, null, { ...env, GITHUB_TOKEN: '', GH_TOKEN: '' });
  return resolveToken(kind, forge, source, env);
}

export function clientFor(t: ForgeTarget): ForgeClient {
  return t.kind === 'gitlab' ? gitlabClient(t) : t.kind === 'gitea' ? giteaClient(t) : githubClient(t);
}
