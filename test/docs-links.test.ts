import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../src/package-root.js';
import {
  DOCS_MAP_HEADING,
  documentationPages,
  githubSlug,
  headingAnchors,
  mapPages,
  readPage,
  relativeLinks,
} from './support/readme.js';

/**
 * The README and the docs/*.md pages link to each other and into the repository. These tests
 * hold every such link to something that exists: the file or directory it names, and the heading
 * its `#anchor` names (as GitHub makes anchors). And every page must be reachable from the
 * README's map, so that no page is left where no reader finds it.
 */

/**
 * Why a link of `page` (whose text is `markdown`) leads nowhere, or undefined when it resolves.
 * Targets are relative to the page's directory and must stay inside the repository.
 */
function brokenReason(page: string, markdown: string, target: string): string | undefined {
  const [file = '', anchor] = target.split('#', 2);
  if (file === '') {
    return anchor === undefined || headingAnchors(markdown).has(decodeURIComponent(anchor))
      ? undefined
      : `${page} has no heading #${anchor}`;
  }
  const targetPage = path.posix.normalize(path.posix.join(path.posix.dirname(page), file));
  const absolute = path.join(packageRoot(), targetPage);
  if (targetPage.startsWith('..') || !existsSync(absolute)) return `${targetPage} does not exist`;
  if (anchor === undefined) return undefined;
  if (!targetPage.endsWith('.md') || statSync(absolute).isDirectory()) {
    return `#${anchor} points into ${targetPage}, which has no headings`;
  }
  const anchors = headingAnchors(readPage(targetPage));
  return anchors.has(decodeURIComponent(anchor)) ? undefined : `${targetPage} has no heading #${anchor}`;
}

/** Every broken link of the pages (path → text), as `page:line → target: reason`. */
function brokenLinks(pages: Record<string, string>): string[] {
  return Object.entries(pages).flatMap(([page, markdown]) =>
    relativeLinks(markdown).flatMap(({ target, line }) => {
      const reason = brokenReason(page, markdown, target);
      return reason === undefined ? [] : [`${page}:${line} → ${target}: ${reason}`];
    }),
  );
}

const PAGES = documentationPages();

describe('documentation links', () => {
  it('finds the pages: the README and every docs/*.md', () => {
    expect(PAGES[0]).toBe('README.md');
    expect(PAGES.length).toBeGreaterThan(10);
  });

  it('resolve: every relative link names a file that exists, and every #anchor a heading of it', () => {
    const pages = Object.fromEntries(PAGES.map((page) => [page, readPage(page)]));
    const checked = Object.values(pages).reduce((count, markdown) => count + relativeLinks(markdown).length, 0);
    expect(checked).toBeGreaterThan(50);
    expect(brokenLinks(pages)).toEqual([]);
  });

  it('every docs page is in the README’s map', () => {
    const listed = mapPages();
    const unlisted = PAGES.filter((page) => page !== 'README.md' && !listed.includes(page));
    expect(unlisted, `pages missing from the README's "${DOCS_MAP_HEADING}"`).toEqual([]);
  });
});

describe('the link checker itself', () => {
  it('makes anchors as GitHub does', () => {
    expect(githubSlug('Node.js versions')).toBe('nodejs-versions');
    expect(githubSlug('Why a socket proxy, and what it still allows')).toBe(
      'why-a-socket-proxy-and-what-it-still-allows',
    );
    expect(githubSlug('2.1 Namespace, admission and quota')).toBe('21-namespace-admission-and-quota');
    expect(githubSlug('What `npm test` runs')).toBe('what-npm-test-runs');
    expect(githubSlug('Size: no compiler')).toBe('size-no-compiler');
    expect(githubSlug('MORDN_SANDBOX_EGRESS and [the policy](x.md)')).toBe('mordn_sandbox_egress-and-the-policy');
    expect([...headingAnchors('# A\n## A\n```sh\n# A\n```\n### A\n')]).toEqual(['a', 'a-1', 'a-2']);
  });

  it('reports a missing file, a missing heading and a heading-less target, and ignores code and other sites', () => {
    const broken = brokenLinks({
      'docs/example.md': [
        '# Example',
        'See [a missing page](missing.md), [a missing heading](../README.md#no-such-heading),',
        '[a directory anchor](../examples/nextjs#x), [here](#example) and [the README](../README.md#quickstart).',
        '`[in code](nowhere.md)` and [a site](https://example.com/nowhere.md#x).',
        '```md',
        '[in a fence](nowhere.md)',
        '```',
      ].join('\n'),
    });
    expect(broken).toEqual([
      'docs/example.md:2 → missing.md: docs/missing.md does not exist',
      'docs/example.md:2 → ../README.md#no-such-heading: README.md has no heading #no-such-heading',
      'docs/example.md:3 → ../examples/nextjs#x: #x points into examples/nextjs, which has no headings',
    ]);
  });
});
