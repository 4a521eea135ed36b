/**
 * What the service meters, per tenant, agent, user and UTC day. Every counter only grows; a
 * recorder adds deltas to the day's row, so replicas add their own work and never count twice.
 */
export interface UsageOwner {
  tenantId: string;
  agentId: string;
  userId: string;
}

/** The counters of one usage row, in the order the usage API lists them. */
export const USAGE_COUNTERS = [
  'inputTokens',
  'outputTokens',
  'reasoningTokens',
  'cachedInputTokens',
  'turns',
  'turnsWithoutUsage',
  'toolCalls',
  'sandboxCpuSeconds',
  'sandboxMemoryGibSeconds',
  'diskGibHours',
  'artifactBytesPublished',
  'artifactBytesDownloaded',
  'egressBytes',
] as const;

export type UsageCounter = (typeof USAGE_COUNTERS)[number];

/** Amounts to add to a row; counters left out add nothing. */
export type UsageDelta = Partial<Record<UsageCounter, number>>;

/**
 * Where metered amounts go. `add` never throws: a failed write is logged and the work it
 * measured goes on (usage is a report, not a gate; limits read what did get written).
 */
export interface UsageSink {
  add(owner: UsageOwner, delta: UsageDelta, at?: number): void;
}
