import { z } from 'zod';
import { formatHostRule, parseHostRule } from '../host-rules.js';

/** Largest upload any agent may advertise or accept (the managed ceiling). */
export const MAX_UPLOAD_BYTES = 10 * 1024 * 1024;

const PickerAccept = z
  .string()
  .regex(
    /^(?:[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/(?:\*|[a-z0-9][a-z0-9!#$&^_.+-]{0,126})|\.[a-z0-9]{1,16})$/,
    'must be a MIME type (type/subtype or type/*) or an extension like .csv',
  );

/** Entries an allowlist may hold. */
export const MAX_ALLOW_ENTRIES = 64;

/** One allowlist entry, stored normalised (IDNA, lower case, canonical IP literal). */
const AllowEntry = z
  .string()
  .max(300, 'must be at most 300 characters')
  .transform((entry, context) => {
    const rule = parseHostRule(entry);
    if ('error' in rule) {
      context.addIssue({ code: 'custom', message: `${JSON.stringify(entry)} ${rule.error}` });
      return z.NEVER;
    }
    return formatHostRule(rule);
  });

const NETWORK_MODES = ['none', 'packages', 'allowlist'] as const;

/**
 * What a workspace's code may reach, when the operator lets egress out at all: `none` (also what
 * absence means), `packages` (the operator's package index) or `allowlist` (those hosts, and the
 * package index).
 */
export const NetworkPolicySchema = z.discriminatedUnion(
  'mode',
  [
    z.strictObject({ mode: z.literal('none') }),
    z.strictObject({ mode: z.literal('packages') }),
    z.strictObject({
      mode: z.literal('allowlist'),
      allow: z
        .array(AllowEntry)
        .max(MAX_ALLOW_ENTRIES, `must hold at most ${MAX_ALLOW_ENTRIES} entries`)
        .describe('Host names, "*." wildcards or IP literals, each with an optional port.'),
    }),
  ],
  { error: () => `mode must be one of ${NETWORK_MODES.join(', ')}` },
);

export type NetworkPolicy = z.output<typeof NetworkPolicySchema>;

/**
 * An agent's configuration, `schemaVersion: 1`. Strict at every level: an unknown key is an error,
 * so provider, credential, workspace, scope or bring-your-own selectors cannot be smuggled in.
 * The service's operator decides provider and credentials; the agent only picks a model id.
 */
export const AgentConfigSchema = z.strictObject({
  schemaVersion: z.literal(1),
  model: z
    .string()
    .regex(/^[A-Za-z0-9._:/@-]{1,200}$/, 'must be a model id of up to 200 characters')
    .optional()
    .describe("Model id for the operator's configured provider; omit to use the operator default."),
  instructions: z.string().max(32_000).optional().describe('System instructions for the model.'),
  attachments: z
    .strictObject({
      enabled: z.boolean().optional().describe('Whether the widget shows the attach button (default true).'),
      accept: z
        .array(PickerAccept)
        .max(50)
        .optional()
        .describe('Narrows the picker; intersected with the server policy, never widening it.'),
      maxBytes: z
        .number()
        .int()
        .positive()
        .max(MAX_UPLOAD_BYTES)
        .optional()
        .describe('Narrows the per-file size limit; never widens the server policy.'),
    })
    .optional(),
  runtime: z
    .strictObject({
      sandbox: z
        .strictObject({
          enabled: z.boolean().describe('Opts the agent into managed sandboxes (the operator must also allow it).'),
          network: NetworkPolicySchema.optional().describe(
            "What the workspace's code may reach over the network (default none); the operator must also allow egress.",
          ),
        })
        .optional(),
    })
    .optional(),
});

export type AgentConfig = z.output<typeof AgentConfigSchema>;

/** What an agent runs with before anything is published: sandboxes off. */
export const DEFAULT_AGENT_CONFIG: AgentConfig = {
  schemaVersion: 1,
  instructions: 'You are a helpful assistant.',
  runtime: { sandbox: { enabled: false } },
};

/** The network policy a config asks for (`none` when it says nothing). */
export function requestedNetworkPolicy(config: AgentConfig): NetworkPolicy {
  return config.runtime?.sandbox?.network ?? { mode: 'none' };
}

/** Whether the (published) config opts the agent into managed sandboxes. Absent means off. */
export function isSandboxEnabled(config: AgentConfig): boolean {
  return config.runtime?.sandbox?.enabled === true;
}
