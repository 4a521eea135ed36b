import type { AgentConfig } from '../agents/config-schema.js';
import type { Config } from '../config.js';
import {
  DEFAULT_UPLOAD_TYPES,
  DOCX,
  MANAGED_UPLOAD_TYPES,
  PPTX,
  TEXT_EXTENSIONS,
  type UploadMediaType,
  XLSX,
} from './media-types.js';

/** What one caller may upload right now: each accepted type with its own byte ceiling. */
export interface UploadPolicy {
  /** False when the agent's config turns attachments off. */
  enabled: boolean;
  /** Accepted types and the largest size each may have. */
  limits: ReadonlyMap<UploadMediaType, number>;
  /** The largest of those ceilings: the hard cap while streaming, before the type is known. */
  maxBytes: number;
}

/** Extensions a picker preference may name, and the types they stand for. */
const EXTENSION_TYPES: Record<string, UploadMediaType> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  pdf: 'application/pdf',
  docx: DOCX,
  xlsx: XLSX,
  pptx: PPTX,
  ...TEXT_EXTENSIONS,
};

/** Whether a picker `accept` entry (`type/subtype`, `type/*` or `.ext`) covers `mediaType`. */
function acceptCovers(entry: string, mediaType: UploadMediaType): boolean {
  if (entry.startsWith('.')) return EXTENSION_TYPES[entry.slice(1)] === mediaType;
  if (entry.endsWith('/*')) return mediaType.startsWith(entry.slice(0, -1));
  return entry === mediaType;
}

/**
 * Resolves the upload policy for a caller. Built-in ceilings: the default set (PNG, JPEG, WebP,
 * GIF, PDF) up to 5 MiB; with the managed-sandbox gate open, the managed document set (PDF and
 * Office, text, CSV/TSV, JSON) up to 10 MiB. The operator can only lower those and narrow the
 * types; the agent's picker preferences narrow further. Nothing a client sends takes part.
 */
export function resolveUploadPolicy(
  operator: Config['uploads'],
  agentConfig: AgentConfig,
  gateOpen: boolean,
): UploadPolicy {
  const limits = new Map<UploadMediaType, number>();
  for (const type of DEFAULT_UPLOAD_TYPES) limits.set(type, operator.maxBytes);
  if (gateOpen) for (const type of MANAGED_UPLOAD_TYPES) limits.set(type, operator.managedMaxBytes);

  const allowedByOperator = operator.allowedTypes;
  const preferences = agentConfig.attachments;
  for (const [type, limit] of limits) {
    const allowed =
      (allowedByOperator === undefined || allowedByOperator.includes(type)) &&
      (preferences?.accept === undefined || preferences.accept.some((entry) => acceptCovers(entry, type)));
    if (!allowed) limits.delete(type);
    else if (preferences?.maxBytes !== undefined) limits.set(type, Math.min(limit, preferences.maxBytes));
  }
  const enabled = preferences?.enabled !== false && limits.size > 0;
  return {
    enabled,
    limits: enabled ? limits : new Map(),
    maxBytes: enabled ? Math.max(...limits.values()) : 0,
  };
}

/** Picker extensions for types whose MIME names browsers map unreliably to files. */
const PICKER_EXTENSIONS: Partial<Record<UploadMediaType, string[]>> = {
  [DOCX]: ['.docx'],
  [XLSX]: ['.xlsx'],
  [PPTX]: ['.pptx'],
  'text/plain': ['.txt'],
  'text/markdown': ['.md', '.markdown'],
  'text/csv': ['.csv'],
  'text/tab-separated-values': ['.tsv'],
  'application/json': ['.json'],
};

/** The picker's `accept` list for a policy: its MIME types, plus extensions where they help. */
export function pickerAccept(policy: UploadPolicy): string[] {
  const types = [...policy.limits.keys()];
  return [...types, ...types.flatMap((type) => PICKER_EXTENSIONS[type] ?? [])];
}
