import { describe, expect, it } from 'vitest';
import { formatHostRule, parseHostRule, parseRequestedHost, ruleNamesHost } from './host-rules.js';

describe('parseHostRule', () => {
  it.each([
    ['api.example.com', { kind: 'name', host: 'api.example.com' }],
    ['API.Example.COM.', { kind: 'name', host: 'api.example.com' }],
    ['files.example.net:8443', { kind: 'name', host: 'files.example.net', port: 8443 }],
    ['*.example.org', { kind: 'wildcard', domain: 'example.org' }],
    ['*.Example.org:443', { kind: 'wildcard', domain: 'example.org', port: 443 }],
    ['bücher.example', { kind: 'name', host: 'xn--bcher-kva.example' }],
    ['10.1.2.3:8443', { kind: 'ip', host: '10.1.2.3', port: 8443 }],
    ['10.1.2.3', { kind: 'ip', host: '10.1.2.3' }],
    ['[FD00:0::1]:8443', { kind: 'ip', host: 'fd00::1', port: 8443 }],
    ['fd00::1', { kind: 'ip', host: 'fd00::1' }],
    ['localhost', { kind: 'name', host: 'localhost' }],
  ])('normalises %s', (entry, rule) => {
    expect(parseHostRule(entry)).toEqual(rule);
  });

  it.each([
    ['', 'empty'],
    [' api.example.com', 'leading space'],
    ['api.example.com ', 'trailing space'],
    ['api example.com', 'inner space'],
    ['https://api.example.com', 'a URL'],
    ['api.example.com/path', 'a path'],
    ['user@api.example.com', 'credentials'],
    ['api.example.com:0', 'port 0'],
    ['api.example.com:65536', 'port past 65535'],
    ['api.example.com:', 'empty port'],
    ['api.example.com:80:81', 'two ports'],
    ['*', 'a bare star'],
    ['*.com', 'a wildcard over one label'],
    ['*example.com', 'a star without a dot'],
    ['a.*.example.com', 'a star inside'],
    ['-bad.example.com', 'a label starting with a hyphen'],
    ['bad_.example.com', 'an underscore'],
    [`${'a'.repeat(64)}.example.com`, 'a label of 64 bytes'],
    [`${'a.'.repeat(130)}com`, 'a name over 253 bytes'],
    ['127.1', 'short IPv4'],
    ['0x7f.0.0.1', 'hex IPv4'],
    ['2130706433', 'integer IPv4'],
    ['0177.0.0.1', 'octal IPv4'],
    ['[fe80::1%eth0]', 'a zone'],
    ['[not-v6]', 'brackets around a name'],
  ])('refuses %j (%s)', (entry) => {
    expect(parseHostRule(entry)).toHaveProperty('error');
  });

  it('formats every rule back to an entry it parses to again', () => {
    for (const entry of ['a.example.com', '*.example.org:8443', '10.1.2.3:1', '[fd00::1]:8443', 'fd00::1']) {
      const rule = parseHostRule(entry);
      if ('error' in rule) throw new Error(rule.error);
      expect(parseHostRule(formatHostRule(rule))).toEqual(rule);
    }
  });
});

describe('parseRequestedHost', () => {
  it('normalises names and canonical literals', () => {
    expect(parseRequestedHost('PyPI.org.', 443)).toEqual({ kind: 'name', host: 'pypi.org', port: 443 });
    expect(parseRequestedHost('[::FFFF:7F00:1]', 80)).toEqual({ kind: 'ip', host: '::ffff:7f00:1', port: 80 });
    expect(parseRequestedHost('10.0.0.1', 80)).toEqual({ kind: 'ip', host: '10.0.0.1', port: 80 });
  });

  it.each(['2130706433', '0x7f000001', '0177.0.0.1', '127.1', '0x7f.1', 'a b', '', 'a..b', '[fe80::1%25eth0]', '::1'])(
    'takes %j for neither a name nor a canonical literal',
    (host) => {
      // A bare IPv6 literal is only a requested host in brackets (as CONNECT and URLs spell it).
      const requested = parseRequestedHost(host, 80);
      if (host === '::1') expect(requested).toEqual({ kind: 'ip', host: '::1', port: 80 });
      else expect(requested).toBeUndefined();
    },
  );
});

describe('ruleNamesHost', () => {
  const rule = (entry: string) => {
    const parsed = parseHostRule(entry);
    if ('error' in parsed) throw new Error(parsed.error);
    return parsed;
  };
  const host = (name: string) => parseRequestedHost(name, 443) as NonNullable<ReturnType<typeof parseRequestedHost>>;

  it('matches a name exactly, never a sub- or superdomain', () => {
    expect(ruleNamesHost(rule('example.com'), host('example.com'))).toBe(true);
    expect(ruleNamesHost(rule('example.com'), host('api.example.com'))).toBe(false);
    expect(ruleNamesHost(rule('api.example.com'), host('example.com'))).toBe(false);
    expect(ruleNamesHost(rule('example.com'), host('example.com.evil.net'))).toBe(false);
  });

  it('matches a wildcard at any depth, never the bare domain or a lookalike', () => {
    expect(ruleNamesHost(rule('*.example.org'), host('a.example.org'))).toBe(true);
    expect(ruleNamesHost(rule('*.example.org'), host('a.b.example.org'))).toBe(true);
    expect(ruleNamesHost(rule('*.example.org'), host('example.org'))).toBe(false);
    expect(ruleNamesHost(rule('*.example.org'), host('badexample.org'))).toBe(false);
  });

  it('matches an IP rule only by its own literal, never by a name', () => {
    expect(ruleNamesHost(rule('10.1.2.3'), host('10.1.2.3'))).toBe(true);
    expect(ruleNamesHost(rule('[fd00::1]'), host('[fd00:0:0::1]'))).toBe(true);
    expect(ruleNamesHost(rule('10.1.2.3'), host('mirror.internal.example'))).toBe(false);
    expect(ruleNamesHost(rule('mirror.example'), host('10.1.2.3'))).toBe(false);
  });
});
