import { describe, expect, it } from 'vitest';
import {
  describeAccepted,
  formatBytes,
  isAccepted,
  tooLargeMessage,
  toolLabel,
  toolProgress,
  unsupportedTypeMessage,
} from './format.js';
import { liveOutputOf, toolCallOf, toolFailureText } from './messages.js';
import { chatProblemOf, uploadProblemMessage } from './problems.js';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const MANAGED = [
  'image/png',
  'image/jpeg',
  'application/pdf',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'text/csv',
  'application/json',
];

describe('formatBytes', () => {
  it('uses bytes, then one decimal of KB and MB', () => {
    expect(formatBytes(34)).toBe('34 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1536)).toBe('1.5 KB');
    expect(formatBytes(10 * 1024 * 1024)).toBe('10.0 MB');
  });
});

describe('accepted types', () => {
  it('describes an accept list without MIME types, images folded into one word', () => {
    expect(describeAccepted(MANAGED)).toBe('images, PDF, Excel, CSV, JSON');
    expect(describeAccepted(['image/*', '.tsv', 'application/x-thing', '.odt'])).toBe('images, TSV, X-THING, ODT');
    // Extensions listed beside their types are not named twice.
    expect(describeAccepted(['text/csv', '.csv', 'text/markdown', '.md', '.markdown', DOCX, '.docx'])).toBe(
      'CSV, Markdown, Word',
    );
    expect(unsupportedTypeMessage('tool.exe', MANAGED)).toBe(
      'tool.exe: this file type is not accepted. Accepted: images, PDF, Excel, CSV, JSON.',
    );
    expect(tooLargeMessage('big.pdf', 5 * 1024 * 1024)).toBe('big.pdf is too large: files can be up to 5.0 MB.');
  });

  it('matches exact types, wildcards and extensions, and lets an untyped file through to the server', () => {
    expect(isAccepted({ name: 'a.csv', type: 'text/csv' }, MANAGED)).toBe(true);
    expect(isAccepted({ name: 'a.exe', type: 'application/x-msdownload' }, MANAGED)).toBe(false);
    expect(isAccepted({ name: 'a.webp', type: 'image/webp' }, ['image/*'])).toBe(true);
    expect(isAccepted({ name: 'A.TSV', type: 'text/plain' }, ['.tsv'])).toBe(true);
    expect(isAccepted({ name: 'a.bin', type: '' }, MANAGED)).toBe(true);
  });
});

describe('tool calls', () => {
  it('names the sandbox tools in plain words and humanizes any other tool', () => {
    expect(toolLabel('sandbox_exec')).toBe('Running code');
    expect(toolLabel('sandbox_publish_file')).toBe('Publishing a file');
    expect(toolLabel('sandbox_import_file')).toBe('Importing a file');
    expect(toolLabel('search_the-web')).toBe('Search the web');
    expect(toolLabel('__')).toBe('A tool');
  });

  it('folds the states into running, done and failed, an isError result being a failure', () => {
    expect(toolProgress({ state: 'input-streaming' })).toBe('running');
    expect(toolProgress({ state: 'input-available' })).toBe('running');
    expect(toolProgress({ state: 'output-available', output: { content: [] } })).toBe('done');
    expect(toolProgress({ state: 'output-available', output: { output: [] }, preliminary: true })).toBe('running');
    expect(toolProgress({ state: 'output-available', output: { isError: true } })).toBe('failed');
    expect(toolProgress({ state: 'output-error' })).toBe('failed');
    expect(toolProgress({ state: 'output-denied' })).toBe('failed');
    // Once its answer no longer runs (stopped in this tab), a call that never ended is stopped.
    expect(toolProgress({ state: 'input-available' }, false)).toBe('stopped');
    expect(toolProgress({ state: 'output-available', output: { output: [] }, preliminary: true }, false)).toBe(
      'stopped',
    );
    expect(toolProgress({ state: 'output-available', output: { content: [] } }, false)).toBe('done');
    expect(toolProgress({ state: 'output-error' }, false)).toBe('failed');
  });

  it('reads both tool part shapes and the failure text of an isError result', () => {
    const failed = toolCallOf({
      type: 'dynamic-tool',
      toolName: 'sandbox_read_file',
      toolCallId: 'c1',
      state: 'output-available',
      input: {},
      output: {
        isError: true,
        content: [{ type: 'text', text: '{"error":{"code":"NOT_FOUND","message":"No such file."}}' }],
      },
    });
    expect(failed?.toolName).toBe('sandbox_read_file');
    expect(failed && toolFailureText(failed)).toBe('No such file.');
    const typed = toolCallOf({
      type: 'tool-sandbox_exec',
      toolCallId: 'c2',
      state: 'output-error',
      input: {},
      errorText: 'The tool call was interrupted before it finished.',
    });
    expect(typed).toMatchObject({ toolName: 'sandbox_exec', state: 'output-error' });
    expect(typed && toolFailureText(typed)).toBe('The tool call was interrupted before it finished.');
    expect(toolCallOf({ type: 'text', text: 'hi' })).toBeUndefined();
  });

  it("shows a running command's preliminary result as its last lines, streams apart", () => {
    const running = toolCallOf({
      type: 'tool-sandbox_exec',
      toolCallId: 'c3',
      state: 'output-available',
      input: {},
      preliminary: true,
      output: {
        output: [
          { stream: 'stdout', text: 'one\ntwo\nthr' },
          { stream: 'stdout', text: 'ee\n' },
          { stream: 'stderr', text: 'warn\n' },
          { stream: 'stdout', text: 'four\nfive' },
        ],
        omittedBytes: 12,
      },
    });
    expect(running && liveOutputOf(running)).toEqual([
      { stream: 'stdout', text: 'one\ntwo\nthree\n' },
      { stream: 'stderr', text: 'warn\n' },
      { stream: 'stdout', text: 'four\nfive' },
    ]);
    expect(running && liveOutputOf(running, 3)).toEqual([
      { stream: 'stderr', text: 'warn\n' },
      { stream: 'stdout', text: 'four\nfive' },
    ]);
    // The final result, or another tool's preliminary value, is no live output.
    expect(running && liveOutputOf({ ...running, preliminary: false })).toBeUndefined();
    expect(running && liveOutputOf({ ...running, output: { progress: 1 } })).toBeUndefined();
  });
});

describe('problems', () => {
  it('rewords a refused type and keeps the detail of other refusals', () => {
    const refused = {
      code: 'UNSUPPORTED_MEDIA_TYPE',
      detail: 'Files of type text/html are not accepted (allowed: text/csv).',
    };
    expect(uploadProblemMessage('page.html', 415, refused, MANAGED)).toBe(
      'page.html: this file type is not accepted. Accepted: images, PDF, Excel, CSV, JSON.',
    );
    const large = { code: 'FILE_TOO_LARGE', detail: 'The file exceeds the limit of 10.0 MB.' };
    expect(uploadProblemMessage('big.csv', 413, large, MANAGED)).toBe(
      'big.csv: The file exceeds the limit of 10.0 MB.',
    );
    expect(uploadProblemMessage('a.csv', 502, undefined, MANAGED)).toBe('a.csv: the upload failed (502).');
  });

  it("turns the transport's error into the 503 guidance or a readable sentence, never raw JSON", () => {
    const detail = 'Managed sandboxes are not available for this agent: publish the agent first.';
    expect(chatProblemOf(new Error(JSON.stringify({ code: 'MANAGED_SANDBOX_UNAVAILABLE', detail })))).toEqual({
      kind: 'sandbox-unavailable',
      message: detail,
    });
    expect(chatProblemOf(new Error('{"code":"RATE_LIMITED","detail":"Slow down."}'))).toEqual({
      kind: 'error',
      message: 'Slow down.',
    });
    expect(chatProblemOf(new Error('<html>Bad gateway</html>')).message).toBe(
      'Something went wrong while answering. Please try again.',
    );
  });
});
