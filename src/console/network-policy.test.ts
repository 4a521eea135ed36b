import { describe, expect, it } from 'vitest';
import { ApiError, errorMessage } from './api.js';
import { networkEditsOf, networkPolicyOf, parseAllowText, splitNetworkProblems } from './network-policy.js';
import type { NetworkPolicy } from './types.js';

describe('parseAllowText', () => {
  it('takes one trimmed entry a line, skipping blank lines, and remembers each line', () => {
    expect(parseAllowText('api.example.com\r\n\n  *.example.org \n10.1.2.3:8443\n')).toEqual({
      entries: ['api.example.com', '*.example.org', '10.1.2.3:8443'],
      lines: [1, 3, 4],
    });
  });

  it('gives nothing for an empty or blank text', () => {
    expect(parseAllowText('')).toEqual({ entries: [], lines: [] });
    expect(parseAllowText(' \n\t\n')).toEqual({ entries: [], lines: [] });
  });

  it('leaves the checking to the server: an entry with spaces inside is one entry', () => {
    expect(parseAllowText('a.example.com, b.example.com').entries).toEqual(['a.example.com, b.example.com']);
  });
});

describe('networkEditsOf and networkPolicyOf', () => {
  it('reads absence as no network', () => {
    expect(networkEditsOf(undefined)).toEqual({ mode: 'none', allowText: '' });
    expect(networkPolicyOf({ mode: 'none', allowText: 'kept.example.com' })).toEqual({ mode: 'none' });
  });

  it('round-trips an allowlist through its text', () => {
    const policy: NetworkPolicy = { mode: 'allowlist', allow: ['api.example.com', '[fd00::1]:8443'] };
    expect(networkEditsOf(policy)).toEqual({ mode: 'allowlist', allowText: 'api.example.com\n[fd00::1]:8443' });
    expect(networkPolicyOf(networkEditsOf(policy))).toEqual(policy);
  });
});

describe('splitNetworkProblems', () => {
  const sent = parseAllowText('api.example.com\n\nbad host\nfiles.example.net:99999');
  const failure = (errors: Array<{ path: string; message: string }>) =>
    new ApiError(400, 'VALIDATION_FAILED', 'Invalid agent config: …', 'req_1', errors);

  it("names each bad entry by its line and the server's message", () => {
    const split = splitNetworkProblems(
      failure([
        { path: 'runtime.sandbox.network.allow.1', message: '"bad host" is not a host name' },
        { path: 'runtime.sandbox.network.allow.2', message: '"files.example.net:99999" has a bad port' },
      ]),
      sent,
    );
    expect(split.network).toEqual([
      'Line 3: "bad host" is not a host name',
      'Line 4: "files.example.net:99999" has a bad port',
    ]);
    expect(split.rest).toBe('The draft was not saved: the network setting has 2 problems.');
  });

  it('says a problem of the whole list or the mode as it is', () => {
    const split = splitNetworkProblems(
      failure([
        { path: 'runtime.sandbox.network.allow', message: 'must hold at most 64 entries' },
        { path: 'runtime.sandbox.network.mode', message: 'mode must be one of none, packages, allowlist' },
      ]),
      sent,
    );
    expect(split.network).toEqual([
      'The allowlist must hold at most 64 entries',
      'mode must be one of none, packages, allowlist',
    ]);
  });

  it('keeps the other fields in the alert', () => {
    const split = splitNetworkProblems(
      failure([
        { path: 'runtime.sandbox.network.allow.0', message: 'no' },
        { path: 'model', message: 'must be a model id' },
      ]),
      sent,
    );
    expect(split.network).toEqual(['Line 1: no']);
    expect(errorMessage(split.rest)).toBe(
      'The draft was not saved: the network setting has a problem. model: must be a model id',
    );
  });

  it('passes any other failure through unchanged', () => {
    const other = failure([{ path: 'model', message: 'must be a model id' }]);
    expect(splitNetworkProblems(other, sent)).toEqual({ network: [], rest: other });
    expect(splitNetworkProblems(null, sent)).toEqual({ network: [], rest: null });
    const network = new Error('offline');
    expect(splitNetworkProblems(network, sent).rest).toBe(network);
  });
});
