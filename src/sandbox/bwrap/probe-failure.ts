/** What an operator should read when bwrap itself cannot be executed. */
export function describeSpawnFailure(error: unknown, bwrapPath: string): Error {
  const code = error instanceof Error && 'code' in error ? error.code : undefined;
  if (code === 'ENOENT') {
    return new Error(`bubblewrap is not installed: no executable "${bwrapPath}" (install the bubblewrap package).`, {
      cause: error,
    });
  }
  if (code === 'EACCES') return new Error(`bubblewrap at "${bwrapPath}" is not executable.`, { cause: error });
  return error instanceof Error ? error : new Error(String(error));
}

/** bwrap's complaints, and what they mean for an operator. */
const KNOWN_FAILURES: Array<[RegExp, string]> = [
  [
    /no permissions to creat|creating new namespace|uid map|uid_map|user namespace|unprivileged_userns/i,
    'user namespaces are disabled or restricted on this host, so bubblewrap cannot create a sandbox',
  ],
  [
    /can't mount proc|mount proc/i,
    'bubblewrap cannot mount a fresh /proc here (typical inside a container that masks /proc); allow it or use the docker backend',
  ],
  [/setpriv/i, 'setpriv (util-linux) is needed to run sandboxes as an unprivileged user when the service runs as root'],
  [/prlimit/i, 'prlimit (util-linux) is needed to apply resource limits inside the sandbox'],
];

/**
 * What an operator should read when bwrap ran but a trivial sandboxed command did not succeed,
 * from bwrap's own complaint on stderr.
 */
export function describeStartFailure(exitCode: number | undefined, stderr: string): Error {
  const detail = stderr || 'no message';
  const known = KNOWN_FAILURES.find(([pattern]) => pattern.test(stderr));
  if (known) return new Error(`${known[1]} (${detail}).`);
  if (exitCode === undefined) return new Error(`bubblewrap could not set up a sandbox (${detail}).`);
  return new Error(`A sandboxed /bin/true exited with status ${exitCode} (${detail}).`);
}
