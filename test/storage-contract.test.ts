import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createS3Client, createS3Storage } from '../src/storage/s3-storage.js';
import { startS3Server } from './support/s3-server.js';
import { describeFileStorageContract, listFiles, startFsStorageService } from './support/storage-contract.js';

describeFileStorageContract('fs', async ({ urlTtlSeconds, now }) => {
  const service = await startFsStorageService({ urlTtlSeconds, now });
  return {
    storage: service.storage,
    fetchDownload: (url) => fetch(url),
    parameters: { signature: 'signature', filename: 'filename', mediaType: 'type' },
    servesSecurityHeaders: true,
    effects: () => listFiles(service.dataDir),
    cleanup: () => service.close(),
  };
});

describeFileStorageContract('s3', async ({ urlTtlSeconds, now }) => {
  const server = await startS3Server();
  const client = createS3Client({
    region: server.region,
    endpoint: server.endpoint,
    forcePathStyle: true,
    credentials: server.credentials,
  });
  return {
    storage: createS3Storage({
      bucket: server.bucket,
      region: server.region,
      endpoint: server.endpoint,
      forcePathStyle: true,
      urlTtlSeconds,
      client,
      now,
    }),
    fetchDownload: (url) => fetch(url),
    parameters: {
      signature: 'X-Amz-Signature',
      filename: 'response-content-disposition',
      mediaType: 'response-content-type',
    },
    // The bucket answers downloads itself: s3rver (like S3) sets no X-Content-Type-Options.
    servesSecurityHeaders: false,
    effects: async () => ({ requests: server.requestCount(), files: await listFiles(server.directory) }),
    cleanup: async () => {
      client.destroy();
      await server.close();
    },
  };
});

const KEY = 'uploads/0123456789abcdef0123456789abcdef';

describe('s3 public endpoint', () => {
  it('signs downloads for the public origin while the service talks to the internal one', async () => {
    const server = await startS3Server();
    const internal = createS3Client({
      region: server.region,
      endpoint: server.endpoint,
      forcePathStyle: true,
      credentials: server.credentials,
    });
    const publicEndpoint = server.endpoint.replace('127.0.0.1', 'localhost');
    const storage = createS3Storage({
      bucket: server.bucket,
      region: server.region,
      endpoint: server.endpoint,
      publicEndpoint,
      forcePathStyle: true,
      urlTtlSeconds: 60,
      client: internal,
    });
    try {
      const body = Buffer.from('public bytes');
      await storage.put(KEY, Readable.from([body]), { contentType: 'text/plain', size: body.length });
      const url = await storage.signDownloadUrl(KEY, { filename: 'p.txt', mediaType: 'text/plain' });
      expect(new URL(url).origin).toBe(publicEndpoint);
      const response = await fetch(url);
      expect(response.status).toBe(200);
      expect(Buffer.from(await response.arrayBuffer())).toEqual(body);
      // The signature covers the host: the same URL on the internal origin is refused.
      const moved = url.replace(publicEndpoint, server.endpoint);
      expect((await fetch(moved)).status).toBe(403);
    } finally {
      internal.destroy();
      await server.close();
    }
  });
});
