import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createS3Client, type S3ChecksumPolicy } from '../../src/storage/s3-storage.js';
import { readEnvFile } from './env-file.js';

/** Where a Ceph S3 gateway started by `scripts/radosgw.sh` answers, and as whom to sign. */
export interface RadosgwGateway {
  endpoint: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
}

const VARIABLES = {
  endpoint: 'MORDN_TEST_RADOSGW_ENDPOINT',
  accessKeyId: 'MORDN_TEST_RADOSGW_ACCESS_KEY',
  secretAccessKey: 'MORDN_TEST_RADOSGW_SECRET_KEY',
  region: 'MORDN_TEST_RADOSGW_REGION',
} as const;

/**
 * The gateway named by the MORDN_TEST_RADOSGW_* variables, or else by the env file in
 * `$MORDN_RADOSGW_DIR` (default `/var/tmp/mordn-radosgw`) that the script leaves behind; undefined
 * when neither names one.
 */
export function configuredRadosgw(environment: NodeJS.ProcessEnv = process.env): RadosgwGateway | undefined {
  const envFile = path.join(environment.MORDN_RADOSGW_DIR ?? '/var/tmp/mordn-radosgw', 'env');
  const source = environment[VARIABLES.endpoint] ? environment : existsSync(envFile) ? readEnvFile(envFile) : {};
  const endpoint = source[VARIABLES.endpoint];
  const accessKeyId = source[VARIABLES.accessKeyId];
  const secretAccessKey = source[VARIABLES.secretAccessKey];
  if (!endpoint || !accessKeyId || !secretAccessKey) return undefined;
  return { endpoint, region: source[VARIABLES.region] || 'us-east-1', credentials: { accessKeyId, secretAccessKey } };
}

/** A path-style client for the gateway, with the given checksum policy (the service's default otherwise). */
export function createRadosgwClient(gateway: RadosgwGateway, checksums?: S3ChecksumPolicy): S3Client {
  return createS3Client({
    region: gateway.region,
    endpoint: gateway.endpoint,
    forcePathStyle: true,
    credentials: gateway.credentials,
    timeoutMs: 10_000,
    ...(checksums === undefined ? {} : { checksums }),
  });
}

/**
 * The gateway the suite can use, or why there is none. With MORDN_TEST_RADOSGW=require (as in CI)
 * no gateway, or one that refuses the configured keys, is a failure rather than a skip.
 */
export async function findRadosgw(): Promise<{ gateway: RadosgwGateway } | { reason: string }> {
  const gateway = configuredRadosgw();
  let reason: string | undefined;
  if (gateway === undefined) {
    reason = `${VARIABLES.endpoint} is not set and there is no env file (run scripts/radosgw.sh as root)`;
  } else {
    const client = createRadosgwClient(gateway);
    try {
      await client.send(new ListBucketsCommand({}), { abortSignal: AbortSignal.timeout(5_000) });
    } catch (error) {
      reason = `the gateway at ${gateway.endpoint} does not answer as ${gateway.credentials.accessKeyId}: ${String(error)}`;
    } finally {
      client.destroy();
    }
  }
  if (reason === undefined && gateway !== undefined) return { gateway };
  if (process.env.MORDN_TEST_RADOSGW === 'require') throw new Error(`MORDN_TEST_RADOSGW=require, but ${reason}`);
  return { reason: reason ?? 'no gateway' };
}

/** A bucket of its own on the gateway, for one suite. */
export interface RadosgwBucket {
  name: string;
  gateway: RadosgwGateway;
  client: S3Client;
  /** The keys the bucket holds, sorted. */
  keys(): Promise<string[]>;
  /** Empties and removes the bucket, and closes the client. */
  close(): Promise<void>;
}

/**
 * Creates a bucket with a fresh name (suites and projects running at once never share one), and
 * a client for it that uses `checksums` (the service's default when absent).
 *
 * @example
 * const bucket = await createRadosgwBucket(gateway);
 * const storage = createS3Storage({ bucket: bucket.name, client: bucket.client, ... });
 */
export async function createRadosgwBucket(
  gateway: RadosgwGateway,
  options: { checksums?: S3ChecksumPolicy } = {},
): Promise<RadosgwBucket> {
  const name = `mordn-test-${randomBytes(6).toString('hex')}`;
  const client = createRadosgwClient(gateway, options.checksums);
  // Bucket housekeeping always goes through a client with the default policy, whatever is tested.
  const admin = createRadosgwClient(gateway);
  await admin.send(new CreateBucketCommand({ Bucket: name }));
  const keys = async () => {
    const listed = await admin.send(new ListObjectsV2Command({ Bucket: name }));
    return (listed.Contents ?? []).map((object) => object.Key ?? '').sort();
  };
  return {
    name,
    gateway,
    client,
    keys,
    close: async () => {
      try {
        for (const key of await keys()) await admin.send(new DeleteObjectCommand({ Bucket: name, Key: key }));
        await admin.send(new DeleteBucketCommand({ Bucket: name }));
      } finally {
        client.destroy();
        admin.destroy();
      }
    },
  };
}
