import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Kysely } from 'kysely';
import { getEffectiveConfig } from '../../agents/agent-configs.js';
import type { EgressConfig } from '../../config.js';
import type { DatabaseSchema } from '../../db/schema.js';
import { parseAuthority, parseRequestedHost, type RequestedHost } from '../../host-rules.js';
import type { Logger } from '../../logger.js';
import type { UsageSink } from '../../usage/usage-types.js';
import type { TunnelStream } from '../supervisor/tunnel-stream.js';
import { relayConnect } from './connect-tunnel.js';
import { createDestinationChecker, type ResolveAll } from './destinations.js';
import { decide, type EffectivePolicy, effectivePolicy, type RefusalReason } from './effective-policy.js';
import { createEgressLog, type EgressOwner } from './egress-log.js';
import { forwardRequest } from './forward-request.js';
import { type RecentRefusal, refusalPhrase, refusalResponse, refusalText } from './refusals.js';
import { createWorkspaceConnections } from './workspace-connections.js';

export interface EgressProxyOptions {
  db: Kysely<DatabaseSchema>;
  config: EgressConfig;
  logger: Logger;
  /** Counts decisions for `/metrics` (by decision and reason only). */
  observe?: (decision: 'allowed' | 'refused', reason: RefusalReason | null) => void;
  /** The resolver names are looked up with (default: the host's). */
  resolve?: ResolveAll;
  /** Where the bytes each workspace moves are metered (`egressBytes`), as they are counted. */
  usage?: UsageSink;
}

/** The policy proxy every sandboxed connection goes through: the only way out of a sandbox. */
export interface EgressProxy {
  /** Serves one connection a workspace's code opened to its way out. */
  serve(workspaceId: string, tunnel: TunnelStream): void;
  /** Refusals of the workspace's connections since `since` (epoch ms), newest last. */
  refusalsSince(workspaceId: string, since: number): RecentRefusal[];
  /** Why the proxy cannot serve, or undefined when it can (for `/readyz` and the gate). */
  problem(): Promise<string | undefined>;
  /** Closes every connection and refuses new ones. */
  close(): Promise<void>;
}

/** One connection being served: its workspace, and what was loaded for it when it arrived. */
interface Connection {
  workspaceId: string;
  /** The workspace's owner and policy, loaded once when the connection arrives. */
  context: Promise<ConnectionContext>;
}

interface ConnectionContext {
  owner: EgressOwner;
  policy: EffectivePolicy;
  /** Refused for the workspace's connection or daily byte cap, decided when it arrived. */
  overLimit: boolean;
}

/** How long the proxy's own readiness (can the package index be reached?) is trusted. */
const PROBLEM_TTL_MS = 15_000;

/**
 * A forward proxy, served over the tunnels supervisors carry (never a listening socket): `CONNECT
 * host:port` (TLS end to end, never intercepted) and absolute-form `http://` requests, to
 * destinations the workspace's effective policy allows — its agent's published network policy,
 * within the operator's ceiling, read when a connection arrives. The workspace is known by the
 * supervisor the connection came through, never by anything the sandboxed code says. Names are
 * resolved here, every address is checked (see `createDestinationChecker`), and the connection
 * goes to a checked address only. Per workspace: at most `maxConnections` open at once,
 * `bytesPerDay` a UTC day (counted in the database, so replicas agree; past it, open connections
 * are closed too), and a connection idle for `idleSeconds` is closed. Every decision is recorded
 * (see `createEgressLog`).
 */
