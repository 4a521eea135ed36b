import { readdir, readFile } from 'node:fs/promises';

/** Host pids whose command line contains `needle`: the probe that a process is gone (or there). */
export async function hostProcesses(needle: string): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const commandLine = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    if (commandLine.replaceAll('\0', ' ').includes(needle)) pids.push(Number(name));
  }
  return pids;
}
