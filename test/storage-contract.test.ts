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
