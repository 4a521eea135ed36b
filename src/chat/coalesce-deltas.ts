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
 * A stage that sends at most one text (or reasoning) delta per part every `windowMs`: the first
 * delta after any other part goes on at once, and deltas that follow within the window travel
 * on as one, joined, when the window closes or the next other part arrives. Every later stage
 * of the answer (the SDK's own step, tee and UI stages, the SSE encoder and the socket) then
 * runs once per batch instead of once per token, which is what lets one process keep up with
 * hundreds of streams; what reaches the client is the same UI message stream with fewer,
 * longer `text-delta` chunks.
 *
 * @example
 * stream.pipeThrough(coalesceDeltas(8)); // a delta waits at most 8 ms
 */
export function coalesceDeltas(windowMs: number, now: () => number = performance.now.bind(performance)) {
  let held: DeltaPart | undefined;
  let timer: NodeJS.Timeout | undefined;
  let sentAt = Number.NEGATIVE_INFINITY;
  const release = (controller: TransformStreamDefaultController<ModelStreamPart>) => {
    clearTimeout(timer);
    timer = undefined;
    if (!held) return;
    const part = held;
    held = undefined;
    sentAt = now();
    controller.enqueue(part);
  };
  return new TransformStream<ModelStreamPart, ModelStreamPart>({
    transform(part, controller) {
      if (!isDelta(part)) {
        release(controller);
        sentAt = Number.NEGATIVE_INFINITY;
        controller.enqueue(part);
        return;
      }
      if (held && joins(held, part)) {
        held = { ...held, delta: held.delta + part.delta };
        return;
      }
      release(controller);
      const waited = now() - sentAt;
      if (waited >= windowMs) {
        sentAt = now();
        controller.enqueue(part);
        return;
      }
      held = part;
      timer = setTimeout(() => {
        // The stream may have ended (cancelled or errored) while the delta waited.
        try {
          release(controller);
        } catch {
          held = undefined;
        }
      }, windowMs - waited);
    },
    flush(controller) {
      release(controller);
    },
  });
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
        return { ...result, stream: result.stream.pipeThrough(coalesceDeltas(windowMs)) };
      },
    },
  });
}
