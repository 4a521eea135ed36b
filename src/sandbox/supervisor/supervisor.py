"""Mordn's in-sandbox supervisor: one per running workspace sandbox, for both backends.

The host starts it once inside the workspace's boundary (bubblewrap: as the sandbox's PID 1;
Docker: as an exec in the workspace container) and talks to it over stdin/stdout in frames:

    type (1 byte) | channel (u32, big-endian) | length (u32, big-endian) | payload

Host to supervisor, per channel (one channel per command):
    S  start   JSON {"argv": [...], "stdin": bool, "rlimits": {"nofile": n, ...},
               "env": {"NAME": "value", ...}?}  (env: added to the command's environment)
    I  stdin   bytes for the command's stdin (never more than the stdin credit)
    E  stdin end
    K  kill    the command and every process it started
    C  credit  u32: output bytes the host has taken, so more may be sent
Supervisor to host:
    R  ready   (channel 0) JSON {"pid": <pid inside>, "protocol": 2, "subreaper": bool,
               "proxyPort": int|null}
    P  started (the command is with its reaper: from here on it may have run)
    O  stdout  bytes      X  stderr  bytes
    W  credit  u32: stdin bytes written to the command, so more may be sent
    Q  exit    JSON {"code": int|null, "signal": int|null, "killed": bool, "error": str?,
               "cpuSeconds": float?}  (cpuSeconds: user + system CPU time of the command and
               of every process of it its reaper waited for, orphans included; absent when the
               command did not start or its reaper died)

The way out (protocol 2): the supervisor listens on 127.0.0.1:<proxyPort> inside the sandbox's
own network namespace, where sandboxed code reaches it as its HTTP proxy, and carries each
connection to the host over its channel of its own (ids from TUNNEL_CHANNELS up, chosen by the
supervisor). The host decides what every connection may reach; the sandbox has no other route.
    N  open     (supervisor to host) a new connection
    D  data     bytes, either way (never more than the other side's credit)
    A  credit   u32, either way: bytes taken from the channel, so more may be sent
    H  half     either way: no more data from this side (shutdown for writing)
    Z  close    either way: the connection is gone (or must go)

Every command runs under a reaper: a forked copy of this process that makes itself a child
subreaper and runs one command at a time. It spawns the command (posix_spawn: the interpreter is
not copied for it) in a new session and, when the command ends, is killed, or the supervisor goes
away, SIGKILLs every descendant until none is left; only then may it take another command.
Orphans of a command (double forks, setsid, nohup) are reparented to its reaper, never to another
command's, so a call ends with everything it started and nothing else in the workspace.

Reapers are forked once and kept (a few idle ones at most), each for one set of rlimits, which it
carries itself: a spawned command inherits them, and a hard limit, once lowered, cannot be raised
again. A reaper leaves once it has used half of its own RLIMIT_CPU. The supervisor talks to each
over a socketpair, in messages of a type byte and a u32 length, then the payload:
    S  start   (supervisor to reaper) the start JSON as the host sent it; the command's stdin
               (when it has one), stdout and stderr come with it (SCM_RIGHTS)
    K  kill    (supervisor to reaper) the command and every process it started
and the reaper answers each start with one line of JSON, the command's exit report (with
"retire": true when it leaves after it).

The supervisor and the reapers are not dumpable: processes of the same uid cannot open their
/proc/<pid>/mem or change them, nor their own /proc/self/oom_score_adj. A command is dumpable again
once executed (the kernel resets it at exec), and its reaper then raises the command's
oom_score_adj to 1000, so the OOM killer of the workspace's cgroup takes a command, never the
supervisor or a reaper (whose score the host also lowers where it may). That is a moment after the
exec, so the reaper then raises every process the command forked before (at once, and again a few
times in its first half second, for forks that were under way). A command may still lower its own
score to its reaper's floor: the order is a courtesy to well-behaved code, the memory limit of the
cgroup the boundary.
"""

import ctypes
import errno
import json
import os
import resource
import select
import signal
import socket
import struct
import time

