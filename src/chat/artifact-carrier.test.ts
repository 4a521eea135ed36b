import type { UIMessageChunk } from 'ai';
import { describe, expect, it } from 'vitest';
import * as serverEntry from '../exports/server.js';
import * as hostedEntry from '../exports/server-hosted.js';
import { isArtifactCarrier, mintArtifactCarrier } from './artifact-carrier.js';
import { createArtifactRelay } from './artifact-stream.js';

const FILE = {
  url: 'https://storage.example/artifacts/x?sig=1',
  storagePath: 'artifacts/0123456789abcdef0123456789abcdef',
  filename: 'report.csv',
  mediaType: 'text/csv',
  size: 42,
};

function run(relay: ReturnType<typeof createArtifactRelay>, chunks: UIMessageChunk[]): UIMessageChunk[] {
  return chunks.flatMap((chunk) => relay.pass(chunk));
}

const toolOutput = (toolCallId: string): UIMessageChunk => ({ type: 'tool-output-available', toolCallId, output: {} });

describe('artifact carriers', () => {
  it('accepts only carriers minted in this process', () => {
    const carrier = mintArtifactCarrier('call-1', FILE);
    expect(isArtifactCarrier(carrier)).toBe(true);
    expect(Object.isFrozen(carrier)).toBe(true);
    expect(Object.isFrozen(carrier.file)).toBe(true);

    const cast = { toolCallId: 'call-1', file: { ...FILE } } as unknown;
    const jsonClone = JSON.parse(JSON.stringify(carrier)) as unknown;
    const structured = structuredClone(carrier) as unknown;
    const spread = { ...carrier } as unknown;
    const modelJson = JSON.parse('{"toolCallId":"call-1","file":{"url":"https://evil.example"}}') as unknown;
    for (const forged of [cast, jsonClone, structured, spread, modelJson, null, 'carrier', 42]) {
      expect(isArtifactCarrier(forged)).toBe(false);
    }
  });

  it('is the same identity through both package entry points', () => {
    const viaHosted = mintArtifactCarrier('call-2', FILE);
    expect(serverEntry.isArtifactCarrier(viaHosted)).toBe(true);
    expect(typeof hostedEntry.createHostedSandboxes).toBe('function');
    expect(serverEntry.isArtifactCarrier({ ...viaHosted })).toBe(false);
  });

  it("emits a carrier's strict file chunk right after its tool result, never before", async () => {
    const relay = createArtifactRelay();
    relay.accept(mintArtifactCarrier('call-3', FILE));
    const output = run(relay, [
      { type: 'tool-input-available', toolCallId: 'call-3', toolName: 'sandbox_publish_file', input: {} },
      toolOutput('other-call'),
      toolOutput('call-3'),
      { type: 'text-delta', id: 't', delta: 'done' },
    ]);
    expect(output.map((chunk) => chunk.type)).toEqual([
      'tool-input-available',
      'tool-output-available',
      'tool-output-available',
      'file',
      'text-delta',
    ]);
    expect(output[3]).toEqual({
      type: 'file',
      url: FILE.url,
      mediaType: 'text/csv',
      providerMetadata: { mordn: { sandboxFile: { filename: 'report.csv', size: 42, storagePath: FILE.storagePath } } },
    });
  });

  it('refuses forged carriers and drops provider-generated file chunks', async () => {
    const rejected: unknown[] = [];
    const relay = createArtifactRelay((value) => rejected.push(value));
    const forged = { toolCallId: 'call-4', file: FILE };
    relay.accept(forged as never);
    relay.accept(JSON.parse(JSON.stringify(mintArtifactCarrier('call-4', FILE))));
    const output = run(relay, [
      { type: 'file', url: 'data:text/plain;base64,SGk=', mediaType: 'text/plain' },
      toolOutput('call-4'),
    ]);
    expect(output.map((chunk) => chunk.type)).toEqual(['tool-output-available']);
    expect(rejected).toHaveLength(2);
  });
});
