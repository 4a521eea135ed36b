import { createHash, randomUUID } from 'node:crypto';
import { readdir, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { makeImage, TEMPORARY_IMAGE_PREFIX } from './quota-images.js';
import type { QuotaLayout } from './quota-layout.js';

/** Names of complete, unused images; never a workspace's (ids have no dots). */
export const SPARE_PREFIX = '.spare-';

/** Images made ahead of need, so that a new workspace costs a rename and a mount instead of an mkfs too. */
export interface SpareImages {
  /**
   * A complete image of the current layout under a fresh temporary name, now this caller's alone,
   * or undefined when none is ready. Starts making a replacement in the background.
   */
  take(): Promise<string | undefined>;
  /** Adopts the spares already in the directory (made before a restart, or by another replica) and fills up. */
  start(): Promise<void>;
  /** The name prefix of this layout's spares (others are leftovers of another configuration). */
  readonly prefix: string;
  /** Makes no more spares and waits for the one in the making (for shutdown). */
  stop(): Promise<void>;
}

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error ? String(error.code) : undefined;
}

/**
 * Keeps up to `size` spare images in `images`, named after a fingerprint of their layout and
 * owner so that only identical ones are ever used. A spare is made under a temporary name and
 * renamed to its spare name once complete; taking one renames it again, which only one process
 * can do, so replicas sharing the directory also share its spares safely. One is made at a time,
 * off the request path. `size` 0 makes none.
 *
 * @example
 * const spares = createSpareImages({ images: async () => imagesDirectory, layout, owner, size: 2 });
 * await spares.start();
 * const image = (await spares.take()) ?? (await makeImage(imagesDirectory, layout, owner));
 */
export function createSpareImages(options: {
  images: () => Promise<string>;
  layout: QuotaLayout;
  owner: { uid: number; gid: number };
  size: number;
  onWarning?: (message: string) => void;
}): SpareImages {
  const { layout, owner, size } = options;
  const fingerprint = createHash('sha256').update(JSON.stringify({ layout, owner })).digest('hex').slice(0, 16);
  const prefix = `${SPARE_PREFIX}${fingerprint}-`;
  /** Spares this process knows of, oldest first; another process may have taken any of them. */
  const known: string[] = [];
  let making: Promise<void> | undefined;
  let stopped = false;

  const fill = () => {
    if (stopped || making || size === 0 || known.length >= size) return;
    making = (async () => {
      try {
        while (!stopped && known.length < size) {
          const images = await options.images();
          const temporary = await makeImage(images, layout, owner);
          const spare = path.join(images, `${prefix}${randomUUID()}.ext4`);
          await rename(temporary, spare).catch(async (error: unknown) => {
            await unlink(temporary).catch(() => undefined);
            throw error;
          });
          known.push(spare);
        }
      } catch (error) {
        options.onWarning?.(
          `No spare workspace image could be made: ${error instanceof Error ? error.message : String(error)}`,
        );
      } finally {
        making = undefined;
      }
    })();
  };

  return {
    prefix,

    async stop() {
      stopped = true;
      await making;
    },

    async take() {
      if (size === 0) return undefined;
      const images = await options.images();
      for (let spare = known.shift(); spare !== undefined; spare = known.shift()) {
        const claimed = path.join(images, `${TEMPORARY_IMAGE_PREFIX}${randomUUID()}.ext4`);
        try {
          await rename(spare, claimed);
          fill();
          return claimed;
        } catch (error) {
          // Taken by another process meanwhile: try the next.
          if (errorCode(error) !== 'ENOENT') throw error;
        }
      }
      fill();
      return undefined;
    },

    async start() {
      if (size === 0) return;
      const images = await options.images();
      const names = await readdir(images);
      for (const name of names) {
        const spare = path.join(images, name);
        if (name.startsWith(prefix) && !known.includes(spare)) known.push(spare);
      }
      fill();
    },
  };
}
