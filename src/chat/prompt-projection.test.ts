import type { UIMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { projectForModel } from './prompt-projection.js';

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

const urls = new Map([
  ['uploads/aaaa', 'https://fresh.example/chart'],
  ['uploads/bbbb', 'https://fresh.example/report'],
]);

describe('projectForModel', () => {
  it('with sandboxes: images native with a fresh URL, every other file (PDF too) a delimited reference', () => {
    const [user, assistant] = projectForModel(conversation, { managed: true, urls });
    expect(user?.parts[0]).toEqual({
      type: 'file',
      mediaType: 'image/png',
      url: 'https://fresh.example/chart',
      filename: 'chart.png',
    });
    const pdf = user?.parts[1] as { type: string; text: string };
    expect(pdf.type).toBe('text');
    expect(pdf.text).toContain(
      '<attachment filename="report &quot;Q1&quot;.pdf" mediaType="application/pdf" storagePath="uploads/bbbb" />',
    );
    expect(pdf.text).toContain('Untrusted');
    const csv = user?.parts[2] as { text: string };
    expect(csv.text).toContain('filename="data&lt;script&gt;.csv"');
    expect(JSON.stringify(user)).not.toContain('client.example');
    expect(JSON.stringify(user)).not.toContain('fresh.example/report');
    expect(user?.parts.some((part) => part.type.startsWith('data-'))).toBe(false);
    expect(assistant?.parts[1]).toMatchObject({
      type: 'text',
      text: expect.stringContaining('<published-file filename="out.csv"'),
    });
  });

  it('without sandboxes: images and PDFs native, as before', () => {
    const [user] = projectForModel(conversation, { managed: false, urls });
    expect(user?.parts[1]).toEqual({
      type: 'file',
      mediaType: 'application/pdf',
      url: 'https://fresh.example/report',
      filename: 'report "Q1".pdf',
    });
  });

  it('marks a file whose reference could not be re-signed as unavailable', () => {
    const [user] = projectForModel(conversation, { managed: true, urls: new Map() });
    expect(user?.parts[0]).toEqual({ type: 'text', text: '<attachment-unavailable filename="chart.png" />' });
  });
});