PROTOCOL = 2
HEADER = struct.Struct(">BII")
MAX_FRAME = 64 * 1024
OUTPUT_WINDOW = 256 * 1024
# Tunnel channels are the supervisor's to number: the upper half of the channel space.
TUNNEL_CHANNELS = 0x80000000
# Bytes either side of a tunnel may send before the other grants more.
TUNNEL_WINDOW = 256 * 1024
# Connections the listener holds at once (the host's own cap per workspace is lower).
MAX_TUNNELS = 512
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
# After the reaper is done, output still held open by a process outside the command's tree (a
# descriptor passed over a socket) must not hold the call open for ever.
DRAIN_GRACE_SECONDS = 1.0
COMMAND_OOM_SCORE_ADJ = 1000
# Supervisor to reaper: a type byte and a payload length (see the module's description).
REAPER_MESSAGE = struct.Struct(">cI")
# Reapers kept idle for later commands (each is a process of the workspace's).
MAX_IDLE_REAPERS = 2
# A reaper carries its commands' RLIMIT_CPU itself; it leaves once it has used this share of it.
REAPER_CPU_SHARE = 0.5
# Descriptors a reaper is given per command: stdin (optional), stdout, stderr.
COMMAND_FDS = 3
FD_BYTES = struct.calcsize("i")
# How long a reaper waits for a command's exec to complete, and how often it then tries to raise
# the command's OOM score before it is dumpable (see raise_oom_score).
EXEC_WAIT_SECONDS = 1.0
OOM_SCORE_ATTEMPTS = 1000
# When a reaper walks its command's processes again (seconds after the spawn), for any forked while
# the command was being raised: a fork then under way copies the old score but is not listed yet.
OOM_SCORE_REWALKS = (0.005, 0.05, 0.5)
# Whether reapers can be child subreapers here (see can_be_subreaper); set once at start.
SUBREAPER = True
RLIMITS = {
    "nofile": resource.RLIMIT_NOFILE,
    "fsize": resource.RLIMIT_FSIZE,
    "cpu": resource.RLIMIT_CPU,
    "as": resource.RLIMIT_AS,
    "nproc": resource.RLIMIT_NPROC,
    "core": resource.RLIMIT_CORE,
}

libc = ctypes.CDLL(None, use_errno=True)


def prctl(option, value):
    if libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl")


def write_all(fd, data):
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except InterruptedError:
            continue
        view = view[written:]


def process_stats():
    """(pid, fields of /proc/<pid>/stat after the command name) for every process we can see."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name (field 2) may hold spaces and parentheses: fields follow the last ")".
        yield int(name), stat[stat.rfind(b")") + 2:].split()


def kill_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def children_of_self():
    pids = set()
    listed = False
    for task in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/children" % task) as handle:
                pids.update(int(pid) for pid in handle.read().split())
            listed = True
        except OSError:
            pass
    if listed:
        return pids
    # Kernels without /proc/<pid>/task/<tid>/children (gVisor): every process whose parent is us.
    me = os.getpid()
    return {pid for pid, fields in process_stats() if len(fields) > 1 and int(fields[1]) == me}


def kill_descendants(on_reaped):
    """SIGKILLs every child until none is left; orphans of killed children become ours first."""
    while True:
        kill_all(children_of_self())
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        on_reaped(pid, status)


def session_members(session):
    """Live processes of a session, from /proc (zombies are dead already)."""
    return [
        pid
        for pid, fields in process_stats()
        if len(fields) > 3 and fields[0] != b"Z" and int(fields[3]) == session
    ]


def kill_session(session, on_reaped):
    """Where no subreaper can be had: SIGKILLs the command's session until it is empty."""
    for _ in range(1000):
        members = session_members(session)
        if not members:
            break
        kill_all(members)
        try:
            while True:
                pid, status = os.waitpid(-1, os.WNOHANG)
                if not pid:
                    break
                on_reaped(pid, status)
        except ChildProcessError:
            pass
        time.sleep(0.005)
    try:
        while True:
            pid, status = os.waitpid(-1, 0)
            on_reaped(pid, status)
    except ChildProcessError:
        pass


def can_be_subreaper():
    """gVisor (as of Debian 12) refuses PR_SET_CHILD_SUBREAPER to all but PID 1: ask a child."""
    child = os.fork()
    if child == 0:
        try:
            prctl(PR_SET_CHILD_SUBREAPER, 1)
            os._exit(0)
        except BaseException:  # noqa: B036 - any failure means no
            os._exit(1)
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status) == 0


def describe_status(status):
    if os.WIFSIGNALED(status):
        return {"code": None, "signal": os.WTERMSIG(status)}
    return {"code": os.waitstatus_to_exitcode(status), "signal": None}


