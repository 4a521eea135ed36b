/**
 * The console session: `GET /console/api/session` on load decides between sign-in and the app.
 * Only the CSRF token is kept, in React state; the admin token is sent once and forgotten.
 */
import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from 'react';
import { type Api, ApiError, createApi, errorMessage, request } from './api.js';
import { SignInPage } from './pages/sign-in.js';
import type { ConsoleSession } from './types.js';

const SESSION_PATH = '/console/api/session';

export interface SessionValue {
  session: ConsoleSession;
  api: Api;
  signOut: () => Promise<void>;
}

const SessionContext = createContext<SessionValue | null>(null);

export function useSession(): SessionValue {
  const value = useContext(SessionContext);
  if (value === null) throw new Error('useSession outside <SessionRoot>');
  return value;
}

/** The shorthand for the bound API client. */
export function useApi(): Api {
  return useSession().api;
}

type State =
  | { phase: 'loading' }
  | { phase: 'signed-out'; notice: string; error: string }
  | { phase: 'signed-in'; session: ConsoleSession };

const SIGNED_OUT: Extract<State, { phase: 'signed-out' }> = { phase: 'signed-out', notice: '', error: '' };

/** setTimeout's ceiling (about 24.8 days). */
const MAX_DELAY = 2_147_483_647;

export function SessionRoot({ children }: { children: ReactNode }) {
  const [state, setState] = useState<State>({ phase: 'loading' });

  useEffect(() => {
    let live = true;
    request<ConsoleSession>(SESSION_PATH).then(
      (session) => {
        if (live) setState({ phase: 'signed-in', session });
      },
      (error: unknown) => {
        if (!live) return;
        if (error instanceof ApiError && error.status === 401) setState(SIGNED_OUT);
        else setState({ phase: 'signed-out', notice: '', error: errorMessage(error) });
      },
    );
    return () => {
      live = false;
    };
  }, []);

  const ended = useCallback(() => {
    setState((current) =>
      current.phase === 'signed-in'
        ? { phase: 'signed-out', notice: 'Your session ended. Sign in again to continue.', error: '' }
        : current,
    );
  }, []);

  // Back to sign-in when the session expires, without waiting for the next request to fail.
  const expiresAt = state.phase === 'signed-in' ? state.session.expiresAt : null;
  useEffect(() => {
    if (expiresAt === null) return;
    const left = new Date(expiresAt).getTime() - Date.now();
    if (Number.isNaN(left)) return;
    const timer = window.setTimeout(ended, Math.min(Math.max(left, 0), MAX_DELAY));
    return () => window.clearTimeout(timer);
  }, [expiresAt, ended]);

  const signIn = useCallback(async (token: string) => {
    try {
      const session = await request<ConsoleSession>(SESSION_PATH, { method: 'POST', body: { token } });
      setState({ phase: 'signed-in', session });
    } catch (error) {
      setState({ phase: 'signed-out', notice: '', error: errorMessage(error) });
    }
  }, []);

  const csrfToken = state.phase === 'signed-in' ? state.session.csrfToken : null;
  const api = useMemo(() => (csrfToken === null ? null : createApi(csrfToken, ended)), [csrfToken, ended]);

  const signOut = useCallback(async () => {
    if (csrfToken === null) return;
    try {
      await request<void>(SESSION_PATH, { method: 'DELETE', csrfToken });
      setState({ phase: 'signed-out', notice: 'Signed out.', error: '' });
    } catch (error) {
      if (error instanceof ApiError && error.status === 401)
        setState({ phase: 'signed-out', notice: 'Signed out.', error: '' });
      else throw error;
    }
  }, [csrfToken]);

  const value = useMemo(
    () => (state.phase === 'signed-in' && api !== null ? { session: state.session, api, signOut } : null),
    [state, api, signOut],
  );

  if (state.phase === 'loading') {
    return (
      <main className="loading-screen">
        <p role="status">Loading the console…</p>
      </main>
    );
  }
  if (value === null) {
    const signedOut = state.phase === 'signed-out' ? state : SIGNED_OUT;
    return <SignInPage notice={signedOut.notice} error={signedOut.error} onSignIn={signIn} />;
  }
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}
