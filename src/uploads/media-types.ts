import type { TEXT_TYPES } from '../media-types.js';

/**
 * The upload path's view of the media-type table. The table itself lives in `src/media-types.ts`
 * (below the configuration, which narrows it); it is re-exported here for the upload modules.
 */
export {
  ALL_UPLOAD_TYPES,
  DEFAULT_UPLOAD_MAX_BYTES,
  DEFAULT_UPLOAD_TYPES,
  DOCX,
  isUploadMediaType,
  MANAGED_UPLOAD_MAX_BYTES,
  MANAGED_UPLOAD_TYPES,
  OOXML_TYPES,
  PPTX,
  TEXT_TYPES,
  type UploadMediaType,
  XLSX,
} from '../media-types.js';

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
