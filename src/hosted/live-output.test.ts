import { describe, expect, it } from 'vitest';
import { createLiveOutput, LIVE_OUTPUT_MAX_BYTES, type LiveOutput } from './live-output.js';

const serializedBytes = (value: LiveOutput) => Buffer.byteLength(JSON.stringify(value));
const shownText = (value: LiveOutput) => value.output.map((piece) => piece.text).join('');

describe('createLiveOutput', () => {
  it('merges consecutive pieces of one stream and keeps the streams in the order written', () => {
    const live = createLiveOutput();
    expect(live.snapshot()).toEqual({ output: [], omittedBytes: 0 });
    live.add('stdout', 'line-1\n');
    live.add('stdout', 'line-2\n');
    live.add('stderr', 'warning: é\n');
    live.add('stdout', '');
    live.add('stdout', 'line-3\n');
    expect(live.snapshot()).toEqual({
      output: [
        { stream: 'stdout', text: 'line-1\nline-2\n' },
        { stream: 'stderr', text: 'warning: é\n' },
        { stream: 'stdout', text: 'line-3\n' },
      ],
      omittedBytes: 0,
    });
  });

  it('stays within 8 KiB of JSON under a flood, shows the latest whole lines and counts what it left out', () => {
    const live = createLiveOutput();
    let written = 0;
    for (let line = 1; line <= 5_000; line += 1) {
      const text = `${line % 7 === 0 ? 'err' : 'out'} line ${line} "quoted" \\ \u0001\n`;
      written += Buffer.byteLength(text);
      live.add(line % 7 === 0 ? 'stderr' : 'stdout', text);
    }
    const snapshot = live.snapshot();
    expect(serializedBytes(snapshot)).toBeLessThanOrEqual(LIVE_OUTPUT_MAX_BYTES);
    // Escaped text costs more than its bytes, yet most of the budget is used.
    expect(serializedBytes(snapshot)).toBeGreaterThan(LIVE_OUTPUT_MAX_BYTES - 200);
    const shown = shownText(snapshot);
    expect(shown.startsWith('out line') || shown.startsWith('err line')).toBe(true);
    expect(shown.endsWith('line 5000 "quoted" \\ \u0001\n')).toBe(true);
    expect(snapshot.omittedBytes).toBe(written - Buffer.byteLength(shown));
    expect(snapshot.output.every((piece, index) => piece.stream !== snapshot.output[index + 1]?.stream)).toBe(true);
  });

  it('cuts one line too long to show inside it, never between the halves of a character', () => {
    const live = createLiveOutput();
    const line = `${'😀'.repeat(5_000)}\n`;
    live.add('stdout', line);
    const snapshot = live.snapshot();
    expect(serializedBytes(snapshot)).toBeLessThanOrEqual(LIVE_OUTPUT_MAX_BYTES);
    const shown = shownText(snapshot);
    expect(shown.length).toBeGreaterThan(1000);
    expect(line.endsWith(shown)).toBe(true);
    expect(shown.codePointAt(0)).toBe(0x1f600);
    expect(snapshot.omittedBytes).toBe(Buffer.byteLength(line) - Buffer.byteLength(shown));
  });

  it('takes a smaller bound', () => {
    const live = createLiveOutput(256);
    for (let line = 1; line <= 100; line += 1) live.add('stdout', `line-${line}\n`);
    const snapshot = live.snapshot();
    expect(serializedBytes(snapshot)).toBeLessThanOrEqual(256);
    expect(shownText(snapshot)).toMatch(/^line-\d+\n(?:line-\d+\n)*line-100\n$/);
  });
});
