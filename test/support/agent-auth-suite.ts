import { describe, expect, it } from 'vitest';
import { createApiKey, revokeApiKey } from '../../src/auth/api-keys.js';
import type { Permission } from '../../src/auth/permissions.js';
import type { AgentFixture } from './fixtures.js';
import { rawRequest } from './http.js';
import type { TestService } from './service.js';

/** An agent route joining the shared authentication suite. */
export interface AgentRouteUnderTest {
  method: string;
  /** Path (and query) of a request that would succeed with valid credentials. */
  path: string;
  permission: Permission;
  /** Sandbox-related routes refuse `anon:` users. */
  rejectsAnonymous?: boolean;
  /** Headers besides credentials (e.g. Content-Type) and a body for a request that would succeed. */
  headers?: Record<string, string>;
  body?: string;
  /** The `WWW-Authenticate` a request without credentials gets; default `Bearer`. */
  challenge?: (service: TestService) => string;
  /**
   * A snapshot of everything the route could change (rows, files, provisioned workspaces). Taken
   * before and after each refused request; the two must be equal.
   */
  effects?: () => Promise<unknown>;
}

export interface AuthSuiteContext {
  service: TestService;
  fixture: AgentFixture;
}

const UNKNOWN_KEY = `mordn_${'A'.repeat(43)}`;

/**
 * The UTF-8 bytes of `text` as a header value node:http writes byte for byte (it sends each
 * character of a header value as one latin1 byte), as a browser or proxy forwarding raw UTF-8 would.
 */
export function utf8HeaderBytes(text: string): string {
  return Buffer.from(text, 'utf8').toString('latin1');
}

/**
 * The one authentication suite every agent route joins: missing, malformed, unknown and revoked
 * keys; a read-only key on a write route; missing, empty, overlong, duplicated, comma-joined and
 * non-printable users (control bytes, non-ASCII spaces, raw UTF-8); `anon:` users of any letter
 * case where the route refuses them. Each refusal is a problem+json with a stable
 * code, and (where the route provides a probe) leaves nothing behind.
 */
export function describeAgentAuth(route: AgentRouteUnderTest, context: () => AuthSuiteContext): void {
  let effectsBefore: unknown;
  const send = async (credentials: Array<[string, string]>) => {
    const { service } = context();
    const extra = Object.entries(route.headers ?? {});
    effectsBefore = await route.effects?.();
    return rawRequest(`${service.url}${route.path}`, {
      method: route.method,
      headers: [...extra, ...credentials],
      ...(route.body === undefined ? {} : { body: route.body }),
    });
  };
  const expectProblem = async (
    response: Awaited<ReturnType<typeof send>>,
    status: number,
    code: string,
  ): Promise<void> => {
    expect(response.status).toBe(status);
    expect(response.headers['content-type']).toBe('application/problem+json');
    const problem = JSON.parse(response.body);
    expect(problem).toMatchObject({ status, code });
    expect(problem.requestId).toBe(response.headers['x-request-id']);
    if (route.effects) expect(await route.effects()).toEqual(effectsBefore);
  };
  const withKey = (key: string, users: string[] = ['user-1']): Array<[string, string]> => [
    ['Authorization', `Bearer ${key}`],
    ...users.map((user): [string, string] => ['X-Chat-User', user]),
  ];

  describe(`agent authentication: ${route.method} ${route.path}`, () => {
    it('refuses a request without a key (401 MISSING_API_KEY, Bearer challenge)', async () => {
      const response = await send([['X-Chat-User', 'user-1']]);
      expect(response.headers['www-authenticate']).toBe(route.challenge?.(context().service) ?? 'Bearer');
      await expectProblem(response, 401, 'MISSING_API_KEY');
    });

    it.each([
      ['a non-Bearer scheme', `Basic ${Buffer.from('a:b').toString('base64')}`],
      ['a token that is not a key', 'Bearer not-a-mordn-key'],
      ['a truncated key', `Bearer ${UNKNOWN_KEY.slice(0, -1)}`],
      ['two tokens', `Bearer ${UNKNOWN_KEY} ${UNKNOWN_KEY}`],
    ])('refuses %s (401 INVALID_API_KEY)', async (_name, authorization) => {
      await expectProblem(
        await send([
          ['Authorization', authorization],
          ['X-Chat-User', 'user-1'],
        ]),
        401,
        'INVALID_API_KEY',
      );
    });

    it('refuses a well-formed but unknown key (401 INVALID_API_KEY)', async () => {
      await expectProblem(await send(withKey(UNKNOWN_KEY)), 401, 'INVALID_API_KEY');
    });

    it('refuses a revoked key from the next request on (401 INVALID_API_KEY)', async () => {
      const { service, fixture } = context();
      const issued = await createApiKey(service.database.db, fixture.agentId, ['read', 'write']);
      const before = await send(withKey(issued.key));
      expect(before.status).not.toBe(401);
      await revokeApiKey(service.database.db, issued.id);
      await expectProblem(await send(withKey(issued.key)), 401, 'INVALID_API_KEY');
    });

    if (route.permission === 'write') {
      it('refuses a read-only key (403 INSUFFICIENT_PERMISSION)', async () => {
        await expectProblem(await send(withKey(context().fixture.readKey)), 403, 'INSUFFICIENT_PERMISSION');
      });
    } else {
      it('accepts a read-only key', async () => {
        const response = await send(withKey(context().fixture.readKey));
        expect([400, 401, 403]).not.toContain(response.status);
      });
    }

    it('refuses a missing user (400 MISSING_USER)', async () => {
      await expectProblem(await send(withKey(context().fixture.key, [])), 400, 'MISSING_USER');
    });

    it.each([
      ['an empty user', ['']],
      ['a 257-character user', ['u'.repeat(257)]],
      ['a duplicated user header', ['user-1', 'user-2']],
      ['the same user header twice', ['user-1', 'user-1']],
      ['a user with a tab', ['user\t1']],
      ['a user with a non-ASCII byte', ['user-\u00e9']],
      ['a user with a trailing no-break space byte', ['user-1\u00a0']],
      ['a user with a leading no-break space byte', ['\u00a0user-1']],
      ['a user with the UTF-8 bytes of a no-break space', [utf8HeaderBytes('user-1\u00a0')]],
      ['a user with the UTF-8 bytes of an em space', [utf8HeaderBytes('user\u20031')]],
      ['a user with the UTF-8 bytes of a zero-width space', [utf8HeaderBytes('user-1\u200b')]],
      ['a user with the UTF-8 bytes of an accented letter', [utf8HeaderBytes('user-\u00e9')]],
      ['a user with a comma', ['user-1,user-2']],
      ['a user that looks like two joined headers', ['user-1, user-1']],
    ])('refuses %s (400 INVALID_USER)', async (_name, users) => {
      await expectProblem(await send(withKey(context().fixture.key, users)), 400, 'INVALID_USER');
    });

    it('accepts a 256-character user', async () => {
      const response = await send(withKey(context().fixture.key, ['u'.repeat(256)]));
      expect([400, 401, 403]).not.toContain(response.status);
    });

    if (route.rejectsAnonymous) {
      it.each(['anon:visitor-1', 'ANON:visitor-1', 'Anon:visitor-1', 'aNoN:'])(
        'refuses the anonymous user %s (403 ANONYMOUS_USER)',
        async (user) => {
          await expectProblem(await send(withKey(context().fixture.key, [user])), 403, 'ANONYMOUS_USER');
        },
      );
    }
  });
}
