import { type ReactNode, useId, useState } from 'react';
import { useAction } from '../action.js';
import { segment } from '../api.js';
import { ResourceView } from '../components/resource-view.js';
import { ErrorAlert, Section, StatusText } from '../components/ui.js';
import { applyEdits, type ConfigEdits, editsOf, startingConfig } from '../config.js';
import { describeDiff } from '../diff.js';
import { useResource } from '../hooks.js';
import { type AllowEntries, parseAllowText, splitNetworkProblems } from '../network-policy.js';
import { useApi } from '../session.js';
import type { AgentConfig, AgentConfigState } from '../types.js';
import { NetworkField } from './agent-network.js';

/**
 * The agent's draft and published configuration; `tenantId` is the agent's, for the operator's
 * network ceiling. `onPublished` hears of each publish (the preview's picker follows it).
 */
export function ConfigSection({
  agentId,
  tenantId,
  onPublished,
}: {
  agentId: string;
  tenantId: string;
  onPublished?: () => void;
}) {
  const api = useApi();
  const path = `/v1/admin/agents/${segment(agentId)}/config`;
  const config = useResource<AgentConfigState>(path, () => api.get<AgentConfigState>(path));
  return (
    <Section
      title="Configuration"
      description="Edit the draft, then publish it. Integrators' chats use the published configuration."
    >
      <ResourceView resource={config}>
        {(data) => (
          <ConfigEditor
            path={path}
            tenantId={tenantId}
            state={data}
            onChange={config.set}
            {...(onPublished ? { onPublished } : {})}
          />
        )}
      </ResourceView>
    </Section>
  );
}

function ConfigEditor({
  path,
  tenantId,
  state,
  onChange,
  onPublished,
}: {
  path: string;
  tenantId: string;
  state: AgentConfigState;
  onChange: (state: AgentConfigState) => void;
  onPublished?: () => void;
}) {
  const api = useApi();
  const id = useId();
  const base = startingConfig(state.draft, state.published);
  const [edits, setEdits] = useState<ConfigEdits>(() => editsOf(base));
  const { busy, status, error, setStatus, run } = useAction();
  // The allowlist as last sent: the server names a bad entry by its index in it.
  const [sent, setSent] = useState<AllowEntries>({ entries: [], lines: [] });
  const problems = splitNetworkProblems(error, sent);

  const next = applyEdits(base, edits);
  const unsaved = state.draft === null || JSON.stringify(next) !== JSON.stringify(state.draft);

  function edit(change: Partial<ConfigEdits>) {
    setEdits({ ...edits, ...change });
    setStatus('');
  }

  function save() {
    setSent(parseAllowText(edits.network.allowText));
    void run(async () => {
      const saved = await api.put<{ draft: AgentConfig }>(path, next);
      onChange({ ...state, draft: saved.draft });
      setEdits(editsOf(saved.draft));
      setStatus('Draft saved.');
    });
  }

  function publish() {
    void run(async () => {
      const done = await api.post<{ published: AgentConfig }>(`${path}/publish`);
      onChange({ ...state, published: done.published });
      onPublished?.();
      setStatus('Published.');
    });
  }

  return (
    <div className="config-grid">
      <div className="form-stack">
        <div className="field">
          <label htmlFor={`${id}-instructions`}>Instructions</label>
          <textarea
            id={`${id}-instructions`}
            rows={8}
            maxLength={32000}
            value={edits.instructions}
            onChange={(event) => edit({ instructions: event.target.value })}
            aria-describedby={`${id}-instructions-hint`}
          />
          <span className="hint" id={`${id}-instructions-hint`}>
            System instructions for the model.
          </span>
        </div>
        <div className="field">
          <label htmlFor={`${id}-model`}>Model id</label>
          <input
            id={`${id}-model`}
            className="mono"
            value={edits.model}
            maxLength={200}
            spellCheck={false}
            autoComplete="off"
            onChange={(event) => edit({ model: event.target.value })}
            aria-describedby={`${id}-model-hint`}
          />
          <span className="hint" id={`${id}-model-hint`}>
            For the operator's configured provider. Leave empty to use the operator's default.
          </span>
        </div>
        <div className="switch-field">
          <input
            type="checkbox"
            role="switch"
            aria-checked={edits.sandboxEnabled}
            className="switch"
            id={`${id}-sandbox`}
            checked={edits.sandboxEnabled}
            onChange={(event) => edit({ sandboxEnabled: event.target.checked })}
            aria-describedby={`${id}-sandbox-hint`}
          />
          <div>
            <label htmlFor={`${id}-sandbox`}>Enable sandboxes</label>
            <span className="hint" id={`${id}-sandbox-hint`}>
              Opts the agent into managed sandboxes; the operator must also allow them.
            </span>
          </div>
        </div>
        <NetworkField
          tenantId={tenantId}
          edits={edits.network}
          problems={problems.network}
          onChange={(network) => edit({ network })}
        />
        <div className="button-row">
          <button type="button" className="button button-primary" onClick={save} disabled={busy}>
            Save draft
          </button>
          <button type="button" className="button" onClick={publish} disabled={busy}>
            Publish
          </button>
          {unsaved && state.draft !== null ? (
            <span className="hint">Unsaved changes: save the draft to publish them.</span>
          ) : null}
        </div>
        <StatusText message={status} />
        <ErrorAlert error={problems.rest} />
      </div>
      <DiffPanel draft={state.draft} published={state.published} />
    </div>
  );
}

function DiffPanel({ draft, published }: { draft: AgentConfig | null; published: AgentConfig | null }) {
  let body: ReactNode;
  if (draft === null) body = <p>{published === null ? 'Not published yet.' : 'No draft saved yet.'}</p>;
  else {
    // Nothing published yet: every field of the draft is new.
    const lines = describeDiff(published ?? {}, draft);
    const list = (
      <ul className="diff-list">
        {lines.map((line) => (
          <li key={line}>
            <code className="mono">{line}</code>
          </li>
        ))}
      </ul>
    );
    if (published === null) {
      body = (
        <>
          <p>Not published yet.</p>
          {lines.length > 0 ? list : null}
        </>
      );
    } else body = lines.length === 0 ? <p>Draft and published are the same.</p> : list;
  }
  return (
    <div className="diff-panel">
      <h3>Draft compared with published</h3>
      {body}
    </div>
  );
}
