/**
 * How large an answer of the MCP endpoint may be on the wire: the whole HTTP body, JSON-RPC
 * envelope and any event-stream framing included, is at most 1 MiB (what `createHostedSandboxes`
 * reads) and at most the operator's output limit plus `MCP_FRAMING_ALLOWANCE_BYTES`.
 */
export const MAX_MCP_RESPONSE_BYTES = 1024 * 1024;

/**
 * Room kept for what surrounds a tool result: the JSON-RPC envelope and its id, SSE framing and the
 * transport's keep-alive comments (13 bytes every 15 s) when the answer is an event stream. Live
 * output is not in it: it takes its share of the result's budget (see `progressBudget`).
 */
export const MCP_FRAMING_ALLOWANCE_BYTES = 4096;

/**
 * The longest JSON-RPC id accepted, as JSON. Ids are echoed in the answer, so an unbounded one
 * would carry the answer past its bound; clients use counters or UUIDs.
 */
export const MAX_JSON_RPC_ID_BYTES = 256;

/**
 * The most bytes a serialized tool result (`CallToolResult`) may take: the operator's output
 * limit, and never so much that the envelope and framing would not fit in 1 MiB.
 *
 * @example
 * toolResultBudget(config.sandbox.maxOutputBytes); // 1_044_480 with the default 1 MiB
 */
export function toolResultBudget(maxOutputBytes: number): number {
  return Math.min(maxOutputBytes, MAX_MCP_RESPONSE_BYTES - MCP_FRAMING_ALLOWANCE_BYTES);
}

/** Whether a JSON-RPC id is small enough to echo (absent ids, as in notifications, are). */
export function isEchoableId(id: unknown): boolean {
  return id === undefined || Buffer.byteLength(JSON.stringify(id) ?? '') <= MAX_JSON_RPC_ID_BYTES;
}
