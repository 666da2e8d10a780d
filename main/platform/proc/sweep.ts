import { treeMarkerEnv } from './marker.js';
import { execFileSync } from 'node:child_process';
import { cgroupMembers, cgroupPrefix, findCgroups, killCgroup, removeCgroup } from './cgroup.js';
import { descendantsIn, environOf, isSameProcess, listProcesses, pidExists, pidsHandedOutSince, sleep, type PidMark, type ProcEntry } from './process.js';

/**
 * Sweeping process trees (run-tree.ts owns them): find every process of a tree — its process group,
 * its leader's descendants, what carries its marker (Linux), what is in its cgroup (Linux, the Python spawner
 * helper), what the helper adopted from it as a child subreaper — then SIGTERM, a grace, and SIGKILL (with
 * `cgroup.kill`) until nothing is left.
 */

/** What is known of a spawned tree: its leader (also its process group id) and its marker. */
export interface Tree {
  /** Leader PID and process group id; ≤ 0 when the leader never existed or is unknown. */
  pid: number;
  startTime: string | null;
  marker: Record<string, string> | null;
  /**
   * Linux: only processes started at or after this many clock ticks since boot can carry the marker (a
   * tree that was just run: whatever it started is younger than its leader), so older processes' environments
   * are not read. Unset (takeover): every process is checked.
   */
  markerSince?: number;
  /**
   * Where PID allocation stood just before the leader was spawned (a tree that was just run): what it
   * started can only have PIDs handed out since, so a sweep reads those /proc entries alone when that
   * set is small and provably complete (process.ts `pidsHandedOutSince`). Unset: all of /proc.
   */
  pidsSince?: PidMark;
  /**
   * Linux: the cgroups the tree was started in (cgroup.ts); every process in them is the tree's and is
   * killed with it. Unset (a takeover, a kill of recorded trees): looked up by the marker's name anywhere in the
   * cgroup hierarchy; [] when it has none.
   */
  cgroups?: string[];
  /**
   * The spawner helper that started it is a child subreaper without cgroups: orphans of the tree are re-parented
   * to that helper (this PID), among those of every other tree it runs (see {@link adoptedBy}).
   */
  adopter?: number;
}

/** The tree a task's recorded run left: its leader (PID and start time; -1 when none was recorded) and the attempt's marker. */
export function taskTree(homeRoot: string, t: { id: string; attempt: number; pid: number | null; pidStart: string | null }): Tree {
  return { pid: t.pid && t.pid > 0 ? t.pid : -1, startTime: t.pidStart, marker: treeMarkerEnv(homeRoot, t.id, t.attempt) };
}

/**
 * Trees started through a subreaper helper without cgroups, from their spawn until their sweep ended. An
 * orphan the helper adopted was born (its start time) while the tree it came from was in this set; it is
 * swept with a tree once no other tree of the set had started by its birth: then it can only be that tree's,
 * or one of an ended tree that left it behind. An orphan born while two trees ran waits for the later end.
 */
const adopting = new Set<Tree>();

/** Register a tree that a subreaper helper started (until its sweep ends). */
export function trackAdopting(tree: Tree): void {
  if (tree.adopter && tree.markerSince !== undefined) adopting.add(tree);
}

/** The orphans `t`'s helper adopted that can only be `t`'s or an ended tree's, with their descendants. */
function adoptedBy(t: Tree, procs: ProcEntry[], own: Set<number>): number[] {
  if (!t.adopter || t.markerSince === undefined || !adopting.has(t)) return [];
  const out: number[] = [];
  for (const p of procs) {
    if (p.ppid !== t.adopter || own.has(p.pid) || p.start < t.markerSince) continue;
    if ([...adopting].some((u) => u !== t && u.adopter === t.adopter && u.markerSince! <= p.start)) continue;
    out.push(p.pid, ...descendantsIn(procs, p.pid));
  }
  return out;
}

