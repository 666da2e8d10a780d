import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { treeMarkerEnv } from '../../main/platform/proc/marker.js';
import { isAlive, until } from '../helpers/procs.js';

/** Processes whose environment carries the marker of this test home (any task, any attempt). Linux only. */
export function markedBy(homeRoot: string): number[] {
  const id = `LIGHTWORKER_HOME_ID=${treeMarkerEnv(homeRoot, 'x', 1).LIGHTWORKER_HOME_ID}`;
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${e}/environ`, 'latin1').split('\0').includes(id) && isAlive(Number(e))) out.push(Number(e));
    } catch {
      // gone or not ours
    }
  }
  return out;
}

/** SIGKILL whatever this test home left running (cleanup after a failed assertion; never other tests' processes). */
export function killMarked(homeRoot: string): void {
  for (const pid of markedBy(homeRoot)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/** The pid a mock worker wrote to `file`, once it is there. */
export async function pidFrom(file: string, timeoutMs = 20_000): Promise<number> {
  await until(() => existsSync(file) && /^\d+$/.test(readFileSync(file, 'utf8').trim()), timeoutMs, `a pid in ${file}`);
  return Number(readFileSync(file, 'utf8').trim());
}

export const linux = process.platform === 'linux';
