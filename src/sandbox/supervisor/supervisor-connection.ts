import { Readable, Writable } from 'node:stream';
import { observeStreamErrors } from '../../stream-errors.js';
import type { SandboxExit, SandboxProcess } from '../runtime/sandbox-process.js';
import {
  EXIT,
  encodeCredit,
  encodeFrame,
  FrameDecoder,
  KILL,
  MAX_FRAME_BYTES,
  OUTPUT_CREDIT,
  READY,
  START,
  STARTED,
  STDERR,
  STDIN,
  STDIN_CREDIT,
  STDIN_END,
  STDIN_WINDOW_BYTES,
  STDOUT,
  TUNNEL_CHANNELS,
  TUNNEL_CLOSE,
  TUNNEL_CREDIT,
  TUNNEL_DATA,
  TUNNEL_HALF,
  TUNNEL_OPEN,
} from './frames.js';
import { TunnelStream } from './tunnel-stream.js';

/** Per-command resource limits the supervisor sets (setrlimit) right before exec. */
export interface CommandLimits {
  nofile?: number;
  fsize?: number;
  cpu?: number;
  as?: number;
  nproc?: number;
  core?: number;
}

/** What a supervisor's process gives the host: its stdin and stdout carry the protocol. */
export interface SupervisorTransport {
  stdin: Writable;
  stdout: Readable;
}

export interface SupervisorConnection {
  /**
   * The supervisor's pid inside its sandbox, once it said it is ready, and whether each command's
   * reaper is a child subreaper (otherwise a command that starts a session of its own escapes
   * it); rejects if it never says so.
   */
  readonly ready: Promise<SupervisorReady>;
  /**
   * Starts `argv` under its own reaper, with `env` added to its environment. Never throws: a
   * command that cannot start exits 127.
   */
  spawn(
    argv: readonly string[],
    options: { stdin: boolean; limits?: CommandLimits; cwd?: string; env?: Readonly<Record<string, string>> },
  ): SandboxProcess;
  /**
   * Hands every connection sandboxed code makes to the supervisor's proxy listener to `accept`
   * from now on; until one is set (a sandbox started ahead of its workspace), connections are
   * closed at once.
   */
  acceptTunnels(accept: ((tunnel: TunnelStream) => void) | undefined): void;
  /** Commands started and not yet finished. */
  readonly running: number;
  /** Whether the supervisor is gone (its stdout ended or the protocol broke). */
  readonly closed: boolean;
  /** Settles once the supervisor is gone. */
  readonly whenClosed: Promise<void>;
  /** Ends the supervisor's stdin: it kills every command and exits. */
  close(): void;
}

export interface SupervisorReady {
  pid: number;
  subreaper: boolean;
  /**
   * The port of the supervisor's proxy listener on the sandbox's own 127.0.0.1, the only way out
   * of the sandbox; null when it could not listen (then nothing leaves the sandbox).
   */
  proxyPort: number | null;
}

interface ExitReport {
  code?: number | null;
  signal?: number | null;
  killed?: boolean;
  error?: string;
  notStarted?: boolean;
  cpuSeconds?: number;
}

/** Output the host accepted into a stream's buffer is credited at once; the rest when it is read. */
function creditedOutput(grant: (bytes: number) => void): { stream: Readable; deliver(chunk: Buffer): void } {
  let owed = 0;
  const stream = observeStreamErrors(
    new Readable({
      read() {
        if (owed > 0) grant(owed);
        owed = 0;
      },
    }),
  );
  return {
    stream,
    deliver(chunk) {
      if (stream.destroyed) grant(chunk.length);
      else if (stream.push(chunk)) grant(chunk.length);
      else owed += chunk.length;
    },
  };
}

class Channel {
  readonly stdout: ReturnType<typeof creditedOutput>;
  readonly stderr: ReturnType<typeof creditedOutput>;
  stdin: Writable | null = null;
  killRequested = false;
  started = false;
  finished = false;
  private stdinCredit = STDIN_WINDOW_BYTES;
  private stdinQueue: Array<{ chunk: Buffer; callback: (error?: Error | null) => void }> = [];
  private resolveExit: (exit: SandboxExit) => void = () => undefined;
  readonly exited = new Promise<SandboxExit>((resolve) => {
    this.resolveExit = resolve;
  });

