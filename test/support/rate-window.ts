import { setTimeout as delay } from 'node:timers/promises';

/**
 * Rate windows are fixed minutes of the wall clock (the same for every replica on this host):
 * waits, when needed, so a burst of `neededMs` starts early enough in one not to straddle two.
 */
export async function awayFromWindowEdge(neededMs: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < neededMs) await delay(left + 100);
}
