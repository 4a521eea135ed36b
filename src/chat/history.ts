import type { UIMessage } from 'ai';
import { isFilePart, referencedStoragePaths, type StoredFilePart, storagePathOf } from './file-parts.js';
import type { AttachmentOwner, AttachmentStorage } from './types.js';

/**
 * A chat's messages with every file reference re-signed in one batch: a fresh URL where the file
 * still exists and is the user's, or `unavailable: true` with `url: ''` (never an old link). The
 * empty URL keeps every part a valid SDK v6 file part, so the history passes the AI SDK's own
 * `safeValidateUIMessages` as it comes.
 */
export async function resignedHistory(
  storage: AttachmentStorage,
  owner: AttachmentOwner,
  messages: readonly UIMessage[],
): Promise<UIMessage[]> {
  const paths = referencedStoragePaths(messages);
  const urls = paths.length > 0 ? await storage.resign(owner, paths) : new Map<string, string | undefined>();
  return messages.map((message) => ({
    ...message,
    parts: message.parts.map((part) => {
      if (!isFilePart(part)) return part;
      const storagePath = storagePathOf(part);
      const url = storagePath ? urls.get(storagePath) : undefined;
      const { url: _stale, ...rest } = part as StoredFilePart;
      const fresh: StoredFilePart = url ? { ...rest, url } : { ...rest, url: '', unavailable: true };
      return fresh as UIMessage['parts'][number];
    }),
  }));
}
