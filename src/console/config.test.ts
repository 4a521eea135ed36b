import { describe, expect, it } from 'vitest';
import { applyEdits, editsOf, startingConfig } from './config.js';
import type { NetworkEdits } from './network-policy.js';
import type { AgentConfig } from './types.js';

const NO_NETWORK: NetworkEdits = { mode: 'none', allowText: '' };

describe('startingConfig', () => {
  it('starts from the draft, else the published config, else the minimum', () => {
    const draft: AgentConfig = { schemaVersion: 1, model: 'd' };
    const published: AgentConfig = { schemaVersion: 1, model: 'p' };
    expect(startingConfig(draft, published)).toEqual(draft);
    expect(startingConfig(null, published)).toEqual(published);
    expect(startingConfig(null, null)).toEqual({ schemaVersion: 1 });
  });

  it('copies, so that editing never changes the loaded config', () => {
    const published: AgentConfig = { schemaVersion: 1, runtime: { sandbox: { enabled: false } } };
    const copy = startingConfig(null, published);
    expect(copy).not.toBe(published);
    expect(copy.runtime).not.toBe(published.runtime);
  });
});

describe('applyEdits', () => {
  const base: AgentConfig = {
    schemaVersion: 1,
    instructions: 'Old.',
    attachments: { enabled: false, accept: ['.pdf'] },
  };

  it('sets the edited fields and keeps every other field as it was', () => {
    expect(
      applyEdits(base, { instructions: 'New.', model: ' gpt-4o ', sandboxEnabled: true, network: NO_NETWORK }),
    ).toEqual({
      schemaVersion: 1,
      instructions: 'New.',
      model: 'gpt-4o',
      attachments: { enabled: false, accept: ['.pdf'] },
      runtime: { sandbox: { enabled: true } },
    });
  });

  it('removes an empty model and adds no sandbox switch that was never on', () => {
    const next = applyEdits(
      { schemaVersion: 1, model: 'm' },
      { instructions: '', model: '', sandboxEnabled: false, network: NO_NETWORK },
    );
    expect(next).toEqual({ schemaVersion: 1 });
  });

  it('writes the switch off when the base had it', () => {
    const next = applyEdits(
      { schemaVersion: 1, runtime: { sandbox: { enabled: true } } },
      { instructions: '', model: '', sandboxEnabled: false, network: NO_NETWORK },
    );
    expect(next.runtime).toEqual({ sandbox: { enabled: false } });
  });

  it('round-trips: the edits of a config change nothing', () => {
    const config: AgentConfig = { schemaVersion: 1, instructions: '', runtime: { sandbox: { enabled: false } } };
    expect(applyEdits(config, editsOf(config))).toEqual(config);
    const allowlist: AgentConfig = {
      schemaVersion: 1,
      runtime: {
        sandbox: { enabled: true, network: { mode: 'allowlist', allow: ['api.example.com', '*.example.org'] } },
      },
    };
    expect(applyEdits(allowlist, editsOf(allowlist))).toEqual(allowlist);
  });
});

describe('applyEdits: the network policy', () => {
  const edits = (network: NetworkEdits) => ({ instructions: '', model: '', sandboxEnabled: false, network });

  it('writes an allowlist from the text, one entry a line, with the switch the schema needs beside it', () => {
    const next = applyEdits(
      { schemaVersion: 1 },
      edits({ mode: 'allowlist', allowText: 'api.example.com\n\n  files.example.net:8443 \n' }),
    );
    expect(next.runtime).toEqual({
      sandbox: { enabled: false, network: { mode: 'allowlist', allow: ['api.example.com', 'files.example.net:8443'] } },
    });
  });

  it('sends no entries for the package index mode, keeping the text in the editor only', () => {
    const next = applyEdits({ schemaVersion: 1 }, edits({ mode: 'packages', allowText: 'api.example.com' }));
    expect(next.runtime?.sandbox?.network).toEqual({ mode: 'packages' });
  });

  it('adds nothing for "No network" unless the base named a policy, which it then turns to none', () => {
    expect(applyEdits({ schemaVersion: 1 }, edits(NO_NETWORK))).toEqual({ schemaVersion: 1 });
    const base: AgentConfig = {
      schemaVersion: 1,
      runtime: { sandbox: { enabled: true, network: { mode: 'packages' } } },
    };
    expect(applyEdits(base, { ...edits(NO_NETWORK), sandboxEnabled: true }).runtime).toEqual({
      sandbox: { enabled: true, network: { mode: 'none' } },
    });
  });
});
