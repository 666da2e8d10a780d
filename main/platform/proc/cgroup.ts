import { readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Linux: a cgroup (v2) per process tree, the containment a process cannot leave by changing its group,
 * session, parent or environment. The spawner helper (spawner-helper.py) creates it next to its own cgroup
 * and forks the tree's leader inside it; everything the tree starts is born there. A sweep signals the
 * cgroup's members and ends with `cgroup.kill`; a takeover finds a dead leader's cgroups by name, however
 * far away in the hierarchy that leader ran. Only a process allowed to write its own PID into another
 * cgroup's `cgroup.procs` (root, or the same user where the cgroup tree is delegated to it) can leave.
 */

/** The name of one tree's cgroup: its home, task attempt (the marker) and a part unique to this process. */
export function cgroupName(marker: Record<string, string>, unique: string): string {
  return `${cgroupPrefix(marker)}${unique}`;
}

/** The part of a tree's cgroup name every tree of one task attempt shares. */
export function cgroupPrefix(marker: Record<string, string>): string {
  return `lightworker-${marker.LIGHTWORKER_HOME_ID}-${marker.LIGHTWORKER_TASK_ID}-${marker.LIGHTWORKER_ATTEMPT}-`;
}

let mountCache: string | null | undefined;

/** Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a hybrid system). */
export function cgroupMount(): string | null {
  if (mountCache !== undefined) return mountCache;
  mountCache = null;
  if (process.platform !== 'linux') return null;
  try {
    for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
      // id parent major:minor root mount-point options … - fstype source super-options
      const [left, right] = line.split(' - ');
      if (!right?.startsWith('cgroup2 ')) continue;
      const f = left.split(' ');
      if (f[3] === '/') return (mountCache = f[4]);
    }
  } catch {
    // no /proc: no cgroups
  }
  return null;
}

/** The PIDs in a cgroup and the cgroups below it (a process may have moved itself into a child cgroup). */
export function cgroupMembers(dir: string, depth = 0): number[] {
  const out: number[] = [];
  try {
    for (const l of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n')) if (l) out.push(Number(l));
  } catch {
    return out; // gone: empty
  }
  if (depth < 8) for (const sub of subdirs(dir)) out.push(...cgroupMembers(join(dir, sub), depth + 1));
  return out;
}

function subdirs(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
  } catch {
    return [];
  }
}

/**
 * SIGKILL everything in the cgroup and below it at once (`cgroup.kill`, Linux 5.14+: the kernel kills the
 * whole subtree, newcomers included); false where the file does not exist (the caller signals each member).
 */
export function killCgroup(dir: string): boolean {
  try {
    writeFileSync(join(dir, 'cgroup.kill'), '1');
    return true;
  } catch {
    return false;
  }
}

/** Remove a tree's cgroup once it is empty (children first); what cannot be removed yet stays. */
export function removeCgroup(dir: string, depth = 0): void {
  if (depth < 8) for (const sub of subdirs(dir)) removeCgroup(join(dir, sub), depth + 1);
  try {
    rmdirSync(dir);
  } catch {
    // still populated, or gone
  }
}

/**
 * Per prefix, the cgroups anywhere in the hierarchy whose name starts with it (a takeover: the dead
 * leader's helper made them next to its own cgroup, which may be any). One walk for all prefixes;
 * a tree's cgroup is never searched below (its children are its own).
 */
export function findCgroups(prefixes: string[]): string[][] {
  const out = prefixes.map(() => [] as string[]);
  const root = cgroupMount();
  if (!root || prefixes.length === 0) return out;
  const walk = (dir: string, depth: number) => {
    for (const name of subdirs(dir)) {
      const i = name.startsWith('lightworker-') ? prefixes.findIndex((p) => name.startsWith(p)) : -1;
      if (i >= 0) out[i].push(join(dir, name));
      else if (!name.startsWith('lightworker-') && depth < 16) walk(join(dir, name), depth + 1);
    }
  };
  walk(root, 0);
  return out;
}
