import type { UIMessageChunk } from 'ai';

/**
 * Final results of tools whose `execute` is an async iterable. The AI SDK sends every value such
 * a tool yields as a preliminary result, the last one included, then that last one again as the
 * final result: marked here, its preliminary copy is left out of the answer's stream, so every
 * preliminary result keeps its tool's own shape and bound.
 */
const finals = new WeakSet<object>();

/**
 * Marks `output` as the final result its tool yields last, and returns it.
 *
 * @example
 * async function* execute(input) {
 *   yield { output: [], omittedBytes: 0 };
 *   yield finalToolOutput(await call(input));
 * }
 */
export function finalToolOutput<T extends object>(output: T): T {
  finals.add(output);
  return output;
}

/**
 * The step of the answer's stream that drops the preliminary copy of a marked final result (the
 * final one follows it); every other chunk goes on.
 */
export function dropFinalEchoes(chunk: UIMessageChunk): readonly UIMessageChunk[] {
  if (chunk.type !== 'tool-output-available' || chunk.preliminary !== true) return [chunk];
  const output = chunk.output;
  return typeof output === 'object' && output !== null && finals.has(output) ? [] : [chunk];
}
