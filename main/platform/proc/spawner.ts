import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { Readable, Writable } from 'node:stream';
import { spawnOptions } from './fork-common.mjs';
import { attachDeadlineSink, selfFenced, T_DEADLINE, T_FENCED } from './self-fence.js';
import { helperCommand, readyPayload, type Containment, type HelperCommand } from './spawner-kinds.js';
import { markPids, processStartTime, type PidMark } from './process.js';

export { pythonCommand, type Containment } from './spawner-kinds.js';

/**
 * Where a leader's processes are forked: by default the process itself (`child_process.spawn`); once a
 * leader calls {@link useSpawner}, by a small helper process (spawner-helper.py) it starts once. A fork copies
 * the parent's page tables and write-protects all of its memory, so its cost grows with the parent: 1.7 ms
 * from an 85 MiB leader against 0.75 ms from a bare Node (measured in a 200-task drain, npm run bench), paid on the leader's event loop for every
 * worker turn and git call. Through the helper the leader writes one frame and reads the output back.
 *
 * Nothing about a process changes: the same argv (no shell), env, cwd, process group; its PID, start time
 * and PID mark are taken by the helper next to the fork, and signals still come from the leader (or a standby)
 * by process group and marker. The helper exits when the leader's end of its stdin closes (exit, crash,
 * SIGKILL). If it cannot start (no python3, or one older than 3.8) or dies, spawning falls back to the leader
 * itself, said once on stderr: requests it had not started yet are started directly, and a process it had started loses its output and exit status (its tree is then
 * swept like any other end).
 */

/** One process to start. */
export interface SpawnRequest {
  command: string;
  args: string[];
  cwd: string;
  /** The complete environment (nothing is inherited). */
  env: Record<string, string>;
  /** Own process group (a tree runTree sweeps as a whole). */
  detached: boolean;
  /** A stdin pipe (else stdin is closed). */
  stdin: boolean;
  /** Take the identity a sweep needs: start time, and the PID mark before the fork. */
  identity: boolean;
  /**
   * Linux: start it in a new cgroup of this name (cgroup.ts), where the helper can make one; the
   * cgroup it was started in comes back in {@link Identity}.
   */
  cgroup?: string;
}

/** What the callers use of a child process; Node's ChildProcess is one. Events: 'error', 'exit', 'close'. */
export interface ChildLike extends EventEmitter {
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  readonly stdin: Writable | null;
  kill(signal?: NodeJS.Signals): boolean;
}

/** The identity of a started process; pid -1 when it could not start (the child then emits 'error'). */
export interface Identity {
  pid: number;
  startTime: string | null;
  pidsSince: PidMark | null;
  /** The cgroup directory the helper started it in, else null (a direct spawn, no cgroup v2 writable). */
  cgroup: string | null;
}

export interface Spawned {
  child: ChildLike;
  /** Resolves once the process exists or failed to start (listeners attached before it miss nothing). */
  ready: Promise<Identity>;
}

let helper: Helper | null = null;
let wanted = false;

/**
 * Fork this process's worker turns, setup/verify commands and git calls from the spawner helper from now on
 * (a leader calls it; short CLI commands keep forking themselves: starting the helper costs more than they
 * fork). `LIGHTWORKER_SPAWNER=0` turns it off. No-op on Windows, which has no fork.
 */
export function useSpawner(): void {
  if (process.platform === 'win32' || process.env.LIGHTWORKER_SPAWNER === '0') return;
  wanted = true;
}

/** The helper's PID while it runs (tests, diagnostics), else null. */
export function spawnerPid(): number | null {
  return helper && !helper.dead ? (helper.proc.pid ?? null) : null;
}

/** What the running helper contains trees with, or null when none runs (direct spawns get neither). */
export function spawnerContainment(): Containment | null {
  return helper && !helper.dead ? helper.containment : null;
}

/** The PIDs of the processes the helper started and still runs (its own children, not orphans it adopted). */
export function spawnerChildPids(): Set<number> {
  return helper && !helper.dead ? helper.childPids() : new Set();
}

/** Start `req`: through the helper when this process uses one and it lives, else directly. */
export function spawnProcess(req: SpawnRequest): Spawned {
  if (wanted && !helper) {
    try {
      helper = new Helper();
    } catch (err) {
      wanted = false;
      process.stderr.write(`lightworker: the spawner helper could not start (${(err as Error).message}); starting processes directly\n`);
    }
  }
  if (helper && !helper.dead) return helper.spawn(req);
  return spawnDirect(req);
}

