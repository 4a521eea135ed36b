"""Builds the workspace sandboxes' seccomp filter with libseccomp, for both backends.

    python3 -I seccomp-filter.py RULES
        (bwrap, on the HOST, as the service's own user, once per service process: seccomp.ts
        memoizes the result) writes the filter to stdout as what bwrap's `--seccomp FD` reads: a
        classic-BPF program (an array of 8-byte struct sock_filter) for this machine's native
        architecture.
    python3 -I -c SOURCE --exec RULES PROGRAM [ARGUMENTS...]
        (Docker, INSIDE the workspace container, as the sandbox user) loads the filter into
        itself and executes PROGRAM under it, so the supervisor and every process it starts keep
        it, on top of the container runtime's own profile.

RULES is JSON {"required": [names], "whereKnown": [names], "socketFamilies": [numbers]}:
syscalls to refuse with EPERM whatever their arguments, and the only address families sockets
may be made of. The rules that depend on arguments live here:
  clone        EPERM when its flags ask for any new namespace (one rule per CLONE_NEW* bit)
  clone3       ENOSYS, never EPERM: glibc then falls back to clone, which the rule above checks
               (clone3 passes its flags in memory, out of a seccomp filter's sight)
  ioctl        EPERM for TIOCSTI and TIOCLINUX (typing into or driving a terminal)
  personality  EPERM for any persona but the default (PER_LINUX) and the query 0xffffffff
  socket, socketpair
               EAFNOSUPPORT for every address family but socketFamilies (AF_VSOCK, say, is not
               confined by a network namespace)

Everything else is allowed: the filter narrows what bwrap's namespaces and dropped capabilities
already refuse, it is not an allowlist. On failure it writes one line to stderr saying what is
missing and how to fix it, and exits 1.
"""

import errno
import json
import os
import sys

try:
    import seccomp
except ImportError:
    if "--exec" in sys.argv[1:2]:
        sys.stderr.write(
            "python3-seccomp is not installed in the sandbox image "
            "(rebuild it: sandbox-image/ or scripts/build-sandbox-image.sh)\n"
        )
    else:
        sys.stderr.write("python3-seccomp is not installed (apt-get install python3-seccomp)\n")
    sys.exit(1)

CLONE_NEW_FLAGS = {
    # In clone (unlike clone3 and unshare) 0x80 lies in the exit-signal byte: the rule refuses
    # exit signals of 128 and up, which no program asks for (signal numbers end at 64).
    "CLONE_NEWTIME": 0x00000080,
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
TIOCSTI = 0x5412
TIOCLINUX = 0x541C
# The kernel reads both ioctl's request and personality's persona as 32-bit values and ignores
# the register's upper half, so the rules compare the lower half only: a request with high bits
# set must not slip past as "some other number".
LOWER_32_BITS = 0xFFFFFFFF
PERSONALITY_BITS = 32

DENY = seccomp.ERRNO(errno.EPERM)


class Unavailable(Exception):
    """A reason the filter cannot be built, worded for the operator."""


def is_known(name):
    # resolve_syscall gives -1 for a name libseccomp has never heard of, and another negative
    # pseudo-number for one that exists only on other architectures.
    return seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) >= 0


def clone_flags_argument():
    # s390 swaps clone's first two arguments (stack, then flags).
    if seccomp.system_arch() in (seccomp.Arch.S390, seccomp.Arch.S390X):
        return 1
    return 0


def deny_other_personas(syscall_filter):
    # Deny unless the lower 32 bits are all 0 (PER_LINUX) or all 1 (the query). libseccomp
    # compares an argument once per rule and refuses ALLOW exceptions in a filter whose default
    # is ALLOW, so the rule is spelled positively: "neither all 0 nor all 1" holds exactly when,
    # going round the 32 bits, some bit is set while the next one is clear. One rule per bit.
    for bit in range(PERSONALITY_BITS):
        this_bit = 1 << bit
        next_bit = 1 << ((bit + 1) % PERSONALITY_BITS)
        syscall_filter.add_rule(
            DENY, "personality", seccomp.Arg(0, seccomp.MASKED_EQ, this_bit | next_bit, this_bit)
        )


def deny_other_socket_families(syscall_filter, allowed):
    # As the kernel does for a family it lacks. The family is compared as the whole 64-bit
    # argument: a value with high bits set is refused even where its lower half names an allowed
    # family (the kernel would read it as that family).
    refuse = seccomp.ERRNO(errno.EAFNOSUPPORT)
    highest = max(allowed)
    for name in ("socket", "socketpair"):
        for family in range(highest):
            if family not in allowed:
                syscall_filter.add_rule(refuse, name, seccomp.Arg(0, seccomp.EQ, family))
        syscall_filter.add_rule(refuse, name, seccomp.Arg(0, seccomp.GT, highest))


def build(required, where_known, socket_families):
    unknown = [name for name in required if not is_known(name)]
    if unknown:
        raise Unavailable(
            "the installed libseccomp does not know the syscall(s) "
            + ", ".join(unknown)
            + " (upgrade libseccomp2 and python3-seccomp)"
        )
    # The default action list holds only the native architecture, and libseccomp's default
    # bad-architecture action, which kills, stays: a 32-bit (or x32) syscall would otherwise reach
    # the kernel under numbers this filter never checks.
    syscall_filter = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in required:
        syscall_filter.add_rule(DENY, name)
    for name in where_known:
        if is_known(name):
            syscall_filter.add_rule(DENY, name)
    flags = clone_flags_argument()
    for bit in CLONE_NEW_FLAGS.values():
        syscall_filter.add_rule(DENY, "clone", seccomp.Arg(flags, seccomp.MASKED_EQ, bit, bit))
    syscall_filter.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for request in (TIOCSTI, TIOCLINUX):
        syscall_filter.add_rule(DENY, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, LOWER_32_BITS, request))
    deny_other_personas(syscall_filter)
    deny_other_socket_families(syscall_filter, set(socket_families))
    return syscall_filter


USAGE = "usage: seccomp-filter.py RULES | seccomp-filter.py --exec RULES PROGRAM [ARGUMENTS...]"


def filter_from(rules_json):
    rules = json.loads(rules_json)
    return build(rules["required"], rules["whereKnown"], rules["socketFamilies"])


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "--exec":
        syscall_filter = filter_from(sys.argv[2])
        # libseccomp sets no_new_privs first, as an unprivileged process must.
        syscall_filter.load()
        program = sys.argv[3:]
        try:
            os.execvp(program[0], program)
        except OSError as error:
            raise Unavailable(f"cannot run {program[0]} under the filter: {error.strerror}")
    if len(sys.argv) != 2:
        raise Unavailable(USAGE)
    syscall_filter = filter_from(sys.argv[1])
    # export_bpf writes to the file descriptor itself, past Python's buffer.
    sys.stdout.flush()
    syscall_filter.export_bpf(sys.stdout)


if __name__ == "__main__":
    try:
        main()
    except Unavailable as reason:
        sys.stderr.write(f"{reason}\n")
        sys.exit(1)
    # Any other libseccomp failure, as one line rather than a traceback.
    except Exception as error:
        sys.stderr.write(f"libseccomp failed: {type(error).__name__}: {error}\n")
        sys.exit(1)
