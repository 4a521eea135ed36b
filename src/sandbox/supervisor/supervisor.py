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
    P  started (the command's reaper exists: from here on the command may have run)
    O  stdout  bytes      X  stderr  bytes
    W  credit  u32: stdin bytes written to the command, so more may be sent
    Q  exit    JSON {"code": int|null, "signal": int|null, "killed": bool, "error": str?}

The way out (protocol 2): the supervisor listens on 127.0.0.1:<proxyPort> inside the sandbox's
own network namespace, where sandboxed code reaches it as its HTTP proxy, and carries each
connection to the host over its channel of its own (ids from TUNNEL_CHANNELS up, chosen by the
supervisor). The host decides what every connection may reach; the sandbox has no other route.
    N  open     (supervisor to host) a new connection
    D  data     bytes, either way (never more than the other side's credit)
    A  credit   u32, either way: bytes taken from the channel, so more may be sent
    H  half     either way: no more data from this side (shutdown for writing)
    Z  close    either way: the connection is gone (or must go)

Every command runs under a reaper of its own: a forked copy of this process that makes itself
a child subreaper, forks the command in a new session and, when the command ends, is killed,
or the supervisor goes away, SIGKILLs every descendant until none is left. Orphans of a command
(double forks, setsid, nohup) are reparented to its reaper, never to another command's, so a
call ends with everything it started and nothing else in the workspace.

The supervisor and the reapers are not dumpable: processes of the same uid cannot open their
/proc/<pid>/mem or change them. A command makes itself dumpable again and raises its own
oom_score_adj to 1000 just before exec, so the OOM killer of the workspace's cgroup takes a
command, never the supervisor or a reaper (whose score the host also lowers where it may).
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


def keep_only(keep):
    """In a fresh reaper: 0, 1 and 2 on /dev/null (the host's pipes are the supervisor's alone), and
    no descriptor of another command."""
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


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


def exec_command(start, fds):
    """In the command's process: the pipes as 0/1/2, limits, a new session, then exec."""
    stdin_fd, stdout_fd, stderr_fd, error_fd = fds
    os.dup2(stdin_fd, 0)
    os.dup2(stdout_fd, 1)
    os.dup2(stderr_fd, 2)
    os.closerange(3, error_fd)
    os.closerange(error_fd + 1, 65536)
    os.setsid()
    for name, value in (start.get("rlimits") or {}).items():
        resource.setrlimit(RLIMITS[name], (value, value))
    for name, value in (start.get("env") or {}).items():
        os.environ[str(name)] = str(value)
    prctl(PR_SET_DUMPABLE, 1)
    # Any process may raise its own score: commands go first when the workspace runs out of
    # memory (and before anything else on the host when the host does).
    try:
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write(str(COMMAND_OOM_SCORE_ADJ))
    except OSError:
        pass
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.chdir(start.get("cwd") or "/workspace")
    argv = start["argv"]
    try:
        os.execvp(argv[0], argv)
    except OSError as error:
        raise RuntimeError("%s: %s" % (argv[0], error.strerror)) from None


def run_reaper(start, stdin_fd, stdout_fd, stderr_fd, control_fd, status_fd):
    """The reaper's whole life; never returns."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        if SUBREAPER:
            prctl(PR_SET_CHILD_SUBREAPER, 1)
        error_read, error_write = os.pipe2(os.O_CLOEXEC)
        command = os.fork()
        if command == 0:
            try:
                os.close(control_fd)
                os.close(status_fd)
                os.close(error_read)
                exec_command(start, (stdin_fd, stdout_fd, stderr_fd, error_write))
            except BaseException as error:  # noqa: B036 - report any failure, then leave
                message = str(error)
                try:
                    write_all(error_write, message.encode("utf-8", "replace")[:1024])
                finally:
                    os._exit(127)
        for fd in (stdin_fd, stdout_fd, stderr_fd, error_write):
            os.close(fd)
        failure = b""
        while True:
            chunk = os.read(error_read, 1024)
            if not chunk:
                break
            failure += chunk
        os.close(error_read)

        outcome = {}

        def reaped(pid, status):
            if pid == command:
                outcome.update(describe_status(status))

        wakeup_read, wakeup_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(wakeup_write)
        killed = False
        while not outcome and not killed:
            try:
                pid, status = os.waitpid(command, os.WNOHANG)
            except ChildProcessError:
                break
            if pid:
                reaped(pid, status)
                break
            try:
                ready, _, _ = select.select([control_fd, wakeup_read], [], [])
            except InterruptedError:
                continue
            if wakeup_read in ready:
                try:
                    os.read(wakeup_read, 4096)
                except BlockingIOError:
                    pass
            if control_fd in ready:
                # "k", or end of file: the supervisor is gone, which ends the call too.
                killed = True
        signal.set_wakeup_fd(-1)
        if SUBREAPER:
            kill_descendants(reaped)
        else:
            # The command is its session's leader (setsid before exec): its pid is the session id.
            kill_session(command, reaped)
        report = dict(outcome) if outcome else {"code": None, "signal": signal.SIGKILL}
        report["killed"] = killed
        if failure:
            report["error"] = failure.decode("utf-8", "replace")
        write_all(status_fd, json.dumps(report).encode())
    finally:
        os._exit(0)


class Command:
    def __init__(self, channel):
        self.channel = channel
        self.reaper = None
        self.stdin_fd = None
        self.stdin_pending = bytearray()
        self.stdin_closing = False
        self.outputs = {}
        self.credit = OUTPUT_WINDOW
        self.control_fd = None
        self.status_fd = None
        self.status = b""
        self.reaper_done = False
        self.deadline = None


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
        self.reapers = {}
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

    def start(self, channel, start):
        command = Command(channel)
        self.commands[channel] = command
        if start.get("stdin"):
            stdin_read, stdin_write = os.pipe2(os.O_CLOEXEC)
            os.set_blocking(stdin_write, False)
            command.stdin_fd = stdin_write
            self.by_fd[stdin_write] = command
        else:
            stdin_read = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
        stdout_read, stdout_write = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        stderr_read, stderr_write = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        control_read, control_write = os.pipe2(os.O_CLOEXEC)
        status_read, status_write = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        for fd in (stdout_write, stderr_write, status_write):
            os.set_blocking(fd, True)
        reaper = os.fork()
        if reaper == 0:
            signal.set_wakeup_fd(-1)
            keep_only({stdin_read, stdout_write, stderr_write, control_read, status_write})
            run_reaper(start, stdin_read, stdout_write, stderr_write, control_read, status_write)
        for fd in (stdin_read, stdout_write, stderr_write, control_read, status_write):
            os.close(fd)
        command.reaper = reaper
        command.control_fd = control_write
        command.status_fd = status_read
        command.outputs = {stdout_read: ord("O"), stderr_read: ord("X")}
        for fd in (stdout_read, stderr_read, status_read):
            self.by_fd[fd] = command
        self.reapers[reaper] = command
        self.send(ord("P"), channel)

    def kill(self, command):
        if command.control_fd is not None:
            try:
                write_all(command.control_fd, b"k")
            except OSError:
                pass

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
                    self.start(channel, json.loads(bytes(payload)))
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
        if fd == command.status_fd:
            try:
                chunk = os.read(fd, 4096)
            except BlockingIOError:
                return
            if chunk:
                command.status += chunk
                return
            self.close_fd(fd)
            command.status_fd = None
            return
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
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if not pid:
                return
            command = self.reapers.pop(pid, None)
            if command is None:
                continue
            command.reaper_done = True
            if not command.status:
                # The reaper itself died: what it started is ours now (we are its subreaper or
                # PID 1), and nothing can tell us which strays were its. Strays die.
                self.kill_strays()
            command.deadline = time.monotonic() + DRAIN_GRACE_SECONDS

    def kill_strays(self):
        kill_all(pid for pid in children_of_self() if pid not in self.reapers)

    def finish_ready(self):
        now = time.monotonic()
        for channel, command in list(self.commands.items()):
            if not command.reaper_done or command.status_fd is not None:
                continue
            if command.outputs and now < command.deadline:
                continue
            for fd in list(command.outputs):
                self.close_fd(fd)
            command.outputs = {}
            self.close_stdin(command)
            self.close_fd(command.control_fd)
            command.control_fd = None
            try:
                report = json.loads(command.status or b"{}")
            except ValueError:
                report = {}
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
            for command in self.commands.values():
                if command.status_fd is not None:
                    poller.register(command.status_fd, select.POLLIN)
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
