'use client';

import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, type UIMessage } from 'ai';
import { type FormEvent, type KeyboardEvent, useEffect, useId, useMemo, useRef, useState } from 'react';
import { FileCard } from './file-card.js';
import { describeAccepted, formatBytes } from './format.js';
import {
  INTERRUPTION_NOTES,
  interruptionOf,
  toFilePart,
  toolCallOf,
  type Upload,
  withInterruption,
} from './messages.js';
import { chatProblemOf } from './problems.js';
import { ToolCall } from './tool-call.js';
import { useAttachments } from './use-attachments.js';

/** Props of {@link MordnChat}. */
export interface MordnChatProps {
  /** The chat endpoint your server mounts (`createMordnHandler`): chat, uploads, history, bootstrap. Default `/api/chat`. */
  api?: string;
  /** The conversation to open; its history is loaded on mount. Without one, a new chat starts. */
  chatId?: string;
  /**
   * Re-attach to an answer still running: after the history loads (so a reload mid-answer shows it
   * continuing) and, with backoff, after the stream drops. Asks `<api>/<chatId>/stream`; `false`
   * for an endpoint without that route. Default true.
   */
  resume?: boolean;
  /** The message box's placeholder. */
  placeholder?: string;
  /** The chat region's accessible name. Default `Chat`. */
  label?: string;
  /** Extra classes on the root element (which always has `mordn-chat`). */
  className?: string;
  /**
   * Headers sent with every request the component makes (chat, uploads, history, bootstrap), e.g.
   * a CSRF token your endpoint asks for. Never put a credential here that the page must not hold.
   */
  headers?: Record<string, string>;
}

const ROLE_NAMES: Partial<Record<UIMessage['role'], string>> = { user: 'You', assistant: 'Assistant' };
/** Chat turns ask for an answer that outlives a dropped connection, so it can be re-attached. */
const RESUMABLE = { headers: { 'X-Chat-Resumable': '1' } };

/** The chat's stored messages with fresh download links (or `unavailable` files); undefined for a new chat (404). */
async function history(api: string, chatId: string, headers: Record<string, string>) {
  const response = await fetch(`${api}?chatId=${encodeURIComponent(chatId)}`, { headers });
  return response.ok ? ((await response.json()).messages as UIMessage[]) : undefined;
}

/**
 * A complete chat against a Mordn endpoint, on the AI SDK's `useChat`: history, streaming answers,
 * tool calls in plain words, attachments (picker driven by `?bootstrap`), file cards with download
 * links, Stop, interruption notes and readable errors. Style it with `mordn/react/styles.css` and
 * the `--mordn-*` CSS variables.
 *
 * @example
 * import { MordnChat } from 'mordn/react';
 * import 'mordn/react/styles.css';
 *
 * export function Page({ chatId }: { chatId: string }) {
 *   return <MordnChat api="/api/chat" chatId={chatId} />;
 * }
 */
