'use client';

import { useChat } from '@ai-sdk/react';
import type { FileUIPart, UIMessage } from 'ai';
import { type FormEvent, useEffect, useState } from 'react';
import { FileCard, formatBytes } from './file-card';

/** What `POST /api/chat` answers for an upload (Mordn's `POST /v1/uploads`). */
interface Upload {
  url: string;
  storagePath: string;
  filename: string;
  mediaType: string;
  size: number;
}

/** Picker hints from `GET /api/chat?bootstrap`. The server decides again on every upload. */
interface AttachmentFeatures {
  enabled: boolean;
  accept: string[];
  maxBytes: number;
}

/** Mordn answers errors as problem+json; `detail` is safe to show. */
async function problemOf(response: Response): Promise<string> {
  const problem = await response.json().catch(() => undefined);
  return problem?.detail ?? `The request failed (${response.status}).`;
}

/** Why Mordn stored an answer as cut short (`metadata.mordn.interrupted.reason`). */
type Interruption = 'stop' | 'disconnect' | 'timeout';

const INTERRUPTION_NOTES: Record<Interruption, string> = {
  stop: 'Stopped before the answer was finished.',
  disconnect: 'Interrupted: the connection was lost.',
  timeout: 'Interrupted: the answer took too long.',
};

function interruptionOf(message: UIMessage): Interruption | undefined {
  const metadata = message.metadata as { mordn?: { interrupted?: { reason?: string } } } | undefined;
  const reason = metadata?.mordn?.interrupted?.reason;
  return reason !== undefined && reason in INTERRUPTION_NOTES ? (reason as Interruption) : undefined;
}

/** The message with the interruption Mordn also stores for it, so the note shows before a reload. */
function markInterrupted(message: UIMessage, reason: Interruption): UIMessage {
  const metadata = (message.metadata ?? {}) as Record<string, unknown>;
  return { ...message, metadata: { ...metadata, mordn: { interrupted: { reason } } } };
}

/** A file part for `sendMessage`: Mordn finds the upload by its `storagePath`, not by its URL. */
function toFilePart(upload: Upload): FileUIPart {
  return {
    type: 'file',
    mediaType: upload.mediaType,
    filename: upload.filename,
    url: upload.url,
    providerMetadata: { mordn: { storagePath: upload.storagePath } },
  };
}

/** One conversation: its history, the attachment picker, the composer and the answers as they stream. */
export function Chat({ chatId }: { chatId: string }) {
  // `resume` asks /api/chat/<id>/stream on mount; Mordn answers 204 (nothing to resume).
  const { messages, setMessages, sendMessage, status, error, stop } = useChat({
    id: chatId,
    resume: true,
    onFinish: ({ message, isAbort, isDisconnect }) => {
      if (!isAbort && !isDisconnect) return;
      const reason = isAbort ? 'stop' : 'disconnect';
      setMessages((current) => current.map((each) => (each.id === message.id ? markInterrupted(each, reason) : each)));
    },
  });
  const [attachments, setAttachments] = useState<AttachmentFeatures>();
  const [pending, setPending] = useState<Upload[]>([]);
  const [uploading, setUploading] = useState(false);
  const [problem, setProblem] = useState<string>();
  const [input, setInput] = useState('');

  useEffect(() => {
    fetch('/api/chat?bootstrap')
      .then((response) => (response.ok ? response.json() : undefined))
      .then((bootstrap) => setAttachments(bootstrap?.features.attachments))
      .catch(() => setProblem('Attachments are unavailable right now.'));
  }, []);

  // History with fresh download links (or `unavailable` files, with an empty URL); a new chat answers 404.
  useEffect(() => {
    fetch(`/api/chat?chatId=${encodeURIComponent(chatId)}`)
      .then(async (response) => {
        if (response.ok) setMessages((await response.json()).messages);
      })
      .catch(() => setProblem('This chat could not be loaded.'));
  }, [chatId, setMessages]);

  async function upload(files: File[]) {
    setProblem(undefined);
    setUploading(true);
    try {
      for (const file of files) {
        if (attachments && file.size > attachments.maxBytes) {
          setProblem(`${file.name} is larger than ${formatBytes(attachments.maxBytes)}.`);
          continue;
        }
        const form = new FormData();
        form.set('file', file);
        const response = await fetch('/api/chat', { method: 'POST', body: form });
        if (!response.ok) {
          setProblem(`${file.name}: ${await problemOf(response)}`);
          continue;
        }
        const uploaded: Upload = await response.json();
        setPending((current) => [...current, uploaded]);
      }
    } catch {
      setProblem('The upload failed; check your connection and try again.');
    } finally {
      setUploading(false);
    }
  }

  function send(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (!input.trim() && pending.length === 0) return;
    sendMessage({ text: input, files: pending.map(toFilePart) });
    setInput('');
    setPending([]);
  }

  const busy = status === 'submitted' || status === 'streaming';
  return (
    <section className="chat">
      <ol className="messages">
        {messages.map((message) => {
          const interruption = interruptionOf(message);
          return (
            <li key={message.id} className={`message ${message.role}`}>
              {message.parts.map((part, index) => {
                const key = `${message.id}-${index}`;
                if (part.type === 'text') return <p key={key}>{part.text}</p>;
                if (part.type === 'file') return <FileCard key={key} file={part} />;
                if (part.type === 'dynamic-tool') {
                  return (
                    <p key={key} className="tool">
                      {part.toolName} {part.state === 'output-error' ? 'failed' : ''}
                    </p>
                  );
                }
                return null;
              })}
              {interruption ? <p className="interrupted">{INTERRUPTION_NOTES[interruption]}</p> : null}
            </li>
          );
        })}
      </ol>
      {error ? <p className="problem">{error.message}</p> : null}
      {problem ? <p className="problem">{problem}</p> : null}
      <form className="composer" onSubmit={send}>
        {pending.length > 0 ? (
          <div className="pending">
            {pending.map((file) => (
              <FileCard key={file.storagePath} file={{ ...toFilePart(file), size: file.size }} />
            ))}
          </div>
        ) : null}
        {attachments?.enabled ? (
          <label>
            Attach files{' '}
            <input
              type="file"
              multiple
              accept={attachments.accept.join(',')}
              disabled={uploading}
              onChange={(event) => {
                upload(Array.from(event.target.files ?? []));
                event.target.value = '';
              }}
            />
          </label>
        ) : null}
        <input
          aria-label="Message"
          value={input}
          placeholder="Ask about your files…"
          onChange={(event) => setInput(event.target.value)}
        />
        {busy ? (
          <button type="button" onClick={() => stop()}>
            Stop
          </button>
        ) : (
          <button type="submit" disabled={uploading}>
            Send
          </button>
        )}
      </form>
    </section>
  );
}
