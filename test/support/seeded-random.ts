/**
 * A small seeded pseudo-random generator (mulberry32), so a fuzz run can be replayed exactly from
 * the seed it prints.
 */
export interface SeededRandom {
  readonly seed: number;
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max]. */
  integer(min: number, max: number): number;
  /** True with probability `p`. */
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  bytes(length: number): Buffer;
}

export function seededRandom(seed: number): SeededRandom {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const integer = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  return {
    seed,
    next,
    integer,
    chance: (p) => next() < p,
    pick: (items) => items[integer(0, items.length - 1)] as (typeof items)[number],
    bytes: (length) => {
      const out = Buffer.allocUnsafe(length);
      for (let index = 0; index < length; index++) out[index] = integer(0, 255);
      return out;
    },
  };
}
