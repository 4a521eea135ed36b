import { describe, expect, it } from 'vitest';
import { sanitizeFilename } from './filename.js';

const byteLength = (text: string) => Buffer.byteLength(text, 'utf8');

describe('sanitizeFilename', () => {
  it.each([
    ['report.pdf', 'report.pdf'],
    ['../../etc/passwd', 'passwd'],
    ['C:\\x\\y.txt', 'y.txt'],
    ['/var/tmp/', 'file'],
    ['evil\r\nSet-Cookie: a=b.txt', 'evilSet-Cookie a=b.txt'],
    ['nul\u0000byte.txt', 'nulbyte.txt'],
    ['tab\there.txt', 'tabhere.txt'],
    ['c1\u0085\u009fcontrol.txt', 'c1control.txt'],
    ['del\u007f.txt', 'del.txt'],
    ['invoice\u202Efdp.exe', 'invoicefdp.exe'],
    ['\u2066iso\u2069late\u200Fmark\u061C.txt', 'isolatemark.txt'],
    ['zero\u200Bwidth\uFEFF.txt', 'zerowidth.txt'],
    ['what?<is>"this"|*:.txt', 'whatisthis.txt'],
    ['  many    spaces\u00A0\u3000here  .txt', 'many spaces here .txt'],
    ['...hidden...', 'hidden'],
    ['. .', 'file'],
    ['.', 'file'],
    ['..', 'file'],
    ['', 'file'],
    ['\u202E', 'file'],
  ])('%j → %j', (input, expected) => {
    expect(sanitizeFilename(input)).toBe(expected);
  });

  it('normalises to NFC and keeps emoji whole', () => {
    expect(sanitizeFilename('cafe\u0301.txt')).toBe('caf\u00e9.txt');
    expect(sanitizeFilename('party 🎉 👍🏽.md')).toBe('party 🎉 👍🏽.md');
  });

  it.each([
    ['👩\u200D💻 notes.md'],
    ['👨\u200D👩\u200D👧\u200D👦 family.png'],
    ['🏳\uFE0F\u200D🌈 pride.png'],
    ['résumé.png'],
    ['报告.csv'],
  ])('keeps %j exactly (emoji joined by zero-width joiners included)', (name) => {
    expect(sanitizeFilename(name)).toBe(name);
  });

  it.each([
    ['a\u200Db.txt', 'ab.txt'],
    ['\u200D👩.txt', '👩.txt'],
    ['👩\u200D\u200Db.txt', '👩b.txt'],
    ['x\u200D\u0301.txt', 'x\u0301.txt'],
  ])('drops a zero-width joiner that joins no emoji: %j → %j', (input, expected) => {
    expect(sanitizeFilename(input)).toBe(expected);
  });

  it('uses the fallback when nothing is left, and never returns . or ..', () => {
    expect(sanitizeFilename('...', 'upload')).toBe('upload');
    expect(sanitizeFilename('..', '..')).toBe('file');
  });

  it('caps overlong names at 200 UTF-8 bytes and keeps the extension', () => {
    const capped = sanitizeFilename(`${'a'.repeat(300)}.xlsx`);
    expect(byteLength(capped)).toBe(200);
    expect(capped.endsWith('.xlsx')).toBe(true);

    const multiByte = sanitizeFilename(`${'日本'.repeat(100)}.pdf`);
    expect(byteLength(multiByte)).toBeLessThanOrEqual(200);
    expect(multiByte).toMatch(/^(日本)+日?\.pdf$/);

    const emoji = sanitizeFilename(`${'👍🏽'.repeat(40)}.png`);
    expect(byteLength(emoji)).toBeLessThanOrEqual(200);
    expect(emoji).toMatch(/^(👍🏽)+\.png$/u);
  });

  it('truncates a name whose extension is too long to keep', () => {
    const capped = sanitizeFilename(`name.${'e'.repeat(300)}`);
    expect(byteLength(capped)).toBe(200);
    expect(capped.startsWith('name.eee')).toBe(true);
  });
});
