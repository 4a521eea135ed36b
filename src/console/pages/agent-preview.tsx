import { useState } from 'react';
import { MordnChat } from '../../react/index.js';
import { Section } from '../components/ui.js';
import { newChatId } from '../format.js';
import { useSession } from '../session.js';

/** The package's own chat component against the console's preview endpoint for this agent. */
export function PreviewSection({ agentId }: { agentId: string }) {
  const { session } = useSession();
  const [chatId, setChatId] = useState(newChatId);
  return (
    <Section
      title="Preview"
      description="The preview runs the saved draft. Managed sandboxes also need the published config and the operator's switch."
      actions={
        <button type="button" className="button" onClick={() => setChatId(newChatId())}>
          New preview chat
        </button>
      }
    >
      <div className="preview">
        <MordnChat
          key={chatId}
          api={`/console/api/agents/${encodeURIComponent(agentId)}/preview`}
          chatId={chatId}
          headers={{ 'X-CSRF-Token': session.csrfToken }}
          label="Preview chat"
        />
      </div>
    </Section>
  );
}
