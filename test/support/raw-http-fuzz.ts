import net from 'node:net';
import type { SeededRandom } from './seeded-random.js';

/** What a fuzzing client does once it has written its pieces. */
export type FuzzEnding = 'answer' | 'half-close' | 'vanish';

/** One request as bytes on a raw TCP connection, with a line describing it for failure reports. */
export interface FuzzCase {
  summary: string;
  head: string;
  /** The body as written, already framed when chunked; written one piece per read of the server. */
  pieces: Buffer[];
  ending: FuzzEnding;
}

/** Splits `body` at random offsets so it reaches the server in many reads. */
function splitRandomly(random: SeededRandom, body: Buffer): Buffer[] {
  const cuts = [...new Set(Array.from({ length: random.integer(0, 8) }, () => random.integer(1, body.length)))];
  cuts.sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let start = 0;
  for (const cut of [...cuts, body.length]) {
    if (cut > start) pieces.push(body.subarray(start, cut));
    start = cut;
  }
  return pieces;
}

/**
 * Frames `body` for the wire the way a random client would: exact `Content-Length`, chunked, or,
 * for a client that stops early, a declared length longer than what it sends. A client that does
 * not wait for the answer is cut at a random byte first.
 */
export function frameRandomly(
  random: SeededRandom,
  request: { method: string; path: string; headers: string[]; body: Buffer },
): FuzzCase {
  const ending = random.pick(['answer', 'answer', 'answer', 'answer', 'half-close', 'vanish'] as const);
  const body = ending === 'answer' ? request.body : request.body.subarray(0, random.integer(0, request.body.length));
  const chunked = random.chance(0.3);
  const declared = chunked ? undefined : body.length + (ending === 'answer' ? 0 : random.integer(1, 2048));
  const head = [
    `${request.method} ${request.path} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Connection: close',
    ...request.headers,
    chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${declared}`,
    '',
    '',
  ].join('\r\n');
  let pieces = splitRandomly(random, body);
  if (chunked) {
    pieces = pieces.map((piece) =>
      Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]),
    );
    if (ending === 'answer') pieces.push(Buffer.from('0\r\n\r\n'));
  }
  const framing = chunked ? 'chunked' : `length=${declared} (sent ${body.length})`;
  return { summary: `${request.method} ${request.path} ${framing} ${ending}`, head, pieces, ending };
}

/**
 * What one case came to, seen from the client: the answered status (null when there was none),
 * and the socket error the client met before it had the answer (a broken pipe, a reset).
 */
export interface RawOutcome {
  status: number | null;
  clientError?: string;
}

/** Sends one case and reads its answer's status line. */
export function sendRawCase(port: number, fuzzCase: FuzzCase, timeoutMs = 20_000): Promise<RawOutcome> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    let done = false;
    let clientError: string | undefined;
    const finish = (status: number | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ status, ...(clientError ? { clientError } : {}) });
    };
    const timer = setTimeout(() => {
      done = true;
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms: ${fuzzCase.summary}`));
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const match = /^HTTP\/1\.1 (\d{3}) /.exec(received);
      if (match) finish(Number(match[1]));
    });
    // A client that vanishes on purpose may see its own writes fail; one that waits must not.
    socket.on('error', (error: NodeJS.ErrnoException) => {
      clientError ??= error.code ?? error.message;
    });
    socket.on('close', () => finish(null));
    socket.on('connect', async () => {
      socket.write(fuzzCase.head);
      for (const piece of fuzzCase.pieces) {
        if (done) return;
        socket.write(piece);
        // Let the server read between writes, so the body arrives split across reads.
        await new Promise((next) => setImmediate(next));
      }
      if (fuzzCase.ending === 'half-close') socket.end();
      if (fuzzCase.ending === 'vanish') finish(null);
    });
  });
}

export interface FuzzRun {
  /** How many answers of each status. */
  statuses: Map<number, number>;
  /**
   * Each 5xx answer, each case that waited for an answer and got none, and each that met a
   * client-side error (EPIPE, ECONNRESET) before its answer, with the case that caused it.
   */
  failures: string[];
}

/**
 * Sends every case with `concurrency` connections at a time, stopping early once `alive()` turns
 * false (the server died).
 */
export async function runRawCases(
  port: number,
  cases: readonly FuzzCase[],
  options: { concurrency: number; alive: () => boolean },
): Promise<FuzzRun> {
  const statuses = new Map<number, number>();
  const failures: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < cases.length && options.alive()) {
      const index = next++;
      const fuzzCase = cases[index] as FuzzCase;
      const outcome = await sendRawCase(port, fuzzCase).catch((error: Error) => {
        failures.push(`#${index} ${error.message}`);
        return null;
      });
      if (outcome === null) continue;
      const { status, clientError } = outcome;
      if (fuzzCase.ending === 'answer' && (status === null || clientError !== undefined)) {
        failures.push(`#${index} ${clientError ?? 'no answer'} before the answer: ${fuzzCase.summary}`);
      }
      if (status === null) continue;
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status >= 500) failures.push(`#${index} ${status}: ${fuzzCase.summary}`);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return { statuses, failures };
}
