/**
 * Every value a tool's `execute` produced, in order: the values of an async iterable (preliminary
 * results, then the final one last), or the one value of a promise.
 *
 * @example
 * const values = await executionValues(tools.sandbox_exec.execute({ command: 'ls' }, options));
 */
export async function executionValues(execution: unknown): Promise<unknown[]> {
  if (typeof execution === 'object' && execution !== null && Symbol.asyncIterator in execution) {
    const values: unknown[] = [];
    for await (const value of execution as AsyncIterable<unknown>) values.push(value);
    return values;
  }
  return [await execution];
}

/**
 * What a tool's `execute` finally returned (the last value of an async iterable), as the AI SDK
 * takes it: `await finalValue(tools.sandbox_exec.execute(input, options))`.
 */
export async function finalValue(execution: unknown): Promise<unknown> {
  return (await executionValues(execution)).at(-1);
}
