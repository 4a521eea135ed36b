import type { AgentPrincipal } from '../auth/permissions.js';
import type { ExchangeTransport } from '../net/bounded-response.js';

/**
 * The key under which an in-process caller hands the app a principal it has authorized itself
 * (the web console's preview chat). A symbol in the request's environment: no HTTP request can
 * carry it, only code holding the app can.
 */
const TRUSTED_PRINCIPAL = Symbol('mordn.trustedPrincipal');

/** The principal an in-process caller attached to this request's environment, if any. */
export function trustedPrincipalOf(env: unknown): AgentPrincipal | undefined {
  if (typeof env !== 'object' || env === null) return undefined;
  return (env as { [TRUSTED_PRINCIPAL]?: AgentPrincipal })[TRUSTED_PRINCIPAL];
}

/** The origin in-process requests are addressed to: any literal loopback, since they never leave the process. */
export const IN_PROCESS_ORIGIN = 'http://127.0.0.1';

/** What can answer a request in process: the service's own Hono app. */
export interface InProcessApp {
  fetch(request: Request, env?: unknown): Response | Promise<Response>;
}

/**
 * A transport that answers API requests with the service's own app, in process, as `principal`:
 * every agent route takes it for the caller, instead of an agent key. Only routes behind
 * `agentAuth` honour it; `/v1/sandbox/mcp` still needs its own credential (a sandbox token).
 */
export function inProcessTransport(app: InProcessApp, principal: AgentPrincipal): ExchangeTransport {
  const env = { [TRUSTED_PRINCIPAL]: principal };
  return async (url, init) => app.fetch(new Request(url, init), env);
}
