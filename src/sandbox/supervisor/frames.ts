/**
 * The frames of the supervisor protocol (see `supervisor.py`, which documents every type):
 * a 1-byte type, a 32-bit channel and a 32-bit payload length, big-endian, then the payload.
 */
export const HEADER_BYTES = 9;
/** Payload bytes per frame either side sends. */
export const MAX_FRAME_BYTES = 64 * 1024;
/** The supervisor refuses anything longer (a frame is never that long unless the stream is corrupt). */
const MAX_ACCEPTED_BYTES = 4 * MAX_FRAME_BYTES;

/** Host to supervisor. */
export const START = 0x53; // S
export const STDIN = 0x49; // I
export const STDIN_END = 0x45; // E
export const KILL = 0x4b; // K
export const OUTPUT_CREDIT = 0x43; // C
/** Supervisor to host. */
export const READY = 0x52; // R
export const STARTED = 0x50; // P
export const STDOUT = 0x4f; // O
export const STDERR = 0x58; // X
export const STDIN_CREDIT = 0x57; // W
export const EXIT = 0x51; // Q

/**
 * Connections to the supervisor's proxy listener (protocol 2), on channels the supervisor numbers
 * from `TUNNEL_CHANNELS` up. Either way: data, credit, half-close and close.
 */
export const TUNNEL_OPEN = 0x4e; // N, supervisor to host
export const TUNNEL_DATA = 0x44; // D
export const TUNNEL_CREDIT = 0x41; // A
export const TUNNEL_HALF = 0x48; // H
export const TUNNEL_CLOSE = 0x5a; // Z
export const TUNNEL_CHANNELS = 0x8000_0000;
/** Bytes either side of a tunnel may send before the other grants more (the supervisor's `TUNNEL_WINDOW`). */
export const TUNNEL_WINDOW_BYTES = 256 * 1024;

/** Output bytes the supervisor may send per channel before the host grants more (its `OUTPUT_WINDOW`). */
export const OUTPUT_WINDOW_BYTES = 256 * 1024;
/** Stdin bytes the host may send per channel before the supervisor has written them on. */
export const STDIN_WINDOW_BYTES = 256 * 1024;

export interface Frame {
  type: number;
  channel: number;
  payload: Buffer;
}

/** One frame, header and payload in one buffer. */
export function encodeFrame(type: number, channel: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const frame = Buffer.allocUnsafe(HEADER_BYTES + payload.length);
  frame.writeUInt8(type, 0);
  frame.writeUInt32BE(channel, 1);
  frame.writeUInt32BE(payload.length, 5);
  payload.copy(frame, HEADER_BYTES);
  return frame;
}

/**
 * The header of a frame carrying `payloadLength` bytes, for a payload written after it as it is
 * (no copy of a large payload into a frame buffer).
 */
export function encodeHeader(type: number, channel: number, payloadLength: number): Buffer {
  const header = Buffer.allocUnsafe(HEADER_BYTES);
  header.writeUInt8(type, 0);
  header.writeUInt32BE(channel, 1);
  header.writeUInt32BE(payloadLength, 5);
  return header;
}

/** A 32-bit credit grant. */
export function encodeCredit(type: number, channel: number, bytes: number): Buffer {
  const payload = Buffer.allocUnsafe(4);
  payload.writeUInt32BE(bytes, 0);
  return encodeFrame(type, channel, payload);
}

/**
 * Splits a byte stream into frames, however the chunks fall.
 *
 * @example
 * const decoder = new FrameDecoder();
 * socket.on('data', (chunk) => { for (const frame of decoder.push(chunk)) handle(frame); });
 */
export class FrameDecoder {
  private pending: Buffer = Buffer.alloc(0);

  /** The frames completed by `chunk`; throws on a frame longer than the protocol allows. */
  push(chunk: Buffer): Frame[] {
    let data = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    const frames: Frame[] = [];
    while (data.length >= HEADER_BYTES) {
      const length = data.readUInt32BE(5);
      if (length > MAX_ACCEPTED_BYTES) throw new Error(`A supervisor frame of ${length} bytes is longer than allowed.`);
      if (data.length < HEADER_BYTES + length) break;
      frames.push({
        type: data.readUInt8(0),
        channel: data.readUInt32BE(1),
        payload: Buffer.from(data.subarray(HEADER_BYTES, HEADER_BYTES + length)),
      });
      data = data.subarray(HEADER_BYTES + length);
    }
    this.pending = Buffer.from(data);
    return frames;
  }
}
