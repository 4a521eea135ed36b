import { describe, expect, it } from 'vitest';
import { classifyLinkTarget, createLinkHoldback, findWorkspaceLinks } from './workspace-links.js';

describe('classifyLinkTarget', () => {
  it.each([
    ['sandbox:/mnt/data/report.xlsx', { kind: 'workspace', path: 'report.xlsx' }],
    ['sandbox:/mnt/data/out/a%20b.csv', { kind: 'workspace', path: 'out/a b.csv' }],
    ['sandbox:/workspace/out.csv', { kind: 'workspace', path: 'out.csv' }],
    ['sandbox:report.pdf', { kind: 'workspace', path: 'report.pdf' }],
    ['/workspace/out.csv', { kind: 'workspace', path: 'out.csv' }],
    ['/mnt/data/chart.png', { kind: 'workspace', path: 'chart.png' }],
    ['file:///mnt/data/chart.png', { kind: 'workspace', path: 'chart.png' }],
    ['file:///workspace/./a//b.txt', { kind: 'workspace', path: 'a/b.txt' }],
    ['out/report.csv', { kind: 'relative', path: 'out/report.csv' }],
    ['./report.csv', { kind: 'relative', path: 'report.csv' }],
  ])('%s is a workspace path', (target, expected) => {
    expect(classifyLinkTarget(target)).toEqual(expected);
  });

  it.each([
    'file:///etc/passwd',
    'sandbox:/mnt/data/../../etc/passwd',
    'sandbox:/workspace/../secret',
    '/workspace/..',
    '../outside.csv',
    'a/../../b',
    'sandbox:/mnt/data/%2e%2e/x',
    'file://host/share/x',
    'sandbox:/etc/passwd',
  ])('%s escapes or names something outside: a note, never a publish', (target) => {
    expect(classifyLinkTarget(target)).toEqual({ kind: 'outside' });
  });

  it.each([
    'https://example.com/a.csv',
    'mailto:a@example.com',
    '#section',
    '?q=1',
    '/v1/files/x',
    'data:text/plain,hi',
    '',
  ])('%j is not the workspace business', (target) => {
    expect(classifyLinkTarget(target)).toBeUndefined();
  });
});

describe('findWorkspaceLinks', () => {
  it('finds Markdown links and images, autolinks and bare sandbox: URLs, with their spans', () => {
    const text =
      'See [the report](sandbox:/mnt/data/report.xlsx), ![chart](/workspace/chart.png "Chart"), ' +
      '<file:///mnt/data/raw.csv>, sandbox:/mnt/data/notes.txt and [local](out/a.csv).';
    const links = findWorkspaceLinks(text);
    expect(links.map((link) => [text.slice(link.start, link.end), link.label, link.target])).toEqual([
      ['[the report](sandbox:/mnt/data/report.xlsx)', 'the report', { kind: 'workspace', path: 'report.xlsx' }],
      ['![chart](/workspace/chart.png "Chart")', 'chart', { kind: 'workspace', path: 'chart.png' }],
      ['<file:///mnt/data/raw.csv>', 'file:///mnt/data/raw.csv', { kind: 'workspace', path: 'raw.csv' }],
      ['sandbox:/mnt/data/notes.txt', 'sandbox:/mnt/data/notes.txt', { kind: 'workspace', path: 'notes.txt' }],
      ['[local](out/a.csv)', 'local', { kind: 'relative', path: 'out/a.csv' }],
    ]);
  });

  it('ends a bare URL before the punctuation of its sentence', () => {
    const [link] = findWorkspaceLinks('It is at sandbox:/mnt/data/notes.txt.');
    expect(link?.target).toEqual({ kind: 'workspace', path: 'notes.txt' });
    expect(link?.end).toBe('It is at sandbox:/mnt/data/notes.txt'.length);
  });

  it('leaves web links and paths in prose alone', () => {
    expect(
      findWorkspaceLinks('Open [docs](https://example.com/x.csv); the file is in /workspace/out.csv or out/a.csv.'),
    ).toEqual([]);
  });

  it('reports an escape as outside', () => {
    expect(findWorkspaceLinks('[p](sandbox:/mnt/data/../../etc/passwd)')).toEqual([
      { start: 0, end: 39, label: 'p', target: { kind: 'outside' } },
    ]);
  });
});

/** Streams `pieces` through a holdback and returns what went out after each, then at the end. */
function stream(pieces: string[], maxHeld?: number): string[] {
  const holdback = createLinkHoldback(maxHeld);
  return [...pieces.map((piece) => holdback.push(piece)), holdback.flush()];
}

describe('createLinkHoldback', () => {
  it('passes text without link openings at once', () => {
    expect(stream(['Hello, ', 'world.\n', 'Done'])).toEqual(['Hello, ', 'world.\n', 'Done', '']);
  });

  it('holds an unfinished Markdown link from its bracket, and releases it whole', () => {
    expect(stream(['The [rep', 'ort](sandbox:/mnt/da', 'ta/r.xlsx) is ready.'])).toEqual([
      'The ',
      '',
      '[report](sandbox:/mnt/data/r.xlsx) is ready.',
      '',
    ]);
  });

  it('holds a bare sandbox: URL while it may grow, and the first letters of one', () => {
    expect(stream(['Saved to sand', 'box:/mnt/data/a', '.csv', ' now.'])).toEqual([
      'Saved to ',
      '',
      '',
      'sandbox:/mnt/data/a.csv now.',
      '',
    ]);
  });

  it('holds the first letters of sandbox: only at the start of a word', () => {
    expect(stream(['Two results', ' and sa', 'ndbox:/mnt/data/x.csv\n'])).toEqual([
      'Two results',
      ' and ',
      'sandbox:/mnt/data/x.csv\n',
      '',
    ]);
  });

  it('releases a bracket that is not a link as soon as that is clear', () => {
    expect(stream(['Footnote [1', '] here.'])).toEqual(['Footnote ', '[1] here.', '']);
  });

  it('never holds past the end of a line or past its bound', () => {
    expect(stream(['[unfinished\n', 'next'])).toEqual(['[unfinished\n', 'next', '']);
    const long = `[${'x'.repeat(100)}`;
    expect(stream([long], 50)).toEqual([long, '']);
  });

  it('gives what is held at the end of the answer', () => {
    expect(stream(['See [a](sandbox:/x'])).toEqual(['See ', '[a](sandbox:/x']);
  });
});
