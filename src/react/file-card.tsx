import { formatBytes } from './format.js';
import type { ChatFile } from './messages.js';

interface SandboxFile {
  filename?: string;
  size?: number;
}

/** Props of {@link FileCard}. */
export interface FileCardProps {
  file: ChatFile;
  /** Offered on a pending attachment: takes it off the message before it is sent. */
  onRemove?: () => void;
}

/**
 * A file's name, type and size with its download link, or a disabled **Unavailable** card once
 * the file is gone (`unavailable: true`, or an empty URL, which is never rendered as a link).
 */
export function FileCard({ file, onRemove }: FileCardProps) {
  const published = file.providerMetadata?.mordn?.sandboxFile as SandboxFile | undefined;
  const filename = file.filename ?? published?.filename ?? 'file';
  const size = file.size ?? published?.size;
  const details = [file.mediaType, size === undefined ? undefined : formatBytes(size)].filter(Boolean).join(' · ');

  if (file.unavailable || file.url === '') {
    return (
      <div className="mordn-file-card file-card" aria-disabled="true">
        <span className="mordn-file-name">{filename}</span>
        <span className="mordn-file-details">Unavailable</span>
      </div>
    );
  }
  return (
    <div className="mordn-file-card file-card">
      <span className="mordn-file-name">{filename}</span>
      <span className="mordn-file-details">{details}</span>
      <span className="mordn-file-actions">
        {/* The signed URL is short-lived; history hands out a fresh one on every load. */}
        <a href={file.url} rel="noreferrer">
          Download
        </a>
        {onRemove ? (
          <button type="button" className="mordn-link-button" aria-label={`Remove ${filename}`} onClick={onRemove}>
            Remove
          </button>
        ) : null}
      </span>
    </div>
  );
}
