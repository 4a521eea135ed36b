import { type LanguageModel, type LanguageModelMiddleware, wrapLanguageModel } from 'ai';

type WrapStream = NonNullable<LanguageModelMiddleware['wrapStream']>;
/** One part of a language model's stream (the provider's own, before `streamText`). */
type ModelStreamPart = Awaited<ReturnType<WrapStream>>['stream'] extends ReadableStream<infer Part> ? Part : never;
type DeltaPart = Extract<ModelStreamPart, { type: 'text-delta' | 'reasoning-delta' }>;

/** What may join the delta held before it: the same kind of delta of the same part, neither carrying metadata. */
function joins(held: DeltaPart, part: DeltaPart): boolean {
  return held.type === part.type && held.id === part.id && !held.providerMetadata && !part.providerMetadata;
}

function isDelta(part: ModelStreamPart): part is DeltaPart {
  return part.type === 'text-delta' || part.type === 'reasoning-delta';
}

/**
 * `source` with at most one text (or reasoning) delta per part every `windowMs`: the first delta
 * after any other part goes on at once, and deltas that follow within the window travel on as
 * one, joined, when the window closes or the next other part arrives. Every later stage of the
 * answer (the SDK's own step, tee and UI stages, the SSE encoder and the socket) then runs once
 * per batch instead of once per token, which is what lets one process keep up with hundreds of
 * streams; what reaches the client is the same UI message stream with fewer, longer
 * `text-delta` chunks.
 *
 * A stream that pulls from `source` itself (one read per part), rather than a `TransformStream`
 * (a write, a transform and a read per part), and joined text is built once per batch.
 *
 * @example
 * const coalesced = coalesceDeltas(result.stream, 8); // a delta waits at most 8 ms
 */
export function coalesceDeltas(
  source: ReadableStream<ModelStreamPart>,
  windowMs: number,
  now: () => number = performance.now.bind(performance),
): ReadableStream<ModelStreamPart> {
  const reader = source.getReader();
  let output: ReadableStreamDefaultController<ModelStreamPart>;
  // The held delta and the text of every delta joined to it.
  let held: DeltaPart | undefined;
  let heldText = '';
  let timer: NodeJS.Timeout | undefined;
  let sentAt = Number.NEGATIVE_INFINITY;
  /** Sends the held delta on, if there is one; says whether it did. */
  const release = (): boolean => {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (!held) return false;
    const part = held.delta === heldText ? held : { ...held, delta: heldText };
    held = undefined;
    sentAt = now();
    output.enqueue(part);
    return true;
  };
  const windowClosed = () => {
    timer = undefined;
    // The stream may have ended (cancelled or errored) while the delta waited.
    try {
      release();
    } catch {
      held = undefined;
    }
  };
  return new ReadableStream<ModelStreamPart>(
    {
      start(controller) {
        output = controller;
      },
      async pull(controller) {
        // A held delta sends nothing yet: read on until something went out.
        for (;;) {
          const { done, value: part } = await reader.read();
          if (done) {
            release();
            controller.close();
            return;
          }
          if (!isDelta(part)) {
            release();
            sentAt = Number.NEGATIVE_INFINITY;
            controller.enqueue(part);
            return;
          }
          if (held && joins(held, part)) {
            heldText += part.delta;
            continue;
          }
          const released = release();
          const waited = now() - sentAt;
          if (waited >= windowMs) {
            sentAt = now();
            controller.enqueue(part);
            return;
          }
          held = part;
          heldText = part.delta;
          timer = setTimeout(windowClosed, windowMs - waited);
          if (released) return;
        }
      },
      cancel(reason) {
        clearTimeout(timer);
        held = undefined;
        return reader.cancel(reason);
      },
    },
    // Nothing is read ahead of the reader: a part waits in the source until it is asked for.
    { highWaterMark: 0 },
  );
}

/**
 * `model` with its stream's deltas coalesced (see `coalesceDeltas`). Only a model object of the
 * current specification can be wrapped; an id string (resolved by the SDK's global provider) or
 * an older model passes through unchanged, as does any model when `windowMs` is 0.
 */
export function withCoalescedDeltas(model: LanguageModel, windowMs: number): LanguageModel {
  if (windowMs <= 0 || typeof model === 'string' || model.specificationVersion !== 'v3') return model;
  return wrapLanguageModel({
    model,
    middleware: {
      specificationVersion: 'v3',
      wrapStream: async ({ doStream }) => {
        const result = await doStream();
        return { ...result, stream: coalesceDeltas(result.stream, windowMs) };
      },
    },
  });
}
