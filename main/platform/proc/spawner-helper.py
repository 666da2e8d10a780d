# The spawner helper: a small Python process a leader starts once (spawner.ts) to start worker turns,
# setup/verify commands and git for it. A fork copies the parent's page tables and write-protects its memory,
# so it costs more the bigger the parent, and here it also leaves the leader's event loop; Python's subprocess
# starts a process with vfork, so nothing of this process is copied either (about 1.2 ms of CPU per start,
# against 3.6-4.4 ms forking from the leader: spawner-kinds.ts). Standard library only; Python 3.8 or later.
# Where it cannot run, the leader starts its processes itself.
#
# Protocol, both ways over stdin/stdout: frames of [u32 LE length of what follows][u8 type][u32 LE id][payload].
#   leader -> helper: 1 spawn (JSON {c, a, cwd, env, detached, stdin, ident, cg}), 2 stdin bytes, 3 stdin end,
#                     4 release (close the child's pipes, forget it), 5 lease deadline (JSON {ms, mono}: ms from
#                     mono, the leader's CLOCK_MONOTONIC in ms; ms null: none)
#   helper -> leader: 0 ready (JSON {cgroup, subreaper}), 10 spawned (JSON {pid, start, mark, cg}), 11 spawn error
#                     (UTF-8 message), 12 stdout bytes, 13 stderr bytes, 14 exit (JSON [code, signal]), 15 close
#                     (JSON [code, signal]), 16 fenced (JSON {killed, lateMs}: the lease deadline passed without a
#                     renewal; every tree was killed, lateMs after it)
# `ident` asks for the identity a sweep needs: `start` (the start time from /proc/PID/stat) and `mark` (where
# PID allocation stood before the fork, as fork-common.mjs's markPids says it for a direct spawn).
# While its leader lives it signals nothing but at a lease deadline (self-fence.ts): otherwise the leader (or a
# standby) sweeps trees by process group and marker.
# It exits when its stdin ends: a leader that exits or is killed (even with SIGKILL) leaves no helper behind,
# and a fleet runner's (one with a lease deadline armed) leaves none of its trees either.
#
# Containment (Linux): it is a child subreaper (prctl), so a process its trees orphan (setsid, double fork,
# daemon(3)) is re-parented to it instead of init, where the leader's sweep finds it; and, where the cgroup v2
# next to its own is writable, a request's `cg` names a cgroup it creates and forks that tree's leader in
# (cgroup.ts), which no change of group, session or environment leaves. Without a cgroup, a leader's death
# (its stdin ends) makes it kill everything below it: nothing else could tell those orphans apart from init's
# once it is gone.
import errno
import json
import os
import selectors
import signal
import struct
import subprocess
import sys
import time

# The containment (cgroup, subreaper) lives beside this file; -I keeps this folder off sys.path.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spawner_containment as contain  # noqa: E402

HEAD = struct.Struct('<IBI')
LINUX = sys.platform.startswith('linux')
sel = selectors.DefaultSelector()
children = {}  # id -> Child the leader still hears about
by_pid = {}  # pid -> Child not reaped yet (released ones included)
out = []
deadline = None  # the runner's lease deadline on clock(): its trees must be dead by then (self-fence.ts)
FENCE_POLL_S = 0.25


def clock():
    # Monotonic, and counting a suspended machine where it can: a lid closed past the lease is a lease lost.
    try:
        return time.clock_gettime(time.CLOCK_BOOTTIME)
    except (AttributeError, OSError):
        return time.monotonic()


def arm(req):
    """The runner's deadline, `ms` from when it sent it (`mono`: its CLOCK_MONOTONIC in ms, the clock of
    time.monotonic() here): a frame read late on a loaded host must not push the deadline later."""
    global deadline
    ms = req.get('ms')
    if ms is None:
        deadline = None
        return
    late = time.monotonic() * 1000.0 - req['mono'] if isinstance(req.get('mono'), (int, float)) else 0.0
    deadline = clock() + max(0.0, ms - (late if 0 <= late <= 60000 else 0.0)) / 1000.0


def fence():
    """The deadline passed: SIGKILL every tree this helper holds, and below it (as a subreaper, all of it)."""
    global deadline
    late = (clock() - deadline) * 1000.0
    deadline = None
    killed = contain.kill_trees([c for c in by_pid.values() if c.exit is None])
    send(16, 0, json.dumps({'killed': killed, 'lateMs': round(late)}))
    flush()
    reap()


def send(typ, cid, payload=b''):
    if isinstance(payload, str):
        payload = payload.encode('utf-8')
    out.append(HEAD.pack(5 + len(payload), typ, cid) + payload)
    # A start goes out at once: should this helper die right after it, the leader must not start it again.
    if typ == 10:
        flush()


