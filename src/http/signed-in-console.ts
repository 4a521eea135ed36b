import type { ConsoleSession } from '../admin/console-sessions.js';

/**
 * The signed-in console session a request's cookie names, with the cookie's secret: what
 * `consoleAuth` sets as `c.get('console')` on console routes.
 */
export interface SignedInConsole {
  session: ConsoleSession;
  secret: string;
}
