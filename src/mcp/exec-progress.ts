import type { OutputStreamName } from '../sandbox/backend.js';
import type { ToolOutputFilter } from '../sandbox/output-filter.js';
import { prefixWithinEscapedBytes } from './json-text-cost.js';
import { cutOutsideSpans, HOLD_BACK_BYTES, PendingOutput } from './pending-output.js';

/** The `_meta` key of a progress notification naming the stream its output came from. */
export const OUTPUT_STREAM_META_KEY = 'mordn/stream';

/** At most one notification every 250 ms: 4 a second. */
export const PROGRESS_INTERVAL_MS = 250;

/** The most the progress of one call may take on the wire, whatever the response budget. */
export const MAX_PROGRESS_BYTES = 64 * 1024;

/** The message of the last notification, once live output has used its share of the response. */
export const LIVE_OUTPUT_STOPPED = '\n…[live output stops here: the command goes on and its result follows]';

/** What surrounds each JSON-RPC message in the event stream, in both eras: `event: message\ndata: …\n\n`. */
const EVENT_FRAMING_BYTES = Buffer.byteLength('event: message\ndata: \n\n');

/** Tries to fit the last piece: a cut measured before redaction is checked after it. */
const MAX_FIT_ATTEMPTS = 3;

export type ProgressToken = string | number;

/** A `notifications/progress` carrying new output of one stream (`_meta` names which). */
export interface ProgressNotification {
  method: 'notifications/progress';
  params: {
    progressToken: ProgressToken;
    progress: number;
    message: string;
    _meta: { [OUTPUT_STREAM_META_KEY]: OutputStreamName };
  };
}

/**
 * The most bytes progress may take on the wire for a call whose result may take `resultBudget`:
 * an eighth of it, and never more than 64 KiB.
 */
export function progressBudget(resultBudget: number): number {
  return Math.min(MAX_PROGRESS_BYTES, Math.floor(resultBudget / 8));
}

/** Bytes one notification takes in the response: its JSON-RPC message serialized, and its event framing. */
export function progressFrameBytes(notification: ProgressNotification): number {
  return EVENT_FRAMING_BYTES + Buffer.byteLength(JSON.stringify({ jsonrpc: '2.0', ...notification }));
}

/** The progress token a request's params carry (`_meta.progressToken`, a string or a number), if any. */
export function progressTokenOf(params: unknown): ProgressToken | undefined {
  const meta = (params as { _meta?: { progressToken?: unknown } } | null | undefined)?._meta;
  const token = typeof meta === 'object' && meta !== null ? meta.progressToken : undefined;
  return typeof token === 'string' || (typeof token === 'number' && Number.isFinite(token)) ? token : undefined;
}

export interface ExecProgressOptions {
  progressToken: ProgressToken;
  /** The most bytes all notifications together may take on the wire (see `progressBudget`). */
  maxBytes: number;
  /** The redaction every result gets (`createToolOutputFilter`). */
  filter: ToolOutputFilter;
  /** Sends one notification on the call's response. */
  send: (notification: ProgressNotification) => Promise<void>;
  /** Aborting stops live output at once (the command is being killed). */
  signal?: AbortSignal;
}

/**
 * Live output of one `sandbox_exec` call as `notifications/progress`. Feed it the command's output
 * (`onOutput`, an `ExecOptions.onOutput`) and call `finish` once the command ended, before the
 * result is built: it sends what is left, and `usedBytes` then says what the result may no longer
 * take.
 *
 * Each notification echoes the token and carries in `message` the new output of one stream (named
 * in `_meta["mordn/stream"]`), decoded as UTF-8 per stream and redacted by the result's filter; the
 * messages of a stream put together are its output (redacted). `progress` counts the bytes of
 * output carried so far (exact for UTF-8 output) and grows with every notification; there is no
 * total. Pacing: new output goes out at once when the last notification is 250 ms old, else when
 * it is; at most 4 notifications a second; none while nothing is new. Pieces end at line ends
 * (see `PendingOutput.pieceEnd`); a piece is cut only between two redacted spans, never inside one.
 * Past `maxBytes`, nothing more, after one last notification (`LIVE_OUTPUT_STOPPED`) that fits.
 *
 * @example
 * const progress = new ExecProgress({ progressToken, maxBytes: progressBudget(budget), filter, send });
 * const result = await backend.exec(id, { ...options, onOutput: progress.onOutput });
 * await progress.finish();
 * boundedToolResult(result, { maxBytes: budget - progress.usedBytes, filter });
 */
