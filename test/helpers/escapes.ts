import { randomInt } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, rmdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The linked worker that leaves six escaped processes behind (see the script's header). */
export const ESCAPE_AGENT = fileURLToPath(new URL('../fixtures/containment/escape-agent.sh', import.meta.url));

/** The six escape shapes, in the order of the script's tokens. */
export const SHAPES = ['env -i setsid -f', 'python daemon (double fork, setsid, fds closed, execve {})', 'unset LIGHTWORKER_*; setsid &', 'daemon(3), cwd /', 'renamed (prctl, exec -a)', 'nohup & disown, ignores TERM/HUP'] as const;

/** One unique token per shape: the argument of its `sleep`, found in /proc/PID/cmdline and nowhere else. */
export function escapeTokens(): string[] {
  const base = `7${randomInt(10_000_000, 99_999_999)}`;
  return SHAPES.map((_, i) => `${base}${i + 1}`);
}

/** A prompt that has the escape agent start the six shapes (hold: keep running until stopped). */
export function escapeObjective(tokens: string[], hold: boolean): string {
  return `leave processes behind ESCAPE_TOKENS=${tokens.join(',')}${hold ? ' ESCAPE_HOLD=1' : ''}`;
}

/** Per token, the live processes whose argv holds it as a whole argument (not the environment: it may be gone). */
export function holdersOf(tokens: string[]): Map<string, number[]> {
  const out = new Map(tokens.map((t) => [t, [] as number[]]));
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2)[0] === 'Z') continue;
      for (const arg of readFileSync(`/proc/${e}/cmdline`, 'latin1').split('\0')) out.get(arg)?.push(Number(e));
    } catch {
      // gone meanwhile, or not ours
    }
  }
  return out;
}

/** How many processes still hold any of `tokens`. */
export function survivorsOf(tokens: string[]): number {
  let n = 0;
  for (const pids of holdersOf(tokens).values()) n += pids.length;
  return n;
}

/** SIGKILL whatever holds `tokens` (cleanup: never anything else). */
export function killHolders(tokens: string[]): void {
  for (const pids of holdersOf(tokens).values()) {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
}

/**
 * What holds a process: `cgroup` (in a LightWorker tree cgroup), `subreaper` (re-parented to a process other
 * than init: the spawner helper), `none` (an orphan of init, as every escaped process was before containment).
 */
export function containmentOf(pid: number): 'cgroup' | 'subreaper' | 'none' | 'gone' {
  try {
    if (/^0::.*\/lightworker-[^/]*$/m.test(readFileSync(`/proc/${pid}/cgroup`, 'utf8'))) return 'cgroup';
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === 1 ? 'none' : 'subreaper';
  } catch {
    return 'gone';
  }
}

/** Whether a process here may make a cgroup v2 next to its own and move into it (as the spawner helper probes). */
export function cgroupWritable(): boolean {
  try {
    const path = /^0::(.*)$/m.exec(readFileSync('/proc/self/cgroup', 'utf8'))?.[1];
    const mount = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => l.split(' - '))
      .find(([, right]) => right?.startsWith('cgroup2 '))?.[0]
      .split(' ')[4];
    if (!path || !mount) return false;
    const probe = `${mount}${path === '/' ? '' : path}/lightworker-testprobe-${process.pid}`;
    mkdirSync(probe);
    rmdirSync(probe);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether a leader's spawner helper kills its trees itself when the leader dies (Linux, a helper at all:
 * python3 runs and LIGHTWORKER_SPAWNER is not 0; and either a fleet runner's, whose armed lease deadline
 * means nobody on another host could kill them later — the `postgres` project's leaders are — or without
 * cgroups: LIGHTWORKER_CGROUP=0, or none writable here); else they live on until a takeover.
 */
export function helperKillsOnLeaderDeath(pythonRuns: boolean, fleet = process.env.LIGHTWORKER_TEST_STORE === 'postgres'): boolean {
  return process.platform === 'linux' && pythonRuns && process.env.LIGHTWORKER_SPAWNER !== '0' && (fleet || process.env.LIGHTWORKER_CGROUP === '0' || !cgroupWritable());
}
