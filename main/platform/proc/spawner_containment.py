# The spawner helper's containment (Linux), imported by spawner-helper.py (read its header first): a child
# subreaper, so orphans of the trees it starts are re-parented to it rather than to init, and a cgroup v2 per
# tree where the cgroup next to the helper's own is writable (cgroup.ts names and sweeps them).
import os
import signal
import sys
import time

LINUX = sys.platform.startswith('linux')


def set_subreaper():
    """Orphans of the trees started here are re-parented to this process (PR_SET_CHILD_SUBREAPER)."""
    if not LINUX:
        return False
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def own_cgroup():
    """The directory of this process's cgroup v2, or None (no cgroup v2 mounted, not Linux)."""
    try:
        with open('/proc/self/cgroup') as f:
            path = next((l[3:].rstrip('\n') for l in f if l.startswith('0::')), None)
        with open('/proc/self/mountinfo') as f:
            mount = None
            for line in f:
                left, _, right = line.partition(' - ')
                fields = left.split(' ')
                if right.startswith('cgroup2 ') and fields[3] == '/':
                    mount = fields[4]
                    break
    except OSError:
        return None
    if path is None or mount is None or path.endswith(' (deleted)'):
        return None
    return mount.rstrip('/') + path if path != '/' else mount


def join_cgroup(directory):
    with open(directory + '/cgroup.procs', 'w') as f:
        f.write(str(os.getpid()))


def probe_cgroup():
    """Where tree cgroups go: next to this process's own, if it may create one and move itself in and back."""
    base = own_cgroup() if LINUX and '--no-cgroup' not in sys.argv else None
    if base is None:
        return None
    probe = '%s/lightworker-probe-%d' % (base, os.getpid())
    try:
        os.mkdir(probe)
    except OSError:
        return None
    try:
        join_cgroup(probe)
        join_cgroup(base)
        return base
    except OSError:
        try:
            join_cgroup(base)
        except OSError:
            pass
        return None
    finally:
        try:
            os.rmdir(probe)
        except OSError:
            pass


def popen_in(popen, req, cg):
    """Start `req` inside cgroup `cg` (created here): this process steps in for the fork (vfork: the child is
    born there, before it can run or fork anything) and back out. Returns (proc, the cgroup or None)."""
    if CGROUP is None or not cg or '/' in cg or not cg.startswith('lightworker-'):
        return popen(req), None
    directory = CGROUP + '/' + cg
    try:
        os.mkdir(directory)
    except FileExistsError:
        pass
    except OSError:
        return popen(req), None
    try:
        join_cgroup(directory)
    except OSError:
        remove_quietly(directory)
        return popen(req), None
    try:
        proc = popen(req)
    except BaseException:
        leave_cgroup()
        remove_quietly(directory)
        raise
    leave_cgroup()
    return proc, directory


def leave_cgroup():
    try:
        join_cgroup(CGROUP)
    except OSError:
        # Staying in a tree's cgroup would have this helper killed with the tree: leave (the leader then starts
        # processes itself).
        os._exit(1)


def remove_quietly(directory):
    try:
        os.rmdir(directory)
    except OSError:
        pass


def descendants():
    """Every live process below this one (all that its trees started: as a subreaper it is their ancestor)."""
    parent = {}
    for e in os.listdir('/proc'):
        if not e.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % e, 'rb') as f:
                fields = f.read().decode('utf-8', 'replace').rsplit(')', 1)[1].split(' ')
        except OSError:
            continue
        if fields[1] not in ('Z', 'X'):
            parent[int(e)] = int(fields[2])
    below, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier and p not in below}
        below |= frontier
    return below


def kill_descendants(reap):
    """The leader died and no cgroup holds its trees: SIGTERM everything below (once each), then after a grace
    SIGKILL until nothing is left."""
    deadline = time.time() + 2
    termed = set()
    for _ in range(300):
        pids = descendants()
        if not pids:
            return
        late = time.time() > deadline
        for p in pids:
            if p in termed and not late:
                continue
            termed.add(p)
            try:
                os.kill(p, signal.SIGKILL if late else signal.SIGTERM)
            except OSError:
                pass
        time.sleep(0.02)
        reap()


def kill_quietly(fn, *args):
    try:
        fn(*args)
    except OSError:
        pass


def kill_trees(children):
    """A runner's lease deadline passed (self-fencing): SIGKILL each live child's cgroup, group and itself,
    then, as a subreaper, whatever is still below this process. Returns how many processes were signalled."""
    victims = set()
    for child in children:
        victims.add(child.proc.pid)
        if child.cg:
            try:
                with open(child.cg + '/cgroup.kill', 'w') as f:
                    f.write('1')
            except OSError:
                pass
        kill_quietly(os.killpg, child.proc.pid, signal.SIGKILL)
        kill_quietly(os.kill, child.proc.pid, signal.SIGKILL)
    if SUBREAPER and LINUX:
        for _ in range(50):
            below = descendants()
            if not below:
                break
            victims |= below
            for p in below:
                kill_quietly(os.kill, p, signal.SIGKILL)
            time.sleep(0.002)
    return len(victims)


SUBREAPER = set_subreaper()
CGROUP = probe_cgroup()