function spawnDirect(req: SpawnRequest): Spawned {
  const pidsSince = req.identity ? markPids() : null;
  const child = spawn(req.command, req.args, spawnOptions(req));
  const pid = child.pid ?? -1;
  const startTime = pid > 0 && req.identity ? processStartTime(pid) : null;
  return { child, ready: Promise.resolve({ pid, startTime, pidsSince, cgroup: null }) };
}

const T_SPAWN = 1;
const T_STDIN = 2;
const T_STDIN_END = 3;
const T_RELEASE = 4;

function frame(type: number, id: number, payload: Buffer | string): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  const head = Buffer.allocUnsafe(9);
  head.writeUInt32LE(5 + body.length, 0);
  head.writeUInt8(type, 4);
  head.writeUInt32LE(id, 5);
  return Buffer.concat([head, body]);
}

/** A process the helper runs, as the callers see it. */
class RemoteChild extends EventEmitter implements ChildLike {
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly stdin: Writable | null;
  pid = -1;
  /** Before 'spawned': the stdin bytes written so far, to replay if the helper dies first. */
  stdinLog: Buffer[] = [];
  stdinEnded = false;
  exited = false;
  done = false;
  direct: ChildLike | null = null;
  resolveReady!: (id: Identity) => void;
  readonly ready = new Promise<Identity>((r) => (this.resolveReady = r));

