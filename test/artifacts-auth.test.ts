import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll } from 'vitest';
import { createStoragePath } from '../src/storage/storage-path.js';
import { registerStoredFile } from '../src/uploads/file-registry.js';
import { describeAgentAuth } from './support/agent-auth-suite.js';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { startTestService, type TestService } from './support/service.js';

let service: TestService;
let fixture: AgentFixture;

/** The artifact each route's succeeding request names, owned by the suite's `user-1`. */
const ARTIFACT = createStoragePath('artifact');
const JSON_HEADERS = { 'Content-Type': 'application/json' };
const DOWNLOADS_QUERY = `?storagePath=${ARTIFACT}`;

/** Everything a refused request could have changed: the file rows and the download audit. */
const artifactRows = async () => [
  await service.database.db.selectFrom('stored_files').selectAll().orderBy('storage_path').execute(),
  await service.database.db.selectFrom('artifact_downloads').selectAll().orderBy('id').execute(),
];

beforeAll(async () => {
  service = await startTestService();
  fixture = await createAgentFixture(service.database.db);
  const bytes = Buffer.from('{"ok":true}\n');
  await service.deps.storage.put(ARTIFACT, Readable.from([bytes]), {
    contentType: 'application/json',
    size: bytes.length,
  });
  await registerStoredFile(
    service.database.db,
    { tenantId: fixture.tenantId, agentId: fixture.agentId, userId: 'user-1' },
    {
      storagePath: ARTIFACT,
      kind: 'artifact',
      filename: 'ok.json',
      mediaType: 'application/json',
      size: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      createdAt: Date.now(),
    },
  );
});
afterAll(() => service.close());

const context = () => ({ service, fixture });
const body = JSON.stringify({ storagePath: ARTIFACT });

describeAgentAuth(
  { method: 'GET', path: '/v1/artifacts', permission: 'read', rejectsAnonymous: true, effects: artifactRows },
  context,
);
describeAgentAuth(
  {
    method: 'POST',
    path: '/v1/artifacts/revoke',
    permission: 'write',
    rejectsAnonymous: true,
    headers: JSON_HEADERS,
    body,
    effects: artifactRows,
  },
  context,
);
describeAgentAuth(
  {
    method: 'POST',
    path: '/v1/artifacts/restore',
    permission: 'write',
    rejectsAnonymous: true,
    headers: JSON_HEADERS,
    body,
    effects: artifactRows,
  },
  context,
);
describeAgentAuth(
  {
    method: 'GET',
    // biome-ignore lint/style/useTemplate: the shared suite finds routes by a quoted path as the route table names it.
    path: '/v1/artifacts/downloads' + DOWNLOADS_QUERY,
    permission: 'read',
    rejectsAnonymous: true,
    effects: artifactRows,
  },
  context,
);
