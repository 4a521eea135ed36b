import type { ModelTurn } from '../test/support/scripted-model-server.js';

/** What one scripted chat turn does: answer at once, or call `sandbox_exec` (and publish) first. */
export type TurnKind = 'text' | 'exec' | 'publish';

export interface TurnSpec {
  kind: TurnKind;
  /** Text deltas in the final answer; the first is sent at once. */
  deltas: number;
  /** Milliseconds between consecutive text deltas. */
  delayMs: number;
  /** Names the turn's files, so concurrent turns of one user do not collide. */
  tag: string;
}

/** The user message that asks the scripted model (`bench/servers/scripted-model.ts`) for `spec`. */
export function turnMessage(spec: TurnSpec): string {
  return `BENCH kind=${spec.kind} deltas=${spec.deltas} delay=${spec.delayMs} tag=${spec.tag}`;
}

/** The answer's text deltas: one short word each, numbered so a lost or repeated one shows. */
export function answerDeltas(count: number): string[] {
  return Array.from({ length: count }, (_, index) => `${index === 0 ? '' : ' '}w${index}`);
}

/** The file a `publish` turn writes in the workspace and publishes. */
export function publishedName(tag: string): string {
  return `report-${tag}.txt`;
}

/**
 * The scripted model's answer to a bench message, given how many tool results follow it: a
 * `text` turn answers at once; an `exec` turn first runs a command; a `publish` turn writes a file,
 * publishes it, then answers. Anything else gets a one-word answer.
 */
export function scriptedAnswer(userText: string, toolResults: number): ModelTurn {
  const match = /BENCH kind=(\w+) deltas=(\d+) delay=(\d+) tag=([\w-]+)/.exec(userText);
  if (!match) return { text: 'ok' };
  const [, kind, deltas, delay, tag] = match as unknown as [string, TurnKind, string, string, string];
  const answer: ModelTurn = { text: answerDeltas(Number(deltas)), deltaDelayMs: Number(delay) };
  const file = publishedName(tag);
  const steps: ModelTurn[] =
    kind === 'exec'
      ? [{ toolCalls: [{ name: 'sandbox_exec', arguments: { command: `echo ran-${tag}` } }] }]
      : kind === 'publish'
        ? [
            { toolCalls: [{ name: 'sandbox_exec', arguments: { command: `echo report ${tag} > ${file}` } }] },
            { toolCalls: [{ name: 'sandbox_publish_file', arguments: { path: file, filename: file } }] },
          ]
        : [];
  return steps[toolResults] ?? answer;
}
