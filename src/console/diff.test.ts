import { describe, expect, it } from 'vitest';
import { describeChange, describeDiff, diffObjects, flatten } from './diff.js';

describe('flatten', () => {
  it('turns nested objects into dotted paths and keeps arrays as leaves', () => {
    const flat = flatten({
      schemaVersion: 1,
      runtime: { sandbox: { enabled: true } },
      attachments: { accept: ['image/*', '.pdf'] },
    });
    expect([...flat.entries()]).toEqual([
      ['schemaVersion', 1],
      ['runtime.sandbox.enabled', true],
      ['attachments.accept', ['image/*', '.pdf']],
    ]);
  });

  it('keeps an empty nested object as a leaf and skips undefined values', () => {
    expect([...flatten({ runtime: {}, model: undefined }).entries()]).toEqual([['runtime', {}]]);
  });

  it('gives nothing for a non-object at the top', () => {
    expect(flatten(null).size).toBe(0);
  });
});

describe('diffObjects', () => {
  it('finds no change between equal objects whatever their key order', () => {
    expect(diffObjects({ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 })).toEqual([]);
  });

  it('reports added, removed and changed fields sorted by path', () => {
    expect(
      diffObjects({ model: 'a', instructions: 'x' }, { model: 'b', runtime: { sandbox: { enabled: true } } }),
    ).toEqual([
      { path: 'instructions', kind: 'removed', before: 'x', after: undefined },
      { path: 'model', kind: 'changed', before: 'a', after: 'b' },
      { path: 'runtime.sandbox.enabled', kind: 'added', before: undefined, after: true },
    ]);
  });

  it('compares arrays as a whole', () => {
    expect(diffObjects({ accept: ['a'] }, { accept: ['a', 'b'] })).toHaveLength(1);
  });
});

describe('describeDiff', () => {
  it('says booleans as on and off', () => {
    expect(
      describeDiff(
        { schemaVersion: 1, runtime: { sandbox: { enabled: false } } },
        { schemaVersion: 1, runtime: { sandbox: { enabled: true } } },
      ),
    ).toEqual(['runtime.sandbox.enabled: off → on']);
  });

  it('says only "changed" for instructions and long or multi-line text', () => {
    expect(describeDiff({ instructions: 'Be brief.' }, { instructions: 'Be thorough.' })).toEqual([
      'instructions: changed',
    ]);
    expect(describeDiff({ note: 'a\nb' }, { note: 'a\nc' })).toEqual(['note: changed']);
    expect(describeDiff({}, { instructions: 'New.' })).toEqual(['instructions: added']);
  });

  it('quotes short strings and marks missing values as not set', () => {
    expect(describeDiff({ schemaVersion: 1 }, { schemaVersion: 1, model: 'gpt-4o' })).toEqual([
      'model: not set → "gpt-4o"',
    ]);
    expect(describeChange({ path: 'attachments.maxBytes', kind: 'removed', before: 1024, after: undefined })).toBe(
      'attachments.maxBytes: 1024 → not set',
    );
  });

  it('says network policy changes field by field, and what an allowlist gained and lost', () => {
    const published = { schemaVersion: 1, runtime: { sandbox: { enabled: true } } };
    const allowlist = {
      schemaVersion: 1,
      runtime: { sandbox: { enabled: true, network: { mode: 'allowlist', allow: ['api.example.com'] } } },
    };
    expect(describeDiff(published, allowlist)).toEqual([
      'runtime.sandbox.network.allow: not set → ["api.example.com"]',
      'runtime.sandbox.network.mode: not set → "allowlist"',
    ]);
    const widened = {
      schemaVersion: 1,
      runtime: {
        sandbox: { enabled: true, network: { mode: 'allowlist', allow: ['*.example.org', 'files.example.net:8443'] } },
      },
    };
    expect(describeDiff(allowlist, widened)).toEqual([
      'runtime.sandbox.network.allow: added "*.example.org", "files.example.net:8443"; removed "api.example.com"',
    ]);
    expect(
      describeDiff(allowlist, {
        schemaVersion: 1,
        runtime: { sandbox: { enabled: true, network: { mode: 'packages' } } },
      }),
    ).toEqual([
      'runtime.sandbox.network.allow: ["api.example.com"] → not set',
      'runtime.sandbox.network.mode: "allowlist" → "packages"',
    ]);
  });

  it('says a list with the same items reordered or repeated', () => {
    expect(describeDiff({ accept: ['a', 'b'] }, { accept: ['b', 'a'] })).toEqual(['accept: reordered']);
    expect(describeDiff({ accept: ['a'] }, { accept: ['a', 'a'] })).toEqual(['accept: changed']);
  });

  it('gives no lines for equal configurations', () => {
    expect(describeDiff({ schemaVersion: 1, model: 'm' }, { model: 'm', schemaVersion: 1 })).toEqual([]);
  });
});
