/** The name field, and the "create by name" form of the tenants and agents lists. */
import { type FormEvent, useId, useState } from 'react';
import { useAction } from '../action.js';
import { ErrorAlert, StatusText } from './ui.js';

/** A labelled, required text input for a tenant's or agent's name. */
export function NameField({
  label,
  value,
  onChange,
}: {
  label: string;
  value: string;
  onChange: (value: string) => void;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={`${id}-name`}>{label}</label>
      <input
        id={`${id}-name`}
        value={value}
        required
        maxLength={200}
        onChange={(event) => onChange(event.target.value)}
      />
    </div>
  );
}

/** Creates by the trimmed name; `onCreate` returns the status to announce, and the field is cleared. */
export function CreateByNameForm({
  label,
  button,
  onCreate,
}: {
  label: string;
  button: string;
  onCreate: (name: string) => Promise<string>;
}) {
  const [name, setName] = useState('');
  const action = useAction();

  function create(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const trimmed = name.trim();
    if (trimmed === '') return;
    void action.run(async () => {
      const status = await onCreate(trimmed);
      setName('');
      action.setStatus(status);
    });
  }

  return (
    <>
      <form className="inline-form" onSubmit={create}>
        <NameField label={label} value={name} onChange={setName} />
        <button type="submit" className="button button-primary" disabled={action.busy}>
          {button}
        </button>
      </form>
      <StatusText message={action.status} />
      <ErrorAlert error={action.error} />
    </>
  );
}
