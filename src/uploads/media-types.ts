/**
 * The media types Mordn accepts as uploads and publishes as artifacts, by canonical MIME type.
 * Everything else (legacy Office, macro-enabled Office, HTML, SVG, scripts, archives…) is refused.
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

/** File name extensions that name each text type (the bytes say "UTF-8 text"; the name picks which). */
export const TEXT_EXTENSIONS: Record<string, (typeof TEXT_TYPES)[number]> = {
  txt: 'text/plain',
  text: 'text/plain',
  log: 'text/plain',
  md: 'text/markdown',
  markdown: 'text/markdown',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  tab: 'text/tab-separated-values',
  json: 'application/json',
};

export function isUploadMediaType(value: string): value is UploadMediaType {
  return (ALL_UPLOAD_TYPES as readonly string[]).includes(value);
}