  constructor(
    readonly owner: Helper,
    readonly id: number,
    readonly req: SpawnRequest,
  ) {
    super();
    const destroy = (err: Error | null, cb: (e: Error | null) => void) => {
      if (this.stdout.destroyed && this.stderr.destroyed) owner.release(this);
      cb(err);
    };
    this.stdout = new Readable({ read() {}, destroy });
    this.stderr = new Readable({ read() {}, destroy });
    this.stdin = req.stdin
      ? new Writable({
          write: (chunk: Buffer, _enc, cb) => {
            if (this.direct) this.direct.stdin?.write(chunk);
            else owner.write(frame(T_STDIN, id, chunk));
            if (this.pid < 0) this.stdinLog.push(chunk);
            cb();
          },
          final: (cb) => {
            this.stdinEnded = true;
            if (this.direct) this.direct.stdin?.end();
            else owner.write(frame(T_STDIN_END, id, ''));
            cb();
          },
        })
      : null;
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): boolean {
    if (this.direct) return this.direct.kill(signal);
    if (this.pid <= 0 || this.exited) return false;
    try {
      process.kill(this.pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  /** The helper died before starting this one: start it here, and pass its events on. */
  startDirectly(): void {
    const { child, ready } = spawnDirect(this.req);
    this.direct = child;
    child.stdout?.on('data', (b: Buffer) => this.stdout.push(b));
    child.stderr?.on('data', (b: Buffer) => this.stderr.push(b));
    child.on('error', (e: Error) => this.emit('error', e));
    child.on('exit', (code, sig) => this.emit('exit', code, sig));
    child.on('close', (code, sig) => this.closed(code, sig));
    if (child.stdin) {
      child.stdin.on('error', () => undefined);
      for (const b of this.stdinLog) child.stdin.write(b);
      if (this.stdinEnded) child.stdin.end();
    }
    this.stdinLog = [];
    void ready.then((identity) => ((this.pid = identity.pid), this.resolveReady(identity)));
  }

  closed(code: number | null, signal: NodeJS.Signals | null): void {
    this.exited = true;
    this.stdout.push(null);
    this.stderr.push(null);
    this.emit('close', code, signal);
  }
}

/** The helper process and the leader's end of its protocol (see spawner-helper.py). */
class Helper {
  readonly proc: ChildProcess;
  dead = false;
  containment: Containment = { cgroup: null, subreaper: false };
  /** It said `ready`: from then on frames go straight to it, and its end is a death, not a failed start. */
  private started = false;
  /** Frames written before it said ready (if it never does, its die() starts their processes directly). */
  private queued: Buffer[] = [];
  private nextId = 1;
  private readonly live = new Map<number, RemoteChild>();
  private pending: Buffer = Buffer.alloc(0);

  constructor(cmd: HelperCommand = helperCommand()) {
    const proc = spawn(cmd.command, cmd.args, { cwd: cmd.cwd, env: cmd.env, stdio: ['pipe', 'pipe', 'inherit'], windowsHide: true });
    this.proc = proc;
    proc.on('error', (e) => this.die(`could not start (${e.message})`));
    proc.on('exit', (code, sig) => {
      // An exit of its own before `ready`: a python3 that cannot run it (older than 3.8, broken).
      if (sig === null && !this.started) this.die(`could not start (${cmd.command} exited with code ${code} before it was ready; it needs Python 3.8 or later)`);
      else this.die(`exited (${sig ?? `code ${code}`})`);
    });
    proc.stdin!.on('error', () => undefined); // its exit follows
    proc.stdout!.on('data', (b: Buffer) => this.read(b));
    // An idle helper keeps no one alive: a leader that is done exits (and its helper with it).
    proc.unref();
    (proc.stdin as Socket).unref();
    if (this.live.size === 0) (proc.stdout as Socket).unref();
  }

  write(b: Buffer): void {
    if (this.dead) return;
    if (!this.started) this.queued.push(b);
    else this.proc.stdin!.write(b);
  }

  spawn(req: SpawnRequest): Spawned {
    const id = this.nextId++;
    const child = new RemoteChild(this, id, req);
    if (this.live.size === 0) (this.proc.stdout as Socket).ref(); // a process runs: wait for it
    this.live.set(id, child);
    const { command: c, args: a, cwd, env, detached, stdin, identity: ident, cgroup: cg } = req;
    this.write(frame(T_SPAWN, id, JSON.stringify({ c, a, cwd, env, detached, stdin, ident, cg })));
    return { child, ready: child.ready };
  }

  childPids(): Set<number> {
    const out = new Set<number>();
    for (const c of this.live.values()) if (c.pid > 0) out.add(c.pid);
    return out;
  }

  /** The caller is done with `child` before it closed (runTree after the drain): the helper drops its pipes. */
  release(child: RemoteChild): void {
    if (child.done || child.direct) return;
    this.write(frame(T_RELEASE, child.id, ''));
    this.forget(child);
  }

  private forget(child: RemoteChild): void {
    child.done = true;
    this.live.delete(child.id);
    if (this.live.size === 0 && !this.dead) (this.proc.stdout as Socket).unref();
  }

  private read(chunk: Buffer): void {
    const buf = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    let off = 0;
    while (buf.length - off >= 9) {
      const len = buf.readUInt32LE(off);
      if (buf.length - off < 4 + len) break;
      this.handle(buf.readUInt8(off + 4), buf.readUInt32LE(off + 5), buf.subarray(off + 9, off + 4 + len));
      off += 4 + len;
    }
    this.pending = off === buf.length ? Buffer.alloc(0) : Buffer.from(buf.subarray(off));
  }

  private handle(type: number, id: number, payload: Buffer): void {
    if (type === 0) {
      this.started = true;
      this.containment = readyPayload(payload);
      const queued = this.queued;
      this.queued = [];
      for (const b of queued) this.proc.stdin!.write(b);
      attachDeadlineSink((ms, mono) => this.write(frame(T_DEADLINE, 0, JSON.stringify({ ms, mono }))));
      return;
    }
    if (type === T_FENCED) return selfFenced(JSON.parse(payload.toString('utf8')) as { killed: number; lateMs: number });
    const child = this.live.get(id);
    if (!child || child.direct) return;
    switch (type) {
      case 10: {
        const { pid, start, mark, cg } = JSON.parse(payload.toString('utf8')) as { pid: number; start: string | null; mark: PidMark | null; cg?: string | null };
        child.pid = pid;
        child.stdinLog = [];
        // Without /proc (macOS) the start time comes from `ps`, as for a direct spawn.
        const startTime = start ?? (child.req.identity && process.platform !== 'linux' ? processStartTime(pid) : null);
        child.resolveReady({ pid, startTime, pidsSince: mark, cgroup: cg ?? null });
        break;
      }
      case 11:
        this.forget(child);
        child.resolveReady({ pid: -1, startTime: null, pidsSince: null, cgroup: null });
        child.emit('error', new Error(payload.toString('utf8')));
        break;
      case 12:
        child.stdout.push(payload);
        break;
      case 13:
        child.stderr.push(payload);
        break;
      case 14: {
        const [code, sig] = JSON.parse(payload.toString('utf8')) as [number | null, NodeJS.Signals | null];
        child.exited = true;
        child.emit('exit', code, sig);
        break;
      }
      case 15: {
        const [code, sig] = JSON.parse(payload.toString('utf8')) as [number | null, NodeJS.Signals | null];
        this.forget(child);
        child.closed(code, sig);
        break;
      }
    }
  }

  /** The helper is gone: spawn directly from now on; what it had not started yet starts here. */
  private die(why: string): void {
    if (this.dead) return;
    this.dead = true;
    attachDeadlineSink(null);
    process.stderr.write(`lightworker: the spawner helper ${why}; starting processes directly from now on\n`);
    for (const child of [...this.live.values()]) {
      this.live.delete(child.id);
      if (child.pid < 0) child.startDirectly();
      else {
        child.done = true;
        child.stderr.push(Buffer.from('\nlightworker: the spawner helper died: the output and exit status of this process are lost\n'));
        if (!child.exited) child.emit('exit', null, null);
        child.closed(null, null);
      }
    }
  }
}