export function MordnChat({
  api = '/api/chat',
  chatId,
  resume = true,
  placeholder = 'Ask about your files…',
  label = 'Chat',
  className,
  headers,
}: MordnChatProps) {
  const ids = useId();
  // One identity per distinct set of headers, so a new object literal each render changes nothing.
  const headerKey = JSON.stringify(headers ?? {});
  const sent = useMemo(() => JSON.parse(headerKey) as Record<string, string>, [headerKey]);
  const transport = useMemo(() => new DefaultChatTransport({ api, headers: sent }), [api, sent]);
  const [announcement, setAnnouncement] = useState('');
  const [input, setInput] = useState('');
  const messageBox = useRef<HTMLTextAreaElement>(null);
  const end = useRef<HTMLLIElement>(null);
  const attachments = useAttachments(api, sent);
  const features = attachments.features;
  const lastSent = useRef<{ text: string; files: Upload[] }>(undefined);
  // Re-attaching after a drop: the run under way (a token; none when idle), how the latest request ended.
  const retry = useRef<{ run?: object; seen: string }>({ seen: '' });
  const [reconnecting, setReconnecting] = useState(false);

  const { id, messages, setMessages, sendMessage, status, error, stop, clearError, resumeStream } = useChat({
    ...(chatId === undefined ? {} : { id: chatId }),
    transport,
    onFinish: ({ message, messages: all, isAbort, isDisconnect, isError }) => {
      retry.current.seen = isDisconnect ? 'drop' : isError ? 'error' : 'done';
      // An answer that had begun streaming keeps running on the server: re-attach to it.
      if (isDisconnect && all.at(-1)?.id === message.id) reattach();
      if (isError) return;
      if (isAbort || isDisconnect) {
        const reason = isAbort ? 'stop' : 'disconnect';
        setMessages((current) =>
          current.map((each) => (each.id === message.id ? withInterruption(each, reason) : each)),
        );
        setAnnouncement(INTERRUPTION_NOTES[reason]);
        return;
      }
      setAnnouncement('The answer is complete.');
    },
    // A refused turn (nothing answered; a lost connection may have arrived) goes back to the composer.
    onError: (failure) => {
      retry.current.seen = failure instanceof TypeError ? 'drop' : 'error';
      const turn = lastSent.current;
      lastSent.current = undefined;
      if (!turn || failure instanceof TypeError || messages.at(-1)?.role !== 'user') return;
      setMessages(messages.slice(0, -1));
      setInput((text) => text || turn.text);
      attachments.restore(turn.files);
    },
  });

  // The history first, then the answer still running, if any (it replays from its start).
  useEffect(() => {
    if (chatId === undefined) return;
    let current = true;
    history(api, chatId, sent).then(
      (stored) => {
        if (!current) return;
        if (stored) setMessages(stored);
        // A question without its answer yet: the answer is running (or just lost); replay it.
        if (resume && stored?.at(-1)?.role === 'user') resumeStream();
      },
      () => current && setAnnouncement('This chat could not be loaded.'),
    );
    return () => {
      current = false;
      retry.current.run = undefined;
      setReconnecting(false);
    };
  }, [api, chatId, sent, setMessages, resume, resumeStream]);

  /** Re-attaches after 0.5, 1, 2, 4 and 8 s, until the stored answer shows or a replay streams to its end. */
  async function reattach() {
    if (retry.current.run || !resume) return;
    const run = {};
    retry.current.run = run;
    setReconnecting(true);
    setAnnouncement('Reconnecting…');
    for (let wait = 500; wait < 9e3; wait *= 2) {
      await new Promise((done) => setTimeout(done, wait));
      // Stopped, unmounted or moved to another chat meanwhile: that took the state over.
      if (retry.current.run !== run) return;
      // Stored already: the history has it as kept (its notes, fresh links); else it still runs.
      const stored = await history(api, id, sent).catch(() => undefined);
      if (retry.current.run !== run) return;
      if (!stored) continue;
      if (stored.at(-1)?.role === 'assistant') {
        clearError();
        setMessages(stored);
        break;
      }
      retry.current.seen = '';
      await resumeStream();
      if (retry.current.seen !== 'drop') break;
    }
    if (retry.current.run !== run) return;
    retry.current.run = undefined;
    setReconnecting(false);
    setAnnouncement((text) => (text === 'Reconnecting…' ? '' : text));
  }

  const problem = error && !reconnecting ? chatProblemOf(error) : undefined;
  const problemMessage = problem?.message;
  useEffect(() => {
    if (problemMessage) setAnnouncement(problemMessage);
  }, [problemMessage]);

  useEffect(() => {
    if (attachments.problems.length > 0) setAnnouncement(attachments.problems.join(' '));
  }, [attachments.problems]);

  // Keep the newest message in view as messages and their parts arrive (not on every text delta).
  const progress = `${messages.length}:${messages.at(-1)?.parts.length ?? 0}`;
  useEffect(() => {
    if (progress) end.current?.scrollIntoView?.({ block: 'nearest' });
  }, [progress]);

  const busy = status === 'submitted' || status === 'streaming' || reconnecting;
  const canSend = !busy && !attachments.uploading && (input.trim() !== '' || attachments.pending.length > 0);

  function send(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (!canSend) return;
    clearError();
    attachments.dismissProblems();
    setAnnouncement('');
    const files = attachments.take();
    lastSent.current = { text: input, files };
    sendMessage({ text: input, files: files.map(toFilePart) }, resume ? RESUMABLE : undefined);
    setInput('');
    messageBox.current?.focus();
  }

  function onMessageKeyDown(event: KeyboardEvent<HTMLTextAreaElement>) {
    // Enter sends, Shift+Enter starts a new line; an IME composition keeps its Enter.
    if (event.key !== 'Enter' || event.shiftKey || event.nativeEvent.isComposing) return;
    event.preventDefault();
    event.currentTarget.form?.requestSubmit();
  }

  // Stops the answer on the server (wherever it runs), then this page's own request; no re-attaching.
  function onStop() {
    retry.current.run = undefined;
    setReconnecting(false);
    fetch(`${api}/${encodeURIComponent(id)}/stop`, { method: 'POST', headers: sent }).catch(() => undefined);
    stop();
    messageBox.current?.focus();
  }

  const hintId = `${ids}-attach-hint`;
  return (
    <section className={className ? `mordn-chat ${className}` : 'mordn-chat'} aria-label={label}>
      <ol className="mordn-messages" aria-label="Conversation">
        {messages.length === 0 && status === 'ready' ? (
          <li className="mordn-empty">Ask a question{features?.enabled ? ', or attach a file to work on' : ''}.</li>
        ) : null}
        {messages.map((message, at) => {
          const interruption = interruptionOf(message);
          // Only the answer being streamed shows live output, with a Stop beside it.
          const live = busy && at === messages.length - 1 ? onStop : undefined;
          return (
            <li key={message.id} className={`mordn-message mordn-${message.role}`}>
              <span className="mordn-visually-hidden">{ROLE_NAMES[message.role] ?? message.role}:</span>
              {message.parts.map((part, index) => {
                const key = `${message.id}-${index}`;
                if (part.type === 'text') {
                  return part.text ? (
                    <p key={key} className="mordn-text">
                      {part.text}
                    </p>
                  ) : null;
                }
                if (part.type === 'file') return <FileCard key={key} file={part} />;
                const tool = toolCallOf(part);
                return tool ? <ToolCall key={key} part={tool} onStop={live} /> : null;
              })}
              {interruption ? (
                <p className="mordn-interrupted interrupted">{INTERRUPTION_NOTES[interruption]}</p>
              ) : null}
            </li>
          );
        })}
        {status === 'submitted' ? (
          <li className="mordn-message mordn-assistant mordn-thinking">
            <span className="mordn-visually-hidden">Assistant:</span>
            <span className="mordn-dots" aria-hidden="true" />
            <span className="mordn-visually-hidden">Thinking…</span>
          </li>
        ) : null}
        <li ref={end} className="mordn-end" aria-hidden="true" />
      </ol>
      {reconnecting ? <p className="mordn-hint mordn-reconnecting">Reconnecting…</p> : null}

      {problem?.kind === 'sandbox-unavailable' ? (
        <div className="mordn-notice mordn-guidance">
          <p className="mordn-notice-title">Sandboxes are not available</p>
          <p>{problem.message}</p>
        </div>
      ) : problem?.kind === 'limit-reached' ? (
        <div className="mordn-notice mordn-guidance mordn-limit">
          <p className="mordn-notice-title">Usage limit reached</p>
          <p>{problem.message}</p>
        </div>
      ) : problem ? (
        <div className="mordn-notice mordn-problem">
          <p>{problem.message}</p>
        </div>
      ) : null}
      {attachments.problems.length > 0 ? (
        <div className="mordn-notice mordn-problem">
          <ul>
            {attachments.problems.map((text) => (
              <li key={text}>{text}</li>
            ))}
          </ul>
          <button type="button" className="mordn-link-button" onClick={attachments.dismissProblems}>
            Dismiss
          </button>
        </div>
      ) : null}

      <form className="mordn-composer" onSubmit={send}>
        {attachments.pending.length > 0 ? (
          <ul className="mordn-pending" aria-label="Attachments to send">
            {attachments.pending.map((file) => (
              <li key={file.storagePath}>
                <FileCard
                  file={{ ...toFilePart(file), size: file.size }}
                  onRemove={() => attachments.remove(file.storagePath)}
                />
              </li>
            ))}
          </ul>
        ) : null}
        <div className="mordn-composer-row">
          {features?.enabled ? (
            <label className="mordn-attach" data-busy={attachments.uploading || undefined}>
              <input
                className="mordn-visually-hidden"
                type="file"
                multiple
                accept={features.accept.join(',')}
                disabled={attachments.uploading}
                aria-describedby={hintId}
                onChange={(event) => {
                  attachments.upload(Array.from(event.target.files ?? []));
                  event.target.value = '';
                }}
              />
              <span aria-hidden="true" className="mordn-attach-icon" />
              <span className="mordn-visually-hidden">Attach files</span>
            </label>
          ) : null}
          <textarea
            ref={messageBox}
            className="mordn-input"
            aria-label="Message"
            rows={1}
            value={input}
            placeholder={placeholder}
            onChange={(event) => setInput(event.target.value)}
            onKeyDown={onMessageKeyDown}
          />
          {busy ? (
            <button type="button" className="mordn-button mordn-stop" onClick={onStop}>
              Stop
            </button>
          ) : (
            <button type="submit" className="mordn-button mordn-send" disabled={!canSend}>
              Send
            </button>
          )}
        </div>
        {features?.enabled ? (
          <p id={hintId} className="mordn-hint">
            {attachments.uploading
              ? 'Uploading…'
              : `Attach ${describeAccepted(features.accept)} up to ${formatBytes(features.maxBytes)} each.`}
          </p>
        ) : null}
      </form>
      <p className="mordn-visually-hidden" role="status" aria-live="polite">
        {announcement}
      </p>
    </section>
  );
}
