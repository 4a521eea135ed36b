import { readdir, readFile } from 'node:fs/promises';
import { procStatFields } from '../../src/proc-stat.js';

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

/** Whether `pid` is a process that runs: neither gone nor a zombie (which only waits to be reaped). */
export async function isRunning(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat !== '' && procStatFields(stat)[0] !== 'Z';
}
