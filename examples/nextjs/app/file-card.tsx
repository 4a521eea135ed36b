import type { FileUIPart } from 'ai';

/**
 * A file part as Mordn returns it: uploads carry `filename` (and, fresh from the upload, `size`);
 * published files carry their facts in `providerMetadata.mordn.sandboxFile` while streaming and at
 * top level in history. A reference that no longer resolves comes back `unavailable: true` with an
 * empty `url` (so the history stays a valid list of AI SDK messages).
 */
export type ChatFile = FileUIPart & { size?: number; unavailable?: boolean };

interface SandboxFile {
  filename?: string;
  size?: number;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** A file's name, type and size with its download link, or a disabled card once the file is gone. */
export function FileCard({ file }: { file: ChatFile }) {
  const published = file.providerMetadata?.mordn?.sandboxFile as SandboxFile | undefined;
  const filename = file.filename ?? published?.filename ?? 'file';
  const size = file.size ?? published?.size;
  const details = [file.mediaType, size === undefined ? undefined : formatBytes(size)].filter(Boolean).join(' · ');

  // `unavailable` decides; an empty URL is never rendered as a link either.
  if (file.unavailable || file.url === '') {
    return (
      <div className="file-card" aria-disabled="true">
        <span className="file-name">{filename}</span>
        <span className="file-details">Unavailable</span>
      </div>
    );
  }
  return (
    <div className="file-card">
      <span className="file-name">{filename}</span>
      <span className="file-details">{details}</span>
      {/* The signed URL is short-lived; history hands out a fresh one on every load. */}
      <a href={file.url} rel="noreferrer">
        Download
      </a>
    </div>
  );
}
