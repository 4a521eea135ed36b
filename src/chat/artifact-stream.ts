import type { UIMessageChunk } from 'ai';
import { type ArtifactCarrier, isArtifactCarrier } from './artifact-carrier.js';
import type { SandboxFileMetadata } from './file-parts.js';

/** The strict SDK v6 file chunk of a managed artifact. */
export function artifactChunk(carrier: ArtifactCarrier): UIMessageChunk {
  const sandboxFile: SandboxFileMetadata = {
    filename: carrier.file.filename,
    size: carrier.file.size,
    storagePath: carrier.file.storagePath,
  };
  return {
    type: 'file',
    url: carrier.file.url,
    mediaType: carrier.file.mediaType,
    providerMetadata: { mordn: { sandboxFile: { ...sandboxFile } } },
  };
}

/**
 * The handler's artifact sink and the step of the answer's stream that uses it. `accept` is the
 * `onArtifact` given to the managed integration: it takes only carriers minted in this process
 * and holds each until its tool call's result has passed, so a download card never precedes the
 * tool result. `pass` maps each chunk to what goes on in its place: every `file` chunk is
 * dropped — provider-generated files never become downloads — and a tool's final result (never
 * a preliminary one) is followed by its call's carriers. `take` hands the carriers of a call the
 * engine made itself to its caller.
 */
export function createArtifactRelay(onRejected?: (value: unknown) => void) {
  const pending = new Map<string, ArtifactCarrier[]>();
  return {
    accept(carrier: ArtifactCarrier): void {
      if (!isArtifactCarrier(carrier)) {
        onRejected?.(carrier);
        return;
      }
      pending.set(carrier.toolCallId, [...(pending.get(carrier.toolCallId) ?? []), carrier]);
    },
    /** Removes and returns the carriers of a call the engine made itself (the link guard's publish). */
    take(toolCallId: string): readonly ArtifactCarrier[] {
      const carriers = pending.get(toolCallId) ?? [];
      pending.delete(toolCallId);
      return carriers;
    },
    pass(chunk: UIMessageChunk): readonly UIMessageChunk[] {
      if (chunk.type === 'file') return [];
      if (chunk.type !== 'tool-output-available' || chunk.preliminary) return [chunk];
      const carriers = pending.get(chunk.toolCallId) ?? [];
      pending.delete(chunk.toolCallId);
      return [chunk, ...carriers.map(artifactChunk)];
    },
  };
}
