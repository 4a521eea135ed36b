/** Applying the console's editor fields to an agent configuration, keeping every other field. Pure. */
import { type NetworkEdits, networkEditsOf, networkPolicyOf } from './network-policy.js';
import type { AgentConfig } from './types.js';

export interface ConfigEdits {
  instructions: string;
  model: string;
  sandboxEnabled: boolean;
  network: NetworkEdits;
}

/** The configuration a new draft starts from: the draft, else the published one, else the minimum. */
export function startingConfig(draft: AgentConfig | null, published: AgentConfig | null): AgentConfig {
  return structuredClone(draft ?? published ?? { schemaVersion: 1 });
}

export function editsOf(config: AgentConfig): ConfigEdits {
  return {
    instructions: typeof config.instructions === 'string' ? config.instructions : '',
    model: typeof config.model === 'string' ? config.model : '',
    sandboxEnabled: config.runtime?.sandbox?.enabled === true,
    network: networkEditsOf(config.runtime?.sandbox?.network),
  };
}

/**
 * `base` with the edited fields set. An empty model is removed (the operator default applies); an
 * empty instruction text is kept only if the base had one; the sandbox switch is written when it
 * is on or the base already said, and so is the network policy (with the switch beside it, which
 * the schema requires).
 */
export function applyEdits(base: AgentConfig, edits: ConfigEdits): AgentConfig {
  const next: AgentConfig = structuredClone(base);
  if (edits.instructions !== '' || typeof base.instructions === 'string') next.instructions = edits.instructions;
  const model = edits.model.trim();
  if (model === '') delete next.model;
  else next.model = model;
  const hadSwitch = typeof base.runtime?.sandbox?.enabled === 'boolean';
  const writeNetwork = edits.network.mode !== 'none' || base.runtime?.sandbox?.network !== undefined;
  if (edits.sandboxEnabled || hadSwitch || writeNetwork) {
    next.runtime = {
      ...(next.runtime ?? {}),
      sandbox: {
        ...(next.runtime?.sandbox ?? {}),
        enabled: edits.sandboxEnabled,
        ...(writeNetwork ? { network: networkPolicyOf(edits.network) } : {}),
      },
    };
  }
  return next;
}
