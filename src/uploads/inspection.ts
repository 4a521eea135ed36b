import type { UploadMediaType } from './media-types.js';

/**
 * The verdict on a file's bytes: the one canonical type it is, or why it is refused.
 * `detectedType` is the best MIME description of what the bytes are and `reason` a short
 * sentence fit to show to API callers (it never names paths or internals).
 *
 * Every inspector (`inspectFile` and the format-specific ones it calls) returns this type; it
 * lives apart from them so that none of them imports another only to name it.
 */
export type Inspection =
  | { accepted: true; mediaType: UploadMediaType }
  | { accepted: false; detectedType: string; reason: string };

/**
 * A refusal verdict.
 *
 * @example
 * return refuse('text/html', 'HTML documents are not accepted');
 */
export function refuse(detectedType: string, reason: string): Inspection {
  return { accepted: false, detectedType, reason };
}
