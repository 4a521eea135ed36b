import { type FormEvent, useId, useState } from 'react';
import { ErrorAlert, PageHeading, StatusText } from '../components/ui.js';
import { useDocumentTitle } from '../hooks.js';

export interface SignInPageProps {
  notice: string;
  error: string;
  onSignIn: (token: string) => Promise<void>;
}

/** The admin token is sent once to open a session and cleared from the field straight away. */
export function SignInPage({ notice, error, onSignIn }: SignInPageProps) {
  useDocumentTitle('');
  const id = useId();
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const sent = token;
    setToken('');
    if (sent.trim() === '') return;
    setBusy(true);
    try {
      await onSignIn(sent);
    } finally {
      setBusy(false);
    }
  }

  return (
    <div className="sign-in-layout">
      <header className="sign-in-brand">
        <span className="brand-mark" aria-hidden="true">
          M
        </span>
        <span className="brand-name">Mordn console</span>
      </header>
      <main className="sign-in-card">
        <PageHeading>Sign in</PageHeading>
        <p className="muted">
          Sign in with the operator's admin token. It is used once to open a session and is not stored.
        </p>
        <StatusText message={busy ? 'Signing in…' : notice} />
        <ErrorAlert error={error === '' ? null : error} />
        <form className="form-stack" onSubmit={submit}>
          <div className="field">
            <label htmlFor={`${id}-token`}>Admin token</label>
            <input
              id={`${id}-token`}
              type="password"
              autoComplete="off"
              spellCheck={false}
              required
              value={token}
              onChange={(event) => setToken(event.target.value)}
            />
          </div>
          <button type="submit" className="button button-primary" disabled={busy}>
            Sign in
          </button>
        </form>
      </main>
    </div>
  );
}
