import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { OutputCapture } from './output-capture.js';

describe('OutputCapture', () => {
  it('keeps exactly the first maxBytes of an endless stream and reads it to the end', async () => {
    const capture = new OutputCapture(100_000);
    const stream = new PassThrough();
    capture.attach(stream);
    const chunk = Buffer.alloc(64 * 1024, 'y');
    let written = 0;
    for (let index = 0; index < 1_600; index += 1) {
      stream.write(chunk);
      written += chunk.length;
    }
    stream.end();
    await new Promise((resolve) => stream.on('end', resolve));
    expect(written).toBe(100 * 1024 * 1024);
    expect(stream.readableEnded).toBe(true);
    expect(capture.truncated).toBe(true);
    expect(capture.text()).toBe('y'.repeat(100_000));
  });

  it('keeps a short stream whole and says it was not truncated', () => {
    const capture = new OutputCapture(10);
    capture.append(Buffer.from('hello'));
    expect(capture.truncated).toBe(false);
    expect(capture.text()).toBe('hello');
  });

  it('replaces a character cut at the cap instead of failing', () => {
    const capture = new OutputCapture(2);
    capture.append(Buffer.from('é!'));
    expect(capture.text()).toBe('é');
    const cut = new OutputCapture(1);
    cut.append(Buffer.from('é'));
    expect(cut.text()).toBe('\uFFFD');
  });
});