/** The live (non-zombie) processes in a tree's cgroups. */
function inCgroups(t: Tree): number[] {
  if (!t.cgroups?.length) return [];
  const pids = t.cgroups.flatMap((d) => cgroupMembers(d));
  return pids.length ? listProcesses(pids).map((p) => p.pid) : [];
}

/** Trees that do not say which cgroups they have get theirs by name (one walk of the hierarchy for all). */
function lookUpCgroups(trees: Tree[]): void {
  const unknown = trees.filter((t) => t.cgroups === undefined && t.marker && process.platform === 'linux');
  if (!unknown.length) return;
  const found = findCgroups(unknown.map((t) => cgroupPrefix(t.marker!)));
  unknown.forEach((t, i) => (t.cgroups = found[i]));
}

interface Scan {
  /** Per tree: the processes found. */
  members: number[][];
  /** Per tree: those of them in its process group (one group signal reaches them). */
  grouped: Set<number>[];
  /** Per tree: whether its process group may be signalled as a whole. */
  groups: boolean[];
}

/**
 * The group of a tree may be signalled when its leader is still the recorded process, or is gone:
 * Linux and macOS never hand out a PID while a group of that id has members, so a PID that was
 * recycled by an unrelated process means the old group is empty (and that new process is left alone).
 */
function groupUsable(t: Tree): boolean {
  return t.pid > 0 && process.platform !== 'win32' && (isSameProcess(t.pid, t.startTime) || !pidExists(t.pid));
}

/** The PIDs the trees' processes can have, when every tree was just run and that set is small; else null. */
function candidatePids(trees: Tree[]): number[] | null {
  const all = new Set<number>();
  for (const t of trees) {
    if (!t.pidsSince || t.markerSince === undefined) return null;
    const pids = pidsHandedOutSince(t.pidsSince);
    if (!pids) return null;
    for (const p of pids) all.add(p);
  }
  return [...all];
}

function scanTrees(trees: Tree[], own: Set<number>): Scan {
  const procs = listProcesses(candidatePids(trees) ?? undefined);
  const linux = process.platform === 'linux';
  const members = trees.map(() => [] as number[]);
  const grouped = trees.map(() => new Set<number>());
  const groups = trees.map(groupUsable);
  // Each environment is read at most once per scan, however many trees are swept together.
  const envs = new Map<number, Set<string> | null>();
  const carries = (pid: number, marker: Record<string, string>) => {
    if (!envs.has(pid)) envs.set(pid, environOf(pid));
    const env = envs.get(pid);
    return Boolean(env) && Object.entries(marker).every(([k, v]) => env!.has(`${k}=${v}`));
  };
  trees.forEach((t, i) => {
    const found = new Set<number>();
    if (groups[i]) {
      for (const p of procs) {
        if (p.pgrp !== t.pid) continue;
        found.add(p.pid);
        grouped[i].add(p.pid);
      }
      if (isSameProcess(t.pid, t.startTime)) for (const d of descendantsIn(procs, t.pid)) found.add(d);
    }
    const since = t.markerSince ?? 0;
    if (t.marker) for (const p of procs) if (p.start >= since && !found.has(p.pid) && carries(p.pid, t.marker)) found.add(p.pid);
    for (const pid of inCgroups(t)) found.add(pid);
    for (const pid of adoptedBy(t, procs, own)) found.add(pid);
    found.delete(process.pid);
    found.delete(1);
    if (t.adopter) found.delete(t.adopter);
    members[i] = [...found];
    // Without /proc the group is probed with signal 0 (it fails once no member is left).
    if (groups[i] && !linux) groups[i] = probeGroup(t.pid);
    else if (groups[i]) groups[i] = procs.some((p) => p.pgrp === t.pid);
  });
  return { members, grouped, groups };
}