def flush():
    global out
    if not out:
        return
    view = memoryview(b''.join(out))
    out = []
    try:
        while view:
            view = view[os.write(1, view):]
    except OSError:
        os._exit(0)  # the leader is gone


def read_number(path, prefix=None):
    try:
        with open(path, 'rb') as f:
            text = f.read().decode('ascii', 'replace')
    except OSError:
        return None
    if prefix is not None:
        line = next((l for l in text.splitlines() if l.startswith(prefix)), None)
        if line is None:
            return None
        text = line[len(prefix):]
    try:
        n = int(text.strip())
    except ValueError:
        return None
    return n if n > 0 else None


def mark_pids():
    """Where PID allocation stands (last PID handed out, the system's fork count), as fork-common.mjs says it."""
    if not LINUX:
        return None
    pid = read_number('/proc/sys/kernel/ns_last_pid')
    forks = read_number('/proc/stat', 'processes ')
    return {'pid': pid, 'forks': forks} if pid and forks else None


def start_time(pid):
    try:
        with open('/proc/%d/stat' % pid, 'rb') as f:
            stat = f.read().decode('utf-8', 'replace')
    except OSError:
        return None
    fields = stat[stat.rfind(')') + 2:].split(' ')
    return fields[19] if len(fields) > 19 else None


class Child:
    def __init__(self, cid, proc):
        self.id = cid
        self.proc = proc
        self.pipes = {}  # fd -> (file, frame type)
        self.exit = None  # [code, signal] once reaped
        self.stdin_buf = b''
        self.stdin_end = False
        self.stdin_watched = False
        self.cg = None  # its cgroup directory, where it was started in one


def popen(req):
    return subprocess.Popen(
        [req['c']] + list(req['a']),
        cwd=req['cwd'],
        env=req['env'],
        stdin=subprocess.PIPE if req.get('stdin') else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=bool(req.get('detached')),
        close_fds=True,
        restore_signals=True,
    )


def start(cid, req):
    mark = mark_pids() if req.get('ident') else None
    try:
        proc, directory = contain.popen_in(popen, req, req.get('cg'))
    except OSError as e:
        # As Node words it (`spawn git ENOENT`): callers and people read the code.
        return send(11, cid, 'spawn %s %s' % (req['c'], errno.errorcode.get(e.errno, 'EUNKNOWN') if e.errno else e))
    except (ValueError, TypeError) as e:
        return send(11, cid, 'spawn %s %s' % (req['c'], e))
    child = Child(cid, proc)
    child.cg = directory
    children[cid] = child
    by_pid[proc.pid] = child
    started = start_time(proc.pid) if req.get('ident') and LINUX else None
    send(10, cid, json.dumps({'pid': proc.pid, 'start': started, 'mark': mark, 'cg': directory}))
    for f, typ in ((proc.stdout, 12), (proc.stderr, 13)):
        os.set_blocking(f.fileno(), False)
        child.pipes[f.fileno()] = (f, typ)
        sel.register(f.fileno(), selectors.EVENT_READ, ('out', child))
    if proc.stdin is not None:
        os.set_blocking(proc.stdin.fileno(), False)


def close_pipe(child, fd):
    f, _ = child.pipes.pop(fd)
    sel.unregister(fd)
    f.close()


def on_output(child, fd):
    try:
        data = os.read(fd, 65536)
    except BlockingIOError:
        return
    except OSError:
        data = b''
    if data:
        if child.id in children:
            send(child.pipes[fd][1], child.id, data)
        return
    close_pipe(child, fd)
    settle(child)


# What one flush passes on of a pipe at most (a background child that keeps writing cannot hold it).
FLUSH_CAP = 1 << 20


def flush_output(child):
    """What a process wrote before it ended is in its pipes now: pass it on before its exit, so the
    leader has all of it by the exit however long this helper or the leader is kept from running after."""
    for fd in list(child.pipes):
        passed = 0
        while fd in child.pipes and passed < FLUSH_CAP:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                data = b''
            if not data:
                close_pipe(child, fd)
                break
            passed += len(data)
            if child.id in children:
                send(child.pipes[fd][1], child.id, data)


def settle(child):
    """'close' once the process was reaped and both of its output pipes ended; forget it then."""
    if child.exit is None or child.pipes:
        return
    if children.get(child.id) is child:
        del children[child.id]
        send(15, child.id, json.dumps(child.exit))
    by_pid.pop(child.proc.pid, None)


def reap():
    # As a subreaper this process also inherits orphans: every child is reaped, not only those it started.
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            pid = 0
        if pid == 0:
            break
        child = by_pid.get(pid)
        if child is not None and child.exit is None:
            exited(child, status)
    for child in list(by_pid.values()):
        # Reaped by Popen itself (it never should be: every Popen is kept until reaped here): its code as Popen saw it.
        if child.exit is None and child.proc.returncode is not None:
            code = child.proc.returncode
            exited(child, (code & 0xFF) << 8 if code >= 0 else -code)


