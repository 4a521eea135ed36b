"""Workspace file operations for both sandbox backends.

Runs INSIDE the sandbox (bwrap: bound read-only at /opt/mordn/fileops.py; docker: passed to
`python3 -c` in the workspace's container), never on the host, so even a mistake here can only
reach what the sandbox itself can reach. On top of that, every path is
walked one component at a time with os.open(dir_fd=..., O_NOFOLLOW): a symlink planted anywhere
on the path by sandboxed code (also one swapped in while we walk) is refused, never followed.

Usage (arguments are validated again here; the service validates them before spawning):
  fileops.py list PATH MAX_ENTRIES    -> one JSON line {"ok", "entries", "truncated"}
  fileops.py read PATH MAX_BYTES      -> one JSON line {"ok", "size"}, then exactly size raw bytes
  fileops.py write PATH MAX_BYTES 0|1 -> {"ok", "ready"} once the file is open, then reads frames
                                         (4-byte big-endian length + bytes; length 0 commits)
                                         from stdin, then {"ok", "size"}
  fileops.py usage MAX_ENTRIES        -> {"ok", "bytes", "files"}

A refusal is {"ok": false, "code": CODE, "message": MESSAGE} with a WorkspaceFileErrorCode (or
FAILED for an unexpected system error); messages never contain paths outside the workspace.
"""

import errno
import fcntl
import json
import os
import resource
import stat
import sys

WORKSPACE = "/workspace"
MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
MAX_FRAME_BYTES = 1 << 20
MAX_DEPTH = 256
COPY_CHUNK_BYTES = 64 * 1024
DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Refusal(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def emit(value):
    write_all(1, (json.dumps(value, ensure_ascii=True) + "\n").encode("ascii"))


def write_all(fd, data):
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def is_control(character):
    code = ord(character)
    return code < 0x20 or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xDFFF


def parse_path(raw, allow_root):
    """The path's components; [] for the workspace root (only where allow_root)."""
    if allow_root and raw in ("", "."):
        return []
    if raw == "":
        raise Refusal("INVALID_PATH", "The path is empty.")
    # Lone surrogates stand for bytes that were not valid UTF-8 in the argument.
    if any(is_control(character) for character in raw):
        raise Refusal("INVALID_PATH", "The path contains control characters or invalid UTF-8.")
    if len(raw.encode("utf-8")) > MAX_PATH_BYTES:
        raise Refusal("INVALID_PATH", "The path is longer than 4096 bytes.")
    if raw.startswith("/"):
        raise Refusal("INVALID_PATH", "The path must be relative to the workspace.")
    parts = raw.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            raise Refusal("INVALID_PATH", "The path may not contain empty, '.' or '..' components.")
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            raise Refusal("INVALID_PATH", "A path component is longer than 255 bytes.")
    return parts


def parse_count(raw, minimum):
    if not raw.isdigit() or len(raw) > 15 or int(raw) < minimum:
        raise Refusal("FAILED", "Invalid numeric argument.")
    return int(raw)


def is_symlink(directory_fd, name):
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=directory_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def confirm_opened(directory_fd, name, fd):
    """Returns `fd` once it is proven to be the entry `name` itself, not what a symlink there
    points to: gVisor (as packaged in Debian 12) follows a final symlink despite O_NOFOLLOW when
    O_DIRECTORY is set, and an entry swapped after the open shows a different inode."""
    try:
        entry = os.stat(name, dir_fd=directory_fd, follow_symlinks=False)
        opened = os.fstat(fd)
    except OSError:
        entry = None
    if entry is None or stat.S_ISLNK(entry.st_mode) or (entry.st_dev, entry.st_ino) != (opened.st_dev, opened.st_ino):
        os.close(fd)
        raise Refusal("SYMLINK", "A symbolic link is on the path; links are never followed.")
    return fd


def open_directory(directory_fd, name, create=False):
    """Opens the child directory `name` of `directory_fd` without following a symlink."""
    for _attempt in range(3):
        try:
            return confirm_opened(directory_fd, name, os.open(name, DIRECTORY_FLAGS, dir_fd=directory_fd))
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENOTDIR):
                # O_NOFOLLOW already refused it; the lstat only picks the code (a concurrent swap
                # can make it say NOT_A_DIRECTORY for what was a link a moment ago).
                if is_symlink(directory_fd, name):
                    raise Refusal("SYMLINK", "A symbolic link is on the path; links are never followed.")
                raise Refusal("NOT_A_DIRECTORY", "A component of the path is not a directory.")
            if error.errno != errno.ENOENT:
                raise
            if not create:
                raise Refusal("NOT_FOUND", "No such file or directory.")
        try:
            os.mkdir(name, 0o755, dir_fd=directory_fd)
        except FileExistsError:
            pass  # Created concurrently: open it (or refuse it) on the next attempt.
    raise Refusal("FAILED", "The directory kept changing.")


