import type { UIMessageChunk } from 'ai';
import { describe, expect, it } from 'vitest';
import { mintArtifactCarrier } from './artifact-carrier.js';
import { createLinkGuard, type LinkPublication, MAX_LINK_PUBLICATIONS, NOT_PUBLISHED_NOTE } from './link-guard.js';

/** A workspace of `files` (path → size), recording every question the guard asks it. */
function workspace(files: Record<string, number>, options: { exists?: boolean; refuse?: boolean } = {}) {
  const published: string[] = [];
  let lookups = 0;
  return {
    published,
    lookups: () => lookups,
    publisher: {
      async hasWorkspace() {
        lookups += 1;
        return options.exists ?? true;
      },
      async publish(path: string): Promise<LinkPublication> {
        published.push(path);
        if (options.refuse) return { kind: 'refused' };
        const size = files[path];
        if (size === undefined) return { kind: 'missing' };
        return {
          kind: 'published',
          carrier: mintArtifactCarrier(`link-${published.length}`, {
            url: `https://api.example/files/artifacts/${published.length}`,
            storagePath: `artifacts/${String(published.length).padStart(32, '0')}`,
            filename: path.split('/').at(-1) as string,
            mediaType: 'text/csv',
            size,
          }),
        };
      },
    },
  };
}

/** Streams `deltas` as one text part through the guard; returns every chunk that went out. */
async function answer(guard: ReturnType<typeof createLinkGuard>, deltas: string[]): Promise<UIMessageChunk[]> {
  const chunks: UIMessageChunk[] = [
    { type: 'start-step' },
    { type: 'text-start', id: 't' },
    ...deltas.map((delta) => ({ type: 'text-delta' as const, id: 't', delta })),
    { type: 'text-end', id: 't' },
    { type: 'finish-step' },
  ];
  const out: UIMessageChunk[] = [];
  for (const chunk of chunks) out.push(...(await guard.pass(chunk)));
  return out;
}

const textOf = (chunks: UIMessageChunk[]) =>
  chunks.map((chunk) => (chunk.type === 'text-delta' ? chunk.delta : '')).join('');
const cardsOf = (chunks: UIMessageChunk[]) => chunks.filter((chunk) => chunk.type === 'file');

