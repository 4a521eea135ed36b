import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentFixture, createAgentFixture } from './support/fixtures.js';
import { type Json, readJson } from './support/json.js';
import { callTool, connectSdkClient } from './support/mcp.js';
import { pollUntil } from './support/poll.js';
import { agentHeaders, startTestService, type TestService } from './support/service.js';

let service: TestService;
let fixture: AgentFixture;

beforeAll(async () => {
  service = await startTestService({ environment: { MORDN_SANDBOX_ENABLED: 'true' } });
  fixture = await createAgentFixture(service.database.db, {
    published: { schemaVersion: 1, runtime: { sandbox: { enabled: true } } },
  });
});
afterAll(() => service.close());

const post = (path: string, body: unknown) =>
  service.fetch(path, {
    method: 'POST',
    headers: { ...agentHeaders(fixture.key, 'publisher'), 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('a file published by the live sandbox_publish_file tool', () => {
  it('is listed, downloads through the service (recorded; records past retention swept), stops at revoke and comes back at restore', async () => {
    const client = await connectSdkClient(service, fixture.key, 'publisher');
    let published: Json;
    try {
      const written = await callTool(client, 'sandbox_write_file', { path: 'out.csv', content: 'a,b\n1,2\n' });
      expect(written.isError).toBe(false);
      published = await callTool(client, 'sandbox_publish_file', { path: 'out.csv', filename: 'Out.csv' });
    } finally {
      await client.close();
    }
    expect(published.isError).toBe(false);
    const { file } = published.value;
    expect(file.url.startsWith(`${service.url}/v1/files/artifacts/`)).toBe(true);

    const listed = await readJson(
      await service.fetch('/v1/artifacts', { headers: agentHeaders(fixture.key, 'publisher') }),
    );
    expect(listed.items).toEqual([
      {
        storagePath: file.storagePath,
        filename: 'Out.csv',
        mediaType: 'text/csv',
        size: 8,
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        state: 'active',
        revokedAt: null,
        chatIds: [],
      },
    ]);
    expect(listed.nextCursor).toBeNull();

    // A record past retention, left from long ago: the first download of this process sweeps it.
    const old = {
      id: 'dl_past_retention',
      storage_path: file.storagePath,
      tenant_id: fixture.tenantId,
      agent_id: fixture.agentId,
      user_id: 'publisher',
      downloaded_at: Date.now() - (service.config.downloadAuditRetentionDays + 1) * 24 * 60 * 60 * 1000,
      client_ip: null,
      user_agent: null,
      status: 200,
      bytes: 8,
    };
    await service.database.db.insertInto('artifact_downloads').values(old).execute();

    const download = await fetch(file.url);
    expect(download.status).toBe(200);
    expect(await download.text()).toBe('a,b\n1,2\n');
    const records = await pollUntil(
      async () =>
        (
          await readJson(
            await service.fetch(`/v1/artifacts/downloads?storagePath=${file.storagePath}`, {
              headers: agentHeaders(fixture.key, 'publisher'),
            }),
          )
        ).items,
      (items: Json[]) => items.length === 1 && items[0].id !== old.id,
      { timeoutMs: 10_000 },
    );
    expect(records).toEqual([expect.objectContaining({ status: 200, bytes: 8, userId: 'publisher' })]);

    expect((await post('/v1/artifacts/revoke', { storagePath: file.storagePath })).status).toBe(200);
    expect((await fetch(file.url)).status).toBe(404);
    expect((await post('/v1/artifacts/restore', { storagePath: file.storagePath })).status).toBe(200);
    const again = await fetch(file.url);
    expect(again.status).toBe(200);
    expect(await again.text()).toBe('a,b\n1,2\n');
  });
});
