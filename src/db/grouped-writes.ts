/**
 * Group commit for one kind of write: the calls made while the database is busy with the previous
 * statement go to the database together, as the next one.
 *
 * A call made alone is written at once. Under a burst (200 turns at once) the database sees a
 * handful of statements instead of 200 queued on the pool. Groups run one after
 * another, in the order their calls were made. When a group fails, each of its calls is tried
 * alone, in order, so one bad row fails only its own call.
 *
 * @example
 * const insertSlot = groupedWrites(async (rows) => insertAll(rows), { maxGroup: 200 });
 * const taken = await insertSlot(row); // one result per row, in order
 */
export function groupedWrites<Input, Output>(
  write: (inputs: readonly Input[]) => Promise<readonly Output[]>,
  options: {
    maxGroup: number;
    /** With `maxWeight`: an input's size (its bytes, say); a group stops before it would pass `maxWeight`. */
    weigh?: (input: Input) => number;
    maxWeight?: number;
  },
): (input: Input) => Promise<Output> {
  const queue: Array<{ input: Input; resolve: (output: Output) => void; reject: (error: unknown) => void }> = [];
  let busy = false;

  const writeAlone = async (input: Input): Promise<Output> => {
    const [output] = await write([input]);
    return output as Output;
  };

  /** How many of the queued calls the next group takes: at least one. */
  const groupLength = () => {
    const { weigh, maxWeight = Number.POSITIVE_INFINITY } = options;
    if (!weigh) return options.maxGroup;
    let length = 0;
    let weight = 0;
    for (const each of queue) {
      weight += weigh(each.input);
      if (length === options.maxGroup || (length > 0 && weight > maxWeight)) break;
      length += 1;
    }
    return length;
  };

  const drain = async () => {
    busy = true;
    try {
      while (queue.length > 0) {
        const group = queue.splice(0, groupLength());
        let outputs: readonly Output[] | undefined;
        try {
          outputs = await write(group.map((each) => each.input));
        } catch (error) {
          if (group.length === 1) group[0]?.reject(error);
        }
        if (outputs) {
          for (const [index, each] of group.entries()) each.resolve(outputs[index] as Output);
        } else if (group.length > 1) {
          // In the order they were made: two writes of one row still land in their order.
          for (const each of group) await writeAlone(each.input).then(each.resolve, each.reject);
        }
      }
    } finally {
      busy = false;
    }
  };

  return (input) =>
    new Promise<Output>((resolve, reject) => {
      queue.push({ input, resolve, reject });
      // An idle writer writes at once; the calls made meanwhile make up the next group.
      if (!busy) void drain();
    });
}
