import { describe, expect, it } from 'vitest';
import { parsePublicApiOrigin, parseSelfBaseUrl, resolveApiOrigin } from './api-origin.js';

const HOST = /host must be exactly 127\.0\.0\.1 or \[::1\]/;
const PORT = /port must be a decimal number from 1 to 65535/;
const PATH = /path is not allowed/;
const QUERY = /query is not allowed/;
const FRAGMENT = /fragment is not allowed/;
const CREDENTIALS = /credentials are not allowed/;
const ASCII = /only printable ASCII without whitespace/;
const SCHEME = /must start with "http:\/\/" in lowercase/;
const NOT_HTTPS = /must use plain "http:\/\/"/;

/** `[selfBaseUrl as configured, normalised origin]` */
const ACCEPTED_SELF: Array<[string, string]> = [
  ['http://127.0.0.1', 'http://127.0.0.1'],
  ['http://127.0.0.1/', 'http://127.0.0.1'],
  ['http://127.0.0.1:3000', 'http://127.0.0.1:3000'],
  ['http://127.0.0.1:3000/', 'http://127.0.0.1:3000'],
  ['http://127.0.0.1:1', 'http://127.0.0.1:1'],
  ['http://127.0.0.1:65535', 'http://127.0.0.1:65535'],
  ['http://127.0.0.1:80', 'http://127.0.0.1'],
  ['http://[::1]', 'http://[::1]'],
  ['http://[::1]/', 'http://[::1]'],
  ['http://[::1]:8787', 'http://[::1]:8787'],
  ['http://[::1]:8787/', 'http://[::1]:8787'],
];

/** `[selfBaseUrl as configured, the rule its error must name]` */
const REJECTED_SELF: Array<[string, RegExp]> = [
  ['http://localhost:3000', HOST],
  ['http://LOCALHOST:3000', HOST],
  ['http://127.1:3000', HOST],
  ['http://0x7f.0.0.1:3000', HOST],
  ['http://0177.0.0.1:3000', HOST],
  ['http://127.000.000.001:3000', HOST],
  ['http://2130706433:3000', HOST],
  ['http://127.0.0.2:3000', HOST],
  ['http://127.0.0.1.:3000', HOST],
  ['http://0.0.0.0:3000', HOST],
  ['http://[::ffff:127.0.0.1]:3000', HOST],
  ['http://[::ffff:7f00:1]:3000', HOST],
  ['http://[0:0:0:0:0:0:0:1]:3000', HOST],
  ['http://[0::1]:3000', HOST],
  ['http://[::01]:3000', HOST],
  ['http://[::1%25lo]:3000', HOST],
  ['http://evil.example#@127.0.0.1:3000', HOST],
  ['http://:3000', HOST],
  ['http://', HOST],
  ['http://127.0.0.1:3000/v1', PATH],
  ['http://127.0.0.1:3000//', PATH],
  ['http://127.0.0.1:3000/.', PATH],
  ['http://127.0.0.1:3000/%2e', PATH],
  ['http://127.0.0.1:3000\\', PATH],
  ['http://[::1]/v1', PATH],
  ['http://127.0.0.1:3000?x=1', QUERY],
  ['http://127.0.0.1:3000/?', QUERY],
  ['http://127.0.0.1:3000#a', FRAGMENT],
  ['http://127.0.0.1:3000/#', FRAGMENT],
  ['http://user@127.0.0.1:3000', CREDENTIALS],
  ['http://user:secret@127.0.0.1:3000', CREDENTIALS],
  ['http://@127.0.0.1:3000', CREDENTIALS],
  ['http://127.0.0.1:3000@evil.example', CREDENTIALS],
  ['http://127.0.0.1:0', PORT],
  ['http://127.0.0.1:65536', PORT],
  ['http://127.0.0.1:99999', PORT],
  ['http://127.0.0.1:03000', PORT],
  ['http://127.0.0.1:00080', PORT],
  ['http://127.0.0.1:', PORT],
  ['http://127.0.0.1:+3000', PORT],
  ['http://127.0.0.1:0x50', PORT],
  ['http://127.0.0.1:3000:3000', PORT],
  ['http://[::1]:0', PORT],
  ['http://[::1]:03000', PORT],
  [' http://127.0.0.1:3000', ASCII],
  ['http://127.0.0.1:3000 ', ASCII],
  ['http://127.0.0.1:3000\t', ASCII],
  ['http://127.0.0.1\n:3000', ASCII],
  ['http://127.0.0.1:3000\u00a0', ASCII],
  ['http://１２７.0.0.1:3000', ASCII],
  ['HTTP://127.0.0.1:3000', SCHEME],
  ['Http://127.0.0.1:3000', SCHEME],
  ['http:/127.0.0.1:3000', SCHEME],
  ['http:127.0.0.1:3000', SCHEME],
  ['//127.0.0.1:3000', SCHEME],
  ['127.0.0.1:3000', SCHEME],
  ['ws://127.0.0.1:3000', SCHEME],
  ['', SCHEME],
  ['https://127.0.0.1:3000', NOT_HTTPS],
  ['HTTPS://[::1]:3000', NOT_HTTPS],
];

