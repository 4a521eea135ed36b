import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { procStatFields } from './proc-stat.js';
import { removeOrphanedTemporaryFiles, temporaryFilePath } from './temporary-files.js';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(path.join(tmpdir(), 'mordn-tmp-sweep-'));
});
afterEach(() => rm(directory, { recursive: true, force: true }));

/** This process's file name, split into purpose, host tag, pid, start time and id. */
function ownName() {
  const [purpose, host, pid, started] = path.basename(temporaryFilePath(directory, 'upload')).split('-');
  return { purpose, host, pid: Number(pid), started: started as string };
}

/** A name as the process `pid`, started at `started`, of this host would give its file. */
const nameOf = (pid: number, started: string) => `upload-${ownName().host}-${pid}-${started}-${randomUUID()}`;

async function startTicksOf(pid: number): Promise<string> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  return procStatFields(stat)[19] as string;
}

describe('removeOrphanedTemporaryFiles', () => {
  it('names files after this host, this pid and when this process started', async () => {
    const own = ownName();
    expect(own.pid).toBe(process.pid);
    expect(own.started).toBe(await startTicksOf(process.pid));
  });

  it("keeps live writers' files and removes those of processes that are gone, even under a reused pid", async () => {
    const parent = process.ppid;
    const files = {
      mine: path.basename(temporaryFilePath(directory, 'upload')),
      // A container's service is pid 1 at every start: the run before had this pid, and started earlier.
      minePreviousRun: nameOf(process.pid, String(Number(ownName().started) - 1)),
      liveParent: nameOf(parent, await startTicksOf(parent)),
      // The parent's pid, but named by a process that started before it: that pid was reused.
      reusedPid: nameOf(parent, String(Number(await startTicksOf(parent)) - 1)),
      // No pid this high exists (pid_max is at most 2^22).
      gone: nameOf(4_194_305, '12345'),
      unknownRecent: `upload-${randomUUID()}`,
      unknownOld: `upload-${randomUUID()}`,
    };
    for (const name of Object.values(files)) await writeFile(path.join(directory, name), 'in transit');
    const twoDaysAgo = new Date(Date.now() - 2 * 24 * 60 * 60 * 1000);
    await utimes(path.join(directory, files.unknownOld), twoDaysAgo, twoDaysAgo);

    const removed = await removeOrphanedTemporaryFiles([directory, path.join(directory, 'missing')]);

    expect(removed.map((file) => path.basename(file)).sort()).toEqual(
      [files.minePreviousRun, files.reusedPid, files.gone, files.unknownOld].sort(),
    );
    expect((await readdir(directory)).sort()).toEqual([files.mine, files.liveParent, files.unknownRecent].sort());
  });
});