  constructor(
    readonly id: number,
    private readonly send: (frame: Buffer) => void,
    wantsStdin: boolean,
  ) {
    const grant = (bytes: number) => {
      if (!this.finished) this.send(encodeCredit(OUTPUT_CREDIT, id, bytes));
    };
    this.stdout = creditedOutput(grant);
    this.stderr = creditedOutput(grant);
    if (wantsStdin) {
      this.stdin = observeStreamErrors(
        new Writable({
          write: (chunk: Buffer, _encoding, callback) => {
            this.stdinQueue.push({ chunk, callback });
            this.pumpStdin();
          },
          final: (callback) => {
            if (!this.finished) this.send(encodeFrame(STDIN_END, id));
            callback();
          },
        }),
      );
    }
  }

  addStdinCredit(bytes: number): void {
    this.stdinCredit += bytes;
    this.pumpStdin();
  }

  private pumpStdin(): void {
    while (this.stdinQueue.length > 0 && (this.stdinCredit > 0 || this.finished)) {
      const head = this.stdinQueue[0] as { chunk: Buffer; callback: (error?: Error | null) => void };
      if (this.finished) {
        this.stdinQueue.shift();
        head.callback(new Error('The command has ended.'));
        continue;
      }
      const take = Math.min(head.chunk.length, this.stdinCredit, MAX_FRAME_BYTES);
      this.send(encodeFrame(STDIN, this.id, head.chunk.subarray(0, take)));
      this.stdinCredit -= take;
      head.chunk = head.chunk.subarray(take);
      if (head.chunk.length === 0) {
        this.stdinQueue.shift();
        head.callback();
      }
    }
  }

  finish(report: ExitReport): void {
    if (this.finished) return;
    this.finished = true;
    this.pumpStdin();
    this.stdin?.destroy();
    this.stdout.stream.push(null);
    this.stderr.stream.push(null);
    const exit: SandboxExit = {
      exitCode: typeof report.code === 'number' ? report.code : undefined,
      killed: typeof report.killed === 'boolean' ? report.killed : this.killRequested,
      ...(typeof report.signal === 'number' ? { signal: report.signal } : {}),
      ...(report.error ? { error: report.error } : {}),
      ...(report.notStarted ? { notStarted: true } : {}),
      ...(typeof report.cpuSeconds === 'number' ? { cpuSeconds: report.cpuSeconds } : {}),
    };
    // Output pushed just before is delivered first.
    setImmediate(() => this.resolveExit(exit));
  }
}

/**
 * The host's side of one supervisor: starts commands in it and turns each into a
 * `SandboxProcess`, with flow control both ways (a slow reader of one command's output stalls
 * only that command; a large stdin is sent as the command takes it).
 *
 * @example
 * const connection = connectSupervisor({ stdin: child.stdin, stdout: child.stdout });
 * await connection.ready;
 * const process = connection.spawn(['/bin/sh', '-c', 'echo hi'], { stdin: false });
 */