export function createEgressProxy(options: EgressProxyOptions): EgressProxy {
  const { db, config, logger } = options;
  const log = createEgressLog(db);
  const destinations = createDestinationChecker({
    privateCidrs: config.privateCidrs,
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
  const connections = new WeakMap<TunnelStream, Connection>();
  const owners = new Map<string, Promise<EgressOwner>>();
  const { usage } = options;
  const workspaces = createWorkspaceConnections({
    db,
    config,
    logger,
    ...(usage
      ? {
          onCounted: (workspaceId: string, bytes: number, at: number) =>
            void ownerOf(workspaceId).then(
              ({ tenantId, agentId, userId }) => usage.add({ tenantId, agentId, userId }, { egressBytes: bytes }, at),
              () => undefined,
            ),
        }
      : {}),
  });
  let closed = false;

  const ownerOf = (workspaceId: string): Promise<EgressOwner> => {
    let owner = owners.get(workspaceId);
    if (!owner) {
      owner = db
        .selectFrom('workspaces')
        .select(['tenant_id', 'agent_id', 'user_id'])
        .where('id', '=', workspaceId)
        .executeTakeFirstOrThrow()
        .then((row) => ({ tenantId: row.tenant_id, agentId: row.agent_id, userId: row.user_id, workspaceId }));
      owner.catch(() => owners.delete(workspaceId));
      owners.set(workspaceId, owner);
      if (owners.size > 10_000) owners.clear();
    }
    return owner;
  };

  const record = (
    connection: Connection,
    entry: {
      host: string;
      port: number;
      address: string | null;
      decision: 'allowed' | 'refused';
      reason: RefusalReason | null;
      at: number;
      bytesUp?: number;
      bytesDown?: number;
    },
  ) => {
    options.observe?.(entry.decision, entry.reason);
    if (entry.decision === 'refused' && entry.reason) {
      workspaces.refused(connection.workspaceId, `${entry.host}:${entry.port}`, entry.reason);
    }
    void connection.context
      .then(({ owner }) =>
        log.record({
          owner,
          at: entry.at,
          host: entry.host,
          port: entry.port,
          address: entry.address,
          decision: entry.decision,
          reason: entry.reason,
          bytesUp: entry.bytesUp ?? 0,
          bytesDown: entry.bytesDown ?? 0,
          durationMs: entry.decision === 'allowed' ? Date.now() - entry.at : 0,
        }),
      )
      .catch((error: unknown) =>
        logger.error({ err: error, workspaceId: connection.workspaceId }, 'egress decision not recorded'),
      );
  };

  /** The recording of an allowed connection, once it is over and its bytes are known. */
  const recordAllowed =
    (connection: Connection, allowed: { host: string; port: number; address: string; at: number }) =>
    (bytes: { up: number; down: number }) =>
      record(connection, { ...allowed, decision: 'allowed', reason: null, bytesUp: bytes.up, bytesDown: bytes.down });

  const loadContext = async (workspaceId: string, overCap: boolean): Promise<ConnectionContext> => {
    const owner = await ownerOf(workspaceId);
    const published = await getEffectiveConfig(db, owner.agentId);
    const policy = effectivePolicy(config, owner.tenantId, published);
    const overLimit = overCap || (policy.mode !== 'none' && (await workspaces.exhausted(workspaceId)));
    return { owner, policy, overLimit };
  };

  /** Checks a requested destination; answers the refusal itself and returns undefined when refused. */
  const admit = async (
    connection: Connection,
    target: { host: string; port: number } | undefined,
  ): Promise<
    { requested: RequestedHost; address: string; family: 4 | 6 } | { refused: RefusalReason; address: string | null }
  > => {
    const context = await connection.context;
    const requested = target && parseRequestedHost(target.host, target.port);
    if (!requested) return { refused: 'policy', address: null };
    const decision = decide(context.policy, requested);
    if (!decision.allowed) return { refused: decision.reason, address: null };
    if (context.overLimit || closed) return { refused: 'limit', address: null };
    const destination = await destinations.check(requested);
    if (!destination.ok) return { refused: destination.reason, address: destination.address };
    return { requested, address: destination.address, family: destination.family };
  };

  const server = createServer({ requestTimeout: 0, headersTimeout: 30_000, keepAliveTimeout: 30_000 });

  server.on('connect', (request: IncomingMessage, socket: TunnelStream, head: Buffer) => {
    const connection = connections.get(socket);
    if (!connection) {
      socket.destroy();
      return;
    }
    const at = Date.now();
    const asked = request.url ?? '';
    const target = parseAuthority(asked);
    const shown = target ? target.host : asked;
    const port = target?.port ?? 0;
    void admit(connection, target).then(
      (admission) => {
        if ('refused' in admission) {
          record(connection, {
            host: shown,
            port,
            address: admission.address,
            decision: 'refused',
            reason: admission.refused,
            at,
          });
          socket.end(refusalResponse(target ? `${shown}:${port}` : asked, admission.refused));
          return;
        }
        relayConnect(
          socket,
          head,
          { address: admission.address, family: admission.family, port, target: `${shown}:${port}` },
          recordAllowed(connection, { host: shown, port, address: admission.address, at }),
        );
      },
      (error: unknown) => {
        logger.error({ err: error, workspaceId: connection.workspaceId }, 'egress connection failed');
        socket.destroy();
      },
    );
  });

  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const tunnel = request.socket as unknown as TunnelStream;
    const connection = connections.get(tunnel);
    if (!connection) {
      response.destroy();
      return;
    }
    const at = Date.now();
    const asked = request.url ?? '';
    let url: URL | undefined;
    try {
      url = /^[a-z][a-z0-9+.-]*:\/\//i.test(asked) ? new URL(asked) : undefined;
    } catch {
      url = undefined;
    }
    const refuse = (shownHost: string, port: number, reason: RefusalReason, address: string | null = null) => {
      record(connection, { host: shownHost, port, address, decision: 'refused', reason, at });
      const body = `${refusalText(`${shownHost}${port ? `:${port}` : ''}`, reason)}\n`;
      response.shouldKeepAlive = false;
      response.writeHead(403, refusalPhrase(`${shownHost}${port ? `:${port}` : ''}`), {
        'Content-Type': 'text/plain; charset=utf-8',
        'Content-Length': Buffer.byteLength(body),
      });
      response.end(body);
    };
    if (url?.protocol !== 'http:') {
      // Origin-form (a client that took the proxy for a server), https:// (that is CONNECT's), …
      const host = url?.hostname || request.headers.host || asked || '(no host)';
      refuse(
        host.replace(/^\[|\]$/g, ''),
        url ? Number(url.port || (url.protocol === 'https:' ? 443 : 80)) : 0,
        'method',
      );
      return;
    }
    const port = Number(url.port || 80);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    void admit(connection, { host, port }).then(
      (admission) => {
        if ('refused' in admission) {
          refuse(host, port, admission.refused, admission.address);
          return;
        }
        forwardRequest(request, response, {
          url,
          address: admission.address,
          family: admission.family,
          port,
          onDone: recordAllowed(connection, { host, port, address: admission.address, at }),
        });
      },
      (error: unknown) => {
        logger.error({ err: error, workspaceId: connection.workspaceId }, 'egress request failed');
        response.destroy();
      },
    );
  });

  server.on('clientError', (_error: Error, socket: TunnelStream) => {
    const connection = connections.get(socket);
    if (connection) {
      void connection.context
        .then(() =>
          record(connection, {
            host: '(malformed request)',
            port: 0,
            address: null,
            decision: 'refused',
            reason: 'method',
            at: Date.now(),
          }),
        )
        .catch(() => undefined);
    }
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    else socket.destroy();
  });

  /** Whether the package index, which every open policy includes, can be reached at all. */
  const checkProblem = async (): Promise<string | undefined> => {
    const index = new URL(config.packageIndexUrl);
    const requested = parseRequestedHost(
      index.hostname,
      Number(index.port || (index.protocol === 'https:' ? 443 : 80)),
    );
    if (!requested) return `the package index host ${index.hostname} is not a valid host`;
    const destination = await destinations.check(requested);
    if (!destination.ok) {
      return destination.reason === 'resolve_failed'
        ? `the package index host ${index.hostname} cannot be resolved`
        : `the package index host ${index.hostname} resolves to a refused address (${destination.address}); list it in MORDN_SANDBOX_EGRESS_PRIVATE_CIDRS`;
    }
    return undefined;
  };
  let problemCheck: { at: number; result: Promise<string | undefined> } | undefined;

  return {
    serve(workspaceId, tunnel) {
      if (closed) {
        tunnel.destroy();
        return;
      }
      const { overCap } = workspaces.open(workspaceId, tunnel);
      const connection: Connection = { workspaceId, context: loadContext(workspaceId, overCap) };
      connection.context.catch(() => tunnel.destroy());
      connections.set(tunnel, connection);
      server.emit('connection', tunnel);
    },

    refusalsSince(workspaceId, since) {
      return workspaces.refusalsSince(workspaceId, since);
    },

    async problem() {
      if (closed) return 'the egress proxy is shut down';
      if (!config.enabled) return undefined;
      if (problemCheck && performance.now() - problemCheck.at < PROBLEM_TTL_MS) return problemCheck.result;
      const result = checkProblem();
      problemCheck = { at: performance.now(), result };
      return result;
    },

    async close() {
      closed = true;
      await workspaces.close();
    },
  };
}
