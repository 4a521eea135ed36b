import { Duplex } from 'node:stream';
import {
  encodeCredit,
  encodeFrame,
  encodeHeader,
  MAX_FRAME_BYTES,
  TUNNEL_CLOSE,
  TUNNEL_CREDIT,
  TUNNEL_DATA,
  TUNNEL_HALF,
  TUNNEL_WINDOW_BYTES,
} from './frames.js';

type Callback = (error?: Error | null) => void;

/** What either side of the stream buffers before it pushes back: a window, as the supervisor grants. */
const STREAM_BUFFER_BYTES = TUNNEL_WINDOW_BYTES;

/**
 * The host's end of one connection that sandboxed code made to its supervisor's proxy listener,
 * carried over the supervisor's channel as frames (see `supervisor.py`): a Duplex whose readable
 * side is what the sandboxed client sends and whose writable side reaches it. Flow control works
 * both ways with `TUNNEL_WINDOW_BYTES` windows: bytes the host has not consumed are not credited,
 * so a client cannot make the host buffer more than a window of what it sends, and writes wait
 * for the supervisor to have written earlier ones on.
 *
 * Ending the writable side shuts the client's reading side (`H`); destroying the stream closes
 * the connection in the sandbox (`Z`). The supervisor's `H` ends the readable side, its `Z` (or
 * the supervisor going away) destroys the stream.
 */
export class TunnelStream extends Duplex {
  /** Bytes the sandboxed client sent, and bytes sent to it. */
  bytesFromSandbox = 0;
  bytesToSandbox = 0;
  /** When bytes last moved either way (`performance.now()`), to close idle connections. */
  lastActivity = performance.now();
  /** Bytes received and handed on, not yet credited back (credited when the consumer reads). */
  private owed = 0;
  private credit = TUNNEL_WINDOW_BYTES;
  private pendingWrite: { chunk: Buffer; callback: Callback } | undefined;
  private gone = false;
  private pacing: NodeJS.Timeout | undefined;
  /** Credit for received bytes is not given back before this time (`performance.now()`). */
  private creditHeldUntil = 0;
  /** Paces the bytes this connection moves either way (the workspace's bandwidth). */
  limiter: { reserve(bytes: number): number } | undefined;

  constructor(
    readonly channel: number,
    private readonly sendFrame: (frame: Buffer, payload?: Buffer) => void,
  ) {
    super({ allowHalfOpen: true, highWaterMark: STREAM_BUFFER_BYTES });
  }

  /** Data the sandboxed client sent. */
  deliver(payload: Buffer): void {
    if (this.destroyed || this.readableEnded) return;
    this.bytesFromSandbox += payload.length;
    this.lastActivity = performance.now();
    // Credit for what the client sends is given back only once the workspace's pace allows it:
    // the supervisor then stops reading the client, whose own socket pushes back.
    const wait = this.limiter?.reserve(payload.length) ?? 0;
    const wanted = this.push(payload);
    if (wait > 0) {
      this.owed += payload.length;
      this.creditHeldUntil = Math.max(this.creditHeldUntil, performance.now() + wait);
      setTimeout(() => {
        if (this.readableLength < this.readableHighWaterMark) this._read();
      }, wait).unref();
      return;
    }
    if (wanted && performance.now() >= this.creditHeldUntil) this.grant(payload.length);
    else this.owed += payload.length;
  }

  /** The sandboxed client shut its writing side. */
  deliverEnd(): void {
    if (!this.destroyed) this.push(null);
  }

  /** The supervisor wrote `bytes` of ours into the client's socket: more may be sent. */
  addCredit(bytes: number): void {
    this.credit += bytes;
    this.pump();
  }

  /** The connection is gone on the sandbox's side (or the supervisor is). */
  closedBySandbox(): void {
    this.gone = true;
    this.destroy();
  }

  override _read(): void {
    // (A millisecond's slack: a timer may fire a fraction early on this clock.)
    if (performance.now() + 1 < this.creditHeldUntil) return;
    if (this.owed > 0) {
      this.grant(this.owed);
      this.owed = 0;
    }
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: Callback): void {
    this.pendingWrite = { chunk, callback };
    this.pump();
  }

  override _final(callback: Callback): void {
    if (!this.gone) this.sendFrame(encodeFrame(TUNNEL_HALF, this.channel));
    callback();
  }

  override _destroy(error: Error | null, callback: Callback): void {
    clearTimeout(this.pacing);
    const pending = this.pendingWrite;
    this.pendingWrite = undefined;
    pending?.callback(error ?? new Error('The connection is closed.'));
    if (!this.gone) {
      this.gone = true;
      this.sendFrame(encodeFrame(TUNNEL_CLOSE, this.channel));
    }
    callback(error);
  }

  /** A data frame: its header, then the bytes themselves (written together, never copied). */
  private sendData(bytes: Buffer): void {
    this.sendFrame(encodeHeader(TUNNEL_DATA, this.channel, bytes.length), bytes);
  }

  private grant(bytes: number): void {
    if (!this.gone) this.sendFrame(encodeCredit(TUNNEL_CREDIT, this.channel, bytes));
  }

  private pump(): void {
    const pending = this.pendingWrite;
    if (!pending || this.pacing) return;
    while (pending.chunk.length > 0 && this.credit > 0) {
      const take = Math.min(pending.chunk.length, this.credit, MAX_FRAME_BYTES);
      const wait = this.limiter?.reserve(take) ?? 0;
      if (wait > 0) {
        // Sent once the workspace's pace allows (its bytes are counted now, so it goes then).
        this.pacing = setTimeout(() => {
          this.pacing = undefined;
          if (this.destroyed) return;
          this.sendData(pending.chunk.subarray(0, take));
          this.afterSend(pending, take);
          this.pump();
        }, wait);
        this.pacing.unref();
        return;
      }
      this.sendData(pending.chunk.subarray(0, take));
      this.afterSend(pending, take);
    }
    // An empty write (what ends an HTTP response, say) has nothing to wait for.
    if (pending.chunk.length === 0 && this.pendingWrite === pending) {
      this.pendingWrite = undefined;
      pending.callback();
    }
  }

  private afterSend(pending: { chunk: Buffer; callback: Callback }, sent: number): void {
    this.credit -= sent;
    this.bytesToSandbox += sent;
    this.lastActivity = performance.now();
    pending.chunk = pending.chunk.subarray(sent);
    if (pending.chunk.length === 0 && this.pendingWrite === pending) {
      this.pendingWrite = undefined;
      pending.callback();
    }
  }
}
