import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { markPids, pidRange, pidsHandedOutSince } from '../../main/platform/proc/process.js';

// A sweep of a tree just run reads only the /proc entries of PIDs handed out since its spawn (a sweep reads a few entries, not every process's):
// that set must hold every process the tree can have started, or the sweep would miss survivors.
describe('PIDs handed out since a mark', () => {
  it('covers the cycle from the mark to now, wrapping at pid_max, and gives up when it cannot be bounded', () => {
    expect(pidRange({ pid: 100, forks: 10 }, { pid: 103, forks: 14 }, 32768, 512)).toEqual([100, 101, 102, 103]);
    expect(pidRange({ pid: 32766, forks: 10 }, { pid: 2, forks: 14 }, 32768, 512)).toEqual([32766, 32767, 1, 2]);
    expect(pidRange({ pid: 100, forks: 10 }, { pid: 103, forks: 10 + 16384 }, 32768, 512)).toBeNull(); // may have gone round
    expect(pidRange({ pid: 100, forks: 10 }, { pid: 1000, forks: 900 }, 32768, 512)).toBeNull(); // too many to read one by one
  });

  it.runIf(process.platform === 'linux')('includes every process a tree started after the mark, grandchildren included', async () => {
    const mark = markPids();
    expect(mark).not.toBeNull();
    const child = spawn('sh', ['-c', 'sleep 5 & echo $!; wait'], { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
    const grandchild = Number(await new Promise<string>((r) => child.stdout.once('data', (d) => r(String(d).trim()))));
    try {
      const pids = pidsHandedOutSince(mark!);
      expect(pids).not.toBeNull();
      expect(pids).toContain(child.pid);
      expect(pids).toContain(grandchild);
    } finally {
      process.kill(-child.pid!, 'SIGKILL'); // its own group: sh and the sleep
    }
  });
});