def exited(child, status):
    if os.WIFSIGNALED(status):
        num = os.WTERMSIG(status)
        try:
            name = signal.Signals(num).name
        except ValueError:
            name = 'SIG%d' % num
        child.exit = [None, name]
        child.proc.returncode = -num
    else:
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        child.exit = [code, None]
        child.proc.returncode = code if code is not None else 0
    flush_output(child)
    if children.get(child.id) is child:
        send(14, child.id, json.dumps(child.exit))
    settle(child)


def close_stdin(child):
    if child.stdin_watched:
        sel.unregister(child.proc.stdin.fileno())
        child.stdin_watched = False
    child.stdin_buf = b''
    try:
        child.proc.stdin.close()
    except OSError:
        pass  # the process stopped reading


def pump_stdin(child):
    stdin = child.proc.stdin
    if stdin is None or stdin.closed:
        return
    while child.stdin_buf:
        try:
            n = os.write(stdin.fileno(), child.stdin_buf)
        except BlockingIOError:
            break
        except OSError:
            return close_stdin(child)  # the process may exit before reading all of its input
        child.stdin_buf = child.stdin_buf[n:]
    if child.stdin_buf and not child.stdin_watched:
        sel.register(stdin.fileno(), selectors.EVENT_WRITE, ('in', child))
        child.stdin_watched = True
    elif not child.stdin_buf:
        if child.stdin_watched:
            sel.unregister(stdin.fileno())
            child.stdin_watched = False
        if child.stdin_end:
            close_stdin(child)


def handle(typ, cid, payload):
    if typ == 1:
        return start(cid, json.loads(payload.decode('utf-8')))
    if typ == 5:
        return arm(json.loads(payload.decode('utf-8')))
    child = children.get(cid)
    if child is None:
        return
    if typ == 2:
        child.stdin_buf += payload
        pump_stdin(child)
    elif typ == 3:
        child.stdin_end = True
        pump_stdin(child)
    elif typ == 4:
        del children[cid]
        for fd in list(child.pipes):
            close_pipe(child, fd)
        if child.proc.stdin is not None and not child.proc.stdin.closed:
            close_stdin(child)
        settle(child)


pending = b''


def on_leader():
    global pending
    try:
        chunk = os.read(0, 1 << 16)
    except BlockingIOError:
        return
    if not chunk:
        flush()
        if deadline is not None:
            # A fleet runner's end (its lease armed): its tasks are orphaned and resumed elsewhere once its
            # lease expires, and nobody on another host can kill its trees: they die with it, now.
            contain.kill_trees([c for c in by_pid.values() if c.exit is None])
        elif contain.SUBREAPER and contain.CGROUP is None:
            contain.kill_descendants(reap)
        # The leader's end (exit, crash, SIGKILL): with cgroups its trees live on in them, where its
        # successor's takeover finds and kills them.
        os._exit(0)
    buf = pending + chunk if pending else chunk
    off = 0
    while len(buf) - off >= 9:
        length, typ, cid = HEAD.unpack_from(buf, off)
        if len(buf) - off < 4 + length:
            break
        handle(typ, cid, buf[off + 9:off + 4 + length])
        off += 4 + length
    pending = buf[off:]


def main():
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    # Handlers, not SIG_IGN: an ignored signal would stay ignored in every process started from here.
    signal.signal(signal.SIGCHLD, lambda *_: None)
    # A terminal's Ctrl-C or hang-up reaches the whole foreground group: the leader decides when to stop.
    signal.signal(signal.SIGINT, lambda *_: None)
    signal.signal(signal.SIGHUP, lambda *_: None)
    os.set_blocking(0, False)
    sel.register(0, selectors.EVENT_READ, ('leader', None))
    sel.register(wake_r, selectors.EVENT_READ, ('wake', None))
    send(0, 0, json.dumps({'cgroup': contain.CGROUP, 'subreaper': contain.SUBREAPER}))
    flush()
    while True:
        if deadline is not None and clock() >= deadline:
            fence()
        # At most FENCE_POLL_S: select() sleeps on a clock that stops while the machine is suspended.
        timeout = None if deadline is None else min(FENCE_POLL_S, max(0, deadline - clock()))
        for key, _ in sel.select(timeout):
            kind, child = key.data
            if kind == 'leader':
                on_leader()
            elif kind == 'wake':
                try:
                    while os.read(wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
                reap()
            elif kind == 'out':
                if key.fd in child.pipes:
                    on_output(child, key.fd)
            elif kind == 'in':
                pump_stdin(child)
        flush()


main()