function probeGroup(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Signal what a scan found. With `onlyNew`, processes already signalled (in `seen`) and groups already
 * signalled are skipped: a second SIGTERM means "hurry, skip cleanup" to many programs.
 */
function signalScan(trees: Tree[], scan: Scan, signal: NodeJS.Signals, seen: Set<number>[], groupsDone: boolean[], onlyNew: boolean): void {
  trees.forEach((t, i) => {
    let viaGroup = false;
    if (scan.groups[i] && !(onlyNew && groupsDone[i])) {
      groupsDone[i] = viaGroup = true;
      try {
        process.kill(-t.pid, signal);
      } catch {
        // the group emptied meanwhile
      }
    }
    for (const pid of scan.members[i]) {
      if (onlyNew && seen[i].has(pid)) continue;
      if (viaGroup && scan.grouped[i].has(pid)) {
        seen[i].add(pid);
        continue;
      }
      seen[i].add(pid);
      try {
        process.kill(pid, signal);
      } catch {
        // already gone
      }
    }
  });
}

const isEmpty = (scan: Scan) => scan.members.every((m) => m.length === 0) && scan.groups.every((g) => !g);

/**
 * Sweep several trees at once (one /proc scan per round): SIGTERM to each group, its leader's known
 * descendants and its marked processes, newcomers included, for up to `graceMs`; then SIGKILL until
 * nothing is left (bounded). Windows: `taskkill /T /F` on a leader that is still the recorded process.
 * Returns, per tree, how many processes were signalled (0: nothing of it was running).
 */
export async function sweepTrees(trees: Tree[], graceMs: number, own: () => Set<number> = () => new Set()): Promise<number[]> {
  if (process.platform === 'win32') return trees.map(taskkill);
  lookUpCgroups(trees);
  try {
    return await sweepFound(trees, graceMs, own);
  } finally {
    for (const t of trees) {
      for (const d of t.cgroups ?? []) removeCgroup(d);
      adopting.delete(t);
    }
  }
}

async function sweepFound(trees: Tree[], graceMs: number, own: () => Set<number>): Promise<number[]> {
  const seen = trees.map(() => new Set<number>());
  const groupsDone = trees.map(() => false);
  let scan = scanTrees(trees, own());
  const deadline = Date.now() + graceMs;
  // Most trees are gone a few ms after SIGTERM: look again soon, then back off (each scan reads /proc).
  for (let wait = 10; !isEmpty(scan) && Date.now() < deadline; wait = Math.min(wait * 2, 100)) {
    signalScan(trees, scan, 'SIGTERM', seen, groupsDone, true);
    await sleep(Math.max(1, Math.min(wait, deadline - Date.now())));
    scan = scanTrees(trees, own());
  }
  // SIGKILL cannot be ignored; a few rounds catch what was forked between a scan and its signal.
  for (let round = 0; round < 40 && !isEmpty(scan); round++) {
    signalScan(trees, scan, 'SIGKILL', seen, groupsDone, false);
    // The kernel kills a cgroup's whole subtree at once, newcomers included (Linux 5.14+); never one holding the
    // sweeper itself (a runner an agent's MCP session started inside a task, now taking that task over).
    for (const t of trees) for (const d of t.cgroups ?? []) if (!cgroupMembers(d).includes(process.pid)) killCgroup(d);
    await sleep(25);
    scan = scanTrees(trees, own());
  }
  return seen.map((s, i) => s.size || (groupsDone[i] ? 1 : 0));
}

/** Sweep one tree; see {@link sweepTrees}. */
export async function sweepTree(tree: Tree, graceMs: number, own?: () => Set<number>): Promise<number> {
  return (await sweepTrees([tree], graceMs, own))[0];
}

function taskkill(t: Tree): number {
  if (t.pid <= 0 || !isSameProcess(t.pid, t.startTime)) return 0;
  try {
    execFileSync('taskkill', ['/T', '/F', '/PID', String(t.pid)], { stdio: 'ignore' });
  } catch {
    // already gone
  }
  return 1;
}

