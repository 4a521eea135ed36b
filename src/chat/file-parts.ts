import type { FileUIPart, UIMessage } from 'ai';

/**
 * A file part as Mordn persists and returns it: the AI SDK's part plus the canonical `filename`,
 * `size` and `storagePath` at top level. History re-signs `url` from `storagePath`; a file whose
 * reference is gone comes back `unavailable` with an empty URL (never an old one).
 */
export type StoredFilePart = Omit<FileUIPart, 'url'> & {
  url?: string;
  storagePath?: string;
  size?: number;
  unavailable?: true;
};

/** Where a managed artifact's canonical facts ride on the wire (SDK v6 file chunks are strict). */
export interface SandboxFileMetadata {
  filename: string;
  size: number;
  storagePath: string;
}

export function isFilePart(part: UIMessage['parts'][number]): part is FileUIPart {
  return part.type === 'file';
}

/** The storage path a file part refers to, if any (top level, or a managed artifact's metadata). */
export function storagePathOf(part: StoredFilePart | FileUIPart): string | undefined {
  const topLevel = (part as StoredFilePart).storagePath;
  if (typeof topLevel === 'string') return topLevel;
  const managed = (part.providerMetadata?.mordn as { sandboxFile?: SandboxFileMetadata } | undefined)?.sandboxFile;
  return typeof managed?.storagePath === 'string' ? managed.storagePath : undefined;
}

/** Every storage path referenced by the messages' file parts, once each. */
export function referencedStoragePaths(messages: readonly UIMessage[]): string[] {
  const paths = new Set<string>();
  for (const message of messages) {
    for (const part of message.parts) {
      if (!isFilePart(part)) continue;
      const storagePath = storagePathOf(part);
      if (storagePath) paths.add(storagePath);
    }
  }
  return [...paths];
}

/**
 * Moves a managed artifact's `providerMetadata.mordn.sandboxFile` facts to canonical top-level
 * fields before persistence (the wire shape stays strict; the stored shape is self-describing).
 */
export function canonicalizeFileParts(message: UIMessage): UIMessage {
  return {
    ...message,
    parts: message.parts.map((part) => {
      if (!isFilePart(part)) return part;
      const managed = (part.providerMetadata?.mordn as { sandboxFile?: SandboxFileMetadata } | undefined)?.sandboxFile;
      if (!managed) return part;
      const stored: StoredFilePart = {
        type: 'file',
        mediaType: part.mediaType,
        url: part.url,
        filename: managed.filename,
        size: managed.size,
        storagePath: managed.storagePath,
        providerMetadata: part.providerMetadata,
      };
      return stored as FileUIPart;
    }),
  };
}
