import { describe, expect, it } from 'vitest';
import { HEADER_BYTES, TUNNEL_CLOSE, TUNNEL_CREDIT, TUNNEL_DATA, TUNNEL_HALF, TUNNEL_WINDOW_BYTES } from './frames.js';
import { TunnelStream } from './tunnel-stream.js';

interface Sent {
  type: number;
  bytes: number;
  credit?: number;
}

/** A tunnel whose frames are recorded as the supervisor would receive them. */
function tunnel(): { stream: TunnelStream; sent: Sent[] } {
  const sent: Sent[] = [];
  const stream = new TunnelStream(0x8000_0001, (frame, payload) => {
    const type = frame.readUInt8(0);
    const length = frame.readUInt32BE(5);
    sent.push({
      type,
      bytes: payload ? payload.length : length,
      ...(type === TUNNEL_CREDIT ? { credit: frame.readUInt32BE(HEADER_BYTES) } : {}),
    });
  });
  return { stream, sent };
}

const write = (stream: TunnelStream, chunk: Buffer) =>
  new Promise<void>((resolve, reject) => stream.write(chunk, (error) => (error ? reject(error) : resolve())));

describe('TunnelStream', () => {
  it('sends at most a window before the supervisor grants more, then the rest', async () => {
    const { stream, sent } = tunnel();
    let written = false;
    const writing = write(stream, Buffer.alloc(TUNNEL_WINDOW_BYTES + 1000)).then(() => {
      written = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent.reduce((sum, frame) => sum + frame.bytes, 0)).toBe(TUNNEL_WINDOW_BYTES);
    expect(written).toBe(false);
    stream.addCredit(1000);
    await writing;
    expect(sent.reduce((sum, frame) => sum + frame.bytes, 0)).toBe(TUNNEL_WINDOW_BYTES + 1000);
    expect(sent.every((frame) => frame.type === TUNNEL_DATA && frame.bytes <= 64 * 1024)).toBe(true);
  });

  it('completes an empty write at once (what ends an HTTP response)', async () => {
    const { stream, sent } = tunnel();
    await write(stream, Buffer.alloc(0));
    expect(sent).toEqual([]);
  });

  it('credits received bytes only as they are read', async () => {
    const { stream, sent } = tunnel();
    stream.pause();
    // Beyond the readable buffer's mark, nothing more is credited until the consumer reads.
    stream.deliver(Buffer.alloc(10_000));
    stream.deliver(Buffer.alloc(TUNNEL_WINDOW_BYTES));
    stream.deliver(Buffer.alloc(20_000));
    const credited = () =>
      sent.filter((frame) => frame.type === TUNNEL_CREDIT).reduce((sum, frame) => sum + (frame.credit ?? 0), 0);
    expect(credited()).toBe(10_000);
    stream.read();
    await new Promise((resolve) => setImmediate(resolve));
    expect(credited()).toBe(TUNNEL_WINDOW_BYTES + 30_000);
    expect(stream.bytesFromSandbox).toBe(TUNNEL_WINDOW_BYTES + 30_000);
  });

  it('half-closes with H, closes with Z, and a Z from the sandbox ends it without answering', async () => {
    const { stream, sent } = tunnel();
    stream.end();
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent.map((frame) => frame.type)).toEqual([TUNNEL_HALF]);
    stream.destroy();
    expect(sent.map((frame) => frame.type)).toEqual([TUNNEL_HALF, TUNNEL_CLOSE]);
    const other = tunnel();
    other.stream.closedBySandbox();
    expect(other.sent).toEqual([]);
    expect(other.stream.destroyed).toBe(true);
  });

  it('paces what it sends by its limiter', async () => {
    const { stream, sent } = tunnel();
    const delays = [0, 30];
    stream.limiter = { reserve: () => delays.shift() ?? 0 };
    const started = performance.now();
    await write(stream, Buffer.alloc(100 * 1024));
    expect(sent.map((frame) => frame.bytes)).toEqual([64 * 1024, 36 * 1024]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
  });
});
