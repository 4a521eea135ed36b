import { type Duplex, PassThrough, type Readable, Writable } from 'node:stream';
import { observeStreamErrors } from '../../stream-errors.js';

/** Frame header of the Engine API's multiplexed stream: stream id, 3 zero bytes, 32-bit length. */
const HEADER_BYTES = 8;
const STDOUT = 1;
const STDERR = 2;

/**
 * Splits the daemon's multiplexed exec output (`Tty: false`) into stdout and stderr while it
 * streams. Backpressure is kept: when a consumer stops reading, the socket stops being read.
 * Frames of other streams (stdin echo never happens without a TTY) are dropped.
 */
export function demultiplex(source: Readable): { stdout: Readable; stderr: Readable } {
  const stdout = observeStreamErrors(new PassThrough());
  const stderr = observeStreamErrors(new PassThrough());
  let pending = Buffer.alloc(0);
  let target: PassThrough | undefined;
  let remaining = 0;

  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      let data = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
      pending = Buffer.alloc(0);
      const blocked = new Set<PassThrough>();
      while (data.length > 0) {
        if (remaining === 0) {
          if (data.length < HEADER_BYTES) {
            pending = Buffer.from(data);
            break;
          }
          const kind = data[0];
          remaining = data.readUInt32BE(4);
          target = kind === STDOUT ? stdout : kind === STDERR ? stderr : undefined;
          data = data.subarray(HEADER_BYTES);
          continue;
        }
        const take = Math.min(remaining, data.length);
        if (target && !target.write(data.subarray(0, take))) blocked.add(target);
        remaining -= take;
        data = data.subarray(take);
      }
      if (blocked.size === 0) return callback();
      let waiting = blocked.size;
      for (const stream of blocked) {
        stream.once('drain', () => {
          waiting -= 1;
          if (waiting === 0) callback();
        });
      }
    },
    final(callback) {
      stdout.end();
      stderr.end();
      callback();
    },
  });
  const finish = () => {
    stdout.end();
    stderr.end();
  };
  source.on('error', finish);
  source.on('close', finish);
  source.pipe(sink);
  return { stdout, stderr };
}

/**
 * The stdin side of a hijacked exec socket: ending it half-closes the connection, which the
 * daemon turns into EOF on the process's stdin while the output keeps streaming back. A write
 * after the process is gone destroys the stream (writers see `destroyed` and `close`); its error
 * is never thrown at the process.
 */
export function stdinOf(socket: Duplex): Writable {
  const stdin = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (socket.destroyed) return callback(new Error('The sandbox process is gone.'));
      socket.write(chunk, callback);
    },
    final(callback) {
      if (!socket.destroyed) socket.end();
      callback();
    },
  });
  return observeStreamErrors(stdin);
}
