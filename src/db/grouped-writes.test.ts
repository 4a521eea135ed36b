import { describe, expect, it } from 'vitest';
import { groupedWrites } from './grouped-writes.js';

/** A writer that records each statement it was asked for, and fails on the inputs `poisoned` names. */
function recordingWriter(options: { poisoned?: (input: number) => boolean; pauseMs?: number } = {}) {
  const statements: number[][] = [];
  const write = async (inputs: readonly number[]) => {
    statements.push([...inputs]);
    if (options.pauseMs) await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
    if (inputs.some((input) => options.poisoned?.(input))) throw new Error(`poisoned: ${inputs.join(',')}`);
    return inputs.map((input) => input * 10);
  };
  return { statements, write };
}

describe('groupedWrites', () => {
  it('writes a call made alone at once, and the calls made meanwhile as the next statement', async () => {
    const writer = recordingWriter();
    const write = groupedWrites(writer.write, { maxGroup: 100 });
    const results = await Promise.all([1, 2, 3, 4].map((input) => write(input)));
    // Each call is answered with its own result.
    expect(results).toEqual([10, 20, 30, 40]);
    expect(writer.statements).toEqual([[1], [2, 3, 4]]);
    expect(await write(5)).toBe(50);
    expect(writer.statements).toHaveLength(3);
  });

  it('gathers the calls made while a statement runs into the next one, in order, never two at once', async () => {
    const writer = recordingWriter({ pauseMs: 30 });
    let running = 0;
    let most = 0;
    const write = groupedWrites(
      async (inputs: readonly number[]) => {
        running += 1;
        most = Math.max(most, running);
        try {
          return await writer.write(inputs);
        } finally {
          running -= 1;
        }
      },
      { maxGroup: 100 },
    );
    const first = write(1);
    await new Promise((resolve) => setTimeout(resolve, 10));
    const later = [2, 3, 4].map((input) => write(input));
    expect(await Promise.all([first, ...later])).toEqual([10, 20, 30, 40]);
    expect(writer.statements).toEqual([[1], [2, 3, 4]]);
    expect(most).toBe(1);
  });

  it('splits a burst into statements of at most maxGroup', async () => {
    const writer = recordingWriter();
    const write = groupedWrites(writer.write, { maxGroup: 3 });
    const inputs = Array.from({ length: 8 }, (_, index) => index);
    expect(await Promise.all(inputs.map((input) => write(input)))).toEqual(inputs.map((input) => input * 10));
    expect(writer.statements).toEqual([[0], [1, 2, 3], [4, 5, 6], [7]]);
  });

  it('stops a group before its inputs would weigh more than maxWeight, yet takes a heavy input alone', async () => {
    const writer = recordingWriter();
    const write = groupedWrites(writer.write, { maxGroup: 100, weigh: (input) => input, maxWeight: 10 });
    const inputs = [1, 4, 5, 2, 30, 3];
    expect(await Promise.all(inputs.map((input) => write(input)))).toEqual(inputs.map((input) => input * 10));
    expect(writer.statements).toEqual([[1], [4, 5], [2], [30], [3]]);
  });

  it('fails only the call whose input fails: the rest of its group is written alone, in order', async () => {
    const writer = recordingWriter({ poisoned: (input) => input === 3 });
    const write = groupedWrites(writer.write, { maxGroup: 100 });
    const settled = await Promise.allSettled([1, 2, 3, 4].map((input) => write(input)));
    expect(settled.map((each) => (each.status === 'fulfilled' ? each.value : String(each.reason)))).toEqual([
      10,
      20,
      'Error: poisoned: 3',
      40,
    ]);
    expect(writer.statements).toEqual([[1], [2, 3, 4], [2], [3], [4]]);
    // The writer goes on after a failed group.
    expect(await write(5)).toBe(50);
  });

  it('rejects a call written alone with its own error', async () => {
    const write = groupedWrites(recordingWriter({ poisoned: () => true }).write, { maxGroup: 100 });
    await expect(write(7)).rejects.toThrow('poisoned: 7');
  });
});
