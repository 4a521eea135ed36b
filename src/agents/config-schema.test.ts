import { describe, expect, it } from 'vitest';
import { AgentConfigSchema, DEFAULT_AGENT_CONFIG, isSandboxEnabled } from './config-schema.js';

describe('AgentConfigSchema', () => {
  it('accepts the full documented shape', () => {
    const config = {
      schemaVersion: 1,
      model: 'meta-llama/llama-3.1-70b-instruct',
      instructions: 'Answer from the uploaded documents.',
      attachments: { enabled: true, accept: ['image/*', 'text/csv', '.md'], maxBytes: 1_048_576 },
      runtime: { sandbox: { enabled: true } },
    };
    expect(AgentConfigSchema.parse(config)).toEqual(config);
  });

  it.each([
    ['a provider at the top level', { schemaVersion: 1, provider: 'openai' }],
    [
      'a provider beside the sandbox flag',
      { schemaVersion: 1, runtime: { sandbox: { enabled: true, provider: 'x' } } },
    ],
    ['a credential in the sandbox', { schemaVersion: 1, runtime: { sandbox: { enabled: true, apiKey: 'k' } } }],
    ['an endpoint in runtime', { schemaVersion: 1, runtime: { endpoint: 'https://x' } }],
    ['a picker size above the managed ceiling', { schemaVersion: 1, attachments: { maxBytes: 10 * 1024 * 1024 + 1 } }],
    ['an accept entry that is not a MIME type', { schemaVersion: 1, attachments: { accept: ['<script>'] } }],
    ['a missing schemaVersion', { runtime: { sandbox: { enabled: true } } }],
  ])('rejects %s', (_name, config) => {
    expect(AgentConfigSchema.safeParse(config).success).toBe(false);
  });

  it('treats an absent sandbox flag as off', () => {
    expect(isSandboxEnabled({ schemaVersion: 1 })).toBe(false);
    expect(isSandboxEnabled({ schemaVersion: 1, runtime: {} })).toBe(false);
    expect(isSandboxEnabled({ schemaVersion: 1, runtime: { sandbox: { enabled: true } } })).toBe(true);
    expect(isSandboxEnabled(DEFAULT_AGENT_CONFIG)).toBe(false);
  });
});
