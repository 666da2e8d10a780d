import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../../core/errors.js';
import { mkdirPrivate } from '../../core/private-home.js';
import { redactText } from '../../core/redact.js';
import { gitTry } from '../../platform/git/git-exec.js';
import type { ForgeTarget } from './types.js';

/**
 * An askpass program that answers git from its environment: the token never appears in argv, a URL or a
 * file. git runs it with the prompt as its argument ("Username for …", "Password for …").
 */
const ASKPASS = `#!/bin/sh
case "$1" in
  Username*|username*) printf '%s\\n' "$LIGHTWORKER_FORGE_USER" ;;
  *) printf '%s\\n' "$LIGHTWORKER_FORGE_TOKEN" ;;
esac
`;

function askpassPath(homeRoot: string): string {
  const dir = join(homeRoot, 'bin');
  const p = join(dir, 'git-askpass.sh');
  if (!existsSync(p)) {
    mkdirPrivate(dir);
    writeFileSync(p, ASKPASS, { mode: 0o700 });
    chmodSync(p, 0o700);
  }
  return p;
}

/** The user name each forge expects beside a token over HTTPS. */
function userFor(t: ForgeTarget): string {
  return t.kind === 'gitlab' ? 'oauth2' : t.kind === 'gitea' ? 'lightworker' : 'x-access-token';
}

/**
 * Push `sha` from `repoDir` to `branch` on `remoteUrl`. Credentials go through GIT_ASKPASS reading the
 * environment of this one git process (other credential helpers are switched off so none stores it). A
 * rejected push (not a fast-forward, a hook, a protected branch) is `conflict` naming the fix.
 */
export async function pushBranch(homeRoot: string, repoDir: string, remoteUrl: string, sha: string, branch: string, target: ForgeTarget): Promise<void> {
  const env = { GIT_ASKPASS: askpassPath(homeRoot), LIGHTWORKER_FORGE_TOKEN: target.token, LIGHTWORKER_FORGE_USER: userFor(target), GIT_TERMINAL_PROMPT: '0' };
  const r = await gitTry(repoDir, ['-c', 'credential.helper=', '-c', 'core.askPass=', 'push', '--porcelain', '--', remoteUrl, `${sha}:refs/heads/${branch}`], { env });
  if (r.exitCode === 0) return;
  const said = redactText((r.stderr || r.stdout).trim().split('\n').slice(-4).join(' / '));
  if (/rejected|non-fast-forward|fetch first|protected|denied|hook declined/i.test(said)) {
    throw new AppError('conflict', `the remote refused the push to ${branch}: ${said}; choose another branch name (--branch NAME) or bring the remote branch in line`, { branch });
  }
  throw new AppError('git_failed', `git push to ${branch} failed: ${said || `exit ${r.exitCode}`}; check the remote URL and the token from ${target.tokenSource}`, { branch });
}
