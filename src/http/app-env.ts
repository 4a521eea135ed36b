import type { HttpBindings } from '@hono/node-server';
import type { AdminActor } from '../admin/audit-log.js';
import type { AgentPrincipal } from '../auth/permissions.js';
import type { ErrorCode } from '../errors.js';
import type { SandboxToolName } from '../sandbox-tool-names.js';
import type { SignedInConsole } from './signed-in-console.js';

/**
 * Hono environment of the service. `Bindings` are present when served by `@hono/node-server` and
 * absent under `app.request()` or other runtimes, so code reading them must not assume them.
 */
export interface AppEnv {
  Bindings: Partial<HttpBindings>;
  Variables: {
    requestId: string;
    /** Set by the agent authentication middleware. */
    principal: AgentPrincipal;
    /** Set by the admin authentication: the admin token's digest or the console session. */
    adminActor: AdminActor;
    /** Set on console routes: the signed-in session and its cookie's secret. */
    console: SignedInConsole;
    /**
     * Set by the MCP endpoint's authentication: the sandbox tools this credential reaches (all
     * six for an agent key, the token's subset for a per-user token).
     */
    sandboxTools: readonly SandboxToolName[];
    /** The stable code of the problem the request was answered with, for the access log line. */
    errorCode: ErrorCode;
    /**
     * Set by a route answering a client's capability probe (the MCP client's GET for an event
     * stream): its access line is debug-level and it is counted apart from the request metrics.
     */
    probe: boolean;
  };
}
