import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** What a running bridge publishes for LightWorker (main/workers/vscode.ts reads the same shape). */
export interface DiscoveryRecord {
  version: 1;
  pid: number;
  host: '127.0.0.1';
  port: number;
  token: string;
  workspace_folders: string[];
  extension_version: string;
  started_at: string;
}

/**
 * `$LIGHTWORKER_VSCODE_BRIDGE_DIR`, else `~/.lightworker/vscode-bridge`: one file per editor window,
 * named after its workspace folders.
 */
export function discoveryDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.LIGHTWORKER_VSCODE_BRIDGE_DIR || join(homedir(), '.lightworker', 'vscode-bridge');
}

/** First 16 hex of sha256 over the sorted folder paths; `no-workspace` for an empty window. */
export function workspaceKey(folders: readonly string[]): string {
  if (!folders.length) return 'no-workspace';
  return createHash('sha256').update([...folders].sort().join('\n')).digest('hex').slice(0, 16);
}

/**
 * Write the record readable by this user only: folder 0700, file 0600 (created with that mode, then
 * renamed into place so a reader never sees half a file, and chmod-ed in case umask widened nothing).
 */
export function writeDiscovery(dir: string, record: DiscoveryRecord): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  try {
    chmodSync(dir, 0o700);
  } catch {
    // a folder the user pointed us at and does not own: the file itself is still 0600
  }
  const path = join(dir, `${workspaceKey(record.workspace_folders)}.json`);
  const tmp = `${path}.${process.pid}.tmp`;
  rmSync(tmp, { force: true });
  // 'wx': never write through something already at that name (a planted symlink).
  writeFileSync(tmp, JSON.stringify(record, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
  return path;
}

/** Remove the file if it is still ours (a second window on the same folders may have replaced it). */
export function removeDiscovery(path: string, token: string): void {
  try {
    const rec = JSON.parse(readFileSync(path, 'utf8')) as Partial<DiscoveryRecord>;
    if (rec.token === token) rmSync(path, { force: true });
  } catch {
    // already gone or unreadable: nothing of ours to remove
  }
}
