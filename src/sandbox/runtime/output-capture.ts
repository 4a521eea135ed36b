import type { Readable } from 'node:stream';

/**
 * Keeps the first `maxBytes` of a stream and drops the rest as it arrives, while still reading
 * everything: a command that writes without end (`yes`) never blocks on a full pipe, and memory
 * stays at `maxBytes` however much it writes.
 *
 * @example
 * const stdout = new OutputCapture(64 * 1024);
 * stdout.attach(child.stdout);
 * // … after the process closed:
 * stdout.text(); stdout.truncated;
 */
export class OutputCapture {
  #chunks: Buffer[] = [];
  #length = 0;
  #truncated = false;

  constructor(readonly maxBytes: number) {}

  /** Reads `stream` in flowing mode until it ends. */
  attach(stream: Readable): void {
    stream.on('data', (chunk: Buffer) => this.append(chunk));
  }

  append(chunk: Buffer): void {
    const room = this.maxBytes - this.#length;
    if (chunk.length > room) this.#truncated = true;
    if (room <= 0) return;
    // Copy a partial chunk: a subarray would keep the whole (possibly 64 KiB) buffer alive.
    const kept = chunk.length > room ? Buffer.from(chunk.subarray(0, room)) : chunk;
    this.#chunks.push(kept);
    this.#length += kept.length;
  }

  /** Whether bytes were dropped. */
  get truncated(): boolean {
    return this.#truncated;
  }

  /** The kept bytes as UTF-8; invalid sequences (a character cut at the cap, say) become U+FFFD. */
  text(): string {
    return Buffer.concat(this.#chunks, this.#length).toString('utf8');
  }
}