def close_all(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def read_message(connection):
    """A reaper's next message from the supervisor: (type, payload, descriptors), or None once the
    supervisor is gone. Descriptors come with a message's first bytes, never later ones."""
    fds = []
    header = b""
    while len(header) < REAPER_MESSAGE.size:
        try:
            # Received close-on-exec: a command gets its pipes as 0, 1 and 2 only.
            data, ancillary, flags, _ = connection.recvmsg(
                REAPER_MESSAGE.size - len(header), socket.CMSG_SPACE(COMMAND_FDS * FD_BYTES), socket.MSG_CMSG_CLOEXEC
            )
        except ConnectionError:
            data, ancillary, flags = b"", [], 0
        for level, kind, received in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                count = len(received) // FD_BYTES
                fds.extend(struct.unpack("%di" % count, received[: count * FD_BYTES]))
        if not data:
            close_all(fds)
            return None
        if flags & socket.MSG_CTRUNC:
            # Descriptors lost on the way (none left to take them): the start must fail.
            fds.append(-1)
        header += data
    kind, length = REAPER_MESSAGE.unpack(header)
    payload = bytearray()
    while len(payload) < length:
        chunk = connection.recv(min(length - len(payload), 1024 * 1024))
        if not chunk:
            close_all(fds)
            return None
        payload += chunk
    return kind, bytes(payload), fds


def find_program(name, environment):
    """What execvp would run for `name` under `environment`'s PATH (never a file of the cwd)."""
    if "/" in name:
        return name
    for directory in environment.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(directory or ".", name)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))


