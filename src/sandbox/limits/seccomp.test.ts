import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeccompUnavailableError, seccompFilter } from './seccomp.js';

const INSTRUCTION_BYTES = 8;

describe('seccompFilter', () => {
  let scratch: string;

  beforeAll(async () => {
    scratch = await mkdtemp(path.join(tmpdir(), 'mordn-seccomp-'));
  });

  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  /** An executable standing in for python3: a shell script receiving the real arguments. */
  async function fakePython(name: string, body: string): Promise<string> {
    const file = path.join(scratch, name);
    await writeFile(file, `#!/bin/sh\n${body}\n`);
    await chmod(file, 0o755);
    return file;
  }

  it('builds a classic-BPF program once and hands every caller the same one', async () => {
    const filter = await seccompFilter();
    expect(filter.length).toBeGreaterThan(0);
    expect(filter.length % INSTRUCTION_BYTES).toBe(0);
    expect(await seccompFilter()).toBe(filter);
    expect(await seccompFilter({ python: '/usr/bin/python3' })).toBe(filter);
  });

  it('names an interpreter that does not exist', async () => {
    const failure = seccompFilter({ python: '/nonexistent/python3' });
    await expect(failure).rejects.toBeInstanceOf(SeccompUnavailableError);
    await expect(failure).rejects.toThrow(
      'the seccomp filter could not be built: /nonexistent/python3 does not exist (apt-get install python3 python3-seccomp)',
    );
  });

  it('says how to install python3-seccomp when the interpreter cannot import it', async () => {
    // -S hides dist-packages, where Debian puts the seccomp module: as if it were not installed.
    const python = await fakePython('without-seccomp', 'exec /usr/bin/python3 -S "$@"');
    await expect(seccompFilter({ python })).rejects.toThrow(
      new SeccompUnavailableError('python3-seccomp is not installed (apt-get install python3-seccomp)'),
    );
  });

  it('refuses output that is not a whole number of BPF instructions', async () => {
    const python = await fakePython('odd-output', 'printf 12345');
    await expect(seccompFilter({ python })).rejects.toThrow(
      'the seccomp filter could not be built: libseccomp wrote 5 bytes, which is not a BPF program',
    );
  });

  it('does not remember a failure: the next call builds again', async () => {
    const python = await fakePython('fails-then-works', 'exit 3');
    await expect(seccompFilter({ python })).rejects.toThrow(`${python} exited with code 3`);
    await writeFile(python, '#!/bin/sh\nexec /usr/bin/python3 "$@"\n');
    const filter = await seccompFilter({ python });
    expect(filter.equals(await seccompFilter())).toBe(true);
  });
});