def walk(parts, create=False):
    """A descriptor of the directory reached through `parts` from the workspace root."""
    fd = os.open(WORKSPACE, DIRECTORY_FLAGS)
    try:
        for part in parts:
            child = open_directory(fd, part, create)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def clear_nonblocking(fd):
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)


def refuse_final(error, directory_fd, name):
    if error.errno == errno.ELOOP or (error.errno == errno.EEXIST and is_symlink(directory_fd, name)):
        raise Refusal("SYMLINK", "The path is a symbolic link; links are never followed.")
    if error.errno == errno.ENOENT:
        raise Refusal("NOT_FOUND", "No such file or directory.")
    if error.errno == errno.EEXIST:
        raise Refusal("EXISTS", "A file already exists at this path.")
    # EISDIR (a directory), ENXIO (a FIFO without a reader, a socket), ENOTDIR and friends.
    if error.errno in (errno.EISDIR, errno.ENXIO, errno.ENOTDIR, errno.EOPNOTSUPP):
        raise Refusal("NOT_A_FILE", "The path is not a regular file.")
    raise error


def require_regular(fd):
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise Refusal("NOT_A_FILE", "The path is not a regular file.")
    return info


def display_name(name):
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def entry_of(entry):
    if entry.is_symlink():
        return {"name": display_name(entry.name), "type": "symlink", "size": 0}
    if entry.is_dir(follow_symlinks=False):
        return {"name": display_name(entry.name), "type": "directory", "size": 0}
    if entry.is_file(follow_symlinks=False):
        size = entry.stat(follow_symlinks=False).st_size
        return {"name": display_name(entry.name), "type": "file", "size": size}
    return {"name": display_name(entry.name), "type": "other", "size": 0}


def list_directory(raw_path, raw_max):
    parts = parse_path(raw_path, allow_root=True)
    max_entries = parse_count(raw_max, 1)
    fd = walk(parts)
    try:
        entries = []
        with os.scandir(fd) as iterator:
            for entry in iterator:
                try:
                    entries.append(entry_of(entry))
                except FileNotFoundError:
                    continue  # Removed while we listed.
                if len(entries) > max_entries:
                    break
    finally:
        os.close(fd)
    entries.sort(key=lambda item: item["name"])
    emit({"ok": True, "entries": entries[:max_entries], "truncated": len(entries) > max_entries})


def read_file(raw_path, raw_max):
    parts = parse_path(raw_path, allow_root=False)
    max_bytes = parse_count(raw_max, 0)
    directory_fd = walk(parts[:-1])
    try:
        try:
            # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat refuses it next.
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory_fd)
        except OSError as error:
            refuse_final(error, directory_fd, parts[-1])
        confirm_opened(directory_fd, parts[-1], fd)
    finally:
        os.close(directory_fd)
    try:
        size = require_regular(fd).st_size
        if size > max_bytes:
            raise Refusal("TOO_LARGE", f"The file is {size} bytes; at most {max_bytes} may be read.")
        clear_nonblocking(fd)
        emit({"ok": True, "size": size})
        remaining = size
        while remaining > 0:
            chunk = os.read(fd, min(COPY_CHUNK_BYTES, remaining))
            if not chunk:
                sys.exit(3)  # It shrank while we read: the service sees a short body and fails.
            write_all(1, chunk)
            remaining -= len(chunk)
    finally:
        os.close(fd)


