import type { UIMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { type ModelFile, projectForModel } from './prompt-projection.js';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const PNG_BYTES = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
const PDF_BYTES = new TextEncoder().encode('%PDF-1.4\n%%EOF\n');

const conversation: UIMessage[] = [
  {
    id: 'u1',
    role: 'user',
    parts: [
      { type: 'file', mediaType: 'image/png', filename: 'chart.png', storagePath: 'uploads/aaaa', url: '' } as never,
      {
        type: 'file',
        mediaType: 'application/pdf',
        filename: 'report "Q1".pdf',
        storagePath: 'uploads/bbbb',
        url: '',
      } as never,
      {
        type: 'file',
        mediaType: 'text/csv',
        filename: 'data<script>.csv',
        storagePath: 'uploads/cccc',
        url: 'https://client.example/raw',
      } as never,
      { type: 'text', text: 'Summarise these.' },
      { type: 'data-control', data: { secret: 'internal' } } as never,
    ],
  },
  {
    id: 'a1',
    role: 'assistant',
    parts: [
      { type: 'text', text: 'Done.' },
      {
        type: 'file',
        mediaType: 'text/csv',
        filename: 'out.csv',
        storagePath: 'artifacts/dddd',
        url: 'https://x',
      } as never,
    ],
  },
];

/** The registry's view: canonical types, and bytes for what goes inline (here: what loadModelFiles would read). */
const managedFiles = new Map<string, ModelFile>([
  ['uploads/aaaa', { mediaType: 'image/png', bytes: PNG_BYTES }],
  ['uploads/bbbb', { mediaType: 'application/pdf' }],
  ['uploads/cccc', { mediaType: 'text/csv' }],
]);

const dataUrl = (mediaType: string, bytes: Uint8Array) =>
  `data:${mediaType};base64,${Buffer.from(bytes).toString('base64')}`;

describe('projectForModel', () => {
  it('with sandboxes: images as inline bytes, every other file (PDF too) a delimited reference, no URL anywhere', () => {
    const [user, assistant] = projectForModel(conversation, { managed: true, files: managedFiles });
    expect(user?.parts[0]).toEqual({
      type: 'file',
      mediaType: 'image/png',
      url: dataUrl('image/png', PNG_BYTES),
      filename: 'chart.png',
    });
    const pdf = user?.parts[1] as { type: string; text: string };
    expect(pdf.type).toBe('text');
    expect(pdf.text).toContain(
      '<attachment filename="report &quot;Q1&quot;.pdf" mediaType="application/pdf" storagePath="uploads/bbbb" />',
    );
    expect(pdf.text).toContain('sandbox_import_file');
    const csv = user?.parts[2] as { text: string };
    expect(csv.text).toContain('filename="data&lt;script&gt;.csv"');
    expect(JSON.stringify([user, assistant])).not.toMatch(/https?:/);
    expect(user?.parts.some((part) => part.type.startsWith('data-'))).toBe(false);
    expect(assistant?.parts[1]).toMatchObject({
      type: 'text',
      text: expect.stringContaining('<published-file filename="out.csv"'),
    });
  });

  it('without sandboxes: images and PDFs as inline bytes', () => {
    const files = new Map<string, ModelFile>([
      ['uploads/aaaa', { mediaType: 'image/png', bytes: PNG_BYTES }],
      ['uploads/bbbb', { mediaType: 'application/pdf', bytes: PDF_BYTES }],
      ['uploads/cccc', { mediaType: 'text/csv' }],
    ]);
    const [user] = projectForModel(conversation, { managed: false, files });
    expect(user?.parts[1]).toEqual({
      type: 'file',
      mediaType: 'application/pdf',
      url: dataUrl('application/pdf', PDF_BYTES),
      filename: 'report "Q1".pdf',
    });
    expect(user?.parts[2]).toMatchObject({ type: 'text', text: expect.stringContaining('were not sent to you') });
  });

  it('decides from the registry’s media type: a DOCX or CSV sent as image/png is a descriptor, not a file', () => {
    const disguised: UIMessage[] = [
      {
        id: 'u',
        role: 'user',
        parts: [
          { type: 'file', mediaType: 'image/png', filename: 'a.png', storagePath: 'uploads/docx' } as never,
          { type: 'file', mediaType: 'image/png', filename: 'b.png', storagePath: 'uploads/csv' } as never,
          { type: 'file', mediaType: 'text/csv', filename: 'real.csv', storagePath: 'uploads/png' } as never,
        ],
      },
    ];
    const files = new Map<string, ModelFile>([
      ['uploads/docx', { mediaType: DOCX }],
      ['uploads/csv', { mediaType: 'text/csv' }],
      ['uploads/png', { mediaType: 'image/png', bytes: PNG_BYTES }],
    ]);
    for (const managed of [true, false]) {
      const [user] = projectForModel(disguised, { managed, files });
      expect(user?.parts[0]).toMatchObject({ type: 'text', text: expect.stringContaining(`mediaType="${DOCX}"`) });
      expect(user?.parts[1]).toMatchObject({ type: 'text', text: expect.stringContaining('mediaType="text/csv"') });
      expect(user?.parts[2]).toMatchObject({ type: 'file', mediaType: 'image/png' });
    }
  });

  it('marks a file that is gone or not the user’s as unavailable', () => {
    const [user] = projectForModel(conversation, { managed: true, files: new Map() });
    expect(user?.parts[0]).toEqual({ type: 'text', text: '<attachment-unavailable filename="chart.png" />' });
  });

  it('describes every file when the storage cannot look files up', () => {
    const [user] = projectForModel(conversation, { managed: true, files: undefined });
    expect(user?.parts.slice(0, 3).map((part) => part.type)).toEqual(['text', 'text', 'text']);
    expect(JSON.stringify(user)).not.toMatch(/https?:/);
  });
});
