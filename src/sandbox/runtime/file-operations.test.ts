import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { openWorkspaceFile, type StartHelper, writeWorkspaceFile } from './file-operations.js';
import type { SandboxExit, SandboxProcess } from './sandbox-process.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A stand-in for `fileops.py` in a sandbox: `script` plays the helper's side of the pipes. */
function scriptedHelper(
  script: (pipes: { stdin: PassThrough; stdout: PassThrough; exit(code: number): void }) => void,
): StartHelper {
  return async (_arguments, { stdin: withStdin }) => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let exit: (value: SandboxExit) => void = () => undefined;
    const exited = new Promise<SandboxExit>((resolve) => {
      exit = resolve;
    });
    const process: SandboxProcess = {
      stdin: withStdin ? stdin : null,
      stdout,
      stderr,
      kill: () => {
        stdout.end();
        stderr.end();
        exit({ exitCode: undefined, killed: true });
      },
      exited,
    };
    script({
      stdin,
      stdout,
      exit: (code) => {
        stdout.end();
        stderr.end();
        exit({ exitCode: code, killed: false });
      },
    });
    return process;
  };
}

describe('workspace file streams', () => {
  it('reports a body that fails while the helper starts as that failure, never as an uncaught error', async () => {
    const helper = scriptedHelper(({ stdin, stdout, exit }) => {
      setTimeout(() => stdout.write('{"ok":true,"ready":true}\n'), 30);
      stdin.resume();
      stdin.on('end', () => {
        // No commit frame came: the helper removes the partial file and says so.
        stdout.write('{"ok":false,"code":"FAILED","message":"abandoned"}\n');
        exit(1);
      });
    });
    const body = new Readable({ read() {} });
    setImmediate(() => body.destroy(new Error('storage connection reset')));
    await expect(writeWorkspaceFile(helper, 'uploads/a.csv', body, { maxBytes: 10, exclusive: true })).rejects.toThrow(
      'storage connection reset',
    );
  });

  it('fails the reader of a file that grew before it started reading, and only then', async () => {
    const helper = scriptedHelper(({ stdout, exit }) => {
      stdout.write('{"ok":true,"size":2}\n');
      stdout.write('12345');
      exit(0);
    });
    const { size, body } = await openWorkspaceFile(helper, 'out.txt', 10);
    expect(size).toBe(2);
    // The consumer is busy elsewhere (publishing creates its temporary directory first).
    await sleep(30);
    const chunks: Buffer[] = [];
    await expect(
      (async () => {
        for await (const chunk of body) chunks.push(chunk as Buffer);
      })(),
    ).rejects.toThrow('The file grew while it was read.');
    expect(body.destroyed).toBe(true);
  });

  it('streams a file of exactly its announced size', async () => {
    const helper = scriptedHelper(({ stdout, exit }) => {
      stdout.write('{"ok":true,"size":5}\nhel');
      setTimeout(() => {
        stdout.write('lo');
        exit(0);
      }, 10);
    });
    const { body } = await openWorkspaceFile(helper, 'out.txt', 10);
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('hello');
    expect(body.readableEnded).toBe(true);
  });
});