def read_exact(count):
    data = bytearray()
    while len(data) < count:
        chunk = os.read(0, count - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def discard(fd, directory_fd, name):
    """Empties what this write produced and removes the name, if it still names our file."""
    try:
        os.ftruncate(fd, 0)
        ours = os.fstat(fd)
        current = os.stat(name, dir_fd=directory_fd, follow_symlinks=False)
        if (current.st_dev, current.st_ino) == (ours.st_dev, ours.st_ino):
            os.unlink(name, dir_fd=directory_fd)
    except OSError:
        pass


def receive(fd, max_bytes):
    """Copies frames from stdin into fd; returns the byte count once the commit frame arrives."""
    total = 0
    while True:
        header = read_exact(4)
        if header is None:
            raise Refusal("FAILED", "The content ended before it was complete.")
        length = int.from_bytes(header, "big")
        if length == 0:
            return total
        if length > MAX_FRAME_BYTES:
            raise Refusal("FAILED", "Invalid frame.")
        if total + length > max_bytes:
            raise Refusal("TOO_LARGE", f"The content is larger than {max_bytes} bytes.")
        data = read_exact(length)
        if data is None:
            raise Refusal("FAILED", "The content ended before it was complete.")
        try:
            write_all(fd, data)
        except OSError as error:
            if error.errno == errno.EFBIG:
                raise Refusal("TOO_LARGE", "The file is larger than the sandbox allows.") from error
            raise
        total += length


def write_file(raw_path, raw_max, raw_exclusive):
    parts = parse_path(raw_path, allow_root=False)
    max_bytes = parse_count(raw_max, 0)
    exclusive = raw_exclusive == "1"
    directory_fd = walk(parts[:-1], create=True)
    name = parts[-1]
    try:
        # O_NONBLOCK: opening a FIFO for writing fails (ENXIO) instead of waiting for a reader.
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        if is_symlink(directory_fd, name):
            raise Refusal("SYMLINK", "A symbolic link is on the path; links are never followed.")
        try:
            fd = os.open(name, flags | (os.O_EXCL if exclusive else 0), 0o644, dir_fd=directory_fd)
        except OSError as error:
            refuse_final(error, directory_fd, name)
        confirm_opened(directory_fd, name, fd)
        try:
            require_regular(fd)
        except BaseException:
            os.close(fd)
            raise
        try:
            clear_nonblocking(fd)
            os.ftruncate(fd, 0)
            emit({"ok": True, "ready": True})
            size = receive(fd, max_bytes)
        except BaseException:
            discard(fd, directory_fd, name)
            os.close(fd)
            raise
        os.close(fd)
        emit({"ok": True, "size": size})
    finally:
        os.close(directory_fd)


def usage(raw_max):
    max_entries = parse_count(raw_max, 1)
    total = 0
    entries = 0
    # Files, directories and links, each inode once (as a filesystem's inode count has them).
    files = 0
    seen_links = set()
    # Depth-first with one open descriptor per level; unreadable or vanished directories are skipped.
    stack = [(os.open(WORKSPACE, DIRECTORY_FLAGS), None)]
    try:
        while stack:
            fd, iterator = stack[-1]
            if iterator is None:
                iterator = os.scandir(fd)
                stack[-1] = (fd, iterator)
            entry = next(iterator, None)
            if entry is None:
                iterator.close()
                os.close(fd)
                stack.pop()
                continue
            entries += 1
            if entries > max_entries:
                raise Refusal("TOO_LARGE", f"The workspace holds more than {max_entries} files and directories.")
            try:
                if entry.is_dir(follow_symlinks=False):
                    if len(stack) >= MAX_DEPTH:
                        raise Refusal("TOO_LARGE", f"The workspace nests directories deeper than {MAX_DEPTH} levels.")
                    try:
                        stack.append((open_directory(fd, entry.name), None))
                    except Refusal:
                        pass  # Swapped for a link or removed since it was listed.
                elif entry.is_file(follow_symlinks=False):
                    info = entry.stat(follow_symlinks=False)
                    if info.st_nlink > 1:
                        if (info.st_dev, info.st_ino) in seen_links:
                            continue
                        seen_links.add((info.st_dev, info.st_ino))
                    total += info.st_size
                files += 1
            except (FileNotFoundError, PermissionError):
                continue
    finally:
        for fd, iterator in stack:
            if iterator is not None:
                iterator.close()
            os.close(fd)
    emit({"ok": True, "bytes": total, "files": files})


OPERATIONS = {"list": (list_directory, 2), "read": (read_file, 2), "write": (write_file, 3), "usage": (usage, 1)}


def main(arguments):
    # One descriptor per directory level: take the hard limit the backend grants the helper.
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if not arguments or arguments[0] not in OPERATIONS:
        raise Refusal("FAILED", "Unknown operation.")
    operation, arity = OPERATIONS[arguments[0]]
    if len(arguments) - 1 != arity:
        raise Refusal("FAILED", "Wrong number of arguments.")
    operation(*arguments[1:])


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except Refusal as refusal:
        emit({"ok": False, "code": refusal.code, "message": refusal.message})
    except OSError as error:
        # strerror only: the sandbox's own view of paths is never echoed.
        emit({"ok": False, "code": "FAILED", "message": os.strerror(error.errno) if error.errno else "System error."})
