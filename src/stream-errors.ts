import type { Stream } from 'node:stream';

/**
 * Makes sure an error of `stream` can never end the process, and returns the stream. For a stream
 * that is handed to someone else to consume (a stored file's body, a sandbox's pipe), or that a
 * consumer may stop reading early: Node throws an `'error'` event nobody listens to as an uncaught
 * exception, and such a stream can fail before its consumer attaches (a storage connection that
 * drops while the workspace helper starts) or after it left. Consumers still see the error:
 * `pipeline`, `for await` and `stream.errored` report it whenever they read.
 *
 * @example
 * return { body: observeStreamErrors(handle.createReadStream()), size };
 */
export function observeStreamErrors<T extends Stream>(stream: T): T {
  stream.on('error', ignore);
  return stream;
}

function ignore(): void {}
