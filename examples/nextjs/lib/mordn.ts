import { createMordnHandler } from 'mordn/server/hosted';
import { getUserId } from '@/lib/session';

// A Mordn API on this machine (the quickstart's `npm start`) is reached over loopback; anywhere
// else it must be a public HTTPS origin.
const apiUrl = process.env.MORDN_API_URL ?? 'http://127.0.0.1:8787';
const loopback = /^http:\/\/(127\.0\.0\.1|\[::1\])(:\d+)?\/?$/.test(apiUrl);

/**
 * The one handler every chat route mounts (chat, uploads, history; resume; stop). It calls Mordn with the agent key, which never leaves
 * the server, on behalf of the user `getUserId` verified.
 */
export const mordn = createMordnHandler({
  apiKey: process.env.MORDN_CHAT_KEY ?? '',
  getUserId,
  ...(loopback ? { selfBaseUrl: apiUrl } : { baseUrl: apiUrl }),
  streamTimeoutMs: 120_000,
});
