/** Rename and delete controls shared by the tenant and agent pages. */
import { type FormEvent, useEffect, useRef, useState } from 'react';
import { useAction } from '../action.js';
import { ApiError, errorMessage } from '../api.js';
import { NameField } from './name-form.js';
import { Section, StatusText } from './ui.js';

/** Renames to the trimmed name, announcing "Renamed to …"; disabled while the name is unchanged. */
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
  const [name, setName] = useState(current);
  const { busy, status, error, setStatus, run } = useAction();

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const trimmed = name.trim();
    if (trimmed === '') return;
    void run(async () => {
      await onRename(trimmed);
      setStatus(`Renamed to ${trimmed}.`);
    });
  }

  return (
    <form className="inline-form" onSubmit={submit}>
      <NameField label={label} value={name} onChange={setName} />
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

const NOUNS = { tenant: 'Tenant', agent: 'Agent' } as const;

/** The "Settings" section of a tenant's or agent's page: rename, then delete. */
export function SettingsSection({
  noun,
  current,
  explanation,
  onRename,
  onDelete,
}: {
  noun: 'tenant' | 'agent';
  current: string;
  explanation: string;
  onRename: (name: string) => Promise<void>;
  onDelete: (force: boolean) => Promise<void>;
}) {
  return (
    <Section title="Settings">
      <RenameForm label={`${NOUNS[noun]} name`} button={`Rename ${noun}`} current={current} onRename={onRename} />
      <h3>Delete</h3>
      <DeleteControl noun={noun} explanation={explanation} onDelete={onDelete} />
    </Section>
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
