import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** How much of an answered request's unread body is read and thrown away before giving up on it. */
export const LINGER_MAX_BYTES = 1024 * 1024;
/** How long the client of an answered request is given to finish sending its body. */
export const LINGER_MAX_MS = 2_000;

interface ConnectionState {
  /** The request being answered on this connection (the last one its parser produced). */
  request?: IncomingMessage;
  /**
   * `draining`: a keep-alive answer went out before its request's body was all received; the rest
   * is being discarded, and the connection serves on once it is. `lingering`: the connection is
   * closing (answer and FIN sent) and only waits for the client to finish sending.
   */
  mode: 'open' | 'draining' | 'lingering';
}

const connections = new WeakMap<Socket, ConnectionState>();

/**
 * Reads and throws away the rest of `request`'s body, within `LINGER_MAX_BYTES` and
 * `LINGER_MAX_MS`: `done` once the body has all arrived, `overBudget` when the client sends more
 * or takes longer (each called at most once).
 */
function discardBody(socket: Socket, request: IncomingMessage, outcome: { done(): void; overBudget(): void }): void {
  let discarded = 0;
  let settled = false;
  // Counted on the socket itself: the HTTP parser throws away the body of a request nobody reads
  // without handing it to any listener. (A 'data' listener makes Node feed the parser from
  // JavaScript rather than natively; it still parses, and discards, what arrives.)
  const count = (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > LINGER_MAX_BYTES) settle(outcome.overBudget);
  };
  const settle = (then: () => void) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    socket.removeListener('data', count);
    socket.removeListener('close', closed);
    then();
  };
  const closed = () => settle(() => undefined);
  const timer = setTimeout(() => settle(outcome.overBudget), LINGER_MAX_MS);
  timer.unref();
  socket.on('data', count);
  socket.once('close', closed);
  request.once('end', () => settle(outcome.done));
  request.once('error', () => settle(outcome.overBudget));
  // Whoever was reading the body has given up on it: nothing may buffer it any more.
  request.removeAllListeners('data');
  request.resume();
}

/**
 * Closes a connection whose request was answered before its body was all received the way
 * nginx's "lingering close" does: the answer and a FIN go out first, then whatever the client
 * still sends of that body is read and thrown away (see `discardBody`), and only then is the
 * socket closed. Closing at once would make the kernel answer the client's next bytes with a
 * reset, and a client still writing its body would see a broken pipe instead of the answer.
 */
function closeLingeringly(socket: Socket, state: ConnectionState, closeAtOnce: () => void): void {
  if (state.mode === 'lingering') return;
  const request = state.request;
  if (!request || request.complete || socket.destroyed) {
    closeAtOnce();
    return;
  }
  state.mode = 'lingering';
  socket.end();
  const close = () => socket.destroy();
  // Once the client has sent its body it reads the answer and the FIN: nothing more is coming.
  discardBody(socket, request, { done: close, overBudget: close });
}

/**
 * Makes answers sent before their request's body was all received safe for clients still
 * writing it, on every connection of `server`:
 * - an answer that closes the connection (`Connection: close`, which Node ends with
 *   `socket.destroySoon()`) closes it lingeringly (see `closeLingeringly`); a request pipelined
 *   behind it is not served;
 * - a keep-alive answer lets the rest of the body be read and discarded, within the same bounds,
 *   and the connection serves on; past the bounds it is closed.
 *
 * Requests with `Expect: 100-continue` get their `100 Continue` only when the handler starts
 * reading the body, so a refusal decided from the head alone reaches the client before it sends
 * any of its body; such an answer also says `Connection: close`.
 *
 * Returns the request listener to use for `request` (it is installed for `checkContinue`).
 */
export function closeConnectionsLingeringly(
  server: Server,
  handle: (request: IncomingMessage, response: ServerResponse) => void,
): (request: IncomingMessage, response: ServerResponse) => void {
  server.on('connection', (socket: Socket) => {
    const state: ConnectionState = { mode: 'open' };
    connections.set(socket, state);
    const destroySoon = socket.destroySoon.bind(socket);
    // Node's HTTP server ends a connection after an answer that closes it with destroySoon(), as
    // does the adapter giving up on an unread body; a body being discarded has bounds of its own.
    socket.destroySoon = () => {
      if (state.mode !== 'draining') closeLingeringly(socket, state, destroySoon);
    };
  });

  const onRequest = (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    const state = connections.get(socket);
    if (state?.mode === 'lingering') {
      socket.destroy();
      return;
    }
    if (state) {
      state.request = request;
      response.once('finish', () => {
        if (request.complete || state.mode !== 'open' || socket.destroyed) return;
        state.mode = 'draining';
        discardBody(socket, request, {
          done: () => {
            if (state.mode === 'draining') state.mode = 'open';
          },
          overBudget: () => socket.destroy(),
        });
      });
    }
    handle(request, response);
  };

  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    response.setHeader('Connection', 'close');
    request.once('resume', () => {
      if (response.headersSent) return;
      response.removeHeader('Connection');
      response.writeContinue();
    });
    onRequest(request, response);
  });
  return onRequest;
}