export class ExecProgress {
  readonly #options: ExecProgressOptions;
  readonly #streams: Record<OutputStreamName, PendingOutput> = {
    stdout: new PendingOutput(),
    stderr: new PendingOutput(),
  };
  /** Bytes of the closing notification, kept free until it is sent. */
  readonly #reserve: number;
  #usedBytes = 0;
  #progress = 0;
  #received = 0;
  #lastSentAt = Number.NEGATIVE_INFINITY;
  #lastStream: OutputStreamName = 'stderr';
  #timer: NodeJS.Timeout | undefined;
  #live: boolean;
  #ended = false;
  /** Set once the output can no longer be carried: the stream the closing notification will name. */
  #closing: OutputStreamName | undefined;
  readonly #onAbort = () => this.cancel();

  constructor(options: ExecProgressOptions) {
    if (!Number.isSafeInteger(options.maxBytes) || options.maxBytes < 0) {
      throw new TypeError('maxBytes must be a non-negative integer.');
    }
    this.#options = options;
    this.#reserve = progressFrameBytes(this.#notification('stdout', Number.MAX_SAFE_INTEGER, LIVE_OUTPUT_STOPPED));
    // When not even the closing notification fits, there is no live output at all.
    this.#live = this.#reserve <= options.maxBytes;
    options.signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** Bytes the notifications sent so far took on the wire (framing included). */
  get usedBytes(): number {
    return this.#usedBytes;
  }

  /** Takes a chunk of output as the command writes it (`ExecOptions.onOutput`). */
  readonly onOutput = (stream: OutputStreamName, chunk: Buffer): void => {
    this.#received += chunk.length;
    if (!this.#live || this.#ended || this.#closing) return;
    const { stdout, stderr } = this.#streams;
    this.#streams[stream].append(chunk, this.#room() - stdout.bytes - stderr.bytes);
    this.#schedule();
  };

  /** The command ended: sends what is left, paced like the rest, and resolves once nothing more will go. */
  async finish(): Promise<void> {
    this.#ended = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const stream of Object.values(this.#streams)) stream.end();
    while (this.#live && this.#hasPending()) {
      const wait = this.#lastSentAt + PROGRESS_INTERVAL_MS - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      if (!this.#live || !this.#flush()) break;
    }
    this.cancel();
  }

  /** Stops at once: nothing more is sent. */
  cancel(): void {
    this.#live = false;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#options.signal?.removeEventListener('abort', this.#onAbort);
  }

  #room(): number {
    return this.#options.maxBytes - this.#reserve - this.#usedBytes;
  }

  #hasPending(): boolean {
    return (
      this.#closing !== undefined || Object.values(this.#streams).some((stream) => stream.text !== '' || stream.dropped)
    );
  }

  #schedule(): void {
    if (this.#timer !== undefined || !this.#live || this.#ended) return;
    const wait = Math.max(0, this.#lastSentAt + PROGRESS_INTERVAL_MS - performance.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#flush() && this.#hasPending()) this.#schedule();
    }, wait);
  }

  /** Sends one notification if a stream has output ready (the one not served last first); says whether it did. */
  #flush(): boolean {
    if (this.#closing) {
      this.#close(this.#closing);
      return true;
    }
    const order: OutputStreamName[] = this.#lastStream === 'stdout' ? ['stderr', 'stdout'] : ['stdout', 'stderr'];
    for (const name of order) {
      const stream = this.#streams[name];
      if (stream.text === '' && stream.dropped) {
        this.#close(name);
        return true;
      }
      const end = this.#safeEnd(stream);
      if (end === 0) continue;
      this.#sendPiece(name, stream, end);
      return true;
    }
    return false;
  }

  /** Where the stream's next piece ends, moved back so that no redacted span is split (0: none yet). */
  #safeEnd(stream: PendingOutput): number {
    const end = stream.pieceEnd(this.#ended);
    if (end === 0 || end === stream.text.length) return end;
    // A secret no longer than the hold-back that crosses the cut ends within it.
    const seen = stream.text.slice(0, end + HOLD_BACK_BYTES);
    return cutOutsideSpans(seen, end, this.#options.filter.spans(seen));
  }

  /**
   * Sends the stream's text up to `end`, or as much of it as still fits: then the closing
   * notification is next (paced like the rest), or now when nothing fits.
   */
  #sendPiece(name: OutputStreamName, stream: PendingOutput, end: number): void {
    const room = this.#room();
    const piece = stream.text.slice(0, end);
    const notificationUpTo = (cut: number, message: string) =>
      this.#notification(name, this.#progress + Math.max(1, stream.carried(cut)), message);
    const whole = notificationUpTo(end, this.#options.filter(piece));
    if (progressFrameBytes(whole) <= room) {
      this.#send(name, whole, stream, end);
      return;
    }
    const spans = this.#options.filter.spans(piece);
    let limit = room - progressFrameBytes(notificationUpTo(end, ''));
    for (let attempt = 0; attempt < MAX_FIT_ATTEMPTS && limit > 0; attempt += 1) {
      const cut = cutOutsideSpans(piece, prefixWithinEscapedBytes(piece, limit).length, spans);
      if (cut === 0) break;
      const notification = notificationUpTo(cut, this.#options.filter(piece.slice(0, cut)));
      const overshoot = progressFrameBytes(notification) - room;
      if (overshoot <= 0) {
        this.#send(name, notification, stream, cut);
        this.#closing = name;
        return;
      }
      limit -= overshoot;
    }
    this.#close(name);
  }

  #send(name: OutputStreamName, notification: ProgressNotification, stream: PendingOutput, end: number): void {
    stream.take(end);
    this.#progress = notification.params.progress;
    this.#transmit(name, notification);
  }

  /** The closing notification: there is output live output will not carry. Nothing is sent after it. */
  #close(name: OutputStreamName): void {
    this.#progress = Math.max(this.#progress + 1, this.#received);
    this.#transmit(name, this.#notification(name, this.#progress, LIVE_OUTPUT_STOPPED));
    this.cancel();
  }

  #transmit(name: OutputStreamName, notification: ProgressNotification): void {
    this.#usedBytes += progressFrameBytes(notification);
    this.#lastSentAt = performance.now();
    this.#lastStream = name;
    this.#options.send(notification).catch(() => this.cancel());
  }

  #notification(stream: OutputStreamName, progress: number, message: string): ProgressNotification {
    return {
      method: 'notifications/progress',
      params: {
        progressToken: this.#options.progressToken,
        progress,
        message,
        _meta: { [OUTPUT_STREAM_META_KEY]: stream },
      },
    };
  }
}
