/**
 * The media types Mordn accepts as uploads and publishes as artifacts, by canonical MIME type,
 * with their byte ceilings. Everything else (legacy Office, macro-enabled Office, HTML, SVG,
 * scripts, archives…) is refused.
 *
 * A ground-floor table: it imports nothing, so the configuration (which narrows it) and the
 * upload, storage and sandbox modules (which apply it) can all depend on it without any of them
 * depending on each other.
 */
export const DEFAULT_UPLOAD_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif', 'application/pdf'] as const;

export const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
export const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
export const PPTX = 'application/vnd.openxmlformats-officedocument.presentationml.presentation';

export const OOXML_TYPES = [DOCX, XLSX, PPTX] as const;
export const TEXT_TYPES = [
  'text/plain',
  'text/markdown',
  'text/csv',
  'text/tab-separated-values',
  'application/json',
] as const;

/** Added to the default set only while the caller's managed-sandbox gate is open. */
export const MANAGED_UPLOAD_TYPES = ['application/pdf', ...OOXML_TYPES, ...TEXT_TYPES] as const;

export type UploadMediaType = (typeof DEFAULT_UPLOAD_TYPES)[number] | (typeof MANAGED_UPLOAD_TYPES)[number];

export const ALL_UPLOAD_TYPES: readonly UploadMediaType[] = [
  ...new Set<UploadMediaType>([...DEFAULT_UPLOAD_TYPES, ...MANAGED_UPLOAD_TYPES]),
];

/** Byte ceilings before any operator or agent narrowing. */
export const DEFAULT_UPLOAD_MAX_BYTES = 5 * 1024 * 1024;
export const MANAGED_UPLOAD_MAX_BYTES = 10 * 1024 * 1024;

/** Whether `value` is one of the canonical types above (exactly: no case folding, no parameters). */
export function isUploadMediaType(value: string): value is UploadMediaType {
  return (ALL_UPLOAD_TYPES as readonly string[]).includes(value);
}
