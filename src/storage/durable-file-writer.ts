import { type FileHandle, open } from 'node:fs/promises';
import { Writable } from 'node:stream';

/** How much may be written before the data written so far is flushed in the background. */
const BACKGROUND_SYNC_BYTES = 2 * 1024 * 1024;

/**
 * A writable file stream whose `finish` means "on disk". Rather than flushing everything at the
 * end (which stalls a 10 MiB upload for the whole flush), it flushes what is already written in
 * the background every few MiB while more arrives, so the final fsync only has the tail left.
 * Creates the file exclusively with mode 0600.
 */
export class DurableFileWriter extends Writable {
  /** Bytes written so far. */
  bytesWritten = 0;
  private handle: FileHandle | undefined;
  private unsyncedBytes = 0;
  private backgroundSync: Promise<void> | undefined;

  constructor(private readonly filePath: string) {
    super({ highWaterMark: 64 * 1024 });
  }

  override _construct(callback: (error?: Error | null) => void): void {
    open(this.filePath, 'wx', 0o600).then(
      (handle) => {
        this.handle = handle;
        callback();
      },
      (error: Error) => callback(error),
    );
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.writeFully(chunk).then(() => callback(), callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    const handle = this.handle as FileHandle;
    Promise.resolve(this.backgroundSync)
      .then(() => handle.sync())
      .then(() => callback(), callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const handle = this.handle;
    this.handle = undefined;
    Promise.resolve(this.backgroundSync)
      .catch(() => undefined)
      .then(() => handle?.close())
      .then(
        () => callback(error),
        (closeError: Error) => callback(error ?? closeError),
      );
  }

  private async writeFully(chunk: Buffer): Promise<void> {
    const handle = this.handle as FileHandle;
    let offset = 0;
    while (offset < chunk.length) offset += (await handle.write(chunk, offset)).bytesWritten;
    this.bytesWritten += chunk.length;
    this.unsyncedBytes += chunk.length;
    if (this.unsyncedBytes >= BACKGROUND_SYNC_BYTES) {
      // One background flush at a time; a failure surfaces at the next write or the final sync.
      // Until then it is observed here, so a failed flush is never an unhandled rejection.
      await this.backgroundSync;
      this.unsyncedBytes = 0;
      const flush = handle.datasync();
      flush.catch(() => undefined);
      this.backgroundSync = flush;
    }
  }
}

/** Persists directory entry changes (a rename, a new link, a removal) across a crash. */
export async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
