import { PassThrough, type Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { demultiplex, stdinOf } from './exec-stream.js';

function frame(stream: number, payload: string | Buffer): Buffer {
  const body = Buffer.from(payload);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
}

async function collect(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

describe('demultiplex', () => {
  it('splits stdout and stderr frames, whatever the chunk boundaries', async () => {
    const wire = Buffer.concat([frame(1, 'out-1 '), frame(2, 'err-1'), frame(1, 'out-2'), frame(3, 'ignored')]);
    for (const size of [1, 3, 7, 8, 9, wire.length]) {
      const source = new PassThrough();
      const { stdout, stderr } = demultiplex(source);
      const texts = Promise.all([collect(stdout), collect(stderr)]);
      for (let offset = 0; offset < wire.length; offset += size) source.write(wire.subarray(offset, offset + size));
      source.end();
      expect(await texts).toEqual(['out-1 out-2', 'err-1']);
    }
  });

  it('stops reading the source while a consumer does not read, and resumes after', async () => {
    const source = new PassThrough();
    const { stdout, stderr } = demultiplex(source);
    stderr.resume();
    const big = Buffer.alloc(1024 * 1024, 0x61);
    for (let index = 0; index < 8; index += 1) source.write(frame(1, big));
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Nothing reads stdout: the source keeps what the demultiplexer has not taken.
    expect(source.readableLength + source.writableLength).toBeGreaterThan(4 * big.length);
    source.end();
    expect((await collect(stdout)).length).toBe(8 * big.length);
  });

  it('ends both outputs when the source closes mid-frame', async () => {
    const source = new PassThrough();
    const { stdout, stderr } = demultiplex(source);
    const texts = Promise.all([collect(stdout), collect(stderr)]);
    source.write(frame(1, 'complete'));
    source.write(frame(2, 'cut short').subarray(0, 12));
    source.destroy();
    expect(await texts).toEqual(['complete', 'cut ']);
  });
});

describe('stdinOf', () => {
  it('turns a write after the process is gone into a destroyed stream, not an uncaught error', async () => {
    const socket = new PassThrough();
    socket.destroy();
    const stdin = stdinOf(socket);
    const closed = new Promise((resolve) => stdin.once('close', resolve));
    stdin.write('late input');
    await closed;
    expect(stdin.destroyed).toBe(true);
    expect(stdin.errored?.message).toBe('The sandbox process is gone.');
  });
});
