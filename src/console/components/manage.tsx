/** Rename and delete controls shared by the tenant and agent pages. */
import { type FormEvent, useEffect, useId, useRef, useState } from 'react';
import { ApiError, errorMessage } from '../api.js';
import { StatusText } from './ui.js';

export function RenameForm({
  label,
  button,
  current,
  onRename,
}: {
  label: string;
  button: string;
  current: string;
  onRename: (name: string) => Promise<void>;
}) {
  const id = useId();
  const [name, setName] = useState(current);
  const [busy, setBusy] = useState(false);
  const [status, setStatus] = useState('');
  const [error, setError] = useState<unknown>(null);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const trimmed = name.trim();
    if (trimmed === '') return;
    setBusy(true);
    setError(null);
    setStatus('');
    try {
      await onRename(trimmed);
      setStatus(`Renamed to ${trimmed}.`);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="inline-form" onSubmit={submit}>
      <div className="field">
        <label htmlFor={`${id}-name`}>{label}</label>
        <input
          id={`${id}-name`}
          value={name}
          required
          maxLength={200}
          onChange={(event) => setName(event.target.value)}
        />
      </div>
      <button type="submit" className="button" disabled={busy || name.trim() === '' || name.trim() === current}>
        {button}
      </button>
      <StatusText message={status} />
      {error === null ? null : (
        <div role="alert" className="alert alert-error">
          {errorMessage(error)}
        </div>
      )}
    </form>
  );
}

type Stage = 'idle' | 'confirm' | 'force';

/**
 * Delete with an inline confirmation; a 409 `ACTIVE_KEYS` shows the server's detail and offers
 * "Delete anyway (revokes keys)", which deletes with `?force=true`.
 */
export function DeleteControl({
  noun,
  explanation,
  onDelete,
}: {
  noun: 'tenant' | 'agent';
  explanation: string;
  onDelete: (force: boolean) => Promise<void>;
}) {
  const [stage, setStage] = useState<Stage>('idle');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const primary = useRef<HTMLButtonElement>(null);
  const opener = useRef<HTMLButtonElement>(null);
  const moved = useRef(false);

  useEffect(() => {
    if (!moved.current) return;
    (stage === 'idle' ? opener : primary).current?.focus();
  }, [stage]);

  function go(next: Stage) {
    moved.current = true;
    setStage(next);
  }

  async function run(force: boolean) {
    setBusy(true);
    setError(null);
    try {
      await onDelete(force);
    } catch (failure) {
      setError(failure);
      if (!force && failure instanceof ApiError && failure.code === 'ACTIVE_KEYS') go('force');
      setBusy(false);
    }
  }

  function cancel() {
    setError(null);
    go('idle');
  }

  return (
    <div className="danger-zone">
      <p>{explanation}</p>
      {error === null ? null : (
        <div role="alert" className="alert alert-error">
          {errorMessage(error)}
        </div>
      )}
      <div className="button-row">
        {stage === 'idle' ? (
          <button ref={opener} type="button" className="button button-danger" onClick={() => go('confirm')}>
            Delete {noun}
          </button>
        ) : null}
        {stage === 'confirm' ? (
          <>
            <span className="confirm-text">Delete this {noun} permanently?</span>
            <button
              ref={primary}
              type="button"
              className="button button-danger"
              disabled={busy}
              onClick={() => run(false)}
            >
              Confirm delete
            </button>
            <button type="button" className="button" onClick={cancel} disabled={busy}>
              Cancel
            </button>
          </>
        ) : null}
        {stage === 'force' ? (
          <>
            <button
              ref={primary}
              type="button"
              className="button button-danger"
              disabled={busy}
              onClick={() => run(true)}
            >
              Delete anyway (revokes keys)
            </button>
            <button type="button" className="button" onClick={cancel} disabled={busy}>
              Cancel
            </button>
          </>
        ) : null}
      </div>
    </div>
  );
}
