import { describe, expect, it } from 'vitest';
import { attachmentDisposition, wellFormedFilename } from './content-disposition.js';

/** The `filename*` value decoded back, as an RFC 6266 user agent reads it. */
function extendedName(header: string): string {
  const match = /; filename\*=UTF-8''([^;\s]*)$/.exec(header);
  if (!match?.[1]) throw new Error(`no filename* in ${header}`);
  return decodeURIComponent(match[1]);
}

function fallbackName(header: string): string {
  const match = /^attachment; filename="([^"\\]*)"; /.exec(header);
  if (!match?.[1]) throw new Error(`no quoted filename in ${header}`);
  return match[1];
}

describe('attachmentDisposition', () => {
  it('gives a plain ASCII name both ways', () => {
    expect(attachmentDisposition('report.pdf')).toBe(`attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`);
  });

  it('keeps a non-ASCII name exactly in filename* and approximates it in ASCII', () => {
    const header = attachmentDisposition('Résumé – final.pdf');
    expect(header).toBe(
      `attachment; filename="Resume _ final.pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%E2%80%93%20final.pdf`,
    );
    expect(extendedName(header)).toBe('Résumé – final.pdf');
  });

  it('cannot be broken out of by quotes or backslashes', () => {
    const header = attachmentDisposition('a"; filename="evil.html\\".txt');
    expect(fallbackName(header)).toBe('a_; filename=_evil.html__.txt');
    expect(extendedName(header)).toBe('a"; filename="evil.html\\".txt');
    expect(header.match(/"/g)).toHaveLength(2);
  });

  it('never lets CR, LF or other control characters through', () => {
    const header = attachmentDisposition('a\r\nSet-Cookie: x=1\u0000\u007f\u0085.txt');
    expect(header).not.toMatch(/\p{Cc}/u);
    // CR LF is one character to a reader (one grapheme), so one `_`.
    expect(fallbackName(header)).toBe('a_Set-Cookie: x=1___.txt');
    expect(extendedName(header)).toBe('a\r\nSet-Cookie: x=1\u0000\u007f\u0085.txt');
  });

  it('keeps % out of the fallback and encodes it in filename*', () => {
    const header = attachmentDisposition('100% done %41.txt');
    expect(fallbackName(header)).toBe('100_ done _41.txt');
    expect(header).toContain("filename*=UTF-8''100%25%20done%20%2541.txt");
    expect(extendedName(header)).toBe('100% done %41.txt');
  });

  it('percent-encodes the characters RFC 5987 excludes from attr-char', () => {
    const header = attachmentDisposition("it's (1)*;,.txt");
    expect(header).toContain("filename*=UTF-8''it%27s%20%281%29%2A%3B%2C.txt");
    expect(extendedName(header)).toBe("it's (1)*;,.txt");
  });

  it('keeps astral characters and replaces unpaired surrogates', () => {
    expect(extendedName(attachmentDisposition('📄 notes.md'))).toBe('📄 notes.md');
    expect(fallbackName(attachmentDisposition('📄 notes.md'))).toBe('_ notes.md');
    expect(extendedName(attachmentDisposition('a\uD800b\uDC00.txt'))).toBe('a\uFFFDb\uFFFD.txt');
  });

  it('falls back to one _ per character a reader sees, whatever its code points', () => {
    expect(fallbackName(attachmentDisposition('报告.csv'))).toBe('__.csv');
    expect(fallbackName(attachmentDisposition('👩\u200D💻 notes 👍🏽.md'))).toBe('_ notes _.md');
    expect(fallbackName(attachmentDisposition('re\u0301sume\u0301.png'))).toBe('resume.png');
    expect(extendedName(attachmentDisposition('👩\u200D💻 notes 👍🏽.md'))).toBe('👩\u200D💻 notes 👍🏽.md');
  });

  it('names an empty file name "download"', () => {
    expect(attachmentDisposition('')).toBe(`attachment; filename="download"; filename*=UTF-8''download`);
  });
});

describe('wellFormedFilename', () => {
  it('leaves well-formed names alone', () => {
    expect(wellFormedFilename('Résumé 📄.pdf')).toBe('Résumé 📄.pdf');
  });
});