describe('createLinkGuard', () => {
  it('turns a link split across deltas into its label and one card from one publish', async () => {
    const files = workspace({ 'r.csv': 12 });
    const out = await answer(createLinkGuard(files.publisher), [
      'See [the re',
      'port](sandbox:/mnt/da',
      'ta/r.csv) now.',
    ]);
    expect(textOf(out)).toBe('See the report now.');
    expect(files.published).toEqual(['r.csv']);
    expect(cardsOf(out)).toEqual([
      {
        type: 'file',
        url: 'https://api.example/files/artifacts/1',
        mediaType: 'text/csv',
        providerMetadata: {
          mordn: { sandboxFile: { filename: 'r.csv', size: 12, storagePath: `artifacts/${'1'.padStart(32, '0')}` } },
        },
      },
    ]);
    // The card follows the text that named it, inside the same step.
    expect(out.map((chunk) => chunk.type)).toEqual([
      'start-step',
      'text-start',
      'text-delta',
      'text-delta',
      'file',
      'text-end',
      'finish-step',
    ]);
  });

  it('covers every link form, and publishes a file named twice once', async () => {
    const files = workspace({ 'a.csv': 1, 'b.csv': 2, 'c.csv': 3, 'out/d.csv': 4 });
    const out = await answer(createLinkGuard(files.publisher), [
      '[A](sandbox:/mnt/data/a.csv), ![B](/workspace/b.csv), <file:///mnt/data/c.csv>, ',
      '[D](out/d.csv), sandbox:/mnt/data/a.csv.',
    ]);
    expect(textOf(out)).toBe('A, B, c.csv, D, a.csv.');
    expect(files.published).toEqual(['a.csv', 'b.csv', 'c.csv', 'out/d.csv']);
    expect(cardsOf(out)).toHaveLength(4);
  });

  it('notes a missing file and an escape; the escape is never even looked up', async () => {
    const files = workspace({});
    const out = await answer(createLinkGuard(files.publisher), [
      'Get [it](sandbox:/mnt/data/gone.csv) or [that](sandbox:/mnt/data/../../etc/passwd) or [this](file:///etc/hosts).',
    ]);
    expect(textOf(out)).toBe(
      `Get it ${NOT_PUBLISHED_NOTE} or that ${NOT_PUBLISHED_NOTE} or this ${NOT_PUBLISHED_NOTE}.`,
    );
    expect(files.published).toEqual(['gone.csv']);
    expect(cardsOf(out)).toEqual([]);
  });

  it('leaves a relative link to nothing in the workspace as written', async () => {
    const files = workspace({});
    const out = await answer(createLinkGuard(files.publisher), [
      'See [pricing](pricing) and [x](https://e.example/x).',
    ]);
    expect(textOf(out)).toBe('See [pricing](pricing) and [x](https://e.example/x).');
    expect(files.published).toEqual(['pricing']);
  });

  it('without a workspace, notes workspace links and publishes nothing', async () => {
    const files = workspace({ 'a.csv': 1 }, { exists: false });
    const out = await answer(createLinkGuard(files.publisher), ['[A](sandbox:/mnt/data/a.csv) [r](a.csv)']);
    expect(textOf(out)).toBe(`A ${NOT_PUBLISHED_NOTE} [r](a.csv)`);
    expect(files.published).toEqual([]);
    expect(files.lookups()).toBeGreaterThan(0);
  });

  it('when publishing is refused (policy), notes even a relative link', async () => {
    const files = workspace({ 'a.csv': 1 }, { refuse: true });
    const out = await answer(createLinkGuard(files.publisher), ['[A](sandbox:/mnt/data/a.csv) [r](a.csv)']);
    expect(textOf(out)).toBe(`A ${NOT_PUBLISHED_NOTE} r ${NOT_PUBLISHED_NOTE}`);
    expect(cardsOf(out)).toEqual([]);
  });

  it('without sandboxes, notes sandbox links and leaves relative ones', async () => {
    const out = await answer(createLinkGuard(undefined), ['[A](sandbox:/mnt/data/a.csv) [r](a.csv)']);
    expect(textOf(out)).toBe(`A ${NOT_PUBLISHED_NOTE} [r](a.csv)`);
  });

  it(`publishes at most ${MAX_LINK_PUBLICATIONS} files per answer`, async () => {
    const names = Array.from({ length: MAX_LINK_PUBLICATIONS + 3 }, (_, index) => `f${index}.csv`);
    const files = workspace(Object.fromEntries(names.map((name) => [name, 1])));
    const out = await answer(createLinkGuard(files.publisher), [names.map((name) => `[${name}](${name})`).join(' ')]);
    expect(files.published).toHaveLength(MAX_LINK_PUBLICATIONS);
    expect(cardsOf(out)).toHaveLength(MAX_LINK_PUBLICATIONS);
    expect(textOf(out).endsWith(`f${MAX_LINK_PUBLICATIONS + 2}.csv ${NOT_PUBLISHED_NOTE}`)).toBe(true);
  });

  it('gives no second card, and makes no second publish, for a file the model published itself', async () => {
    const files = workspace({ 'r.csv': 3 });
    const guard = createLinkGuard(files.publisher);
    const card = { type: 'file', url: 'https://api.example/files/artifacts/m', mediaType: 'text/csv' } as const;
    const before: UIMessageChunk[] = [
      { type: 'tool-input-available', toolCallId: 'c1', toolName: 'sandbox_publish_file', input: { path: './r.csv' } },
      { type: 'tool-output-available', toolCallId: 'c1', output: {} },
      card,
    ];
    const passed: UIMessageChunk[] = [];
    for (const chunk of before) passed.push(...(await guard.pass(chunk)));
    expect(passed).toEqual(before);
    const out = await answer(guard, ['Here: [r](sandbox:/mnt/data/r.csv).']);
    expect(textOf(out)).toBe('Here: r.');
    expect(cardsOf(out)).toEqual([]);
    expect(files.published).toEqual([]);
  });

  it('passes text without links chunk for chunk, and other chunks untouched', async () => {
    const files = workspace({});
    const out = await answer(createLinkGuard(files.publisher), ['Hello ', 'world.']);
    expect(out.filter((chunk) => chunk.type === 'text-delta')).toEqual([
      { type: 'text-delta', id: 't', delta: 'Hello ' },
      { type: 'text-delta', id: 't', delta: 'world.' },
    ]);
    expect(files.lookups()).toBe(0);
  });
});