class CommandRunner:
    """A reaper's side: runs the commands the supervisor sends, one at a time."""

    def __init__(self, connection, stdin_null, wakeup_read):
        self.connection = connection
        self.stdin_null = stdin_null
        self.wakeup_read = wakeup_read
        self.environment = dict(os.environ)
        # The rlimits this reaper carries, set by its first command; every later one has the same.
        self.limits = None
        # Set when this reaper must not take another command.
        self.leaving = False

    def serve(self):
        """Runs commands until the supervisor goes or this reaper has to leave."""
        while not self.leaving:
            message = read_message(self.connection)
            if message is None:
                return
            kind, payload, fds = message
            if kind != b"S":
                # A kill that came after its command had ended.
                close_all(fds)
                continue
            report = self.run(json.loads(payload), fds)
            if self.leaving:
                report["retire"] = True
            try:
                self.connection.sendall(json.dumps(report).encode() + b"\n")
            except OSError:
                return

    def run(self, start, fds):
        """One command, from spawn to the last of its processes killed: its exit report."""
        # Children's rusage counts every process this reaper has waited for (and what they waited
        # for): the command's whole tree, since its orphans are reparented to this subreaper.
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            command = self.spawn(start, fds)
        except Exception as error:  # noqa: BLE001 - any failure to start is reported
            return {"code": 127, "signal": None, "killed": False, "error": str(error)}
        finally:
            close_all(fd for fd in fds if fd >= 0)
        outcome = {}

        def reaped(pid, status):
            if pid == command:
                outcome.update(describe_status(status))

        killed = False
        rewalks = [time.monotonic() + delay for delay in OOM_SCORE_REWALKS]
        while not outcome and not killed:
            try:
                pid, status = os.waitpid(command, os.WNOHANG)
            except ChildProcessError:
                break
            if pid:
                reaped(pid, status)
                break
            if rewalks and time.monotonic() >= rewalks[0]:
                rewalks.pop(0)
                raise_oom_scores(children_of(os.getpid()))
            timeout = max(0.0, rewalks[0] - time.monotonic()) if rewalks else None
            try:
                ready, _, _ = select.select([self.connection, self.wakeup_read], [], [], timeout)
            except InterruptedError:
                continue
            if self.wakeup_read in ready:
                self.drain_wakeups()
            if self.connection in ready:
                message = read_message(self.connection)
                if message is None:
                    # The supervisor is gone, which ends the call too.
                    killed = self.leaving = True
                else:
                    close_all(message[2])
                    killed = message[0] == b"K"
        if SUBREAPER:
            kill_descendants(reaped)
        else:
            # The command is its session's leader (setsid at spawn): its pid is the session id.
            kill_session(command, reaped)
        self.drain_wakeups()
        report = dict(outcome) if outcome else {"code": None, "signal": signal.SIGKILL}
        report["killed"] = killed
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        report["cpuSeconds"] = round(max(0.0, used), 6)
        times = os.times()
        if self.limits.get("cpu") and times.user + times.system >= self.limits["cpu"] * REAPER_CPU_SHARE:
            self.leaving = True
        return report

    def spawn(self, start, fds):
        """Starts the command as this reaper's child: its pipes as 0, 1 and 2, a new session,
        SIGPIPE and SIGINT at their defaults, the limits, oom_score_adj 1000. Its pid, or raises."""
        limits = {str(name): int(value) for name, value in (start.get("rlimits") or {}).items()}
        if self.limits is None:
            # Whatever happens from here on, this reaper's limits are those of its first command.
            self.limits = limits
            try:
                for name, value in limits.items():
                    resource.setrlimit(RLIMITS[name], (value, value))
            except BaseException:
                self.leaving = True
                raise
        elif limits != self.limits:
            self.leaving = True
            raise RuntimeError("the reaper carries other limits")
        if -1 in fds or len(fds) != (COMMAND_FDS if start.get("stdin") else COMMAND_FDS - 1):
            raise RuntimeError("the command's pipes did not arrive")
        environment = dict(self.environment)
        for name, value in (start.get("env") or {}).items():
            environment[str(name)] = str(value)
        os.chdir(start.get("cwd") or "/workspace")
        argv = start["argv"]
        try:
            program = find_program(argv[0], environment)
        except OSError as error:
            raise RuntimeError("%s: %s" % (argv[0], error.strerror)) from None
        stdin = fds[0] if start.get("stdin") else self.stdin_null
        actions = [
            (os.POSIX_SPAWN_DUP2, stdin, 0),
            (os.POSIX_SPAWN_DUP2, fds[-2], 1),
            (os.POSIX_SPAWN_DUP2, fds[-1], 2),
        ]
        # The command's copy of `executed` closes as its exec completes (close-on-exec).
        done, executed = os.pipe2(os.O_CLOEXEC)
        try:
            pid = os.posix_spawn(
                program,
                argv,
                environment,
                file_actions=actions,
                setsid=True,
                setsigdef=(signal.SIGPIPE, signal.SIGINT),
            )
        except OSError as error:
            os.close(done)
            raise RuntimeError("%s: %s" % (argv[0], error.strerror)) from None
        finally:
            os.close(executed)
        raise_oom_score(pid, done)
        return pid

    def drain_wakeups(self):
        try:
            while os.read(self.wakeup_read, 4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass


def raise_oom_score(pid, done):
    """Gives a command oom_score_adj 1000 as soon as it is executed, and then every process it
    forked before that (they kept the reaper's score): the OOM killer must take the command's
    hungry child, not the shell that waits for it, nor another call's. Only the command's own uid
    may, and only once it is dumpable again: the kernel makes it so at the end of exec, a moment
    after it closed its close-on-exec descriptors (`done` reads end of file then). Until then, and
    once it has exited, its /proc files are root's. Closes `done`."""
    try:
        select.select([done], [], [], EXEC_WAIT_SECONDS)
    finally:
        os.close(done)
    raise_oom_scores([pid])


def raise_oom_scores(pids):
    """Gives `pids` and all their descendants oom_score_adj 1000. Each is raised first and listed
    after: a child forked once its parent is raised inherits the score, and one forked before is
    in the list, unless its fork was still under way (the reaper walks the tree again for that,
    see OOM_SCORE_REWALKS)."""
    pending = list(pids)
    while pending:
        process = pending.pop()
        if write_oom_score(process):
            pending.extend(children_of(process))


def write_oom_score(pid):
    """Writes COMMAND_OOM_SCORE_ADJ for `pid`, waiting while it is mid-exec (not dumpable yet).
    False if it has exited or cannot be changed."""
    path = "/proc/%d/oom_score_adj" % pid
    for _ in range(OOM_SCORE_ATTEMPTS):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        except PermissionError:
            if has_exited(pid):
                return False
            os.sched_yield()
            continue
        except OSError:
            return False
        try:
            os.write(fd, str(COMMAND_OOM_SCORE_ADJ).encode())
            return True
        except OSError:
            return False
        finally:
            os.close(fd)
    return False


def has_exited(pid):
    """Whether `pid` is gone or a zombie (its /proc files then stay root's)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as stat:
            # The state follows the command name, which may itself hold ") ".
            return stat.read().rpartition(b") ")[2][:1] in (b"Z", b"X")
    except OSError:
        return True


def children_of(pid):
    """The pids of `pid`'s children, from each of its threads (none where /proc does not list them)."""
    children = []
    try:
        threads = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return children
    for thread in threads:
        try:
            with open("/proc/%d/task/%s/children" % (pid, thread), "rb") as listed:
                children.extend(int(child) for child in listed.read().split())
        except (OSError, ValueError):
            pass
    return children


def reaper_main(connection):
    """A reaper's whole life, in a fresh fork of the supervisor; never returns."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        # 0, 1 and 2 on /dev/null (the host's pipes are the supervisor's alone), and no descriptor
        # of the supervisor's or of another command but the socket to the supervisor.
        keep = connection.fileno()
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, keep)
        os.closerange(keep + 1, 65536)
        if SUBREAPER:
            prctl(PR_SET_CHILD_SUBREAPER, 1)
        stdin_null = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
        wakeup_read, wakeup_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(wakeup_write)
        CommandRunner(connection, stdin_null, wakeup_read).serve()
    finally:
        os._exit(0)


def command_limits(rlimits):
    """The rlimits of a start, checked; a reaper carries exactly one such set."""
    limits = {}
    for name, value in (rlimits or {}).items():
        if name not in RLIMITS:
            raise ValueError("unknown limit %r" % name)
        limits[name] = int(value)
    return limits


class Command:
    def __init__(self, channel):
        self.channel = channel
        self.reaper = None
        self.stdin_fd = None
        self.stdin_pending = bytearray()
        self.stdin_closing = False
        self.outputs = {}
        self.credit = OUTPUT_WINDOW
        # The reaper's exit report (None when the reaper died first), once reaper_done.
        self.report = None
        self.reaper_done = False
        self.deadline = None


class Reaper:
    """The supervisor's end of one reaper (see reaper_main)."""

    def __init__(self, pid, connection, limits):
        self.pid = pid
        self.connection = connection
        self.fd = connection.fileno()
        self.limits = limits
        self.command = None
        # Messages the socket has not taken yet: [bytes, descriptors to send with the first byte].
        self.outgoing = []
        self.reports = bytearray()
        self.open = True


class Tunnel:
    """One connection accepted on the proxy listener, carried to the host on its own channel."""

    def __init__(self, channel, connection):
        self.channel = channel
        self.connection = connection
        self.fd = connection.fileno()
        # Bytes the host may still take from us, and bytes of the host's still to write on.
        self.credit = TUNNEL_WINDOW
        self.pending = bytearray()
        self.reading = True
        # The host said it sends no more: our writing side is shut once pending is written.
        self.host_done = False
        self.write_shut = False


class Supervisor:
    def __init__(self):
        self.commands = {}
        self.by_fd = {}
        # Every live reaper by pid, those whose socket is open by descriptor, and the idle ones
        # (least recently used first).
        self.reapers = {}
        self.reaper_fds = {}
        self.idle_reapers = []
        self.tunnels = {}
        self.tunnel_fds = {}
        self.next_tunnel = TUNNEL_CHANNELS
        self.listener = open_listener()
        self.incoming = bytearray()
        self.input_open = True
        wakeup_read, wakeup_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.wakeup_read = wakeup_read
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(wakeup_write)

    def send(self, kind, channel, payload=b""):
        view = memoryview(payload)
        for offset in range(0, max(len(view), 1), MAX_FRAME):
            chunk = view[offset:offset + MAX_FRAME]
            header = HEADER.pack(kind, channel, len(chunk))
            # Header and payload in one write, without joining them into a copy.
            written = os.writev(1, (header, chunk))
            if written < len(header) + len(chunk):
                write_all(1, (header + bytes(chunk))[written:])

    def send_json(self, kind, channel, value):
        self.send(kind, channel, json.dumps(value).encode())

    def start(self, channel, start, raw):
        limits = command_limits(start.get("rlimits"))
        created = []
        try:
            if start.get("stdin"):
                stdin_read, stdin_write = os.pipe2(os.O_CLOEXEC)
                created += [stdin_read, stdin_write]
                os.set_blocking(stdin_write, False)
            stdout_read, stdout_write = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
            created += [stdout_read, stdout_write]
            stderr_read, stderr_write = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
            created += [stderr_read, stderr_write]
            os.set_blocking(stdout_write, True)
            os.set_blocking(stderr_write, True)
            reaper = self.take_reaper(limits)
        except BaseException:
            close_all(created)
            raise
        command = Command(channel)
        self.commands[channel] = command
        given = [stdout_write, stderr_write]
        if start.get("stdin"):
            command.stdin_fd = stdin_write
            self.by_fd[stdin_write] = command
            given.insert(0, stdin_read)
        command.outputs = {stdout_read: ord("O"), stderr_read: ord("X")}
        for fd in command.outputs:
            self.by_fd[fd] = command
        reaper.command = command
        command.reaper = reaper
        self.tell_reaper(reaper, b"S", raw, given)
        self.send(ord("P"), channel)

    def take_reaper(self, limits):
        """An idle reaper that carries these limits, else a new one."""
        for index in range(len(self.idle_reapers) - 1, -1, -1):
            if self.idle_reapers[index].limits == limits:
                return self.idle_reapers.pop(index)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            pid = os.fork()
        except BaseException:
            ours.close()
            theirs.close()
            raise
        if pid == 0:
            reaper_main(theirs)
        theirs.close()
        ours.setblocking(False)
        reaper = Reaper(pid, ours, limits)
        self.reapers[pid] = reaper
        self.reaper_fds[reaper.fd] = reaper
        return reaper

    def tell_reaper(self, reaper, kind, payload=b"", fds=()):
        """Sends a message to a reaper; the descriptors are ours to close once sent."""
        if not reaper.open:
            close_all(fds)
            return
        reaper.outgoing.append([REAPER_MESSAGE.pack(kind, len(payload)) + payload, list(fds)])
        self.flush_reaper(reaper)

    def flush_reaper(self, reaper):
        while reaper.outgoing:
            message = reaper.outgoing[0]
            data, fds = message
            try:
                if fds:
                    sent = socket.send_fds(reaper.connection, [data], fds)
                else:
                    sent = reaper.connection.send(data)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                # The reaper is gone: reap() and read_reaper() tell its command.
                self.drop_reaper(reaper)
                return
            if fds:
                close_all(fds)
                message[1] = []
            if sent < len(data):
                message[0] = data[sent:]
                return
            reaper.outgoing.pop(0)

    def read_reaper(self, reaper):
        try:
            chunk = reaper.connection.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            # Gone (or leaving): its command, if it never reported, is reap()'s.
            self.drop_reaper(reaper)
            return
        reaper.reports += chunk
        while reaper.open and b"\n" in reaper.reports:
            line, _, rest = bytes(reaper.reports).partition(b"\n")
            reaper.reports = bytearray(rest)
            self.reported(reaper, line)

    def reported(self, reaper, line):
        command = reaper.command
        reaper.command = None
        try:
            report = json.loads(line)
        except ValueError:
            report = None
        if not isinstance(report, dict):
            report = {}
        retire = report.pop("retire", False)
        if command is not None:
            command.report = report
            command.reaper_done = True
            command.deadline = time.monotonic() + DRAIN_GRACE_SECONDS
        if retire:
            self.drop_reaper(reaper)
            return
        self.idle_reapers.append(reaper)
        while len(self.idle_reapers) > MAX_IDLE_REAPERS:
            # Closing its socket is what tells an idle reaper to leave.
            self.drop_reaper(self.idle_reapers[0])

    def drop_reaper(self, reaper):
        """Closes the supervisor's end of a reaper: an idle one leaves, a busy one kills its command."""
        if not reaper.open:
            return
        reaper.open = False
        self.reaper_fds.pop(reaper.fd, None)
        if reaper in self.idle_reapers:
            self.idle_reapers.remove(reaper)
        for _, fds in reaper.outgoing:
            close_all(fds)
        reaper.outgoing = []
        try:
            reaper.connection.close()
        except OSError:
            pass

    def kill(self, command):
        reaper = command.reaper
        if reaper is not None and reaper.command is command:
            self.tell_reaper(reaper, b"K")

    def close_fd(self, fd):
        self.by_fd.pop(fd, None)
        try:
            os.close(fd)
        except OSError:
            pass

    def close_stdin(self, command):
        if command.stdin_fd is not None:
            self.close_fd(command.stdin_fd)
            command.stdin_fd = None

    def flush_stdin(self, command):
        if command.stdin_fd is None:
            command.stdin_pending.clear()
            return
        written_total = 0
        while command.stdin_pending:
            try:
                written = os.write(command.stdin_fd, command.stdin_pending[:MAX_FRAME])
            except BlockingIOError:
                break
            except OSError:
                # The command closed its stdin: what it did not read is dropped, credit returned.
                written_total += len(command.stdin_pending)
                command.stdin_pending.clear()
                self.close_stdin(command)
                break
            del command.stdin_pending[:written]
            written_total += written
        if written_total:
            self.send(ord("W"), command.channel, struct.pack(">I", written_total))
        if not command.stdin_pending and command.stdin_closing:
            self.close_stdin(command)

    def accept_tunnels(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if len(self.tunnels) >= MAX_TUNNELS:
                connection.close()
                continue
            connection.setblocking(False)
            # What the host sends is already whole frames of the stream: hold nothing back
            # (Nagle's wait for an ACK would add a delayed ACK's 40 ms to every small answer).
            try:
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            channel = self.next_tunnel
            self.next_tunnel = TUNNEL_CHANNELS if self.next_tunnel >= 0xFFFFFFF0 else self.next_tunnel + 1
            tunnel = Tunnel(channel, connection)
            self.tunnels[channel] = tunnel
            self.tunnel_fds[tunnel.fd] = tunnel
            self.send(ord("N"), channel)

    def close_tunnel(self, tunnel, tell_host):
        if self.tunnels.pop(tunnel.channel, None) is None:
            return
        self.tunnel_fds.pop(tunnel.fd, None)
        try:
            tunnel.connection.close()
        except OSError:
            pass
        if tell_host:
            self.send(ord("Z"), tunnel.channel)

    def read_tunnel(self, tunnel):
        if not tunnel.reading:
            return
        try:
            chunk = tunnel.connection.recv(min(MAX_FRAME, tunnel.credit))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.close_tunnel(tunnel, True)
            return
        if not chunk:
            tunnel.reading = False
            self.send(ord("H"), tunnel.channel)
            if tunnel.write_shut:
                self.close_tunnel(tunnel, True)
            return
        tunnel.credit -= len(chunk)
        self.send(ord("D"), tunnel.channel, chunk)

    def flush_tunnel(self, tunnel):
        written_total = 0
        while tunnel.pending:
            try:
                written = tunnel.connection.send(tunnel.pending[:MAX_FRAME])
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self.close_tunnel(tunnel, True)
                return
            del tunnel.pending[:written]
            written_total += written
        if written_total:
            self.send(ord("A"), tunnel.channel, struct.pack(">I", written_total))
        if not tunnel.pending and tunnel.host_done and not tunnel.write_shut:
            tunnel.write_shut = True
            try:
                tunnel.connection.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            if not tunnel.reading:
                self.close_tunnel(tunnel, True)

    def send_direct(self, tunnel, payload):
        """Send a payload to the tunnel's client; what is left over (None if the tunnel closed)."""
        try:
            written = tunnel.connection.send(payload)
        except (BlockingIOError, InterruptedError):
            return bytearray(payload)
        except OSError:
            self.close_tunnel(tunnel, True)
            return None
        if written:
            self.send(ord("A"), tunnel.channel, struct.pack(">I", written))
        return bytearray(payload[written:])

    def handle_tunnel_frame(self, kind, channel, payload):
        tunnel = self.tunnels.get(channel)
        if tunnel is None:
            return
        if kind == ord("D"):
            if tunnel.pending:
                tunnel.pending += payload
            else:
                # Nothing queued: hand the payload straight on, queuing only what the socket refuses.
                tunnel.pending = self.send_direct(tunnel, payload)
                if tunnel.pending is None:
                    return
            self.flush_tunnel(tunnel)
        elif kind == ord("A") and len(payload) == 4:
            tunnel.credit += struct.unpack(">I", payload)[0]
        elif kind == ord("H"):
            tunnel.host_done = True
            self.flush_tunnel(tunnel)
        elif kind == ord("Z"):
            self.close_tunnel(tunnel, False)

    def handle_frame(self, kind, channel, payload):
        if channel >= TUNNEL_CHANNELS:
            self.handle_tunnel_frame(kind, channel, payload)
            return
        command = self.commands.get(channel)
        if kind == ord("S"):
            if command is None:
                try:
                    raw = bytes(payload)
                    self.start(channel, json.loads(raw), raw)
                except Exception as error:  # noqa: BLE001 - any bad start is reported, not fatal
                    self.commands.pop(channel, None)
                    self.send_json(ord("Q"), channel, {"code": None, "signal": None, "killed": False, "error": str(error)})
            return
        if command is None:
            return
        if kind == ord("I"):
            command.stdin_pending += payload
            self.flush_stdin(command)
        elif kind == ord("E"):
            command.stdin_closing = True
            self.flush_stdin(command)
        elif kind == ord("K"):
            self.kill(command)
        elif kind == ord("C") and len(payload) == 4:
            command.credit += struct.unpack(">I", payload)[0]

    def read_input(self):
        try:
            chunk = os.read(0, 256 * 1024)
        except (BlockingIOError, InterruptedError):
            return
        if not chunk:
            self.input_open = False
            return
        if self.incoming:
            self.incoming += chunk
            data = self.incoming
        else:
            data = chunk
        # Frames are cut from the read by offset; only an incomplete tail is kept for the next.
        view = memoryview(data)
        offset = 0
        while len(data) - offset >= HEADER.size:
            kind, channel, length = HEADER.unpack_from(view, offset)
            if length > 4 * MAX_FRAME:
                raise SystemExit("frame too large")
            end = offset + HEADER.size + length
            if len(data) < end:
                break
            payload = view[offset + HEADER.size:end]
            offset = end
            self.handle_frame(kind, channel, payload)
        self.incoming = bytearray(data[offset:])

    def read_output(self, fd, command):
        if command.credit <= 0:
            # Polled while credit remained, spent on the other stream since: wait for more.
            return
        try:
            chunk = os.read(fd, min(MAX_FRAME, command.credit))
        except BlockingIOError:
            return
        if not chunk:
            self.close_fd(fd)
            del command.outputs[fd]
            return
        command.credit -= len(chunk)
        self.send(command.outputs[fd], command.channel, chunk)

    def reap(self):
        strays = False
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if not pid:
                break
            reaper = self.reapers.pop(pid, None)
            if reaper is None:
                # A stray ended: whatever it started may be ours now as well.
                strays = True
                continue
            # Its last report may still wait in the socket.
            while reaper.open:
                before = len(reaper.reports)
                self.read_reaper(reaper)
                if reaper.open and len(reaper.reports) == before:
                    break
            self.drop_reaper(reaper)
            command = reaper.command
            reaper.command = None
            if command is not None and not command.reaper_done:
                # The reaper died with its command: what it started is ours now (we are its
                # subreaper or PID 1), and nothing can tell us which strays were its. Strays die.
                command.reaper_done = True
                command.report = None
                command.deadline = time.monotonic() + DRAIN_GRACE_SECONDS
                strays = True
        if strays:
            self.kill_strays()

    def kill_strays(self):
        kill_all(pid for pid in children_of_self() if pid not in self.reapers)

    def finish_ready(self):
        now = time.monotonic()
        for channel, command in list(self.commands.items()):
            if not command.reaper_done:
                continue
            if command.outputs and now < command.deadline:
                continue
            for fd in list(command.outputs):
                self.close_fd(fd)
            command.outputs = {}
            self.close_stdin(command)
            report = command.report if command.report is not None else {}
            if "code" not in report:
                report = {"code": None, "signal": signal.SIGKILL, "killed": False, "error": "the command's reaper died"}
            del self.commands[channel]
            self.send_json(ord("Q"), channel, report)

    def run(self):
        proxy_port = self.listener.getsockname()[1] if self.listener else None
        self.send_json(
            ord("R"), 0, {"pid": os.getpid(), "protocol": PROTOCOL, "subreaper": SUBREAPER, "proxyPort": proxy_port}
        )
        while self.input_open or self.commands:
            poller = select.poll()
            poller.register(self.wakeup_read, select.POLLIN)
            if self.input_open:
                poller.register(0, select.POLLIN)
                if self.listener is not None:
                    poller.register(self.listener.fileno(), select.POLLIN)
            for tunnel in self.tunnels.values():
                mask = (select.POLLIN if tunnel.reading and tunnel.credit > 0 else 0) | (
                    select.POLLOUT if tunnel.pending else 0
                )
                if mask:
                    poller.register(tunnel.fd, mask)
            for reaper in self.reaper_fds.values():
                poller.register(reaper.fd, select.POLLIN | (select.POLLOUT if reaper.outgoing else 0))
            for command in self.commands.values():
                if command.credit > 0:
                    for fd in command.outputs:
                        poller.register(fd, select.POLLIN)
                if command.stdin_pending and command.stdin_fd is not None:
                    poller.register(command.stdin_fd, select.POLLOUT)
            timeout = 200 if any(c.reaper_done for c in self.commands.values()) else None
            try:
                events = poller.poll(timeout)
            except InterruptedError:
                continue
            ready_read = [fd for fd, event in events if event & ~select.POLLOUT]
            ready_write = [fd for fd, event in events if event & select.POLLOUT]
            for fd in ready_read:
                if fd == self.wakeup_read:
                    try:
                        os.read(fd, 4096)
                    except BlockingIOError:
                        pass
                elif self.listener is not None and fd == self.listener.fileno():
                    self.accept_tunnels()
                elif fd in self.tunnel_fds:
                    self.read_tunnel(self.tunnel_fds[fd])
                elif fd in self.reaper_fds:
                    self.read_reaper(self.reaper_fds[fd])
                elif fd == 0:
                    self.read_input()
                    if not self.input_open:
                        # The host is gone: every command ends with it, and every connection.
                        for command in self.commands.values():
                            self.kill(command)
                        for tunnel in list(self.tunnels.values()):
                            self.close_tunnel(tunnel, False)
                else:
                    command = self.by_fd.get(fd)
                    if command is not None and fd == command.stdin_fd:
                        # The command closed its stdin (POLLERR): the write fails and cleans up.
                        self.flush_stdin(command)
                    elif command is not None:
                        self.read_output(fd, command)
            for fd in ready_write:
                tunnel = self.tunnel_fds.get(fd)
                if tunnel is not None:
                    self.flush_tunnel(tunnel)
                    continue
                reaper = self.reaper_fds.get(fd)
                if reaper is not None:
                    self.flush_reaper(reaper)
                    continue
                command = self.by_fd.get(fd)
                if command is not None:
                    self.flush_stdin(command)
            self.reap()
            self.finish_ready()


def open_listener():
    """The proxy listener on the sandbox's own loopback; None where there is none (no egress then)."""
    try:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        listener.setblocking(False)
        return listener
    except OSError:
        return None


def main():
    # As PID 1 of a sandbox, or beside sandboxed code of the same uid: nothing but the host may
    # stop the supervisor or read its memory.
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGTSTP", "SIGTTIN", "SIGTTOU"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    prctl(PR_SET_DUMPABLE, 0)
    global SUBREAPER
    SUBREAPER = can_be_subreaper()
    # Not PID 1 (Docker): be the subreaper of reapers whose own parent role ends early.
    if os.getpid() != 1 and SUBREAPER:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
    Supervisor().run()


if __name__ == "__main__":
    main()
