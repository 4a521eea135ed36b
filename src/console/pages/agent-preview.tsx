import { useState } from 'react';
import { MordnChat } from '../../react/index.js';
import { Section } from '../components/ui.js';
import { newChatId } from '../format.js';
import { useSession } from '../session.js';

/**
 * The package's own chat component against the console's preview endpoint for this agent.
 * `publishes` counts the publishes made on this page: after each one the chat is mounted again,
 * the same conversation, so that what it offers (the picker's types and sizes, from the
 * endpoint's bootstrap) follows the published config without a reload; its history comes back
 * from the service.
 */
export function PreviewSection({ agentId, publishes }: { agentId: string; publishes: number }) {
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
          key={`${chatId}:${publishes}`}
          api={`/console/api/agents/${encodeURIComponent(agentId)}/preview`}
          chatId={chatId}
          headers={{ 'X-CSRF-Token': session.csrfToken }}
          label="Preview chat"
        />
      </div>
    </Section>
  );
}
