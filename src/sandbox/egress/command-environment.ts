import type { CommandEnvironment } from '../supervisor/supervisor-pool.js';
import type { EffectivePolicy } from './effective-policy.js';

/** What "no proxy" covers: the sandbox's own loopback only (a server the code starts inside). */
const NO_PROXY = 'localhost,127.0.0.1,::1';
/** The sandbox's PATH, with pip's `--user` scripts (in the persistent workspace) first. */
const PATH_WITH_USER_SCRIPTS = '/workspace/.local/bin:/usr/local/bin:/usr/bin:/bin';

/**
 * The variables a command gets when its workspace's policy opens a network: both spellings of
 * the proxy variables pointing at the way out inside the sandbox, and pip pointed at the
 * operator's index (trusted when it is plain http), installing into the persistent workspace
 * (`--user`, which Debian's pip allows only with `PIP_BREAK_SYSTEM_PACKAGES`) without a cache.
 * Undefined with `none`: the command then names no proxy, and nothing it does leaves the sandbox.
 *
 * @example
 * backend.exec(workspaceId, { command, timeoutMs, maxOutputBytes, environment: commandEnvironment(policy) });
 */
export function commandEnvironment(policy: EffectivePolicy): CommandEnvironment | undefined {
  if (policy.mode === 'none') return undefined;
  const index = new URL(policy.packageIndexUrl);
  const trusted: Record<string, string> = index.protocol === 'http:' ? { PIP_TRUSTED_HOST: index.host } : {};
  return ({ proxyPort }) => {
    const proxy = `http://127.0.0.1:${proxyPort}`;
    return {
      HTTP_PROXY: proxy,
      HTTPS_PROXY: proxy,
      http_proxy: proxy,
      https_proxy: proxy,
      NO_PROXY,
      no_proxy: NO_PROXY,
      PIP_INDEX_URL: policy.packageIndexUrl,
      ...trusted,
      PIP_BREAK_SYSTEM_PACKAGES: '1',
      PIP_NO_CACHE_DIR: '1',
      PIP_DISABLE_PIP_VERSION_CHECK: '1',
      PATH: PATH_WITH_USER_SCRIPTS,
    };
  };
}
