/** View and edit a tenant's or agent's limits (`GET`/`PUT …/limits`); empty fields are unlimited. */
import { type FormEvent, useId, useState } from 'react';
import { useAction } from '../action.js';
import { ApiError, type FieldProblem } from '../api.js';
import { useResource } from '../hooks.js';
import {
  describeDraft,
  describeLimit,
  LIMIT_FIELDS,
  type LimitsDraft,
  limitsDraft,
  parseLimitsDraft,
  splitFieldErrors,
} from '../limits.js';
import { useApi } from '../session.js';
import type { Limits } from '../types.js';
import { ResourceView } from './resource-view.js';
import { StatusText } from './ui.js';

/**
 * The loaded limits at `path` and the form that saves them there. With `outerPath` (an agent's
 * tenant), each field also says what that outer limit is, since the lower of the two applies.
 */
export function LimitsEditor({ path, label, outerPath }: { path: string; label: string; outerPath?: string }) {
  const api = useApi();
  const limits = useResource<Limits>(path, () => api.get<Limits>(path));
  // The outer limits are a hint only: when they cannot be read, the form works without them.
  const outer = useResource<Limits | null>(`outer:${outerPath ?? ''}`, () =>
    outerPath === undefined ? Promise.resolve(null) : api.get<Limits>(outerPath).catch(() => null),
  );
  return (
    <ResourceView resource={limits}>
      {(data) => (
        <LimitsForm
          initial={data}
          label={label}
          outer={outer.data ?? null}
          onSave={async (body) => {
            const saved = await api.put<Limits>(path, body);
            limits.set(saved);
            return saved;
          }}
        />
      )}
    </ResourceView>
  );
}

/** "Unlimited." from "Unlimited"; nothing for nothing. */
function sentence(text: string): string {
  return text === '' ? '' : `${text}.`;
}

function LimitsForm({
  initial,
  label,
  outer,
  onSave,
}: {
  initial: Limits;
  label: string;
  outer: Limits | null;
  onSave: (limits: Limits) => Promise<Limits>;
}) {
  const id = useId();
  const [draft, setDraft] = useState<LimitsDraft>(() => limitsDraft(initial));
  const [invalid, setInvalid] = useState<FieldProblem[]>([]);
  const action = useAction();

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const parsed = parseLimitsDraft(draft);
    if (!parsed.ok) {
      setInvalid(parsed.errors);
      action.setError(null);
      action.setStatus('');
      return;
    }
    setInvalid([]);
    void action.run(async () => {
      const saved = await onSave(parsed.limits);
      setDraft(limitsDraft(saved));
      action.setStatus('Limits saved.');
    });
  }

  const failure = action.error;
  const serverErrors = failure instanceof ApiError ? failure.fieldErrors : [];
  const { byField, other } = splitFieldErrors(invalid.length > 0 ? invalid : serverErrors);
  const alert =
    invalid.length > 0
      ? 'Correct the highlighted limits.'
      : failure === null
        ? ''
        : failure instanceof ApiError
          ? [
              failure.detail,
              ...other.map((each) => (each.path === '' ? each.message : `${each.path}: ${each.message}`)),
            ].join(' ')
          : failure instanceof Error
            ? failure.message
            : 'Something went wrong.';

  return (
    <form className="form-stack" aria-label={label} onSubmit={submit} noValidate>
      <div className="limits-grid">
        {LIMIT_FIELDS.map((field) => {
          const errors = byField[field.name] ?? [];
          const inputId = `${id}-${field.name}`;
          return (
            <div className="field" key={field.name}>
              <label htmlFor={inputId}>{field.label}</label>
              <input
                id={inputId}
                name={field.name}
                inputMode="numeric"
                autoComplete="off"
                placeholder="Unlimited"
                value={draft[field.name]}
                aria-invalid={errors.length > 0 ? true : undefined}
                aria-describedby={`${inputId}-hint${errors.length > 0 ? ` ${inputId}-errors` : ''}`}
                onChange={(event) => setDraft((current) => ({ ...current, [field.name]: event.target.value }))}
              />
              <p className="hint" id={`${inputId}-hint`}>
                {field.hint} {sentence(describeDraft(field, draft[field.name]))}
                {outer === null ? null : ` Tenant limit: ${describeLimit(field, outer[field.name])}.`}
              </p>
              {errors.length > 0 ? (
                <ul className="field-errors" id={`${inputId}-errors`}>
                  {errors.map((message) => (
                    <li key={message}>{message}</li>
                  ))}
                </ul>
              ) : null}
            </div>
          );
        })}
      </div>
      <div className="button-row">
        <button type="submit" className="button button-primary" disabled={action.busy}>
          Save limits
        </button>
      </div>
      <StatusText message={action.status} />
      {alert === '' ? null : (
        <div role="alert" className="alert alert-error">
          {alert}
        </div>
      )}
    </form>
  );
}