describe('parseSelfBaseUrl', () => {
  it.each(ACCEPTED_SELF)('accepts %j as %s', (raw, origin) => {
    expect(parseSelfBaseUrl(raw)).toBe(origin);
  });

  it.each(REJECTED_SELF)('refuses %j, naming the rule', (raw, rule) => {
    expect(() => parseSelfBaseUrl(raw)).toThrow(TypeError);
    expect(() => parseSelfBaseUrl(raw)).toThrow(rule);
  });

  it('never repeats the refused value (it may hold credentials)', () => {
    expect(() => parseSelfBaseUrl('http://admin:hunter2@127.0.0.1:3000')).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('hunter2') }),
    );
  });
});

/** `[baseUrl, origin]` */
const ACCEPTED_PUBLIC: Array<[string, string]> = [
  ['https://api.example.com', 'https://api.example.com'],
  ['https://api.example.com/', 'https://api.example.com'],
  ['https://API.Example.COM', 'https://api.example.com'],
  ['HTTPS://api.example.com', 'https://api.example.com'],
  ['https://api.example.com:8443', 'https://api.example.com:8443'],
  ['https://api.example.com:443/', 'https://api.example.com'],
  ['https://1.1.1.1', 'https://1.1.1.1'],
  ['https://[2606:4700:4700::1111]', 'https://[2606:4700:4700::1111]'],
  ['https://bücher.example', 'https://xn--bcher-kva.example'],
];

/** `[baseUrl, the rule its error must name]` */
const REJECTED_PUBLIC: Array<[string, RegExp]> = [
  ['http://api.example.com', /https:\/\/ origin/],
  ['ftp://api.example.com', /https:\/\/ origin/],
  ['api.example.com', /https:\/\/ origin/],
  ['https:api.example.com', /https:\/\/ origin/],
  ['https://', /not a valid URL/],
  ['', /https:\/\/ origin/],
  [' https://api.example.com', /whitespace/],
  ['https://api.example.com\n', /whitespace/],
  ['https://user:secret@api.example.com', /credentials/],
  ['https://api.example.com/v1', /path/],
  ['https://api.example.com/.', /path/],
  ['https://api.example.com?x=1', /query/],
  ['https://api.example.com#top', /fragment/],
  ['https://127.0.0.1', /must be public/],
  ['https://127.1', /must be public/],
  ['https://2130706433', /must be public/],
  ['https://0x7f.0.0.1', /must be public/],
  ['https://10.0.0.1', /must be public/],
  ['https://192.168.0.10:8443', /must be public/],
  ['https://169.254.169.254', /must be public/],
  ['https://100.64.0.1', /must be public/],
  ['https://[::1]', /must be public/],
  ['https://[fe80::1]', /must be public/],
  ['https://[fd00::1]', /must be public/],
  ['https://[::ffff:127.0.0.1]', /must be public/],
  ['https://localhost', /must be public/],
  ['https://api.localhost', /must be public/],
  ['https://metadata.google.internal', /must be public/],
  ['https://printer.local', /must be public/],
];

describe('parsePublicApiOrigin', () => {
  it.each(ACCEPTED_PUBLIC)('accepts %j as %s', (raw, origin) => {
    expect(parsePublicApiOrigin(raw)).toBe(origin);
  });

  it.each(REJECTED_PUBLIC)('refuses %j, naming the rule', (raw, rule) => {
    expect(() => parsePublicApiOrigin(raw)).toThrow(TypeError);
    expect(() => parsePublicApiOrigin(raw)).toThrow(rule);
  });
});

describe('resolveApiOrigin', () => {
  it('prefers selfBaseUrl, validated as loopback', () => {
    expect(resolveApiOrigin({ baseUrl: 'https://api.example.com', selfBaseUrl: 'http://127.0.0.1:3000/' })).toBe(
      'http://127.0.0.1:3000',
    );
    expect(() =>
      resolveApiOrigin({ baseUrl: 'https://api.example.com', selfBaseUrl: 'http://localhost:3000' }),
    ).toThrow(/selfBaseUrl is refused/);
  });

  it('uses baseUrl as a public https origin otherwise', () => {
    expect(resolveApiOrigin({ baseUrl: 'https://api.example.com/' })).toBe('https://api.example.com');
    expect(() => resolveApiOrigin({ baseUrl: 'http://127.0.0.1:3000' })).toThrow(/baseUrl is refused/);
  });

  it('an empty selfBaseUrl is a refused value, not an absent one', () => {
    expect(() => resolveApiOrigin({ baseUrl: 'https://api.example.com', selfBaseUrl: '' })).toThrow(TypeError);
  });

  it('throws when neither is given', () => {
    expect(() => resolveApiOrigin({})).toThrow(/origin is missing/);
  });
});