export function connectSupervisor(transport: SupervisorTransport): SupervisorConnection {
  const channels = new Map<number, Channel>();
  const decoder = new FrameDecoder();
  let nextChannel = 1;
  let closed = false;
  let resolveReady: (value: SupervisorReady) => void = () => undefined;
  let rejectReady: (error: Error) => void = () => undefined;
  const ready = new Promise<SupervisorReady>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  ready.catch(() => undefined);
  const tunnels = new Map<number, TunnelStream>();
  let acceptTunnel: ((tunnel: TunnelStream) => void) | undefined;
  let resolveClosed: () => void = () => undefined;
  const whenClosed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  observeStreamErrors(transport.stdin);
  observeStreamErrors(transport.stdout);

  /** A frame, or a header with its payload after it (corked: one write, no copy). */
  const send = (frame: Buffer, payload?: Buffer) => {
    if (closed || !transport.stdin.writable) return;
    if (!payload) {
      transport.stdin.write(frame);
      return;
    }
    transport.stdin.cork();
    transport.stdin.write(frame);
    transport.stdin.write(payload);
    transport.stdin.uncork();
  };

  const shutDown = (reason: string) => {
    if (closed) return;
    closed = true;
    rejectReady(new Error(reason));
    for (const channel of channels.values()) channel.finish({ error: reason, notStarted: !channel.started });
    channels.clear();
    for (const tunnel of tunnels.values()) tunnel.closedBySandbox();
    tunnels.clear();
    transport.stdout.resume();
    resolveClosed();
  };

  const handleTunnel = (type: number, id: number, payload: Buffer) => {
    if (type === TUNNEL_OPEN) {
      const tunnel = new TunnelStream(id, send);
      if (!acceptTunnel) {
        tunnel.destroy();
        return;
      }
      tunnels.set(id, tunnel);
      tunnel.once('close', () => {
        if (tunnels.get(id) === tunnel) tunnels.delete(id);
      });
      acceptTunnel(tunnel);
      return;
    }
    const tunnel = tunnels.get(id);
    if (!tunnel) return;
    if (type === TUNNEL_DATA) tunnel.deliver(payload);
    else if (type === TUNNEL_CREDIT && payload.length === 4) tunnel.addCredit(payload.readUInt32BE(0));
    else if (type === TUNNEL_HALF) tunnel.deliverEnd();
    else if (type === TUNNEL_CLOSE) {
      tunnels.delete(id);
      tunnel.closedBySandbox();
    }
  };

  const handle = (type: number, id: number, payload: Buffer) => {
    if (type === READY) {
      const { pid, subreaper, proxyPort } = JSON.parse(payload.toString('utf8')) as {
        pid?: unknown;
        subreaper?: unknown;
        proxyPort?: unknown;
      };
      if (typeof pid === 'number') {
        resolveReady({
          pid,
          subreaper: subreaper !== false,
          proxyPort: typeof proxyPort === 'number' && Number.isInteger(proxyPort) ? proxyPort : null,
        });
      }
      return;
    }
    if (id >= TUNNEL_CHANNELS) {
      handleTunnel(type, id, payload);
      return;
    }
    const channel = channels.get(id);
    if (!channel) return;
    if (type === STARTED) channel.started = true;
    else if (type === STDOUT) channel.stdout.deliver(payload);
    else if (type === STDERR) channel.stderr.deliver(payload);
    else if (type === STDIN_CREDIT && payload.length === 4) channel.addStdinCredit(payload.readUInt32BE(0));
    else if (type === EXIT) {
      channels.delete(id);
      channel.finish(JSON.parse(payload.toString('utf8')) as ExitReport);
    }
  };

  transport.stdout.on('data', (chunk: Buffer) => {
    if (closed) return;
    try {
      for (const frame of decoder.push(chunk)) handle(frame.type, frame.channel, frame.payload);
    } catch (error) {
      shutDown(`The sandbox supervisor broke the protocol: ${(error as Error).message}`);
      transport.stdin.end();
    }
  });
  transport.stdout.once('close', () => shutDown('The sandbox supervisor is gone.'));
  transport.stdout.once('end', () => shutDown('The sandbox supervisor is gone.'));

  return {
    ready,
    get running() {
      return channels.size;
    },
    get closed() {
      return closed;
    },
    whenClosed,

    spawn(argv, options) {
      const id = nextChannel;
      nextChannel = nextChannel >= TUNNEL_CHANNELS - 16 ? 1 : nextChannel + 1;
      const channel = new Channel(id, send, options.stdin);
      if (closed) {
        channel.finish({ error: 'The sandbox supervisor is gone.', notStarted: true });
      } else {
        channels.set(id, channel);
        const start = {
          argv,
          stdin: options.stdin,
          rlimits: options.limits ?? {},
          cwd: options.cwd,
          ...(options.env ? { env: options.env } : {}),
        };
        send(encodeFrame(START, id, Buffer.from(JSON.stringify(start))));
      }
      return {
        stdin: channel.stdin,
        stdout: channel.stdout.stream,
        stderr: channel.stderr.stream,
        kill() {
          if (channel.finished) return;
          channel.killRequested = true;
          send(encodeFrame(KILL, id));
        },
        exited: channel.exited,
      };
    },

    acceptTunnels(accept) {
      acceptTunnel = accept;
    },

    close() {
      transport.stdin.end();
    },
  };
}
