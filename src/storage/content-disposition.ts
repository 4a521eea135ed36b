/** Stands in for a missing name, so the header always carries one. */
const DEFAULT_FILENAME = 'download';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * Replaces unpaired UTF-16 surrogates with U+FFFD. They cannot be encoded as UTF-8, so without this
 * a name would fail to encode here and would change when it travels through a URL.
 *
 * @example
 * wellFormedFilename('a\uD800.txt') // 'a\uFFFD.txt'
 */
export function wellFormedFilename(filename: string): string {
  return filename.replace(LONE_SURROGATE, '\uFFFD');
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * The `filename` fallback for user agents without RFC 6266 `filename*` support: printable ASCII
 * only. Accents are dropped rather than replaced (`é` → `e`); any other character that is not
 * ASCII becomes one `_` per character as a reader sees it (`报告` → `__`, and an emoji sequence such
 * as 👩‍💻 → `_`). Quotes, backslashes and control characters could break out of the quoted string
 * and become `_`, as does `%`, which some user agents percent-decode in this parameter.
 */
function asciiFallback(filename: string): string {
  const fallback = Array.from(graphemes.segment(filename), ({ segment }) => {
    const base = segment.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
    if (base === '') return '';
    return /^[\x20-\x7e]+$/.test(base) ? base.replace(/["\\%]/g, '_') : '_';
  }).join('');
  return fallback === '' ? DEFAULT_FILENAME : fallback;
}

/** RFC 5987 `value-chars`: everything outside `attr-char` percent-encoded as UTF-8. */
function extendedValue(filename: string): string {
  return encodeURIComponent(filename).replace(
    /['()*]/g,
    (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * A `Content-Disposition` header that makes a browser download rather than display the response,
 * under the given (user-supplied, untrusted) file name. Both the local download route and S3
 * presigned URLs use it, so a file arrives under the same name whatever the storage.
 *
 * @example
 * attachmentDisposition('Résumé – final.pdf')
 * // `attachment; filename="Resume _ final.pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%E2%80%93%20final.pdf`
 */
export function attachmentDisposition(filename: string): string {
  const name = wellFormedFilename(filename) || DEFAULT_FILENAME;
  return `attachment; filename="${asciiFallback(name)}"; filename*=UTF-8''${extendedValue(name)}`;
}
