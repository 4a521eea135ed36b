/**
 * The process-local proof that a file was published by a live managed `sandbox_publish_file`
 * call and re-verified by the API's signer. Only `mintArtifactCarrier` (called by the managed
 * integration after that verification) can create one; the chat handler accepts nothing else as
 * a managed download. Identity lives in a module-private `WeakSet`: a cast, a structured or JSON
 * clone, model output, client metadata or another tool's result is never a member.
 *
 * Both package entry points (`mordn/server` and `mordn/server/hosted`) import this one module,
 * so they share the same set.
 */

/** The canonical published file, as the API's registry describes it. */
export interface PublishedFile {
  readonly url: string;
  readonly storagePath: string;
  readonly filename: string;
  readonly mediaType: string;
  readonly size: number;
}

export interface ArtifactCarrier {
  /** The tool call whose live result published the file. */
  readonly toolCallId: string;
  readonly file: PublishedFile;
}

const minted = new WeakSet<object>();

/** For the managed integration only, after a live publish and the signer's confirmation. */
export function mintArtifactCarrier(toolCallId: string, file: PublishedFile): ArtifactCarrier {
  const carrier: ArtifactCarrier = Object.freeze({
    toolCallId,
    file: Object.freeze({
      url: file.url,
      storagePath: file.storagePath,
      filename: file.filename,
      mediaType: file.mediaType,
      size: file.size,
    }),
  });
  minted.add(carrier);
  return carrier;
}

/** Whether `value` is a carrier minted in this process (and not a look-alike). */
export function isArtifactCarrier(value: unknown): value is ArtifactCarrier {
  return typeof value === 'object' && value !== null && minted.has(value);
}
