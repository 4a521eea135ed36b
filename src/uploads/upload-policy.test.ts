import { describe, expect, it } from 'vitest';
import type { AgentConfig } from '../agents/config-schema.js';
import { loadConfig } from '../config.js';
import { DOCX } from './media-types.js';
import { pickerAccept, resolveUploadPolicy } from './upload-policy.js';

const MiB = 1024 * 1024;
const operator = loadConfig({}).uploads;
const agent: AgentConfig = { schemaVersion: 1 };

describe('resolveUploadPolicy', () => {
  it('accepts images and PDF up to 5 MiB while the gate is closed', () => {
    const policy = resolveUploadPolicy(operator, agent, false);
    expect(Object.fromEntries(policy.limits)).toEqual({
      'image/png': 5 * MiB,
      'image/jpeg': 5 * MiB,
      'image/webp': 5 * MiB,
      'image/gif': 5 * MiB,
      'application/pdf': 5 * MiB,
    });
    expect(policy.maxBytes).toBe(5 * MiB);
  });

  it('adds the managed documents (and lifts PDF) to 10 MiB only with the gate open; images stay at 5 MiB', () => {
    const policy = resolveUploadPolicy(operator, agent, true);
    expect(policy.limits.get('application/pdf')).toBe(10 * MiB);
    expect(policy.limits.get(DOCX)).toBe(10 * MiB);
    expect(policy.limits.get('text/csv')).toBe(10 * MiB);
    expect(policy.limits.get('image/png')).toBe(5 * MiB);
    expect(policy.maxBytes).toBe(10 * MiB);
  });

  it('lets the operator lower sizes and narrow types', () => {
    const narrowed = loadConfig({
      MORDN_UPLOAD_MAX_BYTES: String(MiB),
      MORDN_MANAGED_UPLOAD_MAX_BYTES: String(2 * MiB),
      MORDN_UPLOAD_TYPES: 'image/png,text/csv',
    }).uploads;
    const policy = resolveUploadPolicy(narrowed, agent, true);
    expect(Object.fromEntries(policy.limits)).toEqual({ 'image/png': MiB, 'text/csv': 2 * MiB });
  });

  it('intersects agent picker preferences, never widening', () => {
    const picky: AgentConfig = {
      schemaVersion: 1,
      attachments: { accept: ['image/*', '.csv', 'application/zip'], maxBytes: MiB },
    };
    const closed = resolveUploadPolicy(operator, picky, false);
    expect([...closed.limits.keys()]).toEqual(['image/png', 'image/jpeg', 'image/webp', 'image/gif']);
    const open = resolveUploadPolicy(operator, picky, true);
    expect([...open.limits.keys()]).toContain('text/csv');
    expect([...open.limits.values()].every((limit) => limit === MiB)).toBe(true);
  });

  it('is disabled when the agent turns attachments off or nothing is left', () => {
    expect(resolveUploadPolicy(operator, { schemaVersion: 1, attachments: { enabled: false } }, true)).toEqual({
      enabled: false,
      limits: new Map(),
      maxBytes: 0,
    });
    const nothing = resolveUploadPolicy(operator, { schemaVersion: 1, attachments: { accept: ['text/csv'] } }, false);
    expect(nothing.enabled).toBe(false);
  });

  it('lists picker hints with extensions for documents', () => {
    const accept = pickerAccept(resolveUploadPolicy(operator, agent, true));
    expect(accept).toEqual(expect.arrayContaining(['image/png', DOCX, '.docx', 'text/markdown', '.md']));
    expect(pickerAccept(resolveUploadPolicy(operator, agent, false))).not.toContain('.docx');
  });
});
